#!/usr/bin/env bash
# The shell's widths and priority (haloport stencil --shell X,Y,Z [--shell-urgent]) on GPU 0,
# under MPS, 1 rank, 512^3 f64 and f32, plain and --graph, every run verified bit for bit
# against one rank. The configurations interleaved within each type and mode.
# usage, from the repository root: bash results/2026-11-26-h200-thick-shell/run.sh BIN OUT
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
configs=${CONFIGS:-"1,1,1 1,1,1u 32,32,16 32,32,16u 64,32,16u 32,32,8u"}
for type in f64 f32; do for mode in plain graph; do for c in $configs; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    widths=${c%u}; [ "$widths" != "$c" ] && extra+=(--shell-urgent)
    name=$type-$mode-${c//,/x}
    echo "=== $name"
    timeout 100 mpirun -np 1 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        -x CUDA_VISIBLE_DEVICES "$bin" stencil --backend cuda --grid 512x512x512 \
        --type $type --steps 20 --exchange-reps 20 --shell "$widths" "${extra[@]}" \
        --json "$out/$name.json" > "$out/$name.txt" 2>&1
    echo "rc $?"; grep -E "step median|compute alone|verified" "$out/$name.txt"
done; done; done
echo quit | nvidia-cuda-mps-control
date -u
