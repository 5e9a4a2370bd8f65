#!/usr/bin/env bash
# One call on 2 x H200: an L2 prefetch of the destination sectors before a strided unpack's
# stores (carry/haloport) against the build without it (carry/haloport-plain, 5ec31c8),
# interleaved in pack-bench, f64 and f32; CUDA conformance and the stencil with the prefetch.
set -uo pipefail
out=${1:?usage: call-q.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=carry/haloport
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
step timeout 150 carry/cuda-conformance --test-threads=1
for round in 1 2 3; do
    for b in haloport haloport-plain; do
        for t in f64 f32; do
            step timeout 60 carry/$b pack-bench --backend cuda --local 512x512x512 --halo 1 \
                --reps 50 --runs 11 --type $t --json "$w/pack-bench-$t-$b-$round.json"
        done
    done
done
step timeout 100 mpirun -np 2 carry/haloport stencil --backend cuda --transport mpi \
    --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
    --json "$w/stencil-512-per-gpu-mpi-base.json"
} > "$out/q.log" 2>&1
tar czf "$out/q.tar.gz" -C "$w" .
grep -E "test result|FAILED|verified: false|exit code: [^0]|step median" "$out/q.log" | head -40
