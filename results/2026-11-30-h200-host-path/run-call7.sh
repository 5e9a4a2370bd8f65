#!/usr/bin/env bash
# Call 7: two H200s, one rank a GPU: the final build (F, this directory's commit) against the
# head's (A, f9a1324), which the call before this one left in /tmp/keep (run-keep.sh A).
# ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 4 rounds interleaved; thesis-27 and large,
# 1 round each; small with 200 measured iterations for both (timelines.py); the 2-rank stencil
# across the GPUs (256^3 f64, periodic in x), verified.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call7.sh
#   carry/haloport-F.xz. Output: $OUT/call7-log.txt, $OUT/call7.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/haloport-F.xz > $bin/haloport-F && chmod +x $bin/haloport-F || exit 1
cp /tmp/keep/haloport-A $bin/ || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1
top=$OUT; out=/tmp/call7; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call7-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "verified:|step median|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -8
}
step stencil-2gpu 60 "${mpi[@]}" $bin/haloport-F stencil --backend cuda --grid 256x256x256 \
    --periodic x --transport ipc --steps 10 --exchange-reps 10
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2; shift 2
    step $name 120 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4; do
    for build in A F; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A F; do
    sweep big$build-1 $build --workloads thesis-27,large --runs 20
done
for build in A F; do
    sweep long-$build $build --workloads small,thesis-9 --runs 2 --iters 203
done
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A F bigA bigF | tee "$top/call7-ratios.md"
for build in A F; do
    echo "=== timelines long-$build"
    python3 "$here/timelines.py" $out/long-$build/sweep.json.gz small thesis-9
done
date -u
tar czf "$top/call7.tgz" -C /tmp call7
