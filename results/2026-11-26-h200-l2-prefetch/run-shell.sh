#!/usr/bin/env bash
# The shell with march tiles one plane deep (z slabs) and slab columns of 4 planes, on one GPU,
# under MPS: haloport stencil 512^3 f64 and f32, plain and --graph, 1 rank, for haloport-base
# (5ed7035), haloport-pf2 (f64 march tiles prefetch 2 planes ahead), haloport-z1 (pf2 with
# HP_MARCH_MIN_Z 1: z slabs march in tiles), haloport-z1s4 (z1 with HP_SLAB_Z 4), two rounds
# interleaved. Every run verified.
# usage, from the repository root: bash run-shell.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with those four binaries.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/pf-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified" "$out/$1.txt"; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do for b in ${BUILDS:-base pf2 z1 z1s4}; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-$b-$type-$mode-$round
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$out/$name.json"
    show $name
done; done; done; done
echo quit | nvidia-cuda-mps-control
date -u
