#!/usr/bin/env bash
# Runs smem_bench (built here as its header says, with -L to pip's CUDA runtime; carried in
# BINDIR) at 512^3 and at a size whose tiles are partial in every dimension, on one GPU, no MPS.
# usage, from the repository root: bash results/2026-11-28-h200-f32-smem/run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
date -u; nvidia-smi -L
timeout 200 $bin/smem_bench 512 15 | tee "$out/n512.csv"
timeout 100 $bin/smem_bench 203 5 | tee "$out/n203.csv"
date -u
