#!/usr/bin/env bash
# Call 4: depth_bench's rows mode (the step's f32 box over rows padded to each multiple of 8
# elements), then the build whose steps without the exchange run an f32 box in the lanes over
# the interior's full y and z (HalosIn in core/src/stencil.rs) against the build before
# (haloport-base). Checks: CUDA conformance (its new case runs those boxes), compute-sanitizer
# memcheck on 1 rank of the f32 stencil with steps without the exchange (rows of 514, 516, 520).
# Then 1 rank under MPS, builds interleaved, two rounds: the f32 stencil at 512^3 with rows of
# 514 (no padding, the off form), 516 (--pad 2,0,0) and 520 (--pad 6,0,0).
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run-build.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, depth_bench.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/build; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/depth-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|inner box|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -10
}
for n in 512 256; do
    step rows-$n 200 $bin/depth_bench $n 15 rows; cat "$out/rows-$n.txt"
done
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
for pad in 0 2 6; do
    name=sanitize-memcheck-pad$pad
    step $name 200 compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport stencil \
        --backend cuda --grid 128x64x64 --type f32 --pad $pad,0,0 --steps 4 --exchange-reps 2
    show $name
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for pad in 0 2 6; do
        for build in base new; do
            exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
            name=f32-512-pad$pad-$build-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
                --grid 512x512x512 --type f32 --pad $pad,0,0 --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/build.tgz" -C "$top" build && rm -rf "$out"
