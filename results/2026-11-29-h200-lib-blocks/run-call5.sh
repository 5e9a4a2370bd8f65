#!/usr/bin/env bash
# Issue 23, call 5 on two H200s: the message signalling with one system-scope fence per message
# (blocks counted at device scope, acquire-release; the last fences and raises the flag) against
# the build before it (two fences), checked and measured:
#   checks: CUDA conformance and the CLI's GPU tests of this build; the 2-rank stencil on two
#           GPUs (27-point, 256^3 f64, periodic, over ipc: multi-block messages in the one
#           launch), verified cell by cell; compute-sanitizer memcheck of lib-tq-ipc (small,
#           thesis-9, full verification, 2 ranks on GPU 0);
#   sweeps: ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs), the builds
#           interleaved, two rounds one rank a GPU, two rounds both ranks on GPU 0 under MPS.
# usage, from the repository root: bash results/2026-11-29-h200-lib-blocks/run-call5.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: ./haloport-new (this build), ./haloport (the build before),
#   ./cuda-conformance and ./gpu-cuda-cli (this build). Output in OUT/call5.tgz, OUT/call5-log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/call5; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
exec > >(tee "$top/call5-log.txt") 2>&1
date -u; nvidia-smi -L
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|step median|verified|ipc \|" "$out/$1.txt" |
        head -10
}
sweep() { # NAME BINARY
    step "$1" 100 "${mpi[@]}" $bin/$2 sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 20 --out "$out/$1"
    grep -E "ipc" "$out/$1.txt" | head -8
    rm -rf "$out/$1/cells"; gzip -f "$out/$1/sweep.json"
}
step conformance 60 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport-new step gpu-cli 90 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step stencil-2gpu 40 "${mpi[@]}" $bin/haloport-new stencil --backend cuda --grid 256x256x256 \
    --periodic xyz --transport ipc --steps 10 --exchange-reps 10; show stencil-2gpu
for round in 1 2; do
    sweep two-before-$round haloport
    sweep two-new-$round haloport-new
done
(
    export CUDA_VISIBLE_DEVICES=0
    step memcheck 90 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
        $bin/haloport-new sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 \
        --runs 1 --verify full --out "$out/memcheck"
    show memcheck
)
export CUDA_VISIBLE_DEVICES=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2; do
    sweep one-before-$round haloport
    sweep one-new-$round haloport-new
done
echo quit | nvidia-cuda-mps-control
date -u
rm -rf "$out/memcheck/cells"
tar czf "$top/call5.tgz" -C "$top" call5 && rm -rf "$out"
