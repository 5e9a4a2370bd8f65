#!/usr/bin/env bash
# Exploring, on 2 x H200, where the stencil's step loses time: step_bench (the step's kernels
# beside a copy of the field, results/2026-11-25-h100-step-overlap/step_bench.cu) on GPU 0; then
# haloport stencil 1024x512x512 over 2 GPUs (ipc), plain and --graph, with 16 (the default), 64,
# 256 and 1024 GPU blocks a signalled message at most (--signalled-blocks); and, where nsys is
# installed, a kernel trace of one 2-GPU run. Every stencil run verified.
# usage, from the repository root: bash results/2026-11-26-h200x2-explore/run.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd); w=$out/w
hp=$dir/haloport
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; echo "nsys: $(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)"
nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu results/2026-11-25-h100-step-overlap/step_bench.cu \
    -o /tmp/step_bench > "$w/bench-build.txt" 2>&1; echo "bench build rc $?"
CUDA_VISIBLE_DEVICES=0 timeout 200 /tmp/step_bench 512 15 > "$w/bench.csv" 2> "$w/bench-err.txt"
echo "bench rc $?"; cat "$w/bench.csv"
run() { # name extra...
    local name=$1; shift
    echo "=== $name"
    timeout 120 mpirun --bind-to none -np 2 $hp stencil --backend cuda --transport ipc \
        --grid 1024x512x512 --procs 2x1x1 --steps 20 --exchange-reps 20 "$@" \
        --json "$w/$name.json" > "$w/$name.txt" 2>&1
    echo "rc $?"; grep -E "step median|compute alone|exchange alone|verified" "$w/$name.txt"
}
for sb in 16 64 256 1024; do
    run graph-sb$sb --graph --signalled-blocks $sb
    run plain-sb$sb --signalled-blocks $sb
done
nsys=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$nsys" ]; then
    timeout 200 mpirun --bind-to none -np 2 $nsys profile --trace cuda -o "$w/trace-%q{OMPI_COMM_WORLD_RANK}" \
        $hp stencil --backend cuda --transport ipc --grid 1024x512x512 --procs 2x1x1 --steps 10 \
        --exchange-reps 10 > "$w/trace.txt" 2>&1; echo "nsys rc $?"
    for r in 0 1; do
        $nsys stats --report cuda_gpu_trace --format csv -o "$w/trace-$r" "$w/trace-$r.nsys-rep" \
            > /dev/null 2>&1; echo "stats $r rc $?"
    done
    rm -f "$w"/*.sqlite
fi
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
