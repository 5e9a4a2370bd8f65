"""The halo exchange a Python user writes by hand today, timed beside haloport's on the same
CuPy arrays: each face slab copied out of the array with CuPy, staged through pinned host
memory, swapped with the neighbour by mpi4py's Sendrecv, and copied back into the halo, x then
y then z, each slab spanning the halos of the dimensions before it so that edges and corners
arrive too.

    mpirun -np 2 python bench/python/handwritten.py --transport mpi
    mpirun -np 2 python bench/python/handwritten.py --transport ipc   # under MPS on one GPU

For each grid (f64, periodic, halo 1, split by MPI_Dims_create): both exchanges run once on
copies of the same array and must leave identical arrays (checked), then each is timed,
synchronized on its stream after every call, and the medians over the ranks' slowest are
printed. ``--backend host`` runs the same with NumPy arrays (for a try without a GPU).
``--json FILE`` writes them in schema haloport-bench/1 (bench/README.md).
"""

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import haloport
from bench_json import device_name, header, write


class ByHand:
    """Host-staged exchange of one array's halos, one dimension after the other."""

    def __init__(self, cart, ex, xp, pinned):
        self.cart, self.xp = cart, xp
        lo, n, alloc = ex.halo_lo, ex.local, ex.alloc
        self.steps = []
        # Array axes are z, y, x; dimension k (x=0) is axis 2 - k.
        for k in range(3):
            axis = 2 - k
            low, high = cart.Shift(k, 1)
            full = [slice(0, alloc[2]), slice(0, alloc[1]), slice(0, alloc[0])]
            for side in (-1, 1):
                send, recv = list(full), list(full)
                if side < 0:
                    # Our first cells to the low neighbour's high halo; the high neighbour's
                    # first cells into our high halo.
                    send[axis] = slice(lo[k], lo[k] + ex.halo_hi[k])
                    recv[axis] = slice(lo[k] + n[k], lo[k] + n[k] + ex.halo_hi[k])
                    dest, source = low, high
                else:
                    # Our last cells to the high neighbour's low halo, and the other way round.
                    send[axis] = slice(n[k], n[k] + lo[k])
                    recv[axis] = slice(0, lo[k])
                    dest, source = high, low
                shape = [s.stop - s.start for s in send]
                self.steps.append(
                    (tuple(send), tuple(recv), dest, source, pinned(shape), pinned(shape), side)
                )

    def __call__(self, u):
        for send, recv, dest, source, out_host, in_host, side in self.steps:
            out_dev = self.xp.ascontiguousarray(u[send])
            if self.xp is np:
                out_host[...] = out_dev
            else:
                out_dev.get(out=out_host)
            self.cart.Sendrecv(out_host, dest, 7 + side, in_host, source, 7 + side)
            u[recv] = self.xp.asarray(in_host)


def median_of_slowest(comm, times):
    return statistics.median(comm.allreduce(t, op=MPI.MAX) for t in times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--transport", default="mpi")
    parser.add_argument("--grids", default="1024x512x512,256x128x128")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--json", help="write the results here (schema haloport-bench/1)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    if args.backend == "host":
        xp, pinned, sync = np, (lambda shape: np.empty(shape)), (lambda: None)
    else:
        import cupy as xp
        import cupyx

        pinned = lambda shape: cupyx.empty_pinned(shape, dtype=np.float64)  # noqa: E731
        sync = lambda: xp.cuda.get_current_stream().synchronize()  # noqa: E731
    rows, device = [], None
    for text in args.grids.split(","):
        grid = tuple(int(n) for n in text.split("x"))
        domain = haloport.Domain(grid, dtype="float64", halo=1, periodic=True)
        with haloport.Exchange(comm, domain, backend=args.backend, transport=args.transport) as ex:
            if xp is not np:
                xp.cuda.Device(ex.device).use()
            cart = comm.Create_cart(dims=list(ex.procs), periods=[True] * 3)
            by_hand = ByHand(cart, ex, xp, pinned)
            # Distinct values everywhere: the rank, and the cell's place in the array.
            u = xp.arange(int(np.prod(ex.shape())), dtype=xp.float64).reshape(ex.shape())
            u += comm.rank * 1e9
            v = u.copy()
            by_hand(u)
            ex.exchange(v)
            sync()
            same = bool(xp.array_equal(u, v))
            agree = comm.allreduce(same, op=MPI.LAND)
            results = {}
            for name, call in (("by hand", lambda: by_hand(u)), ("haloport", lambda: ex.exchange(u))):
                for _ in range(3):
                    call()
                sync()
                times = []
                for _ in range(args.reps):
                    comm.Barrier()
                    t0 = time.perf_counter()
                    call()
                    sync()
                    times.append(time.perf_counter() - t0)
                results[name] = median_of_slowest(comm, times)
            links = sorted({n.link for n in ex.neighbours})
            if device is None:
                device = device_name(args.backend, "cupy", ex.device)
            cart.Free()
            del u, v
        if comm.rank == 0:
            print(
                f"handwritten.py: {comm.size} ranks, grid {text} f64 periodic halo 1 "
                f"(local {'x'.join(map(str, ex.local))}), {args.backend}: by hand (CuPy slices, "
                f"pinned host staging, mpi4py Sendrecv, x then y then z) median "
                f"{results['by hand'] * 1e3:.3f} ms; haloport over {args.transport} (neighbours: "
                f"{', '.join(links)}) median {results['haloport'] * 1e3:.3f} ms; "
                + ("same halos" if agree else "HALOS DIFFER")
                , flush=True
            )
        common = {"grid": list(grid), "local": list(ex.local), "procs": list(ex.procs), "verified": agree}
        rows.append({"variant": "by-hand", "transport": "mpi", **common,
                     "median_us": results["by hand"] * 1e6})
        rows.append({"variant": "haloport", "transport": args.transport, "links": links, **common,
                     "median_us": results["haloport"] * 1e6})
    if args.json and comm.rank == 0:
        doc = header(comm, "python-handwritten", args.backend, device, reps=args.reps,
                     verified=all(r["verified"] for r in rows), results=rows)
        write(args.json, doc)
    if not all(r["verified"] for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
