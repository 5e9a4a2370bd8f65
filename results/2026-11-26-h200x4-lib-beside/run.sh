#!/usr/bin/env bash
# Issue 26 on 4 GPUs with build 951f672 (the library's abort word in device memory, its unpack
# beside its pack): weak scaling of 512^3 f64 a GPU, 27-point, ipc, plain and --graph; then the
# strong scaling of 1024^3 with --graph alone (the run the earlier calls' limits cut).
# usage, from the repository root: bash results/2026-11-26-h200x4-lib-beside/run.sh BINDIR OUT
set -uo pipefail
dir=${1:?usage: run.sh BINDIR OUT}; out=${2:?usage: run.sh BINDIR OUT}
mkdir -p "$out"
RANKS=4 STEPS=10 POINTS=27 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak27" weak
RANKS=4 STEPS=10 STRONG_MODES=graph bash ci/gpu-eight.sh "$dir" "$out/strong" strong
