#!/usr/bin/env bash
# Call 6: --overlap auto (the default: no overlap where every neighbour of a rank is the rank
# itself), this directory's commit. The CLI's GPU tests; compute-sanitizer memcheck and
# racecheck on 1 rank (auto: no overlap), f64 and f32 rows of 136, --graph; under MPS, two
# rounds: 512^3 on 1 rank by default (f64 rows of 516, f32 rows of 520, f32 rows of 520 with
# --placement interior), plain and --graph; 2 ranks of 512^3 each over ipc sharing the GPU.
# usage, from the repository root: bash results/2026-11-29-h200-issue23-final/run-auto.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, gpu-cuda-cli. Output in OUT/auto.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/auto; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/auto-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/auto-log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1
grep -E "test result|FAILED|panicked" "$out/gpu-cli.txt"
for tool in memcheck racecheck; do for type in f64 f32; do
    extra=(--graph); [ $type = f32 ] && extra+=(--pad 6,0,0)
    name=sanitize-1rank-$type-graph-auto-$tool
    step $name 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
        --backend cuda --grid 128x64x64 --type $type --fields 2 --steps 6 --exchange-reps 2 \
        "${extra[@]}" --json "$out/$name.json"
    grep -E "step median|verified|SUMMARY" "$out/$name.txt"
done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for layout in f64-rows516 f32-rows520 f32-rows520-interior; do
        case $layout in
            f64-rows516) args=(--type f64 --pad 2,0,0) ;;
            f32-rows520) args=(--type f32 --pad 6,0,0) ;;
            f32-rows520-interior) args=(--type f32 --pad 6,0,0 --placement interior) ;;
        esac
        for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            name=stencil-$layout-$mode-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid 512x512x512 "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            grep -E "step median|compute alone|verified" "$out/$name.txt"
        done
    done
    name=stencil-2ranks-f64-$round
    step $name 150 mpirun -np 2 "${mps[@]}" $bin/haloport stencil --backend cuda \
        --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
        --exchange-reps 20 --json "$out/$name.json"
    grep -E "step median|compute alone|verified" "$out/$name.txt"
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/auto.tgz" -C "$top" auto && rm -rf "$out"
