"""Prints the table of results/2026-12-06-tune-on-one-gpu/README.md from the job's JSON files."""
import glob
import json
import os
import statistics

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "job")
runs = {}
for path in sorted(glob.glob(os.path.join(here, "stencil-*.json"))):
    name = os.path.basename(path)[len("stencil-"):-len(".json")].rsplit("-", 1)[0]
    runs.setdefault(name, []).append(json.load(open(path)))
print("| run | routes (same node / other node) | strategy | exchange us, rounds 1, 2 | step us, rounds 1, 2 | verified |")
print("| --- | --- | --- | --- | --- | --- |")
for name, results in runs.items():
    links = {}
    for r in results[0]["links"]:
        for l in r:
            links.setdefault(l["locality"], set()).add(l["link"])
    same = "/".join(sorted(links.get("same-node", links.get("not-asked", set()))))
    other = "/".join(sorted(links.get("other-node", links.get("not-asked", set()))))
    ex = ", ".join(f"{r['exchange_median_us']:.1f}" for r in results)
    st = ", ".join(f"{r['step_median_us']:.1f}" for r in results)
    ok = all(r["verified"] for r in results)
    print(f"| {name} | {same} / {other} | {results[0]['variant']} | {ex} | {st} | {ok} |")
best = {n: statistics.median(r["exchange_median_us"] for r in rs) for n, rs in runs.items()}
others = min(v for n, v in best.items() if n != "routes")
print(f"\nthe routes file's exchange against the fastest other run: {best['routes'] / others:.2f}")
