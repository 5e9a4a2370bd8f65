#!/usr/bin/env bash
# Call 4: P (call 3's build, P.diff), P2 (P without its struct of arguments: P2.diff, the
# candidate for the commit) and Q (P2 with the synthetic form's unpack signalling loaded into
# registers before the pack: Q.diff) against the head (A, 41e0bf6); all sm_90 alone. ipc-tq and
# lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks sharing one H200 under MPS, 5 rounds
# interleaved; small with 200 measured iterations (timelines.py, blocks.py).
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call4.sh with
#   carry/bins.tar.xz holding haloport-A, -P, -P2, -Q. Output: $OUT/call4-log.txt, call4.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
xz -dc carry/bins.tar.xz | tar xf - -C $bin || exit 1
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
    local name=$1 build=$2; shift 2
    timeout 100 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        "$@" --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "=== $name rc $?"; grep -c "| true |" "$out/$name.txt"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3 4 5; do
    for build in A P P2 Q; do
        sweep $build-$round $build --workloads small,thesis-9 --runs 20
    done
done
for build in A P P2 Q; do
    sweep long-$build $build --workloads small --runs 2 --iters 203
done
echo quit | nvidia-cuda-mps-control
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out A P P2 Q | tee "$top/call4-ratios.md"
for build in A P P2 Q; do
    echo "=== timelines long-$build"; python3 "$here/../2026-11-30-h200-host-path/timelines.py" $out/long-$build/sweep.json.gz small
    python3 "$here/blocks.py" $out/long-$build/sweep.json.gz small
done
date -u
tar czf "$top/call4.tgz" -C /tmp call4
