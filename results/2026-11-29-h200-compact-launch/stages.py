#!/usr/bin/env python3
"""Where the host's time goes before a device-direct launch returns (issue 23): the instrumented
build of host-stages.diff records a stage mark (a CPU event of kind "send", its block the stage)
at each step of the library's blocking exchange and around ipc-tq's launch. For each variant and
workload, the median over the last run's iterations of each mark's time, microseconds from the
iteration's start.
usage: stages.py SWEEP_DIR [...]   (reads SWEEP_DIR/sweep.json or sweep.json.gz)"""
import gzip
import json
import statistics
import sys
from pathlib import Path

NAMES = {
    0: "strategy entered",
    1: "exchange entered",
    2: "deadline",
    3: "capture checked",
    4: "status checked",
    5: "prepared",
    6: "arguments built",
    7: "launch returned",
    8: "event recorded",
    9: "exchange returned",
    10: "epoch",
    11: "tables looked up",
    12: "times, tables marked",
    13: "fused table found",
}


def load(directory):
    path = Path(directory) / "sweep.json"
    if path.exists():
        return json.loads(path.read_text())
    with gzip.open(str(path) + ".gz", "rt") as f:
        return json.load(f)


for directory in sys.argv[1:]:
    print(f"## {directory}\n")
    for r in load(directory)["results"]:
        if r["variant"] not in ("ipc-tq", "lib-tq-ipc") or not r.get("timelines"):
            continue
        marks = {}
        for it in r["timelines"][-1]:
            for e in it["cpu"]:
                key = ("stage", e["block"]) if e["kind"] == "send" else (e["kind"], None)
                marks.setdefault(key, []).append(e["at_us"])
        rows = sorted(marks.items(), key=lambda kv: statistics.median(kv[1]))
        text = ", ".join(
            f"{NAMES.get(b, b) if k == 'stage' else k} {statistics.median(v):.2f}"
            for (k, b), v in rows
        )
        print(f"- {r['workload']} {r['variant']}: {text}")
    print()
