#!/usr/bin/env python3
"""Where an iteration's time goes, from the per-block timestamps a sweep records (rank 0, host
clock, microseconds from the iteration's start): for each device-direct variant and workload, the
median of the last run's iterations by duration, with the launch, the blocks' first pack start,
last pack end, first unpack start and last unpack end (the GPU's own work, on the host clock),
when the host saw the kernels done, and the barrier. Variants that record no per-block times
(the library's) show the host's events only.
usage: timelines.py SWEEP_DIR [...]   (reads SWEEP_DIR/sweep.json or sweep.json.gz)"""
import gzip
import json
import sys
from pathlib import Path


def load(directory):
    path = Path(directory) / "sweep.json"
    if path.exists():
        return json.loads(path.read_text())
    with gzip.open(str(path) + ".gz", "rt") as f:
        return json.load(f)


def fmt(value):
    return "-" if value is None else f"{value:.1f}"


for directory in sys.argv[1:]:
    sweep = load(directory)
    print(f"## {directory}\n")
    print("| workload | variant | iteration | launch | pack | unpack | kernels seen done | barrier |")
    print("| --- | --- | ---: | ---: | --- | --- | ---: | ---: |")
    for r in sweep["results"]:
        if not r["variant"].startswith(("ipc-", "lib-")) or not r.get("timelines"):
            continue
        its = sorted(r["timelines"][-1], key=lambda it: it["duration_us"])
        it = its[len(its) // 2]
        cpu = {e["kind"]: e["at_us"] for e in it["cpu"]}
        blocks = it["blocks"]
        span = lambda key: (
            f"{min(b[key][0] for b in blocks):.1f}-{max(b[key][1] for b in blocks):.1f}"
            if blocks
            else "-"
        )
        print(
            f"| {r['workload']} | {r['variant']} | {it['duration_us']:.1f} | "
            f"{fmt(cpu.get('launch'))} | {span('pack_us')} | {span('unpack_us')} | "
            f"{fmt(cpu.get('kernels-done'))} | {fmt(cpu.get('barrier'))} |"
        )
    print()
