#!/usr/bin/env bash
# Call 1: launchprobe.cu on one H200: what a kernel parameter's size (80 B to 4 KB) and an event
# record after the launch cost, from the host's launch call to the kernel's first store seen by
# the host, alone without MPS, alone under MPS, and two processes at once under MPS (as the
# sweep's two ranks share the GPU).
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call1.sh
#   Output: $OUT/call1-log.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
exec > >(tee "$OUT/call1-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
nvcc -O2 -arch=sm_90 -o /tmp/launchprobe "$here/launchprobe.cu" || exit 1
echo "=== alone, no MPS"; timeout 60 /tmp/launchprobe
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
echo "=== alone, MPS"; timeout 60 /tmp/launchprobe
echo "=== two at once, MPS"
timeout 90 /tmp/launchprobe > /tmp/probe-a.txt 2>&1 & a=$!
timeout 90 /tmp/launchprobe > /tmp/probe-b.txt 2>&1 & b=$!
wait $a; echo "a rc $?"; wait $b; echo "b rc $?"
echo "--- a"; cat /tmp/probe-a.txt; echo "--- b"; cat /tmp/probe-b.txt
echo quit | nvidia-cuda-mps-control
date -u
