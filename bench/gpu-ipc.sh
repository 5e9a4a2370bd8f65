#!/usr/bin/env bash
# The device-direct transport on a two-GPU machine, in one go: the GPU
# test suite, a sweep of every variant (host-staged and ipc) on small, thesis-9, thesis-27 and
# large with the thesis protocol, the ipc variants back to back (pipelined), two ranks sharing one
# GPU, the drop-send and short-send faults, and compute-sanitizer on the ipc kernels, with the
# barrier and back to back.
# Builds nothing: DIR is what ci/build-gpu-carry.sh made. usage: bench/gpu-ipc.sh DIR OUT [RUNS]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-ipc.sh DIR OUT [RUNS]}" && pwd)
out=${2:?usage: bench/gpu-ipc.sh DIR OUT [RUNS]}
runs=${3:-10}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp="$dir/haloport"
step() { echo; echo "=== $*"; "$@"; echo "exit code: $?"; }

nvidia-smi topo -m
bash "$(dirname "$0")/gpu-test.sh" "$dir" "$out" > "$out/gpu-test.log" 2>&1
echo "gpu-test.sh exit code: $?"; grep -E "test result|FAILED|gpu-test:" "$out/gpu-test.log"

step mpirun -np 2 "$hp" sweep --backend cuda --variants all \
    --workloads small,thesis-9,thesis-27,large --runs "$runs" --quiet --out "$out/sweep"
step mpirun -np 2 "$hp" sweep --backend cuda --variants ipc-base,ipc-tq --no-barrier \
    --workloads small,thesis-9,thesis-27,large --runs "$runs" --quiet --out "$out/sweep-back-to-back"
for v in ipc-base ipc-tq; do
    step mpirun -np 2 "$hp" run --backend cuda --transport ipc --variant "$v" --workload thesis-9 \
        --runs 3 --verify full --json "$out/$v-thesis-9-full.json"
    step mpirun -np 2 -x CUDA_VISIBLE_DEVICES=0 "$hp" run --backend cuda --transport ipc \
        --variant "$v" --workload thesis-9 --runs 2
    step mpirun -np 2 "$hp" run --backend cuda --transport ipc --variant "$v" --workload thesis-9 \
        --runs 1 --inject drop-send=3 --timeout 2
    step mpirun -np 2 "$hp" run --backend cuda --transport ipc --variant "$v" --workload thesis-9 \
        --runs 1 --iters 3 --warmup 1 --inject short-send=3
    step mpirun -np 2 "$hp" run --backend cuda --transport ipc --variant "$v" --workload thesis-9 \
        --runs 1 --no-barrier --inject drop-send=3 --timeout 2
    # With the barrier, and back to back (two streams, consecutive epochs overlapping).
    for pacing in --barrier --no-barrier; do
        extra=(); [ "$pacing" = --no-barrier ] && extra=(--no-barrier)
        for tool in memcheck racecheck; do
            step mpirun -np 2 compute-sanitizer --tool "$tool" "$hp" run --backend cuda \
                --transport ipc --variant "$v" --workload thesis-4 --runs 1 --iters 6 --warmup 1 \
                "${extra[@]}"
        done
    done
done
# The per-run files are kept in sweep.json; leave only the assembled results.
rm -rf "$out"/sweep*/cells
