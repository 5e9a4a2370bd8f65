#!/usr/bin/env bash
# Where the shell's slabs run, with the f64 tiles of hp_stencil27_march64 (80 registers) on one
# H200: haloport-b (a838927: each slab on a stream of its own after finish, beside the inner
# box) against haloport-seq (the same build with the slabs queued on the inner box's stream,
# after the box and after finish). Under MPS, 1 rank, haloport stencil 512^3 f64 and f32, plain
# and --graph, one round, the builds interleaved. Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200-shell-order/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport-b and haloport-seq.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/order-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for round in 1; do for type in f64 f32; do for mode in plain graph; do for b in b seq; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=$b-$type-$mode-$round
    echo "=== $name"
    timeout 100 mpirun -np 1 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        -x CUDA_VISIBLE_DEVICES "$bin/haloport-$b" stencil --backend cuda --grid 512x512x512 \
        --type $type --steps 20 --exchange-reps 20 "${extra[@]}" --json "$out/$name.json" \
        > "$out/$name.txt" 2>&1
    echo "rc $?"; grep -E "step median|compute alone|verified" "$out/$name.txt"
done; done; done; done
echo quit | nvidia-cuda-mps-control
date -u
