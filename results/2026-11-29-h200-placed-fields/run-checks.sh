#!/usr/bin/env bash
# Call 1: the conformance suites of the placed-fields build on one GPU (CUDA, and the HIP backend
# through the HIP-on-CUDA layer, whose two binding checks need hipcc's header and run in CI), and
# compute-sanitizer memcheck on the f32 stencil with placed fields (the lanes from a field's
# vectors 3 elements before it): 1 rank with rows of 132 and 136, 2 ranks over ipc periodic in x.
# Ran on the build of commit "stencil: lanes take f32 fields at any 4-byte phase ...", whose
# default placement (then `placed`) is now `--placement interior`.
# usage, from the repository root: bash results/2026-11-29-h200-placed-fields/run-checks.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, cuda-conformance, hip-nvidia-conformance, libhaloport_hipnv.so.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/checks; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/check-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
step cuda-conformance 200 $bin/cuda-conformance --test-threads=1
grep -E "test result|FAILED|halos_in|stencil27|panicked" "$out/cuda-conformance.txt" | head -12
step hip-nvidia-conformance 300 env LD_LIBRARY_PATH=$bin $bin/hip-nvidia-conformance --test-threads=1
grep -E "test result|FAILED|halos_in|stencil27|panicked" "$out/hip-nvidia-conformance.txt" | head -12
for pad in 2 6; do
    step memcheck-1-pad$pad 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
        $bin/haloport stencil --backend cuda --grid 128x64x64 --type f32 --pad $pad,0,0 \
        --steps 4 --exchange-reps 2
    grep -E "verified|inner box|compute alone|SUMMARY" "$out/memcheck-1-pad$pad.txt"
done
step memcheck-2 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU compute-sanitizer \
    --tool memcheck --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc \
    --grid 256x64x64 --procs 2x1x1 --periodic x --type f32 --pad 2,0,0 --steps 4 --exchange-reps 2
grep -E "verified|inner box|SUMMARY" "$out/memcheck-2.txt"
date -u
