#!/usr/bin/env python3
"""Where an iteration's time goes, from the per-block timestamps a sweep records (rank 0, host
clock, microseconds from the iteration's start): for each device-direct variant and workload, the
median of the last run's iterations by duration: when the host's launches returned (the library
queues two: pack, then unpack), the grid blocks' first pack start and last pack end, first unpack
start (after its wait for the data) and last unpack end, when the host saw the kernels done, and
the barrier.
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
    print("| workload | variant | iteration | launches | pack | unpack | kernels seen done | barrier |")
    print("| --- | --- | ---: | ---: | --- | --- | ---: | ---: |")
    for r in sweep["results"]:
        if not r["variant"].startswith(("ipc-", "lib-")) or not r.get("timelines"):
            continue
        its = sorted(r["timelines"][-1], key=lambda it: it["duration_us"])
        it = its[len(its) // 2]
        at = lambda kind: [e["at_us"] for e in it["cpu"] if e["kind"] == kind]
        blocks = it["blocks"]
        span = lambda key: (
            f"{min(b[key][0] for b in blocks):.1f}-{max(b[key][1] for b in blocks):.1f}"
            if blocks
            else "-"
        )
        last = lambda kind: fmt(at(kind)[-1] if at(kind) else None)
        print(
            f"| {r['workload']} | {r['variant']} | {it['duration_us']:.1f} | "
            f"{', '.join(fmt(t) for t in at('launch')) or '-'} | {span('pack_us')} | "
            f"{span('unpack_us')} | {last('kernels-done')} | {last('barrier')} |"
        )
    print()
