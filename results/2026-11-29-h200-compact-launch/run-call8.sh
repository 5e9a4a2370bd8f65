#!/usr/bin/env bash
# Call 8: the 7-point march in its own kernel (hp_stencil7_marching, this directory's commit)
# against base (as calls 6 and 7): CUDA conformance of the new build, then 512^3 on 1 rank, the
# 7-point stencil f64 and f32, 2 rounds, and the 27-point f64 once each.
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-call8.sh
#   carry/bins.tar.xz: haloport-base, haloport-m7, cuda-conformance. Output: $OUT/call8-log.txt.
set -uo pipefail
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin" HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0
exec > >(tee "$OUT/call8-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
echo "=== conformance"
timeout 60 $bin/cuda-conformance --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked"
for round in 1 2; do
    for build in base m7; do
        for type in f64 f32; do
            echo "=== s7-$type-$build-$round"
            timeout 60 $bin/haloport-$build stencil --backend cuda --grid 512x512x512 \
                --type $type --stencil 7 --steps 20 --exchange-reps 5 |
                grep -E "step median|compute alone|inner box|verified"
        done
    done
done
for build in base m7; do
    echo "=== s27-f64-$build"
    timeout 60 $bin/haloport-$build stencil --backend cuda --grid 512x512x512 --type f64 \
        --steps 20 --exchange-reps 5 | grep -E "step median|compute alone|inner box|verified"
done
date -u
