#!/usr/bin/env bash
# Call 3: C, the synthetic one launch at a third of its code (the _few kernels without the path of
# a table in device memory, the synthetic form without the unsignalled path) over B (call 2's
# host path). Only C: with the head's build beside it, the carry was over the device tool's
# limit; call 2's A is the head. ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks
# sharing one H200 under MPS, 4 rounds; then a sweep of small with 200 measured iterations
# (timelines.py); then the 2-rank stencil over ipc (128^3, f64 and f32, periodic in x), its
# exchange times, verified; then memcheck of lib-tq-ipc (small, thesis-9, every element checked).
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call3.sh
#   carry/haloport-C.xz. Output: $OUT/call3-log.txt, $OUT/call3.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && xz -dc carry/haloport-C.xz > $bin/haloport-C && chmod +x $bin/haloport-C
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call3; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call3-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4; do
    for build in C; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in C; do
    sweep long-$build $build --workloads small --runs 2 --iters 203
done
for build in C; do
    for t in f64 f32; do
        echo "=== stencil-$build-$t"
        timeout 60 "${mpi[@]}" $bin/haloport-$build stencil --backend cuda --grid 128x128x128 \
            --type $t --periodic x --transport ipc --steps 20 --exchange-reps 20 \
            > "$out/stencil-$build-$t.txt" 2>&1
        echo "rc $?"; grep -iE "exchange|verified" "$out/stencil-$build-$t.txt" | head -6
    done
done
echo quit | nvidia-cuda-mps-control
echo "=== memcheck"
timeout 150 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-C \
    sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck" > "$out/memcheck.txt" 2>&1
echo "rc $?"; grep -E "ERROR SUMMARY|lib-tq-ipc \|" "$out/memcheck.txt" | head -6; rm -rf "$out/memcheck/cells"
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out C | tee "$top/call3-ratios.md"
for build in C; do
    echo "=== timelines long-$build"; python3 "$here/timelines.py" $out/long-$build/sweep.json.gz small
done
date -u
tar czf "$top/call3.tgz" -C /tmp call3
