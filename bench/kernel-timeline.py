#!/usr/bin/env python3
"""Prints a window of a kernel trace (bench/kernel-trace.c): the kernels of all ranks that
started within two steps from the STEP-th launch on rank 0 of kernel MARK (at its most common
grid: the step's, not the reference computation's), on the GPU's clock, in microseconds from
50 us before that launch.

usage: bench/kernel-timeline.py TRACE_DIR MARK [STEP]"""
import glob
import os
import sys


def main():
    folder = sys.argv[1]
    mark = sys.argv[2]
    step = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    kernels = []
    # Rank 0 gathers the fields and so launches the most kernels: its trace is the longest.
    files = sorted(glob.glob(os.path.join(folder, "trace.*")), key=os.path.getsize, reverse=True)
    for rank, path in enumerate(files):
        for line in open(path):
            start, end, stream, grid, name = line.split()[:5]
            kernels.append((int(start), int(end), rank, int(stream), int(grid), name))
    kernels.sort()
    grids = [k[4] for k in kernels if k[2] == 0 and k[5] == mark]
    if not grids:
        sys.exit(f"{folder}: rank 0 launched no {mark}")
    grid = max(set(grids), key=grids.count)
    marks = [k[0] for k in kernels if k[2] == 0 and k[5] == mark and k[4] == grid]
    if len(marks) < step + 3:
        sys.exit(f"{folder}: {len(marks)} launches of {mark}, too few for step {step}")
    first, last = marks[step] - 50_000, marks[step + 2]
    print(f"{'rank':>4} {'stream':>6} {'kernel':28} {'blocks':>7} {'start':>8} {'end':>8} {'us':>7}")
    for start, end, rank, stream, grid, name in kernels:
        if first <= start < last:
            print(f"{rank:>4} {stream:>6} {name:28} {grid:>7} {(start - first) / 1e3:8.1f} "
                  f"{(end - first) / 1e3:8.1f} {(end - start) / 1e3:7.1f}")


if __name__ == "__main__":
    main()
