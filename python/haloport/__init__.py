"""haloport: halo exchange of NumPy, CuPy and PyTorch arrays between MPI ranks.

Declare the grid once (:class:`Domain`), build an :class:`Exchange` over an mpi4py
communicator on every rank, and exchange the halos of your own arrays as often as you like::

    from mpi4py import MPI
    import numpy as np
    import haloport

    domain = haloport.Domain((64, 64, 64), dtype="float64", halo=1, periodic=True)
    with haloport.Exchange(MPI.COMM_WORLD, domain) as ex:
        u = np.zeros(ex.shape(), dtype=np.float64)   # (az, ay, ax): halos included
        ex.interior(u)[...] = 1.0
        ex.exchange(u)                               # halos filled from the neighbours

Arrays are never copied: the exchange reads and writes them in place, through
``__array_interface__`` (NumPy) on the host backend and ``__cuda_array_interface__`` or DLPack
(CuPy, PyTorch, Numba, JAX) on CUDA. Errors are :class:`Error` subclasses (``haloport.errors``).
The work is done by the Rust library; this package converts and maps errors.

Fused mode (:meth:`Exchange.fuse`): the application's own kernels (a CuPy ``RawKernel``) store
boundary cells straight into the neighbours' halos through the device header
``haloport_device.h``, which this package ships in :func:`include_dir`.
"""

import os as _os

# The exception classes first: the extension raises them.
from .errors import (
    DeviceError,
    Error,
    HaloportError,
    InternalError,
    InvalidInputError,
    MpiError,
    OtherRankError,
    TimeoutError,
    UsageError,
    VerificationError,
)
from ._native import Domain, Exchange, FusedField, Graph, Neighbour, __version__, backends


def include_dir() -> str:
    """The folder holding ``haloport_device.h``, fused mode's device header (CUDA, HIP and C),
    of this build: give it to the kernel compiler, e.g.
    ``cupy.RawKernel(code, name, options=("-I" + haloport.include_dir(),))`` with ``code``
    including ``<haloport_device.h>``."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")

__all__ = [
    "Domain",
    "Exchange",
    "FusedField",
    "Graph",
    "Neighbour",
    "backends",
    "include_dir",
    "__version__",
    "Error",
    "HaloportError",
    "InvalidInputError",
    "UsageError",
    "TimeoutError",
    "VerificationError",
    "DeviceError",
    "MpiError",
    "OtherRankError",
    "InternalError",
]
