#!/usr/bin/env bash
# The rest of issue 26's 4-GPU runs on the committed build (ddf6b29): the 7-point stencil over
# ipc, plain and --graph; the 27-point one over mpi; the strong scaling of 1024^3 f64, plain.
# usage, from the repository root: bash results/2026-11-26-h200x4-one-launch/run-more.sh BINDIR OUT
set -uo pipefail
dir=${1:?usage: run-more.sh BINDIR OUT}; out=${2:?usage: run-more.sh BINDIR OUT}
mkdir -p "$out"
RANKS=4 STEPS=10 POINTS=7 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak7" weak
RANKS=4 STEPS=10 POINTS=27 RUNS="mpi-plain" bash ci/gpu-eight.sh "$dir" "$out/weak27-mpi" weak
RANKS=4 STEPS=10 STRONG_MODES=plain bash ci/gpu-eight.sh "$dir" "$out/strong" strong
