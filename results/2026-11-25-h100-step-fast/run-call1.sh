#!/usr/bin/env bash
# One device call (issue 23): the kernel-variant bench (step_bench, f64 and f32 against a copy
# of the same field), the stencil conformance of the CUDA suite, and haloport stencil 512^3
# march and points in f64 and f32 (compute against the copy engine in the same run).
# usage: run-call1.sh DIR OUT   (DIR holds haloport, cuda-conformance, step_bench)
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export HALOPORT_REQUIRE_GPU=1
log() { local name=$1; shift; echo; echo "=== $* (> $name)"; timeout "${T:-100}" "$@" > "$out/$name" 2>&1 || echo "FAILED($?): $*"; tail -n 4 "$out/$name"; }
nvidia-smi -L | tee "$out/gpu.txt"
T=60 log bench.csv "$dir/step_bench" 512 15
sort -t, -k3 -n "$out/bench.csv" | head -5
T=${CONF_T:-90} log conformance.txt "$dir/cuda-conformance" ${CONF_FILTER:-} --test-threads=1
grep -E "stencil|test result" "$out/conformance.txt"
for type in f64 f32; do
    for form in march points; do
        T=40 log "stencil-$type-$form.txt" "$dir/haloport" stencil --backend cuda \
            --grid 512x512x512 --type "$type" --steps 20 --exchange-reps 20 \
            --stencil-form "$form" --json "$out/stencil-$type-$form.json"
    done
done
