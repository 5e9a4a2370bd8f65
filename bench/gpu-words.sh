#!/usr/bin/env bash
# The region kernels' 1- and 2-byte words and the stencil's components on one GPU: the CUDA
# conformance suite (regions in words of 8, 4, 2 and 1 bytes; stencils of 1 to 3 components),
# pack-bench 512^3 f64 before (BEFORE_BIN) and after, interleaved, the 1-rank stencil before and
# after, and the stencil over f32 and f64 fields of 3 components on 1 rank and 2 ranks sharing
# the GPU under MPS. BEFORE_BIN: another build of haloport to compare with (optional).
# Outputs into OUT/words.tgz.
# usage: bench/gpu-words.sh DIR OUT [BEFORE_BIN]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-words.sh DIR OUT [BEFORE_BIN]}" && pwd)
out=${2:?OUT}
before=${3:-}
work=$(mktemp -d)
export HALOPORT_REQUIRE_GPU=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
log() { local name=$1; shift; echo "=== $* (> $name)"; "$@" > "$work/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; grep -E "test result|^  6 faces, (pack|unpack) kernel \(one launch\)|step median|verified" "$work/$name" | head -n 6; }
nvidia-smi -L
log conformance.txt "$dir/cuda-conformance" --test-threads=1
for round in 1 2; do
    for which in before after; do
        bin="$dir/haloport"; [ "$which" = before ] && bin=$before
        [ -n "$bin" ] || continue
        log "packbench-$which-$round.txt" "$bin" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64
    done
done
log stencil-after.txt "$dir/haloport" stencil --backend cuda --grid 512x512x512 --type f64 --steps 20 --exchange-reps 20
[ -n "$before" ] && log stencil-before.txt "$before" stencil --backend cuda --grid 512x512x512 --type f64 --steps 20 --exchange-reps 20
# Fields of their own types and components, 1 rank and 2 ranks sharing the GPU.
log stencil-types-components-1rank.txt "$dir/haloport" stencil --backend cuda --grid 256x256x256 \
    --steps 10 --types f32,f64 --components 3
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
log stencil-types-components-2ranks.txt mpirun -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
    "$dir/haloport" stencil --backend cuda --grid 256x128x128 --steps 10 --types f32,f64 \
    --components 3 --transport ipc
echo quit | nvidia-cuda-mps-control
tar czf "$out/words.tgz" -C "$work" .
if [ $status -eq 0 ]; then echo "gpu-words: all passed"; else echo "gpu-words: FAILURES above"; fi
exit $status
