"""What a real program does around its exchanges: arrays dropped while an exchange is in flight
or cached, an exchange used from a thread pool, collected after MPI was finalized, built on a
communicator of another MPI library, arrays handed over through DLPack."""

import concurrent.futures
import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import types
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import haloport
from conftest import check_all, everywhere, fill


class Counting(np.ndarray):
    """A NumPy array that counts how often its array interface is read."""

    reads = 0

    @property
    def __array_interface__(self):
        type(self).reads += 1
        return super().__array_interface__


def counting(ex, k=0):
    a = fill(ex, k).view(Counting)
    return a


def test_arrays_of_an_exchange_in_flight_stay_alive_until_it_is_waited_for(comm):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        a, b = fill(ex, 0), fill(ex, 0)
        first = weakref.ref(a)
        ex.start(a)
        ex.finish()
        del a
        gc.collect()
        # The next step starts before the first was waited for.
        ex.start(b)
        ex.finish()
        gc.collect()
        kept = first() is not None
        ex.wait()
        gc.collect()
        released = first() is None
        check_all(comm, ex, [b])
        everywhere(comm, kept, "the first exchange's array was released before its wait")
        everywhere(comm, released, "the array was still held after the wait covering it")


def test_two_sets_of_arrays_alternating_are_read_once_each(comm):
    """A Jacobi loop hands over two sets of arrays in turn; each is read once, then found."""
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        a, b = counting(ex), counting(ex)
        Counting.reads = 0
        for _ in range(3):
            ex.exchange(a)
            ex.exchange(b)
        reads = Counting.reads
        check_all(comm, ex, [a.view(np.ndarray)])
        check_all(comm, ex, [b.view(np.ndarray)])
        everywhere(comm, reads == 2, f"6 exchanges of 2 alternating arrays read them {reads} times")


def test_an_array_remembered_cannot_move_under_the_exchange(comm):
    """The exchange remembers where an array's memory is. NumPy's in-place resize could move it
    under the same object and, resized back, the same shape: either the resize is refused
    (NumPy refuses arrays that are weakly referenced, as the exchange's memory of them is), or
    the exchange must use where the memory is now."""
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        a = fill(ex, 0)
        ex.exchange(a)
        shape = a.shape
        try:
            # Through a size the allocator serves elsewhere, and back.
            a.resize((64,) + shape, refcheck=False)
            a.resize(shape, refcheck=False)
        except ValueError:
            pass
        a[...] = fill(ex, 0)
        ex.exchange(a)
        check_all(comm, ex, [a])


def test_arrays_the_program_dropped_are_freed(comm):
    """The arrays read recently are remembered without keeping them alive."""
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        arrays = [fill(ex, 0) for _ in range(3)]
        refs = [weakref.ref(a) for a in arrays]
        for a in arrays:
            ex.exchange(a)
        del a, arrays
        gc.collect()
        alive = [r() is not None for r in refs]
        everywhere(comm, not any(alive), f"arrays kept alive after the program dropped them: {alive}")
        # A new array at a freed one's address is read anew and exchanged right.
        u = fill(ex, 0)
        ex.exchange(u)
        check_all(comm, ex, [u])


def test_an_exchange_called_from_another_thread_raises_a_usage_error_naming_its_thread(comm, capfd):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
            error = pool.submit(lambda: ex.exchange(u)).exception()
        assert isinstance(error, haloport.UsageError), repr(error)
        assert isinstance(error, Exception)
        assert "MainThread" in str(error) and "pool" in str(error), str(error)
        printed = capfd.readouterr().err
        assert "panicked" not in printed, printed
        # The exchange still works on its own thread, and its properties on any.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            assert pool.submit(lambda: ex.local).result() == ex.local
        ex.exchange(u)
        check_all(comm, ex, [u])


# Run in a process of its own: MPI as a singleton (no mpirun), COMM_SELF.
FINALIZED = """
import gc
from mpi4py import MPI
import numpy as np
import haloport

ex = haloport.Exchange(MPI.COMM_SELF, haloport.Domain((8, 6, 4)))
u = np.zeros(ex.shape())
ex.exchange(u)
{ending}
print("reached the end", flush=True)
"""

ENDINGS = {
    # MPI finalized by the program, the exchange collected afterwards.
    "collected-after-finalize": "MPI.Finalize()\ndel ex\ngc.collect()",
    # Held in a reference cycle: collected at interpreter exit, after mpi4py's own finalize.
    "cycle-at-exit": "cycle = [ex]\ncycle.append(cycle)\ndel ex",
    # Used after finalize: an error, not an abort.
    "used-after-finalize": textwrap.dedent(
        """
        MPI.Finalize()
        try:
            ex.exchange(u)
        except haloport.UsageError as e:
            print("UsageError:", e, flush=True)
        """
    ),
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_an_exchange_outliving_mpi_leaves_the_program_exit_cleanly(comm, tmp_path, ending):
    script = tmp_path / "program.py"
    script.write_text(FINALIZED.format(ending=ENDINGS[ending]))
    # The child runs MPI on its own: none of this job's launcher variables.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_", "OPAL_", "PRTE_"))}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader")
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    said = f"exit {done.returncode}; stdout: {done.stdout[-500:]!r}; stderr: {done.stderr[-800:]!r}"
    everywhere(comm, done.returncode == 0, said)
    everywhere(comm, "reached the end" in done.stdout, said)
    # No MPI call after finalize (Open MPI aborts on one, saying so), one line instead.
    everywhere(comm, "disallowed by the MPI standard" not in done.stderr, said)
    if ending != "cycle-at-exit":
        everywhere(comm, "left to the process's exit" in done.stderr, said)
    if ending == "used-after-finalize":
        everywhere(comm, "UsageError: MPI was finalized" in done.stdout, said)


def fake_mpi(version, handle_bytes):
    """A module like mpi4py.MPI over another MPI library, and a communicator of it."""
    module = types.ModuleType("other_mpi")
    module.Get_library_version = lambda: version
    module._sizeof = lambda _type: handle_bytes

    class Comm:
        __module__ = "other_mpi"

        def py2f(self):
            return MPI.COMM_SELF.py2f()

    module.Comm = Comm
    return module, Comm()


@pytest.mark.parametrize("library", ["MPICH Version:\t4.1.2", MPI.Get_library_version()])
def test_a_communicator_of_another_mpi_library_is_refused_naming_both(comm, monkeypatch, library):
    """mpi4py can load another libmpi than haloport's; its handles mean nothing to haloport."""
    # The same version string with handles of another size is another library too.
    handle = 4 if library.startswith("MPICH") else MPI._sizeof(MPI.Comm) + 4
    module, other = fake_mpi(library, handle)
    monkeypatch.setitem(sys.modules, "other_mpi", module)
    with pytest.raises(haloport.InvalidInputError, match="MPI library") as e:
        haloport.Exchange(other, haloport.Domain((8, 6, 4)))
    first_line = lambda v: v.splitlines()[0].strip("\0 \t")  # noqa: E731
    assert first_line(MPI.Get_library_version()) in str(e.value), str(e.value)
    assert first_line(library) in str(e.value), str(e.value)


class Exported:
    """An array known only through DLPack, as JAX's are (no __array_interface__)."""

    def __init__(self, array, device=True):
        self.array = array
        if device:
            self.__dlpack_device__ = array.__dlpack_device__

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)


class Legacy(Exported):
    """A producer older than DLPack 1.0: its __dlpack__ knows no max_version."""

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()


@pytest.mark.parametrize("producer", [Exported, Legacy])
def test_arrays_through_dlpack_are_exchanged_in_place(comm, producer):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        ex.exchange(producer(u))
        check_all(comm, ex, [u])


def test_a_read_only_dlpack_array_is_refused(comm):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        u.flags.writeable = False
        with pytest.raises(haloport.InvalidInputError, match="field 0: the array is read-only"):
            ex.exchange(Exported(u))


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class OnAGpu:
    """A DLPack producer whose tensor says it lies on CUDA device 0, with no
    __dlpack_device__ to ask first: the device must be read from the tensor itself."""

    def __init__(self, array):
        self.array = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = array.ctypes.data
        t.device = DLDevice(2, 0)
        t.ndim = array.ndim
        t.dtype = DLDataType(2, 64, 1)
        t.shape = self.shape

    def __dlpack__(self, **kwargs):
        if "max_version" in kwargs:
            raise TypeError("unexpected keyword argument 'max_version'")
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)


def test_a_dlpack_array_elsewhere_is_refused_without_dlpack_device(comm):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        u = fill(ex, 0)
        with pytest.raises(haloport.InvalidInputError, match="field 0: the array lies in CUDA device memory"):
            ex.exchange(OnAGpu(u))


class Interface:
    """An array known only through a hand-written array interface."""

    def __init__(self, **interface):
        self.__array_interface__ = dict(version=3, **interface)


def test_an_array_interface_whose_address_overflows_is_refused_not_a_panic(comm):
    """Values no real array has still raise the package's error, never a Rust panic."""
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        bad = Interface(data=(2**64 - 8, False), offset=16, shape=ex.shape(), typestr="<f8")
        with pytest.raises(haloport.InvalidInputError, match="field 0: .*overflows 64 bits"):
            ex.exchange(bad)
        u = fill(ex, 0)
        ex.exchange(u)
        check_all(comm, ex, [u])
