#!/usr/bin/env bash
# The library's exchange in one launch where every message is device-direct (HP_REGIONS_FUSED:
# each grid block packs its pack block, then unpacks its unpack block), on one GPU, against the
# build before (haloport-old, 5731ff3: pack, and the unpack beside it, two launches): CUDA
# conformance and the CLI's GPU tests; compute-sanitizer memcheck and racecheck of lib-tq-ipc
# (the blocking one launch) and of the stencil's plain mode (the one launch beside the inner
# update), 2 ranks sharing the GPU; a dropped message; under MPS the sweep of ipc-tq,
# lib-base-ipc and lib-tq-ipc with 2 ranks, two rounds, builds interleaved; the stencil
# 2x1x1 over ipc; the scaling report of 1, 2, 4 and 8 ranks sharing the GPU. Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200-one-launch/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-old, cuda-conformance, gpu-cuda-cli
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/one-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|exposed|verified|SUMMARY|test result|FAILED|panicked" "$out/$1.txt" | head -12; }
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do
    step sanitize-lib-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
        --tool $tool --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
        --variant lib-tq-ipc --workload thesis-9 --pattern mixed --runs 2 --iters 3 --warmup 1 \
        --verify full
    show sanitize-lib-$tool
    step sanitize-stencil-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
        --tool $tool --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc \
        --grid 128x64x64 --procs 2x1x1 --periodic x --fields 2 --steps 6 --exchange-reps 2
    show sanitize-stencil-$tool
done
step drop-send 120 mpirun -np 2 $bin/haloport stencil --backend cuda --transport ipc \
    --grid 64x32x32 --procs 2x1x1 --periodic x --steps 3 --timeout 2 --inject drop-send=+x
grep -iE "timed out" "$out/drop-send.txt" | head -2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do for b in haloport-old haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
    rm -rf "$out/sweep-$b-$round/cells"
done; done
for b in haloport-old haloport; do
    step stencil2-$b 150 mpirun -np 2 "${mps[@]}" $bin/$b stencil --backend cuda \
        --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
        --exchange-reps 20
    show stencil2-$b
done
step scaling 200 mpirun -np 8 --oversubscribe "${mps[@]}" $bin/haloport stencil \
    --backend cuda --transport ipc --grid 128x128x128 --steps 6 --scaling strong \
    --plot "$out/scaling.svg" --json "$out/scaling.json"
tail -8 "$out/scaling.txt"
echo quit | nvidia-cuda-mps-control
date -u
