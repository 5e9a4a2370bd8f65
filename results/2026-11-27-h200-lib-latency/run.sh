#!/usr/bin/env bash
# Issue 23, the library's exchange beside ipc-tq on one GPU: what a launch costs by the size of
# its parameter (launch_bench.cu); the build where the one launch's unpack blocks count
# themselves towards the done word right after their message's fence (haloport) against the
# build before (haloport-base): CUDA conformance, the HIP backend through the HIP-on-CUDA layer,
# the CLI's GPU tests, compute-sanitizer memcheck and racecheck of lib-tq-ipc with 2 ranks
# sharing the GPU, a dropped message, and under MPS the sweep of ipc-tq and lib-tq-ipc, 2 ranks,
# two rounds, builds interleaved.
# usage, from the repository root: bash results/2026-11-27-h200-lib-latency/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, launch_bench, cuda-conformance,
#   gpu-cuda-cli, hip-nvidia-conformance, libhaloport_hipnv.so. Everything is written under
#   OUT/job and packed into OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/lat-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "verified|SUMMARY|test result|FAILED|panicked|error|timed out" "$out/$1.txt" | head -8
}
step launch-bench 120 $bin/launch_bench; cat "$out/launch-bench.txt"
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1
show hip-conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do
    step sanitize-lib-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
        --tool $tool --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
        --variant lib-tq-ipc --workload thesis-9 --pattern mixed --runs 2 --iters 3 --warmup 1 \
        --verify full
    show sanitize-lib-$tool
done
step drop-send 120 mpirun -np 2 $bin/haloport run --backend cuda --transport ipc \
    --variant lib-tq-ipc --workload small --runs 1 --iters 3 --warmup 0 --timeout 2 \
    --inject drop-send=1
show drop-send
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in haloport-base haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
    rm -rf "$out/sweep-$b-$round/cells"
done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
