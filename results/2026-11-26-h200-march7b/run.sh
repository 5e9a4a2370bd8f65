#!/usr/bin/env bash
# The 7-point stencil's march form (hp_stencil7_march, with the march tiles' geometry shared
# with hp_stencil27_march) on one GPU: the CUDA conformance suite of that build (haloport-m7);
# then under MPS, 1 rank, 512^3, haloport stencil 27-point f64 (two rounds) and f32, and the
# 7-point f64, for haloport-prev (051c159) and haloport-m7 interleaved; the 7-point with --graph.
# Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200-march7b/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-prev, haloport-m7, cuda-conformance.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/m7-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified|test result" "$out/$1.txt"; }
step conformance 240 $bin/cuda-conformance --test-threads=1; show conformance
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
run() { # NAME BUILD ARGS...
    local name=$1 b=$2; shift 2
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
        --grid 512x512x512 --steps 20 --exchange-reps 20 "$@" --json "$out/$name.json"
    show $name
}
for round in 1 2; do for b in prev m7; do run s27-f64-$b-$round $b --stencil 27; done; done
for b in prev m7; do run s27-f32-$b $b --stencil 27 --type f32; done
for b in prev m7; do run s7-f64-$b $b --stencil 7; done
run s7-f64-m7-graph m7 --stencil 7 --graph
echo quit | nvidia-cuda-mps-control
date -u
