#!/usr/bin/env bash
# The f32 lanes at small sizes: ../2026-11-27-h200-lane-rows/lane_bench.cu in its "wide" mode
# (the 4-point lanes in several tile shapes; the library's is 1 row, 32 planes, prefetch 2) at
# 128^3, 256^3 and 512^3, rows padded to a multiple of 4. Built here as its header says (with
# -L to pip's CUDA runtime) and carried in BINDIR.
# usage, from the repository root: bash results/2026-11-28-h200-f32-small-boxes/run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
date -u; nvidia-smi -L
for n in 128 256 512; do
    timeout 200 $bin/lane_bench $n 15 wide | tee "$out/n$n.csv"
done
date -u
