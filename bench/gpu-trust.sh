#!/usr/bin/env bash
# Verification and faults on a two-GPU machine, in one go: the GPU test suite (gpu-test.sh), a
# short interleaved sweep with the default (sample) verification and one with --verify full,
# the short-send, corrupt-recv and drop-send faults on every strategy kind, and
# compute-sanitizer memcheck and racecheck on the baseline (base-nb-test) and on the zero-copy
# and the memcpy taskqueue (tq-nb-pb, tqm-nb-pb). Builds nothing: DIR is what
# ci/build-gpu-carry.sh made.
# usage: bench/gpu-trust.sh DIR OUT
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-trust.sh DIR OUT}" && pwd)
out=${2:?usage: bench/gpu-trust.sh DIR OUT}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp="$dir/haloport"
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }

bash "$(dirname "$0")/gpu-test.sh" "$dir" "$out" > "$out/gpu-test.log" 2>&1
echo "gpu-test.sh exit code: $?"; tail -n 3 "$out/gpu-test.log"

step mpirun -np 2 "$hp" sweep --backend cuda --variants all \
    --workloads small,thesis-9,thesis-27 --runs 5 --quiet --out "$out/sweep-sample"
step mpirun -np 2 "$hp" sweep --backend cuda --variants all \
    --workloads small,thesis-9,thesis-27 --runs 3 --verify full --quiet --out "$out/sweep-full"

for variant in base-nb-wait base-bl-test-nc tq-nb-pb tq-bl-tq tqm-nb-tq tqm-bl-pb mpi-only; do
    step mpirun -np 2 "$hp" run --backend cuda --variant "$variant" --workload thesis-9 \
        --runs 1 --iters 3 --warmup 1 --inject short-send=3
done
step mpirun -np 2 "$hp" run --backend cuda --variant tq-nb-pb --workload thesis-9 --runs 1 \
    --iters 3 --warmup 1 --inject corrupt-recv=5 --verify full
for variant in base-nb-wait tq-nb-pb tqm-bl-tq; do
    step mpirun -np 2 "$hp" run --backend cuda --variant "$variant" --workload thesis-9 \
        --runs 1 --inject drop-send=3 --timeout 2
done
for tool in memcheck racecheck; do
    for variant in tq-nb-pb tqm-nb-pb; do
        step mpirun -np 2 compute-sanitizer --tool "$tool" "$hp" run --backend cuda \
            --variant "$variant" --workload thesis-4 --runs 1 --iters 3 --warmup 1 --verify full
    done
    step mpirun -np 2 compute-sanitizer --tool "$tool" "$hp" run --backend cuda \
        --variant base-nb-test --workload thesis-4 --runs 1 --iters 3 --warmup 1
done
