#!/usr/bin/env bash
# Call 3: the one launch's kernels by word size and for synthetic regions (this directory's
# commit, `new`) against the build before (f46b1c9, `base`), on one H200:
#   checks of new: CUDA conformance, the CLI's GPU tests, compute-sanitizer memcheck of
#     lib-tq-ipc (small, thesis-9, full verification, 2 ranks sharing the GPU), the 2-rank
#     stencil over ipc (periodic in x only, so every message is device-direct and the one launch
#     runs the f64 / f32 kernels; periodic in x, y and z, the copies kernel), verified;
#   sweeps under MPS: ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs),
#     4 rounds of base and new interleaved;
#   the 2-rank stencil's exchange at 64^3 and 128^3, f64 and f32, periodic in x, base and new
#     interleaved, 2 rounds (exchange median: the one launch of real fields).
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call3.sh
#   carry/bins.tar.xz: haloport-base, haloport-new, cuda-conformance, gpu-cuda-cli.
#   Output: $OUT/call3-log.txt, $OUT/call3.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call3; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call3-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|verified|step median|exchange median" "$out/$1.txt" | head -10
}
step conformance 90 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport-new step gpu-cli 120 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step memcheck 120 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport-new sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 \
    --runs 1 --verify full --out "$out/memcheck"
show memcheck; grep -E "lib-tq-ipc" "$out/memcheck.txt" | grep "|"; rm -rf "$out/memcheck/cells"
for t in f64 f32; do
    for p in x xyz; do
        step stencil-check-$t-$p 60 "${mpi[@]}" $bin/haloport-new stencil --backend cuda \
            --grid 128x128x128 --type $t --periodic $p --transport ipc --steps 6 --exchange-reps 6
        show stencil-check-$t-$p
    done
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3 4; do
    for build in base new; do
        name=$build-$round
        step $name 120 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -8
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
for round in 1 2; do
    for grid in 64x64x64 128x128x128; do
        for t in f64 f32; do
            for build in base new; do
                name=stencil-$grid-$t-$build-$round
                step $name 60 "${mpi[@]}" $bin/haloport-$build stencil --backend cuda --grid $grid \
                    --type $t --periodic x --transport ipc --steps 20 --exchange-reps 50 \
                    --json "$out/$name.json"
                show $name
            done
        done
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out base new | tee "$top/call3-ratios.md"
date -u
tar czf "$top/call3.tgz" -C /tmp call3
