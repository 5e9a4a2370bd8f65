//! haloport-hip: the [`Backend`](haloport_core::Backend) trait on AMD GPUs through the HIP
//! runtime (hip-sys), with the kernels of `kernels-cu/` compiled by hipcc.
//!
//! The runtime part needs the `kernels` feature (haloport's `hip` feature): it links
//! libamdhip64, so a binary built with it needs the HIP runtime installed to start, GPU or not.
//! Without the feature this crate holds only [`kernels`] (the code-object inspection), so the
//! workspace builds anywhere.
//!
//! ## Devices
//! Each process uses device `local_rank % device_count` (`hipSetDevice` on the creating thread;
//! use the backend from that thread). Without an AMD GPU, `hipGetDeviceCount` answers
//! `hipErrorNoDevice`, reported as [`Error::NoDevice`](haloport_core::Error::NoDevice).
//!
//! ## Memory
//! Device memory is `hipMalloc`. Pinned memory is `hipHostMalloc(Mapped | Portable | Coherent
//! or NonCoherent)`: both kinds are real on AMD, and served as asked (thesis 3.2.1: the
//! non-coherent baseline ran 1.7x faster on MI50s). Never write-combined.
//!
//! ## Kernels
//! `build.rs` compiles `kernels-hip/haloport.hip` (the shared sources plus `hp_amd.h`) into one
//! offload bundle, loaded with `hipModuleLoadData` and launched with `hipModuleLaunchKernel`.
//!
//! ## Timer
//! Kernels stamp with `wall_clock64()` (`s_memrealtime`), whose rate the device reports
//! (`hipDeviceAttributeWallClockRate`, kHz); `haloport_core::clock` aligns it with the host
//! clock by ping-pong.
//!
//! ## Polling
//! The thesis (4.6.2) found taskqueue flags propagating slowly on MI50s under constant polling:
//! `ExchangeOptions::poll_backoff_ns` makes waiting blocks pause between polls (`s_sleep`).

pub mod kernels;

#[cfg(feature = "kernels")]
mod ffi;
#[cfg(feature = "kernels")]
mod memory;
#[cfg(feature = "kernels")]
mod module;
#[cfg(feature = "kernels")]
mod stream;

#[cfg(feature = "kernels")]
mod backend;

#[cfg(feature = "kernels")]
pub use backend::{device_count, HipBackend};
#[cfg(feature = "kernels")]
pub use memory::{HipDeviceMemory, HipPinnedMemory};
#[cfg(feature = "kernels")]
pub use stream::{HipEvent, HipStream};

#[cfg(all(test, feature = "kernels"))]
mod tests;
