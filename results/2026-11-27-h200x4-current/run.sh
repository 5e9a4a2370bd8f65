#!/usr/bin/env bash
# Issue 26 on 4 GPUs with the build of 229b69e (the f64 box taking its shell's x and y slabs,
# graphs keeping node priorities, f32 lanes): weak scaling of 512^3 f64 a GPU, periodic in x, y
# and z, over ipc, the 27-point stencil plain and --graph and the 7-point one plain, on 1, 2 and 4
# GPUs, every count verified.
# usage, from the repository root: bash results/2026-11-27-h200x4-current/run.sh BINDIR OUT
set -uo pipefail
dir=${1:?usage: run.sh BINDIR OUT}; out=${2:?usage: run.sh BINDIR OUT}
mkdir -p "$out"
RANKS=4 STEPS=10 POINTS=27 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak27" weak
RANKS=4 STEPS=10 POINTS=7 RUNS="ipc-plain" bash ci/gpu-eight.sh "$dir" "$out/weak7" weak
