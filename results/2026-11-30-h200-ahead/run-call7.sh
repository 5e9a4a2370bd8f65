#!/usr/bin/env bash
# Call 7: the commit's build (F) alone, 6 more rounds of call 5's sweep (ipc-tq, lib-base-ipc and
# lib-tq-ipc; small, thesis-9, thesis-27, large; 20 runs; 2 ranks sharing one H200 under MPS),
# to see how often small's ratio stays within 1.05 (call 5: 1.024 and 1.053).
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call7.sh with
#   carry/bins.tar.xz as call 5's. Output: $OUT/call7-log.txt, call7.tgz, call7-ratios.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/bins.tar.xz | tar xf - -C $bin || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call7; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call7-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3 4 5 6; do
    name=sweep-$round
    timeout 200 mpirun -np 2 --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "=== $name rc $?"; grep -c "| true |" "$out/$name.txt"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
done
echo quit | nvidia-cuda-mps-control
python3 "$here/sweep-ratios.py" $out/sweep-*/sweep.json.gz | tee "$top/call7-ratios.txt"
date -u
tar czf "$top/call7.tgz" -C /tmp call7
