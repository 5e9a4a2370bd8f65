#!/usr/bin/env bash
# Why the 7-point step lost with the one launch beside it (run.sh's perf): the same steps with
# the one launch kept to blocking exchanges where a neighbour is local (haloport-exp: the new
# build with HP_EXP_NO_BESIDE_COPIES=1 read in queue_start, an experiment not committed; see
# experiment.diff), and the 7-point step periodic in x only (every neighbour device-direct: the
# one launch beside in every build) as the control. Under MPS, 2 ranks sharing the GPU, builds
# interleaved, two rounds.
# usage: bash results/2026-11-29-h200-one-launch-copies/run2.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, haloport-exp.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; PART=exp; out=$top/$PART; mkdir -p "$out"; out=$(cd "$out" && pwd)
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
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print('  one_launch', d.get('one_launch'), 'step', round(d['step_median_us'], 1),
      'compute', round(d['compute_median_us'], 1), 'exposed', round(d['exposed_exchange_us'], 1),
      'exchange', round(d['exchange_median_us'], 1), 'verified', d['verified'])" "$out/$1.json"
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
export HP_EXP_NO_BESIDE_COPIES=1
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
common=(stencil --backend cuda --transport ipc --grid 1024x512x512 --procs 2x1x1 --steps 20
    --exchange-reps 20)
for round in 1 2; do
    for build in base new exp; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        env=(); [ $build = exp ] && env=(-x HP_EXP_NO_BESIDE_COPIES)
        runs=(7pt-xyz 27pt-xyz); [ $build = exp ] || runs+=(7pt-x)
        for run in "${runs[@]}"; do
            extra=(--periodic ${run#*-})
            case $run in 7pt*) extra+=(--stencil 7);; esac
            name=$run-$build-$round
            step $name 120 mpirun -np 2 "${mps[@]}" "${env[@]}" $exe "${common[@]}" "${extra[@]}" \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/$PART.tgz" -C "$top" --exclude log.txt "$PART" && find "$out" -type f ! -name log.txt -delete
