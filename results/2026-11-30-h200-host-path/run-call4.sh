#!/usr/bin/env bash
# Call 4: call 3's build C against the head's (A, f9a1324) on the same machine, interleaved: the
# call before this one left A in /tmp/keep (`run-call4-keep.sh`; the carry of both was over the
# device tool's limit). Otherwise as call 3: 4 rounds of small and thesis-9, a sweep of small
# with 200 measured iterations a build, the 2-rank stencil at 128^3 (f64, f32) a build, memcheck
# of C.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call4.sh
#   carry/haloport-C.xz. Output: $OUT/call4-log.txt, $OUT/call4.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && xz -dc carry/haloport-C.xz > $bin/haloport-C && chmod +x $bin/haloport-C && cp /tmp/keep/haloport-A $bin/ || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call4; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call4-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
sweep() { # NAME BUILD ARGS...
    local name=$1 build=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4; do
    for build in A C; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A C; do
    sweep long-$build $build --workloads small --runs 2 --iters 203
done
for build in A C; do
    for t in f64 f32; do
        echo "=== stencil-$build-$t"
        timeout 60 "${mpi[@]}" $bin/haloport-$build stencil --backend cuda --grid 128x128x128 \
            --type $t --periodic x --transport ipc --steps 20 --exchange-reps 20 \
            > "$out/stencil-$build-$t.txt" 2>&1
        echo "rc $?"; grep -iE "exchange|verified" "$out/stencil-$build-$t.txt" | head -6
    done
done
echo quit | nvidia-cuda-mps-control
echo "=== memcheck"
timeout 150 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-C \
    sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 --runs 1 --verify full \
    --out "$out/memcheck" > "$out/memcheck.txt" 2>&1
echo "rc $?"; grep -E "ERROR SUMMARY|lib-tq-ipc \|" "$out/memcheck.txt" | head -6; rm -rf "$out/memcheck/cells"
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A C | tee "$top/call4-ratios.md"
for build in A C; do
    echo "=== timelines long-$build"; python3 "$here/timelines.py" $out/long-$build/sweep.json.gz small
done
date -u
tar czf "$top/call4.tgz" -C /tmp call4
