"""Exchanges checked cell by cell against what the declaration says every cell must hold."""

import numpy as np
import pytest
from mpi4py import MPI

import haloport
from conftest import check_all, everywhere, fill

SIZE = MPI.COMM_WORLD.Get_size()

CASES = {
    "periodic-f64": dict(grid=(8, 6, 5), dtype="float64"),
    "bounded-f32-halo2": dict(grid=(9, 8, 7), dtype=np.float32, halo=2, periodic=False),
    "mixed-periodicity": dict(grid=(8, 7, 6), periodic=(True, False, True)),
    "halo-per-side": dict(grid=(8, 8, 6), halo_lo=(1, 2, 0), halo_hi=(2, 0, 1), periodic=(True, False, True)),
    "padding": dict(grid=(8, 6, 5), pad=(3, 1, 2), periodic=(False, True, True)),
    "components": dict(grid=(6, 6, 4), dtype="float64", components=3),
    "fields-of-several-dtypes": dict(
        grid=(8, 6, 4),
        dtype=["float32", "int16", "uint8", "complex128", "float16", "int64"],
        components=[1, 2, 1, 3, 1, 1],
        periodic=(True, True, False),
    ),
    "faces": dict(grid=(8, 6, 6), neighbourhood="faces"),
    "faces-edges": dict(grid=(8, 6, 6), neighbourhood="faces-edges", periodic=(True, False, True)),
}


@pytest.mark.parametrize("case", CASES)
def test_exchange_fills_every_halo_cell_and_nothing_else(comm, case):
    domain = haloport.Domain(**CASES[case])
    with haloport.Exchange(comm, domain) as ex:
        arrays = [fill(ex, k) for k in range(domain.fields)]
        ex.exchange(arrays)
        check_all(comm, ex, arrays)
        # Again, on the same arrays: a compiled exchange runs many times.
        arrays = [fill(ex, k) for k in range(domain.fields)]
        ex.exchange(arrays)
        check_all(comm, ex, arrays)


def test_start_finish_wait_fill_the_halos(comm):
    domain = haloport.Domain((8, 6, 6), dtype=["float64", "float32"], halo=(1, 2, 1))
    ex = haloport.Exchange(comm, domain, strategy="tq")
    arrays = [fill(ex, 0), fill(ex, 1)]
    ex.start(arrays)
    ex.finish()
    ex.wait()
    check_all(comm, ex, arrays)
    ex.close()
    assert ex.closed
    ex.close()  # closing twice does nothing


def test_one_array_alone_for_one_field(comm):
    domain = haloport.Domain((8, 6, 4))
    with haloport.Exchange(comm, domain) as ex:
        u = fill(ex, 0)
        ex.exchange(u)
        check_all(comm, ex, [u])


def test_process_grid_given_and_cartesian_communicator(comm):
    procs = (1, SIZE // 2, 2) if SIZE % 2 == 0 else (1, 1, SIZE)
    cart = comm.Create_cart(dims=list(procs), periods=[True, False, True])
    try:
        domain = haloport.Domain((6, 8, 8), procs=procs, periodic=(True, False, True))
        with haloport.Exchange(cart, domain) as ex:
            assert ex.procs == procs
            # haloport numbers ranks as MPI_Cart_create does: coordinates in (x, y, z) order.
            coords = tuple(cart.Get_coords(cart.rank))
            everywhere(comm, ex.coords == coords, f"coords {ex.coords}, MPI says {coords}")
            u = fill(ex, 0)
            ex.exchange(u)
            check_all(cart, ex, [u])
    finally:
        cart.Free()


def test_split_communicator(comm):
    # Two groups exchanging independently: the exchange works on any mpi4py communicator.
    half = comm.Split(color=comm.rank % 2, key=comm.rank)
    try:
        domain = haloport.Domain((8, 6, 4), periodic=(True, False, True))
        with haloport.Exchange(half, domain) as ex:
            assert ex.rank == half.rank
            u = fill(ex, 0)
            ex.exchange(u)
            check_all(half, ex, [u])
    finally:
        half.Free()


def test_decomposition_given_by_splits(comm):
    # The application's own parts: uneven starts along z.
    starts_z = [0] + [1 + 2 * r for r in range(SIZE - 1)]
    domain = haloport.Domain((6, 5, 2 * SIZE + 1), splits=([0], [0], starts_z))
    with haloport.Exchange(comm, domain) as ex:
        assert ex.origin[2] == starts_z[comm.rank]
        u = fill(ex, 0)
        ex.exchange(u)
        check_all(comm, ex, [u])


def test_views_are_slices_of_the_callers_array(comm):
    domain = haloport.Domain((8, 6, 4), halo_lo=(1, 2, 1), halo_hi=(2, 1, 1), pad=(1, 0, 0))
    with haloport.Exchange(comm, domain) as ex:
        u = fill(ex, 0)
        inner = ex.interior(u)
        assert inner.shape == tuple(reversed(ex.local))
        assert np.shares_memory(inner, u) and inner.base is u
        lo, hi, n = ex.halo_lo, ex.halo_hi, ex.local
        assert ex.halo(u, (-1, 0, 0)).shape == (n[2], n[1], lo[0])
        assert ex.halo(u, (1, 0, 0)).shape == (n[2], n[1], hi[0])
        assert ex.halo(u, (0, -1, 1)).shape == (hi[2], lo[1], n[0])
        assert ex.halo(u, (1, 1, -1)).shape == (lo[2], hi[1], hi[0])
        ex.exchange(u)
        # The +x halo holds what the +x neighbour owns: its first interior columns.
        gx = (ex.origin[0] + n[0] + np.arange(hi[0])) % domain.grid[0]
        gy = ex.origin[1] + np.arange(n[1])
        gz = ex.origin[2] + np.arange(n[2])
        from cells import cell_values

        want = cell_values("float64", gx[None, None, :], gy[None, :, None], gz[:, None, None], 0, 1)
        everywhere(comm, np.array_equal(ex.halo(u, (1, 0, 0)), want), "+x halo")


def test_properties_describe_the_rank_and_its_neighbours(comm):
    domain = haloport.Domain((8, 6, 4), periodic=(True, False, True))
    with haloport.Exchange(comm, domain) as ex:
        assert ex.backend == "host" and ex.transport == "mpi" and ex.strategy == "base"
        assert ex.timeout == 10.0
        assert ex.domain.grid == (8, 6, 4)
        assert all(ex.alloc[k] == ex.local[k] + 2 for k in range(3))
        assert ex.shape() == (ex.alloc[2], ex.alloc[1], ex.alloc[0])
        directions = [n.direction for n in ex.neighbours]
        assert len(set(directions)) == len(directions)
        for n in ex.neighbours:
            assert 0 <= n.rank < comm.size
            assert n.link == ("local" if n.rank == comm.rank else "mpi")
        # The ranks' parts tile the grid.
        assert comm.allreduce(int(np.prod(ex.local))) == 8 * 6 * 4
    assert "closed" in repr(ex)


def test_the_allocation_reads_back_halos_and_padding_per_side(comm):
    domain = haloport.Domain((8, 8, 6), halo_lo=(1, 2, 0), halo_hi=(2, 0, 1), pad=(3, 1, 2))
    with haloport.Exchange(comm, domain) as ex:
        assert ex.halo_lo == (1, 2, 0) and ex.halo_hi == (2, 0, 1) and ex.pad == (3, 1, 2)
        assert ex.alloc == tuple(ex.halo_lo[k] + ex.local[k] + ex.halo_hi[k] + ex.pad[k] for k in range(3))


def test_the_same_arrays_every_step_are_exchanged_every_step(comm):
    """A loop hands the same arrays over each step (read once, then remembered): every call
    still fills the halos from the values the arrays hold then, and an array reshaped in place
    between calls is read again and refused."""
    domain = haloport.Domain((8, 6, 4), dtype=["float64", "int32"], periodic=(True, False, True))
    with haloport.Exchange(comm, domain) as ex:
        arrays = [fill(ex, 0), fill(ex, 1)]
        fresh = [fill(ex, 0), fill(ex, 1)]
        for _ in range(3):
            for u, f in zip(arrays, fresh):
                u[...] = f  # the halos back to the sentinel, the interior its values
            ex.exchange(arrays)
            check_all(comm, ex, arrays)
            for u in arrays:
                ex.interior(u)[...] = 0  # what the next call must not see in the halos
        flat = arrays[0].reshape(-1)
        arrays[0].shape = flat.shape
        with pytest.raises(haloport.InvalidInputError, match="shape"):
            ex.exchange(arrays)


def test_graph_capture_on_the_host_is_refused_saying_why(comm):
    """Graphs need a GPU backend and neighbours the GPU reaches without the CPU."""
    with haloport.Exchange(MPI.COMM_SELF, haloport.Domain((8, 6, 4))) as alone:
        with pytest.raises(haloport.DeviceError, match="the host backend captures no graphs|graphs"):
            alone.begin_capture()
        u = fill(alone, 0)
        alone.exchange(u)  # still usable
    if comm.size > 1:
        with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
            with pytest.raises(haloport.InvalidInputError, match="host-staged"):
                ex.begin_capture()
            u = fill(ex, 0)
            ex.exchange(u)
            check_all(comm, ex, [u])


@pytest.mark.parametrize("setting", ["on", "off", "auto"])
def test_gpu_aware_mpi_moves_the_same_halos_and_names_its_links(comm, setting):
    # On the host backend "on" is plain MPI on the exchange's own buffers; "auto" keeps
    # host-staged there.
    domain = haloport.Domain(grid=(8, 6, 5))
    with haloport.Exchange(comm, domain, gpu_aware_mpi=setting) as ex:
        arrays = [fill(ex, 0)]
        ex.exchange(arrays)
        check_all(comm, ex, arrays)
        remote = "gpu-mpi" if setting == "on" else "mpi"
        for n in ex.neighbours:
            assert n.link == ("local" if n.rank == comm.rank else remote)


def test_an_unknown_gpu_aware_mpi_setting_is_refused_naming_the_known_ones(comm):
    with pytest.raises(haloport.InvalidInputError, match="unknown GPU-aware MPI setting 'yes'"):
        haloport.Exchange(comm, haloport.Domain(grid=(8, 6, 5)), gpu_aware_mpi="yes")
