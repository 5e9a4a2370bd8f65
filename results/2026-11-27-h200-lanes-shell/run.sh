#!/usr/bin/env bash
# Issue 23: the f32 lanes' box taking its shell's x and y slabs (hp_stencil27_march32_shell), on
# one GPU. CUDA conformance (the shell case in f64 and in two f32 lanes geometries) and the CLI's
# GPU tests; the HIP backend's stencil cases through the HIP-on-CUDA layer; compute-sanitizer
# memcheck and racecheck of the f32 stencil with rows of a multiple of 4, plain and --graph, 2
# ranks sharing the GPU; under MPS, 512^3, 1 rank, f32 with rows of 516 (the slabs in the tiles,
# and --shell-launches), f32 with rows of 514 and f64, plain and --graph, two rounds
# interleaved; 2 ranks of 1024x512x512 f32 (rows of 516) periodic in x.
# usage, from the repository root: [GPU_CLI=1] [TYPES=...] bash
#   results/2026-11-27-h200-lanes-shell/run.sh BINDIR OUT
#   call 1 ran with GPU_CLI=1 (the CLI's GPU tests) and every type; call 2 (the tile order)
#   with TYPES="f32-pad f32-pad-launches f64".
#   BINDIR holds bins.tar.xz (haloport, cuda-conformance, gpu-cuda-cli, hip-nvidia-conformance,
#   libhaloport_hipnv.so). Everything is written under OUT/job and packed into OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/lane-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
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
    grep -E "step median|compute alone|inner box|shell:|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
[ -n "${GPU_CLI:-}" ] && { HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli; }
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    stencil; show hip-conformance
for tool in memcheck racecheck; do
    for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        step sanitize-f32-$mode-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 256x64x64 --procs 2x1x1 --periodic x \
            --type f32 --pad 2,0,0 --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show sanitize-f32-$mode-$tool
    done
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for type in ${TYPES:-f32-pad f32-pad-launches f32 f64}; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        case $type in f32-pad*) extra+=(--pad 2,0,0) ;; esac
        [ $type = f32-pad-launches ] && extra+=(--shell-launches)
        name=stencil-$type-$mode-$round
        step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
            --grid 512x512x512 --type ${type%%-*} --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$out/$name.json"
        show $name
    done; done
done
name=stencil2-f32-pad
step $name 100 mpirun -np 2 "${mps[@]}" $bin/haloport stencil --backend cuda \
    --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --type f32 --pad 2,0,0 \
    --steps 20 --exchange-reps 20 --json "$out/$name.json"
show $name
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
