#!/usr/bin/env bash
# The baseline measurement of issue 3 on a two-GPU machine: all 8 baseline variants on thesis-9
# and thesis-27, pairwise, 13 iterations (3 warm-up) x RUNS runs, one GPU per rank, then one
# variant under compute-sanitizer memcheck. Writes one JSON per run and a summary table to OUT.
# usage: ci/gpu-baseline.sh DIR OUT [RUNS]
set -uo pipefail
dir=$(cd "${1:?usage: ci/gpu-baseline.sh DIR OUT [RUNS]}" && pwd)
out=${2:?usage}
runs=${3:-10}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
for workload in thesis-9 thesis-27; do
    for variant in base-nb-wait base-nb-test base-bl-wait base-bl-test \
                   base-nb-wait-nc base-nb-test-nc base-bl-wait-nc base-bl-test-nc; do
        echo "=== $variant $workload"
        mpirun -np 2 "$dir/haloport" run --backend cuda --variant "$variant" --workload "$workload" \
            --pattern pairwise --iters 13 --warmup 3 --runs "$runs" \
            --json "$out/$workload-$variant.json" || status=1
    done
done
echo "=== compute-sanitizer memcheck, base-nb-test thesis-9"
mpirun -np 2 compute-sanitizer --tool memcheck --print-limit 20 "$dir/haloport" run --backend cuda \
    --variant base-nb-test --workload thesis-9 --runs 2 --timeout 60 || status=1
exit $status
