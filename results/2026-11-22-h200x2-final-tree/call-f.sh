#!/usr/bin/env bash
# One call on 2 x H200 with the session's last build: CUDA conformance (the region checks now
# launch through RegionLaunch), the GPU CLI tests, pack-bench with the table in the parameters
# and in memory, the stencil on both transports.
set -uo pipefail
out=${1:?usage: call-f.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=carry/haloport
hp=carry/haloport
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
step timeout 150 carry/cuda-conformance --test-threads=1
step timeout 150 carry/gpu-cuda-cli --test-threads=1
for flag in "" --table-in-memory; do
    step timeout 60 $hp pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 \
        --reps 50 --runs 11 $flag --json "$w/pack-bench-f64${flag:+-memory}.json"
done
for t in mpi ipc; do
    step timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport $t --variant base \
        --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$w/stencil-512-per-gpu-$t-base.json"
done
} > "$out/f.log" 2>&1
tar czf "$out/f.tar.gz" -C "$w" .
grep -E "test result|FAILED|verified|exit code|6 faces, (un)?pack kernel \(one launch\)|step median|exchange of all" "$out/f.log"
