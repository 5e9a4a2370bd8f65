//! NCCL (NVIDIA) and RCCL (AMD) loaded at run time, as safe Rust types: the building blocks of
//! haloport's nccl route (SPEC 21), which moves packed halo messages between GPUs with grouped
//! `ncclSend`/`ncclRecv` on the exchange's stream.
//!
//! Three layers, as cudarc's:
//! - [`sys`]: bindings generated from NCCL 2.32.6's `nccl.h` by `gen-bindings.sh` (committed),
//!   a function table filled by libloading;
//! - [`result`]: one checked function per call, every return code turned into an [`Error`] that
//!   names the call and carries `ncclGetErrorString` and `ncclGetLastError`;
//! - the safe types re-exported here: [`Nccl`] (the opened library), [`UniqueId`],
//!   [`Communicator`] and [`Group`].
//!
//! Nothing links NCCL: [`Nccl::load`] opens it (see [`library`] for where it looks), so a binary
//! built with this crate runs where NCCL is missing and can say why. Every wait is bounded by
//! the communicator's time-out and ends in an abort, never a hang (see [`comm`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use haloport_nccl::{Communicator, Flavour, Nccl};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let universe = mpi::initialize().ok_or("MPI")?;
//! let world = universe.world();
//! let nccl = Nccl::load(Flavour::Nccl)?; // the error says where it looked
//! let mut comm = Communicator::from_mpi(&nccl, &world, Duration::from_secs(30))?;
//! # let (send, recv, bytes, peer, stream) =
//! #     (std::ptr::null(), std::ptr::null_mut(), 0, 0, std::ptr::null_mut());
//! comm.group(|g| {
//!     // SAFETY: device buffers of `bytes` bytes, alive until the stream has run the group.
//!     unsafe {
//!         g.send(send, bytes, peer, stream)?;
//!         g.recv(recv, bytes, peer, stream)
//!     }
//! })?;
//! # Ok(())
//! # }
//! ```
//!
//! For CI, `standin/nccl_standin.c` implements the same calls over MPI on host memory (see the
//! README).

pub mod comm;
pub mod error;
pub mod library;
pub mod result;
pub mod sys;

pub use comm::{AsyncState, Communicator, Group, UniqueId};
pub use error::{Error, Result};
pub use library::{Flavour, Nccl, Version};
