#!/usr/bin/env bash
# Which part of the change moves the library's exchange, on one GPU, two ranks sharing it under
# MPS: old (before), nobeside (the abort word in device memory only), new (and the unpack beside
# the pack), b128 / b512 (new, and a pause of 128 / 512 ns between polls after the first 16).
# Sweep of ipc-tq and lib-*-ipc, two rounds, builds interleaved; the stencil 512x256x256 f64 on
# 2 ranks (every message device-direct). Every run verified.
# usage, from the repository root: bash run-variants.sh BINDIR OUT  (BINDIR/bins.tar.xz)
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/abv-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
mpi=(mpirun --bind-to none -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x HALOPORT_REQUIRE_GPU)
builds="old nobeside new b128 b512"
for round in 1 2; do for b in $builds; do
    echo "=== sweep-$b-$round"
    timeout 150 "${mpi[@]}" $bin/haloport-$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 12 --out "$out/sweep-$b-$round" > "$out/sweep-$b-$round.txt" 2>&1; echo "rc $?"
    grep -E "ipc" "$out/sweep-$b-$round.txt" | head -12
done; done
for b in $builds; do
    echo "=== stencil-$b"
    timeout 120 "${mpi[@]}" $bin/haloport-$b stencil --backend cuda --transport ipc \
        --grid 512x256x256 --procs 2x1x1 --periodic x --type f64 --steps 20 --exchange-reps 20 \
        --json "$out/stencil-$b.json" > "$out/stencil-$b.txt" 2>&1; echo "rc $?"
    grep -E "step median|compute alone|verified" "$out/stencil-$b.txt"
done
echo quit | nvidia-cuda-mps-control
date -u
