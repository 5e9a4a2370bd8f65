#!/usr/bin/env bash
# Issue 23, call 2 on one H200: the library's cap of 16 blocks for the costliest region against
# 8, 2 ranks sharing the GPU under MPS: sweeps of ipc-tq and lib-tq-ipc (small, thesis-9,
# thesis-27, large; 20 runs) with --lib-blocks 16 and 8 in turn, 3 rounds; then the 2-rank
# stencil over ipc (27-point, f64, periodic in x, y and z: device-direct messages and local
# copies, the one launch) at 128^3 and 256^3 with --signalled-blocks 16 and 8, 2 rounds.
# usage, from the repository root: bash results/2026-11-29-h200-lib-blocks/run-call2.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with ./haloport. Output in OUT/call2.tgz and OUT/call2-log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/call2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
exec > >(tee "$top/call2-log.txt") 2>&1
date -u; nvidia-smi -L
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name: ${*: -12}"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
for round in 1 2 3; do
    for blocks in 16 8; do
        name=sweep-lib$blocks-$round
        step $name 120 "${mpi[@]}" $bin/haloport sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
            --workloads small,thesis-9,thesis-27,large --runs 20 --lib-blocks $blocks \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt" | head -8
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
for round in 1 2; do
    for grid in 128x128x128 256x256x256; do
        for blocks in 16 8; do
            name=stencil-$grid-sb$blocks-$round
            step $name 100 "${mpi[@]}" $bin/haloport stencil --backend cuda --grid $grid \
                --periodic xyz --transport ipc --steps 20 --exchange-reps 20 \
                --signalled-blocks $blocks --json "$out/$name.json"
            grep -E "step median|compute alone|verified" "$out/$name.txt" | head -4
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call2.tgz" -C "$top" call2 && rm -rf "$out"
