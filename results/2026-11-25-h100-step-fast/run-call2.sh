#!/usr/bin/env bash
# The second device call of issue 23: the kernel-variant bench (step_bench), then two builds of
# haloport and its CUDA conformance suite, A (HP_MARCH_COLS 1: a column a thread) and B
# (HP_MARCH_COLS 2: two columns 32 apart), each verified (conformance, every stencil run bit
# for bit against one rank) and timed: haloport stencil 512^3 f64 and f32, the march form in
# two rounds with A and B interleaved, the point form once.
# usage: run-call2.sh DIR OUT   (DIR holds step_bench and bins.tar.xz with A/ and B/)
set -uo pipefail
dir=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export HALOPORT_REQUIRE_GPU=1
log() { local name=$1; shift; echo "=== $* (> $name)"; timeout "${T:-60}" "$@" > "$out/$name" 2>&1 || echo "FAILED($?): $*"; grep -E "compute alone|verified|test result" "$out/$name"; }
nvidia-smi -L | tee "$out/gpu.txt"
T=60 log bench.csv "$dir/step_bench" 512 15
tar -xJf "$dir/bins.tar.xz" -C /tmp
for v in A B; do
    log "conformance-$v.txt" /tmp/$v/cuda-conformance --test-threads=1
    grep -E "stencil" "$out/conformance-$v.txt"
done
st() { local v=$1 type=$2 form=$3 tag=$4
    T=40 log "stencil-$v-$type-$form-$tag.txt" /tmp/$v/haloport stencil --backend cuda \
        --grid 512x512x512 --type "$type" --steps 20 --exchange-reps 20 \
        --stencil-form "$form" --json "$out/stencil-$v-$type-$form-$tag.json"; }
for round in 1 2; do
    for type in f64 f32; do
        for v in A B; do st $v $type march $round; done
    done
done
for type in f64 f32; do st A $type points 1; done
