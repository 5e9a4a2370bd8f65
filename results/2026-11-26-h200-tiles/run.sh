#!/usr/bin/env bash
# tile_bench (built on the build machine, in BINDIR) on GPU 0, 512^3, 15 launches a variant.
# usage, from the repository root: bash results/2026-11-26-h200-tiles/run.sh BINDIR OUT [prod]
#   call 1 ran without prod (the tilings, bench.csv), call 2 with it (prod.csv).
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin"
nvidia-smi -L
CUDA_VISIBLE_DEVICES=0 timeout 300 "$dir/tile_bench" 512 15 ${3:-} | tee "$out/${3:-bench}.csv"
