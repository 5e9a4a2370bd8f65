#!/usr/bin/env bash
# Balanced blocks per region on one GPU under MPS: where every message is device-direct, the
# library's regions get grid blocks in proportion to their size (ipc-tq's balanced chunks),
# against the uniform cap of 16 a region (haloport, d54e9b1). haloport-b is the balanced build
# with an experiment's switch (not committed): HALOPORT_EXP_SB sets the library variants' most
# blocks a region (16 unset). The sweep of ipc-tq and lib-*-ipc, 2 ranks, two rounds, the
# builds interleaved: haloport, haloport-b, haloport-b with 8.
# usage, from the repository root: bash results/2026-11-26-h200-balanced/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-b. Everything is written under OUT/job and
#   packed into OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/balanced-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU -x HALOPORT_EXP_SB)
sweep() { # NAME BUILD
    step sweep-$1 200 mpirun -np 2 "${mps[@]}" $bin/$2 sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$1"
    grep -E "ipc|error" "$out/sweep-$1.txt" | head -14
    rm -rf "$out/sweep-$1/cells"; gzip -9 "$out/sweep-$1/sweep.json"
}
for round in 1 2; do
    export HALOPORT_EXP_SB=16
    sweep uniform16-$round haloport
    sweep balanced16-$round haloport-b
    export HALOPORT_EXP_SB=8
    sweep balanced8-$round haloport-b
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
