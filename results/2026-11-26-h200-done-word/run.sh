#!/usr/bin/env bash
# The one launch's done word (haloport: the exchange's wait polls a pinned word its last grid
# block raises, instead of an event) on one GPU, against the build before it (haloport-base,
# 98e9d24): CUDA conformance and the CLI's GPU tests; compute-sanitizer memcheck and racecheck of
# lib-tq-ipc (the blocking one launch, waited for by its done word) with 2 ranks sharing the GPU;
# a dropped message; under MPS: the sweep of ipc-tq and lib-*-ipc, 2 ranks, two rounds, builds
# interleaved; and the 27-point stencil over mpi (host-staged), 2 ranks sharing the GPU, against
# haloport-d49 (d49ba9d, the build whose mpi runs on 4 x H200 were faster), to see whether the
# mpi slow-down seen on 2 and 4 GPUs shows on one.
# usage, from the repository root: bash results/2026-11-26-h200-done-word/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, haloport-d49, cuda-conformance,
#   gpu-cuda-cli
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/done-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() {
    grep -E "step median|compute alone|exposed|blocking|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
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
grep -iE "timed out|error" "$out/drop-send.txt" | head -3
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in haloport-base haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
    rm -rf "$out/sweep-$b-$round/cells"
done; done
for round in 1 2; do for b in haloport-d49 haloport; do
    for transport in mpi ipc; do
        name=stencil-$transport-$b-$round
        step $name 150 mpirun -np 2 "${mps[@]}" $bin/$b stencil --backend cuda \
            --transport $transport --grid 1024x512x512 --procs 2x1x1 --periodic xyz --steps 20 \
            --exchange-reps 20
        show $name
    done
done; done
echo quit | nvidia-cuda-mps-control
date -u
