#!/usr/bin/env bash
# depth_bench (built here as its header says, with -L to pip's CUDA runtime, carried in BINDIR)
# at 512^3 and 256^3 on one GPU, no MPS; STRIDES=1: call 3, rows of other lengths at 512^3;
# HALOS_IN=1: call 5, a step without the exchange as the library runs it (its box and slab);
# PLACED=1: call 11, the whole interior of fields placed at an offset in their allocation.
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
date -u; nvidia-smi -L | tee "$out/gpu.txt"
if [ "${PLACED:-0}" = 1 ]; then
    timeout 300 $bin/depth_bench 512 15 placed | tee "$out/placed.csv"
elif [ "${HALOS_IN:-0}" = 1 ]; then
    timeout 300 $bin/depth_bench 512 15 halos-in | tee "$out/halos-in.csv"
elif [ "${STRIDES:-0}" = 1 ]; then
    timeout 300 $bin/depth_bench 512 15 strides | tee "$out/strides.csv"
else
    for n in 512 256; do
        timeout 200 $bin/depth_bench $n 15 | tee "$out/n$n.csv"
    done
fi
date -u
