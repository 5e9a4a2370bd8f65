#!/usr/bin/env bash
# Call 5: checks of this directory's commit that calls 3 and 4 did not run, on one H200:
#   the HIP backend on haloport's HIP-on-CUDA layer (SPEC 19; a build with the cuda and
#   hip-nvidia features, as ci/build-gpu-carry.sh makes it): its conformance suite, and
#   lib-tq-ipc / ipc-tq sweeps with --backend hip (2 ranks sharing the GPU, under MPS);
#   compute-sanitizer racecheck and memcheck of the stencil with --graph and of lib-tq-ipc,
#   2 ranks sharing the GPU (before MPS: the sanitizer does not attach under it).
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call5.sh
#   carry/bins.tar.xz: haloport-hipnv, hip-nvidia-conformance, libhaloport_hipnv.so.
#   Output: $OUT/call5-log.txt, $OUT/call5.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call5; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call5-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x LD_LIBRARY_PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
hp=$bin/haloport-hipnv
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|verified|exchange median" "$out/$1.txt" | head -10
}
step hip-conformance 150 $bin/hip-nvidia-conformance --test-threads=1; show hip-conformance
for tool in racecheck memcheck; do
    step $tool-stencil-graph 100 "${mpi[@]}" compute-sanitizer --tool $tool --error-exitcode 9 \
        $hp stencil --backend cuda --grid 64x64x64 --periodic xyz --transport ipc --steps 4 \
        --exchange-reps 2 --graph
    show $tool-stencil-graph
    step $tool-lib 100 "${mpi[@]}" compute-sanitizer --tool $tool --error-exitcode 9 \
        $hp sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 \
        --verify full --out "$out/$tool-lib"
    show $tool-lib; grep -E "lib-tq-ipc" "$out/$tool-lib.txt" | grep "|"; rm -rf "$out/$tool-lib/cells"
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2; do
    for backend in hip cuda; do
        name=$backend-$round
        step $name 120 "${mpi[@]}" $hp sweep --backend $backend --variants ipc-tq,lib-tq-ipc \
            --workloads small,thesis-9,thesis-27,large --runs 20 --out "$out/$name"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -8
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
step hip-stencil 60 "${mpi[@]}" $hp stencil --backend hip --grid 128x128x128 --periodic x \
    --transport ipc --steps 10 --exchange-reps 10
show hip-stencil
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out hip cuda | tee "$top/call5-ratios.md"
date -u
tar czf "$top/call5.tgz" -C /tmp call5
