#!/usr/bin/env bash
# Issue 23, call 4 on two H200s, an experiment: what the second system-scope fence of a
# message's last pack block costs (the block that counted the message's blocks fences again
# before it raises the peer's arrival flag). haloport-nofence2 is this directory's build
# without that fence (not kept: without it the flag no longer orders the other blocks'
# stores), against the build with it, interleaved, three rounds, one rank a GPU: sweeps of
# ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs).
# usage, from the repository root: bash results/2026-11-29-h200-lib-blocks/run-call4.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with ./haloport and ./haloport-nofence2.
#   Output in OUT/call4.tgz and OUT/call4-log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/call4; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/call4-log.txt") 2>&1
date -u; nvidia-smi -L
sweep() { # NAME BINARY EXTRA_ARGS...
    local name=$1 exe=$2 t0=$SECONDS; shift 2
    echo "=== $name: $exe $*"
    timeout 120 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -np 2 \
        $bin/$exe sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9,thesis-27,large --runs 20 "$@" --out "$out/$name" \
        > "$out/$name.txt" 2>&1
    echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "ipc" "$out/$name.txt" | head -8
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3; do
    sweep two-with-$round haloport
    sweep two-nofence2-$round haloport-nofence2
done
date -u
tar czf "$top/call4.tgz" -C "$top" call4 && rm -rf "$out"
