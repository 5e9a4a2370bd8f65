#!/usr/bin/env bash
# Issue 23, call 2 of this directory: after call 1 found the 2-rank graph mode failing (the one
# launch's argument, built once with its table, kept the capture's epoch word when a capture
# built the table), the build with that fixed: the CLI's GPU tests (now with a 2-rank graph whose
# every neighbour is device-direct), CUDA conformance, and the 2-rank stencil's memcheck and
# racecheck, f64 and f32 with rows of 516, plain and --graph, as in call 1.
# usage, from the repository root: bash results/2026-11-27-h200-issue23-job/run2.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli. Output in OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
for tool in memcheck racecheck; do
    for type in f64 f32-pad; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=sanitize-$type-$mode-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type ${type%-pad} --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
    done; done
done
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
