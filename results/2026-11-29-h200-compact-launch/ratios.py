#!/usr/bin/env python3
"""lib-tq-ipc / ipc-tq, median us, per workload, build and round, from a call's sweeps.
usage: ratios.py CALL_DIR BUILD...   (CALL_DIR holds BUILD-ROUND/sweep-summary.json.gz: the sweep's JSON without its timelines)"""
import gzip
import json
import sys
from pathlib import Path

top, builds = Path(sys.argv[1]), sys.argv[2:]
rows = {}
for build in builds:
    for d in sorted(top.glob(f"{build}-[0-9]")):
        with gzip.open(d / "sweep-summary.json.gz", "rt") as f:
            sweep = json.load(f)
        med = {(r["workload"], r["variant"]): r["median_us"] for r in sweep["results"]}
        for w in dict.fromkeys(r["workload"] for r in sweep["results"]):
            ipc, lib = med[(w, "ipc-tq")], med[(w, "lib-tq-ipc")]
            rows.setdefault(w, {}).setdefault(build, []).append(f"{lib:.1f}/{ipc:.1f} = **{lib / ipc:.2f}**")
print("| workload | " + " | ".join(builds) + " |")
print("| --- |" + " --- |" * len(builds))
for w, by in rows.items():
    print(f"| {w} | " + " | ".join(", ".join(by.get(b, [])) for b in builds) + " |")
