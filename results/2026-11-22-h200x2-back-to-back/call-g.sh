#!/usr/bin/env bash
# Issue 10's closing evidence in one job on 2 x H200, back to back measured validly (from the
# previous iteration's end, build after ac8a679): the ipc variants next to the host-staged
# variants that were fastest in the full sweep (../2026-11-22-h200x2-pipelined-transport-axis),
# with the thesis protocol and back to back; drop-send with and without the barrier;
# compute-sanitizer back to back.
set -uo pipefail
out=${1:?usage: call-g.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }
{
step mpirun -np 2 $hp sweep --backend cuda \
    --variants mpi-only,base-nb-wait,base-nb-test,base-nb-test-nc,tq-nb-pb,tq-nb-tq,tqm-nb-tq,ipc-base,ipc-tq \
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$out/w/sweep"
step mpirun -np 2 $hp sweep --backend cuda --variants ipc-base,ipc-tq --no-barrier \
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$out/w/sweep-back-to-back"
rm -rf "$out"/w/sweep*/cells
for v in ipc-base ipc-tq; do
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --runs 1 --inject drop-send=3 --timeout 2
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --runs 1 --no-barrier --inject drop-send=3 --timeout 2
    for tool in memcheck racecheck; do
        step mpirun -np 2 compute-sanitizer --tool $tool $hp run --backend cuda --transport ipc \
            --variant $v --workload thesis-4 --no-barrier --runs 1 --iters 6 --warmup 1
    done
done
} > "$out/g.log" 2>&1
tar czf "$out/g.tar.gz" -C "$out/w" .
grep -E "SUMMARY|verified|timed out|exit code" "$out/g.log" | head -60
