#!/usr/bin/env bash
# Issue 23, large's slow mode: lib-tq-ipc on large takes 103-122 us in some sweeps and 93-98 us
# in others, a whole sweep (a pair of processes) one way, while ipc-tq in the same sweeps stays at
# 98-102 us. Each sweep here is a fresh mpirun of 2 ranks under MPS sharing the GPU, large only,
# with the backend's debug log (every cuMemAlloc's address and size, every IPC mapping's) so the
# mode can be set beside where the mailboxes and their mappings lie.
# usage, from the repository root: [RUNS=N] [TAG=NAME] [MPIRUN_ARGS=...] [HALOPORT_LOG=warn] \
#   [SWEEP_ARGS=...] [WORKLOADS=large,...] bash results/2026-11-27-h200-large-mode/run.sh BINDIR OUT [SWEEPS]
#   BINDIR holds bins.tar.xz with haloport. Output in OUT/job.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; sweeps=${3:-10}; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/mode-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log-${TAG:-sweep}.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d 2>/dev/null || true
export HALOPORT_LOG=${HALOPORT_LOG:-haloport_cuda=debug}
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU -x HALOPORT_LOG)
lscpu | head -20; nvidia-smi topo -m
for s in $(seq 1 "$sweeps"); do
    name=${TAG:-sweep}-$s; t0=$SECONDS
    timeout 120 mpirun -np 2 --tag-output ${MPIRUN_ARGS:-} "${mps[@]}" ${EXTRA_ENV:-} $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads ${WORKLOADS:-large} --runs ${RUNS:-4} --quiet ${SWEEP_ARGS:-} \
        --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "=== $name rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | grep -v cuMem | head -4
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
done
[ "${KEEP_MPS:-0}" = 1 ] || echo quit | nvidia-cuda-mps-control
date -u
