#!/usr/bin/env bash
# Call 6: the final code's default (--placement tiles) at 512^3, 1 rank under MPS, two rounds,
# plain and --graph: f32 rows of 520 (--pad 6,0,0), f64 rows of 516 (--pad 2,0,0) and of 514.
# usage, from the repository root: bash results/2026-11-29-h200-placed-fields/run-final.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/final; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/final-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    for layout in f32-rows520 f64-rows516 f64-rows514; do
        case $layout in
            f32-rows520) args=(--type f32 --pad 6,0,0) ;;
            f64-rows516) args=(--type f64 --pad 2,0,0) ;;
            f64-rows514) args=(--type f64) ;;
        esac
        for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            name=$layout-$mode-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid 512x512x512 "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            grep -E "step median|compute alone|verified|error" "$out/$name.txt" | head -4
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/final.tgz" -C "$top" final && rm -rf "$out"
