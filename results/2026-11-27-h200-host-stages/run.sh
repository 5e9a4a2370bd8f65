#!/usr/bin/env bash
# Issue 23: where the host's time goes before the library's one launch returns, against ipc-tq
# (a build with host-stages.diff: stage marks in the blocking exchange), and the issue's plain
# CuPy probes of the Jacobi update in f64 and f32 beside haloport's compute on the same GPU.
# usage, from the repository root: bash results/2026-11-27-h200-host-stages/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport (the instrumented build). Output under OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/stage-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
step cupy-probe 200 python3 "$here/../2026-11-27-h200-cupy-probe/probe.py" --reps 15
cat "$out/cupy-probe.txt"
for type in f64 f32 f32-pad; do
    extra=(); [ $type = f32-pad ] && extra+=(--pad 2,0,0)
    name=stencil-$type
    step $name 100 $bin/haloport stencil --backend cuda --grid 512x512x512 --type ${type%-pad} \
        --steps 20 --exchange-reps 20 "${extra[@]}" --json "$out/$name.json"
    grep -E "step median|compute alone|copy|verified" "$out/$name.txt" | head -8
done
step cupy-probe-2 200 python3 "$here/../2026-11-27-h200-cupy-probe/probe.py" --reps 15
cat "$out/cupy-probe-2.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    step sweep-$round 200 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 --out "$out/sweep-$round"
    grep -E "ipc" "$out/sweep-$round.txt"
    python3 "$here/stages.py" "$out/sweep-$round" | tee "$out/stages-$round.md"
    rm -rf "$out/sweep-$round/cells"; gzip -f "$out/sweep-$round/sweep.json"
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
