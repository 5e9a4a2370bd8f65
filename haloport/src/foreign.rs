//! The halo exchange for callers outside Rust (SPEC 16, 17): the backend chosen at run time,
//! fields and streams as the raw addresses and handles a C, Fortran or Python program holds,
//! errors sorted into the few kinds such a caller tells apart. The C ABI (`haloport-capi`) and
//! the Python package are thin layers over this module; every decision is made here or below.
//!
//! On the host backend there is no stream a foreign caller could queue its work on, so the
//! exchange keeps a stream of its own and [`ForeignExchange::start`] and
//! [`ForeignExchange::finish`] return only once their work there has completed: the caller's
//! next CPU work sees the pack done, and after `finish` the halos filled, as the next kernel on
//! a GPU stream would.
//!
//! What both layers share beyond the calls: the defaults a declaration starts from
//! ([`DEFAULT_PERIODIC`] and its neighbours), the check that the caller's MPI is the library
//! haloport was built against ([`check_mpi`]), the thread an object belongs to
//! ([`OwnerThread`]), and teardown that knows a foreign program may end MPI first: an exchange dropped after
//! `MPI_Finalize` is leaked with one line on standard error, never closed (closing calls MPI,
//! which aborts the program then).
//!
//! Threading: a [`ForeignExchange`] is used from the thread that made it (its backend's
//! context is current there); the layers refuse other threads with [`OwnerThread::check`].

use std::any::Any;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use haloport_core::backend::DeviceInfo;
use haloport_core::domain::{DomainSpec, HaloPlan, Neighbourhood};
use haloport_core::halo::{ExchangeGraph, Field, HaloExchange, HaloOptions, Link, RouteChoice};
use haloport_core::shared::haloport_fused;
use haloport_core::{Backend, Error, Result};

/// Which dimensions wrap around when a declaration does not say: all three, as the command
/// line's `--periodic` default (`xyz`). C's `haloport_domain_new` and Python's `Domain` start
/// from it.
pub const DEFAULT_PERIODIC: [bool; 3] = [true; 3];
/// Halo width in cells on either side of each dimension when a declaration does not say.
pub const DEFAULT_HALO: [u32; 3] = [1; 3];
/// Padding after the high halo when a declaration does not say: none.
pub const DEFAULT_PAD: [u32; 3] = [0; 3];
/// Which neighbours fill the halos when a declaration does not say: all 26.
pub const DEFAULT_NEIGHBOURHOOD: Neighbourhood = Neighbourhood::All;

/// Whether MPI has been finalized (`MPI_Finalized`, callable at any time).
///
/// MPI standard 11.2.3 (MPI-4.0): `MPI_Finalized` may be called before `MPI_Init` and after
/// `MPI_Finalize`.
pub fn mpi_finalized() -> bool {
    let mut finalized: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time and writes one int.
    let code = unsafe { mpi::ffi::MPI_Finalized(&mut finalized) };
    // A failing MPI_Finalized says nothing; assume the worst, so nothing calls MPI.
    code != 0 || finalized != 0
}

/// Whether MPI has been initialized (`MPI_Initialized`, callable at any time).
pub fn mpi_initialized() -> bool {
    let mut initialized: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time and writes one int.
    let code = unsafe { mpi::ffi::MPI_Initialized(&mut initialized) };
    code == 0 && initialized != 0
}

/// The MPI library haloport calls, as `MPI_Get_library_version` names it (callable before
/// `MPI_Init`), its first line.
pub fn mpi_library_version() -> String {
    let mut buffer = vec![0_u8; mpi::ffi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING characters, as the call needs;
    // it may be called at any time (MPI standard 9.1.1).
    let code = unsafe { mpi::ffi::MPI_Get_library_version(buffer.as_mut_ptr().cast(), &mut len) };
    if code != 0 {
        return format!("an MPI library whose MPI_Get_library_version failed (code {code})");
    }
    buffer.truncate(usize::try_from(len).unwrap_or(0).min(buffer.len()));
    let text = String::from_utf8_lossy(&buffer);
    text.lines()
        .next()
        .unwrap_or("")
        .trim_matches(char::from(0))
        .trim()
        .to_string()
}

/// Checks that the MPI library haloport calls is running and is the caller's: `MPI_Init` was
/// called on it (a caller that loaded another `libmpi`, as mpi4py can, initialized that one,
/// and its communicator handles mean nothing here), it is not finalized, and, when the caller
/// names its library (`caller_library`: mpi4py's `MPI.Get_library_version()`), the two agree
/// on their first line. Then `comm` must not be `MPI_COMM_NULL`.
///
/// # Errors
/// [`Error::InvalidInput`] saying which of these failed, naming both libraries.
pub fn check_mpi(comm: mpi::ffi::MPI_Comm, caller_library: Option<&str>) -> Result<()> {
    let ours = mpi_library_version();
    if let Some(theirs) = caller_library {
        let theirs = theirs.lines().next().unwrap_or("").trim();
        if theirs != ours {
            return Err(Error::InvalidInput(format!(
                "the communicator comes from another MPI library than haloport's: the caller's is '{theirs}', haloport was built against '{ours}'; build haloport and the caller (mpi4py) against the same MPI"
            )));
        }
    }
    if mpi_finalized() {
        return Err(Error::InvalidInput(
            "MPI is finalized: make and use exchanges between MPI_Init and MPI_Finalize".into(),
        ));
    }
    if !mpi_initialized() {
        return Err(Error::InvalidInput(format!(
            "MPI is not initialized in the MPI library haloport was built against ('{ours}'): call MPI_Init first; if the program did, it initialized another MPI library, and its communicators cannot be used here"
        )));
    }
    // SAFETY: reading a predefined handle.
    if comm == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
        return Err(Error::InvalidInput(
            "the communicator is MPI_COMM_NULL; pass a communicator this rank belongs to".into(),
        ));
    }
    Ok(())
}

/// One line on standard error: a foreign program installs no `tracing` subscriber, and what
/// teardown could not do must still be seen.
pub fn log_line(message: &str) {
    eprintln!("haloport: {message}");
}

/// The thread an object was made on, which alone may use it (a backend's context is current
/// there; the C layer's handles live in that thread's tables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerThread {
    id: std::thread::ThreadId,
    name: String,
}

impl OwnerThread {
    /// The calling thread.
    pub fn current() -> OwnerThread {
        let thread = std::thread::current();
        OwnerThread {
            id: thread.id(),
            name: describe(&thread),
        }
    }

    /// How messages name the thread: its name where it has one, and its id.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the calling thread is this one.
    pub fn is_current(&self) -> bool {
        std::thread::current().id() == self.id
    }

    /// Refuses use from another thread.
    ///
    /// # Errors
    /// [`Error::Usage`]: "`what` was created on thread X and is used on thread Y".
    pub fn check(&self, what: &str) -> Result<()> {
        if self.is_current() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "{what} was created on thread {} and can be used only there; it is used on thread {}",
            self.name,
            describe(&std::thread::current())
        )))
    }
}

fn describe(thread: &std::thread::Thread) -> String {
    let id = format!("{:?}", thread.id());
    let id = id.trim_start_matches("ThreadId(").trim_end_matches(')');
    match thread.name() {
        Some(name) => format!("'{name}' (id {id})"),
        None => format!("id {id}"),
    }
}

/// Which backend runs the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendKind {
    /// CPU reference backend: host memory and threads.
    Host,
    /// NVIDIA GPUs through CUDA.
    Cuda,
    /// AMD GPUs through HIP/ROCm (or an NVIDIA GPU through haloport's HIP-on-CUDA layer, in a
    /// build with the hip-nvidia feature).
    Hip,
}

impl BackendKind {
    /// `host`, `cuda`, `hip`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
        }
    }

    /// The error for a backend this build does not have.
    pub fn not_built(self) -> Error {
        Error::InvalidInput(format!(
            "the {} backend is not available in this build (built with: {}); the host backend runs everywhere",
            self.name(),
            built_backends()
        ))
    }
}

impl std::str::FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<BackendKind> {
        match s {
            "host" => Ok(BackendKind::Host),
            "cuda" => Ok(BackendKind::Cuda),
            "hip" => Ok(BackendKind::Hip),
            _ => Err(Error::InvalidInput(format!(
                "unknown backend '{s}'; known: host, cuda, hip (built with: {})",
                built_backends()
            ))),
        }
    }
}

/// The backends compiled into this build, comma-separated.
pub fn built_backends() -> &'static str {
    env!("HALOPORT_BACKENDS")
}

/// What a foreign caller tells apart: a C status code, a Python exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A declaration, option, field or handle the caller got wrong.
    InvalidInput,
    /// A call out of order (finish before start).
    Usage,
    /// A wait that gave up: a peer that never sent, a device that never finished.
    Timeout,
    /// Received data that is not what was sent.
    Verification,
    /// A GPU, its driver or its kernels failed or are missing.
    Device,
    /// An MPI call failed.
    Mpi,
    /// Another rank failed a step every rank took (set-up, an agreement).
    OtherRank,
    /// A fault of haloport itself.
    Internal,
}

impl ErrorKind {
    /// The kind of `error`.
    pub fn of(error: &Error) -> ErrorKind {
        match error {
            Error::InvalidPattern(_) | Error::PatternFile { .. } | Error::InvalidInput(_) => {
                ErrorKind::InvalidInput
            }
            Error::Usage(_) => ErrorKind::Usage,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::VerificationFailed(_) => ErrorKind::Verification,
            Error::Mpi { .. } => ErrorKind::Mpi,
            Error::OtherRank { .. } => ErrorKind::OtherRank,
            Error::Backend { .. }
            | Error::Unsupported { .. }
            | Error::KernelsUnavailable { .. }
            | Error::OutOfMemory { .. }
            | Error::NoDevice { .. } => ErrorKind::Device,
            _ => ErrorKind::Internal,
        }
    }
}

/// One backend of the kinds this build has, opened for one device.
pub enum ForeignBackend {
    /// The CPU reference backend.
    #[cfg(feature = "host")]
    Host(haloport_host::HostBackend),
    /// NVIDIA, through CUDA (the device's primary context, which the CUDA runtime uses too).
    #[cfg(feature = "cuda")]
    Cuda(haloport_cuda::CudaBackend),
    /// AMD, through HIP.
    #[cfg(feature = "hip")]
    Hip(haloport_hip::HipBackend),
}

impl ForeignBackend {
    /// Opens device `device % devices` of `kind` (a rank's index on its node is the usual
    /// choice).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a backend this build lacks; the backend's own errors (no
    /// device, kernels that do not load).
    pub fn open(kind: BackendKind, device: usize) -> Result<ForeignBackend> {
        match kind {
            #[cfg(feature = "host")]
            BackendKind::Host => Ok(ForeignBackend::Host(haloport_host::HostBackend::new(
                device,
            )?)),
            #[cfg(feature = "cuda")]
            BackendKind::Cuda => Ok(ForeignBackend::Cuda(haloport_cuda::CudaBackend::new(
                device,
            )?)),
            #[cfg(feature = "hip")]
            BackendKind::Hip => Ok(ForeignBackend::Hip(haloport_hip::HipBackend::new(device)?)),
            #[allow(unreachable_patterns)]
            other => Err(other.not_built()),
        }
    }

    /// Which kind this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            #[cfg(feature = "host")]
            ForeignBackend::Host(_) => BackendKind::Host,
            #[cfg(feature = "cuda")]
            ForeignBackend::Cuda(_) => BackendKind::Cuda,
            #[cfg(feature = "hip")]
            ForeignBackend::Hip(_) => BackendKind::Hip,
        }
    }

    /// What the device is.
    pub fn device_info(&self) -> &DeviceInfo {
        match self {
            #[cfg(feature = "host")]
            ForeignBackend::Host(b) => b.device_info(),
            #[cfg(feature = "cuda")]
            ForeignBackend::Cuda(b) => b.device_info(),
            #[cfg(feature = "hip")]
            ForeignBackend::Hip(b) => b.device_info(),
        }
    }
}

/// A field as a foreign caller holds it: the address its kernels dereference (a host address
/// on the host backend) and the bytes allocated there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawField {
    /// Device address of the allocation's first cell (halos and padding included).
    pub addr: u64,
    /// Bytes allocated from `addr`.
    pub bytes: usize,
}

/// A stream as a foreign caller holds it: a `cudaStream_t` or `hipStream_t` as an integer, 0
/// for the default stream. Ignored on the host backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawStream(pub usize);

/// The exchange on one backend kind, borrowing the backend its owner keeps alive.
enum Exchange<'b> {
    #[cfg(feature = "host")]
    Host(
        HaloExchange<'b, haloport_host::HostBackend>,
        <haloport_host::HostBackend as Backend>::Stream,
    ),
    #[cfg(feature = "cuda")]
    Cuda(HaloExchange<'b, haloport_cuda::CudaBackend>),
    #[cfg(feature = "hip")]
    Hip(HaloExchange<'b, haloport_hip::HipBackend>),
}

/// The exchange, taken out only by [`ForeignExchange::close`].
type Slot<'b> = Option<Exchange<'b>>;

self_cell::self_cell!(
    /// The backend and the exchange that borrows it, in one value a foreign handle can own.
    struct Owned {
        owner: Arc<ForeignBackend>,
        #[not_covariant]
        dependent: Slot,
    }
);

/// A [`HaloExchange`] on a backend chosen at run time, over a communicator handed over as a raw
/// handle, exchanging fields given as addresses, on streams given as raw handles.
///
/// Dropped without [`ForeignExchange::close`], it closes itself while MPI runs (logging what
/// failed), and after `MPI_Finalize` leaks its exchange with one line on standard error: a
/// foreign program that never frees its exchange still exits cleanly.
pub struct ForeignExchange {
    /// Fused mode's fields ([`Self::fuse`]): dropped after the exchange was closed (`Drop`
    /// closes it first), before the backend.
    fused: Option<FusedFields>,
    owned: Owned,
    plan: HaloPlan,
    routes: Vec<RouteChoice>,
    timeout: std::time::Duration,
    owner: OwnerThread,
}

/// This rank's allocation as a foreign caller reads it back: per dimension, x first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// Allocated extents: `halo_lo + local + halo_hi + pad`.
    pub alloc: [u64; 3],
    /// The low halo widths: where the interior starts in the allocation.
    pub halo_lo: [u64; 3],
    /// The high halo widths.
    pub halo_hi: [u64; 3],
    /// Cells after the high halo, never read or written.
    pub pad: [u64; 3],
}

/// A captured graph of whole exchanges ([`ForeignExchange::end_capture`]), replayed with
/// [`ForeignExchange::replay`]. It keeps its backend alive.
pub struct ForeignGraph {
    // Dropped before the backend it keeps (field order).
    graph: Graph,
    _backend: Arc<ForeignBackend>,
}

enum Graph {
    #[cfg(feature = "host")]
    Host(ExchangeGraph<haloport_host::HostBackend>),
    #[cfg(feature = "cuda")]
    Cuda(ExchangeGraph<haloport_cuda::CudaBackend>),
    #[cfg(feature = "hip")]
    Hip(ExchangeGraph<haloport_hip::HipBackend>),
}

impl ForeignGraph {
    /// How many exchanges one replay runs.
    pub fn exchanges(&self) -> u64 {
        match &self.graph {
            #[cfg(feature = "host")]
            Graph::Host(g) => g.exchanges(),
            #[cfg(feature = "cuda")]
            Graph::Cuda(g) => g.exchanges(),
            #[cfg(feature = "hip")]
            Graph::Hip(g) => g.exchanges(),
        }
    }
}

/// The fields fused mode allocated ([`ForeignExchange::fuse`]): `sets` sets of the
/// declaration's fields, each the whole allocation of one field (halos and padding included),
/// zeroed. A share keeps their memory: the exchange holds one until it is closed or dropped
/// (the neighbours store into them until then), and a layer may hold more (Python's arrays
/// over them), so the memory goes with the last share. Shares stay on the exchange's thread.
#[derive(Clone)]
pub struct FusedFields {
    /// Set by set, each in the declaration's order.
    raw: Rc<Vec<Vec<RawField>>>,
    /// The `Vec<Vec<Field<B>>>` of the exchange's backend, held only to be freed last.
    _memory: Rc<dyn Any>,
}

impl FusedFields {
    fn held<B: Backend + 'static>(sets: Vec<Vec<Field<B>>>) -> FusedFields {
        let raw = sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(|f| RawField {
                        addr: f.device_addr(),
                        bytes: f.len_bytes(),
                    })
                    .collect()
            })
            .collect();
        FusedFields {
            raw: Rc::new(raw),
            _memory: Rc::new(sets),
        }
    }

    /// The sets, each its fields' addresses and sizes in the declaration's order.
    pub fn sets(&self) -> &[Vec<RawField>] {
        &self.raw
    }
}

impl Drop for ForeignExchange {
    fn drop(&mut self) {
        let live = self.owned.with_dependent(|_, slot| slot.is_some());
        if !live {
            return;
        }
        if mpi_finalized() {
            // Closing waits at a barrier and frees the communicator: MPI calls, which abort the
            // program after MPI_Finalize. The process is ending; its memory goes with it.
            self.owned.with_dependent_mut(|_, slot| {
                if let Some(exchange) = slot.take() {
                    std::mem::forget(exchange);
                }
            });
            // The neighbours' mappings of fused mode's fields were never closed either.
            std::mem::forget(self.fused.take());
            log_line(&format!(
                "rank {}: an exchange still open after MPI_Finalize is left to the process's exit (free or close it before MPI_Finalize)",
                self.plan.decomposition.rank
            ));
            return;
        }
        if let Err(e) = self
            .owned
            .with_dependent_mut(|_, slot| slot.take().map_or(Ok(()), Exchange::close))
        {
            // A neighbour may still store into fused mode's fields: leaked, as the exchange
            // leaks what it cannot show unused.
            std::mem::forget(self.fused.take());
            log_line(&format!("closing an exchange that was dropped: {e}"));
        }
    }
}

impl ForeignExchange {
    /// Compiles `spec` for this rank of `comm` and sets the exchange up, as
    /// [`HaloExchange::with_raw_comm`] (collective; `comm` borrowed, duplicated, never freed).
    ///
    /// # Errors
    /// As [`HaloExchange::new`].
    ///
    /// # Safety
    /// 1. `comm` is a valid intra-communicator of the running MPI library, alive during this
    ///    call.
    /// 2. Every rank of `comm` makes this call.
    pub unsafe fn new(
        backend: Arc<ForeignBackend>,
        comm: mpi::ffi::MPI_Comm,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<ForeignExchange> {
        check_mpi(comm, None)?;
        let owner = OwnerThread::current();
        let owned = Owned::try_new(backend, |backend| -> Result<Slot<'_>> {
            Ok(Some(match &**backend {
                #[cfg(feature = "host")]
                ForeignBackend::Host(b) => {
                    // SAFETY: forwarded from this function's contract.
                    let exchange = unsafe { HaloExchange::with_raw_comm(b, comm, spec, options)? };
                    Exchange::Host(exchange, b.create_stream()?)
                }
                #[cfg(feature = "cuda")]
                ForeignBackend::Cuda(b) => {
                    // SAFETY: forwarded from this function's contract.
                    Exchange::Cuda(unsafe { HaloExchange::with_raw_comm(b, comm, spec, options)? })
                }
                #[cfg(feature = "hip")]
                ForeignBackend::Hip(b) => {
                    // SAFETY: forwarded from this function's contract.
                    Exchange::Hip(unsafe { HaloExchange::with_raw_comm(b, comm, spec, options)? })
                }
            }))
        })?;
        let set_up = owned.with_dependent(|_, slot| {
            slot.as_ref()
                .map(|e| (e.plan().clone(), e.route_choices().to_vec()))
        });
        let (plan, routes) =
            set_up.ok_or_else(|| Error::Internal("an exchange set up without a plan".into()))?;
        Ok(ForeignExchange {
            fused: None,
            owned,
            plan,
            routes,
            timeout: options.timeout,
            owner,
        })
    }

    /// The plan this exchange runs: this rank's part (`decomposition`: extents, offset,
    /// halos, allocation) and its neighbours.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// The thread the exchange was made on, the only one that may use it.
    pub fn owner(&self) -> &OwnerThread {
        &self.owner
    }

    /// This rank's allocation: extents, where the interior starts, the high halos, the padding.
    pub fn allocation(&self) -> Allocation {
        let d = &self.plan.decomposition;
        let pad = std::array::from_fn(|k| {
            d.alloc[k].saturating_sub(d.halo[k] + d.local[k] + d.halo_hi[k])
        });
        Allocation {
            alloc: d.alloc,
            halo_lo: d.halo,
            halo_hi: d.halo_hi,
            pad,
        }
    }

    /// The backend the exchange runs on.
    pub fn backend(&self) -> &ForeignBackend {
        self.owned.borrow_owner()
    }

    /// How each neighbour's messages travel, in the plan's neighbour order.
    pub fn links(&self) -> Vec<Link> {
        self.owned
            .with_dependent(|_, slot| slot.as_ref().map(Exchange::links))
            .unwrap_or_default()
    }

    /// Each neighbour's route and why it was chosen, in the plan's neighbour order (kept from
    /// set-up, as the plan is).
    pub fn route_choices(&self) -> &[RouteChoice] {
        &self.routes
    }

    /// Bytes field `k` must have allocated (halos and padding included).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a field the declaration does not have.
    pub fn field_bytes(&self, k: usize) -> Result<u64> {
        let shapes = self.plan.spec.field_shapes();
        let shape = shapes.get(k).ok_or_else(|| {
            Error::InvalidInput(format!(
                "field {k}: the exchange was declared with {} fields",
                shapes.len()
            ))
        })?;
        Ok(self.plan.decomposition.alloc_elems() * shape.cell_bytes())
    }

    /// [`HaloExchange::start`] on the caller's fields and stream.
    ///
    /// # Errors
    /// As [`HaloExchange::start`]; [`Error::InvalidInput`] for a field that is null, misaligned
    /// or too small.
    ///
    /// # Safety
    /// 1. Each field is device memory of this backend's device (host memory on the host
    ///    backend), valid for reads and writes of its `bytes`, and stays allocated until the
    ///    exchange was waited for ([`Self::wait`], [`Self::exchange`]) or its stream was
    ///    synchronized.
    /// 2. `stream` is 0 or a live stream of this device's primary context, alive until the
    ///    exchange was waited for.
    /// 3. Until `finish`'s work completed, nothing else writes the cells the exchange sends or
    ///    touches halo cells.
    pub unsafe fn start(&mut self, fields: &[RawField], stream: RawStream) -> Result<()> {
        let plan = &self.plan;
        let deadline = Instant::now() + self.timeout;
        self.owned
            .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(b), Some(Exchange::Host(e, own))) => {
                    let _ignored_on_the_host = stream;
                    // SAFETY: the fields' contract is this function's.
                    let fields = unsafe { adopt_all(fields, plan)? };
                    e.start(&fields.iter().collect::<Vec<_>>(), own)?;
                    b.stream_synchronize(own, deadline)
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                    // SAFETY: the fields' contract is this function's.
                    let fields = unsafe { adopt_all(fields, plan)? };
                    // SAFETY: the stream's contract is this function's.
                    let stream = unsafe { haloport_cuda::CudaStream::from_raw(b, stream.0 as _) };
                    e.start(&fields.iter().collect::<Vec<_>>(), &stream)
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                    // SAFETY: the fields' contract is this function's.
                    let fields = unsafe { adopt_all(fields, plan)? };
                    // SAFETY: the stream's contract is this function's.
                    let stream = unsafe { haloport_hip::HipStream::from_raw(b, stream.0 as _) };
                    e.start(&fields.iter().collect::<Vec<_>>(), &stream)
                }
                #[allow(unreachable_patterns)]
                _ => Err(closed()),
            })
    }

    /// Fused mode on fields the library allocates, [`HaloExchange::fuse_alloc`]: `sets` sets
    /// of the declaration's fields, mapped into the neighbours, one descriptor per field and
    /// set. The exchange keeps a share of the fields until it is closed; the one returned is
    /// the caller's. Collective.
    ///
    /// # Errors
    /// As [`HaloExchange::fuse_alloc`].
    pub fn fuse(&mut self, sets: usize) -> Result<FusedFields> {
        let fields = self.owned.with_dependent_mut(|_, slot| match slot {
            #[cfg(feature = "host")]
            Some(Exchange::Host(e, _)) => e.fuse_alloc(sets).map(FusedFields::held),
            #[cfg(feature = "cuda")]
            Some(Exchange::Cuda(e)) => e.fuse_alloc(sets).map(FusedFields::held),
            #[cfg(feature = "hip")]
            Some(Exchange::Hip(e)) => e.fuse_alloc(sets).map(FusedFields::held),
            None => Err(closed()),
        })?;
        self.fused = Some(fields.clone());
        Ok(fields)
    }

    /// The fields [`Self::fuse`] allocated, if it was called.
    pub fn fused_fields(&self) -> Option<&FusedFields> {
        self.fused.as_ref()
    }

    /// [`HaloExchange::fused_start`] on the caller's stream: returns the device addresses of
    /// set `set`'s descriptors, one per field. On the host backend it returns once every
    /// neighbour is done reading the halos of the set (or reports the wait that gave up), so
    /// that the caller's stores on the CPU may follow.
    ///
    /// # Errors
    /// As [`HaloExchange::fused_start`].
    ///
    /// # Safety
    /// As [`Self::start`]'s second promise.
    pub unsafe fn fused_start(&mut self, set: usize, stream: RawStream) -> Result<Vec<u64>> {
        // The signal kernel's own wait is bounded by the time-out and names the halo: allow
        // for it to end first.
        let deadline = Instant::now() + self.timeout.saturating_mul(2);
        self.owned
            .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(b), Some(Exchange::Host(e, own))) => {
                    let _ignored_on_the_host = stream;
                    let descriptors = e.fused_start(set, own)?;
                    b.stream_synchronize(own, deadline)?;
                    e.wait()?;
                    Ok(descriptors)
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.fused_start(set, &unsafe {
                        haloport_cuda::CudaStream::from_raw(b, stream.0 as _)
                    })
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.fused_start(set, &unsafe {
                        haloport_hip::HipStream::from_raw(b, stream.0 as _)
                    })
                }
                #[allow(unreachable_patterns)]
                _ => Err(closed()),
            })
    }

    /// [`HaloExchange::fused_finish`] on the caller's stream. On the host backend it returns
    /// once every cell of every incoming message of the set arrived (or reports the wait that
    /// gave up).
    ///
    /// # Errors
    /// As [`HaloExchange::fused_finish`].
    ///
    /// # Safety
    /// As [`Self::start`]'s second promise.
    pub unsafe fn fused_finish(&mut self, set: usize, stream: RawStream) -> Result<()> {
        let deadline = Instant::now() + self.timeout.saturating_mul(2);
        self.owned
            .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(b), Some(Exchange::Host(e, own))) => {
                    let _ignored_on_the_host = stream;
                    e.fused_finish(set, own)?;
                    b.stream_synchronize(own, deadline)?;
                    e.wait()
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.fused_finish(set, &unsafe {
                        haloport_cuda::CudaStream::from_raw(b, stream.0 as _)
                    })
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.fused_finish(set, &unsafe {
                        haloport_hip::HipStream::from_raw(b, stream.0 as _)
                    })
                }
                #[allow(unreachable_patterns)]
                _ => Err(closed()),
            })
    }

    /// [`HaloExchange::fused_descriptors`]: set `set`'s descriptors in host memory, one per
    /// field (on the host backend, what the caller's CPU code stores through).
    ///
    /// # Errors
    /// As [`HaloExchange::fused_descriptors`].
    pub fn fused_descriptors(&self, set: usize) -> Result<Vec<haloport_fused>> {
        self.owned.with_dependent(|_, slot| match slot {
            #[cfg(feature = "host")]
            Some(Exchange::Host(e, _)) => e.fused_descriptors(set).map(<[_]>::to_vec),
            #[cfg(feature = "cuda")]
            Some(Exchange::Cuda(e)) => e.fused_descriptors(set).map(<[_]>::to_vec),
            #[cfg(feature = "hip")]
            Some(Exchange::Hip(e)) => e.fused_descriptors(set).map(<[_]>::to_vec),
            None => Err(closed()),
        })
    }

    /// [`HaloExchange::finish`] on the caller's stream (on the host backend: returns once the
    /// halos are filled).
    ///
    /// # Errors
    /// As [`HaloExchange::finish`].
    ///
    /// # Safety
    /// As [`Self::start`]'s second promise.
    pub unsafe fn finish(&mut self, stream: RawStream) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        self.owned
            .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(b), Some(Exchange::Host(e, own))) => {
                    let _ignored_on_the_host = stream;
                    e.finish(own)?;
                    b.stream_synchronize(own, deadline)
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.finish(&unsafe { haloport_cuda::CudaStream::from_raw(b, stream.0 as _) })
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.finish(&unsafe { haloport_hip::HipStream::from_raw(b, stream.0 as _) })
                }
                #[allow(unreachable_patterns)]
                _ => Err(closed()),
            })
    }

    /// [`HaloExchange::wait`].
    ///
    /// # Errors
    /// As [`HaloExchange::wait`].
    pub fn wait(&mut self) -> Result<()> {
        self.owned.with_dependent_mut(|_, slot| match slot {
            #[cfg(feature = "host")]
            Some(Exchange::Host(e, _)) => e.wait(),
            #[cfg(feature = "cuda")]
            Some(Exchange::Cuda(e)) => e.wait(),
            #[cfg(feature = "hip")]
            Some(Exchange::Hip(e)) => e.wait(),
            None => Err(closed()),
        })
    }

    /// `start`, `finish` and `wait`: when it returns `Ok`, every field's halos are filled.
    ///
    /// # Errors
    /// As [`HaloExchange::exchange`].
    ///
    /// # Safety
    /// As [`Self::start`].
    pub unsafe fn exchange(&mut self, fields: &[RawField], stream: RawStream) -> Result<()> {
        // On the host backend `HaloExchange::exchange` waits for all of its work itself, so the
        // two synchronizations that make `start` and `finish` complete on return (each a few
        // microseconds a call) are left out.
        #[cfg(feature = "host")]
        {
            let plan = &self.plan;
            let done = self.owned.with_dependent_mut(|_, slot| match slot {
                Some(Exchange::Host(e, own)) => {
                    // SAFETY: the fields' contract is this function's.
                    let fields = unsafe { adopt_all(fields, plan)? };
                    e.exchange(&fields.iter().collect::<Vec<_>>(), own)
                        .map(|()| true)
                }
                _ => Ok(false),
            })?;
            if done {
                return Ok(());
            }
        }
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.start(fields, stream)?;
            self.finish(stream)?;
        }
        self.wait()
    }

    /// [`HaloExchange::close`]: ends the exchange, returning what dropping it could only log
    /// (collective with `ipc`). After `MPI_Finalize` nothing is closed: the exchange is left
    /// to the process's exit with one line on standard error (as dropping it does), and `Ok`
    /// returned.
    ///
    /// # Errors
    /// As [`HaloExchange::close`].
    pub fn close(mut self) -> Result<()> {
        if mpi_finalized() {
            // `drop` leaks it and says so.
            return Ok(());
        }
        // The exchange is taken out of the cell and closed; the backend drops after it, and
        // `drop` finds nothing left to do.
        let closed = self
            .owned
            .with_dependent_mut(|_, slot| slot.take().map_or(Err(closed()), Exchange::close));
        if closed.is_err() {
            // A neighbour may still store into fused mode's fields: leaked, as the exchange
            // leaks what it cannot show unused.
            std::mem::forget(self.fused.take());
        }
        closed
    }

    /// [`HaloExchange::begin_capture`] on the caller's stream: from here until
    /// [`Self::end_capture`], `start` and `finish` on that stream (and the caller's kernels on
    /// it) are captured, not run. Capture an even number of whole exchanges.
    ///
    /// # Errors
    /// As [`HaloExchange::begin_capture`]: [`Error::Unsupported`] on the host backend,
    /// [`Error::InvalidInput`] naming a host-staged neighbour.
    ///
    /// # Safety
    /// As [`Self::start`]'s second promise.
    pub unsafe fn begin_capture(&mut self, stream: RawStream) -> Result<()> {
        self.owned
            .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(_), Some(Exchange::Host(e, own))) => {
                    let _ignored_on_the_host = stream;
                    e.begin_capture(own)
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.begin_capture(&unsafe {
                        haloport_cuda::CudaStream::from_raw(b, stream.0 as _)
                    })
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                    // SAFETY: the stream's contract is this function's.
                    e.begin_capture(&unsafe { haloport_hip::HipStream::from_raw(b, stream.0 as _) })
                }
                #[allow(unreachable_patterns)]
                _ => Err(closed()),
            })
    }

    /// [`HaloExchange::end_capture`]: ends the capture (also after an error inside it) and
    /// returns the graph; nothing captured has run.
    ///
    /// # Errors
    /// As [`HaloExchange::end_capture`].
    ///
    /// # Safety
    /// As [`Self::start`]'s second promise; the fields captured stay allocated while the graph
    /// may be replayed.
    pub unsafe fn end_capture(&mut self, stream: RawStream) -> Result<ForeignGraph> {
        let backend = Arc::clone(self.owned.borrow_owner());
        let graph =
            self.owned
                .with_dependent_mut(|owner, exchange| match (&**owner, exchange) {
                    #[cfg(feature = "host")]
                    (ForeignBackend::Host(_), Some(Exchange::Host(e, own))) => {
                        let _ignored_on_the_host = stream;
                        e.end_capture(own).map(Graph::Host)
                    }
                    #[cfg(feature = "cuda")]
                    (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e))) => {
                        // SAFETY: the stream's contract is this function's.
                        let stream =
                            unsafe { haloport_cuda::CudaStream::from_raw(b, stream.0 as _) };
                        e.end_capture(&stream).map(Graph::Cuda)
                    }
                    #[cfg(feature = "hip")]
                    (ForeignBackend::Hip(b), Some(Exchange::Hip(e))) => {
                        // SAFETY: the stream's contract is this function's.
                        let stream = unsafe { haloport_hip::HipStream::from_raw(b, stream.0 as _) };
                        e.end_capture(&stream).map(Graph::Hip)
                    }
                    #[allow(unreachable_patterns)]
                    _ => Err(closed()),
                })?;
        Ok(ForeignGraph {
            graph,
            _backend: backend,
        })
    }

    /// [`HaloExchange::replay`]: queues one replay of `graph` on the caller's stream;
    /// [`Self::wait`] waits for it.
    ///
    /// # Errors
    /// As [`HaloExchange::replay`]; [`Error::Usage`] for a graph of another backend.
    ///
    /// # Safety
    /// As [`Self::start`]: the captured fields and `stream` stay alive until the replay was
    /// waited for.
    pub unsafe fn replay(&mut self, graph: &mut ForeignGraph, stream: RawStream) -> Result<()> {
        self.owned.with_dependent_mut(|owner, exchange| {
            match (&**owner, exchange, &mut graph.graph) {
                #[cfg(feature = "host")]
                (ForeignBackend::Host(_), Some(Exchange::Host(e, own)), Graph::Host(g)) => {
                    let _ignored_on_the_host = stream;
                    e.replay(g, own)
                }
                #[cfg(feature = "cuda")]
                (ForeignBackend::Cuda(b), Some(Exchange::Cuda(e)), Graph::Cuda(g)) => {
                    // SAFETY: the stream's contract is this function's.
                    e.replay(g, &unsafe {
                        haloport_cuda::CudaStream::from_raw(b, stream.0 as _)
                    })
                }
                #[cfg(feature = "hip")]
                (ForeignBackend::Hip(b), Some(Exchange::Hip(e)), Graph::Hip(g)) => {
                    // SAFETY: the stream's contract is this function's.
                    e.replay(g, &unsafe {
                        haloport_hip::HipStream::from_raw(b, stream.0 as _)
                    })
                }
                (_, None, _) => Err(closed()),
                #[allow(unreachable_patterns)]
                _ => Err(Error::Usage(
                    "the graph was captured on another backend than this exchange's".into(),
                )),
            }
        })
    }
}

impl<'b> Exchange<'b> {
    fn plan(&self) -> &HaloPlan {
        match self {
            #[cfg(feature = "host")]
            Exchange::Host(e, _) => e.plan(),
            #[cfg(feature = "cuda")]
            Exchange::Cuda(e) => e.plan(),
            #[cfg(feature = "hip")]
            Exchange::Hip(e) => e.plan(),
        }
    }

    fn route_choices(&self) -> &[RouteChoice] {
        match self {
            #[cfg(feature = "host")]
            Exchange::Host(e, _) => e.route_choices(),
            #[cfg(feature = "cuda")]
            Exchange::Cuda(e) => e.route_choices(),
            #[cfg(feature = "hip")]
            Exchange::Hip(e) => e.route_choices(),
        }
    }

    fn links(&self) -> Vec<Link> {
        match self {
            #[cfg(feature = "host")]
            Exchange::Host(e, _) => e.links(),
            #[cfg(feature = "cuda")]
            Exchange::Cuda(e) => e.links(),
            #[cfg(feature = "hip")]
            Exchange::Hip(e) => e.links(),
        }
    }

    fn close(self) -> Result<()> {
        match self {
            #[cfg(feature = "host")]
            Exchange::Host(e, _) => e.close(),
            #[cfg(feature = "cuda")]
            Exchange::Cuda(e) => e.close(),
            #[cfg(feature = "hip")]
            Exchange::Hip(e) => e.close(),
        }
    }
}

/// The error for an exchange used after it was closed (reachable only through a layer that
/// keeps handles past `close`).
fn closed() -> Error {
    Error::Usage("the exchange was closed".into())
}

/// The caller's fields adopted for one call, each checked against its own shape (errors name
/// the field and its type).
///
/// # Safety
/// As [`ForeignExchange::start`]'s first promise.
unsafe fn adopt_all<B: Backend>(fields: &[RawField], plan: &HaloPlan) -> Result<Vec<Field<B>>> {
    let declared = plan.spec.fields as usize;
    if fields.len() != declared {
        return Err(Error::InvalidInput(format!(
            "the exchange was declared with {declared} fields, {} were given",
            fields.len()
        )));
    }
    fields
        .iter()
        .enumerate()
        .map(|(k, f)| {
            // SAFETY: forwarded from this function's contract.
            unsafe { Field::adopt_field(f.addr, f.bytes, plan, k) }
        })
        .collect()
}

impl ForeignExchange {
    /// Orders the work queued on `consumer` after this call behind the work queued on
    /// `producer` so far, without blocking the CPU: an event recorded on `producer`, waited for
    /// on `consumer`. How a layer honours a producer's stream it was told of (the CUDA array
    /// interface's `stream`: the consumer must not touch the array before the producer's work
    /// there completed). Nothing to do on the host backend (no streams) or for one stream.
    ///
    /// # Errors
    /// The backend's errors of recording or waiting for the event.
    ///
    /// # Safety
    /// 1. `producer` and `consumer` are each 0 or a live stream of this device's primary
    ///    context, alive during this call.
    ///
    /// Vendor: cuEventRecord + cuStreamWaitEvent / hipEventRecord + hipStreamWaitEvent.
    pub unsafe fn order_after(&self, producer: RawStream, consumer: RawStream) -> Result<()> {
        if producer == consumer {
            return Ok(());
        }
        match self.backend() {
            #[cfg(feature = "host")]
            ForeignBackend::Host(_) => Ok(()),
            #[cfg(feature = "cuda")]
            ForeignBackend::Cuda(b) => {
                // SAFETY: the streams' contract is this function's.
                let (p, c) = unsafe {
                    (
                        haloport_cuda::CudaStream::from_raw(b, producer.0 as _),
                        haloport_cuda::CudaStream::from_raw(b, consumer.0 as _),
                    )
                };
                // The event may be destroyed once waited for: the wait keeps its record.
                let event = b.create_marker()?;
                b.record_event(&event, &p)?;
                b.stream_wait_event(&c, &event)
            }
            #[cfg(feature = "hip")]
            ForeignBackend::Hip(b) => {
                // SAFETY: the streams' contract is this function's.
                let (p, c) = unsafe {
                    (
                        haloport_hip::HipStream::from_raw(b, producer.0 as _),
                        haloport_hip::HipStream::from_raw(b, consumer.0 as _),
                    )
                };
                let event = b.create_marker()?;
                b.record_event(&event, &p)?;
                b.stream_wait_event(&c, &event)
            }
        }
    }
}
