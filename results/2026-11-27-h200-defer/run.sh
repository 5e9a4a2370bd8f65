#!/usr/bin/env bash
# Issue 23: the f64 box's first chunks' slab tiles taken last (HP_SHELL_DEFER_PART) and the step
# without the exchange run with HP_SHELL_HALOS_IN (no ready word or fix-up), against the build
# before (haloport-base). Checks: CUDA conformance (the shell case now over a box whose blocks
# take tiles out of order, and a step without an exchange), the CLI's GPU tests, the HIP backend
# through the HIP-on-CUDA layer, compute-sanitizer memcheck and racecheck of the f64 stencil with
# 2 ranks sharing the GPU, plain and --graph. Then under MPS, 512^3, 1 rank, f64 and f32 (rows of
# 516), plain and --graph, both builds interleaved, two rounds; 2 ranks of 1024x512x512.
# usage, from the repository root: bash results/2026-11-27-h200-defer/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so. Everything is written under OUT/job.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/defer-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
for tool in memcheck racecheck; do
    for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        name=sanitize-f64-$mode-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type f64 --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
    done
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for type in f64 f32-pad; do for mode in plain graph; do for build in base new; do
        exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=stencil-$type-$mode-$build-$round
        step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
            --grid 512x512x512 --type ${type%-pad} --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$out/$name.json"
        show $name
    done; done; done
    for build in base new; do
        exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
        name=stencil2-f64-$build-$round
        step $name 100 mpirun -np 2 "${mps[@]}" $exe stencil --backend cuda \
            --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
            --exchange-reps 20 --json "$out/$name.json"
        show $name
    done
done
echo quit | nvidia-cuda-mps-control
date -u
