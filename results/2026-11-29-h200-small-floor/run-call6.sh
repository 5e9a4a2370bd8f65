#!/usr/bin/env bash
# Call 6: this directory's commit (`new`) against the build before (f46b1c9, `base`) on two
# H200s, one rank a GPU: ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs),
# 3 rounds of the two builds interleaved; and the 2-rank stencil across the GPUs (256^3 f64,
# periodic in x: the one launch of 8-byte fields), verified.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call6.sh
#   carry/bins.tar.xz: haloport-base, haloport-new. Output: $OUT/call6-log.txt, $OUT/call6.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1
top=$OUT; out=/tmp/call6; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call6-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
step stencil-2gpu 60 "${mpi[@]}" $bin/haloport-new stencil --backend cuda --grid 256x256x256 \
    --periodic x --transport ipc --steps 10 --exchange-reps 10
grep -E "step median|verified" "$out/stencil-2gpu.txt"
for round in 1 2 3; do
    for build in base new; do
        name=$build-$round
        step $name 120 "${mpi[@]}" $bin/haloport-$build sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -8
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
python3 "$here/ratios.py" $out base new | tee "$top/call6-ratios.md"
date -u
tar czf "$top/call6.tgz" -C /tmp call6
