#!/usr/bin/env bash
# Call 3: each kernel of the f32 512^3 step (rows of 520) alone under ncu (gpu__time_duration),
# placed fields against fields at their allocation's start: 4 steps and 4 without the exchange,
# 1 rank, no verification (the reference would double the kernels).
# Ran on the build of commit "stencil: fields stay at their allocation's start by default ...":
# its `--placement placed` is now `--placement interior`.
# usage, from the repository root: bash results/2026-11-29-h200-placed-fields/run-kernels.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/kernels; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/kernel-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
for placement in placed adopted; do
    echo "=== $placement"
    timeout 200 ncu --metrics gpu__time_duration.sum --csv --print-units base \
        $bin/haloport stencil --backend cuda --grid 512x512x512 --type f32 --pad 6,0,0 \
        --placement $placement --steps 4 --exchange-reps 0 --no-verify \
        > "$out/$placement.csv" 2> "$out/$placement.err"; echo "rc $?"
    grep -c gpu__time_duration "$out/$placement.csv"
done
date -u
tar czf "$top/kernels.tgz" -C "$top" kernels && rm -rf "$out"
