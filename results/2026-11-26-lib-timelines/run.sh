#!/usr/bin/env bash
# Where the library's device-direct exchange spends its time beside ipc-tq, from per-block device
# timestamps (the library's region kernels stamp them since 1e2b44b): haloport sweep of ipc-base,
# ipc-tq, lib-base-ipc and lib-tq-ipc on small, thesis-9, thesis-27 and large, 10 runs, with the
# barrier, first one rank per GPU on two GPUs, then two ranks sharing GPU 0 under MPS; then
# ci/gpu-two.sh's stencil and sanitize parts (weak 512^3 f64 per GPU and strong 1024x512x512 on
# 1 and 2 GPUs, plain and --graph; memcheck and racecheck of the graph mode and lib-tq-ipc).
# usage, from the repository root: bash results/2026-11-26-lib-timelines/run.sh BINDIR OUT [stencil]
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
hp=$dir/haloport
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
sweep=(sweep --backend cuda --variants ipc-base,ipc-tq,lib-base-ipc,lib-tq-ipc
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet)
echo "=== sweep, one rank per GPU"
timeout 300 mpirun --bind-to none -np 2 $hp "${sweep[@]}" --out "$out/sweep-2gpu" \
    > "$out/sweep-2gpu.txt" 2>&1; echo "rc $?"; tail -22 "$out/sweep-2gpu.txt"
echo "=== sweep, two ranks sharing GPU 0 under MPS"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
CUDA_VISIBLE_DEVICES=0 nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0 timeout 300 mpirun --bind-to none -np 2 -x CUDA_MPS_PIPE_DIRECTORY \
    -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES $hp "${sweep[@]}" --out "$out/sweep-mps" \
    > "$out/sweep-mps.txt" 2>&1; echo "rc $?"; tail -22 "$out/sweep-mps.txt"
echo quit | nvidia-cuda-mps-control; sleep 1
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
rm -rf "$out"/sweep-*/cells
if [ "${3:-}" = stencil ]; then
    bash ci/gpu-two.sh "$dir" "$out/two" stencil sanitize
fi
date -u
