#!/usr/bin/env bash
# `haloport plan` for one middle rank of jobs of 8 to 1,000,000 ranks on a 10000^3 f64 grid,
# halo 1, periodic: set-up time (median of 201 compilations) and the process's peak memory.
# usage: bash results/2026-11-25-plan-scaling-2x/run.sh [BIN] > table.md
bin=${1:-target/release/haloport}
echo "| ranks | process grid | cells per rank | messages | distinct peers | set-up (median) | peak memory |"
echo "| ---: | --- | --- | ---: | ---: | ---: | ---: |"
for p in 8 64 512 4096 32768 262144 1000000; do
    json=$(mktemp)
    "$bin" plan --ranks $p --rank $((p / 2 + 1)) --grid 10000x10000x10000 --repeat 201 --json "$json" > /dev/null
    python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
procs = "x".join(map(str, r["procs"])); local = "x".join(map(str, r["local"]))
print(f"| {r['ranks']} | {procs} | {local} | {len(r['neighbours'])} | {r['peers']} | {r['setup_us_median']:.1f} us | {r['peak_memory_bytes'] / 1e6:.1f} MB |")
PY
    rm -f "$json"
done
