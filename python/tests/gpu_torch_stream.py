"""PyTorch tensors on a non-default CUDA stream, exchanged and checked cell by cell (a script,
not a pytest test: the GPU machines have no pytest). Run by bench/gpu-python.sh:

    mpirun -np 2 python python/tests/gpu_torch_stream.py --transport ipc

Each rank writes its interior cells on a stream of its own (torch.cuda.Stream, non-blocking
with respect to the default stream) after making that stream busy for ~50 ms, then exchanges
(1) with stream=None inside ``torch.cuda.stream(s)`` (the binding must take PyTorch's current
stream), (2) with ``stream=s`` explicitly, and (3) with an object offering ``__cuda_stream__``.
An exchange queued on any other stream would pack before the interior was written and the
check would fail. Prints one line per rank and exits non-zero on any difference.
"""

import argparse
import sys

import numpy as np
import torch
from mpi4py import MPI

import haloport
from cells import expected, fill, sentinel, wrong_cells


class ProtocolStream:
    """A stream known only through the CUDA stream protocol (as cuda.core's streams are)."""

    def __init__(self, stream):
        self.stream = stream

    def __cuda_stream__(self):
        return (0, self.stream.cuda_stream)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="mpi")
    parser.add_argument("--grid", default="96x64x48")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    grid = tuple(int(n) for n in args.grid.split("x"))
    domain = haloport.Domain(
        grid, dtype=[torch.float64, torch.float32], components=[1, 3], periodic=(True, False, True)
    )
    problems = []
    with haloport.Exchange(comm, domain, backend="cuda", transport=args.transport) as ex:
        device = torch.device("cuda", ex.device)
        torch.cuda.set_device(device)
        stream = torch.cuda.Stream(device=device)
        wanted = [fill(ex, k) for k in range(domain.fields)]
        for how in ("current stream", "stream=s", "__cuda_stream__"):
            with torch.cuda.stream(stream):
                tensors = [
                    torch.full(ex.shape(k), float(sentinel(w.dtype)), dtype=torch.from_numpy(w).dtype, device=device)
                    for k, w in enumerate(wanted)
                ]
                # Keep the stream busy, then write the interior: the exchange must come after.
                torch.cuda._sleep(100_000_000)
                for t, w in zip(tensors, wanted):
                    t.copy_(torch.from_numpy(w).pin_memory(), non_blocking=True)
                given = {"current stream": None, "stream=s": stream, "__cuda_stream__": ProtocolStream(stream)}[how]
                ex.exchange(tensors, stream=given)
                host = [t.cpu().numpy() for t in tensors]
            for p in wrong_cells(ex, host):
                problems.append(f"{how}: {p}")
            # The exchange wrote into the tensors themselves (no copy): halos now differ from
            # what was uploaded wherever a neighbour filled them.
            if np.array_equal(host[0], wanted[0]):
                problems.append(f"{how}: the halos were not written")
        transports = sorted({n.link for n in ex.neighbours})
    verdict = "verified" if not problems else "FAILED: " + "; ".join(problems)
    print(
        f"gpu_torch_stream.py rank {comm.rank}/{comm.size}: torch {torch.__version__}, "
        f"{torch.cuda.get_device_name(device)}, non-default stream, fields float64 and "
        f"float32x3, transport {args.transport} (neighbours: {', '.join(transports)}): {verdict}",
        flush=True,
    )
    return 0 if not problems else 1


if __name__ == "__main__":
    code = main()
    sys.exit(max(MPI.COMM_WORLD.allgather(code)))
