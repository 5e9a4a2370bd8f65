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

use std::sync::Arc;
use std::time::Instant;

use haloport_core::backend::DeviceInfo;
use haloport_core::domain::{DomainSpec, HaloPlan};
use haloport_core::halo::{Field, HaloExchange, HaloOptions, Link};
use haloport_core::{Backend, Error, Result};

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
pub struct ForeignExchange {
    owned: Owned,
    plan: HaloPlan,
    timeout: std::time::Duration,
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
        let plan = owned.with_dependent(|_, slot| slot.as_ref().map(|e| e.plan().clone()));
        let plan =
            plan.ok_or_else(|| Error::Internal("an exchange set up without a plan".into()))?;
        Ok(ForeignExchange {
            owned,
            plan,
            timeout: options.timeout,
        })
    }

    /// The plan this exchange runs: this rank's part (`decomposition`: extents, offset,
    /// halos, allocation) and its neighbours.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
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
    /// (collective with `ipc`).
    ///
    /// # Errors
    /// As [`HaloExchange::close`].
    pub fn close(self) -> Result<()> {
        let mut owned = self.owned;
        // The exchange is taken out of the cell and closed; the backend drops after it.
        owned.with_dependent_mut(|_, slot| slot.take().map_or(Err(closed()), Exchange::close))
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

/// The caller's fields adopted for one call.
///
/// # Safety
/// As [`ForeignExchange::start`]'s first promise.
unsafe fn adopt_all<B: Backend>(fields: &[RawField], plan: &HaloPlan) -> Result<Vec<Field<B>>> {
    fields
        .iter()
        .enumerate()
        .map(|(k, f)| {
            // SAFETY: forwarded from this function's contract.
            unsafe { Field::adopt(f.addr, f.bytes, plan) }
                .map_err(|e| Error::InvalidInput(format!("field {k}: {e}")))
        })
        .collect()
}
