#!/usr/bin/env bash
# Call 7: the 7-point march in hp_stencil27 with a floor of 3 resident blocks an SM
# (stencil27-bounds.diff: __launch_bounds__(256, 3), 80 registers, no spill, against 102
# registers and 2 blocks of the stencil's 256 threads): base (as call 6) against lb3. 512^3 on
# 1 rank, the 7-point stencil f64 and f32, and the 27-point f64 and f32 (whose shell slabs may
# take hp_stencil27), 2 rounds.
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-call7.sh
#   carry/bins.tar.xz: haloport-base, haloport-lb3. Output: $OUT/call7-log.txt.
set -uo pipefail
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin" HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0
exec > >(tee "$OUT/call7-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
for round in 1 2; do
    for build in base lb3; do
        for s in 7 27; do
            for type in f64 f32; do
                echo "=== s$s-$type-$build-$round"
                timeout 120 $bin/haloport-$build stencil --backend cuda --grid 512x512x512 \
                    --type $type --stencil $s --steps 20 --exchange-reps 5 |
                    grep -E "step median|compute alone|inner box|verified"
            done
        done
    done
done
date -u
