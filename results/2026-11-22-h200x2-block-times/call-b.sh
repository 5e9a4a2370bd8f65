#!/usr/bin/env bash
# One call on 2 x H200, with block-times.patch applied (a diagnostic, not kept): every block of
# a signalled message writes globaltimer stamps (start, after its wait, after its moves, after
# its fence and count) and its SM, for the last pack and unpack of a stencil run. Where do the
# ~3 us per signalling block go? Also: 256 against 1024 threads with many neighbours (periodic
# xyz: 26 messages per rank, the x ones device-direct).
set -uo pipefail
out=${1:?usage: call-b.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
hp=carry/haloport
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
for a in "base 256 16" "base 256 64" "base 1024 16" "tq 256 64" "base 256 4"; do
    set -- $a
    export HP_BLOCK_TIMES="$w/bt-$1-t$2-b$3"
    step timeout 100 mpirun -np 2 -x HP_BLOCK_TIMES $hp stencil --backend cuda --transport ipc \
        --variant $1 --threads $2 --signalled-blocks $3 --grid 1024x512x512 --procs 2x1x1 \
        --halo 1 --type f64 --steps 4 --exchange-reps 20
done
unset HP_BLOCK_TIMES
for t in 256 1024; do
    for tr in ipc mpi; do
        step timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport $tr --threads $t \
            --grid 512x512x512 --procs 2x1x1 --periodic xyz --halo 1 --type f64 --steps 10 \
            --exchange-reps 30 --json "$w/stencil-periodic-xyz-$tr-t$t.json"
    done
done
} > "$out/b.log" 2>&1
tar czf "$out/b.tar.gz" -C "$w" .
grep -E "verified|exit code|step median" "$out/b.log" | head -60
