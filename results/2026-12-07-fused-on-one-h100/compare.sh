#!/usr/bin/env bash
# The fused step beside the ordinary one: placement, periodic x only, slabs in launches of their own. Summary lines to $OUT/log2.txt.
d=$(cd "$(dirname "$0")" && pwd); L=$OUT/log2.txt
export LD_LIBRARY_PATH="$d" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mpsd CUDA_MPS_LOG_DIRECTORY=/tmp/mpsl; mkdir -p /tmp/mpsd /tmp/mpsl
nvidia-cuda-mps-control -d
m=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2 $d/haloport stencil)
big=(--backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64 --steps 60 --exchange-reps 20)
s() { echo "=== $*" >> $L; timeout 25 "$@" 2>&1 | grep -E "step median|compute alone|verified|error" >> $L; }
s "${m[@]}" "${big[@]}" --placement library
s "${m[@]}" "${big[@]}" --fused --periodic x
s "${m[@]}" "${big[@]}" --shell-launches
s "${m[@]}" "${big[@]}" --periodic x
s "${m[@]}" "${big[@]}" --fused
echo quit | nvidia-cuda-mps-control
