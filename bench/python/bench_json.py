"""The JSON file the Python benchmarks under bench/python write with ``--json FILE``: schema
``haloport-bench/1`` (bench/README.md describes every field). Rank 0 writes it; the other ranks
write nothing.
"""

import json
import os

from mpi4py import MPI

import haloport

SCHEMA = "haloport-bench/1"


def device_name(backend, arrays, ordinal):
    """The device's name as its driver reports it (the host backend: its CPU, as haloport's)."""
    if backend == "host":
        return f"host CPU ({os.cpu_count()} hardware threads)"
    if arrays == "torch":
        import torch

        return torch.cuda.get_device_name(ordinal)
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(ordinal)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def header(comm, command, backend, device, **extra):
    """The keys every file of the schema starts with, then ``extra``."""
    library = MPI.Get_library_version().strip("\0 \n").splitlines()
    doc = {
        "schema": SCHEMA,
        "command": command,
        "host": MPI.Get_processor_name(),
        "mpi_library": library[0] if library else "unknown",
        "haloport_version": haloport.__version__,
        "backend": backend,
        "device": device,
        "ranks": comm.size,
    }
    doc.update(extra)
    return doc


def write(path, doc):
    """Writes ``doc`` to ``path`` (rank 0 only; call it there)."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
