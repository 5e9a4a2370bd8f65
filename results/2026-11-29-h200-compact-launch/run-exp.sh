#!/usr/bin/env bash
# Call 3: one build (the working tree with exp.diff: stage marks, and two environment switches
# that put back the behaviour before), checked and measured on one H200 under MPS:
#   checks: CUDA conformance, the CLI's GPU tests, compute-sanitizer memcheck of lib-tq-ipc
#           (small, thesis-9, full verification, 2 ranks sharing the GPU);
#   sweeps: ipc-tq and lib-tq-ipc (small, thesis-9; 20 runs), 3 rounds of 4 configurations
#           interleaved: base (HALOPORT_EXP_NO_UNIFORM=1 HALOPORT_EXP_QUERY_EVERY=1), uniform
#           (HALOPORT_EXP_QUERY_EVERY=1), query (HALOPORT_EXP_NO_UNIFORM=1), new (neither).
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-exp.sh
#   carry/bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli. Output under $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
out=$OUT
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|verified|ipc \|" "$out/$1.txt" | head -10
}
step conformance 60 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 90 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step memcheck 90 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 \
    --runs 1 --verify full --out "$out/memcheck"
show memcheck; rm -rf "$out/memcheck/cells"
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3; do
    for config in base uniform query new; do
        env=()
        case $config in
            base) env=(-x HALOPORT_EXP_NO_UNIFORM=1 -x HALOPORT_EXP_QUERY_EVERY=1) ;;
            uniform) env=(-x HALOPORT_EXP_QUERY_EVERY=1) ;;
            query) env=(-x HALOPORT_EXP_NO_UNIFORM=1) ;;
        esac
        name=$config-$round
        step $name 100 "${mpi[@]}" "${env[@]}" $bin/haloport sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 --out "$out/$name"
        grep -E "uniform_blocks" "$out/$name.txt" | sort | uniq -c
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
        python3 "$here/stages.py" "$out/$name" > "$out/$name-stages.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
