#!/usr/bin/env bash
# Two rounds of l2pf_bench on one GPU. BINDIR holds the bench built as its header says.
# usage, from the repository root: bash run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
nvidia-smi -L | tee "$out/gpu.txt"
for round in 1 2; do "$bin/l2pf_bench" 512 15 | tee "$out/l2pf_bench-$round.csv"; done
