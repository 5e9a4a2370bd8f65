#!/usr/bin/env bash
# beside_bench, two rounds, on one GPU; then (same call) the CUDA conformance tests of the build.
# usage, from the repository root: bash run.sh BINDIR OUT  (BINDIR/bins.tar.xz: beside_bench,
# cuda-conformance)
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/bb-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
nvidia-smi -L | tee "$out/gpu.txt"
for round in 1 2; do timeout 120 $bin/beside_bench 30 | tee "$out/beside-$round.csv"; done
timeout 300 $bin/cuda-conformance --test-threads=1 > "$out/conformance.txt" 2>&1; echo "conformance rc $?"
grep -E "test result" "$out/conformance.txt"
