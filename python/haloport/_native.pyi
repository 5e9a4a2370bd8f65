"""Type stubs of the extension module ``haloport._native`` (re-exported by ``haloport``)."""

import os
from types import TracebackType
from typing import Any, List, Literal, Optional, Sequence, Tuple, Type, TypedDict, Union, final

__all__ = ["Domain", "Exchange", "FusedField", "Graph", "Neighbour", "backends", "__version__"]

__version__: str

_Triple = Tuple[int, int, int]
"""Three values, x first."""

_IntOrTriple = Union[int, Sequence[int]]
_BoolOrTriple = Union[bool, Sequence[bool]]
_DtypeLike = Any
"""A dtype name (``"float64"``, ``"f8"``), a NumPy or CuPy dtype, a NumPy scalar type
(``numpy.float32``) or a PyTorch dtype (``torch.float16``)."""

_ArrayLike = Any
"""An array offering ``__array_interface__`` (NumPy) or DLPack on the host backend,
``__cuda_array_interface__`` or DLPack (CuPy, PyTorch, Numba, JAX) on CUDA."""

class _PassedOver(TypedDict):
    """A route preferred before the one taken that could not serve the link."""

    route: str
    why: str

class _Route(TypedDict):
    """One neighbour's route (:attr:`Exchange.routes`)."""

    direction: _Triple
    peer: int
    locality: Literal["itself", "same-node", "other-node", "not-asked"]
    link: Literal["local", "mpi", "ipc", "gpu-mpi", "nccl"]
    why: str
    passed_over: List[_PassedOver]

_StreamLike = Any
"""``None`` (the array library's current stream), an object with ``__cuda_stream__``, a CuPy or
PyTorch stream, or a raw ``cudaStream_t`` as an int (0: the default stream)."""

def backends() -> str:
    """The backends this build has, comma-separated: ``"host"``, or ``"host,cuda"`` for a
    build with the ``cuda`` feature."""

@final
class Domain:
    """A halo-exchange declaration: the global grid, how it is split over the ranks, its
    periodicity and halos, and the fields exchanged together. Give the same declaration on
    every rank.

    Extents, halos and padding are given x first (x varies fastest in memory), as in the Rust
    API, the C ABI and the command line; every field's array is shaped ``(az, ay, ax)``, or
    ``(az, ay, ax, C)`` for ``C`` components per cell, in C order (see :meth:`Exchange.shape`).

    Args:
        grid: global extents ``(nx, ny, nz)`` in cells (one int: a cube).
        dtype: the fields' element type, or a list of one per field (which sets ``fields``).
            Float16/32/64, complex64/128, (u)int8/16/32/64 and bool.
        fields: how many fields travel together, each its own array (default 1, or the length
            of a ``dtype`` or ``components`` list).
        components: interleaved elements per cell (a velocity: 3), one for all fields or one
            per field.
        halo: halo width per dimension (one int: all), default 1.
        halo_lo: halo widths on the low side of x, y, z where they differ from ``halo``
            (0 allowed: nothing arrives there).
        halo_hi: halo widths on the high side, likewise.
        periodic: whether x, y, z wrap around (one bool: all), default ``True``.
        pad: extra allocated cells after the high halo of x, y, z (a pitched or aligned
            allocation); never read or written.
        procs: the process grid ``(px, py, pz)``; by default chosen like ``MPI_Dims_create``.
        neighbourhood: which neighbours fill the halos: ``"faces"`` (6), ``"faces-edges"``
            (18) or ``"all"`` (26, default).
        splits: the application's own decomposition: where the parts start along x, y and z,
            e.g. ``([0], [0], [0, 3, 6])``; the process grid is the number of starts.

    Raises:
        InvalidInputError: a value of the wrong kind or out of range (the rest is checked
            when an :class:`Exchange` is built, the same on every rank).
    """

    def __new__(
        cls,
        grid: _IntOrTriple,
        *,
        dtype: Union[_DtypeLike, Sequence[_DtypeLike], None] = None,
        fields: Optional[int] = None,
        components: Union[int, Sequence[int], None] = None,
        halo: Optional[_IntOrTriple] = None,
        halo_lo: Optional[_IntOrTriple] = None,
        halo_hi: Optional[_IntOrTriple] = None,
        periodic: Optional[_BoolOrTriple] = None,
        pad: Optional[_IntOrTriple] = None,
        procs: Optional[_IntOrTriple] = None,
        neighbourhood: Optional[Literal["faces", "faces-edges", "all", "6", "18", "26"]] = None,
        splits: Optional[Tuple[Sequence[int], Sequence[int], Sequence[int]]] = None,
    ) -> "Domain": ...
    @property
    def grid(self) -> _Triple:
        """Global extents ``(nx, ny, nz)`` in cells."""
    @property
    def procs(self) -> Optional[_Triple]:
        """The process grid ``(px, py, pz)`` given, or ``None``: chosen like
        ``MPI_Dims_create``."""
    @property
    def periodic(self) -> Tuple[bool, bool, bool]:
        """Whether x, y and z wrap around."""
    @property
    def halo_lo(self) -> _Triple:
        """Halo widths on the low side of x, y, z."""
    @property
    def halo_hi(self) -> _Triple:
        """Halo widths on the high side of x, y, z."""
    @property
    def pad(self) -> _Triple:
        """Extra allocated cells after the high halo of x, y, z; never read or written."""
    @property
    def fields(self) -> int:
        """Number of fields exchanged together."""
    @property
    def dtypes(self) -> list[str]:
        """Each field's dtype, as NumPy names it."""
    @property
    def components(self) -> list[int]:
        """Each field's components per cell."""
    @property
    def neighbourhood(self) -> str:
        """``"faces"``, ``"faces-edges"`` or ``"all"``."""

@final
class Neighbour:
    """How the messages to and from one neighbour travel."""

    @property
    def direction(self) -> Tuple[int, int, int]:
        """``(dx, dy, dz)``, each -1, 0 or 1: the side of this rank's part the neighbour is
        on."""
    @property
    def rank(self) -> int:
        """The neighbour's rank in the exchange's communicator (this rank itself along a
        periodic dimension it alone spans)."""
    @property
    def link(self) -> Literal["mpi", "ipc", "gpu-mpi", "nccl", "local"]:
        """How its messages travel (the Rust library's ``Link``, the C ABI's
        ``haloport_link``): ``"mpi"`` (host-staged through MPI), ``"ipc"`` (device-direct into
        the neighbour's memory), ``"gpu-mpi"`` (GPU-aware MPI from device memory), ``"nccl"``
        (NCCL, RCCL on AMD) or ``"local"`` (the neighbour is this rank: a periodic dimension it
        alone spans). Why: :attr:`Exchange.routes`."""

@final
class Graph:
    """Whole exchanges (and the program's own work between them) captured into a CUDA or HIP
    graph by :meth:`Exchange.begin_capture` / :meth:`Exchange.end_capture`, replayed with
    :meth:`Exchange.replay`: one launch for a whole step. It keeps the arrays captured alive
    while it lives; use it on the thread and with the exchange that captured it."""

    @property
    def exchanges(self) -> int:
        """How many exchanges one replay runs."""

class _FusedMessage(TypedDict):
    """One neighbour's message of one field (``haloport_fused_message``)."""

    dest: int
    dest_offset: int
    dest_stride: _Triple
    counter: int
    lo: _Triple
    hi: _Triple

class _FusedDescriptor(TypedDict):
    """One field's descriptor (``haloport_fused``), :meth:`Exchange.fused_descriptors`."""

    messages: int
    elem_bytes: int
    quiet_lo: _Triple
    quiet_hi: _Triple
    message: List[_FusedMessage]

@final
class FusedField:
    """One field fused mode allocated (:meth:`Exchange.fuse`): the whole allocation of field
    :attr:`field` of set :attr:`set` (halos and padding included), in the exchange's device
    memory, zeroed at first. The array libraries use it in place: ``numpy.asarray(f)`` on the
    host backend, ``cupy.asarray(f)`` on CUDA, shaped :meth:`Exchange.shape`. The memory stays
    allocated while this object (or an array over it) lives, also after the exchange was
    closed."""

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """NumPy's array interface, on the host backend; ``AttributeError`` on a GPU."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA array interface, on a GPU backend; ``AttributeError`` on the host."""
    @property
    def ptr(self) -> int:
        """The device address of the allocation's first element."""
    @property
    def nbytes(self) -> int:
        """Bytes allocated."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """``(az, ay, ax)``, or ``(az, ay, ax, C)`` for ``C`` components per cell."""
    @property
    def dtype(self) -> str:
        """The element type, as NumPy names it."""
    @property
    def set(self) -> int:
        """The set it belongs to (what :meth:`Exchange.fused_start` takes)."""
    @property
    def field(self) -> int:
        """Its field in the declaration."""
    @property
    def device(self) -> int:
        """The device's ordinal in this process."""

@final
class Exchange:
    """The halo exchange of one domain's fields over an mpi4py communicator.

    Building it is collective: every rank of ``comm`` builds it with the same declaration and
    options; a rank that fails (a bad option, no device) raises its error and the others
    :class:`OtherRankError`, and declarations that differ raise the same
    :class:`InvalidInputError` on every rank. ``comm`` is borrowed (duplicated, never freed).
    Use it from the thread that built it; every call that waits releases the GIL.

    Args:
        comm: any mpi4py intra-communicator (``MPI.COMM_WORLD``, a split, a Cartesian one;
            for a Cartesian one the declaration's process grid and periodicity must match).
        domain: the declaration.
        backend: ``"host"`` (NumPy arrays) or ``"cuda"`` (a build with CUDA: CuPy, PyTorch,
            ... arrays), see :func:`backends`.
        device: the GPU this rank uses; by default its index among the ranks of its node
            (modulo the devices visible).
        transport: ``"mpi"`` (through MPI: host-staged, or GPU-aware MPI), ``"ipc"``
            (device-direct to the ranks of the same node, through MPI to others), ``"nccl"``
            (NCCL, RCCL on AMD, loaded at run time) or ``"auto"`` (per neighbour: ``"ipc"``
            within a node, NCCL between nodes where every rank loads it, else MPI).
        strategy: ``"base"`` (pack everything, send; receive everything, unpack) or ``"tq"``
            (each neighbour sent and unpacked as soon as it is ready).
        timeout: seconds any single wait may take before :class:`TimeoutError`.
        checked: ``finish`` waits for its unpack and reports any failure on the device
            itself (costs the overlap of the unpack with later work).
        gpu_aware_mpi: whether messages through MPI go from device memory: ``"auto"`` (where
            the MPI library says it takes it; never on the host backend), ``"on"``, ``"off"``.
        routes: a routes file (a path, ``str`` or ``os.PathLike``) as ``haloport tune`` writes
            it: transport ``"auto"`` with the file's routes per kind of link (within a node,
            between nodes), and the strategy and kernel settings it measured; it overrides
            ``transport`` and ``strategy``. Every rank reads it; give every rank the same
            contents. Each neighbour's route and why: :attr:`routes`.

    Raises:
        InvalidInputError: a bad option, a declaration the job cannot run or that differs
            across ranks, ``comm`` not an mpi4py communicator, a routes file that cannot be
            read or is not valid (the message names the file).
        OtherRankError: another rank failed to set up.
        DeviceError: no device, the backend's kernels missing.
        MpiError: an MPI call failed.
    """

    def __new__(
        cls,
        comm: Any,
        domain: Domain,
        *,
        backend: Literal["host", "cuda", "hip"] = "host",
        device: Optional[int] = None,
        transport: Literal["mpi", "ipc", "nccl", "auto"] = "mpi",
        strategy: Literal["base", "tq"] = "base",
        timeout: float = 10.0,
        checked: bool = False,
        gpu_aware_mpi: Literal["auto", "on", "off"] = "auto",
        routes: Union[str, "os.PathLike[str]", None] = None,
    ) -> "Exchange": ...
    def exchange(
        self, arrays: Union[_ArrayLike, Sequence[_ArrayLike]], stream: _StreamLike = None
    ) -> None:
        """Exchanges the halos of ``arrays`` and returns when they are filled.

        ``arrays`` holds one array per field, in the declaration's order (a single array for
        a domain of one field): each the whole allocation (halos and padding included),
        shaped :meth:`shape`, C-contiguous, of the field's dtype, writable, on this
        exchange's device. Arrays are used in place, never copied. On a GPU the exchange is
        ordered after the work queued on ``stream`` before the call, and after the stream an
        array's ``__cuda_array_interface__`` names as its producer's, where that is another.
        Arrays given through DLPack are asked for DLPack 1.0 (read-only arrays are refused),
        older producers for the unversioned form.

        Raises:
            InvalidInputError: an array of the wrong shape, strides, dtype or device, read-only,
                the wrong number of arrays, a stream that is none.
            TimeoutError: a neighbour did not take part within ``timeout``.
            UsageError: the exchange was closed, is called from another thread than the one
                that built it (the message names both), or MPI was finalized.
            InternalError: a fault inside haloport; the exchange can no longer be used.
        """
    def start(
        self, arrays: Union[_ArrayLike, Sequence[_ArrayLike]], stream: _StreamLike = None
    ) -> None:
        """Starts the exchange of ``arrays``' halos on ``stream``: packs and sends what
        leaves this rank, after the work queued there before. Work that touches neither the
        halos nor the cells next to them may run until :meth:`finish`. The arrays are kept
        alive until a :meth:`wait` (or :meth:`exchange`) covers this exchange, also when the
        next step's ``start`` comes first. Raises as :meth:`exchange`."""
    def finish(self, stream: _StreamLike = None) -> None:
        """Completes the started exchange on ``stream``: the halos are filled for the work
        queued there after this call (on the host backend, when it returns).

        Raises:
            UsageError: no exchange was started.
            TimeoutError: a neighbour did not send within ``timeout``.
        """
    def wait(self) -> None:
        """Waits until the exchange's work on the device completed (the CPU side of
        :meth:`finish`'s queued unpack); the arrays of every exchange started since the last
        wait are then released."""
    def close(self) -> None:
        """Ends the exchange and frees its buffers (collective with ``transport="ipc"``).
        Closing twice does nothing; every other call afterwards raises :class:`UsageError`."""
    def begin_capture(self, stream: _StreamLike = None) -> None:
        """Starts capturing ``stream`` into a graph: until :meth:`end_capture`, :meth:`start`
        and :meth:`finish` on that stream, and the program's own work queued there, are
        recorded, not run. Capture whole exchanges, an even number of them. Every neighbour
        must be device-direct or this rank itself (``transport="ipc"``, every rank on one
        node).

        Raises:
            InvalidInputError: a host-staged neighbour (named); no stream given on a GPU (the
                default stream cannot be captured).
            DeviceError: the host backend, which captures no graphs.
            UsageError: already capturing, or between :meth:`start` and :meth:`finish`.
        """
    def end_capture(self, stream: _StreamLike = None) -> Graph:
        """Ends the capture begun on ``stream`` (also after an error inside it) and returns the
        graph; nothing captured has run yet."""
    def replay(self, graph: Graph, stream: _StreamLike = None) -> None:
        """Queues one replay of ``graph`` on ``stream``; :meth:`wait` waits for it."""
    def fuse(self, sets: int) -> List[List[FusedField]]:
        """Fused mode: allocates ``sets`` sets of the domain's fields through the library
        (mapped into the neighbours), builds one descriptor per field and set, and returns the
        fields, a list per set in the declaration's order. A step that writes set ``s`` calls
        :meth:`fused_start` before its kernels store the set's boundary cells into the
        neighbours' halos (``haloport_device.h``, in :func:`haloport.include_dir`) and
        :meth:`fused_finish` after. Collective: every rank gives the same ``sets``. The
        descriptors lead to the neighbours that are device-direct or this rank itself; the
        others are served by an ordinary exchange inside :meth:`fused_finish`.

        Raises:
            InvalidInputError: 0 sets, different numbers of sets on different ranks, a
                neighbour of another route (named), cells other than one 4- or 8-byte element.
            UsageError: already fused; the exchange closed.
            OtherRankError: another rank failed to allocate or set up.
        """
    def fused_start(self, set: int, stream: _StreamLike = None) -> List[int]:
        """Queues on ``stream`` this rank's word that it is done reading set ``set``'s halos
        and a wait, on the device, for every neighbour's; returns the device address of each
        field's descriptor (``const haloport_fused*``) for the kernels that follow. ``None``:
        the default stream. On the host backend it returns once every neighbour is done
        reading.

        Raises:
            UsageError: before :meth:`fuse`, a set it did not make, the exchange closed.
            TimeoutError: an earlier wait that gave up (naming the neighbour and halo).
        """
    def fused_finish(self, set: int, stream: _StreamLike = None) -> None:
        """Queues on ``stream`` a wait, on the device, until every cell of set ``set``'s
        incoming messages arrived; work queued there afterwards sees the halos filled (on the
        host backend: when it returns). Raises as :meth:`fused_start`."""
    def fused_descriptors(self, set: int) -> List[_FusedDescriptor]:
        """Set ``set``'s descriptors as the device header lays them out, one per field (on
        the host backend the addresses are this process's memory). Raises as
        :meth:`fused_start`."""
    def __enter__(self) -> "Exchange": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> bool:
        """Closes the exchange; an error of ``close`` is raised only if no exception is
        already on its way."""
    def shape(self, field: int = 0) -> Tuple[int, ...]:
        """The shape field ``field``'s array must have: ``(az, ay, ax)``, or
        ``(az, ay, ax, C)`` for ``C`` components per cell (halos and padding included)."""
    def interior(self, array: _ArrayLike) -> Any:
        """This rank's own cells of ``array``: a view (``array[z0:z1, y0:y1, x0:x1]``)."""
    def halo(self, array: _ArrayLike, direction: Tuple[int, int, int]) -> Any:
        """The halo of ``array`` on side ``direction`` ``(dx, dy, dz)`` (each -1, 0 or 1, not
        all 0): the cells the neighbour in that direction fills, as a view of ``array``."""
    @property
    def rank(self) -> int:
        """This rank in the exchange's communicator."""
    @property
    def procs(self) -> _Triple:
        """The process grid ``(px, py, pz)``."""
    @property
    def coords(self) -> _Triple:
        """This rank's coordinates in the process grid, x first (as ``MPI_Cart_coords``)."""
    @property
    def local(self) -> _Triple:
        """This rank's interior extents ``(nx, ny, nz)``."""
    @property
    def origin(self) -> _Triple:
        """Global index ``(x, y, z)`` of this rank's first interior cell."""
    @property
    def halo_lo(self) -> _Triple:
        """Halo widths on the low side of x, y, z: where the interior starts in the array."""
    @property
    def halo_hi(self) -> _Triple:
        """Halo widths on the high side of x, y, z."""
    @property
    def alloc(self) -> _Triple:
        """Allocated extents ``(ax, ay, az)``: low halo + interior + high halo + padding."""
    @property
    def pad(self) -> _Triple:
        """Cells allocated after the high halo of x, y, z (the declaration's ``pad``): never
        read or written."""
    @property
    def neighbours(self) -> list[Neighbour]:
        """Every neighbour this rank exchanges with, and how its messages travel."""
    @property
    def routes(self) -> List[_Route]:
        """Each neighbour's route and why it was chosen, in the order of :attr:`neighbours`
        (a new list each time): ``{"direction": (dx, dy, dz), "peer": rank, "locality":
        "same-node", "link": "ipc", "why": "...", "passed_over": [{"route": "nccl", "why":
        "..."}]}``. ``locality`` is ``"itself"``, ``"same-node"``, ``"other-node"`` or
        ``"not-asked"`` (the ``mpi`` and ``nccl`` transports do not look); ``passed_over``
        lists the routes preferred before the one taken that could not serve the link."""
    @property
    def domain(self) -> Domain:
        """The declaration."""
    @property
    def backend(self) -> str:
        """``"host"``, ``"cuda"`` or ``"hip"``."""
    @property
    def device(self) -> int:
        """The device's ordinal in this process."""
    @property
    def transport(self) -> str:
        """``"mpi"``, ``"ipc"``, ``"nccl"`` or ``"auto"``, as asked or as a routes file set it
        (each neighbour's own: :attr:`neighbours`, and why: :attr:`routes`)."""
    @property
    def strategy(self) -> str:
        """``"base"`` or ``"tq"``."""
    @property
    def timeout(self) -> float:
        """Seconds any single wait may take."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
