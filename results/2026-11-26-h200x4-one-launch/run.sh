#!/usr/bin/env bash
# Issue 26 on 4 GPUs with the library's exchange in one launch (a1e1f50): weak scaling of 512^3
# f64 a GPU, 27-point, ipc, plain and --graph, on 1, 2 and 4 GPUs; then the faults on 4 ranks (a
# dropped send, a stopped rank), every other rank ending with a time-out naming the halo.
# usage, from the repository root: bash results/2026-11-26-h200x4-one-launch/run.sh BINDIR OUT
set -uo pipefail
dir=${1:?usage: run.sh BINDIR OUT}; out=${2:?usage: run.sh BINDIR OUT}
mkdir -p "$out"
nvidia-smi -L > "$out/gpus.txt"
RANKS=4 STEPS=10 POINTS=27 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak27" weak
RANKS=4 bash ci/gpu-eight.sh "$dir" "$out/faults" faults
