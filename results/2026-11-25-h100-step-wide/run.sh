#!/usr/bin/env bash
# The march form with k_wide's tiles in f64 (2 rows x 2 columns x 32 planes, no branch between
# the columns' loads) and the shell's x and y slabs marching in columns (hp_stencil27_slab), on
# one GPU: the CUDA conformance suite; step_bench (kernels against a copy, bit for bit); then
# under MPS haloport stencil 512^3 f64 and f32, with and without --graph, 1 rank, two
# interleaved rounds, each verified and beside a copy of the fields.
# usage, from the repository root: bash results/2026-11-25-h100-step-wide/run.sh BINDIR OUT
#   BINDIR holds haloport and cuda-conformance, or bins.tar.xz with both.
# OUT receives log.txt (the summary) and all.tgz (every file).
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); w=$out/w
bin=$dir
if [ -f "$dir/bins.tar.xz" ]; then bin=/tmp/step-wide-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin; fi
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; git -C "$here" log -1 --format=%h 2>/dev/null
# The bench compiles on the CPU while the suite runs on the GPU.
(nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu -Xptxas -v "$here/step_bench.cu" -o /tmp/step_bench \
    > "$w/bench-build.txt" 2>&1; echo "bench build rc $?" >> "$w/bench-build.txt") &
build=$!
"$bin/cuda-conformance" --test-threads=1 > "$w/conformance.txt" 2>&1
echo "conformance rc $?"; grep -E "stencil|test result" "$w/conformance.txt"
wait $build; tail -1 "$w/bench-build.txt"
if [ -x /tmp/step_bench ]; then
    timeout 150 /tmp/step_bench 512 15 > "$w/bench.csv" 2> "$w/bench-err.txt"; echo "bench rc $?"
    cat "$w/bench.csv"
fi
run1() { # type mode round
    local extra=(); [ "$2" = graph ] && extra=(--graph)
    local cmd=("$bin/haloport" stencil --backend cuda --grid 512x512x512 --type "$1" --steps 20
        --exchange-reps 20 "${extra[@]}" --json "$w/stencil-$1-$2-$3.json")
    echo "=== $1 $2 $3"
    local rc=1
    if command -v mpirun > /dev/null; then
        timeout 120 mpirun -np 1 --allow-run-as-root "${cmd[@]}" > "$w/stencil-$1-$2-$3.txt" 2>&1
        rc=$?; echo "mpirun rc $rc"
    fi
    if [ $rc -ne 0 ]; then # no mpirun, or it failed: a singleton rank, as before
        timeout 120 "${cmd[@]}" >> "$w/stencil-$1-$2-$3.txt" 2>&1; echo "rc $?"
    fi
    grep -E "step median|compute alone|verified" "$w/stencil-$1-$2-$3.txt"
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do
    run1 $type $mode $round
done; done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
