#!/usr/bin/env bash
# shell_bench (call 1: call1/shell_bench.cu; call 2: shell_bench.cu; built on the build machine as its header says, in BINDIR) on GPU 0, 512^3, 15 runs
# a configuration, twice. usage, from the repository root:
#   bash results/2026-11-27-h200-f32-shell/run.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin"
nvidia-smi -L | tee "$out/gpu.txt"
for round in 1 2; do
    CUDA_VISIBLE_DEVICES=0 timeout 200 "$dir/shell_bench" 512 15 | tee "$out/bench$round.csv"
done
