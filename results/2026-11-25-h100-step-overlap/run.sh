#!/usr/bin/env bash
# The step with the inner box beside the exchange and the shell (urgent streams), on one GPU:
# step_bench (warp-shuffle tiles, the overlapped step; every kernel bit for bit against the
# point form), ncu on the box kernels, then under MPS haloport stencil 512^3 f64 and f32, with
# and without --graph, 1 rank, this build (new) and the build before (old) interleaved, and
# 2 ranks sharing the GPU over ipc (1024x512x512). Every stencil run verified bit for bit.
# usage, from the repository root: bash results/2026-11-25-h100-step-overlap/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport-new and haloport-old.
# OUT receives log.txt (the summary) and all.tgz (every file).
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out/w"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); w=$out/w
bin=/tmp/overlap-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu -Xptxas -v "$here/step_bench.cu" -o /tmp/step_bench \
    > "$w/bench-build.txt" 2>&1; echo "bench build rc $?"
if [ -x /tmp/step_bench ]; then
    # ncu first (it does not profile through MPS): the box kernels' first launches.
    timeout 240 ncu --kernel-name regex:"k_tiles|hp_stencil27_marching" --launch-count 36 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread \
        --csv /tmp/step_bench 512 1 > "$w/ncu.csv" 2> "$w/ncu-err.txt"; echo "ncu rc $?"
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
if [ -x /tmp/step_bench ]; then
    timeout 200 /tmp/step_bench 512 15 > "$w/bench.csv" 2> "$w/bench-err.txt"; echo "bench rc $?"
    cat "$w/bench.csv"
fi
run1() { # build type mode ranks
    local extra=(); [ "$3" = graph ] && extra=(--graph)
    local grid=512x512x512; [ "$4" = 2 ] && grid=1024x512x512 && extra+=(--transport ipc)
    local name=$1-$2-$3-np$4
    local cmd=("$bin/haloport-$1" stencil --backend cuda --grid $grid --type "$2" --steps 20
        --exchange-reps 20 "${extra[@]}" --json "$w/stencil-$name.json")
    echo "=== $name"
    timeout 150 mpirun -np $4 --allow-run-as-root -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        "${cmd[@]}" > "$w/stencil-$name.txt" 2>&1
    echo "rc $?"
    grep -E "step median|compute alone|verified" "$w/stencil-$name.txt"
}
for type in f64 f32; do for mode in plain graph; do for build in new old; do
    run1 $build $type $mode 1
done; done; done
for mode in plain graph; do for build in new old; do run1 $build f64 $mode 2; done; done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$out/all.tgz" -C "$w" . && rm -rf "$w"
