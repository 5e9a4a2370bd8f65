#!/usr/bin/env bash
# Call 5: do the one launch's 40 bytes of spilled registers cost it (ptxas, sm_90: 64 registers
# under __launch_bounds__(1024), 40 bytes of spill stores and loads)? Three builds, each 93d6046
# with stages.diff: base; bound (the two one-launch kernels under __maxnreg__(128): 72
# registers, no spill; bound-kernel.diff); early (bound, and the inline table's both sides'
# regions found and signals read before the pack: 76 registers, no spill; early-kernel.diff).
#   checks: compute-sanitizer memcheck of lib-tq-ipc with early (small, thesis-9, full
#           verification, 2 ranks sharing the GPU);
#   sweeps: ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs) under MPS, 3
#           rounds of the 3 builds interleaved.
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-call5.sh
#   carry/bins.tar.xz: haloport-base, haloport-bound, haloport-early.
#   Output: $OUT/call5-log.txt, $OUT/call5.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call5; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call5-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
step memcheck 90 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport-early sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 \
    --runs 1 --verify full --out "$out/memcheck"
grep -E "ERROR SUMMARY|lib-tq-ipc" "$out/memcheck.txt"; rm -rf "$out/memcheck/cells"
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3; do
    for build in base bound early; do
        name=$build-$round
        step $name 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -8
        python3 "$here/stages.py" "$out/$name" > "$out/$name-stages.md"
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call5.tgz" -C /tmp call5
