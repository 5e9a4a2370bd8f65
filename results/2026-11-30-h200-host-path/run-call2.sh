#!/usr/bin/env bash
# Call 2: the host path trimmed (B: region tables in a short list found once, the outcome words
# not read again after a wait, no scan of the routes) against the head (A, the
# haloport, f9a1324's build), and W: B with the diagnostic `warm.diff`, which reads the
# exchange's state (its struct, tables, one-launch table and argument, the backend) outside the
# timed region, before each iteration (HP_DIAG_WARM=1). ipc-tq and lib-tq-ipc, small and
# thesis-9, 20 runs, 2 ranks sharing one H200 under MPS, 4 rounds interleaved.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call2.sh
#   carry/ab.tar.xz: haloport-A, haloport-B, haloport-W.
#   Output: $OUT/call2-log.txt, $OUT/call2.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/ab.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call2; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call2-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3 4; do
    for build in A B W; do
        name=$build-$round t0=$SECONDS
        echo "=== $name"
        extra=(); [ $build = W ] && extra=(-x HP_DIAG_WARM=1)
        timeout 100 "${mpi[@]}" "${extra[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 \
            --out "$out/$name" > "$out/$name.txt" 2>&1
        echo "rc $? ($((SECONDS - t0)) s)"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A B W | tee "$top/call2-ratios.md"
for build in A B W; do
    echo "=== timelines $build-4"; python3 "$here/timelines.py" $out/$build-4/sweep.json.gz
done
date -u
tar czf "$top/call2.tgz" -C /tmp call2
