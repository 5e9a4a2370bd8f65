#!/usr/bin/env bash
# The library's device-direct exchange of a strided 2 MB x face (the stencil at 512^3 per GPU on
# 2 x H200): GPU blocks per signalled region (--signalled-blocks) against threads per block
# (--threads). Each line: the stencil's exchange median (50 blocking exchanges) and step median.
set -uo pipefail
out=${1:?usage: call-k.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
{
for cfg in "ipc base 256 16" "ipc base 1024 16" "ipc base 1024 4" "ipc base 512 32" \
           "ipc base 256 64" "ipc base 1024 64" "ipc base 1024 132" \
           "ipc tq 256 16" "ipc tq 1024 16" "ipc tq 1024 64" \
           "mpi tq 256 16" "mpi tq 1024 16" "mpi base 256 16" "mpi base 1024 16"; do
    set -- $cfg
    echo "=== transport $1 variant $2 threads $3 signalled-blocks $4"
    timeout 120 mpirun -np 2 $hp stencil --backend cuda --transport $1 --variant $2 \
        --threads $3 --signalled-blocks $4 --grid 1024x512x512 --procs 2x1x1 --halo 1 \
        --type f64 --steps 10 --exchange-reps 50 --json "$out/w/stencil-$1-$2-$3-$4.json" 2>&1 |
        grep -E "step median|verified|error"
done
} > "$out/k.log" 2>&1
tar czf "$out/k.tar.gz" -C "$out/w" .
cat "$out/k.log"
