#!/usr/bin/env bash
# The one launch (run.sh's build) with each synthetic region's
# blocks storing and checking contiguous runs of its elements (haloport: hp_synthetic_run, as
# ipc-tq's chunks), against the build before (haloport-old, 5731ff3), on one GPU: CUDA
# conformance and the CLI's GPU tests of the new build, compute-sanitizer memcheck of lib-tq-ipc
# with full verification (2 ranks sharing the GPU), and under MPS the sweep of ipc-tq,
# lib-base-ipc and lib-tq-ipc with 2 ranks, two rounds, the builds interleaved.
# usage, from the repository root: bash results/2026-11-26-h200-one-launch/run-runs.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-old, cuda-conformance, gpu-cuda-cli
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/runs-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "verified|SUMMARY|test result|FAILED|panicked" "$out/$1.txt" | head -12; }
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step sanitize-lib-memcheck 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
    --tool memcheck --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
    --variant lib-tq-ipc --workload thesis-9 --pattern mixed --runs 2 --iters 3 --warmup 1 \
    --verify full
show sanitize-lib-memcheck
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in haloport-old haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
    rm -rf "$out/sweep-$b-$round/cells"
done; done
echo quit | nvidia-cuda-mps-control
date -u
