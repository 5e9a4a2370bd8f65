#!/usr/bin/env bash
# Issue 23 on two GPUs: the sweep of ipc-tq and lib-*-ipc (one rank a GPU, with the barrier, two
# rounds) and the stencil's weak scaling, 512^3 f64 per GPU over ipc (on 2 ranks the process grid
# is 2x1x1, periodic: each rank's y and z neighbours are itself, now copied straight into its
# halos), plain and --graph, with this build (haloport) and the one before (haloport-base,
# 48fc944), interleaved.
# usage, from the repository root: bash results/2026-11-27-h200x2-local-copy/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport and haloport-base. Everything goes under OUT/job.
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/two-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin haloport haloport-base
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -np 2)
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
for round in 1 2; do
    step sweep-$round 200 "${mpi[@]}" $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$round"
    grep -E "ipc" "$out/sweep-$round.txt"
done
for mode in plain graph; do for build in base new; do
    exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=weak-$mode-$build
    step $name 200 "${mpi[@]}" $exe stencil --backend cuda --transport ipc --scaling weak \
        --grid 512x512x512 --steps 20 --exchange-reps 20 "${extra[@]}" --json "$out/$name.json"
    tail -6 "$out/$name.txt"
done; done
date -u
rm -rf "$out"/sweep-*/cells
# Added after the call: the device tool brings back a limited number of files, so pack them (the
# call ran without this line, and brought back 8 files: log.txt holds what the others printed).
tar czf "$2/job.tgz" -C "$2" job && rm -rf "$out"
