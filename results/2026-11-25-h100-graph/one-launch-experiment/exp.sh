#!/usr/bin/env bash
# Experiment: the one-launch exchange launched cooperatively (coop) or plainly (plain) against the
# two-launch build (before), 2 ranks sharing the GPU under MPS; thesis-9 and large.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; tar xJf "$dir/bins.tar.xz" -C /tmp && dir=/tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PATH="$PATH:/usr/local/nvidia/bin"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-smi -L; nvidia-cuda-mps-control -d && echo "MPS started"
for b in plain coop before plain; do
    echo "=== $b"
    timeout 200 mpirun -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY "$dir/haloport-$b" sweep \
        --backend cuda --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,large \
        --out "$out/sweep-$b-$RANDOM" 2>&1 | grep "^|"
done
echo quit | nvidia-cuda-mps-control
