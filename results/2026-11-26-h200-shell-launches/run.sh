#!/usr/bin/env bash
# The commands of the two runs (one call each), BINDIR holding the benches built as their
# headers say (shell_bench with march-tiles.diff applied). usage: bash run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin" CUDA_VISIBLE_DEVICES=0
nvidia-smi -L
"$bin/shell_bench" 512 15 | tee "$out/shell_bench.csv"
"$bin/align_bench" 512 15 | tee "$out/align_bench.csv"
