#!/usr/bin/env bash
# Call 2: which streams the shell's slabs take. Builds (bins.tar.xz): haloport-new (A: the
# exchange and the shell urgent, the box beside them), haloport-b (B: the exchange urgent, the
# box and the shell's slabs on streams of ordinary priority), haloport-old (before: everything
# after the box on one stream). compute-sanitizer memcheck and racecheck of A and B on graph
# mode with 2 ranks sharing the GPU over ipc (without MPS: the sanitizer does not attach under
# it); then under MPS step_bench (deeper tiles) and haloport stencil 512^3 f64 and f32, plain
# and --graph, 1 rank, two rounds with the builds interleaved. Every stencil run verified.
# usage, from the repository root: bash results/2026-11-25-h100-step-overlap/run2.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); w=$out/w
bin=/tmp/overlap-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
(nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu -Xptxas -v "$here/step_bench.cu" -o /tmp/step_bench \
    > "$w/bench-build.txt" 2>&1; echo "bench build rc $?" >> "$w/bench-build.txt") &
build=$!
small=(stencil --backend cuda --graph --transport ipc --grid 64x48x40 --fields 2 --steps 6)
for b in new b; do for tool in memcheck racecheck; do
    timeout 200 mpirun -np 2 --allow-run-as-root compute-sanitizer --tool $tool --error-exitcode 9 \
        "$bin/haloport-$b" "${small[@]}" > "$w/sanitizer-$b-$tool.txt" 2>&1
    echo "sanitizer $b $tool rc $?"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|verified" "$w/sanitizer-$b-$tool.txt"
done; done
wait $build; tail -1 "$w/bench-build.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
if [ -x /tmp/step_bench ]; then
    timeout 150 /tmp/step_bench 512 15 > "$w/bench.csv" 2> "$w/bench-err.txt"; echo "bench rc $?"
    cat "$w/bench.csv"
fi
run1() { # build type mode round
    local extra=(); [ "$3" = graph ] && extra=(--graph)
    local name=$1-$2-$3-$4
    echo "=== $name"
    timeout 120 mpirun -np 1 --allow-run-as-root -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        "$bin/haloport-$1" stencil --backend cuda --grid 512x512x512 --type "$2" --steps 20 \
        --exchange-reps 20 "${extra[@]}" --json "$w/stencil-$name.json" > "$w/stencil-$name.txt" 2>&1
    echo "rc $?"
    grep -E "step median|compute alone|verified" "$w/stencil-$name.txt"
}
for round in 1 2; do for type in f64 f32; do for mode in plain graph; do for b in new b old; do
    run1 $b $type $mode $round
done; done; done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
