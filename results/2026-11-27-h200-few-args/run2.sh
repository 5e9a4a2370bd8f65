#!/usr/bin/env bash
# Issue 23, call 2: the one launch with a short parameter for tables of at most 8
# (hp_exchange_regions_few, 880 bytes) and 20 regions inline (hp_exchange_regions_some, 2032)
# and its argument built once with its table, against the build before (haloport-base,
# 9edd16d): CUDA conformance, the HIP-on-CUDA layer's, compute-sanitizer memcheck and racecheck
# on lib-tq-ipc (small: the 8-region entry; thesis-9: the 20-region one) with 2 ranks sharing
# the GPU, and sweeps under MPS, builds interleaved, two rounds.
# usage, from the repository root: bash results/2026-11-27-h200-few-args/run2.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance,
#   hip-nvidia-conformance, libhaloport_hipnv.so. Output in OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/few-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() { grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|FAILED|panicked|error|verified" "$out/$1.txt" | head -12; }
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
for tool in memcheck racecheck; do for workload in small thesis-9; do
    name=sanitize-$workload-$tool
    step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
        --variant lib-tq-ipc --workload $workload --pattern mixed --runs 2 --iters 3 \
        --warmup 1 --verify full
    show $name
done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for build in base new; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        name=sweep-$build-$round
        step $name 200 mpirun -np 2 "${mps[@]}" $exe sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
