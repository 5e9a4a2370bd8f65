#!/usr/bin/env bash
# Call 12: the conformance suites of the session's last code (4ea789e) on one GPU: CUDA, and the
# HIP backend through the HIP-on-CUDA layer (its two binding checks need hipcc, which the GPU
# machine lacks; they run in CI).
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run-checks.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: cuda-conformance, hip-nvidia-conformance, libhaloport_hipnv.so.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; mkdir -p "$top"
bin=/tmp/check-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
echo "=== cuda-conformance"
timeout 200 $bin/cuda-conformance --test-threads=1 > "$top/cuda-conformance.txt" 2>&1; echo "rc $?"
grep -E "test result|FAILED|halos_in|stencil27" "$top/cuda-conformance.txt"
echo "=== hip-nvidia-conformance"
LD_LIBRARY_PATH=$bin timeout 300 $bin/hip-nvidia-conformance --test-threads=1 \
    > "$top/hip-nvidia-conformance.txt" 2>&1; echo "rc $?"
grep -E "test result|FAILED|halos_in|stencil27|panicked" "$top/hip-nvidia-conformance.txt" | head -12
date -u
