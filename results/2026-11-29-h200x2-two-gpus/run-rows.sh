#!/usr/bin/env bash
# Call 4 (one H200): with --placement auto (one rank: the f32 fields placed for the interior),
# f32 rows of a multiple of 4 elements (whose rows start at two 16-byte phases of a sector)
# beside rows of a multiple of 8 (every row on a sector): 512^3 with rows of 516 and 520, plain
# and --graph, and 256^3 with rows of 260 and 264, plain, two rounds.
# usage, from the repository root: bash results/2026-11-29-h200x2-two-gpus/run-rows.sh BINDIR OUT
#   BINDIR holds bins.tar.xz with haloport. Output in OUT/rows.tgz and OUT/rows-log.txt.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/rows; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin" HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/rows-log.txt") 2>&1
date -u; nvidia-smi -L
for round in 1 2; do
    for run in 512-516-plain 512-516-graph 512-520-plain 512-520-graph 256-260-plain 256-264-plain; do
        IFS=- read -r n rows mode <<< "$run"
        extra=(); [ $mode = graph ] && extra=(--graph)
        name=f32-$run-$round
        timeout 100 $bin/haloport stencil --backend cuda --grid ${n}x${n}x${n} --type f32 \
            --pad $((rows - n - 2)),0,0 "${extra[@]}" --steps 20 --exchange-reps 20 \
            --json "$out/$name.json" > "$out/$name.txt" 2>&1
        echo "$name rc $?"
        python3 - "$out/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  step %.1f compute %.1f copy %.1f (%.0f %%) placement %s alloc %s verified %s" % (
    r["step_median_us"], r["compute_median_us"], r["copy_median_us"],
    100 * r["copy_median_us"] / r["compute_median_us"], r["placement"], r["alloc"], r["verified"]))
PY
    done
done
date -u
tar czf "$top/rows.tgz" -C "$top" rows && rm -rf "$out"
