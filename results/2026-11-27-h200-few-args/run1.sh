#!/usr/bin/env bash
# Issue 23: the one launch of a small exchange with a short parameter (hp_exchange_regions_few:
# 880 bytes where hp_exchange_regions takes 3184) and its argument built once with its table,
# against the build before (haloport-base, 9edd16d), and the same launched cooperatively
# (haloport-coop, an experiment: Kernel::ExchangeRegionsFew counted as needing co-residency);
# sweeps under MPS with 2 ranks sharing the GPU, builds interleaved, two rounds; CUDA conformance
# and the issue's CuPy probes again. Output in OUT/job.tgz.
# usage, from the repository root: bash results/2026-11-27-h200-few-args/run1.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-coop, and where they fit haloport-base and
#   cuda-conformance (the working tree and the binaries travel in 64 MiB).
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
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
show() { grep -E "test result|FAILED|panicked|error" "$out/$1.txt" | head -12; }
if [ -x $bin/cuda-conformance ]; then
    step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
fi
# The HIP-on-CUDA layer waits for the full job (the working tree and binaries fill the carry).
step cupy-probe 200 python3 "$here/../2026-11-27-h200-cupy-probe/probe.py" --reps 15
cat "$out/cupy-probe.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for build in base new coop; do
        [ $build = base ] && [ ! -x $bin/haloport-base ] && continue
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
