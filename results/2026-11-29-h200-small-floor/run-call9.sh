#!/usr/bin/env bash
# Call 9: the final build (f3153be) checked on one H200: CUDA conformance, the CLI's GPU tests,
# and compute-sanitizer memcheck of lib-tq-ipc (small, thesis-9, full verification, 2 ranks
# sharing the GPU).
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call9.sh
#   carry/bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli. Output: $OUT/call9-log.txt.
set -uo pipefail
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0
out=/tmp/call9; rm -rf $out; mkdir -p $out
exec > >(tee "$OUT/call9-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|lib-tq-ipc \|" "$out/$name.txt" | head -10
}
step conformance 90 $bin/cuda-conformance --test-threads=1
HALOPORT_BIN=$bin/haloport step gpu-cli 120 $bin/gpu-cuda-cli --test-threads=1
step memcheck 120 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES \
    -np 2 compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport sweep \
    --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck"
date -u
