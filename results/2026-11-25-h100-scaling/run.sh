#!/usr/bin/env bash
# haloport stencil --scaling strong and weak on 8 ranks sharing one GPU under MPS (correctness
# of the scaling mode on a GPU; ranks sharing one GPU are not a scaling figure).
# usage: results/2026-11-25-h100-scaling/run.sh DIR OUT   (DIR holds the release haloport, cuda)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export PATH=$PATH:/usr/local/nvidia/bin
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY "$2"
nvidia-cuda-mps-control -d
mps="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
for mode in strong weak; do
    g=256x256x256; [ $mode = weak ] && g=128x128x128
    # shellcheck disable=SC2086
    mpirun --oversubscribe -np 8 $mps "$1/haloport" stencil --backend cuda --grid $g --steps 10 \
        --exchange-reps 10 --transport ipc --scaling $mode --json "$2/scaling-$mode.json" \
        --plot "$2/scaling-$mode.svg" > "$2/scaling-$mode.txt" 2>&1
    echo "$mode rc=$?"
done
echo quit | nvidia-cuda-mps-control
