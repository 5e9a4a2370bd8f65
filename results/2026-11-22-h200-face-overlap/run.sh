#!/usr/bin/env bash
# Builds the probe with the machine's nvcc and runs it; output under $OUT (default /tmp/face-overlap).
# Usage (repository root): bash results/2026-11-22-h200-face-overlap/run.sh
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/face-overlap}
mkdir -p "$OUT"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{
  echo "== $(date -u +%FT%TZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,ecc.mode.current --format=csv
  "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$OUT/probe" probe.cu && timeout 400 "$OUT/probe"
  echo "exit status $?"
} > "$OUT/probe.txt" 2>&1
rm -f "$OUT/probe"
cat "$OUT/probe.txt"
