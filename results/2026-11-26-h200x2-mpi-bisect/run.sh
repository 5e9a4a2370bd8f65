#!/usr/bin/env bash
# Two GPUs, one rank each: where the mpi (host-staged) step got slower between d49ba9d and today
# (on 4 x H200 its 2-GPU step went from 1016.7 to 1395.6 us), and the done word on two GPUs.
# The 27-point stencil 1024x512x512 f64, 2x1x1, periodic in x, y and z, over mpi with the builds
# in commit order (haloport-d49 d49ba9d, haloport-0d14bbb the prefetching march form,
# haloport-951f672 the abort word in device memory, haloport-base 98e9d24, haloport d54e9b1 the
# done word), then the first and the last again; the same over ipc for the first and the last;
# the sweep of ipc-tq and lib-*-ipc with haloport-base and haloport, device timestamps on.
# usage, from the repository root: bash results/2026-11-26-h200x2-mpi-bisect/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with the five builds. Everything is written under OUT/job and packed
#   into OUT/job.tgz (the device tool returns at most 8 files).
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/bisect-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
mpi=(mpirun --bind-to none -np 2 -x HALOPORT_REQUIRE_GPU)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|verified|error" "$out/$1.txt" | head -6
}
stencil() { # BUILD TRANSPORT ROUND
    local name=stencil-$2-$1-$3
    step $name 120 "${mpi[@]}" $bin/$1 stencil --backend cuda --transport $2 \
        --grid 1024x512x512 --procs 2x1x1 --periodic xyz --steps 20 --exchange-reps 20 \
        --json "$out/$name.json"
    show $name
}
for b in haloport-d49 haloport-0d14bbb haloport-951f672 haloport-base haloport; do
    stencil $b mpi 1
done
for b in haloport-d49 haloport; do stencil $b mpi 2; done
for b in haloport-d49 haloport; do stencil $b ipc 1; done
for b in haloport-base haloport; do
    step sweep-$b 200 "${mpi[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b"
    grep -E "ipc" "$out/sweep-$b.txt"
    rm -rf "$out/sweep-$b/cells"
done
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
