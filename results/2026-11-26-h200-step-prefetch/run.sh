#!/usr/bin/env bash
# Issue 23's figures from one GPU with build 0d14bbb (f64 march tiles prefetching into L2, z slabs
# in tiles, slab columns of 4 planes): compute-sanitizer memcheck and racecheck of the graph mode
# with 2 ranks sharing the GPU; then under MPS haloport stencil 512^3 f64 and f32, plain and
# --graph, 1 rank, two rounds; the sweep of ipc-tq, lib-base-ipc and lib-tq-ipc with 2 ranks; the
# scaling report of 1, 2, 4 and 8 ranks sharing the GPU (correctness only). Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200-step-prefetch/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/step-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified|SUMMARY" "$out/$1.txt"; }
for tool in memcheck racecheck; do
    step sanitize-$tool 240 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --graph \
        --grid 128x64x64 --procs 2x1x1 --fields 2 --steps 6 --exchange-reps 2
    show sanitize-$tool
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-$type-$mode-$round
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$out/$name.json"
    show $name
done; done; done
step sweep 200 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
    --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
    --runs 20 --out "$out/sweep"
grep -E "ipc" "$out/sweep.txt"
step scaling 200 mpirun -np 8 --oversubscribe "${mps[@]}" $bin/haloport stencil \
    --backend cuda --transport ipc --grid 128x128x128 --steps 6 --scaling strong \
    --plot "$out/scaling.svg" --json "$out/scaling.json"
tail -8 "$out/scaling.txt"
echo quit | nvidia-cuda-mps-control
date -u
