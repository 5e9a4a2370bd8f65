#!/usr/bin/env bash
# A rank whose every neighbour is itself (one rank, periodic), and 1x1x2 (paired x faces):
# the copies in the one launch beside the step too (haloport: fded546 with
# experiment-local.diff, not committed), against the build before the one launch took copies
# (haloport-base, 6314bf1) and the first build of this directory (haloport-copies1, fded546:
# copies in the one launch only beside device-direct messages).
# Checks first: CUDA conformance, the CLI's GPU tests, compute-sanitizer memcheck and racecheck
# on one rank (f64 and f32) and memcheck on 2 ranks 1x1x2. Then, under MPS, builds interleaved,
# two rounds: one rank at 512^3 periodic in x, y and z, f64 plain and --graph, f32 (rows of 516);
# then 2 ranks 1x1x2 (x faces local and paired), base and new.
# usage: bash results/2026-11-29-h200-one-launch-copies/run3.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, haloport-copies1, cuda-conformance,
#   gpu-cuda-cli.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; PART=local; out=$top/$PART; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/copies-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "SUMMARY|test result|FAILED|panicked|error" "$out/$1.txt" | head -6
    [ -f "$out/$1.json" ] && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print('  one_launch', d.get('one_launch'), 'procs', d['procs'], 'step', round(d['step_median_us'], 1),
      'compute', round(d['compute_median_us'], 1), 'exposed', round(d['exposed_exchange_us'], 1),
      'exchange', round(d['exchange_median_us'], 1), 'verified', d['verified'])" "$out/$1.json"
}
step conformance 300 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for run in memcheck-f64 memcheck-f32 racecheck-f64 racecheck-f32 memcheck2-f64; do
    tool=${run%%-*}; np=1; extra=(--grid 64x64x64)
    case $tool in memcheck2) tool=memcheck; np=2; extra=(--grid 64x64x128 --procs 1x1x2);; esac
    case $run in *f32) extra+=(--type f32 --pad 2,0,0);; esac
    step check-$run 240 mpirun -np $np -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --periodic xyz \
        --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}" --json "$out/check-$run.json"
    show check-$run
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
common=(stencil --backend cuda --transport ipc --periodic xyz --steps 20 --exchange-reps 20)
for round in 1 2; do
    for build in base copies1 new; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        for run in f64 f64-graph f32; do
            extra=(--grid 512x512x512)
            case $run in *graph) extra+=(--graph);; f32) extra+=(--type f32 --pad 2,0,0);; esac
            name=s1-$run-$build-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $exe "${common[@]}" "${extra[@]}" \
                --json "$out/$name.json"
            show $name
        done
    done
done
for build in base new; do
    exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
    name=s2-z-$build
    step $name 120 mpirun -np 2 "${mps[@]}" $exe "${common[@]}" --grid 512x512x1024 \
        --procs 1x1x2 --json "$out/$name.json"
    show $name
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/$PART.tgz" -C "$top" --exclude log.txt "$PART" && find "$out" -type f ! -name log.txt -delete
