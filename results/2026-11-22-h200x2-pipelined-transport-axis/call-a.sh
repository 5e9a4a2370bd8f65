#!/usr/bin/env bash
# Issue 10's evidence in one job on 2 x H200: GPU tests, the sweep of every variant with the
# thesis protocol and the ipc variants back to back, faults, two ranks on one GPU, sanitizer.
set -uo pipefail
out=${1:?usage: call-a.sh OUT}; mkdir -p "$out/w"
t0=$SECONDS
bash carry/gpu-ipc.sh carry "$out/w" 10 > "$out/ipc.log" 2>&1
echo "gpu-ipc.sh exit code: $? after $((SECONDS - t0)) s" >> "$out/ipc.log"
cp "$out/w/gpu-test.log" "$out/gpu-test.log"
tar czf "$out/ipc-results.tar.gz" -C "$out/w" .
tail -3 "$out/ipc.log"; grep -E "test result|gpu-test:" "$out/gpu-test.log"
