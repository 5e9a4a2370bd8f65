//! haloport from Python (SPEC 17): the extension module `haloport._native`, a thin layer over
//! the Rust library's foreign interface (`haloport::foreign`). It converts what a Python
//! program holds (an mpi4py communicator, NumPy, CuPy or PyTorch arrays, stream objects) into
//! the raw handles that interface takes, and the library's errors into exceptions; every
//! decision about the exchange is the library's.
//!
//! # Threading
//! The backends are not `Send`: an exchange is used from the thread that created it. Python may
//! still hand the object to any thread (a thread pool) or collect it on any, so the exchange
//! lives in an [`Owned`] that checks the calling thread before every use and refuses others
//! with a `UsageError` naming both threads (PyO3's `unsendable` would panic instead); its
//! properties, plain data copied at construction, are readable from any thread. Every call that
//! waits (set-up, `exchange`, `start`, `finish`, `wait`, `close`) releases the GIL while it
//! runs, through [`Unbound`]. A panic is caught where the binding calls into Rust and raised as
//! `InternalError`.
//!
//! # Lifetimes
//! The arrays of every exchange started since the last wait are held (`in_flight`) until a
//! wait covers them; recently read sets of arrays are remembered by weak reference only
//! ([`ReadCache`]). An exchange collected after MPI was finalized is leaked with one line by
//! the foreign layer, never closed (closing calls MPI).

mod arrays;
mod errors;
mod streams;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use haloport::core::domain::{DomainSpec, ElemType, FieldShape, Layout, Neighbourhood, Splits};
use haloport::core::halo::{HaloOptions, HaloStrategy, RouteChoice, RoutesFile};
use haloport::core::transport::{GpuAwareMpi, TransportKind};
use haloport::foreign::{
    built_backends, check_mpi, mpi_finalized, Allocation, BackendKind, ErrorKind, ForeignBackend,
    ForeignExchange, ForeignGraph, FusedFields, RawField, DEFAULT_HALO, DEFAULT_NEIGHBOURHOOD,
    DEFAULT_PAD, DEFAULT_PERIODIC,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySlice, PyTuple};

use arrays::{Dtype, Expected, Target};
use errors::{invalid, raise, IntoPyResult};

/// A value moved into `Python::allow_threads`, which wants `Send` closures because it could
/// run them elsewhere; it runs them on the calling thread, so a non-`Send` exchange borrowed
/// for the call stays on the thread that owns it.
struct Unbound<T>(T);

// SAFETY: `allow_threads` runs its closure on the calling thread before it returns (PyO3's
// documentation of `Python::allow_threads`); the value never reaches another thread.
unsafe impl<T> Send for Unbound<T> {}

impl<T> Unbound<T> {
    /// The value (a method, so that a closure captures the whole wrapper, not its field).
    fn into_inner(self) -> T {
        self.0
    }
}

/// `(x, y, z)` for Python.
fn tuple3<T: Copy>(v: [T; 3]) -> (T, T, T) {
    (v[0], v[1], v[2])
}

/// Python's spelling of a value for `repr`.
fn py_text<T: std::fmt::Debug>(v: T) -> String {
    format!("{v:?}")
        .replace('[', "(")
        .replace(']', ")")
        .replace("true", "True")
        .replace("false", "False")
}

/// One value for all three dimensions, or three.
fn triple<'py, T: FromPyObject<'py> + Copy>(
    value: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<[T; 3]> {
    if let Ok(one) = value.extract::<T>() {
        return Ok([one; 3]);
    }
    value.extract::<[T; 3]>().map_err(|_| {
        invalid(format!(
            "{what}: {value} is neither one value nor three (x, y, z)"
        ))
    })
}

/// One value for every field, or one per field.
fn per_field<'py, T: Clone>(
    value: &Bound<'py, PyAny>,
    fields: usize,
    what: &str,
    one: impl Fn(&Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    let list = value
        .downcast::<PyList>()
        .map(|l| l.iter().collect::<Vec<_>>());
    let list = list.or_else(|_| value.downcast::<PyTuple>().map(|t| t.iter().collect()));
    match list {
        Ok(items) if items.len() == fields => items.iter().map(one).collect(),
        Ok(items) => Err(invalid(format!(
            "{what}: {} values for {fields} fields",
            items.len()
        ))),
        Err(_) => Ok(vec![one(value)?; fields]),
    }
}

/// A halo-exchange declaration: the global grid, how it is split over the ranks, its
/// periodicity and halos, and the fields exchanged together (SPEC 13, 15). Give the same
/// declaration on every rank.
///
/// Extents, halos and padding are given x first (x varies fastest in memory), as in the Rust
/// API, the C ABI and the command line; every field's array is shaped `(az, ay, ax)`, or
/// `(az, ay, ax, C)` for `C` components per cell, in C order (see `Exchange.shape`).
///
/// Args:
///     grid: global extents `(nx, ny, nz)` in cells (one int: a cube).
///     dtype: the fields' element type, or one per field (which sets `fields`): float16/32/64,
///         complex64/128, (u)int8/16/32/64, bool; names, NumPy, CuPy and PyTorch dtypes.
///     fields: how many fields travel together, each its own array (default 1, or the length
///         of a `dtype` or `components` list).
///     components: interleaved elements per cell (a velocity: 3), for all fields or per field.
///     halo: halo width per dimension (one int: all), default 1.
///     halo_lo, halo_hi: halo widths on the low and high side of x, y, z where they differ
///         from `halo` (0 allowed: nothing arrives there).
///     periodic: whether x, y, z wrap around (one bool: all), default True.
///     pad: extra allocated cells after the high halo of x, y, z; never read or written.
///     procs: the process grid `(px, py, pz)`; by default chosen like `MPI_Dims_create`.
///     neighbourhood: `"faces"` (6), `"faces-edges"` (18) or `"all"` (26, default).
///     splits: the application's own decomposition: where the parts start along x, y and z.
///
/// Raises:
///     InvalidInputError: a value of the wrong kind or out of range (the rest is checked when
///         an `Exchange` is built, the same on every rank).
#[pyclass(module = "haloport", frozen)]
struct Domain {
    spec: DomainSpec,
    dtypes: Vec<Dtype>,
    components: Vec<u32>,
}

#[pymethods]
impl Domain {
    #[new]
    #[pyo3(signature = (grid, *, dtype = None, fields = None, components = None, halo = None, halo_lo = None, halo_hi = None, periodic = None, pad = None, procs = None, neighbourhood = None, splits = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        grid: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        fields: Option<usize>,
        components: Option<&Bound<'_, PyAny>>,
        halo: Option<&Bound<'_, PyAny>>,
        halo_lo: Option<&Bound<'_, PyAny>>,
        halo_hi: Option<&Bound<'_, PyAny>>,
        periodic: Option<&Bound<'_, PyAny>>,
        pad: Option<&Bound<'_, PyAny>>,
        procs: Option<&Bound<'_, PyAny>>,
        neighbourhood: Option<&str>,
        splits: Option<(Vec<u64>, Vec<u64>, Vec<u64>)>,
    ) -> PyResult<Domain> {
        let grid = triple::<u64>(grid, "grid")?;
        // A list of dtypes or components sets the number of fields, unless `fields` does.
        let listed = |v: Option<&Bound<'_, PyAny>>| {
            v.and_then(|v| {
                v.downcast::<PyList>()
                    .map(|l| l.len())
                    .or_else(|_| v.downcast::<PyTuple>().map(|t| t.len()))
                    .ok()
            })
        };
        let fields = fields.or(listed(dtype)).or(listed(components)).unwrap_or(1);
        if fields == 0 || fields > 64 {
            return Err(invalid(format!("fields: {fields}; give 1 to 64 fields")));
        }
        let dtypes = match dtype {
            Some(d) => per_field(d, fields, "dtype", Dtype::from_py)?,
            None => vec![Dtype::F64; fields],
        };
        let components = match components {
            Some(c) => per_field(c, fields, "components", |c| {
                c.extract::<u32>()
                    .ok()
                    .filter(|&c| (1..=64).contains(&c))
                    .ok_or_else(|| invalid(format!("components: {c}; give 1 to 64")))
            })?,
            None => vec![1; fields],
        };
        let halo = halo
            .map(|h| triple::<u32>(h, "halo"))
            .transpose()?
            .unwrap_or(DEFAULT_HALO);
        let opt3 =
            |v: Option<&Bound<'_, PyAny>>, what| v.map(|v| triple::<u32>(v, what)).transpose();
        let periodic = periodic
            .map(|p| triple::<bool>(p, "periodic"))
            .transpose()?
            .unwrap_or(DEFAULT_PERIODIC);
        let procs = procs.map(|p| triple::<u32>(p, "procs")).transpose()?;
        let neighbourhood: Neighbourhood = match neighbourhood {
            Some(n) => n.parse().py()?,
            None => DEFAULT_NEIGHBOURHOOD,
        };
        let plain = components.iter().all(|&c| c == 1)
            && dtypes.iter().all(|d| *d == dtypes[0])
            && matches!(dtypes[0].name().as_str(), "float32" | "float64");
        let elem = if dtypes[0].bytes() == 4 {
            ElemType::F32
        } else {
            ElemType::F64
        };
        let spec = DomainSpec {
            grid,
            procs,
            periodic,
            halo,
            elem,
            fields: fields as u32,
            layout: Layout {
                halo_lo: opt3(halo_lo, "halo_lo")?,
                halo_hi: opt3(halo_hi, "halo_hi")?,
                pad: opt3(pad, "pad")?.unwrap_or(DEFAULT_PAD),
                neighbourhood,
                splits: splits.map(|(x, y, z)| Splits { x, y, z }),
                // Cells other than one f32 or f64 each are declared field by field.
                fields: (!plain).then(|| {
                    dtypes
                        .iter()
                        .zip(&components)
                        .map(|(d, &c)| FieldShape {
                            elem_bytes: d.bytes(),
                            components: c,
                        })
                        .collect()
                }),
            },
        };
        Ok(Domain {
            spec,
            dtypes,
            components,
        })
    }

    /// Global extents `(nx, ny, nz)` in cells.
    #[getter]
    fn grid(&self) -> (u64, u64, u64) {
        tuple3(self.spec.grid)
    }

    /// The process grid `(px, py, pz)` given, or `None`: chosen like `MPI_Dims_create`.
    #[getter]
    fn procs(&self) -> Option<(u32, u32, u32)> {
        self.spec.procs.map(tuple3)
    }

    /// Whether x, y and z wrap around.
    #[getter]
    fn periodic(&self) -> (bool, bool, bool) {
        tuple3(self.spec.periodic)
    }

    /// Halo widths on the low side of x, y, z.
    #[getter]
    fn halo_lo(&self) -> (u32, u32, u32) {
        tuple3(self.spec.halo_lo())
    }

    /// Halo widths on the high side of x, y, z.
    #[getter]
    fn halo_hi(&self) -> (u32, u32, u32) {
        tuple3(self.spec.halo_hi())
    }

    /// Extra allocated cells after the high halo of x, y, z; never read or written.
    #[getter]
    fn pad(&self) -> (u32, u32, u32) {
        tuple3(self.spec.layout.pad)
    }

    /// Number of fields exchanged together.
    #[getter]
    fn fields(&self) -> usize {
        self.dtypes.len()
    }

    /// Each field's dtype, as NumPy names it.
    #[getter]
    fn dtypes(&self) -> Vec<String> {
        self.dtypes.iter().map(|d| d.name()).collect()
    }

    /// Each field's components per cell.
    #[getter]
    fn components(&self) -> Vec<u32> {
        self.components.clone()
    }

    /// `faces`, `faces-edges` or `all`.
    #[getter]
    fn neighbourhood(&self) -> &'static str {
        self.spec.layout.neighbourhood.name()
    }

    fn __repr__(&self) -> String {
        format!(
            "Domain(grid={}, dtype={:?}, components={:?}, halo_lo={}, halo_hi={}, periodic={}, pad={}, procs={}, neighbourhood={:?})",
            py_text(self.spec.grid),
            self.dtypes(),
            self.components,
            py_text(self.spec.halo_lo()),
            py_text(self.spec.halo_hi()),
            py_text(self.spec.periodic),
            py_text(self.spec.layout.pad),
            self.spec.procs.map_or_else(|| "None".to_owned(), py_text),
            self.neighbourhood()
        )
    }
}

/// How the messages to and from one neighbour travel.
#[pyclass(module = "haloport", frozen, get_all)]
struct Neighbour {
    /// `(dx, dy, dz)`, each -1, 0 or 1: the side of this rank's part the neighbour is on.
    direction: (i8, i8, i8),
    /// The neighbour's rank in the exchange's communicator (this rank itself along a periodic
    /// dimension it alone spans).
    rank: i32,
    /// How its messages travel (the Rust library's `Link`, the C ABI's `haloport_link`):
    /// `"mpi"` (host-staged through MPI), `"ipc"` (device-direct into the neighbour's memory),
    /// `"gpu-mpi"` (GPU-aware MPI from device memory), `"nccl"` (NCCL, RCCL on AMD) or
    /// `"local"` (the neighbour is this rank: a periodic dimension it alone spans). Why:
    /// `Exchange.routes`.
    link: String,
}

#[pymethods]
impl Neighbour {
    fn __repr__(&self) -> String {
        format!(
            "Neighbour(direction={:?}, rank={}, link={:?})",
            self.direction, self.rank, self.link
        )
    }
}

/// The halo exchange of one domain's fields over an mpi4py communicator.
///
/// Building it is collective: every rank of `comm` builds it with the same declaration and
/// options; a rank that fails (a bad option, no device) raises its error and the others
/// `OtherRankError`, and declarations that differ raise the same `InvalidInputError` on every
/// rank. `comm` is borrowed (duplicated, never freed). Use it from the thread that built it;
/// every call that waits releases the GIL.
///
/// Args:
///     comm: any mpi4py intra-communicator (`MPI.COMM_WORLD`, a split, a Cartesian one whose
///         grid and periodicity match the declaration).
///     domain: the `Domain`.
///     backend: `"host"` (NumPy arrays) or `"cuda"` (CuPy, PyTorch, ... arrays; a build with
///         CUDA, see `backends()`).
///     device: the GPU this rank uses; by default its index among the ranks of its node.
///     transport: `"mpi"` (host-staged, or GPU-aware MPI), `"ipc"` (device-direct within a
///         node), `"nccl"` (NCCL, RCCL on AMD) or `"auto"` (per neighbour, by capability).
///     gpu_aware_mpi: `"auto"`, `"on"` or `"off"`.
///     strategy: `"base"` or `"tq"` (each neighbour sent and unpacked as soon as ready).
///     timeout: seconds any single wait may take before `TimeoutError` (default 10).
///     checked: `finish` waits for its unpack and reports a failure on the device itself.
///     routes: a routes file (a path, `str` or `os.PathLike`) as `haloport tune` writes it:
///         transport `"auto"` with the file's routes per kind of link, and the strategy and
///         kernel settings it measured, overriding `transport` and `strategy`. Read on every
///         rank; give every rank the same contents. Each neighbour's route: `routes`.
///
/// Raises:
///     InvalidInputError, OtherRankError, DeviceError, MpiError (see `haloport.errors`); a
///     routes file that cannot be read or is not valid raises `InvalidInputError` naming it.
#[pyclass(module = "haloport")]
struct Exchange {
    /// The exchange and the thread it belongs to.
    owned: Owned,
    /// The plan, kept for the views and properties after `close`.
    plan: haloport::core::domain::HaloPlan,
    /// How this rank's fields lie in memory (the foreign layer's read-back).
    allocation: Allocation,
    domain: Py<Domain>,
    expected: Vec<Expected>,
    backend: BackendKind,
    ordinal: usize,
    options: HaloOptions,
    neighbours: Vec<Py<Neighbour>>,
    /// Each neighbour's route and why, in the plan's order (kept from set-up).
    routes: Vec<RouteChoice>,
    /// The arrays of every exchange started since the last wait (each object once), kept alive
    /// until a wait covers them: a `start` after `finish` (the next step before waiting) adds
    /// its arrays to those of the exchange still in flight, never replaces them.
    in_flight: Vec<PyObject>,
    /// Recently read sets of arrays (see `raw_fields`), held by weak reference.
    read: ReadCache,
}

/// How many sets of arrays [`ReadCache`] remembers: a Jacobi loop alternates two, a solver
/// with a few fields of state a few more (the Rust library's table cache keeps a few sets the
/// same way).
const READ_SETS: usize = 4;

/// The sets of arrays read recently, with what was read: a loop that hands over the same few
/// sets every step reads each once. Arrays are held by weak reference, so that an array the
/// program dropped is freed as it would be without haloport (an entry whose array died is
/// simply a miss); arrays that cannot be weakly referenced are read every call.
#[derive(Default)]
struct ReadCache {
    /// Most recently used last.
    sets: Vec<Vec<(PyObject, Vec<u64>, RawField)>>,
}

/// The exchange, usable only from the thread that built it (the backends are not `Send`:
/// their streams and contexts belong to it), and nothing at all once MPI was finalized.
///
/// Python may hand the `Exchange` object to any thread (a thread pool) and collect it on
/// any; every use goes through [`Owned::get`], which refuses other threads with a
/// `UsageError` naming the owner, and [`Drop`] leaves an exchange it may not touch to the
/// process's exit.
struct Owned {
    /// `None` once closed.
    inner: Option<ForeignExchange>,
    /// The thread that built it.
    thread: std::thread::ThreadId,
    /// That thread as Python names it, for messages.
    thread_name: String,
    /// Why the exchange can no longer be used (a panic inside haloport), where it cannot.
    broken: Option<String>,
}

// SAFETY: the value moves between threads only as part of the Python object; the exchange
// inside is touched only on the thread that built it ([`Owned::get`] checks the thread before
// handing it out, [`Drop`] leaks it rather than drop it elsewhere).
unsafe impl Send for Owned {}
// SAFETY: as for `Send`: shared references reach the exchange only through `Owned::get`,
// which takes `&mut self` and checks the thread.
unsafe impl Sync for Owned {}

/// Python's name of the calling thread, e.g. `MainThread` or `ThreadPoolExecutor-0_0`.
fn python_thread_name(py: Python<'_>) -> String {
    py.import("threading")
        .and_then(|t| t.call_method0("current_thread"))
        .and_then(|t| t.getattr("name"))
        .and_then(|n| n.extract())
        .unwrap_or_else(|_| format!("{:?}", std::thread::current().id()))
}

impl Owned {
    /// The open exchange, on the thread that built it.
    ///
    /// # Errors
    /// `UsageError`: another thread, an exchange closed or broken.
    fn get(&mut self, py: Python<'_>) -> PyResult<&mut ForeignExchange> {
        if std::thread::current().id() != self.thread {
            return Err(raise(
                ErrorKind::Usage,
                format!(
                    "this Exchange belongs to thread '{}', which built it; it was called from thread '{}': use an exchange only from the thread that built it (build one per thread)",
                    self.thread_name,
                    python_thread_name(py)
                ),
            ));
        }
        if let Some(why) = &self.broken {
            return Err(raise(ErrorKind::Usage, why.clone()));
        }
        if self.inner.is_some() && mpi_finalized() {
            return Err(raise(
                ErrorKind::Usage,
                "MPI was finalized: the exchange can no longer be used (close it before MPI finalizes)",
            ));
        }
        self.inner
            .as_mut()
            .ok_or_else(|| raise(ErrorKind::Usage, "the exchange was closed"))
    }
}

impl Drop for Owned {
    /// An exchange collected unclosed closes itself ([`ForeignExchange`]'s own drop, which
    /// after `MPI_Finalize` leaks it with one line instead: no MPI call then, which would abort
    /// the program). Where it may not be touched at all (collected on another thread than
    /// its own, or broken by a fault inside haloport) it is leaked with one line saying why:
    /// its memory and communicator go with the process.
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let why = if self.broken.is_some() {
            "an earlier call failed inside haloport"
        } else if std::thread::current().id() != self.thread {
            "it was collected on another thread than the one that built it"
        } else {
            drop(inner);
            return;
        };
        haloport::foreign::log_line(&format!(
            "an Exchange was collected unclosed and {why}; its resources are left to the process's exit (call close() on the thread that built it)"
        ));
        std::mem::forget(inner);
    }
}

/// Whole exchanges (and the program's own work between them) captured into a CUDA or HIP
/// graph by `Exchange.begin_capture` / `end_capture`, replayed with `Exchange.replay`: one
/// launch for a whole step. It keeps the arrays captured alive while it lives; use it on the
/// thread and with the exchange that captured it.
#[pyclass(module = "haloport")]
struct Graph {
    /// The graph; `None` never (an `Option` so that `Drop` can take it).
    graph: Option<ForeignGraph>,
    /// The thread that captured it (the graph's backend belongs to it).
    thread: std::thread::ThreadId,
    /// The arrays of the exchanges captured: the graph reads and writes them on every replay.
    arrays: Vec<PyObject>,
    /// How many exchanges one replay runs.
    exchanges: u64,
}

// SAFETY: as for `Owned`: the graph is touched only on the thread that captured it (`replay`
// checks the exchange's thread, which is the graph's; `Drop` leaks it elsewhere).
unsafe impl Send for Graph {}
// SAFETY: as for `Send`; shared references reach only `exchanges` and `arrays`.
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Some(graph) = self.graph.take() {
            if std::thread::current().id() == self.thread {
                drop(graph);
            } else {
                haloport::foreign::log_line(
                    "a Graph was collected on another thread than the one that captured it; it is left to the process's exit",
                );
                std::mem::forget(graph);
            }
        }
    }
}

#[pymethods]
impl Graph {
    /// How many exchanges one replay runs.
    #[getter]
    fn exchanges(&self) -> u64 {
        self.exchanges
    }

    fn __repr__(&self) -> String {
        format!("Graph(exchanges={})", self.exchanges)
    }
}

/// One field fused mode allocated (`Exchange.fuse`): the whole allocation of field `field` of
/// set `set` (halos and padding included), in the exchange's device memory, zeroed at first.
/// It offers the array interface of its backend, so that the array libraries use it in place:
/// `numpy.asarray(f)` on the host backend (`__array_interface__`), `cupy.asarray(f)` on CUDA
/// (`__cuda_array_interface__`), each shaped `Exchange.shape(field)`. The memory stays
/// allocated while this object (or an array over it) lives, also after the exchange was
/// closed; the neighbours store into its halos between `fused_start` and `fused_finish`.
#[pyclass(module = "haloport", frozen)]
struct FusedField {
    /// A share of every fused field's memory (the exchange's backend's allocations).
    share: Option<FusedFields>,
    /// The thread of the exchange that allocated it: the memory is freed only there.
    thread: std::thread::ThreadId,
    addr: u64,
    bytes: usize,
    shape: Vec<u64>,
    dtype: arrays::Dtype,
    backend: BackendKind,
    device: usize,
    set: usize,
    field: usize,
}

// SAFETY: the share is touched only by `Drop`, which frees it on the thread that allocated it
// and leaks it elsewhere; the rest is plain data.
unsafe impl Send for FusedField {}
// SAFETY: as for `Send`: shared references reach only the plain data.
unsafe impl Sync for FusedField {}

impl Drop for FusedField {
    fn drop(&mut self) {
        if let Some(share) = self.share.take() {
            if std::thread::current().id() == self.thread {
                drop(share);
            } else {
                haloport::foreign::log_line(
                    "a FusedField was collected on another thread than the one that built its exchange; its memory is left to the process's exit",
                );
                std::mem::forget(share);
            }
        }
    }
}

impl FusedField {
    /// The interface dictionary (version 3) both protocols share.
    fn interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.dtype.typestr())?;
        d.set_item("data", (self.addr, false))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

#[pymethods]
impl FusedField {
    /// NumPy's array interface, on the host backend (`numpy.asarray(field)`).
    ///
    /// Raises:
    ///     AttributeError: on a GPU backend (use `__cuda_array_interface__`).
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.backend != BackendKind::Host {
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "a field of the {} backend is device memory: use __cuda_array_interface__ (cupy.asarray)",
                self.backend.name()
            )));
        }
        self.interface(py)
    }

    /// The CUDA array interface, on a GPU backend (`cupy.asarray(field)`); `stream` is None:
    /// the memory was zeroed before `fuse` returned.
    ///
    /// Raises:
    ///     AttributeError: on the host backend (use `__array_interface__`).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.backend == BackendKind::Host {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "a field of the host backend is host memory: use __array_interface__ (numpy.asarray)",
            ));
        }
        let d = self.interface(py)?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// The device address of the allocation's first element.
    #[getter]
    fn ptr(&self) -> u64 {
        self.addr
    }

    /// Bytes allocated.
    #[getter]
    fn nbytes(&self) -> usize {
        self.bytes
    }

    /// `(az, ay, ax)`, or `(az, ay, ax, C)` for `C` components per cell.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The element type, as NumPy names it.
    #[getter]
    fn dtype(&self) -> String {
        self.dtype.name()
    }

    /// The set it belongs to (what `fused_start` and `fused_finish` take).
    #[getter]
    fn set(&self) -> usize {
        self.set
    }

    /// Its field in the declaration.
    #[getter]
    fn field(&self) -> usize {
        self.field
    }

    /// The device's ordinal in this process.
    #[getter]
    fn device(&self) -> usize {
        self.device
    }

    fn __repr__(&self) -> String {
        format!(
            "FusedField(set={}, field={}, shape={}, dtype={:?}, backend={:?})",
            self.set,
            self.field,
            py_text(&self.shape),
            self.dtype.name(),
            self.backend.name()
        )
    }
}

/// One descriptor (`haloport_fused`) as a dict, for `Exchange.fused_descriptors`.
fn descriptor_dict<'py>(
    py: Python<'py>,
    d: &haloport::core::shared::haloport_fused,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("messages", d.messages)?;
    out.set_item("elem_bytes", d.elem_bytes)?;
    out.set_item("quiet_lo", tuple3(d.quiet_lo))?;
    out.set_item("quiet_hi", tuple3(d.quiet_hi))?;
    let messages = d.message[..d.messages as usize]
        .iter()
        .map(|m| {
            let e = PyDict::new(py);
            e.set_item("dest", m.dest)?;
            e.set_item("dest_offset", m.dest_offset)?;
            e.set_item("dest_stride", tuple3(m.dest_stride))?;
            e.set_item("counter", m.counter)?;
            e.set_item("lo", tuple3(m.lo))?;
            e.set_item("hi", tuple3(m.hi))?;
            Ok(e)
        })
        .collect::<PyResult<Vec<_>>>()?;
    out.set_item("message", messages)?;
    Ok(out)
}

/// Checks that `comm` belongs to the MPI library haloport was built against.
///
/// mpi4py may run on another MPI library than the one haloport links (an `MPI4PY_LIBMPI`
/// setting, a wheel with its own `libmpi`, MPICH beside Open MPI); a communicator handle of
/// one library means nothing to the other (Open MPI's handles are pointers, MPICH's
/// integers), so passing it on would crash or corrupt. The handle sizes and the libraries'
/// version strings (`MPI_Get_library_version`, MPI 4.0 section 9.1.1) must agree.
///
/// Returns the caller's library as mpi4py names it, for [`check_mpi`], which compares it
/// with haloport's.
///
/// # Errors
/// `InvalidInputError` naming both libraries.
fn same_mpi_library(comm: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let py = comm.py();
    // The module of the communicator's own class (mpi4py.MPI for mpi4py's communicators).
    let module = comm
        .get_type()
        .getattr("__module__")
        .and_then(|m| m.extract::<String>())
        .and_then(|m| py.import(m.as_str()));
    let Ok(module) = module else {
        // Not mpi4py's: the `py2f` check below says what `comm` must be.
        return Ok(None);
    };
    let Ok(theirs) = module
        .call_method0("Get_library_version")
        .and_then(|v| v.extract::<String>())
    else {
        return Ok(None);
    };
    let their_handle: Option<usize> = module
        .getattr("Comm")
        .and_then(|c| module.call_method1("_sizeof", (c,)))
        .and_then(|n| n.extract())
        .ok();
    let ours = haloport::foreign::mpi_library_version();
    let our_handle = std::mem::size_of::<mpi::ffi::MPI_Comm>();
    // mpi4py's string keeps the terminating NUL the library wrote.
    let first_line = |v: &str| {
        v.lines()
            .next()
            .unwrap_or_default()
            .trim_matches(|c: char| c == '\0' || c.is_whitespace())
            .to_owned()
    };
    let handle_differs = their_handle.is_some_and(|n| n != our_handle);
    if handle_differs || first_line(&theirs) != first_line(&ours) {
        return Err(invalid(format!(
            "comm: its MPI library ({}, {}) is not the one haloport was built against ({}, {our_handle}-byte communicator handles); run mpi4py on the same MPI library (see mpi4py's MPI4PY_LIBMPI, or build mpi4py against it)",
            first_line(&theirs),
            their_handle.map_or_else(
                || "communicator handles of unknown size".to_owned(),
                |n| format!("{n}-byte communicator handles")
            ),
            first_line(&ours),
        )));
    }
    Ok(Some(first_line(&theirs)))
}

/// This rank's index among the ranks of its node (collective over `comm`).
fn node_rank(comm: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mpi = comm.py().import("mpi4py.MPI")?;
    let node = comm.call_method1("Split_type", (mpi.getattr("COMM_TYPE_SHARED")?,))?;
    let rank = node.call_method0("Get_rank")?.extract()?;
    node.call_method0("Free")?;
    Ok(rank)
}

/// The options, each checked on this rank alone.
fn parse_options(
    (backend, _, transport, strategy, timeout, checked, gpu_aware_mpi, routes): ExchangeOptions<'_>,
) -> PyResult<(BackendKind, HaloOptions)> {
    let kind: BackendKind = backend.parse().py()?;
    if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
        return Err(invalid(format!(
            "timeout: {timeout}; give seconds greater than 0 and at most 86400"
        )));
    }
    let options = HaloOptions {
        transport: transport.parse::<TransportKind>().py()?,
        strategy: strategy.parse::<HaloStrategy>().py()?,
        timeout: Duration::from_secs_f64(timeout),
        checked,
        gpu_aware_mpi: gpu_aware_mpi.parse::<GpuAwareMpi>().py()?,
        ..HaloOptions::default()
    };
    let options = match routes {
        Some(path) => RoutesFile::read(path).py()?.apply(options),
        None => options,
    };
    Ok((kind, options))
}

impl Exchange {
    /// The caller's arrays as raw fields, checked against the declaration.
    ///
    /// A set of array objects read recently (the same objects, of the same shapes) gives the
    /// same fields without being read again, where the arrays are NumPy's or CuPy's and
    /// `cached` allows it: their memory cannot move while the cache's weak reference to them
    /// lives (NumPy refuses to resize an array that is weakly referenced, whatever `refcheck`
    /// says; its `data` cannot be assigned; a CuPy array never changes its allocation), so the
    /// address and size read last time still hold. The shape is read again; other metadata
    /// changed in place on the same object between calls (dtype, strides, writeability) is
    /// not. PyTorch tensors (whose storage `set_` can swap) are read every time, and so is
    /// every array when `cached` is false (a stream the producer names may differ from the
    /// exchange's and must be waited for: `order_after`).
    fn raw_fields(
        &mut self,
        arrays: &[Bound<'_, PyAny>],
        stream: haloport::foreign::RawStream,
        cached: bool,
    ) -> PyResult<(Vec<RawField>, Vec<usize>)> {
        let py = match arrays.first() {
            Some(a) => a.py(),
            None => return self.read_fields(arrays, stream),
        };
        let shape_of = |a: &Bound<'_, PyAny>| -> Option<Vec<u64>> {
            a.getattr(pyo3::intern!(py, "shape")).ok()?.extract().ok()
        };
        let hit = |set: &Vec<(PyObject, Vec<u64>, RawField)>| {
            set.len() == arrays.len()
                && arrays.iter().zip(set).all(|(a, (weak, shape, _))| {
                    weak.bind(py)
                        .call0()
                        .is_ok_and(|was| a.is(&was) && shape_of(a).as_ref() == Some(shape))
                })
        };
        if cached {
            if let Some(i) = self.read.sets.iter().position(hit) {
                let set = self.read.sets.remove(i);
                let fields = set.iter().map(|(_, _, f)| *f).collect();
                self.read.sets.push(set);
                return Ok((fields, Vec::new()));
            }
        }
        let (fields, producers) = self.read_fields(arrays, stream)?;
        let stable = |a: &Bound<'_, PyAny>| {
            a.get_type().mro().iter().any(|t| {
                t.getattr(pyo3::intern!(py, "__module__"))
                    .and_then(|m| m.extract::<String>())
                    .is_ok_and(|m| m.starts_with("numpy") || m.starts_with("cupy"))
            })
        };
        if cached && arrays.iter().all(stable) {
            let weakref = py.import("weakref")?.getattr("ref")?;
            let set: Vec<_> = arrays
                .iter()
                .zip(&fields)
                .filter_map(|(a, f)| Some((weakref.call1((a,)).ok()?.unbind(), shape_of(a)?, *f)))
                .collect();
            if set.len() == arrays.len() {
                // Entries whose arrays died go first, then the least recently used.
                self.read.sets.retain(|s| {
                    s.iter()
                        .all(|(w, _, _)| w.bind(py).call0().is_ok_and(|a| !a.is_none()))
                });
                if self.read.sets.len() >= READ_SETS {
                    self.read.sets.remove(0);
                }
                self.read.sets.push(set);
            }
        }
        Ok((fields, producers))
    }

    /// The stream a capture or replay is queued on: given explicitly on a GPU, where the
    /// default stream (what `None` would mean without arrays to ask) cannot be captured.
    fn capture_stream(
        &self,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<haloport::foreign::RawStream> {
        let given = stream.filter(|s| !s.is_none());
        if given.is_none() && self.backend != BackendKind::Host {
            return Err(invalid(
                "stream: give the stream to capture or replay on (a CuPy or PyTorch stream, an object with __cuda_stream__, a handle); the default stream cannot be captured",
            ));
        }
        streams::raw_stream(given, None, self.backend)
    }

    /// Keeps `arrays` alive until a wait covers the exchange they were started in.
    fn keep(&mut self, arrays: &[Bound<'_, PyAny>]) {
        for a in arrays {
            if !self.in_flight.iter().any(|k| a.is(k)) {
                self.in_flight.push(a.clone().unbind());
            }
        }
    }

    /// The caller's arrays read and checked against the declaration, and the streams their
    /// producers name (`__cuda_array_interface__`'s `stream`), each once.
    fn read_fields(
        &self,
        arrays: &[Bound<'_, PyAny>],
        stream: haloport::foreign::RawStream,
    ) -> PyResult<(Vec<RawField>, Vec<usize>)> {
        if arrays.len() != self.expected.len() {
            return Err(invalid(format!(
                "{} arrays given; the domain declares {} field{} (one array each, in order)",
                arrays.len(),
                self.expected.len(),
                if self.expected.len() == 1 { "" } else { "s" }
            )));
        }
        let target = Target {
            backend: self.backend,
            ordinal: self.ordinal,
            stream: stream.0,
        };
        let mut fields = Vec::with_capacity(arrays.len());
        let mut producers = Vec::new();
        for (k, (array, expected)) in arrays.iter().zip(&self.expected).enumerate() {
            let (field, producer) = arrays::raw_field(array, k, expected, target)?;
            fields.push(field);
            if let Some(p) = producer.filter(|p| !producers.contains(p)) {
                producers.push(p);
            }
        }
        Ok((fields, producers))
    }

    /// What every call that starts an exchange does first: the stream, the arrays as fields,
    /// the exchange's stream ordered after the streams the arrays' producers name (the CUDA
    /// array interface's rule for consumers: without it the pack could read cells the producer
    /// is still writing), and the arrays kept until a wait covers them.
    fn prepare(
        &mut self,
        arrays: &[Bound<'_, PyAny>],
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Vec<RawField>, haloport::foreign::RawStream)> {
        let explicit = stream.is_some_and(|s| !s.is_none());
        let raw = streams::raw_stream(stream, arrays.first(), self.backend)?;
        // Read again unless the producer's stream is known to be the exchange's: on the host
        // (no streams), or CuPy's current stream taken for `None` (which CuPy's interface
        // names as the producer's).
        let cached = self.backend == BackendKind::Host || !explicit;
        let (fields, producers) = self.raw_fields(arrays, raw, cached)?;
        if self.backend != BackendKind::Host {
            let py = match arrays.first() {
                Some(a) => a.py(),
                None => return Ok((fields, raw)),
            };
            let exchange = self.owned.get(py)?;
            // 1 names the legacy default stream, which 0 means in CUDA calls.
            let same = |p: usize| p == raw.0 || (p == 1 && raw.0 == 0);
            for producer in producers.into_iter().filter(|&p| !same(p)) {
                // SAFETY: `producer` is the stream the array's owner says its writes are
                // queued on (the CUDA array interface's promise), `raw` the exchange's; both of
                // this device's context, alive for this call.
                unsafe { exchange.order_after(haloport::foreign::RawStream(producer), raw) }
                    .py()?;
            }
        }
        self.keep(arrays);
        Ok((fields, raw))
    }

    /// `array[z0:z1, y0:y1, x0:x1]` after checking that it is shaped like a field.
    fn view<'py>(
        &self,
        array: &Bound<'py, PyAny>,
        ranges: [(u64, u64); 3],
    ) -> PyResult<Bound<'py, PyAny>> {
        let alloc = self.plan.decomposition.alloc;
        let zyx = [alloc[2], alloc[1], alloc[0]];
        let shape: Vec<u64> = array
            .getattr("shape")
            .and_then(|s| s.extract())
            .map_err(|_| invalid("the array has no shape"))?;
        if shape.len() < 3 || shape[..3] != zyx {
            return Err(invalid(format!(
                "an array of shape {shape:?} is not one of this exchange's fields ({}, {}, {}, ...)",
                zyx[0], zyx[1], zyx[2]
            )));
        }
        let py = array.py();
        let slices: Vec<Bound<'py, PySlice>> = ranges
            .iter()
            .map(|&(begin, end)| PySlice::new(py, begin as isize, end as isize, 1))
            .collect();
        array.get_item(PyTuple::new(py, slices)?)
    }

    /// Runs `work` on the open exchange with the GIL released.
    fn unbound<T>(
        &mut self,
        py: Python<'_>,
        work: impl FnOnce(&mut ForeignExchange) -> haloport::Result<T>,
    ) -> PyResult<T> {
        let exchange = Unbound(self.owned.get(py)?);
        let work = Unbound(work);
        let outcome = py
            .allow_threads(move || {
                let exchange = exchange.into_inner();
                let work = work.into_inner();
                // A panic is a fault of haloport; it becomes an `InternalError` here rather
                // than PyO3's `PanicException` (which is no `Exception`, so `except
                // Exception` would not catch it).
                Unbound(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                    move || work(exchange),
                )))
            })
            .into_inner();
        match outcome {
            Ok(result) => result.py(),
            Err(payload) => {
                let why = format!(
                    "haloport failed inside ({}); this exchange can no longer be used: build it anew",
                    panic_text(payload.as_ref())
                );
                self.owned.broken = Some(why.clone());
                Err(raise(ErrorKind::Internal, why))
            }
        }
    }
}

/// The options of `Exchange.__new__`, as given: backend, device, transport, strategy,
/// timeout, checked, GPU-aware MPI, routes file.
type ExchangeOptions<'a> = (
    &'a str,
    Option<usize>,
    &'a str,
    &'a str,
    f64,
    bool,
    &'a str,
    Option<&'a std::path::Path>,
);

/// Runs `work`, turning a panic (a fault of haloport, never the caller's) into an
/// `InternalError` instead of PyO3's `PanicException`, which is no `Exception`.
fn guard<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        Err(raise(
            ErrorKind::Internal,
            format!(
                "haloport failed inside ({}); please report it",
                panic_text(payload.as_ref())
            ),
        ))
    })
}

/// What a panic said.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

impl Exchange {
    /// The constructor's work (see `Exchange.__new__`), inside its panic guard.
    fn build(
        py: Python<'_>,
        comm: &Bound<'_, PyAny>,
        domain: Bound<'_, Domain>,
        options: ExchangeOptions<'_>,
    ) -> PyResult<Exchange> {
        let device = options.1;
        let library = same_mpi_library(comm)?;
        let handle: i32 = comm
            .call_method0("py2f")
            .and_then(|h| h.extract())
            .map_err(|_| {
                invalid(format!(
                    "comm: a {} is not an mpi4py communicator",
                    comm.get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))
            })?;
        let null = comm
            .py()
            .import("mpi4py.MPI")
            .and_then(|mpi| comm.eq(mpi.getattr("COMM_NULL")?))?;
        if null {
            return Err(invalid("comm: MPI.COMM_NULL is no communicator"));
        }
        // SAFETY: MPI_Comm_f2c converts any Fortran handle (MPI 4.0 section 19.3.4); an
        // invalid one is caught by the exchange's set-up, which rejects MPI_COMM_NULL.
        let raw = unsafe { mpi::ffi::RSMPI_Comm_f2c(handle) };
        // The same library, initialized and not finalized: a local check, the same on every
        // rank of a job whose ranks run one program.
        check_mpi(raw, library.as_deref()).py()?;
        // Every local step first, then one agreement, so that a rank that fails alone never
        // leaves the others waiting in a collective.
        let parsed = parse_options(options);
        let node_rank = node_rank(comm)?;
        let ordinal = device.unwrap_or(node_rank);
        let opened = parsed.and_then(|(kind, options)| {
            // The foreign layer shares the backend as an `Arc`; GPU backends are not `Sync`,
            // and this one never leaves the thread that owns the exchange.
            #[allow(clippy::arc_with_non_send_sync)]
            let backend = Arc::new(ForeignBackend::open(kind, ordinal).py()?);
            Ok((backend, options))
        });
        let mine = opened.as_ref().err().map(|e| e.to_string());
        let all: Vec<Option<String>> = comm.call_method1("allgather", (mine,))?.extract()?;
        let (backend, options) = match opened {
            Err(e) => return Err(e),
            Ok(opened) => match all
                .iter()
                .enumerate()
                .find_map(|(r, m)| Some((r, m.as_ref()?)))
            {
                Some((rank, message)) => {
                    return Err(raise(
                        ErrorKind::OtherRank,
                        format!("rank {rank} could not set up the exchange: {message}"),
                    ))
                }
                None => opened,
            },
        };
        let kind = backend.kind();
        let ordinal = backend.device_info().ordinal;
        let spec = domain.get().spec.clone();
        let setup = Unbound((backend, raw, spec, options));
        let inner = py
            .allow_threads(move || {
                let (backend, raw, spec, options) = setup.into_inner();
                // SAFETY: `raw` is the communicator the caller's mpi4py object holds, alive
                // during this call (the object is borrowed for it); every rank makes this call
                // (the constructor is documented as collective).
                Unbound(unsafe { ForeignExchange::new(backend, raw, &spec, options) })
            })
            .into_inner()
            .py()?;
        let plan = inner.plan().clone();
        let allocation = inner.allocation();
        let alloc = plan.decomposition.alloc;
        let expected = {
            let d = domain.get();
            d.dtypes
                .iter()
                .zip(&d.components)
                .map(|(&dtype, &c)| {
                    let mut shape = vec![alloc[2], alloc[1], alloc[0]];
                    if c > 1 {
                        shape.push(u64::from(c));
                    }
                    Expected { shape, dtype }
                })
                .collect()
        };
        let neighbours = plan
            .neighbours
            .iter()
            .zip(inner.links())
            .map(|(n, link)| {
                let [dx, dy, dz] = n.direction;
                Py::new(
                    py,
                    Neighbour {
                        direction: (dx, dy, dz),
                        rank: n.rank,
                        link: link.name().to_owned(),
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let routes = inner.route_choices().to_vec();
        Ok(Exchange {
            owned: Owned {
                inner: Some(inner),
                thread: std::thread::current().id(),
                thread_name: python_thread_name(py),
                broken: None,
            },
            plan,
            allocation,
            domain: domain.unbind(),
            expected,
            backend: kind,
            ordinal,
            options,
            neighbours,
            routes,
            in_flight: Vec::new(),
            read: ReadCache::default(),
        })
    }
}

#[pymethods]
impl Exchange {
    #[new]
    #[pyo3(signature = (comm, domain, *, backend = "host", device = None, transport = "mpi", strategy = "base", timeout = 10.0, checked = false, gpu_aware_mpi = "auto", routes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        comm: &Bound<'_, PyAny>,
        domain: Bound<'_, Domain>,
        backend: &str,
        device: Option<usize>,
        transport: &str,
        strategy: &str,
        timeout: f64,
        checked: bool,
        gpu_aware_mpi: &str,
        routes: Option<PathBuf>,
    ) -> PyResult<Exchange> {
        let options = (
            backend,
            device,
            transport,
            strategy,
            timeout,
            checked,
            gpu_aware_mpi,
            routes.as_deref(),
        );
        guard(|| Exchange::build(py, comm, domain, options))
    }

    /// Exchanges the halos of `arrays` (one per field, in order; one array alone for a domain
    /// of one field) and returns when they are filled.
    ///
    /// Each array is the whole allocation (halos and padding included), shaped `shape(k)`,
    /// C-contiguous, of the field's dtype, writable, on this exchange's device; it is used in
    /// place, never copied. `stream`: `None` (the array library's current stream), an object
    /// with `__cuda_stream__`, a CuPy or PyTorch stream, or a raw handle (int).
    ///
    /// Raises:
    ///     InvalidInputError: an array or stream that does not fit the declaration.
    ///     TimeoutError: a neighbour did not take part within `timeout`.
    ///     UsageError: the exchange was closed.
    #[pyo3(signature = (arrays, stream = None))]
    fn exchange(
        &mut self,
        py: Python<'_>,
        arrays: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let list = arrays::as_list(arrays)?;
        let (fields, stream) = guard(|| self.prepare(&list, stream))?;
        // SAFETY: the arrays are the caller's objects, held in `in_flight` until the exchange
        // was waited for; their memory was checked to be of this backend's kind and device and
        // as large as the fields need; the stream comes from the caller or its array library,
        // and the producers' streams the arrays name were ordered before it (`prepare`).
        self.unbound(py, |e| unsafe { e.exchange(&fields, stream) })?;
        // The exchange waited for its own work and, with it, any started before.
        self.in_flight.clear();
        Ok(())
    }

    /// Starts the exchange of `arrays`' halos on `stream`: packs what leaves this rank (after
    /// the work queued there before) and sends it.
    #[pyo3(signature = (arrays, stream = None))]
    fn start(
        &mut self,
        py: Python<'_>,
        arrays: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let list = arrays::as_list(arrays)?;
        let (fields, stream) = guard(|| self.prepare(&list, stream))?;
        // SAFETY: as in `exchange`; the arrays stay in `in_flight` until `wait` returned.
        self.unbound(py, |e| unsafe { e.start(&fields, stream) })
    }

    /// Completes the started exchange on `stream`: the halos are filled for the work queued
    /// there after it (on the host backend, when it returns).
    #[pyo3(signature = (stream = None))]
    fn finish(&mut self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let first = self.in_flight.last().map(|a| a.bind(py).clone());
        let stream = streams::raw_stream(stream, first.as_ref(), self.backend)?;
        // SAFETY: the stream comes from the caller or the array library of the arrays started.
        self.unbound(py, |e| unsafe { e.finish(stream) })
    }

    /// Waits until the exchange's work on the device completed; the arrays of every exchange
    /// started since the last wait are then released by the exchange.
    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        self.unbound(py, ForeignExchange::wait)?;
        self.in_flight.clear();
        Ok(())
    }

    /// Ends the exchange (collective with `transport="ipc"`). Closing twice does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.owned.inner.is_none() {
            return Ok(());
        }
        self.owned.get(py)?;
        let Some(inner) = self.owned.inner.take() else {
            return Ok(());
        };
        let inner = Unbound(inner);
        py.allow_threads(move || Unbound(inner.into_inner().close()))
            .into_inner()
            .py()?;
        self.in_flight.clear();
        self.read.sets.clear();
        Ok(())
    }

    /// Starts capturing `stream` into a graph: from here until `end_capture`, `start` and
    /// `finish` on that stream, and the program's own work queued there, are recorded, not
    /// run. Capture whole exchanges, an even number of them (a step and the next, as a Jacobi
    /// loop's two arrays alternate). Every neighbour must be device-direct or this rank itself
    /// (`transport="ipc"`, every rank on one node): host-staged messages need the CPU.
    ///
    /// Raises:
    ///     InvalidInputError: a host-staged neighbour (named), no stream given on a GPU (the
    ///         default stream cannot be captured).
    ///     DeviceError: the host backend (it captures no graphs).
    ///     UsageError: already capturing, between `start` and `finish`.
    #[pyo3(signature = (stream = None))]
    fn begin_capture(&mut self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let stream = self.capture_stream(stream)?;
        // SAFETY: the stream comes from the caller, alive (the stream's contract of `start`).
        self.unbound(py, |e| unsafe { e.begin_capture(stream) })?;
        // Beginning a capture waited for every earlier exchange: what is held from here on are
        // the arrays captured, which the graph takes over at `end_capture`.
        self.in_flight.clear();
        Ok(())
    }

    /// Ends the capture begun on `stream` (also after an error inside it) and returns the
    /// graph; nothing captured has run yet.
    #[pyo3(signature = (stream = None))]
    fn end_capture(
        &mut self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Graph> {
        let stream = self.capture_stream(stream)?;
        // SAFETY: as in `begin_capture`; the arrays captured stay alive in the graph.
        let graph = self.unbound(py, |e| unsafe { e.end_capture(stream) })?;
        Ok(Graph {
            exchanges: graph.exchanges(),
            graph: Some(graph),
            thread: std::thread::current().id(),
            arrays: self.in_flight.iter().map(|a| a.clone_ref(py)).collect(),
        })
    }

    /// Queues one replay of `graph` on `stream`; `wait` waits for it. The graph's arrays hold
    /// the values the program left in them, as for `start`.
    #[pyo3(signature = (graph, stream = None))]
    fn replay(
        &mut self,
        py: Python<'_>,
        graph: Bound<'_, Graph>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let stream = self.capture_stream(stream)?;
        self.owned.get(py)?;
        // The graph and its arrays stay alive until a wait covers the replay.
        let keep: Vec<Bound<'_, PyAny>> = {
            let g = graph.borrow();
            g.arrays.iter().map(|a| a.bind(py).clone()).collect()
        };
        self.keep(&keep);
        self.keep(&[graph.clone().into_any()]);
        let mut g = graph.borrow_mut();
        let Some(foreign) = g.graph.as_mut() else {
            return Err(raise(ErrorKind::Usage, "the graph was released"));
        };
        let foreign = Unbound(foreign);
        // SAFETY: the graph's arrays are held above until the replay was waited for; the
        // stream comes from the caller.
        self.unbound(py, move |e| unsafe {
            e.replay(foreign.into_inner(), stream)
        })
    }

    /// Fused mode (the device header `haloport_device.h`, see `include_dir`): allocates
    /// `sets` sets of the domain's fields through the library (they are mapped into the
    /// neighbours), builds one descriptor per field and set, and returns the fields, a list
    /// per set in the declaration's order, as `FusedField` objects the array libraries use in
    /// place (`cupy.asarray`, `numpy.asarray`). Afterwards a step that writes set `s` calls
    /// `fused_start(s)` before its kernels store the set's boundary cells into the
    /// neighbours' halos and `fused_finish(s)` after. Collective: every rank gives the same
    /// `sets`. The descriptors lead to the neighbours that are device-direct or this rank
    /// itself; the others are served by an ordinary exchange inside `fused_finish`.
    ///
    /// Raises:
    ///     InvalidInputError: 0 sets, different numbers of sets on different ranks, a
    ///         neighbour of another route (named), cells other than one 4- or 8-byte element.
    ///     UsageError: already fused; the exchange closed.
    ///     OtherRankError: another rank failed to allocate or set up.
    fn fuse(&mut self, py: Python<'_>, sets: usize) -> PyResult<Vec<Vec<Py<FusedField>>>> {
        let fused = self.unbound(py, |e| e.fuse(sets))?;
        let thread = std::thread::current().id();
        fused
            .sets()
            .iter()
            .enumerate()
            .map(|(s, set)| {
                set.iter()
                    .zip(&self.expected)
                    .enumerate()
                    .map(|(k, (raw, expected))| {
                        Py::new(
                            py,
                            FusedField {
                                share: Some(fused.clone()),
                                thread,
                                addr: raw.addr,
                                bytes: raw.bytes,
                                shape: expected.shape.clone(),
                                dtype: expected.dtype,
                                backend: self.backend,
                                device: self.ordinal,
                                set: s,
                                field: k,
                            },
                        )
                    })
                    .collect()
            })
            .collect()
    }

    /// Before a step's kernels store set `set`'s boundary cells into the neighbours' halos:
    /// queues on `stream` this rank's word that it is done reading the halos of the set
    /// (everything queued there before) and a wait, on the device, until every neighbour
    /// said the same. Returns the device address of each field's descriptor (a
    /// `const haloport_fused*` for the kernels), in the declaration's order; they stay the
    /// same from step to step. `stream`: `None` (the default stream), an object with
    /// `__cuda_stream__`, a CuPy or PyTorch stream, or a raw handle (int). On the host
    /// backend it returns once every neighbour is done reading.
    ///
    /// Raises:
    ///     UsageError: before `fuse`, a set `fuse` did not make, the exchange closed.
    ///     TimeoutError: an earlier wait that gave up (naming the neighbour and halo).
    #[pyo3(signature = (set, stream = None))]
    fn fused_start(
        &mut self,
        py: Python<'_>,
        set: usize,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<u64>> {
        let stream = streams::raw_stream(stream, None, self.backend)?;
        // SAFETY: the stream comes from the caller, alive for the call (the stream's contract
        // of `start`); the fields are the library's own.
        self.unbound(py, |e| unsafe { e.fused_start(set, stream) })
    }

    /// After a step's kernels stored set `set`'s cells: queues on `stream` a wait, on the
    /// device, until every cell of every incoming message of the set arrived; work queued on
    /// `stream` afterwards sees this rank's halos of the set filled (on the host backend:
    /// when it returns). A wait that gives up is reported by the next call (`wait` among them)
    /// as `TimeoutError` naming the neighbour and halo.
    ///
    /// Raises:
    ///     As `fused_start`.
    #[pyo3(signature = (set, stream = None))]
    fn fused_finish(
        &mut self,
        py: Python<'_>,
        set: usize,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let stream = streams::raw_stream(stream, None, self.backend)?;
        // SAFETY: as in `fused_start`.
        self.unbound(py, |e| unsafe { e.fused_finish(set, stream) })
    }

    /// Set `set`'s descriptors as the device header lays them out, one dict per field:
    /// `{"messages": n, "elem_bytes": 8, "quiet_lo": (x, y, z), "quiet_hi": ..., "message":
    /// [{"dest": address, "dest_offset": elements, "dest_stride": (1, ax, ax * ay),
    /// "counter": address, "lo": (x, y, z), "hi": ...}, ...]}`: message `m` takes this rank's
    /// cells `[lo, hi)` to element `dest_offset + sum((c - lo) * dest_stride)` of the array at
    /// `dest`, and counts them at `counter` (a uint64). On the host backend the addresses are
    /// this process's memory.
    ///
    /// Raises:
    ///     As `fused_start`.
    fn fused_descriptors<'py>(
        &mut self,
        py: Python<'py>,
        set: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let descriptors = self.owned.get(py)?.fused_descriptors(set).py()?;
        descriptors.iter().map(|d| descriptor_dict(py, d)).collect()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes; an error of `close` is raised only when no exception is on its way already.
    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let closed = self.close(py);
        if exc_type.is_none_or(|t| t.is_none()) {
            closed?;
        }
        Ok(false)
    }

    /// The shape of field `field`'s array: `(az, ay, ax)`, or `(az, ay, ax, C)` for `C`
    /// components per cell (the whole allocation: halos and padding included).
    #[pyo3(signature = (field = 0))]
    fn shape<'py>(&self, py: Python<'py>, field: usize) -> PyResult<Bound<'py, PyTuple>> {
        self.expected
            .get(field)
            .map(|e| PyTuple::new(py, &e.shape))
            .transpose()?
            .ok_or_else(|| {
                invalid(format!(
                    "field {field}: the domain declares {} fields",
                    self.expected.len()
                ))
            })
    }

    /// The interior of `array` (this rank's own cells): a view, `array[z, y, x]` sliced.
    fn interior<'py>(&self, array: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let d = &self.plan.decomposition;
        let range = |k: usize| (d.halo[k], d.halo[k] + d.local[k]);
        self.view(array, [range(2), range(1), range(0)])
    }

    /// The halo of `array` on side `direction` `(dx, dy, dz)` (each -1, 0 or 1, not all 0):
    /// the cells the neighbour in that direction fills, as a view of `array`.
    fn halo<'py>(
        &self,
        array: &Bound<'py, PyAny>,
        direction: (i8, i8, i8),
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = &self.plan.decomposition;
        let (dx, dy, dz) = direction;
        if [dx, dy, dz].iter().any(|c| !(-1..=1).contains(c)) || (dx, dy, dz) == (0, 0, 0) {
            return Err(invalid(format!(
                "direction {direction:?}: give (dx, dy, dz), each -1, 0 or 1, not all 0"
            )));
        }
        let range = |k: usize, c: i8| {
            let (lo, n, hi) = (d.halo[k], d.local[k], d.halo_hi[k]);
            match c {
                -1 => (0, lo),
                0 => (lo, lo + n),
                _ => (lo + n, lo + n + hi),
            }
        };
        self.view(array, [range(2, dz), range(1, dy), range(0, dx)])
    }

    /// This rank in the exchange's communicator.
    #[getter]
    fn rank(&self) -> i32 {
        self.plan.decomposition.rank
    }

    /// The process grid `(px, py, pz)`.
    #[getter]
    fn procs(&self) -> (u32, u32, u32) {
        tuple3(self.plan.decomposition.procs)
    }

    /// This rank's coordinates in the process grid, x first.
    #[getter]
    fn coords(&self) -> (u32, u32, u32) {
        tuple3(self.plan.decomposition.coords)
    }

    /// This rank's interior extents `(nx, ny, nz)`.
    #[getter]
    fn local(&self) -> (u64, u64, u64) {
        tuple3(self.plan.decomposition.local)
    }

    /// Global index `(x, y, z)` of this rank's first interior cell.
    #[getter]
    fn origin(&self) -> (u64, u64, u64) {
        tuple3(self.plan.decomposition.origin)
    }

    /// Halo widths on the low side, x, y, z: where the interior starts in the array.
    #[getter]
    fn halo_lo(&self) -> (u64, u64, u64) {
        tuple3(self.allocation.halo_lo)
    }

    /// Halo widths on the high side, x, y, z.
    #[getter]
    fn halo_hi(&self) -> (u64, u64, u64) {
        tuple3(self.allocation.halo_hi)
    }

    /// Allocated extents `(ax, ay, az)`: low halo + interior + high halo + padding.
    #[getter]
    fn alloc(&self) -> (u64, u64, u64) {
        tuple3(self.allocation.alloc)
    }

    /// Cells allocated after the high halo of x, y, z (the declaration's `pad`): never read
    /// or written.
    #[getter]
    fn pad(&self) -> (u64, u64, u64) {
        tuple3(self.allocation.pad)
    }

    /// Every neighbour this rank exchanges with, and how its messages travel.
    #[getter]
    fn neighbours(&self, py: Python<'_>) -> Vec<Py<Neighbour>> {
        self.neighbours.iter().map(|n| n.clone_ref(py)).collect()
    }

    /// Each neighbour's route and why it was chosen, in the order of `neighbours`: a new list
    /// of dicts `{"direction": (dx, dy, dz), "peer": rank, "locality": "itself" | "same-node" |
    /// "other-node" | "not-asked", "link": "local" | "mpi" | "ipc" | "gpu-mpi" | "nccl",
    /// "why": "...", "passed_over": [{"route": "ipc", "why": "..."}, ...]}`, `passed_over`
    /// naming the routes preferred before the one taken that could not serve the link.
    #[getter]
    fn routes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let records = self
            .plan
            .neighbours
            .iter()
            .zip(&self.routes)
            .map(|(n, c)| {
                let [dx, dy, dz] = n.direction;
                let record = PyDict::new(py);
                record.set_item("direction", (dx, dy, dz))?;
                record.set_item("peer", n.rank)?;
                record.set_item("locality", c.locality.name())?;
                record.set_item("link", c.link.name())?;
                record.set_item("why", &c.why)?;
                let passed = c
                    .passed_over
                    .iter()
                    .map(|p| {
                        let d = PyDict::new(py);
                        d.set_item("route", p.route.name())?;
                        d.set_item("why", &p.why)?;
                        Ok(d)
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                record.set_item("passed_over", passed)?;
                Ok(record)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, records)
    }

    /// The declaration.
    #[getter]
    fn domain(&self, py: Python<'_>) -> Py<Domain> {
        self.domain.clone_ref(py)
    }

    /// `"host"`, `"cuda"` or `"hip"`.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// The device's ordinal in this process.
    #[getter]
    fn device(&self) -> usize {
        self.ordinal
    }

    /// `"mpi"`, `"ipc"`, `"nccl"` or `"auto"`, as asked or as a routes file set it (each
    /// neighbour's own: `neighbours`, and why: `routes`).
    #[getter]
    fn transport(&self) -> &'static str {
        self.options.transport.name()
    }

    /// `"base"` or `"tq"`.
    #[getter]
    fn strategy(&self) -> &'static str {
        self.options.strategy.name()
    }

    /// Seconds any single wait may take.
    #[getter]
    fn timeout(&self) -> f64 {
        self.options.timeout.as_secs_f64()
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.owned.inner.is_none()
    }

    fn __repr__(&self) -> String {
        format!(
            "Exchange(rank={}, local={}, origin={}, backend={:?}, device={}, transport={:?}, neighbours={}{})",
            self.rank(),
            py_text(self.plan.decomposition.local),
            py_text(self.plan.decomposition.origin),
            self.backend(),
            self.ordinal,
            self.transport(),
            self.neighbours.len(),
            if self.closed() { ", closed" } else { "" }
        )
    }
}

/// The backends this build has, e.g. `"host"` or `"host,cuda"`.
#[pyfunction]
fn backends() -> &'static str {
    built_backends()
}

/// The extension module `haloport._native`; `haloport` re-exports it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Domain>()?;
    m.add_class::<Exchange>()?;
    m.add_class::<Graph>()?;
    m.add_class::<Neighbour>()?;
    m.add_class::<FusedField>()?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
