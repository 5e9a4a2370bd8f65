#!/usr/bin/env bash
# Call 7: the build with HalosIn (core/src/stencil.rs) over the layouts that calls 3-6 point to,
# 1 rank under MPS, two rounds, plain and --graph: f32 512^3 with rows of 520 (--pad 6,0,0),
# with the interior's first cell on a 16-byte boundary (--halo-lo 4,1,1: an x halo 4 wide on the
# low side) and rows of 524 (--pad 7,0,0) or 520 (--pad 3,0,0), and f64 512^3 (halo 1) beside.
# Checks: compute-sanitizer memcheck on the f32 stencil with the 4-wide low x halo, 1 rank and
# 2 ranks over ipc periodic in x (rows of 140), with its steps without the exchange.
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run-layout.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/layout; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/layout-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|inner box|verified|SUMMARY|hint|error" "$out/$1.txt" | head -10
}
wide=(--type f32 --halo-lo 4,1,1 --pad 7,0,0)
step sanitize-memcheck-1 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport stencil --backend cuda --grid 128x64x64 "${wide[@]}" --steps 4 --exchange-reps 2
show sanitize-memcheck-1
step sanitize-memcheck-2 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool memcheck \
    --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --grid 256x64x64 \
    --procs 2x1x1 --periodic x "${wide[@]}" --steps 4 --exchange-reps 2
show sanitize-memcheck-2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for layout in f32-rows520 f32-aligned524 f32-aligned520 f64; do
        case $layout in
            f32-rows520) args=(--type f32 --pad 6,0,0) ;;
            f32-aligned524) args=(--type f32 --halo-lo 4,1,1 --pad 7,0,0) ;;
            f32-aligned520) args=(--type f32 --halo-lo 4,1,1 --pad 3,0,0) ;;
            f64) args=(--type f64) ;;
        esac
        for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            name=$layout-$mode-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid 512x512x512 "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/layout.tgz" -C "$top" layout && rm -rf "$out"
