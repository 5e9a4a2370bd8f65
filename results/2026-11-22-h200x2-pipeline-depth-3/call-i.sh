#!/usr/bin/env bash
# One call on 2 x H200, three epochs in flight back to back (PIPELINE_DEPTH = 3): the ipc
# variants next to the fastest host-staged ones with the thesis protocol, the ipc variants back
# to back, full verification and short-send back to back, drop-send with and without the
# barrier, compute-sanitizer back to back.
set -uo pipefail
out=${1:?usage: call-i.sh OUT}; mkdir -p "$out/w/issue10"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }
o="$out/w/issue10"
{
step mpirun -np 2 $hp sweep --backend cuda \
    --variants mpi-only,base-nb-wait,base-nb-test,base-nb-test-nc,tq-nb-pb,tq-nb-tq,tqm-nb-tq,ipc-base,ipc-tq \
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$o/sweep"
step mpirun -np 2 $hp sweep --backend cuda --variants ipc-base,ipc-tq --no-barrier \
    --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$o/sweep-back-to-back"
rm -rf "$o"/sweep*/cells
for v in ipc-base ipc-tq; do
    for pacing in "" --no-barrier; do
        step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
            --runs 1 $pacing --inject drop-send=3 --timeout 2
    done
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --runs 3 --no-barrier --verify full
    step mpirun -np 2 $hp run --backend cuda --transport ipc --variant $v --workload thesis-9 \
        --runs 1 --iters 5 --warmup 1 --no-barrier --inject short-send=3
    for tool in memcheck racecheck; do
        step mpirun -np 2 compute-sanitizer --tool $tool $hp run --backend cuda --transport ipc \
            --variant $v --workload thesis-4 --no-barrier --runs 1 --iters 6 --warmup 1
    done
done
} > "$out/i.log" 2>&1
tar czf "$out/i.tar.gz" -C "$out/w" .
grep -E "SUMMARY|verified|timed out|exit code" "$out/i.log" | head -40
