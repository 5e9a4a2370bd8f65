#!/usr/bin/env bash
# The library's device-direct exchange of a strided 2 MB x face (stencil, 512^3 per GPU, 2 x
# H200): how the GPU blocks of a signalled message poll their flag (acquire on every poll, or
# relaxed polls then one acquire; a pause between polls or none), against the blocks per
# message. Every run verified bit for bit.
set -uo pipefail
out=${1:?usage: call-m.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
{
for cfg in "256 16 0 -" "256 16 0 --poll-relaxed" "256 16 200 -" "256 16 200 --poll-relaxed" \
           "256 64 0 -" "256 64 0 --poll-relaxed" "256 64 200 -" "256 64 200 --poll-relaxed" \
           "256 256 200 --poll-relaxed" "1024 16 200 --poll-relaxed"; do
    set -- $cfg
    relaxed=(); [ "$4" != - ] && relaxed=("$4")
    echo "=== ipc base threads $1 signalled-blocks $2 poll-backoff $3 $4"
    timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport ipc --threads $1 \
        --signalled-blocks $2 --poll-backoff $3 "${relaxed[@]}" --grid 1024x512x512 --procs 2x1x1 \
        --halo 1 --type f64 --steps 5 --exchange-reps 50 --json "$out/w/stencil-$1-$2-$3$4.json" 2>&1 |
        grep -E "step median|verified|error"
done
} > "$out/m.log" 2>&1
tar czf "$out/m.tar.gz" -C "$out/w" .
cat "$out/m.log"
