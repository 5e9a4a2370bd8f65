#!/usr/bin/env bash
# Issue 11's evidence on 2 x H200: pack throughput, the stencil at 512^3 per GPU on both
# transports and strategies, adopted fields, drop-send.
set -uo pipefail
out=${1:?usage: call-b.sh OUT}; mkdir -p "$out/w"
t0=$SECONDS
bash carry/gpu-library.sh carry "$out/w" quick > "$out/library.log" 2>&1
echo "gpu-library.sh exit code: $? after $((SECONDS - t0)) s" >> "$out/library.log"
tar czf "$out/library-results.tar.gz" -C "$out/w" .
tail -3 "$out/library.log"
