#!/usr/bin/env bash
# Call 2: where the host's time goes before the library's one launch returns, now (a build of
# 93d6046 with stages.diff: stage marks in the blocking exchange and around ipc-tq's launch).
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-stages.sh
#   carry/bins.tar.xz holds haloport-stages. Output under $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/stage-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export CUDA_VISIBLE_DEVICES=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    mpirun -np 2 "${mps[@]}" $bin/haloport-stages sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 --out "$OUT/sweep-$round" \
        > "$OUT/sweep-$round.txt" 2>&1; echo "rc $?"
    grep -E "ipc" "$OUT/sweep-$round.txt"
    python3 "$here/../2026-11-27-h200-host-stages/stages.py" "$OUT/sweep-$round"
    python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$OUT/sweep-$round"
    rm -rf "$OUT/sweep-$round/cells"; gzip -f "$OUT/sweep-$round/sweep.json"
done
echo quit | nvidia-cuda-mps-control
