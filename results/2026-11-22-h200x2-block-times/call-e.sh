#!/usr/bin/env bash
# The block-times part of call-b.sh again, by periodicity (call-b, -c and -d dumps missed blocks:
# the dump stopped at the first block without a message; now it skips it and notes each block's
# message). One call on 2 x H200, with block-times.patch applied (a diagnostic, not kept): every block of
# a signalled message writes globaltimer stamps (start, after its wait, after its moves, after
# its fence and count) and its SM, for the last pack and unpack of a stencil run. Where do the
# ~3 us per signalling block go?
set -uo pipefail
out=${1:?usage: call-e.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
hp=carry/haloport
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
for a in "xyz 16" "xyz 64" "none 16" "none 64" "x 16"; do
    set -- $a
    export HP_BLOCK_TIMES="$w/bt-p$1-b$2"
    step timeout 100 mpirun -np 2 -x HP_BLOCK_TIMES $hp stencil --backend cuda --transport ipc \
        --periodic $1 --signalled-blocks $2 --grid 1024x512x512 --procs 2x1x1 \
        --halo 1 --type f64 --steps 4 --exchange-reps 20
done
} > "$out/e.log" 2>&1
tar czf "$out/e.tar.gz" -C "$w" .
grep -E "verified|exit code|step median" "$out/e.log" | head -60
