#!/usr/bin/env bash
# Two builds of haloport on one GPU, interleaved: pack-bench of a 512^3 f64 field (halo 1) and
# the 27-point stencil's step at 512^3 f64 (rows of 516, plain and --graph), each build run in
# turn ROUNDS times, every run verified. For a change that must not move the GPU figures: the
# table compares each build's medians with the first's, measured in the same job.
#
# usage: bench/gpu-compare-builds.sh BEFORE AFTER OUT [ROUNDS]
#   BEFORE, AFTER: haloport binaries built with --features cuda; OUT: where the JSON, logs and
#   the table (compare.md) go; ROUNDS: 3 by default.
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-3}
mkdir -p "$out"
mpi=(mpirun --allow-run-as-root -np 1)
nvidia-smi -L > "$out/gpu.txt" 2>&1 || true
for r in $(seq 1 "$rounds"); do
    for build in before after; do
        bin=$before
        [ "$build" = after ] && bin=$after
        "${mpi[@]}" "$bin" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 \
            --json "$out/pack-$build-$r.json" > "$out/pack-$build-$r.log" 2>&1
        for mode in plain graph; do
            graph=()
            [ "$mode" = graph ] && graph=(--graph)
            "${mpi[@]}" "$bin" stencil --backend cuda --grid 512x512x512 --type f64 --pad 2,0,0 \
                --steps 20 --exchange-reps 20 "${graph[@]}" \
                --json "$out/stencil-$mode-$build-$r.json" > "$out/stencil-$mode-$build-$r.log" 2>&1
        done
    done
done
python3 - "$out" "$rounds" <<'EOF' | tee "$out/compare.md"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)
def pack_rows(d):
    rows = {r["what"]: r["median_us"] for r in d["rows"]}
    return (rows["6 faces, pack kernel (one launch)"], rows["6 faces, unpack kernel (one launch)"])
figures = {}
for build in ("before", "after"):
    for r in range(1, rounds + 1):
        p = load(f"pack-{build}-{r}")
        assert p["verified"], f"pack-{build}-{r} not verified"
        pack, unpack = pack_rows(p)
        figures.setdefault(("pack-bench: 6 faces pack", build), []).append(pack)
        figures.setdefault(("pack-bench: 6 faces unpack", build), []).append(unpack)
        for mode in ("plain", "graph"):
            s = load(f"stencil-{mode}-{build}-{r}")
            assert s["verified"], f"stencil-{mode}-{build}-{r} not verified"
            figures.setdefault((f"stencil {mode}: step", build), []).append(s["step_median_us"])
            figures.setdefault((f"stencil {mode}: compute alone", build), []).append(
                s["compute_median_us"])
print(f"Medians of each run, us ({rounds} rounds, builds interleaved; every run verified)\n")
print("| figure | before | after | after / before (median of runs) |")
print("| --- | --- | --- | ---: |")
for what in dict.fromkeys(k[0] for k in figures):
    b, a = figures[(what, "before")], figures[(what, "after")]
    fmt = lambda v: ", ".join(f"{x:.1f}" for x in v)
    print(f"| {what} | {fmt(b)} | {fmt(a)} | {statistics.median(a) / statistics.median(b):.3f} |")
EOF
