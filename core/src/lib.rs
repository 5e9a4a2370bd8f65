//! haloport-core: the vendor-neutral halo-exchange library.
//!
//! It holds the [`Backend`] trait every GPU vendor implements and its kernel catalogue, the
//! library's [domain] declarations compiled into halo-exchange plans, the [halo] exchange that
//! runs them over per-neighbour routes ([transport]: host-staged MPI, device-direct IPC), the
//! message layouts the routes move ([pattern], [exchange]), verification ([verify]) and the
//! conformance suite every backend instantiates ([conformance]). It contains no vendor code.
//! The thesis benchmark (`haloport-thesis`) and the stencil application (`haloport-stencil`)
//! are built on it, in crates of their own.
//!
//! Unsafe code is denied except in the modules that must touch raw memory: [`exchange`]
//! (pinned buffers shared with kernels) and [`transport::mpi`] (the MPI bridge).

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod clock;
pub mod collective;
pub mod conformance;
pub mod control;
pub mod domain;
pub mod error;
pub mod exchange;
pub mod halo;
pub mod pattern;
pub mod regions;
pub mod shared;
pub mod transport;
pub mod verify;

pub use backend::{
    Backend, Coherence, Current, DeviceIdentity, DeviceInfo, DeviceMemory, IpcHandle, Kernel,
    KernelUnit, Launch, LaunchDims, PinnedMemory,
};
pub use error::{Error, Result};
pub use pattern::{BuiltinPattern, PatternSource, RankPattern};
pub use regions::Copy3d;
pub use transport::{Fault, TransportKind};
pub use verify::Verify;
