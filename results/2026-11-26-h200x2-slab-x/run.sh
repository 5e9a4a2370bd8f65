#!/usr/bin/env bash
# The shell's x slabs in a kernel of their own (hp_stencil27_slab_x: a lane per row, the rows
# beside from the neighbouring lanes) on a machine of two H200s. GPU 0: the CUDA conformance
# suite, the HIP backend's suite through the HIP-on-CUDA layer, the stencil's GPU tests;
# compute-sanitizer memcheck and racecheck of the graph mode with 2 ranks sharing the GPU; then
# under MPS haloport stencil 512^3 f64 and f32, plain and --graph, 1 rank, this build (haloport)
# and the one before (haloport-prev, a838927) interleaved. Both GPUs: weak scaling 512^3 f64 per
# GPU, plain and --graph. Every stencil run verified.
# usage, from the repository root: bash results/2026-11-26-h200x2-slab-x/run.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd); w=$out/w
bin=/tmp/slab-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
grep -E "stencil27|test result" "$w/conformance.txt"
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
echo quit | nvidia-cuda-mps-control; sleep 1
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    step two-weak-$mode 300 mpirun --bind-to none -np 2 $bin/haloport stencil --backend cuda \
        --transport ipc --scaling weak --grid 512x512x512 --steps 20 --exchange-reps 20 \
        "${extra[@]}" --json "$w/two-weak-$mode.json" --plot "$w/two-weak-$mode.svg"
    tail -4 "$w/two-weak-$mode.txt"
done
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
