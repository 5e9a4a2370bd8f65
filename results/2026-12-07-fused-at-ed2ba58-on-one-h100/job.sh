#!/usr/bin/env bash
# Fused mode at HEAD on one GPU: bench/gpu-fused.sh all (verification, examples in C++ and
# CuPy, speed against the ordinary step, HIP on CUDA, sanitizers) from one release build.
set -uo pipefail
c=/tmp/c; mkdir -p $c && tar xJf carry/fh/pack.tar.xz -C $c || exit 3
timeout 500 bash bench/gpu-fused.sh $c $OUT/fused all > $OUT/fused.txt 2>&1
echo "gpu-fused exit $?"
grep -E '^--- ' $OUT/fused.txt; sed -n '/=== summary/,$p' $OUT/fused.txt
