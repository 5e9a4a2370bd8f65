#!/usr/bin/env bash
# The committed build (951f672: run.sh's build with the device abort word and the side stream
# boxed, and close() waiting for the abort copy's stream) on one GPU: CUDA conformance, the CLI's
# GPU tests, a dropped message, and the sweep of ipc-tq and lib-*-ipc with 2 ranks under MPS.
# usage, from the repository root: bash run-check.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/chk-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
step conformance 200 $bin/cuda-conformance --test-threads=1
grep "test result" "$out/conformance.txt"
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1
grep "test result" "$out/gpu-cli.txt"
step drop-send 120 mpirun -np 2 $bin/haloport stencil --backend cuda --transport ipc \
    --grid 64x32x32 --procs 2x1x1 --periodic x --steps 3 --timeout 2 --inject drop-send=+x
grep -iE "timed out" "$out/drop-send.txt" | head -2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
step sweep 200 mpirun -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
    -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU $bin/haloport sweep --backend cuda \
    --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
    --runs 20 --out "$out/sweep"
grep -E "ipc" "$out/sweep.txt"
echo quit | nvidia-cuda-mps-control
date -u
