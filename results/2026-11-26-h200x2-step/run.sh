#!/usr/bin/env bash
# The step with the f64 march tiles in a kernel of their own (hp_stencil27_march64) on a machine
# of two H200s. GPU 0 alone: the CUDA conformance suite, the HIP backend's suite through the
# HIP-on-CUDA layer, the stencil's GPU tests (graph mode among them); compute-sanitizer memcheck
# and racecheck of the graph mode with 2 ranks sharing the GPU (no MPS: the sanitizer does not
# attach under it); then under MPS haloport stencil 512^3 f64 and f32, plain and --graph, 1 rank,
# this build (haloport) and the one before (haloport-prev: f64 tiles 2 x 2 x 32 in
# hp_stencil27_marching) interleaved, and the scaling report of 1, 2, 4 and 8 ranks sharing the
# GPU (correctness only). Both GPUs, one rank each: weak scaling 512^3 f64 per GPU and strong
# 1024x512x512, plain and --graph; and 512x1024x512 over 1x2x1 (the faces between the GPUs are
# y faces, rows contiguous, where 2x1x1 sends x faces, a cell a row). Every stencil run verified.
# usage, from the repository root: bash results/2026-11-26-h200x2-step/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-prev, cuda-conformance, gpu-cuda-cli,
#   haloport-hipnv, hip-nvidia-conformance, libhaloport_hipnv.so.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd); w=$out/w
bin=/tmp/step-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=$bin/haloport LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$w/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified|SUMMARY" "$w/$1.txt"; }
export CUDA_VISIBLE_DEVICES=0
step conformance 240 $bin/cuda-conformance --test-threads=1
grep -E "stencil27|march|test result" "$w/conformance.txt"
step hip-conformance 240 $bin/hip-nvidia-conformance --test-threads=1 --skip bindings
grep -E "stencil27|test result" "$w/hip-conformance.txt"
step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1 stencil
grep -E "^test |test result" "$w/gpu-cli.txt"
for tool in memcheck racecheck; do
    step sanitize-$tool 240 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc --graph \
        --grid 128x64x64 --procs 2x1x1 --fields 2 --steps 6 --exchange-reps 2
    show sanitize-$tool
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
for type in f64 f32; do for mode in plain graph; do for b in haloport haloport-prev; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-$b-$type-$mode
    step $name 120 mpirun -np 1 "${mps[@]}" $bin/$b stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$w/$name.json"
    show $name
done; done; done
for mode in strong weak; do
    g=256x256x256; [ $mode = weak ] && g=128x128x128
    step scaling-$mode 240 mpirun --oversubscribe -np 8 "${mps[@]}" $bin/haloport stencil \
        --backend cuda --grid $g --steps 10 --exchange-reps 10 --transport ipc --graph \
        --scaling $mode --json "$w/scaling-$mode.json" --plot "$w/scaling-$mode.svg"
    tail -8 "$w/scaling-$mode.txt"
done
echo quit | nvidia-cuda-mps-control; sleep 1
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    for s in weak strong; do
        g=512x512x512; [ $s = strong ] && g=1024x512x512
        step two-$s-$mode 300 mpirun --bind-to none -np 2 $bin/haloport stencil --backend cuda \
            --transport ipc --scaling $s --grid $g --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$w/two-$s-$mode.json" --plot "$w/two-$s-$mode.svg"
        tail -4 "$w/two-$s-$mode.txt"
    done
    step two-y-$mode 120 mpirun --bind-to none -np 2 $bin/haloport stencil --backend cuda \
        --transport ipc --grid 512x1024x512 --procs 1x2x1 --steps 20 --exchange-reps 20 \
        "${extra[@]}" --json "$w/two-y-$mode.json"
    show two-y-$mode
done
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
