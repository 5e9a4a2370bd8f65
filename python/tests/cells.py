"""What every cell of a field must hold before and after an exchange, computed from the
declaration alone (shared by the pytest suite and the GPU scripts, which have no pytest)."""

import numpy as np


# Values small enough to be exact in every dtype tested, distinct for neighbouring cells.
MODULUS = {"float16": 2039, "int8": 127, "uint8": 251, "int16": 32749, "uint16": 65521}


def cell_values(dtype, gx, gy, gz, field, components):
    """The value of every cell (and component) at global coordinates gx, gy, gz (broadcast
    arrays), in `dtype`: what the rank that owns the cell writes, what every halo of it must
    show after an exchange."""
    code = gx + 131 * gy + 17161 * gz + 7 * field
    code = code[..., np.newaxis] * 5 + np.arange(components) if components > 1 else code
    code = code % MODULUS.get(np.dtype(dtype).name, 2**31 - 1)
    return code.astype(dtype)


def sentinel(dtype):
    """What halo and padding cells hold before the exchange; no cell value equals it."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).max if dtype.kind in "iu" else dtype.type(-1)


def fill(ex, field):
    """A fresh array of field `field`: interior cells hold their values, the rest the
    sentinel."""
    domain = ex.domain
    dtype, components = domain.dtypes[field], domain.components[field]
    u = np.full(ex.shape(field), sentinel(dtype), dtype=dtype)
    lo, n, o = ex.halo_lo, ex.local, ex.origin
    gx, gy, gz = (np.arange(o[k], o[k] + n[k]) for k in range(3))
    ex.interior(u)[...] = cell_values(
        dtype, gx[None, None, :], gy[None, :, None], gz[:, None, None], field, components
    )
    return u


def expected(ex, field):
    """What field `field`'s whole array must hold after an exchange, computed from the
    declaration alone: every cell whose global cell exists (inside the grid, or wrapped along a
    periodic dimension) and that the neighbourhood reaches holds that cell's value; padding
    and cells with no neighbour keep the sentinel."""
    domain = ex.domain
    dtype, components = domain.dtypes[field], domain.components[field]
    reach = {"faces": 1, "faces-edges": 2, "all": 3}[domain.neighbourhood]
    coords, valid, outside = [], [], []
    for k in range(3):
        lo, n, hi = ex.halo_lo[k], ex.local[k], ex.halo_hi[k]
        i = np.arange(ex.alloc[k])
        g = ex.origin[k] + i - lo
        size = domain.grid[k]
        ok = (i < lo + n + hi) & (domain.periodic[k] | ((g >= 0) & (g < size)))
        coords.append(np.mod(g, size))
        valid.append(ok)
        outside.append((i < lo) | (i >= lo + n))
    bx, by, bz = (lambda a: a[None, None, :], lambda a: a[None, :, None], lambda a: a[:, None, None])
    ok = bx(valid[0]) & by(valid[1]) & bz(valid[2])
    crossed = bx(outside[0]).astype(int) + by(outside[1]) + bz(outside[2])
    ok = ok & (crossed <= reach)
    values = cell_values(dtype, bx(coords[0]), by(coords[1]), bz(coords[2]), field, components)
    if components > 1:
        ok = ok[..., np.newaxis]
    return np.where(ok, values, sentinel(dtype)).astype(dtype)


def wrong_cells(ex, arrays):
    """What differs from the declaration in `arrays` (host copies), as messages."""
    problems = []
    for k, u in enumerate(arrays):
        want = expected(ex, k)
        if not np.array_equal(u, want):
            wrong = np.argwhere(u != want)
            z, y, x = wrong[0][:3]
            problems.append(
                f"field {k}: {len(wrong)} wrong cells, first at z={z} y={y} x={x}: "
                f"{u[z, y, x]} instead of {want[z, y, x]}"
            )
    return problems
