#!/usr/bin/env bash
# Relaxed polls (this build, haloport-new: a wait polls its flag relaxed and reads it once with
# acquire when seen) against acquire polls (haloport-old: every poll an acquire load, on sm_90 a
# strong load and CCTL.IVALL, an invalidation of the SM's L1) on GPU 0 under MPS: the sweep of
# ipc-tq, lib-base-ipc and lib-tq-ipc with 2 ranks sharing the GPU, haloport stencil 512^3 f64
# over 2 ranks sharing it (2x1x1, ipc) plain and --graph, and 1 rank (no waits: a control).
# Two rounds, the builds interleaved. Every exchange and stencil run verified.
# usage, from the repository root: bash results/2026-11-26-h200-relaxed-polls/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport-old and haloport-new.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/poll-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=${GPU:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
show() { grep -E "step median|compute alone|verified" "$out/$1.txt"; }
for round in 1 2; do for b in old new; do
    echo "=== sweep-$b-$round"
    timeout 200 mpirun -np 2 "${mps[@]}" $bin/haloport-$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round" > "$out/sweep-$b-$round.txt" 2>&1
    echo "rc $?"; grep -E "ipc" "$out/sweep-$b-$round.txt"
    for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        name=two-$b-$mode-$round
        echo "=== $name"
        timeout 100 mpirun -np 2 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
            --grid 512x512x512 --procs 2x1x1 --transport ipc --type f64 --steps 20 \
            --exchange-reps 20 "${extra[@]}" --json "$out/$name.json" > "$out/$name.txt" 2>&1
        echo "rc $?"; show $name
    done
done; done
for b in old new; do
    name=one-$b-plain
    echo "=== $name"
    timeout 100 mpirun -np 1 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
        --grid 512x512x512 --type f64 --steps 20 --exchange-reps 20 --json "$out/$name.json" \
        > "$out/$name.txt" 2>&1
    echo "rc $?"; show $name
done
echo quit | nvidia-cuda-mps-control
date -u
