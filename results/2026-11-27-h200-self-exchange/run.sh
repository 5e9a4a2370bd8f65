#!/usr/bin/env bash
# Issue 23, for the next step on the exchange's exposed cost: ncu's duration and DRAM traffic of
# every kernel of the 512^3 stencil's self exchange on one rank (periodic: 26 local messages,
# each packed into the rank's own receive slot and unpacked from it), f64 and f32, and of the
# stencil's other kernels in the same steps (ncu serializes kernels: no overlap, so the shell's
# tiles all run before the ready word and the fix-up takes them all).
# usage, from the repository root: bash results/2026-11-27-h200-self-exchange/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport. Writes OUT/job.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/self-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin haloport
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
for type in f64 f32; do
    timeout 250 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --launch-skip 14 --launch-count 40 --csv $bin/haloport stencil --backend cuda \
        --grid 512x512x512 --type $type --steps 6 --exchange-reps 1 --no-verify \
        > "$out/ncu-$type.csv" 2> "$out/ncu-$type.err"
    echo "rc $? $type"
    python3 - "$out/ncu-$type.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0].isdigit()]
by = collections.defaultdict(dict)
for r in rows:
    by[(int(r[0]), r[4])][r[-3]] = (r[-2], r[-1])
for (i, name), m in sorted(by.items()):
    print(i, name, "; ".join(f"{k} {v[1]} {v[0]}" for k, v in sorted(m.items())))
PY
done
date -u
