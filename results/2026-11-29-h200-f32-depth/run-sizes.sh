#!/usr/bin/env bash
# Call 10: the padding the report now suggests (rows of a multiple of 8 elements) against a
# multiple of 4 alone in the library's f32 stencil at 256^3 and 128^3 (and 512^3 beside), 1 rank
# under MPS, two rounds. haloport is the build of 474df46 (HEAD's kernels and launches; HEAD
# changed the hint's text alone).
# usage, from the repository root: bash results/2026-11-29-h200-f32-depth/run-sizes.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/sizes; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/sizes-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|verified|error" "$out/$1.txt" | head -10
}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for n in 256 128 512; do
        for pad in 2 6; do
            name=f32-$n-pad$pad-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid ${n}x${n}x${n} --type f32 --pad $pad,0,0 --steps 40 --exchange-reps 20 \
                --json "$out/$name.json"
            show $name
        done
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/sizes.tgz" -C "$top" sizes && rm -rf "$out"
