#!/usr/bin/env bash
# The shell's slab launches on urgent streams (the device's highest priority, as the exchange's)
# against ordinary ones, on one GPU under MPS: 512^3, 1 rank, f64 and f32 (rows of 516 and of
# 514), plain and --graph, the two builds interleaved, two rounds.
# haloport-base: the committed build; haloport-urgent: the same with core/src/stencil.rs's side
# streams made by create_urgent_stream.
# usage, from the repository root: bash results/2026-11-27-h200-urgent-shell/run.sh BINDIR OUT
#   BINDIR holds variant.tar.xz (haloport-base, haloport-urgent).
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/variant-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/variant.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for type in f64 f32-pad f32; do for mode in plain graph; do for build in base urgent; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=$build-$type-$mode-$round
        timeout 100 mpirun -np 1 "${mps[@]}" $bin/haloport-$build stencil --backend cuda \
            --grid 512x512x512 --type ${type%-pad} --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$out/$name.json" > "$out/$name.txt" 2>&1
        echo "$name rc $? $(grep -oE 'step median [0-9.]+|compute alone [0-9.]+|verified: [a-z]+' "$out/$name.txt" | tr '\n' ' ')"
    done; done; done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
