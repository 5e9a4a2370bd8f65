#!/usr/bin/env bash
# Pipelined back to back with a flag per epoch parity and two streams (consecutive epochs'
# kernels overlap), on 2 x H200: GPU tests, both ipc variants back to back and with the thesis
# protocol on four workloads, faults back to back, compute-sanitizer back to back.
set -uo pipefail
out=${1:?usage: call-e.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1 HALOPORT_BIN=$PWD/carry/haloport
hp=carry/haloport
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }
{
step carry/cuda-conformance --test-threads=1
step carry/gpu-cuda-cli --test-threads=1
for pacing in no-barrier barrier; do
    extra=(); [ $pacing = no-barrier ] && extra=(--no-barrier)
    step mpirun -np 2 $hp sweep --backend cuda --variants ipc-base,ipc-tq "${extra[@]}" \
        --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$out/w/sweep-$pacing"
    rm -rf "$out/w/sweep-$pacing/cells"
done
for v in ipc-base ipc-tq; do
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --no-barrier --runs 3 --verify full
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --no-barrier --runs 1 --inject drop-send=3 --timeout 2
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --no-barrier --runs 1 --iters 3 --warmup 1 --inject short-send=3
    for tool in memcheck racecheck; do
        step mpirun -np 2 compute-sanitizer --tool $tool $hp run --backend cuda --transport ipc \
            --variant $v --workload thesis-4 --no-barrier --runs 1 --iters 6 --warmup 1
    done
done
} > "$out/e.log" 2>&1
tar czf "$out/e.tar.gz" -C "$out/w" .
grep -E "test result|SUMMARY|verified|timed out|exit code" "$out/e.log" | head -60
