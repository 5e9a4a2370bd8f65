//! haloport: halo exchange between GPUs over MPI, portable across NVIDIA (CUDA) and AMD (HIP).
//!
//! This crate is the facade: it re-exports [`haloport_core`] (the Backend trait, patterns,
//! workloads, strategies, the MPI transport) and the backends compiled in (features `host`,
//! `cuda`, `hip`), and holds what the CLI and library users share: build provenance and the
//! result file format.

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
