#!/usr/bin/env bash
# Issue 23, call 3 on two H200s: the library's synthetic pack with its loop as tight as ipc-tq's
# (a.iteration read once, not after every store) against the build before, interleaved: sweeps
# of ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs), three rounds with one
# rank a GPU, two with both ranks sharing GPU 0 under MPS; then the new build once with
# --lib-blocks 8 on two GPUs, and once with --verify full (every element checked) on both.
# usage, from the repository root: bash results/2026-11-29-h200-lib-blocks/run-call3.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with ./haloport (this build) and ./haloport-base (the one before).
#   Output in OUT/call3.tgz and OUT/call3-log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/call3; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
exec > >(tee "$top/call3-log.txt") 2>&1
date -u; nvidia-smi -L
sweep() { # NAME BINARY EXTRA_ARGS...
    local name=$1 exe=$2 t0=$SECONDS; shift 2
    echo "=== $name: $exe $*"
    timeout 120 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES \
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2 \
        $bin/$exe sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 20 "$@" --out "$out/$name" \
        > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | head -8
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3; do
    sweep two-base-$round haloport-base
    sweep two-new-$round haloport
done
sweep two-new-lib8 haloport --lib-blocks 8
sweep two-new-full haloport --verify full
# One GPU shared by both ranks, under MPS (../../../shared/device-facts.md).
export CUDA_VISIBLE_DEVICES=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2; do
    sweep one-base-$round haloport-base
    sweep one-new-$round haloport
done
sweep one-new-full haloport --verify full
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call3.tgz" -C "$top" call3 && rm -rf "$out"
