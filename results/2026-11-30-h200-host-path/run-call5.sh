#!/usr/bin/env bash
# Call 5: the final build (F: this directory's commit) checked and measured on one H200, beside
# the head's (A, f9a1324), which the call before this one left in /tmp/keep (run-call4-keep.sh;
# the carry of both was over the device tool's limit). Checks: CUDA conformance, the CLI's GPU
# tests, memcheck of lib-tq-ipc (small, thesis-9, every element checked) and racecheck of its
# small, the 2-rank stencil over ipc (128^3, f64 and f32, periodic in x and in x, y and z),
# verified. Then under MPS: ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 4 rounds, A and
# F interleaved; thesis-27 and large, 1 round each; small with 200 measured iterations
# (timelines.py); the 2-rank stencil's exchange (128^3 f64, periodic in x), 3 rounds A and F.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call5.sh
#   carry/bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli. Output: $OUT/call5-log.txt,
#   $OUT/call5.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin || exit 1
mv $bin/haloport $bin/haloport-F && cp /tmp/keep/haloport-A $bin/ || exit 1
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
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY|verified|exchange median|lib-tq-ipc \||ipc-tq \|" "$out/$name.txt" | head -10
}
step conformance 100 $bin/cuda-conformance --test-threads=1
HALOPORT_BIN=$bin/haloport-F step gpu-cli 120 $bin/gpu-cuda-cli --test-threads=1
step memcheck 100 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-F \
    sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck"
step racecheck 100 "${mpi[@]}" compute-sanitizer --tool racecheck --error-exitcode 9 $bin/haloport-F \
    sweep --backend cuda --variants lib-tq-ipc --workloads small --runs 1 --out "$out/racecheck"
rm -rf "$out/memcheck/cells" "$out/racecheck/cells"
for t in f64 f32; do
    for p in x xyz; do
        step stencil-$t-$p 60 "${mpi[@]}" $bin/haloport-F stencil --backend cuda --grid 128x128x128 \
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
for round in 1 2 3 4; do
    for build in A F; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A F; do
    sweep big$build-1 $build --workloads thesis-27,large --runs 20
done
sweep long-F F --workloads small --runs 2 --iters 203
for round in 1 2 3; do
    for build in A F; do
        step stencil-$build-$round 60 "${mpi[@]}" $bin/haloport-$build stencil --backend cuda \
            --grid 128x128x128 --periodic x --transport ipc --steps 20 --exchange-reps 20
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A F bigA bigF | tee "$top/call5-ratios.md"
echo "=== timelines long-F"; python3 "$here/timelines.py" $out/long-F/sweep.json.gz small
date -u
tar czf "$top/call5.tgz" -C /tmp call5
