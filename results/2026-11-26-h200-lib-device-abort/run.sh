#!/usr/bin/env bash
# The library's abort word in device memory, and its unpack beside its pack (haloport-new)
# against the build before (haloport-old), on one GPU, two ranks sharing it under MPS: the
# sweep of ipc-tq and lib-*-ipc, two rounds, builds interleaved; the stencil 512x256x256 f64 on
# 2 ranks (2x1x1, periodic x: every message device-direct), plain and --graph; the CLI's GPU
# tests of the library variants; a dropped message; memcheck and racecheck of lib-tq-ipc and
# of the stencil. Every run verified.
# usage, from the repository root: bash run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-old, haloport-new, gpu-cuda-cli
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/abort-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|exchange|verified|SUMMARY|test result" "$out/$1.txt" | head -8; }
mpi=(mpirun --bind-to none -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in old new; do
    step sweep-$b-$round 150 "${mpi[@]}" $bin/haloport-$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 12 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt" | head -12
done; done
for b in old new; do for g in plain graph; do
    flag=""; [ $g = graph ] && flag=--graph
    step stencil-$b-$g 120 "${mpi[@]}" $bin/haloport-$b stencil --backend cuda --transport ipc \
        --grid 512x256x256 --procs 2x1x1 --periodic x --type f64 --steps 20 --exchange-reps 20 $flag \
        --json "$out/stencil-$b-$g.json"
    show stencil-$b-$g
done; done
HALOPORT_BIN=$bin/haloport-new step gpu-cli 200 $bin/gpu-cuda-cli --test-threads=1 library
grep -E "^test |test result" "$out/gpu-cli.txt"
step drop-send 120 "${mpi[@]}" $bin/haloport-new stencil --backend cuda --transport ipc \
    --grid 64x32x32 --procs 2x1x1 --periodic x --steps 3 --timeout 2 --inject drop-send=+x
grep -iE "timed out" "$out/drop-send.txt" | head -2
for tool in memcheck racecheck; do
    step sanitize-$tool 200 "${mpi[@]}" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/haloport-new stencil --backend cuda --transport ipc --grid 128x64x64 \
        --procs 2x1x1 --periodic x --fields 2 --steps 6 --exchange-reps 2
    show sanitize-$tool
done
echo quit | nvidia-cuda-mps-control
date -u
