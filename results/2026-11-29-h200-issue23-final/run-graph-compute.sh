#!/usr/bin/env bash
# Call 4: compute alone replayed from a graph with --graph. haloport is 18f8a14 (one rank still overlapped),
# haloport-base the commit before (9bd6c74, compute alone in plain launches). The CLI's GPU
# tests; compute-sanitizer memcheck and racecheck on 2 ranks sharing the GPU with --graph (f64,
# f32 rows of 136); under MPS, both builds interleaved, two rounds: 8 ranks weak 128^3 a rank,
# 7- and 27-point, --graph; 1 rank 512^3 f64 and f32 (rows of 520), --graph.
# usage, from the repository root: bash results/2026-11-29-h200-issue23-final/run-graph-compute.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, gpu-cuda-cli. Output in OUT/graph.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/graph; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/graph-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/graph-log.txt") 2>&1
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
    name=sanitize-2ranks-$type-graph-$tool
    step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU \
        compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
        --backend cuda --transport ipc --grid 256x64x64 --procs 2x1x1 --periodic x \
        --type $type --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}" --json "$out/$name.json"
    grep -E "compute alone|verified|SUMMARY" "$out/$name.txt"
done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for build in haloport-base haloport; do
    for points in 7 27; do
        name=weak-$points-graph-$build-$round
        step $name 200 mpirun -np 8 --oversubscribe --bind-to none "${mps[@]}" $bin/$build \
            stencil --backend cuda --transport ipc --periodic xyz --grid 128x128x128 \
            --stencil $points --steps 10 --exchange-reps 20 --graph --scaling weak \
            --json "$out/$name.json"
        grep -E "^\| [0-9]" "$out/$name.txt"
    done
    for layout in f64 f32-rows520; do
        args=(--type f64); [ $layout = f32-rows520 ] && args=(--type f32 --pad 6,0,0)
        name=stencil-$layout-graph-$build-$round
        step $name 100 mpirun -np 1 "${mps[@]}" $bin/$build stencil --backend cuda \
            --grid 512x512x512 "${args[@]}" --graph --steps 20 --exchange-reps 20 \
            --json "$out/$name.json"
        grep -E "step median|compute alone|verified" "$out/$name.txt"
    done
done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/graph.tgz" -C "$top" graph && rm -rf "$out"
