#!/usr/bin/env bash
# The march-only kernel with 4 rows x 1 column x 32 planes in f64 (and 16 planes in f32): the
# CUDA conformance suite, then haloport stencil 512^3 f64 and f32, with and without --graph,
# twice, under MPS (as ci/gpu-graph.sh does), each verified and beside a copy of the fields.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out" /tmp/b && tar xJf "$dir/bins.tar.xz" -C /tmp/b
export PATH="$PATH:/usr/local/nvidia/bin" CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
nvidia-smi -L
/tmp/b/cuda-conformance --test-threads=1 > "$out/conformance.txt" 2>&1; grep -E "stencil|test result" "$out/conformance.txt"
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    echo "=== $type $mode $round"
    timeout 120 /tmp/b/haloport stencil --backend cuda --grid 512x512x512 --type $type --steps 20 \
        --exchange-reps 20 "${extra[@]}" --json "$out/stencil-$type-$mode-$round.json" \
        > "$out/stencil-$type-$mode-$round.txt" 2>&1
    grep -E "step median|compute alone|verified" "$out/stencil-$type-$mode-$round.txt"
done; done; done
echo quit | nvidia-cuda-mps-control
