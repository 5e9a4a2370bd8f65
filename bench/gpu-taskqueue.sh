#!/usr/bin/env bash
# The taskqueue measurement of issue 4 on a two-GPU machine, in one MPI job: every baseline and
# taskqueue variant and the mpi-only floor on small, thesis-9, thesis-27 and large, RUNS runs
# interleaved; then compute-sanitizer (memcheck and racecheck) on one zero-copy and one memcpy
# taskqueue variant. Builds nothing. usage: ci/gpu-taskqueue.sh DIR OUT [RUNS]
set -uo pipefail
dir=$(cd "${1:?usage: ci/gpu-taskqueue.sh DIR OUT [RUNS]}" && pwd)
out=${2:?usage}
runs=${3:-10}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
echo "=== sweep: all variants, small,thesis-9,thesis-27,large, $runs runs"
mpirun -np 2 "$dir/haloport" sweep --backend cuda --variants all \
    --workloads small,thesis-9,thesis-27,large --runs "$runs" --quiet --out "$out" || status=1
for tool in memcheck racecheck; do
    for variant in tq-nb-pb tqm-nb-pb; do
        echo "=== compute-sanitizer $tool, $variant thesis-9"
        mpirun -np 2 compute-sanitizer --tool "$tool" --print-limit 20 "$dir/haloport" run \
            --backend cuda --variant "$variant" --workload thesis-9 --runs 1 --iters 4 --warmup 1 \
            --timeout 120 || status=1
    done
done
exit $status
