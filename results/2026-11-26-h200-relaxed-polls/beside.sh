#!/usr/bin/env bash
# The library's unpack beside its pack (this build, haloport-beside: when every message is
# device-direct, start queues the unpack on a stream of its own that waits only for what came
# before the pack, so its blocks unpack each message as it arrives) against the unpack after
# the pack (haloport-new: relaxed polls, commit before) on GPU 0. First the GPU tests of this
# build: the CUDA conformance suite, the CLI's GPU tests of the library variants and the stencil,
# memcheck and racecheck of 2 ranks sharing the GPU whose every neighbour is device-direct
# (--periodic x over 2x1x1) and of 8 (2x2x2, periodic), a dropped message ending in a time-out;
# then under MPS the sweep of ipc-tq,
# lib-base-ipc, lib-tq-ipc with 2 ranks, two rounds, the builds interleaved; haloport stencil
# 512^3 f64 over 2 ranks (2x1x1, --periodic x: all device-direct) and 8 ranks (2x2x2), verified.
# usage, from the repository root: bash results/2026-11-26-h200-relaxed-polls/beside.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-new, haloport-beside, cuda-conformance, gpu-cuda-cli.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/beside-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=$bin/haloport-beside
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
show() { grep -E "step median|compute alone|verified|SUMMARY|test result" "$out/$1.txt"; }
step conformance 240 $bin/cuda-conformance --test-threads=1; show conformance
step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1 library stencil
grep -E "^test |test result" "$out/gpu-cli.txt"
for tool in memcheck racecheck; do
    step sanitize-$tool-2 240 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
        --error-exitcode 9 $bin/haloport-beside stencil --backend cuda --transport ipc \
        --grid 128x64x64 --procs 2x1x1 --periodic x --fields 2 --steps 6 --exchange-reps 2
    show sanitize-$tool-2
done
# A message that never comes: every rank ends with a time-out naming the halo (non-zero exit).
step drop-send 120 mpirun -np 2 -x CUDA_VISIBLE_DEVICES $bin/haloport-beside stencil \
    --backend cuda --transport ipc --grid 64x32x32 --procs 2x1x1 --periodic x --steps 3 \
    --timeout 2 --inject drop-send=+x
grep -iE "time|error" "$out/drop-send.txt" | head -4
step sanitize-memcheck-8 300 mpirun -np 8 --oversubscribe -x CUDA_VISIBLE_DEVICES \
    compute-sanitizer --tool memcheck --error-exitcode 9 $bin/haloport-beside stencil \
    --backend cuda --transport ipc --grid 64x64x64 --procs 2x2x2 --steps 4 --exchange-reps 2
show sanitize-memcheck-8
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES)
for round in 1 2; do for b in new beside; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/haloport-$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
done; done
for b in new beside; do
    step two-$b 100 mpirun -np 2 "${mps[@]}" $bin/haloport-$b stencil --backend cuda \
        --grid 512x512x512 --procs 2x1x1 --periodic x --transport ipc --type f64 --steps 20 \
        --exchange-reps 20 --json "$out/two-$b.json"
    show two-$b
    step eight-$b 150 mpirun -np 8 --oversubscribe "${mps[@]}" $bin/haloport-$b stencil \
        --backend cuda --grid 256x256x256 --procs 2x2x2 --transport ipc --type f64 --steps 10 \
        --exchange-reps 20 --json "$out/eight-$b.json"
    show eight-$b
done
echo quit | nvidia-cuda-mps-control
date -u
