#!/usr/bin/env bash
# Call 6: two H200s, one rank a GPU: the commit's sm_90 build (P2, the kernel code of the commit)
# against the head's (A, 41e0bf6). ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 5 rounds
# interleaved; thesis-27 and large once each; small and thesis-9 with 200 measured iterations
# (timelines.py); the 2-rank stencil across the GPUs (256^3 f64, periodic in x), verified.
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call6.sh with
#   carry/bins.tar.xz holding haloport-A and haloport-P2. Output: $OUT/call6-log.txt, call6.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc ${CARRY:-carry}/bins.tar.xz | tar xf - -C $bin || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1
top=$OUT; out=/tmp/call6; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call6-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "verified:|step median|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -8
}
step stencil-2gpu 60 "${mpi[@]}" $bin/haloport-P2 stencil --backend cuda --grid 256x256x256 \
    --periodic x --transport ipc --steps 10 --exchange-reps 10
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2; shift 2
    step $name 120 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4 5; do
    for build in A P2; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A P2; do
    sweep big$build-1 $build --workloads thesis-27,large --runs 20
    sweep long-$build $build --workloads small,thesis-9 --runs 2 --iters 203
done
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A P2 bigA bigP2 | tee "$top/call6-ratios.md"
for build in A P2; do
    echo "=== timelines long-$build"
    python3 "$here/../2026-11-30-h200-host-path/timelines.py" $out/long-$build/sweep.json.gz small thesis-9
done
date -u
tar czf "$top/call6.tgz" -C /tmp call6
