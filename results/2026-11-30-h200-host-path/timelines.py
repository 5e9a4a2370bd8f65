#!/usr/bin/env python3
"""Host and device marks of ipc-tq and lib-tq-ipc per rank: medians over the measured
iterations of the last run (the sweep keeps their timelines), us from the iteration's start,
and the spans between them. usage: timelines.py SWEEP.json.gz [WORKLOAD...]"""
import gzip
import json
import statistics as st
import sys

sweep = json.load(gzip.open(sys.argv[1]))
workloads = sys.argv[2:] or ["small", "thesis-9"]
marks = ["launch", "pack0", "pack1", "unpack0", "unpack1", "done", "barrier", "dur"]
for variant in ["ipc-tq", "lib-tq-ipc"]:
    for workload in workloads:
        found = [r for r in sweep["results"] if r["variant"] == variant and r["workload"] == workload]
        if not found:
            continue
        r = found[0]
        rows = {}
        for rank, iterations in enumerate(r["timelines"]):
            for t in iterations:
                cpu = {e["kind"]: e["at_us"] for e in t["cpu"]}
                b = t["blocks"]
                values = {
                    "launch": cpu.get("launch"),
                    "pack0": min(x["pack_us"][0] for x in b),
                    "pack1": max(x["pack_us"][1] for x in b),
                    "unpack0": min(x["unpack_us"][0] for x in b),
                    "unpack1": max(x["unpack_us"][1] for x in b),
                    "done": cpu.get("kernels-done"),
                    "barrier": cpu.get("barrier"),
                    "dur": t["duration_us"],
                }
                for k, v in values.items():
                    if v is not None:
                        rows.setdefault((rank, k), []).append(v)
        n = len(rows.get((0, "dur"), []))
        print(f"{variant} {workload}: median {r['median_us']:.2f} us, {n} timelines a rank")
        for rank in (0, 1):
            med = {k: st.median(rows[(rank, k)]) for k in marks if (rank, k) in rows}
            spans = " ".join(
                f"{b}-{a}={med[b] - med[a]:.2f}" for a, b in zip(marks, marks[1:]) if a in med and b in med
            )
            print(f"  rank {rank}: " + " ".join(f"{k}={v:.2f}" for k, v in med.items()))
            print(f"          {spans}")
