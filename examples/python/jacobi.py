"""Jacobi sweeps of a 7-point stencil on a 3-D grid split over MPI ranks, halos exchanged by
haloport, verified against NumPy computing the whole grid on rank 0.

    mpirun -np 4 python examples/python/jacobi.py                      # NumPy, host backend
    mpirun -np 2 python examples/python/jacobi.py --backend cuda --transport ipc   # CuPy

Every rank owns a part of the grid (periodic in x and z, a fixed boundary in y by default) in
an array with a halo of one cell: NumPy arrays on the host backend, CuPy arrays on CUDA. The
update is this program's own code, the arithmetic of the C and CUDA examples
(examples/c/jacobi.c, examples/cuda/jacobi.cu): each cell becomes the mean of itself and its 6
face neighbours, ``(c + x- + x+ + y- + y+ + z- + z+) * (1/7)`` in that order. On CUDA it is
one ``cupy.RawKernel`` launched twice a step on this program's own stream: the cells whose
neighbours are all its own while the exchange is under way (between ``start`` and ``finish``),
then the cells next to the halos. Steps are queued back to back and waited for once, at the
end. Rank 0 then computes the same steps alone over the whole grid with NumPy, its boundary and
wrap-around written out by hand (sharing nothing with haloport), and compares every cell.

The time per step is measured as the C example measures it: from a barrier after one warm-up
step (which compiles the kernel and builds haloport's tables) to the stream's synchronization
after the last step.
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import haloport

# One thread per interior cell of a rank's part (extents lx, ly, lz) in an array of
# (az, ay, ax) cells with a halo of one; `shell` picks the cells next to the halos (1) or
# the others (0). The sum's order is the C example's and NumPy's below: results agree to the bit
# (no contraction into fused multiply-adds: --fmad=false).
KERNEL = r"""
extern "C" __global__ void jacobi7(const T *u, T *v, long long ax, long long ay, long long lx,
                                   long long ly, long long lz, int shell) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= lx * ly * lz) return;
    long long x = i % lx, y = (i / lx) % ly, z = i / (lx * ly);
    int inner = x > 0 && x + 1 < lx && y > 0 && y + 1 < ly && z > 0 && z + 1 < lz;
    if (inner == shell) return;
    long long sy = ax, sz = ax * ay;
    long long c = (x + 1) + sy * (y + 1) + sz * (z + 1);
    v[c] = (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) * (T)(1.0 / 7.0);
}
"""


def initial(gx, gy, gz, dtype):
    """The value of the cell at global coordinates gx, gy, gz (any integers: cells outside a
    fixed boundary keep theirs forever)."""
    return (((gx * 7 + gy * 13 + gz * 29) % 31) / 31.0 + 0.001 * gy).astype(dtype)


def update(src, dst, box):
    """dst[box] = the 7-point mean of each cell of box in src, summed in the kernel's order.
    box is ((z0, z1), (y0, y1), (x0, x1)) in array coordinates."""
    (z0, z1), (y0, y1), (x0, x1) = box
    if z1 <= z0 or y1 <= y0 or x1 <= x0:
        return

    def at(dz, dy, dx):
        return src[z0 + dz : z1 + dz, y0 + dy : y1 + dy, x0 + dx : x1 + dx]

    total = at(0, 0, 0) + at(0, 0, -1)
    for offset in ((0, 0, 1), (0, -1, 0), (0, 1, 0), (-1, 0, 0), (1, 0, 0)):
        total += at(*offset)
    dst[z0:z1, y0:y1, x0:x1] = total * src.dtype.type(1.0 / 7.0)


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


def host_stepper(ex):
    """One step's two updates in NumPy: the inner cells, then the cells next to the halos."""
    inner, shell = inner_and_shell(ex)

    def inside(u, v):
        if inner is not None:
            update(u, v, inner)

    def outside(u, v):
        for box in shell:
            update(u, v, box)

    return inside, outside


def cuda_stepper(ex, dtype):
    """The same two updates as launches of one CuPy RawKernel on the current stream."""
    import cupy

    element = "double" if dtype == np.float64 else "float"
    kernel = cupy.RawKernel(f"#define T {element}\n{KERNEL}", "jacobi7", options=("--fmad=false",))
    (ax, ay, _), (lx, ly, lz) = ex.alloc, ex.local
    block = 256
    grid = ((lx * ly * lz + block - 1) // block,)

    def launch(u, v, shell):
        sizes = (np.int64(ax), np.int64(ay), np.int64(lx), np.int64(ly), np.int64(lz))
        kernel(grid, (block,), (u, v, *sizes, np.int32(shell)))

    return (lambda u, v: launch(u, v, 0)), (lambda u, v: launch(u, v, 1))


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
    parser.add_argument("--steps", type=int, default=20, help="steps, the first a warm-up")
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    args = parser.parse_args()
    args.grid = tuple(int(n) for n in args.grid.split("x"))
    args.periodic = tuple(d in args.periodic for d in "xyz")
    if args.steps < 1:
        parser.error("--steps: at least 1")
    comm = MPI.COMM_WORLD
    dtype = np.dtype(args.dtype)
    cuda = args.backend == "cuda"
    if cuda:
        import cupy as xp
    else:
        xp = np

    # A 7-point stencil reads no edge or corner: the faces' halos are all it needs.
    domain = haloport.Domain(
        args.grid, dtype=dtype, halo=1, periodic=args.periodic, neighbourhood="faces"
    )
    with haloport.Exchange(comm, domain, backend=args.backend, transport=args.transport) as ex:
        device = xp.cuda.Device(ex.device) if cuda else None
        if cuda:
            device.use()
            stream = xp.cuda.Stream(non_blocking=True)
            stream.use()  # this program's own stream: CuPy's current one, which haloport takes
        # Every cell, halos included, starts from its global coordinates' value.
        (ax, ay, az), (ox, oy, oz), (lx, ly, lz) = ex.alloc, ex.origin, ex.halo_lo
        gz, gy, gx = np.meshgrid(
            np.arange(az) + oz - lz, np.arange(ay) + oy - ly, np.arange(ax) + ox - lx, indexing="ij"
        )
        u = xp.asarray(initial(gx, gy, gz, dtype))
        v = u.copy()
        inside, outside = cuda_stepper(ex, dtype) if cuda else host_stepper(ex)
        synchronize = stream.synchronize if cuda else (lambda: None)

        def step(u, v):
            ex.start(u)
            inside(u, v)  # overlaps the exchange
            ex.finish()
            outside(u, v)

        # The warm-up step: the kernel compiled, haloport's tables built for both arrays' first
        # exchanges (the second step's too), then everything waited for.
        step(u, v)
        u, v = v, u
        ex.wait()
        synchronize()
        comm.Barrier()
        started = time.perf_counter()
        for _ in range(args.steps - 1):
            step(u, v)
            u, v = v, u
        ex.wait()
        synchronize()
        seconds = time.perf_counter() - started
        step_us = comm.gather(seconds / max(args.steps - 1, 1) * 1e6, root=0)
        mine = xp.asnumpy(ex.interior(u)) if cuda else np.asarray(ex.interior(u))
        links = sorted({n.link for n in ex.neighbours})
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
    ok = exact
    if args.steps > 1:
        per_step = f"{step_us[0]:.1f} us per step after a warm-up step (slowest rank {max(step_us):.1f} us)"
    else:
        per_step = "one step, a warm-up: none timed"
    print(
        f"jacobi.py: 7-point stencil, {comm.size} rank(s), {args.backend} "
        f"({type(u).__module__.split('.')[0]} arrays), transport {args.transport} (links: "
        f"{', '.join(links)}), grid {'x'.join(map(str, args.grid))} {args.dtype}, {args.steps} "
        f"steps, {per_step}: "
        + ("verified bit for bit against NumPy" if exact else f"max difference {diff:.3g} -- FAILED")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    code = main()
    # Every rank learns rank 0's verdict, so mpirun reports a failure whichever rank sees it.
    sys.exit(MPI.COMM_WORLD.bcast(code, root=0))
