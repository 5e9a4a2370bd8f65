#!/usr/bin/env bash
# A shorter call of run.sh's kind: CUDA conformance; under MPS, 512^3 f64, 1 rank, plain and
# --graph, with the slabs in the tiles and as launches of their own (--shell-launches),
# interleaved, two rounds; 2 ranks of 1024x512x512 periodic in x, both ways. Each stencil run
# prints how many of the box's slab tiles ran before the halos were in.
# usage: bash results/2026-11-26-h200-shell-in-tiles/run-check.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/shell-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|shell:|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
step conformance 200 $bin/cuda-conformance --test-threads=1 stencil; show conformance
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for shell in tiles launches; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $shell = launches ] && extra+=(--shell-launches)
        name=stencil-f64-$mode-$shell-$round
        step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
            --grid 512x512x512 --type f64 --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$out/$name.json"
        show $name
    done; done
done
for shell in tiles launches; do
    extra=(); [ $shell = launches ] && extra+=(--shell-launches)
    name=stencil2-f64-$shell
    step $name 100 mpirun -np 2 "${mps[@]}" $bin/haloport stencil --backend cuda \
        --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
        --exchange-reps 20 "${extra[@]}" --json "$out/$name.json"
    show $name
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
