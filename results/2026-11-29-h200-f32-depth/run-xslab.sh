#!/usr/bin/env bash
# Call 8: f32 x slabs one point wide in a group of 32 lanes for each 30 rows, the rows beside
# by shuffle (hp_stencil27_xslab), against the build before (haloport-base, 474df46: a thread a
# column). Checks: CUDA conformance; compute-sanitizer memcheck on the f32 stencil, 1 rank (rows
# of 130, 132, 136) and 2 ranks over ipc periodic in x. Then 1 rank under MPS, builds
# interleaved, two rounds: f32 512^3 with rows of 520, 516 and 514, plain; rows of 520 with
# --graph.
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run-xslab.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/xslab; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/xslab-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -10
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
for pad in 0 2 6; do
    name=sanitize-memcheck-pad$pad
    step $name 200 compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport stencil \
        --backend cuda --grid 128x64x64 --type f32 --pad $pad,0,0 --steps 4 --exchange-reps 2
    show $name
done
step sanitize-memcheck-2 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool memcheck \
    --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --grid 256x64x64 \
    --procs 2x1x1 --periodic x --type f32 --pad 6,0,0 --steps 4 --exchange-reps 2
show sanitize-memcheck-2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for run in pad6 pad2 pad0 pad6-graph; do
        pad=${run%-graph}; pad=${pad#pad}
        extra=(); [ $run = pad6-graph ] && extra=(--graph)
        for build in base new; do
            exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
            name=f32-512-$run-$build-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
                --grid 512x512x512 --type f32 --pad $pad,0,0 "${extra[@]}" --steps 20 \
                --exchange-reps 20 --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/xslab.tgz" -C "$top" xslab && rm -rf "$out"
