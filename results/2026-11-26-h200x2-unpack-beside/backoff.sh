#!/usr/bin/env bash
# Whether the library's device-side wait slows the other GPU's pack by polling: builds of this
# tree (relaxed polls) with the unpack beside the pack and a pause of 256 or 1000 ns between
# polls after the first 32 (beside-b256, beside-b1000), the unpack after the pack with the 256 ns
# pause (after-b256), and the build without pause or unpack beside (new). The sweep of ipc-tq,
# lib-base-ipc, lib-tq-ipc with the barrier on two GPUs, one rank each, two rounds interleaved;
# the stencil 1024x512x512 f64 (2x1x1, --periodic x) with each build. Every run verified.
# usage, from the repository root: bash results/2026-11-26-h200x2-unpack-beside/backoff.sh BINDIR OUT
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/backoff-bins; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
mpi=(mpirun --bind-to none -np 2)
for round in 1 2; do for b in new after-b256 beside-b256 beside-b1000; do
    echo "=== sweep-$b-$round"
    timeout 150 "${mpi[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round" > "$out/sweep-$b-$round.txt" 2>&1
    echo "rc $?"; grep -E "ipc" "$out/sweep-$b-$round.txt"
done; done
for b in new after-b256 beside-b256; do
    echo "=== stencil-$b"
    timeout 100 "${mpi[@]}" $bin/$b stencil --backend cuda --transport ipc --grid 1024x512x512 \
        --procs 2x1x1 --periodic x --type f64 --steps 20 --exchange-reps 20 \
        --json "$out/stencil-$b.json" > "$out/stencil-$b.txt" 2>&1
    echo "rc $?"; grep -E "step median|compute alone|verified" "$out/stencil-$b.txt"
done
date -u
