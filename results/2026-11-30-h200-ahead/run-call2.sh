#!/usr/bin/env bash
# Call 2: where a small block's unpack spends its time, in ipc-tq and lib-tq-ipc alike. M1, M2
# and M3 are the head (A) with diag-marks.diff, HP_DIAG_MARK set to 1, 2 or 3: the unpack's end
# stamp takes the time of an earlier point, in both kernels: 1 right after the barrier that
# follows the wait, 2 after the checks and before their fold into the block's record, 3 after the
# fold (A: after the barrier that follows). sm_90 alone. small, 200 measured iterations, 2 ranks
# sharing one H200 under MPS, 2 rounds.
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call2.sh
#   with carry/bins.tar.xz holding haloport-A, -M1, -M2, -M3. Output: $OUT/call2-log.txt, call2.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/bins.tar.xz | tar xf - -C $bin || exit 1
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
for round in 1 2; do
    for build in A M1 M2 M3; do
        name=$build-$round
        timeout 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
            --workloads small --runs 2 --iters 203 --out "$out/$name" > "$out/$name.txt" 2>&1
        echo "=== $name rc $?"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
        python3 "$here/blocks.py" $out/$name/sweep.json.gz small
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call2.tgz" -C /tmp call2
