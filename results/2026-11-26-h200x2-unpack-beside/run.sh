#!/usr/bin/env bash
# The library's unpack beside its pack on two GPUs, one rank each (haloport-beside: where every
# message is device-direct, no other rank shares the device and the pack's and unpack's blocks
# fit on it together, start queues the unpack on a stream of its own that waits only for what
# came before the pack) against the unpack after the pack (haloport-new). The CLI's GPU test of
# the library variants; a dropped message (time-out, no hang); memcheck and racecheck of the
# stencil whose every neighbour is device-direct (2x1x1, --periodic x); the sweep of ipc-tq,
# lib-base-ipc, lib-tq-ipc with the barrier, two rounds, the builds interleaved; the stencil
# 1024x512x512 f64 (2x1x1, --periodic x), plain, each build. Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200x2-unpack-beside/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport-new, haloport-beside, gpu-cuda-cli.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/beside-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
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
mpi=(mpirun --bind-to none -np 2)
step gpu-cli 200 $bin/gpu-cuda-cli --test-threads=1 library
grep -E "^test |test result" "$out/gpu-cli.txt"
step drop-send 120 "${mpi[@]}" $bin/haloport-beside stencil --backend cuda --transport ipc \
    --grid 64x32x32 --procs 2x1x1 --periodic x --steps 3 --timeout 2 --inject drop-send=+x
grep -iE "timed out" "$out/drop-send.txt" | head -2
for tool in memcheck racecheck; do
    step sanitize-$tool 240 "${mpi[@]}" compute-sanitizer --tool $tool --error-exitcode 9 \
        $bin/haloport-beside stencil --backend cuda --transport ipc --grid 128x64x64 \
        --procs 2x1x1 --periodic x --fields 2 --steps 6 --exchange-reps 2
    show sanitize-$tool
done
for round in 1 2; do for b in new beside; do
    step sweep-$b-$round 200 "${mpi[@]}" $bin/haloport-$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
done; done
for b in new beside; do
    step stencil-$b 120 "${mpi[@]}" $bin/haloport-$b stencil --backend cuda --transport ipc \
        --grid 1024x512x512 --procs 2x1x1 --periodic x --type f64 --steps 20 --exchange-reps 20 \
        --json "$out/stencil-$b.json"
    show stencil-$b
done
date -u
