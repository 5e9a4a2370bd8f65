"""Fused mode from Python: a 7-point Jacobi on a periodic 3-D grid whose own CuPy kernel stores
each boundary cell it computes straight into the neighbours' halos, through haloport's device
header (haloport_device.h, shipped in the package: haloport.include_dir()). No pack or unpack
runs: haloport allocates the two fields (Exchange.fuse: they are mapped into the neighbours)
and only signals around this program's kernels, on this program's own stream:

    ex.fused_start(to)      the neighbours are done reading the halos of field `to`
    boundary kernel         v = stencil(u), haloport_box_store_f64 into the neighbours'
                            halos through the messages its block's box feeds
                            (haloport_box_begin), then haloport_box_done
    interior kernel         v = stencil(u) where no neighbour needs the cell
    ex.fused_finish(to)     every cell of v's halos arrived

One ordinary exchange fills u's halos before the first step. Every rank compares its part bit
for bit with NumPy stepping the whole grid (the same sum, in the same order; the kernels built
with --fmad=false), prints PASS or FAIL, and the program exits non-zero on a mismatch. The CUDA
C++ twin is examples/cuda/fused.cu. Fused mode needs every neighbour device-direct: transport
ipc, every rank on one node.

    mpirun -np 2 python examples/python/fused_cupy.py --grid 64x48x40 --steps 20
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import haloport

KERNELS = r"""
#include <haloport_device.h>

/* One block's box of boundary cells, in allocated indices: [lo, hi). */
struct Tile {
    uint32_t lo[3], hi[3];
};

/* The mean of cell c and its 6 face neighbours, summed in the order NumPy sums below. */
__device__ __forceinline__ double stencil(const double *u, long long c, long long sy, long long sz) {
    return (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) * (1.0 / 7.0);
}

/* One block per tile of the boundary layer: each thread computes some of its cells, writes
 * them and stores them into the neighbours' halos; then every thread of the block reports the
 * tile's cells. */
extern "C" __global__ void boundary(const haloport_fused *out, const Tile *tiles, const double *u,
                                    double *v, long long ax, long long ay) {
    __shared__ haloport_box_targets targets;
    const Tile t = tiles[blockIdx.x];
    haloport_box_begin(out, t.lo, t.hi, &targets);
    uint32_t ex = t.hi[0] - t.lo[0], ey = t.hi[1] - t.lo[1], ez = t.hi[2] - t.lo[2];
    for (uint32_t i = threadIdx.x; i < ex * ey * ez; i += blockDim.x) {
        uint32_t x = t.lo[0] + i % ex, y = t.lo[1] + (i / ex) % ey, z = t.lo[2] + i / (ex * ey);
        long long c = x + ax * (y + ay * (long long)z);
        double value = stencil(u, c, ax, ax * ay);
        v[c] = value;
        haloport_box_store_f64(&targets, x, y, z, value);
    }
    haloport_box_done(&targets);
}

/* The cells inside the boundary layer, one thread each: no neighbour needs them. */
extern "C" __global__ void interior(const double *u, double *v, long long ax, long long ay,
                                    long long nx, long long ny, long long nz) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= nx * ny * nz) return;
    long long x = 2 + i % nx, y = 2 + (i / nx) % ny, z = 2 + i / (nx * ny);
    long long c = x + ax * (y + ay * z);
    v[c] = stencil(u, c, ax, ax * ay);
}
"""


def initial(gx, gy, gz):
    """The value of the cell at global coordinates gx, gy, gz."""
    return ((gx * 7 + gy * 13 + gz * 17) % 23) * 0.25


def boundary_tiles(n):
    """The boundary layer of a part of n = (nx, ny, nz) cells (each at least 3) starting at
    allocated index 1, as six disjoint boxes (the z faces whole, the y faces between them, the
    x faces between those), each cut into tiles of at most 16 x 16 cells across its wide
    dimensions: rows of (lo x, y, z, hi x, y, z)."""
    nx, ny, nz = n
    boxes = [
        ((1, 1, 1), (1 + nx, 1 + ny, 2)),
        ((1, 1, nz), (1 + nx, 1 + ny, nz + 1)),
        ((1, 1, 2), (1 + nx, 2, nz)),
        ((1, ny, 2), (1 + nx, ny + 1, nz)),
        ((1, 2, 2), (2, ny, nz)),
        ((nx, 2, 2), (nx + 1, ny, nz)),
    ]
    tiles = []
    for lo, hi in boxes:
        for z in range(lo[2], hi[2], 16):
            for y in range(lo[1], hi[1], 16):
                for x in range(lo[0], hi[0], 16):
                    tiles.append((x, y, z, min(x + 16, hi[0]), min(y + 16, hi[1]), min(z + 16, hi[2])))
    return np.array(tiles, dtype=np.uint32)


def reference(grid, steps):
    """The whole periodic grid stepped by NumPy, (z, y, x)."""
    nx, ny, nz = grid
    gz, gy, gx = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    u = initial(gx, gy, gz).astype(np.float64)
    for _ in range(steps):
        total = u + np.roll(u, 1, axis=2)
        for shift, axis in ((-1, 2), (1, 1), (-1, 1), (1, 0), (-1, 0)):
            total = total + np.roll(u, shift, axis=axis)
        u = total * (1.0 / 7.0)
    return u


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", default="64x48x40", help="NXxNYxNZ")
    parser.add_argument("--steps", type=int, default=20, help="steps, the first a warm-up")
    args = parser.parse_args()
    grid = tuple(int(n) for n in args.grid.split("x"))
    if args.steps < 1:
        parser.error("--steps: at least 1")
    import cupy

    comm = MPI.COMM_WORLD
    domain = haloport.Domain(grid, dtype="float64", halo=1, periodic=True, neighbourhood="faces")
    with haloport.Exchange(comm, domain, backend="cuda", transport="ipc") as ex:
        if comm.allreduce(min(ex.local) < 3, op=MPI.LOR):
            if comm.rank == 0:
                print(f"FAIL: every rank's part must be at least 3 cells wide; grid {args.grid} over {comm.size} ranks is too small")
            return 2
        cupy.cuda.Device(ex.device).use()
        stream = cupy.cuda.Stream(non_blocking=True)
        stream.use()
        module = cupy.RawModule(
            code=KERNELS, options=("--fmad=false", "-I" + haloport.include_dir())
        )
        boundary, interior = module.get_function("boundary"), module.get_function("interior")

        # The two fields, allocated by haloport: set 0 is u, set 1 is v.
        sets = ex.fuse(2)
        fields = [cupy.asarray(s[0]) for s in sets]
        (ax, ay, _), (ox, oy, oz), (nx, ny, nz) = ex.alloc, ex.origin, ex.local
        gz, gy, gx = np.meshgrid(
            np.arange(oz, oz + nz), np.arange(oy, oy + ny), np.arange(ox, ox + nx), indexing="ij"
        )
        ex.interior(fields[0])[...] = cupy.asarray(initial(gx, gy, gz).astype(np.float64))
        ex.exchange(fields[0], stream=stream)  # u's halos, once

        tiles = cupy.asarray(boundary_tiles(ex.local))
        inner = (nx - 2) * (ny - 2) * (nz - 2)
        sizes = (np.int64(ax), np.int64(ay))
        inner_sizes = (np.int64(nx - 2), np.int64(ny - 2), np.int64(nz - 2))

        def step(s):
            frm, to = s % 2, 1 - s % 2
            out = ex.fused_start(to, stream)
            boundary((len(tiles),), (256,), (np.uint64(out[0]), tiles, fields[frm], fields[to], *sizes))
            if inner > 0:
                interior(((inner + 255) // 256,), (256,), (fields[frm], fields[to], *sizes, *inner_sizes))
            ex.fused_finish(to, stream)

        step(0)  # the warm-up: the kernels loaded
        stream.synchronize()
        comm.Barrier()
        started = time.perf_counter()
        for s in range(1, args.steps):
            step(s)
        stream.synchronize()
        seconds = time.perf_counter() - started
        ex.wait()  # reports a wait on the device that gave up, naming the neighbour and halo
        mine = cupy.asnumpy(ex.interior(fields[args.steps % 2]))

    want = reference(grid, args.steps)[oz : oz + nz, oy : oy + ny, ox : ox + nx]
    mismatches = comm.allreduce(int(np.count_nonzero(mine.view(np.uint64) != want.view(np.uint64))))
    if comm.rank == 0:
        per_step = seconds / (args.steps - 1) * 1e6 if args.steps > 1 else 0.0
        print(
            f"fused_cupy.py: {comm.size} rank(s), grid {args.grid}, {args.steps} steps (the first a warm-up) in "
            f"fused mode, the boundary kernel storing into the neighbours' halos: {per_step:.1f} us per step"
        )
        if mismatches == 0:
            print("PASS: bit for bit equal to NumPy stepping the whole grid")
        else:
            print(f"FAIL: {mismatches} cells differ from NumPy stepping the whole grid")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    code = main()
    sys.exit(MPI.COMM_WORLD.allreduce(code, op=MPI.MAX))
