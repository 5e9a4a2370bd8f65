#!/bin/bash
# One call on nvidia-h200: launch_bench2 alone, then two at once under MPS (as the sweep's two
# ranks share the GPU), twice. Writes $OUT/bench.csv.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
nvcc -O2 -arch=sm_90 -o /tmp/launch_bench2 launch_bench2.cu || exit 1
HEADER=1 /tmp/launch_bench2 alone > "$OUT/bench.csv"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for round in 1 2; do
    /tmp/launch_bench2 mps-a$round > /tmp/a.csv & a=$!
    /tmp/launch_bench2 mps-b$round > /tmp/b.csv & b=$!
    wait $a $b
    cat /tmp/a.csv /tmp/b.csv >> "$OUT/bench.csv"
done
echo quit | nvidia-cuda-mps-control
cat "$OUT/bench.csv"
