//! haloport: halo exchange between GPUs over MPI, portable across NVIDIA (CUDA) and AMD (HIP).
//!
//! This crate is the library users depend on: it re-exports [`haloport_core`] (the Backend
//! trait, the declaration and its plan, the halo exchange and its routes) and the backends
//! compiled in (features `host`, `cuda`, `hip`, `hip-nvidia`), and holds build provenance and
//! what the C ABI and the Python package share (`foreign`). The thesis benchmark and the
//! stencil application are crates of their own (`haloport-thesis`, `haloport-stencil`), built
//! on this one; a library user compiles neither.
//!
//! # Exchanging the halos of your own fields
//!
//! Declare the domain once, compile it into an exchange, then exchange the halos of your
//! device fields every step. Work queued on your stream between
//! [`start`](haloport_core::halo::HaloExchange::start) and
//! [`finish`](haloport_core::halo::HaloExchange::finish) overlaps the exchange; work queued
//! after `finish` sees the halos filled.
//!
//! ```no_run
//! use haloport::core::domain::{DomainSpec, ElemType};
//! use haloport::core::halo::{Field, HaloExchange, HaloOptions};
//! use haloport::core::transport::TransportKind;
//! use haloport::Backend;
//! use mpi::topology::Communicator;
//!
//! fn main() -> haloport::Result<()> {
//!     let universe = mpi::initialize().expect("MPI initializes once");
//!     let world = universe.world();
//!     // One device per rank of a node (swap in haloport::cuda::CudaBackend on NVIDIA GPUs).
//!     let backend = haloport::host::HostBackend::new(world.split_shared(0).rank() as usize)?;
//!
//!     // A 256^3 grid over every rank (process grid as MPI_Dims_create chooses), periodic in
//!     // x and z, one halo cell, two f64 fields exchanged together.
//!     let spec = DomainSpec {
//!         grid: [256, 256, 256],
//!         procs: None,
//!         periodic: [true, false, true],
//!         halo: [1, 1, 1],
//!         elem: ElemType::F64,
//!         fields: 2,
//!         layout: Default::default(), // no padding, all 26 neighbours
//!     };
//!     let options = HaloOptions {
//!         transport: TransportKind::Ipc, // device-direct to peers on this node, MPI beyond
//!         ..HaloOptions::default()
//!     };
//!     let mut exchange = HaloExchange::new(&backend, &world, &spec, options)?;
//!
//!     // This rank's part, with halos: exchange.plan().decomposition says where it lies.
//!     let plan = exchange.plan().clone();
//!     let (u, v) = (Field::alloc(&backend, &plan)?, Field::alloc(&backend, &plan)?);
//!     let stream = backend.create_stream()?;
//!     for _step in 0..100 {
//!         exchange.start(&[&u, &v], &stream)?; // packs and sends, ordered on `stream`
//!         // ... queue the update of the cells that need no halo on `stream` ...
//!         exchange.finish(&stream)?; // receives and unpacks, ordered on `stream`
//!         // ... queue the update of the cells next to the halos ...
//!     }
//!     exchange.wait()?; // the exchange's own kernels done, wherever they were queued
//!     exchange.close()?; // every rank alike; errors here are returned, not logged
//!     Ok(())
//! }
//! ```
//!
//! # Your streams, communicators and kernels
//!
//! A code that has its own stream and kernels hands haloport the stream and launches its
//! update between `start` and `finish`, by any means (cudarc, its own C library, NVRTC):
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # fn main() -> haloport::Result<()> {
//! # use haloport::core::domain::{DomainSpec, ElemType};
//! # use haloport::core::halo::{Field, HaloExchange, HaloOptions};
//! # use haloport::Backend;
//! # use mpi::topology::Communicator;
//! # let universe = mpi::initialize().expect("MPI");
//! # let world = universe.world();
//! # let spec = DomainSpec { grid: [64; 3], procs: None, periodic: [true; 3], halo: [1; 3],
//! #     elem: ElemType::F64, fields: 1, layout: Default::default() };
//! # let app_stream_raw: haloport::cuda::CUstream = std::ptr::null_mut();
//! # let (app_u, bytes) = (0_u64, 0_usize);
//! let backend = haloport::cuda::CudaBackend::new(0)?;
//! // Any communicator: the world, a split, or a Cartesian one (whose topology haloport
//! // follows: its dims are the process grid, its periods the periodicity).
//! let cart = world
//!     .create_cartesian_communicator(&[2, 2, 1], &[true; 3], true)
//!     .expect("a rank of the Cartesian communicator");
//! let mut exchange = HaloExchange::new(&backend, &cart, &spec, HaloOptions::default())?;
//! // The application's stream (a cudaStream_t / CUstream), borrowed, never destroyed.
//! // SAFETY: a live stream of this device's primary context, outliving its use here.
//! let stream = unsafe { haloport::cuda::CudaStream::from_raw(&backend, app_stream_raw) };
//! // The application's own allocation, adopted.
//! // SAFETY: a device address of `bytes` bytes, kept until the exchange was waited for.
//! let u = unsafe { Field::adopt(app_u, bytes, exchange.plan())? };
//! exchange.start(&[&u], &stream)?;
//! // ... launch your interior update on `stream.as_raw()` ...
//! exchange.finish(&stream)?;
//! // ... launch your boundary update on `stream.as_raw()` ...
//! exchange.wait()?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "cuda"))]
//! # fn main() {}
//! ```
//!
//! On the host backend the same program queues its own work with
//! `HostStream::enqueue` (`examples/app_kernel.rs` runs both, verified against one rank).
//! From a foreign caller's raw `MPI_Comm`, use `HaloExchange::with_raw_comm` (borrowed and
//! duplicated, never freed).
//!
//! The exchange records an event after each of its launches and orders, waits and frees only
//! on those: `start` and `finish` may use different streams, and `wait` needs none. A
//! failure on the device (a peer that never sent) is reported by the next `start`, `finish`
//! or `wait` (the halos of that exchange and of those started before it was seen are stale),
//! or by `finish` itself with `HaloOptions::checked`. Options that must agree are agreed at
//! set-up, and a set-up step that fails on one rank fails every rank, before any other
//! collective.
//!
//! Fields you allocated yourself are adopted with
//! [`Field::adopt`](haloport_core::halo::Field::adopt) (an `unsafe` promise that the memory
//! outlives the exchanges using it). `haloport stencil` and `examples/jacobi.rs` run a complete
//! Jacobi solver this way, verified bit-for-bit against one rank computing the whole grid
//! (the `haloport-stencil` crate).

pub mod foreign;
pub mod provenance;

pub use haloport_core as core;
pub use haloport_core::{Backend, Error, Result};

#[cfg(feature = "host")]
pub use haloport_host as host;

#[cfg(feature = "cuda")]
pub use haloport_cuda as cuda;

#[cfg(feature = "hip")]
pub use haloport_hip as hip;
