#!/usr/bin/env bash
# Issue 26's 4-GPU part again with build 0d14bbb (f64 march tiles prefetching into L2), and what
# the first 4-GPU run (../2026-11-26-h200x4-four-gpus, d49ba9d) left out, on a machine of 4 x
# NVIDIA H200, one rank a GPU, with ci/gpu-eight.sh (RANKS=4: process grids 1x1x1, 2x1x1,
# 2x2x1), 10 steps a run, every rank count verified. Call 1 (weak): weak scaling 512^3 f64 per
# GPU, 27-point over ipc plain and --graph, the 7-point over ipc --graph (mpi with --graph is
# refused by design: a host-staged neighbour cannot be captured). Call 2 (strong): strong scaling of 1024^3 f64 over ipc, plain and --graph.
# usage, from the repository root: bash results/2026-11-26-h200x4-prefetch/run.sh BINDIR OUT weak|strong
#   BINDIR holds haloport (or bins.tar.xz with it).
set -uo pipefail
dir=${1:?usage: run.sh BINDIR OUT weak|strong}; out=${2:?usage: run.sh BINDIR OUT weak|strong}
mkdir -p "$out"
case ${3:?usage: run.sh BINDIR OUT weak|strong} in
weak)
    RANKS=4 STEPS=10 POINTS=27 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak27" weak
    RANKS=4 STEPS=10 POINTS=7 RUNS=ipc-graph bash ci/gpu-eight.sh "$dir" "$out/weak7" weak
    ;;
strong)
    RANKS=4 STEPS=10 bash ci/gpu-eight.sh "$dir" "$out/strong" strong
    ;;
esac
