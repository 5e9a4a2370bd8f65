#!/usr/bin/env bash
# The march form with L2 prefetch in production, on one GPU: the CUDA conformance suite and the
# CLI's GPU tests of that build (haloport-pf); l2pf_bench against its headers; then under MPS
# haloport stencil 512^3 f64 and f32, plain and --graph, 1 rank, for haloport-base (the tree
# before, 5ed7035), haloport-pf (march tiles prefetch 2 planes ahead) and haloport-pfs (the
# slabs' columns too), two rounds interleaved. Every run verified.
# usage, from the repository root: bash run-step.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-{base,pf,pfs}, cuda-conformance, gpu-cuda-cli, l2pf_bench.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/pf-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=$bin/haloport-pf
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified|SUMMARY|test result" "$out/$1.txt"; }
step conformance 240 $bin/cuda-conformance --test-threads=1; show conformance
step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step l2pf_bench 120 $bin/l2pf_bench 512 15; grep -E "production|kind0|kind1-pd2|copy" "$out/l2pf_bench.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do for b in base pf pfs; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-$b-$type-$mode-$round
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$out/$name.json"
    show $name
done; done; done; done
echo quit | nvidia-cuda-mps-control
date -u
