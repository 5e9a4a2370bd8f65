#!/usr/bin/env python3
"""lib-base-ipc and lib-tq-ipc over ipc-tq (medians) per workload, one line per sweep.
usage: sweep-ratios.py SWEEP.json.gz..."""
import gzip
import json
import sys

for path in sys.argv[1:]:
    sweep = json.load(gzip.open(path))
    med = {(r["workload"], r["variant"]): r["median_us"] for r in sweep["results"]}
    cells = []
    for w in dict.fromkeys(r["workload"] for r in sweep["results"]):
        ipc = med[(w, "ipc-tq")]
        ratios = ", ".join(f"{med[(w, v)] / ipc:.3f}" for v in ("lib-base-ipc", "lib-tq-ipc"))
        cells.append(f"{w} {ipc:.2f} us: {ratios}")
    print(path.split("/")[-2] + " | " + " | ".join(cells))
