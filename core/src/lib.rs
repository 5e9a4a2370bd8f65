//! haloport-core: the vendor-neutral heart of haloport.
//!
//! It holds the [`Backend`] trait every GPU vendor implements, exchange [patterns](pattern) and
//! [workloads](workload), the [strategies](strategy) (written against the trait only, so they
//! run unchanged on CUDA, HIP and the host backend), the MPI [transport], the measurement
//! protocol and statistics, and the library's [domain] declarations compiled into halo-exchange
//! plans (SPEC 13). It contains no vendor code.
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
pub mod measure;
pub mod observe;
pub mod packbench;
pub mod pattern;
pub mod regions;
pub mod shared;
pub mod stats;
pub mod stencil;
pub mod strategy;
pub mod timeline;
pub mod transport;
pub mod variant;
pub mod verify;
pub mod workload;

pub use backend::{
    Backend, Coherence, DeviceIdentity, DeviceInfo, DeviceMemory, IpcHandle, Kernel, Launch,
    LaunchDims, PinnedMemory,
};
pub use error::{Error, Result};
pub use observe::{BlockChecks, Discard, Observer};
pub use pattern::{BuiltinPattern, PatternSource, RankPattern};
pub use regions::Copy3d;
pub use strategy::{ExchangeOptions, Fault, Strategy};
pub use variant::Variant;
pub use verify::Verify;
pub use workload::Workload;
