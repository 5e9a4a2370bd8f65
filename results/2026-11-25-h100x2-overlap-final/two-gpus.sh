#!/usr/bin/env bash
# The final build of the overlapped step across the machine's two GPUs: ci/gpu-two.sh's stencil
# part (weak scaling 512^3 f64 per GPU on 1 and 2 GPUs, strong scaling 1024x512x512, plain and
# --graph, ipc) and its sanitize part (memcheck and racecheck of graph mode and lib-tq-ipc).
# usage, from the repository root: bash results/2026-11-25-h100x2-overlap-final/two-gpus.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
bin=/tmp/final-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
bash ci/gpu-two.sh $bin "$out" stencil sanitize
