#!/usr/bin/env python3
"""lib-tq-ipc / ipc-tq, median us, per workload, configuration and round.
usage: ratios.py DIR CONFIG...   (DIR holds CONFIG-ROUND/sweep.json.gz)"""
import gzip
import json
import sys
from pathlib import Path

top, configs = Path(sys.argv[1]), sys.argv[2:]
rows = {}
for config in configs:
    for d in sorted(top.glob(f"{config}-[0-9]")):
        with gzip.open(d / "sweep.json.gz", "rt") as f:
            sweep = json.load(f)
        med = {(r["workload"], r["variant"]): r["median_us"] for r in sweep["results"]}
        for w in dict.fromkeys(r["workload"] for r in sweep["results"]):
            ipc, lib = med[(w, "ipc-tq")], med[(w, "lib-tq-ipc")]
            rows.setdefault(w, {}).setdefault(config, []).append(f"{lib:.1f}/{ipc:.1f} = **{lib / ipc:.2f}**")
print("| workload | " + " | ".join(configs) + " |")
print("| --- |" + " --- |" * len(configs))
for w, by in rows.items():
    print(f"| {w} | " + " | ".join(", ".join(by.get(c, [])) for c in configs) + " |")
