#!/usr/bin/env python3
"""lib-tq-ipc's median over ipc-tq's in each sweep of a call's log (the sweeps' headline rows).
usage: tables.py CALL-log.txt [...]"""
import re
import sys

for path in sys.argv[1:]:
    print(f"## {path}\n")
    print("| sweep | small | thesis-9 | thesis-27 | large |")
    print("| --- | ---: | ---: | ---: | ---: |")
    name, medians = None, {}

    def flush():
        if name and medians:
            cells = []
            for w in ("small", "thesis-9", "thesis-27", "large"):
                ipc, lib = medians.get((w, "ipc-tq")), medians.get((w, "lib-tq-ipc"))
                cells.append(f"{lib:.1f} / {ipc:.1f} = {lib / ipc:.2f}" if ipc and lib else "-")
            print(f"| {name} | " + " | ".join(cells) + " |")

    for line in open(path):
        if line.startswith("=== "):
            flush()
            name, medians = line[4:].split(":")[0].strip(), {}
            continue
        m = re.match(r"\| (\S+) \| (ipc-tq|lib-tq-ipc) \| ([0-9.]+) \|", line)
        if m:
            medians[(m.group(1), m.group(2))] = float(m.group(3))
    flush()
    print()
