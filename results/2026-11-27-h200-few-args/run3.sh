#!/usr/bin/env bash
# Issue 23, call 3: a region kernel's wait looking at the abort flag and the timer from its 64th
# poll rather than from its first (haloport-poll), against the build without that
# (haloport-few: the short parameter and the argument built once); sweeps under MPS with 2 ranks
# sharing the GPU, builds interleaved, three rounds; a dropped message with each build (the
# waits must still give up, and every rank exit with 3).
# usage, from the repository root: bash results/2026-11-27-h200-few-args/run3.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-few, haloport-poll. Output in OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/poll-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
for build in few poll; do
    step drop-send-$build 120 mpirun -np 2 $bin/haloport-$build run --backend cuda \
        --transport ipc --variant lib-tq-ipc --workload small --runs 1 --iters 3 --warmup 0 \
        --timeout 2 --inject drop-send=1
    grep -E "timed out|exit|error" "$out/drop-send-$build.txt" | head -4
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2 3; do
    for build in few poll; do
        name=sweep-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
