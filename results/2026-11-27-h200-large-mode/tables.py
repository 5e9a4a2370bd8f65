#!/usr/bin/env python3
"""Per sweep directory (SWEEP/sweep.json.gz) under each DIR: the median iteration (us) of every
variant and workload, lib-tq-ipc over ipc-tq, whether every run verified, and for lib-tq-ipc on
large the spread of its pattern blocks' pack ends in the median iteration of the last run
(rank 0's timeline, us from the iteration's start).
usage: tables.py DIR...   (a call's directory, after `tar xzf callN.tgz -C callN`)"""
import gzip
import json
import sys
from pathlib import Path

for top in sys.argv[1:]:
    print(f"## {top}\n")
    print("| sweep | workload | ipc-tq | lib-tq-ipc | ratio | verified | large: pack ends |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for path in sorted(Path(top).glob("*/sweep.json.gz"),
                       key=lambda p: (len(p.parent.name), p.parent.name)):
        sweep = json.load(gzip.open(path, "rt"))
        results = [r for r in sweep["results"] if r["variant"] != "mpi-only"]
        verified = all(r["verified"] for r in results)
        for w in dict.fromkeys(r["workload"] for r in results):
            med = {r["variant"]: r for r in results if r["workload"] == w}
            ipc, lib = med["ipc-tq"]["median_us"], med["lib-tq-ipc"]["median_us"]
            spread = ""
            if w == "large" and med["lib-tq-ipc"].get("timelines"):
                its = sorted(med["lib-tq-ipc"]["timelines"][-1], key=lambda i: i["duration_us"])
                ends = [b["pack_us"][1] for b in its[len(its) // 2]["blocks"][1:]]
                spread = f"{min(ends):.0f}-{max(ends):.0f}"
            print(f"| {path.parent.name} | {w} | {ipc:.1f} | {lib:.1f} | {lib / ipc:.2f} | "
                  f"{verified} | {spread} |")
    print()
