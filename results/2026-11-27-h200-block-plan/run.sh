#!/usr/bin/env bash
# Issue 23: the one launch's grid blocks look up both sides' regions and signalling together, in
# two rounds of independent loads before the pack (hp_plan_block), against the build before
# (haloport-base: a side's lookup, a chain of dependent loads, before each side): CUDA conformance,
# the HIP-on-CUDA layer's, the CLI's GPU tests, compute-sanitizer memcheck and racecheck on
# lib-tq-ipc (small, thesis-9) and on the 2-rank stencil over ipc (periodic in x: its start is the
# one launch), plain and --graph; then sweeps under MPS with 2 ranks sharing the GPU, builds
# interleaved, three rounds (with STENCIL=1, the 2-rank stencil's blocking exchange too).
# usage, from the repository root: [BUILDS="base ..."] bash results/2026-11-27-h200-block-plan/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-NAME for each other name in BUILDS (default
#   "base new"; "new" is haloport), cuda-conformance, gpu-cuda-cli, hip-nvidia-conformance,
#   libhaloport_hipnv.so. The checks run haloport. Output in OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/plan-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|verified|SUMMARY|test result|FAILED|panicked|error" "$out/$1.txt" |
        head -12
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do
    for workload in small thesis-9; do
        name=sanitize-$workload-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
            --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
            --variant lib-tq-ipc --workload $workload --pattern mixed --runs 2 --iters 3 \
            --warmup 1 --verify full
        show $name
    done
    for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        name=sanitize-stencil-$mode-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type f64 --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
    done
done
step drop-send 60 mpirun -np 2 -x CUDA_VISIBLE_DEVICES $bin/haloport run --backend cuda \
    --transport ipc --variant lib-tq-ipc --workload small --runs 1 --iters 3 --warmup 0 \
    --timeout 2 --inject drop-send=1
grep -E "timed out|exit|error" "$out/drop-send.txt" | head -4
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2 3; do
    for build in ${BUILDS:-base new}; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        name=sweep-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $exe sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
        # STENCIL=1 (call 3): 2 ranks of the stencil over ipc, periodic in x alone (the peer is
        # both x neighbours: 18 directions), 2 fields of f64: each rank's one launch moves more
        # regions than its parameter carries (32), a table in device memory.
        [ "${STENCIL:-0}" = 1 ] || continue
        name=stencil-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $exe stencil --backend cuda --transport ipc \
            --grid 256x128x128 --procs 2x1x1 --periodic x --type f64 --fields 2 --steps 40 \
            --exchange-reps 200
        grep -E "step median|exchange|verified" "$out/$name.txt" | head -6
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
