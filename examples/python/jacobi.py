"""Jacobi sweeps of a 27-point stencil on a 3-D grid split over MPI ranks, halos exchanged by
haloport, verified against NumPy computing the whole grid on rank 0.

    mpirun -np 4 python examples/python/jacobi.py                      # NumPy, host backend
    mpirun -np 2 python examples/python/jacobi.py --backend cuda --transport ipc   # CuPy

Every rank owns a part of the grid (periodic in x and z, a fixed boundary in y by default) in
an array with a halo of one cell: NumPy arrays on the host backend, CuPy arrays on CUDA. Each
step starts the exchange, updates the cells whose neighbours are all its own, finishes the
exchange, updates the cells next to the halos, and waits. The update is this program's own
array code: each cell becomes the mean of itself and its 26 neighbours. Rank 0 then computes
the same steps alone over the whole grid with NumPy, its boundary and wrap-around written out
by hand (sharing nothing with haloport), and compares every cell.
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import haloport

OFFSETS = [(dz, dy, dx) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]


def initial(gx, gy, gz, dtype):
    """The value of the cell at global coordinates gx, gy, gz (any integers: cells outside a
    fixed boundary keep theirs forever)."""
    return (((gx * 7 + gy * 13 + gz * 29) % 31) / 31.0 + 0.001 * gy).astype(dtype)


def update(src, dst, box):
    """dst[box] = the mean of each cell of box and its 26 neighbours in src. box is
    ((z0, z1), (y0, y1), (x0, x1)) in array coordinates; the sum runs in the same order
    everywhere, so ranks and the reference agree to the bit."""
    (z0, z1), (y0, y1), (x0, x1) = box
    if z1 <= z0 or y1 <= y0 or x1 <= x0:
        return
    total = None
    for dz, dy, dx in OFFSETS:
        part = src[z0 + dz : z1 + dz, y0 + dy : y1 + dy, x0 + dx : x1 + dx]
        total = part.copy() if total is None else total + part
    dst[z0:z1, y0:y1, x0:x1] = total / 27


def inner_and_shell(ex):
    """The box of interior cells whose neighbours are all interior, and the boxes of the
    interior cells next to the halos (array coordinates, z first)."""
    lo = ex.halo_lo[::-1]
    n = ex.local[::-1]
    whole = [(lo[k], lo[k] + n[k]) for k in range(3)]
    inner = [(lo[k] + 1, lo[k] + n[k] - 1) for k in range(3)]
    if any(b >= e for b, e in inner):
        return None, [whole]
    shell = []
    for k in range(3):
        # Slabs along dimension k: the first and last layer, within the box not yet covered.
        for layer in ((whole[k][0], inner[k][0]), (inner[k][1], whole[k][1])):
            box = [inner[j] if j < k else whole[j] for j in range(3)]
            box[k] = layer
            shell.append(tuple(box))
    return tuple(inner), shell


def reference(args, dtype):
    """The whole grid, stepped by NumPy alone. Each step surrounds it with a ring of ghost
    cells: along a periodic dimension a ghost holds the cell it wraps to, and a ghost outside
    a fixed boundary (in any dimension) keeps its initial value."""
    nx, ny, nz = args.grid
    gz, gy, gx = np.meshgrid(
        np.arange(-1, nz + 1), np.arange(-1, ny + 1), np.arange(-1, nx + 1), indexing="ij"
    )
    fixed = initial(gx, gy, gz, dtype)
    index, inside = [], []
    for n, periodic in ((nz, args.periodic[2]), (ny, args.periodic[1]), (nx, args.periodic[0])):
        i = np.arange(-1, n + 1)
        index.append(np.mod(i, n) if periodic else np.clip(i, 0, n - 1))
        inside.append(periodic | ((i >= 0) & (i < n)))
    inside = inside[0][:, None, None] & inside[1][None, :, None] & inside[2][None, None, :]
    grid = fixed[1:-1, 1:-1, 1:-1].copy()
    for _ in range(args.steps):
        ghosted = np.where(inside, grid[np.ix_(*index)], fixed)
        out = np.empty_like(ghosted)
        update(ghosted, out, ((1, nz + 1), (1, ny + 1), (1, nx + 1)))
        grid = out[1:-1, 1:-1, 1:-1]
    return grid


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="host", help="host (NumPy) or cuda (CuPy)")
    parser.add_argument("--transport", default="mpi", help="mpi or ipc")
    parser.add_argument("--grid", default="48x40x32", help="NXxNYxNZ")
    parser.add_argument("--periodic", default="xz", help="periodic dimensions, or none")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    args = parser.parse_args()
    args.grid = tuple(int(n) for n in args.grid.split("x"))
    args.periodic = tuple(d in args.periodic for d in "xyz")
    comm = MPI.COMM_WORLD
    if args.backend == "cuda":
        import cupy as xp

        to_host = xp.asnumpy
    else:
        xp = np
        to_host = np.asarray
    dtype = np.dtype(args.dtype)

    domain = haloport.Domain(args.grid, dtype=dtype, halo=1, periodic=args.periodic)
    with haloport.Exchange(comm, domain, backend=args.backend, transport=args.transport) as ex:
        if args.backend == "cuda":
            xp.cuda.Device(ex.device).use()
        # Every cell, halos included, starts from its global coordinates' value.
        (ax, ay, az), (ox, oy, oz), (lx, ly, lz) = ex.alloc, ex.origin, ex.halo_lo
        gz, gy, gx = np.meshgrid(
            np.arange(az) + oz - lz, np.arange(ay) + oy - ly, np.arange(ax) + ox - lx, indexing="ij"
        )
        u = xp.asarray(initial(gx, gy, gz, dtype))
        v = u.copy()
        inner, shell = inner_and_shell(ex)
        # The first step also compiles CuPy's kernels: steps are timed after it.
        synchronize = xp.cuda.Device().synchronize if args.backend == "cuda" else lambda: None
        comm.Barrier()
        started = time.perf_counter()
        for step in range(args.steps):
            ex.start(u)
            if inner is not None:
                update(u, v, inner)
            ex.finish()
            for box in shell:
                update(u, v, box)
            ex.wait()
            u, v = v, u
            if step == 0:
                synchronize()
                first_done = time.perf_counter()
        synchronize()
        if args.steps > 1:
            step_us = (time.perf_counter() - first_done) / (args.steps - 1) * 1e6
            per_step = f"{step_us:.1f} us per step after the first"
        else:
            per_step = "one step: none timed apart"
        mine = to_host(ex.interior(u))
        seconds = time.perf_counter() - started
        transports = sorted({n.transport for n in ex.neighbours})
        parts = comm.gather((ex.origin, mine), root=0)

    if comm.rank != 0:
        return 0
    whole = np.empty(args.grid[::-1], dtype=dtype)
    for (x, y, z), part in parts:
        nz, ny, nx = part.shape
        whole[z : z + nz, y : y + ny, x : x + nx] = part
    want = reference(args, dtype)
    exact = np.array_equal(whole, want)
    diff = float(np.max(np.abs(whole.astype(np.float64) - want)))
    tolerance = 1e-12 if dtype == np.float64 else 1e-5
    ok = exact or diff <= tolerance
    print(
        f"jacobi.py: {comm.size} rank(s), {args.backend} ({type(u).__module__.split('.')[0]} arrays), "
        f"transport {args.transport} (neighbours: {', '.join(transports)}), grid "
        f"{'x'.join(map(str, args.grid))} {args.dtype}, {args.steps} steps in {seconds:.3f} s "
        f"({per_step}): "
        + ("verified bit for bit against NumPy" if exact else f"max difference {diff:.3g}")
        + ("" if ok else " -- FAILED")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    code = main()
    # Every rank learns rank 0's verdict, so mpirun reports a failure whichever rank sees it.
    sys.exit(MPI.COMM_WORLD.bcast(code, root=0))
