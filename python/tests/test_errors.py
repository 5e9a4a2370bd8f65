"""Bad input raises the right exception, on every rank the same, and nothing hangs."""

import threading
import time

import numpy as np
import pytest

import haloport
from conftest import everywhere, fill


@pytest.fixture
def ex(comm):
    domain = haloport.Domain((8, 6, 4), dtype=["float64", "float32"], components=[1, 2])
    with haloport.Exchange(comm, domain) as e:
        yield e


def test_hierarchy():
    assert issubclass(haloport.InvalidInputError, haloport.Error)
    assert issubclass(haloport.InvalidInputError, ValueError)
    assert issubclass(haloport.TimeoutError, haloport.Error)
    assert issubclass(haloport.TimeoutError, TimeoutError)
    assert haloport.HaloportError is haloport.Error
    for name in ("UsageError", "VerificationError", "DeviceError", "MpiError", "OtherRankError"):
        assert issubclass(getattr(haloport, name), haloport.Error)


def arrays_of(ex):
    return [fill(ex, 0), fill(ex, 1)]


def bad_arrays(ex):
    """(what, arrays, words the message must contain), each wrong in one way."""
    good = arrays_of(ex)
    z, y, x = ex.shape(0)
    wider = np.zeros((z, y, x + 2), dtype=np.float64)
    strided = np.zeros((z, y, 2 * x), dtype=np.float64)[:, :, ::2]
    readonly = good[0].copy()
    readonly.flags.writeable = False
    return [
        ("shape", [wider, good[1]], ["field 0", "shape"]),
        ("components missing", [good[0], np.zeros(ex.shape(0), np.float32)], ["field 1", "shape"]),
        ("dtype", [good[0].astype(np.float32), good[1]], ["field 0", "float32", "float64"]),
        ("dtype of same size", [good[0].view(np.int64), good[1]], ["field 0", "int64"]),
        ("fortran order", [np.asfortranarray(good[0]), good[1]], ["field 0", "contiguous"]),
        ("strided", [strided, good[1]], ["field 0", "contiguous"]),
        ("transposed", [good[0], np.zeros(ex.shape(1)[::-1], np.float32).T], ["field 1", "contiguous"]),
        ("read-only", [readonly, good[1]], ["field 0", "read-only"]),
        ("too few", [good[0]], ["1 arrays", "2 fields"]),
        ("too many", good + [good[0]], ["3 arrays"]),
        ("none", [], ["0 arrays"]),
        ("not an array", [good[0], [[1.0]]], ["field 1", "list"]),
        ("big-endian", [good[0].astype(">f8"), good[1]], ["field 0", "big-endian"]),
    ]


@pytest.mark.parametrize("case", range(13))
def test_bad_arrays_raise_invalid_input(ex, case):
    what, arrays, words = bad_arrays(ex)[case]
    with pytest.raises(haloport.InvalidInputError) as err:
        ex.exchange(arrays)
    for word in words:
        assert word in str(err.value), (what, str(err.value))
    with pytest.raises(ValueError):
        ex.start(arrays)
    # Nothing was sent: the exchange still works on every rank.
    good = arrays_of(ex)
    ex.exchange(good)


def test_dlpack_arrays_are_accepted_on_the_host(comm):
    # An object offering only DLPack (as JAX's arrays do) is read through it.
    class OnlyDlpack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        ex.exchange(OnlyDlpack(u))
        from cells import expected

        everywhere(comm, np.array_equal(u, expected(ex, 0)), "halos through DLPack")
        with pytest.raises(haloport.InvalidInputError, match="shape"):
            ex.exchange(OnlyDlpack(np.zeros((2, 2, 2))))


class Interface:
    """An array known only by the array interface it offers (as Numba's or a C library's
    arrays are), the dictionary edited by `change`."""

    def __init__(self, a, **change):
        self.a = a
        self.change = change

    @property
    def __array_interface__(self):
        d = dict(self.a.__array_interface__)
        d.update(self.change)
        return d


def test_array_interface_of_objects_other_than_numpy(comm):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        # Explicit C-order strides are as good as none.
        ex.exchange(Interface(u, strides=u.strides))
        from cells import expected

        everywhere(comm, np.array_equal(u, expected(ex, 0)), "halos through the interface")
        cases = [
            (dict(mask=np.ones(1)), "masked"),
            (dict(data=None), "data"),
            (dict(data=(u.ctypes.data, True)), "read-only"),
            (dict(typestr=">f8"), "big-endian"),
            (dict(typestr="<V8"), "V8"),
            (dict(strides=(8, 8, 8)), "contiguous"),
            (dict(shape=(1, 2, 3)), "shape"),
        ]
        for change, words in cases:
            with pytest.raises(haloport.InvalidInputError, match=words):
                ex.exchange(Interface(u, **change))


def test_calls_out_of_order_raise_usage_error(comm):
    ex = haloport.Exchange(comm, haloport.Domain((8, 6, 4)))
    with pytest.raises(haloport.UsageError):
        ex.finish()
    ex.close()
    with pytest.raises(haloport.UsageError, match="closed"):
        ex.exchange(np.zeros(ex.shape()))
    with pytest.raises(haloport.UsageError):
        ex.wait()


def test_views_check_their_arguments(ex):
    u = fill(ex, 0)
    with pytest.raises(haloport.InvalidInputError, match="direction"):
        ex.halo(u, (0, 0, 0))
    with pytest.raises(haloport.InvalidInputError, match="direction"):
        ex.halo(u, (2, 0, 0))
    with pytest.raises(haloport.InvalidInputError, match="not one of this exchange"):
        ex.interior(np.zeros((3, 3, 3)))
    with pytest.raises(haloport.InvalidInputError):
        ex.shape(2)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(dtype="float128"), ["unknown dtype", "float128"]),
        (dict(dtype=float), ["unknown dtype"]),
        (dict(halo=(1, 2)), ["halo"]),
        (dict(components=0), ["components"]),
        (dict(dtype=["float32", "float64"], components=[1, 2, 3]), ["components", "3 values"]),
        (dict(neighbourhood="diagonals"), ["neighbourhood"]),
        (dict(fields=0), ["fields"]),
    ],
)
def test_bad_declarations_raise_invalid_input(kwargs, words):
    with pytest.raises(haloport.InvalidInputError) as err:
        haloport.Domain((8, 6, 4), **kwargs)
    for word in words:
        assert word in str(err.value)


def test_dtypes_are_read_from_numpy_torch_and_names():
    d = haloport.Domain((4, 4, 4), dtype=[np.float32, np.dtype("int16"), "f8", "<c16", "torch.float16", "uint8"])
    assert d.dtypes == ["float32", "int16", "float64", "complex128", "float16", "uint8"]
    assert d.fields == 6


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(backend="quantum"), ["unknown backend"]),
        (dict(backend="hip"), ["not available in this build"]),
        (dict(transport="carrier-pigeon"), ["unknown transport"]),
        (dict(strategy="eventually"), ["strategy"]),
        (dict(timeout=0), ["timeout"]),
        (dict(timeout=float("nan")), ["timeout"]),
    ],
)
def test_bad_options_raise_invalid_input_on_every_rank(comm, kwargs, words):
    with pytest.raises(haloport.InvalidInputError) as err:
        haloport.Exchange(comm, haloport.Domain((8, 6, 4)), **kwargs)
    for word in words:
        assert word in str(err.value)


def test_a_grid_too_small_for_the_job_raises_invalid_input(comm):
    with pytest.raises(haloport.InvalidInputError):
        haloport.Exchange(comm, haloport.Domain((1, 1, 1), halo=2, procs=(comm.size, 1, 1)))


def test_not_a_communicator_raises_invalid_input():
    with pytest.raises(haloport.InvalidInputError, match="mpi4py communicator"):
        haloport.Exchange("MPI_COMM_WORLD", haloport.Domain((8, 6, 4)))


def test_comm_null_raises_invalid_input():
    from mpi4py import MPI

    with pytest.raises(haloport.InvalidInputError, match="COMM_NULL"):
        haloport.Exchange(MPI.COMM_NULL, haloport.Domain((8, 6, 4)))


def test_one_rank_with_a_bad_option_fails_every_rank(comm):
    # Rank 0 alone asks for a transport that does not exist: it raises its own error, the
    # others learn of it, and nobody waits in a collective for it.
    transport = "bogus" if comm.rank == 0 else "mpi"
    expected = haloport.InvalidInputError if comm.rank == 0 else haloport.OtherRankError
    with pytest.raises(expected) as err:
        haloport.Exchange(comm, haloport.Domain((8, 6, 4)), transport=transport)
    if comm.rank != 0:
        assert "rank 0" in str(err.value) and "bogus" in str(err.value)


def test_declarations_that_differ_across_ranks_raise_the_same_error_everywhere(comm):
    domain = haloport.Domain((8 + comm.rank, 6, 4))
    started = time.monotonic()
    with pytest.raises(haloport.InvalidInputError) as err:
        haloport.Exchange(comm, domain, timeout=5)
    messages = comm.allgather(str(err.value))
    assert len(set(messages)) == 1, messages
    assert "differ" in messages[0] or "declar" in messages[0], messages[0]
    assert time.monotonic() - started < 5


def test_a_rank_that_does_not_take_part_times_out_the_others(comm):
    # Rank 0 exchanges; the others never do. Rank 0's wait gives up after the time-out with
    # TimeoutError, and while it waits the GIL is released (another thread keeps counting).
    timeout = 0.5
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4)), timeout=timeout) as ex:
        u = fill(ex, 0)
        if comm.rank == 0:
            ticks = []
            stop = threading.Event()

            def count():
                while not stop.is_set():
                    ticks.append(1)
                    time.sleep(0.01)

            counter = threading.Thread(target=count)
            counter.start()
            started = time.monotonic()
            try:
                with pytest.raises(haloport.TimeoutError) as err:
                    ex.exchange(u)
            finally:
                stop.set()
                counter.join()
            waited = time.monotonic() - started
            assert timeout * 0.9 <= waited < timeout + 5, waited
            assert isinstance(err.value, TimeoutError)
            assert len(ticks) >= 10, f"only {len(ticks)} ticks in {waited:.2f} s: the GIL was held"
        comm.Barrier()


def test_a_bad_array_on_one_rank_times_out_the_others(comm):
    # Rank 0's array is wrong, so rank 0 never sends; the others give up after the time-out
    # instead of waiting for it forever.
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4)), timeout=1.0) as ex:
        u = fill(ex, 0)
        if comm.rank == 0:
            with pytest.raises(haloport.InvalidInputError):
                ex.exchange(u.astype(np.float32))
        else:
            started = time.monotonic()
            with pytest.raises(haloport.TimeoutError):
                ex.exchange(u)
            assert time.monotonic() - started < 6
        comm.Barrier()
