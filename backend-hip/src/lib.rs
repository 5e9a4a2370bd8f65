//! haloport-hip: the [`Backend`](haloport_core::Backend) trait on AMD GPUs through the HIP
//! runtime, with the kernels of `kernels-cu/` compiled by hipcc.
//!
//! The runtime part needs the `kernels` feature (haloport's `hip` feature): it links
//! libamdhip64, so a binary built with it needs the HIP runtime installed to start, GPU or not.
//! Without the feature this crate holds only [`kernels`] (the code-object inspection), so the
//! workspace builds anywhere.
//!
//! ## Bindings
//! `build.rs` generates them with bindgen from the installed `hip_runtime_api.h` (`$HIP_PATH`,
//! `$ROCM_PATH`, `hipconfig -p`, hipcc's root, `/opt/rocm`, `/usr`), allowlisting exactly the
//! calls `ffi.rs` makes, and stops the build unless every constant in them has the same value
//! in the headers hipcc compiles the kernels with. hip-sys is not used: its pre-generated
//! bindings (hip-runtime-sys 0.1.2) come from a newer HIP and name attributes Debian's HIP 5.2
//! lacks (`hipDeviceAttributeWallClockRate = 10017`), which that runtime rejects. Enums are
//! newtypes, so a code a newer runtime returns is a value, never undefined behaviour. The
//! device info's `driver` line names the header the bindings came from.
//!
//! ## Devices
//! Each process uses device `local_rank % device_count` (`hipSetDevice` on the creating thread;
//! use the backend from that thread). Without an AMD GPU, `hipGetDeviceCount` answers
//! `hipErrorNoDevice`, reported as [`Error::NoDevice`](haloport_core::Error::NoDevice).
//!
//! ## Memory
//! Device memory is `hipMalloc`, zeroed by `hipMemset` on the null stream, which haloport's
//! non-blocking streams do not wait for: allocation therefore waits for the null stream, so the
//! zeroing is complete when `alloc_device` returns. Pinned memory is `hipHostMalloc(Mapped | Portable | Coherent
//! or NonCoherent)`: both kinds are real on AMD, and served as asked (thesis 3.2.1: the
//! non-coherent baseline ran 1.7x faster on MI50s). Never write-combined.
//!
//! ## IPC and peer access
//! Device memory is exported with `hipIpcGetMemHandle` (each allocation is a whole `hipMalloc`
//! allocation, as a handle requires; the handle's size is the installed header's
//! `HIP_IPC_HANDLE_SIZE`, 64 in HIP 5.2, checked at build time) and another process's opened
//! with `hipIpcOpenMemHandle(hipIpcMemLazyEnablePeerAccess)` as a `HipPeerMemory`; a handle
//! this process exported itself is refused. A device is named by its PCI bus id
//! (`hipDeviceGetPCIBusId`); a peer's is looked up with `hipDeviceGetByPCIBusId` (one this
//! process does not see counts as unreachable) and asked `hipDeviceCanAccessPeer`. Ids compare
//! as numbers, so case and domain width do not matter.
//!
//! ## Kernels
//! `build.rs` compiles `kernels-hip/haloport.hip` and `haloport_stencil.hip` (the shared sources
//! plus `hp_amd.h`), side by side, into an offload bundle each, loaded with `hipModuleLoadData`,
//! one module per unit ([`haloport_core::KernelUnit`]), and launched with `hipModuleLaunchKernel`.
//!
//! ## 3-D copies
//! [`Backend::copy_3d_async`](haloport_core::Backend::copy_3d_async) is `hipMemcpy3DAsync`
//! with `hipMemcpyDefault` (the runtime finds where each address lies), built and checked
//! against the installed header like every other call, not yet run on an AMD GPU.
//!
//! ## Cooperative launch
//! Kernels whose blocks wait for each other ([`Kernel::needs_coresidency`]: the taskqueue's
//! persistent kernel) are launched with `hipModuleLaunchCooperativeKernel`, which the runtime
//! refuses (`hipErrorCooperativeLaunchTooLarge`, reported as `Unsupported` naming blocks, threads
//! and device) when the grid cannot be resident at once; a device without
//! `hipDeviceAttributeCooperativeLaunch` is refused before launching. HIP 5.2 (Debian's) has
//! no `hipModuleLaunchCooperativeKernel`, and its `hipLaunchCooperativeKernel` takes the host
//! stub of a kernel registered by hipcc-compiled host code, not a module function: built
//! against it, such launches are `Unsupported`, saying so, rather than a plain launch that could
//! hang. Other kernels use `hipModuleLaunchKernel`.
//!
//! [`Kernel::needs_coresidency`]: haloport_core::Kernel::needs_coresidency
//!
//! ## Graphs
//! [`Backend::begin_capture`](haloport_core::Backend::begin_capture) is
//! `hipStreamBeginCapture(hipStreamCaptureModeRelaxed)`; `end_capture` ends it
//! (`hipStreamEndCapture`), instantiates the graph with HIP 5.2's `hipGraphInstantiate` (error
//! node and log buffer; a refused graph's log goes into the error) and destroys the template.
//! A `HipGraph` records a marker behind every replay and orders a replay on another stream
//! after the previous one; dropping it waits for the last replay before `hipGraphExecDestroy`,
//! since HIP, unlike CUDA, does not document that destroying a graph lets replays in flight
//! finish. Built and checked against HIP 5.2, and the layer's graph calls tested against a
//! stand-in libcuda; not yet run on a GPU, AMD or NVIDIA.
//!
//! ## Timer
//! Kernels stamp with `wall_clock64()` (`s_memrealtime`), whose rate the device reports as
//! `hipDeviceAttributeWallClockRate` (kHz) where the header has that attribute and the runtime
//! answers it. HIP 5.2 has neither; then `timer_hz` is 100 MHz, the constant reference clock
//! `s_memrealtime` counts on gfx9 (MI50 to MI300), a `tracing::warn!` says it was assumed, and
//! the device info's `driver` line says "wall clock assumed". Not `hipDeviceAttributeClockRate`:
//! that is the shader clock, which varies. `timer_hz` only sizes time-outs in ticks; timestamps
//! are converted with the slope `haloport_core::clock` measures by ping-pong, and the
//! conformance suite fails if that slope is more than 1 % off `timer_hz`, so a device where
//! the assumption is wrong is caught, not silently mis-timed.
//!
//! ## HIP on NVIDIA
//! With the `nvidia-layer` feature (haloport's `hip-nvidia`) this crate links haloport's own
//! HIP-on-CUDA layer (`nvidia-layer/`) in place of libamdhip64 and embeds nvcc's fatbin of the
//! shared kernels: every line above the runtime calls runs on an NVIDIA GPU. What differs there
//! is said where it differs: the device info names the platform ([`PLATFORM`]), the timer is
//! the CUDA kernels' `%globaltimer` (1 GHz), only coherent pinned memory is offered (the layer
//! serves non-coherent as coherent), and `hipModuleLaunchCooperativeKernel`, which HIP 5.2
//! lacks, is declared by the layer and used. The README's section "On AMD GPUs (ROCm)" says
//! what this does and does not show.
//!
//! ## Polling
//! The thesis (4.6.2) found taskqueue flags propagating slowly on MI50s under constant polling:
//! `ExchangeOptions::poll_backoff_ns` makes waiting blocks pause between polls (`s_sleep`).

pub mod kernels;

/// The platform this build's HIP backend runs on, named in `haloport info`, the device info's
/// `driver` line and every result's provenance. A HIP-on-NVIDIA result is evidence for the HIP
/// backend's code, never for AMD hardware (SPEC 19).
pub const PLATFORM: &str = if cfg!(feature = "nvidia-layer") {
    "HIP on NVIDIA through haloport's HIP-on-CUDA layer (libhaloport_hipnv on the CUDA driver; \
     not AMD hardware)"
} else {
    "AMD (libamdhip64)"
};

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
/// The runtime's raw stream and event handles ([`HipStream::from_raw`], [`HipStream::as_raw`]).
#[cfg(feature = "kernels")]
pub use ffi::{hipEvent_t, hipStream_t};
#[cfg(feature = "kernels")]
pub use memory::{HipDeviceMemory, HipPeerMemory, HipPinnedMemory};
#[cfg(feature = "kernels")]
pub use stream::{HipEvent, HipGraph, HipStream};

#[cfg(all(test, feature = "kernels"))]
mod tests;
