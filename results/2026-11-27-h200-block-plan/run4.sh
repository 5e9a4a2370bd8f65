#!/usr/bin/env bash
# Issue 23, call 4: small's table of 8 regions kept in device memory and launched with the
# arguments alone (haloport-short: hp_exchange_regions_short, a parameter of 112 bytes, its grid
# blocks planning both sides with hp_plan_block; the code in short.diff) against the committed
# build (haloport: the table inline, 880 bytes): memcheck and racecheck on lib-tq-ipc small with
# haloport-short, then sweeps under MPS with 2 ranks sharing the GPU, builds interleaved, three
# rounds.
# usage, from the repository root: bash results/2026-11-27-h200-block-plan/run4.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-short. Output in OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/short-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
for tool in memcheck racecheck; do
    name=sanitize-short-$tool
    step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport-short run --backend cuda --transport ipc \
        --variant lib-tq-ipc --workload small --pattern mixed --runs 2 --iters 3 --warmup 1 \
        --verify full
    grep -E "SUMMARY|verified|error" "$out/$name.txt" | head -4
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2 3; do
    for build in new short; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        name=sweep-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $exe sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 --out "$out/$name"
        grep -E "ipc" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
