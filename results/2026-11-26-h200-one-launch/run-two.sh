#!/usr/bin/env bash
# On two GPUs, one rank each: the committed build (haloport) against the build before
# (haloport-old, 5731ff3), and the library's cap of blocks per signalled region (16) raised to
# 32 and 64: the sweep of ipc-tq and lib-*-ipc (haloport-sb, HALOPORT_EXP_SB, for the caps) and
# the stencil 1024x512x512 f64, 2x1x1, periodic in x, --signalled-blocks 16, 32 and 64. Every
# run verified.
# usage, from the repository root: bash results/2026-11-26-h200-one-launch/run-two.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-old, haloport-sb
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/two-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m | head -4
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $?"
}
mpi=(mpirun --bind-to none -np 2 -x HALOPORT_REQUIRE_GPU)
sweep() { # NAME BINARY
    step "$1" 150 "${mpi[@]}" -x HALOPORT_EXP_SB $bin/$2 sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/$1"
    grep -E "ipc|error" "$out/$1.txt"
    rm -rf "$out/$1/cells"
}
export HALOPORT_EXP_SB=16
for round in 1 2; do
    sweep sweep-old-$round haloport-old
    sweep sweep-new-$round haloport
done
for sb in 32 64; do export HALOPORT_EXP_SB=$sb; sweep sweep-sb$sb haloport-sb; done
for b in haloport-old haloport; do for sb in 16 32 64; do
    [ $b = haloport-old ] && [ $sb != 16 ] && continue
    step stencil-$b-sb$sb 150 "${mpi[@]}" $bin/$b stencil --backend cuda --transport ipc \
        --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 --exchange-reps 20 \
        --signalled-blocks $sb
    grep -E "step median|compute alone|verified|error" "$out/stencil-$b-sb$sb.txt"
done; done
date -u
