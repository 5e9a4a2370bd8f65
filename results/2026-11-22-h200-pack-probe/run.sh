#!/usr/bin/env bash
# Builds and runs the pack/unpack probe on the GPU machine; output in $OUT (default /tmp/pack-probe).
# Usage (repository root): bash results/2026-11-22-h200-pack-probe/run.sh
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/pack-probe}
mkdir -p "$OUT"
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then echo "no nvcc found (PATH=$PATH)" | tee "$OUT/pack_variants.txt"; ls /usr/local/cuda*/bin 2>&1 | tee -a "$OUT/pack_variants.txt"; exit 1; fi
{
  echo "== $(date -u +%FT%TZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,ecc.mode.current,temperature.gpu,power.draw --format=csv 2>&1
  echo "nvcc: $NVCC"; "$NVCC" --version | tail -2
} 2>&1 | tee "$OUT/pack_variants.txt"
t0=$(date +%s)
if ! "$NVCC" -O3 -arch=sm_90 -Xptxas -v -o "$OUT/pack_variants" pack_variants.cu > "$OUT/ptxas.txt" 2>&1; then
  echo "BUILD FAILED" | tee -a "$OUT/pack_variants.txt"; grep -v "ptxas info\|bytes stack frame\|Used " "$OUT/ptxas.txt" | tail -40 | tee -a "$OUT/pack_variants.txt"; exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/pack_variants.txt"
"$OUT/pack_variants" 2>&1 | tee -a "$OUT/pack_variants.txt"
rc=${PIPESTATUS[0]}
echo "exit status $rc" | tee -a "$OUT/pack_variants.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 | tee -a "$OUT/pack_variants.txt"
(cuobjdump --dump-sass "$OUT/pack_variants" 2>&1 | gzip -c > "$OUT/sass.txt.gz") || true
rm -f "$OUT/pack_variants"
exit "$rc"
