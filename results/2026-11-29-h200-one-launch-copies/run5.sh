#!/usr/bin/env bash
# Is the 7-point step's loss beside the one launch (call 3) the launch's waiting blocks holding
# the SMs the update needs? The same runs with fewer blocks a region (--signalled-blocks 4
# against the default 16): 7-point periodic in x only and in x, y and z, 27-point in x, y and z.
# Under MPS, 2 ranks sharing the GPU, one run each.
# usage: bash results/2026-11-29-h200-one-launch-copies/run5.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport (call 5's build).
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; PART=blocks; out=$top/$PART; mkdir -p "$out"; out=$(cd "$out" && pwd)
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
print('  one_launch', d.get('one_launch'), 'procs', d['procs'], 'step', round(d['step_median_us'], 1),
      'compute', round(d['compute_median_us'], 1), 'exposed', round(d['exposed_exchange_us'], 1),
      'exchange', round(d['exchange_median_us'], 1), 'verified', d['verified'])" "$out/$1.json"
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
common=(stencil --backend cuda --transport ipc --grid 1024x512x512 --procs 2x1x1 --steps 20
    --exchange-reps 20)
for run in 7pt-x 7pt-xyz 27pt-xyz; do
    for blocks in 16 4; do
        extra=(--periodic ${run#*-} --signalled-blocks $blocks)
        case $run in 7pt*) extra+=(--stencil 7);; esac
        name=$run-sb$blocks
        step $name 120 mpirun -np 2 "${mps[@]}" $bin/haloport "${common[@]}" "${extra[@]}" \
            --json "$out/$name.json"
        show $name
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/$PART.tgz" -C "$top" --exclude log.txt "$PART" && find "$out" -type f ! -name log.txt -delete
