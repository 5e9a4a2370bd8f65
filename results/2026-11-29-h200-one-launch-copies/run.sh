#!/usr/bin/env bash
# The one launch with a rank's own messages copied into its halos (hp_exchange_regions_copies,
# HP_REGIONS_FUSED_COPIES): a periodic rank with device-direct and local neighbours now packs
# and unpacks in one launch beside the inner update, where it took a pack and an unpack launch
# on the caller's stream. Against the build before (haloport-base).
# PART=checks: CUDA conformance, the CLI's GPU tests, the HIP backend's conformance through the
# HIP-on-CUDA layer, compute-sanitizer memcheck and racecheck on the periodic stencil with 2
# ranks (2x1x1) and 4 ranks (2x2x1) sharing the GPU, plain (the one launch with copies) and
# --graph (two launches), f64 and f32.
# PART=perf, under MPS, builds interleaved, two rounds: 2 ranks sharing the GPU, 512^3 f64 each,
# periodic in x, y and z (2x1x1: x neighbours the other rank, y and z the rank itself), plain and
# --graph, the 7-point stencil plain; 4 ranks (2x2x1, 256^3 each) plain; 1 rank at 512^3 (all
# local: unchanged).
# usage, from the repository root:
#   PART=checks|perf bash results/2026-11-29-h200-one-launch-copies/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/$PART; mkdir -p "$out"; out=$(cd "$out" && pwd)
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
# The device tool brings back a few files a call: everything but the log goes into OUT/PART.tgz.
pack() {
    tar czf "$top/$PART.tgz" -C "$top" --exclude log.txt "$PART" && find "$out" -type f ! -name log.txt -delete
}
show() {
    grep -E "step median|compute alone|exposed|verified|SUMMARY|test result|FAILED|panicked|error|exit" \
        "$out/$1.txt" | head -10
    [ -f "$out/$1.json" ] && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print('  one_launch', d.get('one_launch'), 'procs', d['procs'], 'step', round(d['step_median_us'], 1),
      'compute', round(d['compute_median_us'], 1), 'exposed', round(d['exposed_exchange_us'], 1),
      'exchange', round(d['exchange_median_us'], 1), 'verified', d['verified'])" "$out/$1.json"
}
if [ "$PART" = checks ]; then
    step conformance 300 $bin/cuda-conformance --test-threads=1; show conformance
    grep -E "one_launch" "$out/conformance.txt"
    HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
    LD_LIBRARY_PATH=$bin step hip-nvidia 300 $bin/hip-nvidia-conformance --test-threads=1
    show hip-nvidia; grep -E "one_launch" "$out/hip-nvidia.txt"
    for run in memcheck-f64-plain memcheck-f32-plain memcheck-f64-graph racecheck-f64-plain \
        racecheck-f32-plain memcheck4-f64-plain; do
        tool=${run%%-*}; np=2; procs=2x1x1; grid=128x64x64
        case $tool in memcheck4) tool=memcheck; np=4; procs=2x2x1; grid=128x128x64;; esac
        type=f64; extra=()
        case $run in *f32*) type=f32; extra+=(--pad 2,0,0);; esac
        case $run in *graph) extra+=(--graph);; esac
        step stencil-$run 240 mpirun -np $np --oversubscribe -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid $grid --procs $procs --periodic xyz \
            --type $type --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}" \
            --json "$out/stencil-$run.json"
        show stencil-$run
    done
    date -u
    pack
    exit 0
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
common=(stencil --backend cuda --transport ipc --periodic xyz --steps 20 --exchange-reps 20)
for round in 1 2; do
    for build in base new; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        for run in s2-plain s2-graph s2-7pt s4-plain; do
            np=2; extra=(--grid 1024x512x512 --procs 2x1x1)
            case $run in s4*) np=4; extra=(--grid 512x512x256 --procs 2x2x1);; esac
            case $run in *graph) extra+=(--graph);; *7pt) extra+=(--stencil 7);; esac
            name=$run-$build-$round
            step $name 120 mpirun -np $np "${mps[@]}" $exe "${common[@]}" "${extra[@]}" \
                --json "$out/$name.json"
            show $name
        done
    done
done
for build in base new; do
    exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
    name=s1-plain-$build
    step $name 100 mpirun -np 1 "${mps[@]}" $exe "${common[@]}" --grid 512x512x512 \
        --json "$out/$name.json"
    show $name
done
echo quit | nvidia-cuda-mps-control
date -u
pack
