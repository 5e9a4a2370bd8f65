"""CuPy arrays on the CUDA backend, checked cell by cell (a script, not a pytest test: the GPU
machines have no pytest). Run by bench/gpu-python.sh:

    mpirun -np 1 python python/tests/gpu_cupy_streams.py
    mpirun -np 2 python python/tests/gpu_cupy_streams.py --transport ipc   # under MPS

Each check prints one line per rank; the script exits non-zero on any difference.

1. producer stream: each rank writes its interior on a stream P of its own after keeping P
   busy for ~100 ms, then calls ``exchange(arrays, stream=T)`` on another stream T inside
   ``with P:``. CuPy's ``__cuda_array_interface__`` then names P as the producer's stream, and
   the exchange must order T after it; one that did not would pack the interior before it was
   written and the halos would hold the sentinel.
2. graph: two whole exchanges (arrays u, then v) captured on a stream, replayed three times
   with new interior values each time (only where every neighbour is device-direct or the rank
   itself: one rank, or ``--transport ipc``).
3. device switching: the exchange's calls made while another device is current
   (``with cupy.cuda.Device(1)``), on machines with two GPUs or more; prints "SKIPPED: one
   device" otherwise.
"""

import argparse
import sys

import cupy
import numpy as np
from mpi4py import MPI

import haloport
from cells import fill, sentinel, wrong_cells

# Spins ~`cycles` clock cycles: keeps a stream busy so that work queued behind it runs late.
SPIN = cupy.RawKernel(
    r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
""",
    "spin",
)


def busy(cycles=200_000_000):
    """Keeps the current stream busy for `cycles` GPU clock cycles (~100 ms)."""
    SPIN((1,), (1,), (np.int64(cycles),))


def fresh(ex, wanted):
    """Device arrays of the sentinel, their cells then written from `wanted` by a device copy
    on the current stream after it was kept busy: the CPU returns at once, the values land
    ~100 ms later."""
    staged = [cupy.asarray(w) for w in wanted]
    arrays = [cupy.full(ex.shape(k), sentinel(w.dtype), dtype=w.dtype) for k, w in enumerate(wanted)]
    cupy.cuda.get_current_stream().synchronize()
    busy()
    for a, s in zip(arrays, staged):
        a[...] = s
    return arrays


def producer_stream(ex):
    wanted = [fill(ex, k) for k in range(ex.domain.fields)]
    producer = cupy.cuda.Stream(non_blocking=True)
    other = cupy.cuda.Stream(non_blocking=True)
    with producer:
        arrays = fresh(ex, wanted)
        ex.exchange(arrays, stream=other)
    other.synchronize()
    producer.synchronize()
    return [f"producer stream: {p}" for p in wrong_cells(ex, [a.get() for a in arrays])]


def graph(ex, comm):
    if any(n.link == "mpi" for n in ex.neighbours):
        return None
    stream = cupy.cuda.Stream(non_blocking=True)
    problems = []
    with stream:
        wanted = [fill(ex, k) for k in range(ex.domain.fields)]
        u = [cupy.asarray(w) for w in wanted]
        v = [cupy.asarray(w) for w in wanted]
        stream.synchronize()
        ex.begin_capture(stream)
        for arrays in (u, v):
            ex.start(arrays, stream)
            ex.finish(stream)
        g = ex.end_capture(stream)
        for round in range(3):
            # New interior values each replay: what the graph exchanges is what the arrays hold.
            for arrays in (u, v):
                for k, a in enumerate(arrays):
                    a.fill(sentinel(a.dtype))
                    ex.interior(a)[...] = cupy.asarray(ex.interior(wanted[k]))
            stream.synchronize()
            comm.Barrier()
            ex.replay(g, stream)
            ex.wait()
            stream.synchronize()
            for name, arrays in (("u", u), ("v", v)):
                problems += [f"graph replay {round} {name}: {p}" for p in wrong_cells(ex, [a.get() for a in arrays])]
    return problems, g.exchanges


def device_switching(ex):
    if cupy.cuda.runtime.getDeviceCount() < 2:
        return None
    other = (ex.device + 1) % cupy.cuda.runtime.getDeviceCount()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        wanted = [fill(ex, k) for k in range(ex.domain.fields)]
        arrays = [cupy.asarray(w) for w in wanted]
        stream.synchronize()
    problems = []
    for how in ("exchange", "start/finish/wait"):
        for a, w in zip(arrays, wanted):
            a.set(w)
        cupy.cuda.Device(ex.device).synchronize()
        # The program works on another device between (and during) haloport's calls.
        with cupy.cuda.Device(other):
            scratch = cupy.zeros(1 << 20)
            if how == "exchange":
                ex.exchange(arrays, stream=stream)
            else:
                ex.start(arrays, stream=stream)
                scratch += 1
                ex.finish(stream=stream)
                ex.wait()
            scratch.sum()
            if cupy.cuda.runtime.getDevice() != other:
                problems.append(f"device switching ({how}): the program's current device was changed")
        stream.synchronize()
        problems += [f"device switching ({how}): {p}" for p in wrong_cells(ex, [a.get() for a in arrays])]
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="mpi")
    parser.add_argument("--grid", default="96x64x48")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    grid = tuple(int(n) for n in args.grid.split("x"))
    domain = haloport.Domain(grid, dtype=["float64", "float32"], components=[1, 3], periodic=(True, False, True))
    failed = False
    with haloport.Exchange(comm, domain, backend="cuda", transport=args.transport) as ex:
        cupy.cuda.Device(ex.device).use()
        links = ", ".join(sorted({n.link for n in ex.neighbours}))
        where = f"gpu_cupy_streams.py rank {comm.rank}/{comm.size}: cupy {cupy.__version__}, transport {args.transport} (links: {links})"

        def report(check, problems, detail=""):
            nonlocal failed
            if problems is None:
                print(f"{where}: {check}: SKIPPED: {detail}", flush=True)
                return
            failed |= bool(problems)
            verdict = "verified" if not problems else "FAILED: " + "; ".join(problems[:5])
            print(f"{where}: {check}{detail}: {verdict}", flush=True)

        report("producer stream named by __cuda_array_interface__", producer_stream(ex))
        captured = graph(ex, comm)
        if captured is None:
            report("graph capture", None, "a host-staged neighbour (give --transport ipc)")
        else:
            report("graph capture", captured[0], f" ({captured[1]} exchanges a replay, 3 replays)")
        report("device switching", device_switching(ex), "one device")
    return 1 if failed else 0


if __name__ == "__main__":
    code = main()
    sys.exit(max(MPI.COMM_WORLD.allgather(code)))
