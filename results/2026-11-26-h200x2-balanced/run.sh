#!/usr/bin/env bash
# Balanced blocks per region on two GPUs, one rank each: the sweep of ipc-tq and lib-*-ipc with
# haloport (2c9f8c5, balanced) and haloport-base (d54e9b1, 16 blocks a region), two rounds,
# interleaved.
# usage, from the repository root: bash results/2026-11-26-h200x2-balanced/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with both builds. Everything is written under OUT/two and packed
#   into OUT/two.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/two; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/balanced-two; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
for round in 1 2; do for b in haloport-base haloport; do
    echo "=== sweep-$b-$round"
    timeout 200 mpirun --bind-to none -np 2 -x HALOPORT_REQUIRE_GPU $bin/$b sweep \
        --backend cuda --variants ipc-tq,lib-base-ipc,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 20 --out "$out/sweep-$b-$round" \
        > "$out/sweep-$b-$round.txt" 2>&1; echo "rc $?"
    grep -E "ipc|error" "$out/sweep-$b-$round.txt" | head -14
    rm -rf "$out/sweep-$b-$round/cells"; gzip -9 "$out/sweep-$b-$round/sweep.json"
done; done
date -u
tar czf "$top/two.tgz" -C "$top" two && rm -rf "$out"
