#!/usr/bin/env bash
# The full sweep on a two-GPU machine, in one MPI job: every variant (baseline, taskqueue,
# device-direct, library) and the mpi-only floor on every named workload, one rank per GPU,
# RUNS runs interleaved (OUT/sweep.json, sweep.csv). Builds nothing; run `haloport report OUT`
# afterwards (anywhere: it needs no GPU). usage: bench/gpu-sweep.sh DIR OUT [RUNS]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-sweep.sh DIR OUT [RUNS]}" && pwd)
out=${2:?usage}
runs=${3:-40}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 2 "$dir/haloport" sweep --backend cuda --variants all \
    --workloads small,thesis-4,thesis-9,thesis-27,large --runs "$runs" --quiet --out "$out"
