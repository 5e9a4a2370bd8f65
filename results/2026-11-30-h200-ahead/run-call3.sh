#!/usr/bin/env bash
# Call 3: P, the head with the synthetic form's unpack worked out before its wait (its
# arguments, its run and its part of the sample: hp_plan_synthetic), against the head (A,
# 41e0bf6); both built for sm_90 alone (HALOPORT_CUDA_ARCHS=90). Checks of P first: CUDA
# conformance, the CLI's GPU tests, memcheck of lib-tq-ipc (small and thesis-9, every element
# checked, and small sampled), racecheck of it (small), the 2-rank stencil over ipc (128^3 f64
# and f32, periodic in x and in x, y and z). Then ipc-tq and lib-tq-ipc, small and thesis-9,
# 20 runs, 2 ranks sharing one H200 under MPS, 5 rounds interleaved; thesis-27 and large once;
# small with 200 measured iterations (timelines.py, blocks.py); the 2-rank stencil's exchange
# (128^3 f64, periodic in x: the _few_w8 one launch), 3 rounds.
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call3.sh with
#   carry/bins.tar.xz holding haloport-A, haloport-P, cuda-conformance, gpu-cuda-cli.
#   Output: $OUT/call3-log.txt, call3.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/bins.tar.xz | tar xf - -C $bin || exit 1
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
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|verified|exchange median|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -8
}
step conformance 150 $bin/cuda-conformance --test-threads=1
HALOPORT_BIN=$bin/haloport-P step gpu-cli 150 $bin/gpu-cuda-cli --test-threads=1
step memcheck 100 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-P \
    sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck"
step memcheck-sample 100 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-P \
    sweep --backend cuda --variants lib-tq-ipc,lib-base-ipc --workloads small --runs 1 --out "$out/memcheck-sample"
step racecheck 100 "${mpi[@]}" compute-sanitizer --tool racecheck --error-exitcode 9 $bin/haloport-P \
    sweep --backend cuda --variants lib-tq-ipc --workloads small --runs 1 --out "$out/racecheck"
rm -rf "$out"/*check*/cells
for t in f64 f32; do
    for p in x xyz; do
        step stencil-$t-$p 60 "${mpi[@]}" $bin/haloport-P stencil --backend cuda --grid 128x128x128 \
            --type $t --periodic $p --transport ipc --steps 6 --exchange-reps 6
    done
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2; shift 2
    step $name 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4 5; do
    for build in A P; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A P; do
    sweep big$build-1 $build --workloads thesis-27,large --runs 20
    sweep long-$build $build --workloads small --runs 2 --iters 203
done
for round in 1 2 3; do
    for build in A P; do
        step stencil-$build-$round 60 "${mpi[@]}" $bin/haloport-$build stencil --backend cuda \
            --grid 128x128x128 --periodic x --transport ipc --steps 20 --exchange-reps 20
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A P bigA bigP | tee "$top/call3-ratios.md"
for build in A P; do
    echo "=== timelines long-$build"; python3 "$here/../2026-11-30-h200-host-path/timelines.py" $out/long-$build/sweep.json.gz small
    python3 "$here/blocks.py" $out/long-$build/sweep.json.gz small
done
date -u
tar czf "$top/call3.tgz" -C /tmp call3
