#!/usr/bin/env bash
# Issue 23, call 2: the f32 lanes (hp_stencil27_march32) with the next plane's loads issued
# before the current plane's sums, 16 planes a tile, against the build before (haloport-base,
# lanes_bench-base: 48fc944). lanes_async_bench with both kernels' sources (rows of 516 and of
# 514, the off form); checks: CUDA conformance, the CLI's GPU tests, the HIP backend through the
# HIP-on-CUDA layer, compute-sanitizer memcheck and racecheck of the f32 stencil with 2 ranks
# sharing the GPU (rows of 66: the off form; and --pad 2,0,0: rows of 68), plain and --graph.
# Then under MPS, 512^3 f32, 1 rank, both builds interleaved, rows of 514 and 516, plain and
# --graph, two rounds.
# usage, from the repository root: bash results/2026-11-27-h200-lanes-pipe/run2.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so, lanes_bench, lanes_bench-base. Everything
#   goes under OUT/job, packed into OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/pipe-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|inner box|shell:|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
for round in 1 2; do
    for b in base new; do
        exe=$bin/lanes_bench; [ $b = base ] && exe=$bin/lanes_bench-base
        step bench-$b-$round 100 $exe 512 15; grep -E "production|copy" "$out/bench-$b-$round.txt"
    done
done
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
for tool in memcheck racecheck; do
    for rows in 66 68; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph); [ $rows = 68 ] && extra+=(--pad 2,0,0)
        name=sanitize-f32-rows$rows-$mode-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type f32 --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
    done; done
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for run in rows514-base rows514-new rows516-base rows516-new; do
        build=${run##*-}
        exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
        for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            [[ $run = rows516* ]] && extra+=(--pad 2,0,0)
            name=stencil-f32-${run%-*}-$mode-$build-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
                --grid 512x512x512 --type f32 --steps 20 --exchange-reps 20 "${extra[@]}" \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
