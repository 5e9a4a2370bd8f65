#!/usr/bin/env bash
# Issue 26's strong scaling on the two GPUs lent (nvidia-h200-x2): ci/gpu-eight.sh's strong part
# with RANKS=2, 1024^3 f64 on 1 and 2 GPUs (one rank a GPU), ipc, plain and --graph, 10 steps,
# every rank count verified against one rank. Build: the commit's (ci/build-gpu-carry.sh).
# usage, from the repository root: bash results/2026-11-30-h200x2-strong/run.sh DIR
#   (DIR holds bins.tar.xz with haloport). Output under $OUT/strong.
set -uo pipefail
RANKS=2 STEPS=10 bash ci/gpu-eight.sh "${1:?usage: run.sh DIR}" "$OUT/strong" strong
