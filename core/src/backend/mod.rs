//! The Backend trait: everything haloport needs from one GPU, with the vendor hidden (SPEC 2).
//!
//! Strategies are generic over `B: Backend` and never see vendor types. A backend owns memory
//! (device and pinned host), streams and events, copies, and launches the shared kernels of
//! `kernels-cu/` (on the host backend: their Rust twins with the same semantics). Handles are
//! associated types with RAII: dropping one frees it, and `Drop` never panics.
//!
//! Threading: a backend value is used from the thread that created it; its handles may be
//! moved between threads (`Send`) but are not used concurrently.

// `Backend::launch` is an unsafe method: kernels dereference raw device addresses.
#![allow(unsafe_code)]

mod current;
mod ipc;
mod kernels;
mod pointer;
mod transfer;

use std::fmt;
use std::time::Instant;

use serde::Serialize;

use crate::error::Result;
use crate::regions::Copy3d;

pub use current::Current;
pub use ipc::{DeviceIdentity, ExportedHandles, IpcHandle, PciBusId};
pub use kernels::{Kernel, KernelUnit, Launch, LaunchDims};
pub use pointer::{check_device_memory, PointerFacts};
pub use transfer::{
    check_range, check_threads, deadline_in, download_bytes, download_bytes_at, poll_until,
    upload_bytes, upload_bytes_at, upload_table,
};

/// Which kind of pinned host memory to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Coherence {
    /// Writes become visible to the other side while kernels run (flags, polling).
    /// CUDA: cuMemHostAlloc(PORTABLE | DEVICEMAP). HIP: hipHostMallocCoherent | hipHostMallocMapped.
    Coherent,
    /// Contents are defined only at stream/event synchronization points: the CPU may read what a
    /// kernel wrote only after the kernel is known complete, and a kernel sees CPU writes made
    /// before its launch. HIP: hipHostMallocNonCoherent. CUDA has no such kind and serves it as
    /// Coherent, and says so in [`PinnedMemory::coherence_served`].
    NonCoherent,
}

impl fmt::Display for Coherence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Coherence::Coherent => "coherent",
            Coherence::NonCoherent => "non-coherent",
        })
    }
}

/// What a device is and offers.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// "NVIDIA", "AMD", or "host".
    pub vendor: String,
    /// The device's name as the driver reports it.
    pub name: String,
    /// Index of the device this rank uses (SPEC 2: `local_rank % device_count`).
    pub ordinal: usize,
    /// Devices of this backend visible to this process.
    pub device_count: usize,
    /// Streaming multiprocessors / compute units (host: hardware threads).
    pub multiprocessors: u32,
    /// Warp / wavefront width in threads (host: 1).
    pub warp_width: u32,
    /// Most threads one block may have.
    pub max_threads_per_block: u32,
    /// Rate of the device timer that kernels read for timestamps, in Hz.
    pub timer_hz: u64,
    /// Pinned-memory coherence kinds the device really offers (not those it serves as another).
    pub coherence_kinds: Vec<Coherence>,
    /// Driver and runtime versions, free text.
    pub driver: String,
}

/// Device memory: only kernels and copies touch it.
pub trait DeviceMemory: Send + 'static {
    /// Size in bytes.
    fn len_bytes(&self) -> usize;
    /// The address kernels dereference.
    fn device_addr(&self) -> u64;
}

/// Pinned (page-locked, device-mapped) host memory, reachable from the CPU and from kernels.
pub trait PinnedMemory: Send + 'static {
    /// Size in bytes.
    fn len_bytes(&self) -> usize;
    /// The address the CPU dereferences. Valid for `len_bytes()` bytes while `self` lives.
    fn host_ptr(&self) -> *mut u8;
    /// The address kernels dereference (Vendor: cuMemHostGetDevicePointer /
    /// hipHostGetDevicePointer; host backend: the host address).
    fn device_addr(&self) -> u64;
    /// The coherence kind that was asked for.
    fn coherence_requested(&self) -> Coherence;
    /// The coherence kind the backend actually allocated.
    fn coherence_served(&self) -> Coherence;
}

/// A device: memory, streams, events, copies and kernel launches.
///
/// Every method that can fail returns a [`Result`] whose error names the vendor
/// call and what haloport was doing.
pub trait Backend: Sized {
    /// An in-order queue of work on the device.
    type Stream: Send;
    /// A marker recorded on a stream; completes when the stream reaches it.
    type Event: Send;
    /// Memory on the device.
    type DeviceMemory: DeviceMemory;
    /// Pinned host memory.
    type PinnedMemory: PinnedMemory;
    /// Another process's device memory, opened from an [`IpcHandle`]: kernels of this process
    /// store into it; dropping it unmaps it (the owner frees the memory).
    type PeerMemory: DeviceMemory;
    /// Captured stream work, instantiated for replay ([`Backend::begin_capture`]).
    type Graph: Send;

    /// Short backend name used in outputs: "host", "cuda", "hip".
    fn name(&self) -> &'static str;

    /// What the device is and offers.
    fn device_info(&self) -> &DeviceInfo;

    /// Makes this backend's device current on the calling thread until the returned guard
    /// drops, which makes the thread's previous one current again. Each call of an exchange
    /// enters first, so an application may switch devices between calls, or call from another
    /// thread, and finds its own device current afterwards.
    ///
    /// Vendor: cuCtxGetCurrent + cuCtxSetCurrent / hipGetDevice + hipSetDevice.
    fn enter(&self) -> Result<Current>;

    /// Checks that the `bytes` bytes at `addr` are memory this backend's kernels may read and
    /// write: device (or managed) memory of its device, within one allocation. `what` names
    /// the memory in the error (e.g. "field 1 (f64 x1)").
    ///
    /// Vendor: cuPointerGetAttributes / hipPointerGetAttributes + hipMemGetAddressRange.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `what`: host memory, memory
    /// the driver does not know, another device's memory, or a range past its allocation's
    /// end; the driver's errors.
    fn check_device_range(&self, addr: u64, bytes: u64, what: &str) -> Result<()>;

    /// Allocates `bytes` of device memory, zeroed.
    ///
    /// Vendor: cuMemAlloc / hipMalloc.
    fn alloc_device(&self, bytes: usize) -> Result<Self::DeviceMemory>;

    /// Allocates `bytes` of pinned host memory of the given coherence, zeroed, mapped into the
    /// device, never write-combined (the CPU reads it).
    ///
    /// Vendor: cuMemHostAlloc(PORTABLE | DEVICEMAP) / hipHostMalloc(Mapped | Coherent or NonCoherent).
    fn alloc_pinned(&self, bytes: usize, coherence: Coherence) -> Result<Self::PinnedMemory>;

    /// Creates a stream.
    ///
    /// Vendor: cuStreamCreate / hipStreamCreate.
    fn create_stream(&self) -> Result<Self::Stream>;

    /// Creates a stream of the device's highest priority: its kernels' blocks are dispatched
    /// before those of streams made by [`Self::create_stream`] whenever both wait for room, so
    /// a short urgent launch (a halo exchange, the cells next to the halos) need not wait for
    /// a long one (the interior's update) to drain. A backend without priorities gives a
    /// plain stream.
    ///
    /// Vendor: cuCtxGetStreamPriorityRange + cuStreamCreateWithPriority /
    /// hipDeviceGetStreamPriorityRange + hipStreamCreateWithPriority.
    fn create_urgent_stream(&self) -> Result<Self::Stream> {
        self.create_stream()
    }

    /// True when all work queued on `stream` has completed.
    ///
    /// Vendor: cuStreamQuery / hipStreamQuery.
    fn stream_query(&self, stream: &Self::Stream) -> Result<bool>;

    /// Waits until all work queued on `stream` has completed, or `deadline` passes.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when the deadline passes first.
    ///
    /// Vendor: cuStreamSynchronize / hipStreamSynchronize (polled, so that it can time out).
    fn stream_synchronize(&self, stream: &Self::Stream, deadline: Instant) -> Result<()>;

    /// Creates an event.
    ///
    /// Vendor: cuEventCreate / hipEventCreate.
    fn create_event(&self) -> Result<Self::Event>;

    /// Creates an event that only marks completion (no timestamp, so
    /// [`Backend::event_elapsed_ms`] cannot use it): cheaper to record on every exchange.
    ///
    /// Vendor: cuEventCreate(CU_EVENT_DISABLE_TIMING); elsewhere [`Backend::create_event`].
    fn create_marker(&self) -> Result<Self::Event> {
        self.create_event()
    }

    /// Records `event` on `stream`: it completes when the stream reaches this point.
    ///
    /// Vendor: cuEventRecord / hipEventRecord.
    fn record_event(&self, event: &Self::Event, stream: &Self::Stream) -> Result<()>;

    /// True when the work before the event's last record has completed.
    ///
    /// Vendor: cuEventQuery / hipEventQuery.
    fn event_query(&self, event: &Self::Event) -> Result<bool>;

    /// Waits until `event` completes, or `deadline` passes.
    ///
    /// Vendor: cuEventSynchronize / hipEventSynchronize (polled, so that it can time out).
    fn event_synchronize(&self, event: &Self::Event, deadline: Instant) -> Result<()>;

    /// Makes work queued on `stream` after this call wait until `event` completes (its record
    /// at the time of this call), without blocking the CPU: how work on one stream is ordered
    /// after work on another. An event never recorded imposes no wait.
    ///
    /// Vendor: cuStreamWaitEvent / hipStreamWaitEvent; host: a queued item that waits for the
    /// event's marker.
    fn stream_wait_event(&self, stream: &Self::Stream, event: &Self::Event) -> Result<()>;

    /// Identifies the device stream `stream` queues work on: two handles of one stream (an
    /// application stream adopted twice) have the same id. An id may be reused once its stream
    /// was destroyed, which happens only after its work completed.
    fn stream_id(&self, stream: &Self::Stream) -> u64;

    /// The vendor's handle of `stream` (`CUstream`, `hipStream_t`) for libraries that queue
    /// work on it themselves (NCCL, RCCL); `None` where the backend has no vendor stream (host:
    /// such work runs once the stream's earlier work has completed).
    fn vendor_stream(&self, stream: &Self::Stream) -> Option<*mut std::ffi::c_void>;

    /// Milliseconds between two completed events.
    ///
    /// Vendor: cuEventElapsedTime / hipEventElapsedTime.
    fn event_elapsed_ms(&self, start: &Self::Event, end: &Self::Event) -> Result<f32>;

    /// Queues a copy of `bytes` from pinned host memory to device memory on `stream`.
    ///
    /// Freeing the source while the copy is queued cannot be written in safe code: the call is
    /// `unsafe`, and its contract forbids it.
    ///
    /// ```compile_fail,E0133
    /// use haloport_core::{Backend, Coherence};
    /// fn queue_then_free<B: Backend>(b: &B, dst: &B::DeviceMemory, s: &B::Stream) {
    ///     let src = b.alloc_pinned(64, Coherence::Coherent).unwrap();
    ///     b.copy_to_device_async(dst, 0, &src, 0, 64, s).unwrap();
    ///     drop(src); // the queued copy would read freed memory
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if a range lies outside its allocation.
    ///
    /// # Safety
    /// 1. `src` and `dst` stay allocated until the copy has completed: until `stream` was
    ///    synchronized, or an event recorded on it after this call completed. Dropping the
    ///    memory earlier lets the queued copy touch freed memory (the host backend's worker
    ///    thread, the GPU's copy engine).
    /// 2. No other work (CPU, kernel, copy) writes the destination range, or writes the source
    ///    range, until the copy has completed.
    ///
    /// Vendor: cuMemcpyHtoDAsync / hipMemcpyHtoDAsync.
    unsafe fn copy_to_device_async(
        &self,
        dst: &Self::DeviceMemory,
        dst_offset: usize,
        src: &Self::PinnedMemory,
        src_offset: usize,
        bytes: usize,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Queues a copy of `bytes` from device memory to pinned host memory on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if a range lies outside its allocation.
    ///
    /// # Safety
    /// 1. `src` and `dst` stay allocated until the copy has completed: until `stream` was
    ///    synchronized, or an event recorded on it after this call completed. Dropping the
    ///    memory earlier lets the queued copy touch freed memory (the host backend's worker
    ///    thread, the GPU's copy engine).
    /// 2. No other work (CPU, kernel, copy) writes the destination range, or writes the source
    ///    range, until the copy has completed.
    ///
    /// Vendor: cuMemcpyDtoHAsync / hipMemcpyDtoHAsync.
    unsafe fn copy_to_host_async(
        &self,
        dst: &Self::PinnedMemory,
        dst_offset: usize,
        src: &Self::DeviceMemory,
        src_offset: usize,
        bytes: usize,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Queues a 3-D strided copy between device addresses on `stream`, by the copy engine: the
    /// copy-engine form of packing or unpacking a region ([`Copy3d::pack_region`]), which
    /// SPEC 13 compares with the pack kernels in the same run. Only the `width` bytes of each
    /// row are touched, not the gaps between rows.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a shape [`Copy3d::check`]
    /// refuses; [`Error::Unsupported`](crate::Error::Unsupported) where the device cannot copy
    /// between unified addresses; the vendor's error otherwise.
    ///
    /// # Safety
    /// 1. `copy.src` and `copy.dst` are device addresses of memory of this backend (device
    ///    memory, the device address of pinned memory, or opened peer memory), valid for the
    ///    rows the copy reads ([`Copy3d::src_span`] bytes from `src`) and writes
    ///    ([`Copy3d::dst_span`] bytes from `dst`), and stay allocated until the copy has
    ///    completed: until `stream` was synchronized, or an event recorded on it after this call
    ///    completed.
    /// 2. No other work (CPU, kernel, copy) writes the rows the copy reads, or touches the rows
    ///    it writes, until the copy has completed; the two sets of rows do not overlap.
    ///
    /// Vendor: cuMemcpy3DAsync (CU_MEMORYTYPE_UNIFIED) / hipMemcpy3DAsync (hipMemcpyDefault).
    unsafe fn copy_3d_async(&self, copy: &Copy3d, stream: &Self::Stream) -> Result<()>;

    /// Queues one of the shared kernels on `stream`.
    ///
    /// # Safety
    /// 1. Every address in the launch's argument (and in the tables it points to) is a device
    ///    address of memory allocated by this backend that stays allocated until the kernel
    ///    completes.
    /// 2. Each such range is as large as the argument and its tables say.
    /// 3. The CPU does not write the memory the kernel writes until the kernel has completed,
    ///    except flags designed for concurrent access, which both sides access atomically.
    ///
    /// Vendor: cuLaunchKernel / hipModuleLaunchKernel.
    unsafe fn launch(
        &self,
        launch: Launch<'_>,
        dims: LaunchDims,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Starts capturing the work queued on `stream` into a graph, which it then holds instead
    /// of running, until [`Backend::end_capture`] (which must follow, also after an error).
    /// Relaxed: other streams may allocate and synchronize meanwhile.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) on a backend without graphs (host);
    /// the vendor's error, e.g. for a stream already capturing.
    ///
    /// Vendor: cuStreamBeginCapture / hipStreamBeginCapture (relaxed mode).
    fn begin_capture(&self, stream: &Self::Stream) -> Result<()>;

    /// Ends the capture on `stream` and instantiates what it captured.
    ///
    /// # Errors
    /// The vendor's error, e.g. a capture invalidated by a call that cannot be captured.
    ///
    /// Vendor: cuStreamEndCapture + cuGraphInstantiate / hipStreamEndCapture +
    /// hipGraphInstantiate.
    fn end_capture(&self, stream: &Self::Stream) -> Result<Self::Graph>;

    /// Queues one replay of `graph` on `stream`, after the work queued there before.
    ///
    /// # Safety
    /// As [`Backend::launch`], for every kernel the graph holds: the memory its arguments name
    /// stays allocated until the replay completes.
    ///
    /// Vendor: cuGraphLaunch / hipGraphLaunch.
    unsafe fn launch_graph(&self, graph: &Self::Graph, stream: &Self::Stream) -> Result<()>;

    /// How many blocks of `kernel` with `threads` threads each can be resident on the device at
    /// once (occupancy per multiprocessor times multiprocessors). A kernel whose blocks wait for
    /// each other must not be launched with more.
    ///
    /// Vendor: cuOccupancyMaxActiveBlocksPerMultiprocessor / hipOccupancyMaxActiveBlocksPerMultiprocessor.
    fn max_resident_blocks(&self, kernel: Kernel, threads: u32) -> Result<u32>;

    /// Exports device memory this backend allocated, as a whole allocation (SPEC 11: an IPC
    /// handle names a whole allocation), so that other processes of the node can open it.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) where the backend has no IPC; the
    /// vendor's error otherwise.
    ///
    /// Vendor: cuIpcGetMemHandle / hipIpcGetMemHandle; host: a shared mapping other processes
    /// open through `/proc/PID/fd`.
    fn export_ipc(&self, memory: &Self::DeviceMemory) -> Result<IpcHandle>;

    /// Opens memory another process of this node exported. Kernels of this process may then
    /// store into it (over NVLink/xGMI or PCIe between GPUs, or within one GPU), ordered for
    /// the owner by system-scope fences and flags.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a handle of another backend;
    /// the vendor's error (e.g. a handle of another node) otherwise.
    ///
    /// Vendor: cuIpcOpenMemHandle(LAZY_ENABLE_PEER_ACCESS) / hipIpcOpenMemHandle.
    fn open_ipc(&self, handle: &IpcHandle) -> Result<Self::PeerMemory>;

    /// The physical device this backend works on, as other ranks of the node name it.
    ///
    /// Vendor: cuDeviceGetPCIBusId / hipDeviceGetPCIBusId.
    fn device_identity(&self) -> Result<DeviceIdentity>;

    /// Whether kernels on this device can store into memory on `peer`'s device (the same
    /// device: yes). A device this process cannot see is not reachable.
    ///
    /// Vendor: cuDeviceGetByPCIBusId + cuDeviceCanAccessPeer / the hip equivalents.
    fn can_access_peer(&self, peer: &DeviceIdentity) -> Result<bool>;
}
