#!/usr/bin/env bash
# How many grid blocks should serve one message of the library's exchange: the sweep of ipc-tq
# and lib-tq-ipc under MPS, 2 ranks sharing one GPU, with the library's cap on blocks per
# signalled region (HaloOptions::signalled_blocks, 16) set to 8, 16, 32 and 64 through
# HALOPORT_EXP_SB, a variable read only by this experiment's build (haloport-sb: run-runs.sh's
# build plus that read, not committed). Two rounds, interleaved; every run verified.
# usage, from the repository root: bash results/2026-11-26-h200-one-launch/run-blocks.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/sb-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for round in 1 2; do for sb in 8 16 32 64; do
    echo "=== sb $sb round $round"
    HALOPORT_EXP_SB=$sb timeout 200 mpirun -np 2 -x HALOPORT_EXP_SB -x CUDA_MPS_PIPE_DIRECTORY \
        -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU \
        $bin/haloport-sb sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 10 --out "$out/sweep-sb$sb-$round" \
        > "$out/sweep-sb$sb-$round.txt" 2>&1; echo "rc $?"
    grep -E "ipc" "$out/sweep-sb$sb-$round.txt"
    rm -rf "$out/sweep-sb$sb-$round/cells"
done; done
echo quit | nvidia-cuda-mps-control
date -u
