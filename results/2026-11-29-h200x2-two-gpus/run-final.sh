#!/usr/bin/env bash
# Call 6 (one H200): the final build's report on the GPU: 512^3 f32 on one rank with rows of 514
# (the hint: which padding gives rows of whole sectors) and 520 (placed for the interior), and
# 2 ranks sharing the GPU under MPS (overlapped: placed for the step's tiles).
# usage, from the repository root: bash results/2026-11-29-h200x2-two-gpus/run-final.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/final; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin" HALOPORT_REQUIRE_GPU=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$top/final-log.txt") 2>&1
date -u; nvidia-smi -L
show() { grep -E "stencil |step median|compute alone|hint|verified" "$out/$1.txt"; }
for pad in 0 6; do
    timeout 100 $bin/haloport stencil --backend cuda --grid 512x512x512 --type f32 \
        --pad $pad,0,0 --steps 20 --exchange-reps 20 --json "$out/f32-pad$pad.json" \
        > "$out/f32-pad$pad.txt" 2>&1
    echo "=== f32-pad$pad rc $?"; show f32-pad$pad
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
timeout 100 mpirun -np 2 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x HALOPORT_REQUIRE_GPU \
    $bin/haloport stencil --backend cuda --transport ipc --grid 1024x512x512 --procs 2x1x1 \
    --type f32 --pad 6,0,0 --steps 20 --exchange-reps 20 --json "$out/f32-2ranks.json" \
    > "$out/f32-2ranks.txt" 2>&1
echo "=== f32-2ranks rc $?"; show f32-2ranks
echo quit | nvidia-cuda-mps-control
for f in "$out"/*.json; do
    python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[1].split("/")[-1], "placement", r["placement"], "overlap", r["overlap"],
      "lanes_padding", r.get("lanes_padding"), "padded_multiple", r.get("padded_multiple"),
      "verified", r["verified"])
PY
done
date -u
tar czf "$top/final.tgz" -C "$top" final && rm -rf "$out"
