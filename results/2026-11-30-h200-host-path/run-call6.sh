#!/usr/bin/env bash
# Call 6: G (F, the final build, plus each grid block's thread 0 asking L1 for its unpack side's
# signalling before its pack: hp_prefetch_signal) against F and the head (A), all three on one
# machine: two calls before this one left A and F in /tmp/keep (run-keep.sh). ipc-tq and
# lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks sharing one H200 under MPS, 4 rounds
# interleaved; small with 200 measured iterations for F and G (timelines.py); the 2-rank stencil
# of G over ipc (128^3 f64, periodic in x and in x, y and z), verified.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call6.sh
#   carry/haloport-G.xz. Output: $OUT/call6-log.txt, $OUT/call6.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/haloport-G.xz > $bin/haloport-G && chmod +x $bin/haloport-G || exit 1
cp /tmp/keep/haloport-A /tmp/keep/haloport-F $bin/ || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call6; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call6-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "verified:|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -6
}
for p in x xyz; do
    step stencil-G-$p 60 "${mpi[@]}" $bin/haloport-G stencil --backend cuda --grid 128x128x128 \
        --periodic $p --transport ipc --steps 6 --exchange-reps 6
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2; shift 2
    step $name 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4; do
    for build in A F G; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in F G; do
    sweep long-$build $build --workloads small --runs 2 --iters 203
done
echo quit | nvidia-cuda-mps-control
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A F G | tee "$top/call6-ratios.md"
for build in F G; do
    echo "=== timelines long-$build"; python3 "$here/timelines.py" $out/long-$build/sweep.json.gz small
done
date -u
tar czf "$top/call6.tgz" -C /tmp call6
