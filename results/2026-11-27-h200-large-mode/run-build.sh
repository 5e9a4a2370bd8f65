#!/usr/bin/env bash
# Issue 23: the one launch gives a region more grid blocks than --signalled-blocks where each
# would carry over 512 KiB of traffic (BLOCK_COST_MOST in core/src/halo/engine.rs), against the
# build before (haloport-base). Checks: CUDA conformance, the HIP-on-CUDA layer's, the CLI's GPU
# tests, compute-sanitizer memcheck and racecheck on lib-tq-ipc large (the path that changed)
# with 2 ranks sharing the GPU, a dropped message on large. Then under MPS, builds interleaved,
# three rounds: the sweep of ipc-tq and lib-tq-ipc over the four workloads, and 2 ranks of the
# stencil, 1024x512x512 f64 periodic in x over ipc (its x faces' regions cross the threshold).
# usage, from the repository root: [PART=checks|perf] bash results/2026-11-27-h200-large-mode/run-build.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so. Output in OUT/build.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/build; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/build-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log-${PART:-all}.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|verified|SUMMARY|test result|FAILED|panicked|error|exit" "$out/$1.txt" |
        head -8
}
if [ "${PART:-checks}" = checks ]; then
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do
    name=sanitize-large-$tool
    step $name 300 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_LOG=haloport_cuda=debug,haloport_core=debug \
        compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport run --backend cuda \
        --transport ipc --variant lib-tq-ipc --workload large --pattern mixed --runs 1 --iters 3 \
        --warmup 1 --verify full
    show $name
done
step drop-send 60 mpirun -np 2 -x CUDA_VISIBLE_DEVICES $bin/haloport run --backend cuda \
    --transport ipc --variant lib-tq-ipc --workload large --runs 1 --iters 3 --warmup 0 \
    --timeout 2 --inject drop-send=1
grep -E "timed out|exit|error" "$out/drop-send.txt" | head -4
fi
[ "${PART:-perf}" = perf ] || exit 0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2 3; do
    for build in base new; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        name=sweep-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $exe sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --quiet --out "$out/$name"
        grep -E "ipc" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
        name=stencil2-$build-$round
        step $name 100 mpirun -np 2 "${mps[@]}" $exe stencil --backend cuda --transport ipc \
            --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 --exchange-reps 20 \
            --json "$out/$name.json"
        show $name
    done
done
echo quit | nvidia-cuda-mps-control
date -u
