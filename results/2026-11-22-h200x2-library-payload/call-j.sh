#!/usr/bin/env bash
# One call on 2 x H200 (build fb0c95a or later): the thesis's workloads as a payload of the
# library's halo exchange (lib-{base|tq}-{mpi|ipc}) beside the thesis's own variants, in one
# sweep; CUDA conformance (synthetic and paired regions included); full verification, drop-send
# and compute-sanitizer on the library variants; the stencil and pack-bench after the engine's
# refactor.
set -uo pipefail
out=${1:?usage: call-j.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
hp=carry/haloport
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }
{
step carry/cuda-conformance --test-threads=1
step mpirun -np 2 $hp sweep --backend cuda \
    --variants base-nb-wait,base-nb-test,tq-nb-pb,tq-nb-tq,ipc-base,ipc-tq,lib-base-mpi,lib-tq-mpi,lib-base-ipc,lib-tq-ipc \
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$w/sweep"
rm -rf "$w"/sweep/cells
for v in lib-base-ipc lib-tq-ipc lib-base-mpi lib-tq-mpi; do
    t=${v##*-}
    step mpirun -np 2 $hp run --backend cuda --transport $t --variant $v --workload thesis-9 \
        --runs 2 --verify full
    step mpirun -np 2 $hp run --backend cuda --transport $t --variant $v --workload thesis-9 \
        --runs 1 --inject drop-send=3 --timeout 2
done
for v in lib-tq-ipc lib-base-ipc; do
    for tool in memcheck racecheck; do
        step mpirun -np 2 compute-sanitizer --tool $tool $hp run --backend cuda --transport ipc \
            --variant $v --workload thesis-4 --runs 1 --iters 6 --warmup 1
    done
done
step timeout 120 $hp pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 \
    --elems-per-thread 4 --reps 50 --runs 11 --json "$w/pack-bench-512-f64-ept4.json"
for a in "mpi base" "ipc tq" "ipc base"; do
    set -- $a
    step timeout 240 mpirun -np 2 $hp stencil --backend cuda --transport $1 --variant $2 \
        --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$w/stencil-512-per-gpu-$1-$2.json"
done
step timeout 240 mpirun -np 2 $hp stencil --backend cuda --transport mpi --grid 1024x512x512 \
    --procs 2x1x1 --periodic x --halo 1 --type f64 --steps 30 --exchange-reps 50 \
    --json "$w/stencil-512-per-gpu-mpi-base-periodic-x.json"
} > "$out/j.log" 2>&1
tar czf "$out/j.tar.gz" -C "$w" .
grep -E "test result|FAILED|SUMMARY|verified|timed out|exit code|faces|step median|exchange of all" "$out/j.log" | head -80
