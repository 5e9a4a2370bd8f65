#!/usr/bin/env bash
# The committed balanced blocks (haloport, 2c9f8c5: blocks in proportion to each region's memory
# traffic, region_cost) against the uniform cap of 16 a region (haloport-base, d54e9b1) on one
# GPU: the CLI's GPU tests; compute-sanitizer memcheck of the stencil over ipc with 2 ranks
# periodic in x only (every message device-direct: the balanced path with fields); under MPS
# the sweep of ipc-tq and lib-*-ipc, 2 ranks, two rounds, builds interleaved, and the stencil
# 1024x512x512, 2x1x1, periodic in x (2 ranks sharing the GPU: the blocking exchange compared).
# usage, from the repository root: bash results/2026-11-26-h200-balanced/run-final.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, gpu-cuda-cli. Everything is written
#   under OUT/final and packed into OUT/final.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/final; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/balanced-final; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step memcheck-stencil-x 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
    --tool memcheck --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc \
    --grid 128x64x64 --procs 2x1x1 --periodic x --fields 2 --steps 6 --exchange-reps 2
show memcheck-stencil-x
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in haloport-base haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc|error" "$out/sweep-$b-$round.txt" | head -14
    rm -rf "$out/sweep-$b-$round/cells"; gzip -9 "$out/sweep-$b-$round/sweep.json"
    step stencil-x-$b-$round 150 mpirun -np 2 "${mps[@]}" $bin/$b stencil --backend cuda \
        --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
        --exchange-reps 20 --json "$out/stencil-x-$b-$round.json"
    show stencil-x-$b-$round
done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/final.tgz" -C "$top" final && rm -rf "$out"
