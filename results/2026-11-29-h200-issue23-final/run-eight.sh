#!/usr/bin/env bash
# Call 3: issue 26's job (ci/gpu-eight.sh) with 8 ranks sharing one H200 under MPS, for
# correctness (ranks sharing a GPU are not scaling): 128^3 a rank weak, 256^3 strong, 10 steps.
# The build of calls 1-2 (9bd6c74). Output in OUT/eight.tgz and OUT/eight-log.txt.
# usage, from the repository root: bash results/2026-11-29-h200-issue23-final/run-eight.sh BINDIR OUT
export RANKS=8 STEPS=10 PART=128x128x128 STRONG=256x256x256
bash ci/gpu-eight.sh "$1" "$2/eight" > "$2/eight-log.txt" 2>&1; rc=$?
echo "gpu-eight exit $rc" >> "$2/eight-log.txt"
tar czf "$2/eight.tgz" -C "$2" eight && rm -rf "$2/eight"
exit $rc
