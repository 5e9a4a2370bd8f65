#!/usr/bin/env bash
# Issue 23: does the library's grid, the blocks its costliest region gets (--lib-blocks, 16 by
# default), explain lib-tq-ipc's gap to ipc-tq? Sweeps of ipc-tq and lib-tq-ipc (small,
# thesis-9, thesis-27, large; 20 runs each) with --lib-blocks 16, 8 and 4, and one with ipc-tq
# at 16 chunks (--ipc-chunks 16, the library's default grid), ROUNDS rounds in turn:
#   part two: one rank a GPU on two H200s;
#   part one: two ranks sharing GPU 0 under MPS (as issue 23 measures on one H200).
# usage, from the repository root: bash results/2026-11-29-h200-lib-blocks/run-call1.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with ./haloport. Output in OUT/lib-blocks.tgz and OUT/log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/lib-blocks; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
sweep() { # NAME EXTRA_ARGS...
    local name=$1 t0=$SECONDS; shift
    echo "=== $name: $*"
    timeout 120 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES \
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2 \
        $bin/haloport sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 20 "$@" --out "$out/$name" \
        > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc|verified" "$out/$name.txt" | head -12
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
configs() { # PART
    for round in $(seq 1 "${ROUNDS:-2}"); do
        for blocks in 16 8 4; do sweep "$1-lib$blocks-$round" --lib-blocks $blocks; done
        sweep "$1-ipc16-$round" --ipc-chunks 16
    done
}
export CUDA_VISIBLE_DEVICES=0,1 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
configs two
# One GPU shared by both ranks, under MPS (../../../shared/device-facts.md).
export CUDA_VISIBLE_DEVICES=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
configs one
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/lib-blocks.tgz" -C "$top" lib-blocks && rm -rf "$out"
