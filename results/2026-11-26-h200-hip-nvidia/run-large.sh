#!/usr/bin/env bash
# A second look at large after run.sh's cuda sweep from haloport-hipnv (lib-tq-ipc 137.9 us where
# the cuda-only build had given 96-98): thesis-27 and large, under MPS, 2 ranks, three rounds of
# haloport (the cuda-only build of 2c9f8c5's code), haloport-hipnv --backend cuda and
# haloport-hipnv --backend hip.
# usage, from the repository root: bash results/2026-11-26-h200-hip-nvidia/run-large.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-hipnv, libhaloport_hipnv.so.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/large; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/hipnv-large; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mpi=(mpirun -np 2 -x LD_LIBRARY_PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
     -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
for round in 1 2 3; do
    for run in "haloport cuda" "haloport-hipnv cuda" "haloport-hipnv hip"; do
        set -- $run
        echo "=== $1 --backend $2, round $round"
        timeout 120 "${mpi[@]}" $bin/$1 sweep --backend $2 --variants ipc-tq,lib-tq-ipc \
            --workloads thesis-27,large --runs 20 --out "$out/sweep-$1-$2-$round" \
            > "$out/sweep-$1-$2-$round.txt" 2>&1; echo "rc $?"
        grep -E "ipc|error" "$out/sweep-$1-$2-$round.txt" | head -6
        rm -rf "$out/sweep-$1-$2-$round"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/large.tgz" -C "$top" large && rm -rf "$out"
