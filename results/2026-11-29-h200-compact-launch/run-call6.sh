#!/usr/bin/env bash
# Call 6: the 7-point stencil's march with an L2 prefetch, as the 27-point march64 has
# (m7-prefetch.diff): base (93d6046 with stages.diff, which does not touch the stencil), pf32
# (tiles 4 x 1 x 32, 2 planes ahead), pf8 (tiles 4 x 1 x 8, 2 planes ahead). 512^3 on 1 rank,
# f64 and f32, the 7-point stencil, and the 27-point beside it (base and pf8), 2 rounds.
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-call6.sh
#   carry/bins.tar.xz: haloport-base, haloport-pf32, haloport-pf8. Output: $OUT/call6-log.txt,
#   $OUT/call6.tgz.
set -uo pipefail
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin" HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0
top=$OUT; out=/tmp/call6; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call6-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
    grep -E "step median|compute alone|copy|verified" "$out/$name.txt" | head -6
}
for round in 1 2; do
    for build in base pf32 pf8; do
        for type in f64 f32; do
            step s7-$type-$build-$round 120 $bin/haloport-$build stencil --backend cuda \
                --grid 512x512x512 --type $type --stencil 7 --steps 20 --exchange-reps 5 \
                --json "$out/s7-$type-$build-$round.json"
        done
    done
    for build in base pf8; do
        step s27-f64-$build-$round 120 $bin/haloport-$build stencil --backend cuda \
            --grid 512x512x512 --type f64 --steps 20 --exchange-reps 5 \
            --json "$out/s27-f64-$build-$round.json"
    done
done
date -u
tar czf "$top/call6.tgz" -C /tmp call6
