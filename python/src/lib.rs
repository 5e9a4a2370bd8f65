//! haloport from Python (SPEC 17): the extension module `haloport._native`, a thin layer over
//! the Rust library's foreign interface (`haloport::foreign`). It converts what a Python
//! program holds (an mpi4py communicator, NumPy, CuPy or PyTorch arrays, stream objects) into
//! the raw handles that interface takes, and the library's errors into exceptions; every
//! decision about the exchange is the library's.
//!
//! # Threading
//! The backends are not `Send`, so [`Exchange`] is `unsendable`: it is used from the thread
//! that created it. Every call that waits (set-up, `exchange`, `start`, `finish`, `wait`,
//! `close`) releases the GIL while it runs, through [`Unbound`].

mod arrays;
mod errors;
mod streams;

use std::sync::Arc;
use std::time::Duration;

use haloport::core::domain::{DomainSpec, ElemType, FieldShape, Layout, Neighbourhood, Splits};
use haloport::core::halo::{HaloOptions, HaloStrategy};
use haloport::core::transport::TransportKind;
use haloport::foreign::{
    built_backends, BackendKind, ErrorKind, ForeignBackend, ForeignExchange, RawField,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyTuple};

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
    #[pyo3(signature = (grid, *, dtype = None, fields = None, components = None, halo = None, halo_lo = None, halo_hi = None, periodic = None, pad = None, procs = None, neighbourhood = "all", splits = None))]
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
        neighbourhood: &str,
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
            .unwrap_or([1; 3]);
        let opt3 =
            |v: Option<&Bound<'_, PyAny>>, what| v.map(|v| triple::<u32>(v, what)).transpose();
        let periodic = periodic
            .map(|p| triple::<bool>(p, "periodic"))
            .transpose()?
            .unwrap_or([true; 3]);
        let procs = procs.map(|p| triple::<u32>(p, "procs")).transpose()?;
        let neighbourhood: Neighbourhood = neighbourhood.parse().py()?;
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
                pad: opt3(pad, "pad")?.unwrap_or([0; 3]),
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
    /// `"mpi"` (host-staged), `"ipc"` (device-direct) or `"local"` (this rank's own memory).
    transport: String,
}

#[pymethods]
impl Neighbour {
    fn __repr__(&self) -> String {
        format!(
            "Neighbour(direction={:?}, rank={}, transport={:?})",
            self.direction, self.rank, self.transport
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
///     transport: `"mpi"` (host-staged) or `"ipc"` (device-direct within a node).
///     strategy: `"base"` or `"tq"` (each neighbour sent and unpacked as soon as ready).
///     timeout: seconds any single wait may take before `TimeoutError` (default 10).
///     checked: `finish` waits for its unpack and reports a failure on the device itself.
///
/// Raises:
///     InvalidInputError, OtherRankError, DeviceError, MpiError (see `haloport.errors`).
#[pyclass(module = "haloport", unsendable)]
struct Exchange {
    /// `None` once closed.
    inner: Option<ForeignExchange>,
    /// The plan, kept for the views and properties after `close`.
    plan: haloport::core::domain::HaloPlan,
    domain: Py<Domain>,
    expected: Vec<Expected>,
    backend: BackendKind,
    ordinal: usize,
    options: HaloOptions,
    neighbours: Vec<Py<Neighbour>>,
    /// The arrays of the exchange started last, kept alive until it was waited for.
    in_flight: Vec<PyObject>,
    /// The arrays the last call read, with their shapes and what was read: a loop that hands
    /// over the same arrays every step reads them once (see `raw_fields`).
    read: Vec<(PyObject, Vec<u64>, RawField)>,
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
    backend: &str,
    transport: &str,
    strategy: &str,
    timeout: f64,
    checked: bool,
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
        ..HaloOptions::default()
    };
    Ok((kind, options))
}

impl Exchange {
    /// The open exchange.
    fn open(&mut self) -> PyResult<&mut ForeignExchange> {
        self.inner
            .as_mut()
            .ok_or_else(|| raise(ErrorKind::Usage, "the exchange was closed"))
    }

    /// The caller's arrays as raw fields, checked against the declaration.
    ///
    /// The same array objects as in the last call, of the same shapes, give the same fields
    /// without being read again, where the library is NumPy or CuPy: their memory cannot move
    /// while this exchange holds a reference (NumPy refuses to resize a referenced array; a
    /// CuPy array never changes its allocation), so the address and size read last time still
    /// hold; the shape is read again, other metadata changed in place on the same object
    /// between calls (dtype, strides, writeability) is not. PyTorch tensors (whose storage
    /// `set_` can swap) are read every time.
    fn raw_fields(
        &mut self,
        arrays: &[Bound<'_, PyAny>],
        stream: haloport::foreign::RawStream,
    ) -> PyResult<Vec<RawField>> {
        let py = match arrays.first() {
            Some(a) => a.py(),
            None => return self.read_fields(arrays, stream),
        };
        let shape_of = |a: &Bound<'_, PyAny>| -> Option<Vec<u64>> {
            a.getattr(pyo3::intern!(py, "shape")).ok()?.extract().ok()
        };
        let same = self.read.len() == arrays.len()
            && arrays
                .iter()
                .zip(&self.read)
                .all(|(a, (was, shape, _))| a.is(was) && shape_of(a).as_ref() == Some(shape));
        if same {
            return Ok(self.read.iter().map(|(_, _, f)| *f).collect());
        }
        let fields = self.read_fields(arrays, stream)?;
        let stable = |a: &Bound<'_, PyAny>| {
            a.get_type().module().is_ok_and(|m| {
                m.to_cow()
                    .is_ok_and(|m| m.starts_with("numpy") || m.starts_with("cupy"))
            })
        };
        self.read = if arrays.iter().all(stable) {
            arrays
                .iter()
                .zip(&fields)
                .filter_map(|(a, f)| Some((a.clone().unbind(), shape_of(a)?, *f)))
                .collect()
        } else {
            Vec::new()
        };
        if self.read.len() != arrays.len() {
            self.read.clear();
        }
        Ok(fields)
    }

    /// The caller's arrays read and checked against the declaration.
    fn read_fields(
        &self,
        arrays: &[Bound<'_, PyAny>],
        stream: haloport::foreign::RawStream,
    ) -> PyResult<Vec<RawField>> {
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
        arrays
            .iter()
            .zip(&self.expected)
            .enumerate()
            .map(|(k, (array, expected))| arrays::raw_field(array, k, expected, target))
            .collect()
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
        let exchange = Unbound(self.open()?);
        let work = Unbound(work);
        py.allow_threads(move || {
            let result = (work.into_inner())(exchange.into_inner());
            Unbound(result)
        })
        .into_inner()
        .py()
    }
}

#[pymethods]
impl Exchange {
    #[new]
    #[pyo3(signature = (comm, domain, *, backend = "host", device = None, transport = "mpi", strategy = "base", timeout = 10.0, checked = false))]
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
    ) -> PyResult<Exchange> {
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
        // Every local step first, then one agreement, so that a rank that fails alone never
        // leaves the others waiting in a collective.
        let parsed = parse_options(backend, transport, strategy, timeout, checked);
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
                        transport: link.name().to_owned(),
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Ok(Exchange {
            inner: Some(inner),
            plan,
            domain: domain.unbind(),
            expected,
            backend: kind,
            ordinal,
            options,
            neighbours,
            in_flight: Vec::new(),
            read: Vec::new(),
        })
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
        let stream = streams::raw_stream(stream, list.first(), self.backend)?;
        let fields = self.raw_fields(&list, stream)?;
        self.in_flight = list.iter().map(|a| a.clone().unbind()).collect();
        // SAFETY: the arrays are the caller's objects, held in `in_flight` until the exchange
        // was waited for; their memory was checked to be of this backend's kind and device and
        // as large as the fields need; the stream comes from the caller or its array library.
        self.unbound(py, |e| unsafe { e.exchange(&fields, stream) })?;
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
        let stream = streams::raw_stream(stream, list.first(), self.backend)?;
        let fields = self.raw_fields(&list, stream)?;
        self.in_flight = list.iter().map(|a| a.clone().unbind()).collect();
        // SAFETY: as in `exchange`; the arrays stay in `in_flight` until `wait` returned.
        self.unbound(py, |e| unsafe { e.start(&fields, stream) })
    }

    /// Completes the started exchange on `stream`: the halos are filled for the work queued
    /// there after it (on the host backend, when it returns).
    #[pyo3(signature = (stream = None))]
    fn finish(&mut self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let first = self.in_flight.first().map(|a| a.bind(py).clone());
        let stream = streams::raw_stream(stream, first.as_ref(), self.backend)?;
        // SAFETY: the stream comes from the caller or the array library of the arrays started.
        self.unbound(py, |e| unsafe { e.finish(stream) })
    }

    /// Waits until the exchange's work on the device completed; its arrays are then released
    /// by the exchange.
    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        self.unbound(py, ForeignExchange::wait)?;
        self.in_flight.clear();
        Ok(())
    }

    /// Ends the exchange (collective with `transport="ipc"`). Closing twice does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(inner) = self.inner.take() else {
            return Ok(());
        };
        let inner = Unbound(inner);
        py.allow_threads(move || Unbound(inner.into_inner().close()))
            .into_inner()
            .py()?;
        self.in_flight.clear();
        self.read.clear();
        Ok(())
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
        tuple3(self.plan.decomposition.halo)
    }

    /// Halo widths on the high side, x, y, z.
    #[getter]
    fn halo_hi(&self) -> (u64, u64, u64) {
        tuple3(self.plan.decomposition.halo_hi)
    }

    /// Allocated extents `(ax, ay, az)`: low halo + interior + high halo + padding.
    #[getter]
    fn alloc(&self) -> (u64, u64, u64) {
        tuple3(self.plan.decomposition.alloc)
    }

    /// Every neighbour this rank exchanges with, and how its messages travel.
    #[getter]
    fn neighbours(&self, py: Python<'_>) -> Vec<Py<Neighbour>> {
        self.neighbours.iter().map(|n| n.clone_ref(py)).collect()
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

    /// `"mpi"` or `"ipc"`, as asked (each neighbour's own: `neighbours`).
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
        self.inner.is_none()
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
    m.add_class::<Neighbour>()?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
