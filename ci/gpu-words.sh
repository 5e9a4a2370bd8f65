#!/usr/bin/env bash
# The region kernels' 1- and 2-byte words on one GPU: the CUDA conformance suite (pack, unpack
# and paired regions in words of 8, 4, 2 and 1 bytes), then pack-bench 512^3 f64 and the
# 1-rank stencil before (BEFORE_BIN) and after, interleaved, to show the new kernel branches
# cost the 8-byte paths nothing. Outputs into OUT/words.tgz.
# usage: ci/gpu-words.sh DIR OUT [BEFORE_BIN]
set -uo pipefail
dir=$(cd "${1:?usage: ci/gpu-words.sh DIR OUT [BEFORE_BIN]}" && pwd)
out=${2:?OUT}
before=${3:-}
work=$(mktemp -d)
export HALOPORT_REQUIRE_GPU=1
status=0
log() { local name=$1; shift; echo "=== $* (> $name)"; "$@" > "$work/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; grep -E "test result|^  6 faces, (pack|unpack) kernel \(one launch\)|step median|verified" "$work/$name" | head -n 6; }
nvidia-smi -L
log conformance.txt "$dir/cuda-conformance" --test-threads=1
for round in 1 2; do
    for which in before after; do
        bin="$dir/haloport"; [ "$which" = before ] && bin=$before
        [ -n "$bin" ] || continue
        log "packbench-$which-$round.txt" "$bin" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64
    done
done
log stencil-after.txt "$dir/haloport" stencil --backend cuda --grid 512x512x512 --type f64 --steps 20 --exchange-reps 20
tar czf "$out/words.tgz" -C "$work" .
if [ $status -eq 0 ]; then echo "gpu-words: all passed"; else echo "gpu-words: FAILURES above"; fi
exit $status
