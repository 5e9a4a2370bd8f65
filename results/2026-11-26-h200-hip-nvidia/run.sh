#!/usr/bin/env bash
# The done word and the balanced blocks through the HIP backend (SPEC 19), on one NVIDIA GPU via
# haloport's HIP-on-CUDA layer (evidence for the backend's code, never for AMD hardware):
# haloport-hipnv (cuda and hip-nvidia features) and hip-nvidia-conformance built from 1ff7195
# as ci/build-gpu-carry.sh does. The HIP conformance suite; compute-sanitizer memcheck of
# lib-tq-ipc with --backend hip, 2 ranks sharing the GPU; under MPS the sweep of ipc-tq and
# lib-*-ipc with --backend hip and with --backend cuda from the same binary, 2 ranks.
# usage, from the repository root: bash results/2026-11-26-h200-hip-nvidia/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-hipnv, hip-nvidia-conformance, libhaloport_hipnv.so.
#   Everything is written under OUT/hip and packed into OUT/hip.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/hip; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/hipnv-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "verified|SUMMARY|test result|FAILED|panicked|error" "$out/$1.txt" | head -8
}
mpi=(mpirun -np 2 -x LD_LIBRARY_PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES)
step conformance 200 $bin/hip-nvidia-conformance --test-threads=1; show conformance
step memcheck-lib 200 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport-hipnv run --backend hip --transport ipc --variant lib-tq-ipc \
    --workload thesis-9 --pattern mixed --runs 2 --iters 3 --warmup 1 --verify full
show memcheck-lib
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mpi+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
for backend in hip cuda; do
    step sweep-$backend 200 "${mpi[@]}" $bin/haloport-hipnv sweep --backend $backend \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$backend"
    grep -E "ipc|error" "$out/sweep-$backend.txt" | head -14
    rm -rf "$out/sweep-$backend/cells"; gzip -9 "$out/sweep-$backend/sweep.json"
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/hip.tgz" -C "$top" hip && rm -rf "$out"
