#!/usr/bin/env python3
"""Per workload and round, each build's median us of ipc-tq and lib-tq-ipc and their ratio, from
the sweeps of a call directory. usage: ratios.py CALL_DIR BUILD... (reads
CALL_DIR/sweep-BUILD-ROUND/sweep.json.gz)"""
import gzip
import json
import sys
from pathlib import Path

call, builds = Path(sys.argv[1]), sys.argv[2:]


def medians(build, round_):
    path = call / f"sweep-{build}-{round_}" / "sweep.json.gz"
    if not path.exists():
        return None
    with gzip.open(path, "rt") as f:
        sweep = json.load(f)
    return {(r["workload"], r["variant"]): r["median_us"] for r in sweep["results"]}


rounds = sorted({int(p.name.rsplit("-", 1)[1]) for p in call.glob("sweep-*-*") if p.is_dir()})
sweeps = {(b, n): medians(b, n) for b in builds for n in rounds}
print("| workload | round | " + " | ".join(f"{b}: ipc-tq, lib-tq-ipc, ratio" for b in builds) + " |")
print("| --- | ---: | " + " | ".join("---" for _ in builds) + " |")
for workload in ["small", "thesis-9", "thesis-27", "large"]:
    if not any((workload, "lib-tq-ipc") in (m or {}) for m in sweeps.values()):
        continue
    for n in rounds:
        cells = []
        for b in builds:
            m = sweeps[(b, n)] or {}
            ipc, lib = m.get((workload, "ipc-tq")), m.get((workload, "lib-tq-ipc"))
            cells.append(f"{ipc:.1f}, {lib:.1f}, **{lib / ipc:.2f}**" if ipc and lib else "-")
        print(f"| {workload} | {n} | " + " | ".join(cells) + " |")
