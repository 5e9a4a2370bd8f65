#!/usr/bin/env bash
# The f32 lanes in tiles of 16 planes (HP_LANES_Z in kernels-cu/haloport_shared.h) against the
# build before (haloport-base, 32 planes). Checks: CUDA conformance, the CLI's GPU tests,
# compute-sanitizer memcheck and racecheck on the 2-rank f32 stencil in the lanes (rows of 68),
# plain and --graph. Then 1 rank under MPS, builds interleaved, two rounds: the f32 stencil at
# 512^3 (rows of 516 and of 514, the off form), 256^3 and 128^3 (rows padded to a multiple of 4).
# usage, from the repository root: bash results/2026-11-28-h200-f32-small-boxes/run-build.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/build; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/small-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|inner box|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -10
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=sanitize-$tool-$mode
    step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --grid 128x64x64 \
        --procs 2x1x1 --periodic x --type f32 --pad 2,0,0 --fields 2 --steps 6 \
        --exchange-reps 2 "${extra[@]}"
    show $name
done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for size in 512-pad 512 256 128; do
        n=${size%-pad}; pad=(); [ "$size" != 512 ] && pad=(--pad $(( (4 - (n + 2) % 4) % 4 )),0,0)
        for build in base new; do
            exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
            name=f32-$size-$build-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
                --grid ${n}x${n}x${n} --type f32 "${pad[@]}" --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/build.tgz" -C "$top" build && rm -rf "$out"
