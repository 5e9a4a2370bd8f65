#!/usr/bin/env bash
# The library's device-direct exchange of a strided 2 MB x face (stencil, 512^3 per GPU, 2 x
# H200): the fence each block of a signalled message makes before counting itself, at system
# scope (today) or at GPU scope (the message's last block still fences at system scope before
# the flag), against the GPU blocks per message. Every stencil run is verified bit for bit;
# compute-sanitizer on a small grid with the GPU-scope fence.
set -uo pipefail
out=${1:?usage: call-l.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
{
for cfg in "base 256 16 sys" "base 256 16 gpu" "base 1024 16 sys" "base 1024 16 gpu" \
           "base 256 64 sys" "base 256 64 gpu" "base 256 256 gpu" "tq 1024 16 gpu" "tq 256 64 gpu"; do
    set -- $cfg
    echo "=== ipc variant $1 threads $2 signalled-blocks $3 count-fence $4"
    timeout 120 mpirun -np 2 $hp stencil --backend cuda --transport ipc --variant $1 \
        --threads $2 --signalled-blocks $3 --count-fence $4 --grid 1024x512x512 --procs 2x1x1 \
        --halo 1 --type f64 --steps 10 --exchange-reps 50 --json "$out/w/stencil-$1-$2-$3-$4.json" 2>&1 |
        grep -E "step median|verified|error"
done
for tool in memcheck racecheck; do
    echo "=== compute-sanitizer $tool, count-fence gpu, 64 blocks"
    timeout 200 mpirun -np 2 compute-sanitizer --tool $tool $hp stencil --backend cuda --transport ipc \
        --signalled-blocks 64 --count-fence gpu --grid 128x64x64 --procs 2x1x1 --periodic xyz \
        --steps 3 --exchange-reps 2 2>&1 | grep -E "SUMMARY|verified|error"
done
} > "$out/l.log" 2>&1
tar czf "$out/l.tar.gz" -C "$out/w" .
cat "$out/l.log"
