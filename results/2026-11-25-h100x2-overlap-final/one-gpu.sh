#!/usr/bin/env bash
# The final build of the overlapped step on GPU 0 of a machine: the CUDA conformance suite, the
# HIP backend's suite through the HIP-on-CUDA layer, the stencil's GPU tests (graph mode among
# them); then under MPS haloport stencil 512^3 f64 and f32, plain and --graph, 1 rank, this
# build and the one before interleaved; the sweep
# of ipc-tq against lib-base-ipc and lib-tq-ipc with 2 ranks sharing the GPU; and the scaling
# report of 1, 2, 4 and 8 ranks sharing it (correctness only). Every stencil run verified.
# usage, from the repository root: bash results/2026-11-25-h100x2-overlap-final/one-gpu.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli, haloport-hipnv,
#   hip-nvidia-conformance, libhaloport_hipnv.so (ci/build-gpu-carry.sh's names), and
#   haloport-prev (the build before the streaming stores, for the A/B of the stencil).
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd); w=$out/w
bin=/tmp/final-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=$bin/haloport LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$w/$name.txt" 2>&1; echo "rc $?"
}
step conformance 240 $bin/cuda-conformance --test-threads=1
grep -E "urgent|stencil27|test result" "$w/conformance.txt"
step hip-conformance 240 $bin/hip-nvidia-conformance --test-threads=1 --skip bindings
grep -E "urgent|test result" "$w/hip-conformance.txt"
step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1 stencil
grep -E "^test |test result" "$w/gpu-cli.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
# This build and haloport-prev (the same step with plain stores in the march form), interleaved.
for round in 1; do for type in f64 f32; do for mode in plain graph; do for b in haloport haloport-prev; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-$b-$type-$mode-$round
    step $name 120 mpirun -np 1 "${mps[@]}" $bin/$b stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$w/$name.json"
    grep -E "step median|compute alone|verified" "$w/$name.txt"
done; done; done; done
step sweep 300 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
    --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
    --runs 10 --quiet --out "$w/sweep"
tail -20 "$w/sweep.txt"
for mode in strong weak; do
    g=256x256x256; [ $mode = weak ] && g=128x128x128
    step scaling-$mode 240 mpirun --oversubscribe -np 8 "${mps[@]}" $bin/haloport stencil \
        --backend cuda --grid $g --steps 10 --exchange-reps 10 --transport ipc --graph \
        --scaling $mode --json "$w/scaling-$mode.json" --plot "$w/scaling-$mode.svg"
    tail -8 "$w/scaling-$mode.txt"
done
echo quit | nvidia-cuda-mps-control
date -u
rm -rf "$w"/sweep/cells
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
