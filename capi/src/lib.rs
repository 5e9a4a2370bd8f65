//! haloport's C ABI (SPEC 16): `libhaloport.so`, `libhaloport.a` and `haloport.h` (generated
//! from this crate by cbindgen), for C, C++ and, through `fortran/haloport.f90`, Fortran.
//!
//! Conventions (rustls-ffi's): every function returns a [`HaloportStatus`] and writes results to
//! out-parameters; `haloport_last_error()` gives the message of the last failed call on the
//! thread; no panic crosses the boundary ([`status::entry`] catches it); handles are opaque and
//! checked on every use ([`handles`]). Everything a call does is the Rust API's
//! (`haloport::foreign`); this crate converts arguments and maps errors.

// The whole crate is the boundary: raw pointers from C are read here, behind checks.
#![allow(unsafe_code)]
// C spells the status names and the header's types; Rust's casing rules do not apply.
#![allow(non_camel_case_types)]
// Every exported function is the C boundary: it checks each pointer for NULL and the header
// says what the pointer must address; `unsafe` on the Rust signature would tell C nothing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod backend;
mod domain;
mod exchange;
mod fused;
mod handles;
mod options;
mod status;
mod version;

pub use backend::*;
pub use domain::*;
pub use exchange::*;
pub use fused::*;
pub use options::*;
pub use status::{haloport_last_error, haloport_status_name, HaloportStatus};
pub use version::*;

/// The `MPI_Comm` of the MPI library haloport was built against (from `mpi.h`).
pub type MPI_Comm = mpi::ffi::MPI_Comm;
/// The Fortran handle of a communicator (from `mpi.h`).
pub type MPI_Fint = mpi::ffi::RSMPI_Fint;
