#!/usr/bin/env bash
# Call 5: --placement tiles (the inner box's first cell, x = 2, on a 32-byte boundary; the
# default of this build) against library (Field::alloc, fields at their start) and interior (the
# interior's first cell on a 32-byte boundary), 512^3, 1 rank under MPS, two rounds, builds
# interleaved: f32 rows of 520 and 516, f64 rows of 516 and 514. Then compute-sanitizer memcheck
# on f32 tiles (the lanes from fields 2 elements past a 16-byte boundary), 1 rank and 2 over ipc.
# usage, from the repository root: bash results/2026-11-29-h200-placed-fields/run-tiles.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/tiles; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/tiles-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for layout in f32-rows520 f32-rows516 f64-rows516 f64-rows514; do
        case $layout in
            f32-rows520) args=(--type f32 --pad 6,0,0); modes="tiles library interior" ;;
            f32-rows516) args=(--type f32 --pad 2,0,0); modes="tiles library interior" ;;
            f64-rows516) args=(--type f64 --pad 2,0,0); modes="tiles library" ;;
            f64-rows514) args=(--type f64); modes="tiles library" ;;
        esac
        for mode in $modes; do
            name=$layout-$mode-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid 512x512x512 "${args[@]}" --placement $mode --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            grep -E "step median|compute alone|inner box|verified|error" "$out/$name.txt" | head -4
        done
    done
done
echo quit | nvidia-cuda-mps-control
step memcheck-1 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport stencil --backend cuda --grid 128x64x64 --type f32 --pad 2,0,0 --steps 4 \
    --exchange-reps 2
grep -E "verified|inner box|SUMMARY" "$out/memcheck-1.txt"
step memcheck-2 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU compute-sanitizer \
    --tool memcheck --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc \
    --grid 256x64x64 --procs 2x1x1 --periodic x --type f32 --pad 2,0,0 --steps 4 --exchange-reps 2
grep -E "verified|inner box|SUMMARY" "$out/memcheck-2.txt"
date -u
tar czf "$top/tiles.tgz" -C "$top" tiles && rm -rf "$out"
