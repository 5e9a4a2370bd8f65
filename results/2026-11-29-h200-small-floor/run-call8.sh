#!/usr/bin/env bash
# Call 8: the one-launch table found once per exchange (prepare's two look-ups made one, and the
# launch takes the table exchange_inner found: this directory's second commit, `lookups`)
# against call 3's build (f6c03d3, `kernels`). ipc-tq and lib-tq-ipc, small and thesis-9,
# 20 runs, 2 ranks sharing one H200 under MPS, 5 rounds of the two builds interleaved; then the
# 2-rank stencil of the new build over ipc (128^3 f64, periodic in x and in x, y and z), verified.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call8.sh
#   carry/bins.tar.xz: haloport-kernels, haloport-lookups. Output: $OUT/call8-log.txt, $OUT/call8.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call8; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call8-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3 4 5; do
    for build in kernels lookups; do
        name=$build-$round t0=$SECONDS
        echo "=== $name"
        timeout 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 \
            --out "$out/$name" > "$out/$name.txt" 2>&1
        echo "rc $? ($((SECONDS - t0)) s)"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
for p in x xyz; do
    echo "=== stencil-$p"
    timeout 60 "${mpi[@]}" $bin/haloport-lookups stencil --backend cuda --grid 128x128x128 \
        --periodic $p --transport ipc --steps 10 --exchange-reps 10 > "$out/stencil-$p.txt" 2>&1
    echo "rc $?"; grep -E "step median|verified" "$out/stencil-$p.txt"
done
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out kernels lookups | tee "$top/call8-ratios.md"
date -u
tar czf "$top/call8.tgz" -C /tmp call8
