#!/usr/bin/env bash
# Call 10: the final build, whose one launch of any word size became one of 1- and 2-byte words
# (HP_WORDS_NARROW: 4- and 8-byte words take _w4 and _w8; the kernels' compile time back to what
# it was before this round), checked on one H200: CUDA conformance, the CLI's GPU tests,
# memcheck of lib-tq-ipc, the 2-rank stencil over ipc (f64 and f32, periodic in x and in x, y
# and z), verified; then ipc-tq and lib-tq-ipc under MPS (small, thesis-9, thesis-27, large;
# 20 runs), 3 rounds.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call10.sh
#   carry/bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli. Output: $OUT/call10-log.txt,
#   $OUT/call10.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call10; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call10-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|verified|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -10
}
step conformance 90 $bin/cuda-conformance --test-threads=1
HALOPORT_BIN=$bin/haloport step gpu-cli 120 $bin/gpu-cuda-cli --test-threads=1
step memcheck 120 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport \
    sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck"
rm -rf "$out/memcheck/cells"
for t in f64 f32; do
    for p in x xyz; do
        step stencil-$t-$p 60 "${mpi[@]}" $bin/haloport stencil --backend cuda --grid 128x128x128 \
            --type $t --periodic $p --transport ipc --steps 6 --exchange-reps 6
    done
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3; do
    step final-$round 120 "${mpi[@]}" $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
        --out "$out/final-$round"
    rm -rf "$out/final-$round/cells"; gzip -f "$out/final-$round/sweep.json"
done
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out final | tee "$top/call10-ratios.md"
date -u
tar czf "$top/call10.tgz" -C /tmp call10
