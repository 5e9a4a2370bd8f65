//! haloport: halo exchange between GPUs over MPI, portable across NVIDIA (CUDA) and AMD (HIP).
//!
//! This crate is the facade: it re-exports [`haloport_core`] (the Backend trait, the halo
//! exchange library, patterns, workloads, strategies, transports) and the backends compiled in
//! (features `host`, `cuda`, `hip`), and holds what the CLI and library users share: build
//! provenance and the result file format.
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
//! use haloport::core::variant::TransportKind;
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
//!     exchange.wait(&stream)?; // everything done; device-side time-outs reported here
//!     Ok(())
//! }
//! ```
//!
//! Fields you allocated yourself are adopted with
//! [`Field::adopt`](haloport_core::halo::Field::adopt) (an `unsafe` promise that the memory
//! outlives the exchanges using it). `haloport stencil` and `examples/jacobi.rs` run a complete
//! Jacobi solver this way, verified bit-for-bit against one rank computing the whole grid
//! ([`haloport_core::stencil`]).

pub mod provenance;
pub mod report;
pub mod results;

pub use haloport_core as core;
pub use haloport_core::{Backend, Error, Result};

#[cfg(feature = "host")]
pub use haloport_host as host;

#[cfg(feature = "cuda")]
pub use haloport_cuda as cuda;

#[cfg(feature = "hip")]
pub use haloport_hip as hip;
