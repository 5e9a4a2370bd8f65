"""Fused mode on the host backend: the library allocates the fields (``Exchange.fuse``), the
test stands in for the application's kernel, writing each step's interior and storing its
boundary cells through the descriptors straight into the neighbours' halos (NumPy views of the
addresses, as ``haloport_target`` computes them), then counting each message's cells as
``haloport_block_done`` does; after ``fused_finish`` every halo cell must hold its global cell's
value of that step. And the refusals."""

import ctypes
import os

import numpy as np
import pytest
from mpi4py import MPI

import haloport
from conftest import everywhere

SIZE = MPI.COMM_WORLD.Get_size()
DOMAIN = dict(
    grid=(12, 10, 8),
    dtype=["float64", "float64"],
    periodic=(True, True, False),
    halo_lo=(1, 2, 1),
    halo_hi=(2, 1, 1),
)


def global_coords(ex):
    """Per dimension (x, y, z): each allocated index's global coordinate (wrapped where
    periodic) and whether it has one."""
    out = []
    for k in range(3):
        i = np.arange(ex.alloc[k])
        g = ex.origin[k] + i - ex.halo_lo[k]
        size = ex.domain.grid[k]
        valid = (i < ex.halo_lo[k] + ex.local[k] + ex.halo_hi[k]) & (
            ex.domain.periodic[k] | ((g >= 0) & (g < size))
        )
        out.append((np.mod(g, size), valid))
    return out


def values(ex, step, field):
    """Every cell's value in `step` (by its global cell), and which cells have one."""
    (gx, vx), (gy, vy), (gz, vz) = global_coords(ex)
    v = (
        1.0
        + gx[None, None, :]
        + 100.0 * gy[None, :, None]
        + 10000.0 * gz[:, None, None]
        + 0.25 * field
        + 1e6 * step
    )
    return v, vx[None, None, :] & vy[None, :, None] & vz[:, None, None]


def store(descriptor, u):
    """The application's stores of field `u`'s boundary through `descriptor`: each message's
    cells [lo, hi) into the neighbour's array at dest, then the count of cells. Only this rank
    adds to a message's count, so a plain read-modify-write suffices here (x86 keeps stores
    in order; a GPU kernel adds atomically, haloport_block_done)."""
    assert descriptor["elem_bytes"] == 8
    for m in descriptor["message"]:
        lo, hi = m["lo"], m["hi"]
        cells = u[lo[2] : hi[2], lo[1] : hi[1], lo[0] : hi[0]]
        sx, sy, sz = m["dest_stride"]
        nz, ny, nx = cells.shape
        at = (
            m["dest_offset"]
            + np.arange(nx)[None, None, :] * sx
            + np.arange(ny)[None, :, None] * sy
            + np.arange(nz)[:, None, None] * sz
        )
        dest = np.ctypeslib.as_array((ctypes.c_double * (int(at.max()) + 1)).from_address(m["dest"]))
        dest[at] = cells
        ctypes.c_uint64.from_address(m["counter"]).value += cells.size


def halo_problems(ex, arrays, step):
    """Halo cells that do not hold their global cell's value of `step`, as a message."""
    checked = 0
    for f, u in enumerate(arrays):
        want, has = values(ex, step, f)
        interior = np.zeros(u.shape, dtype=bool)
        ex.interior(interior)[...] = True
        halo = has & ~interior
        wrong = np.argwhere(halo & (u != want))
        if len(wrong):
            z, y, x = wrong[0]
            return f"step {step} field {f}: {len(wrong)} halo cells wrong, first z={z} y={y} x={x}: {u[z, y, x]} instead of {want[z, y, x]}", 0
        checked += int(halo.sum())
    return "", checked


def test_fused_steps_fill_every_halo_through_the_descriptors(comm):
    domain = haloport.Domain(**DOMAIN)
    with haloport.Exchange(comm, domain, transport="ipc") as ex:
        sets = ex.fuse(2)
        assert [len(s) for s in sets] == [2, 2]
        arrays = [[np.asarray(f) for f in s] for s in sets]
        for s, fields in enumerate(sets):
            for k, f in enumerate(fields):
                assert (f.set, f.field, f.dtype, f.shape) == (s, k, "float64", ex.shape(k))
                assert f.ptr == f.__array_interface__["data"][0] and f.nbytes == arrays[s][k].nbytes
                assert not hasattr(f, "__cuda_array_interface__")
                assert arrays[s][k].shape == ex.shape(k) and not arrays[s][k].any()
        # Set 0's halos once by an ordinary exchange, as a code starting from initial values.
        ex.exchange(arrays[0])
        total = 0
        for n in range(6):
            s = n % 2
            addrs = ex.fused_start(s)
            descriptors = ex.fused_descriptors(s)
            assert len(addrs) == 2 and all(isinstance(a, int) and a != 0 for a in addrs)
            assert len(descriptors) == 2
            for f, u in enumerate(arrays[s]):
                ex.interior(u)[...] = ex.interior(values(ex, n, f)[0])
                store(descriptors[f], u)
            ex.fused_finish(s)
            problem, checked = halo_problems(ex, arrays[s], n)
            everywhere(comm, not problem, problem)
            total += checked
        ex.wait()
        everywhere(comm, total > 0, "no halo cell was checked")
    # The memory outlives the exchange while an array over it lives.
    assert arrays[1][1][0, 0, 0] == arrays[1][1][0, 0, 0]


def test_fused_mode_refusals(comm):
    domain = haloport.Domain(**DOMAIN)
    with haloport.Exchange(comm, domain, transport="ipc") as ex:
        with pytest.raises(haloport.UsageError, match="call fuse first"):
            ex.fused_start(0)
        with pytest.raises(haloport.UsageError, match="call fuse first"):
            ex.fused_finish(0)
        with pytest.raises(haloport.UsageError, match="call fuse first"):
            ex.fused_descriptors(0)
        with pytest.raises(haloport.InvalidInputError, match="0 sets"):
            ex.fuse(0)
        if SIZE > 1:
            with pytest.raises(haloport.InvalidInputError, match="rank 0 gave 1, rank 1 gave 2"):
                ex.fuse(1 if comm.rank == 0 else 2)
        ex.fuse(2)
        with pytest.raises(haloport.UsageError, match="already fused"):
            ex.fuse(2)
        with pytest.raises(haloport.UsageError, match="fused set 2 does not exist"):
            ex.fused_start(2)
        with pytest.raises(OverflowError):
            ex.fused_finish(-1)
    with pytest.raises(haloport.UsageError, match="closed"):
        ex.fused_start(0)
    if SIZE > 1:
        # Host-staged neighbours are served by an ordinary exchange inside fused_finish.
        with haloport.Exchange(comm, domain, transport="mpi") as staged:
            assert len(staged.fuse(2)) == 2


def test_the_device_header_ships_with_the_package():
    header = os.path.join(haloport.include_dir(), "haloport_device.h")
    with open(header) as f:
        text = f.read()
    assert "haloport_block_done" in text and "typedef struct haloport_fused" in text
