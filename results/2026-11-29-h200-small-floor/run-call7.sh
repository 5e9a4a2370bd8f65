#!/usr/bin/env bash
# Call 7: where the host's time goes before the one launch now (call 3's build with stage marks,
# stages2.diff: ../2026-11-29-h200-compact-launch/stages.diff and marks 10-13 in `prepare`).
# ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks sharing one H200 under MPS,
# 3 rounds; ../2026-11-29-h200-compact-launch/stages.py prints the marks.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call7.sh
#   carry/bins.tar.xz: haloport-stages. Output: $OUT/call7-log.txt, $OUT/call7.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call7; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call7-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3; do
    name=stages-$round t0=$SECONDS
    echo "=== $name"
    timeout 100 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES \
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2 $bin/haloport-stages sweep \
        --backend cuda --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 \
        --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
    python3 "$here/../2026-11-29-h200-compact-launch/stages.py" "$out/$name" | tee "$out/$name-stages.md"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call7.tgz" -C /tmp call7
