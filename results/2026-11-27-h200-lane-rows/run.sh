#!/usr/bin/env bash
# lane_bench (built on the build machine as its header says, in BINDIR) on GPU 0, 512^3, 15
# launches a variant. usage, from the repository root:
#   bash results/2026-11-27-h200-lane-rows/run.sh BINDIR OUT NAME [wide]
# call 1 ran without wide (call1.csv), call 2 with it (call2.csv).
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin"
nvidia-smi -L | tee "$out/gpu.txt"
CUDA_VISIBLE_DEVICES=0 timeout 400 "$dir/lane_bench" 512 15 ${4:-} | tee "$out/${3:-bench}.csv"
