#!/usr/bin/env bash
# The library on 2 GPUs of one node: CUDA conformance (region, stencil and 3-D copy
# kernels included), the CLI GPU tests, pack throughput on one GPU against the copy engine, and
# the stencil at 512^3 per GPU on both transports. Runs the binaries in DIR (ci/build-gpu-carry.sh).
# usage: bench/gpu-library.sh DIR OUT_DIR [quick]   (quick: benchmarks only)
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-library.sh DIR OUT_DIR}" && pwd)
out=${2:?usage: bench/gpu-library.sh DIR OUT_DIR}
mkdir -p "$out"
export HALOPORT_REQUIRE_GPU=1 HALOPORT_BIN="$dir/haloport"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp="$dir/haloport"
status=0
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@" || { echo "FAILED: $*"; status=1; }; echo "(took $((SECONDS - t0)) s)"; }
step nvidia-smi -L
if [ "${3:-}" != quick ]; then
    step "$dir/cuda-conformance" --test-threads=1 --show-output > "$out/conformance.log" 2>&1
    tail -5 "$out/conformance.log"
    step "$dir/gpu-cuda-cli" --test-threads=1 the_stencil both_ipc > "$out/gpu-cli.log" 2>&1
    tail -5 "$out/gpu-cli.log"
fi
for ept in 4 8; do
    step timeout 120 "$hp" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 \
        --elems-per-thread $ept --reps 50 --runs 11 --json "$out/pack-bench-512-f64-ept$ept.json"
done
step timeout 120 "$hp" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f32 \
    --elems-per-thread 1 --reps 50 --runs 11 --json "$out/pack-bench-512-f32-ept1.json"
for tr in mpi ipc; do
    step timeout 240 mpirun -np 2 "$hp" stencil --backend cuda --transport $tr --grid 1024x512x512 \
        --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$out/stencil-512-per-gpu-$tr.json"
done
# Periodic in x: each rank's -x and +x halos travel host-staged under the baseline, so their
# regions pair (one region moves both x faces); verified bit-for-bit like every stencil run.
step timeout 240 mpirun -np 2 "$hp" stencil --backend cuda --transport mpi --grid 1024x512x512 \
    --procs 2x1x1 --periodic x --halo 1 --type f64 --steps 30 --exchange-reps 50 \
    --json "$out/stencil-512-per-gpu-mpi-periodic-x.json"
# The taskqueue strategy, the user's own memory (Field::adopt) and fault injection on the GPU.
for tr in mpi ipc; do
    step timeout 240 mpirun -np 2 "$hp" stencil --backend cuda --transport $tr --variant tq \
        --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$out/stencil-512-per-gpu-$tr-tq.json"
done
step timeout 120 mpirun -np 2 "$hp" stencil --backend cuda --transport ipc --adopt \
    --grid 256x128x128 --procs 2x1x1 --halo 2 --type f32 --fields 2 --periodic xz --steps 5
for tr in mpi ipc; do
    echo; echo "=== drop-send=+x over $tr (must end every rank with a time-out naming the halo, exit 3)"
    timeout 120 mpirun -np 2 "$hp" stencil --backend cuda --transport $tr --grid 256x128x128 \
        --procs 2x1x1 --periodic x --steps 3 --inject drop-send=+x --timeout 2
    echo "exit code: $?"
done
echo
if [ $status -eq 0 ]; then echo "gpu-library: all passed"; else echo "gpu-library: FAILURES above"; fi
exit $status
