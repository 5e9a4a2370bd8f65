//! haloport-cuda: the [`Backend`] trait on NVIDIA GPUs through the CUDA driver API (cudarc's
//! `result` layer, loaded at run time, so a binary without a GPU still starts and says so).
//!
//! ## Driver
//! The driver must be at least the CUDA version cudarc's bindings were built for
//! (`ffi::REQUIRED_DRIVER_VERSION`, 13.0). [`device_count`], the first call of every path to a
//! device, checks that before cudarc loads libcuda (cudarc panics on an older one) and returns
//! [`Error::Unsupported`] naming both versions, or [`Error::NoDevice`] without a driver.
//!
//! ## Devices and contexts
//! Each process uses the primary context of device `local_rank % device_count` (SPEC 2), made
//! current on the thread that creates the backend; use the backend from that thread. Two ranks
//! on one GPU share it, time-sliced.
//!
//! ## Memory
//! Device memory is `cuMemAlloc`, zeroed before it is handed out (the memset runs on the legacy
//! stream, which haloport's non-blocking streams do not wait for, so allocation waits for it).
//! Pinned memory is `cuMemHostAlloc(PORTABLE | DEVICEMAP)`:
//! page-locked, mapped, coherent, never write-combined; kernels use the device pointer the
//! driver gives for it. CUDA has no non-coherent pinned memory: such requests are served as
//! coherent and reported so.
//!
//! ## IPC and peer access
//! Device memory is exported with `cuIpcGetMemHandle` (each allocation is a whole `cuMemAlloc`
//! allocation, as a handle requires) and another process's opened with
//! `cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)` as a [`CudaPeerMemory`]; a handle
//! this process exported itself is refused (CUDA never opens those). A device is named by its
//! PCI bus id (`cuDeviceGetPCIBusId`); a peer's is looked up with `cuDeviceGetByPCIBusId` (one
//! this process does not see, e.g. hidden by `CUDA_VISIBLE_DEVICES`, counts as unreachable) and
//! asked `cuDeviceCanAccessPeer`. Ids compare as numbers, so case and domain width do not
//! matter.
//!
//! ## 3-D copies
//! [`Backend::copy_3d_async`] is `cuMemcpy3DAsync` with both sides `CU_MEMORYTYPE_UNIFIED`
//! (the driver finds whether each address is device, pinned host or peer memory; see
//! `ffi::memcpy_3d_async`), refused as `Unsupported` on a device without unified addressing.
//!
//! ## Kernels
//! `build.rs` compiles `kernels-cu/haloport.cu` (the exchange's kernels) and
//! `haloport_stencil.cu` (the stencil's) with nvcc, side by side, into a fatbin each (sm_80, sm_90
//! and PTX by default), embedded in the binary and loaded with `cuModuleLoadData`, one module
//! per unit ([`haloport_core::KernelUnit`]). Each kernel takes one
//! struct from `kernels-cu/haloport_shared.h` by value. Kernels whose blocks wait for each other
//! ([`Kernel::needs_coresidency`], the taskqueue's persistent kernel) are launched with
//! `cuLaunchCooperativeKernel`: the driver guarantees all blocks resident at once or refuses,
//! and haloport reports the refusal as [`Error::Unsupported`]. Devices without cooperative
//! launch refuse such kernels up front.
//!
//! ## Timer
//! Kernels stamp with `%globaltimer` (nanoseconds); `haloport_core::clock` aligns it with the
//! host clock by ping-pong.
//!
//! ## Streams the application owns
//! [`CudaStream::from_raw`] adopts an application's `CUstream`/`cudaStream_t` without taking
//! it over (never synchronized nor destroyed by haloport); [`CudaStream::as_raw`] and
//! [`CudaEvent::as_raw`] hand haloport's own handles to the application's launches and
//! `cuStreamWaitEvent`s. Every handle lives in the device's primary context, the one the CUDA
//! runtime and cudarc's `CudaContext` use, so their pointers and streams mix freely.

mod ffi;
pub mod kernels;
mod memory;
mod module;
mod stream;

use std::sync::Arc;
use std::time::Instant;

use haloport_core::backend::{check_device_memory, check_range, PciBusId, PointerFacts};
use haloport_core::{
    Backend, Coherence, Copy3d, Current, DeviceIdentity, DeviceInfo, Error, IpcHandle, Kernel,
    KernelUnit, Launch, LaunchDims, Result,
};

/// The driver's raw stream and event handles ([`CudaStream::from_raw`], [`CudaStream::as_raw`]).
pub use ffi::{CUevent, CUstream};
pub use memory::{CudaDeviceMemory, CudaPeerMemory, CudaPinnedMemory};
pub use stream::{CudaEvent, CudaGraph, CudaStream};

/// A retained primary context; released when the last handle using it is dropped.
pub(crate) struct Context {
    device: ffi::CUdevice,
    raw: ffi::CUcontext,
}

// SAFETY: a CUDA context handle may be used from any thread.
unsafe impl Send for Context {}
// SAFETY: as above; the handle is only read.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        if let Err(e) = ffi::release_primary_context(self.device) {
            tracing::error!("{e}");
        }
    }
}

/// The CUDA backend, on one device.
pub struct CudaBackend {
    info: DeviceInfo,
    compute_capability: (i32, i32),
    /// `CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`: whether co-residency kernels can be launched.
    cooperative_launch: bool,
    /// `CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING`: whether 3-D copies between unified addresses
    /// work (every 64-bit Linux device has it).
    unified_addressing: bool,
    // Declared before ctx: the module is unloaded while the context is still retained.
    module: module::Module,
    ctx: Arc<Context>,
}

/// Whether a CUDA driver and device are present, without touching them further: `Ok(count)` or
/// why not.
///
/// # Errors
/// [`Error::NoDevice`] when libcuda is absent, fails to initialize, or sees no device;
/// [`Error::Unsupported`] when the driver is older than this build needs.
pub fn device_count() -> Result<usize> {
    // First: no cudarc call may happen before the driver was found new enough.
    ffi::open_driver()?;
    ffi::init().map_err(|e| Error::NoDevice {
        backend: "cuda",
        reason: format!("the CUDA driver did not initialize: {e}"),
    })?;
    match ffi::device_count()? {
        0 => Err(Error::NoDevice {
            backend: "cuda",
            reason: "the CUDA driver sees no device".into(),
        }),
        n => Ok(n),
    }
}

impl CudaBackend {
    /// Opens device `local_rank % device_count` and loads the kernels.
    ///
    /// # Errors
    /// [`Error::NoDevice`] without driver or device; [`Error::Unsupported`] when the driver is
    /// older than this build needs or the device cannot map pinned memory;
    /// [`Error::KernelsUnavailable`] when this build has no kernels or they do not load on the
    /// device; driver errors.
    pub fn new(local_rank: usize) -> Result<CudaBackend> {
        let count = device_count()?;
        let driver_version = ffi::open_driver()?;
        let ordinal = local_rank % count;
        let device = ffi::device(ordinal)?;
        let attr = |a| ffi::attribute(device, a);
        if attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? == 0 {
            return Err(Error::Unsupported {
                backend: "cuda",
                what: format!("device {ordinal} cannot map pinned host memory"),
            });
        }
        let compute_capability = (
            attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let cooperative_launch = attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0;
        let unified_addressing = attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)? != 0;
        let info = DeviceInfo {
            vendor: "NVIDIA".into(),
            name: ffi::device_name(device)?,
            ordinal,
            device_count: count,
            multiprocessors: attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            warp_width: attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32,
            max_threads_per_block: attr(ffi::Attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?
                as u32,
            timer_hz: 1_000_000_000,
            coherence_kinds: vec![Coherence::Coherent],
            driver: format!(
                "CUDA driver {}, compute capability {}.{}, cooperative launch: {}, kernels: {}",
                ffi::version_string(driver_version),
                compute_capability.0,
                compute_capability.1,
                if cooperative_launch { "yes" } else { "no" },
                kernels::describe()
            ),
        };
        let ctx = Arc::new(Context {
            device,
            raw: ffi::retain_primary_context(device)?,
        });
        let no_kernels = || Error::KernelsUnavailable {
            backend: "cuda",
            reason: "this build has no CUDA kernels (build haloport with --features cuda)".into(),
        };
        let [exchange, stencil] = KernelUnit::ALL.map(kernels::image);
        let images = [
            exchange.ok_or_else(no_kernels)?,
            stencil.ok_or_else(no_kernels)?,
        ];
        let module = module::Module::load(&ctx, images).map_err(|e| Error::KernelsUnavailable {
            backend: "cuda",
            reason: format!(
                "the kernels ({}) do not load on {} (compute capability {}.{}): {e}",
                kernels::describe(),
                info.name,
                compute_capability.0,
                compute_capability.1
            ),
        })?;
        Ok(CudaBackend {
            info,
            compute_capability,
            cooperative_launch,
            unified_addressing,
            module,
            ctx,
        })
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    /// Makes this backend's context current on the calling thread (e.g. a helper thread).
    ///
    /// # Errors
    /// The driver's error.
    pub fn make_current(&self) -> Result<()> {
        // SAFETY: the context is retained while self.ctx lives.
        unsafe { ffi::set_current(self.ctx.raw) }
    }
}

/// How `kernel` must be launched on `device`: cooperatively when its blocks wait for each other
/// (`cooperative` is the device's `CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`).
///
/// # Errors
/// [`Error::Unsupported`] naming the device when the kernel needs co-residency and the device
/// has no cooperative launch.
fn launch_kind(kernel: Kernel, cooperative: bool, device: &DeviceInfo) -> Result<ffi::LaunchKind> {
    if !kernel.needs_coresidency() {
        return Ok(ffi::LaunchKind::Plain);
    }
    if !cooperative {
        return Err(Error::Unsupported {
            backend: "cuda",
            what: format!(
                "the {} kernel needs all its blocks resident at once, but {} (device {}) has no \
                 cooperative launch (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 0)",
                kernel_name(kernel),
                device.name,
                device.ordinal
            ),
        });
    }
    Ok(ffi::LaunchKind::Cooperative)
}

/// The driver refused a cooperative launch: the grid cannot be resident at once on `device`.
fn not_coresident(kernel: Kernel, dims: LaunchDims, device: &DeviceInfo) -> Error {
    Error::Unsupported {
        backend: "cuda",
        what: format!(
            "the {} kernel needs all {} blocks of {} threads resident at once, but {} cannot \
             hold them (cuLaunchCooperativeKernel: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)",
            kernel_name(kernel),
            dims.blocks,
            dims.threads,
            device.name
        ),
    }
}

/// The kernel's name in messages, e.g. "taskqueue".
fn kernel_name(kernel: Kernel) -> String {
    format!("{kernel:?}").to_lowercase()
}

impl Backend for CudaBackend {
    type Stream = CudaStream;
    type Event = CudaEvent;
    type DeviceMemory = CudaDeviceMemory;
    type PinnedMemory = CudaPinnedMemory;
    type PeerMemory = CudaPeerMemory;
    type Graph = CudaGraph;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    fn enter(&self) -> Result<Current> {
        let previous = ffi::current_context()?;
        if previous == self.ctx.raw as usize {
            return Ok(Current::unchanged());
        }
        self.make_current()?;
        Ok(Current::switched_from(previous, ffi::restore_context))
    }

    fn check_device_range(&self, addr: u64, bytes: u64, what: &str) -> Result<()> {
        let at = ffi::pointer_info(addr)?;
        let facts = PointerFacts {
            known: at.memory_type != 0,
            device_memory: at.memory_type == ffi::MEMORY_TYPE_DEVICE,
            managed: at.managed,
            device: i64::from(at.device),
            range: (at.range_size > 0).then_some((at.range_start, at.range_size as u64)),
        };
        let ours = (i64::from(self.ctx.device), self.info.name.as_str());
        check_device_memory(&facts, addr, bytes, what, ours)
    }

    fn alloc_device(&self, bytes: usize) -> Result<CudaDeviceMemory> {
        CudaDeviceMemory::new(&self.ctx, bytes)
    }

    fn alloc_pinned(&self, bytes: usize, coherence: Coherence) -> Result<CudaPinnedMemory> {
        CudaPinnedMemory::new(&self.ctx, bytes, coherence)
    }

    fn create_stream(&self) -> Result<CudaStream> {
        CudaStream::new(&self.ctx)
    }

    fn create_urgent_stream(&self) -> Result<CudaStream> {
        CudaStream::urgent(&self.ctx)
    }

    fn stream_query(&self, stream: &CudaStream) -> Result<bool> {
        stream.query()
    }

    fn stream_synchronize(&self, stream: &CudaStream, deadline: Instant) -> Result<()> {
        stream.synchronize(deadline)
    }

    fn create_event(&self) -> Result<CudaEvent> {
        CudaEvent::new(&self.ctx)
    }

    fn create_marker(&self) -> Result<CudaEvent> {
        CudaEvent::marker(&self.ctx)
    }

    fn record_event(&self, event: &CudaEvent, stream: &CudaStream) -> Result<()> {
        event.record(stream)
    }

    fn event_query(&self, event: &CudaEvent) -> Result<bool> {
        event.query()
    }

    fn event_synchronize(&self, event: &CudaEvent, deadline: Instant) -> Result<()> {
        event.synchronize(deadline)
    }

    fn stream_wait_event(&self, stream: &CudaStream, event: &CudaEvent) -> Result<()> {
        stream.wait_event(event)
    }

    fn begin_capture(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: the stream is live while its owner lives.
        unsafe { ffi::stream_begin_capture(stream.raw) }
    }

    fn end_capture(&self, stream: &CudaStream) -> Result<CudaGraph> {
        CudaGraph::end_capture(stream)
    }

    unsafe fn launch_graph(&self, graph: &CudaGraph, stream: &CudaStream) -> Result<()> {
        // SAFETY: both are live while their owners live; what the graph's kernels touch is
        // the caller's contract.
        unsafe { ffi::graph_launch(graph.raw, stream.raw) }
    }

    fn stream_id(&self, stream: &CudaStream) -> u64 {
        stream.raw as u64
    }

    fn vendor_stream(&self, stream: &CudaStream) -> Option<*mut std::ffi::c_void> {
        Some(stream.raw.cast())
    }

    fn event_elapsed_ms(&self, start: &CudaEvent, end: &CudaEvent) -> Result<f32> {
        start.elapsed_ms(end)
    }

    unsafe fn copy_to_device_async(
        &self,
        dst: &CudaDeviceMemory,
        dst_offset: usize,
        src: &CudaPinnedMemory,
        src_offset: usize,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        use haloport_core::{DeviceMemory, PinnedMemory};
        check_range(
            "cuda",
            "copy to device, destination",
            dst_offset,
            bytes,
            dst.len_bytes(),
        )?;
        check_range(
            "cuda",
            "copy to device, source",
            src_offset,
            bytes,
            src.len_bytes(),
        )?;
        // SAFETY: both ranges lie inside their allocations (checked above), which stay allocated
        // until the copy completes (this function's contract, 1).
        unsafe {
            ffi::memcpy_htod_async(
                dst.device_addr() + dst_offset as u64,
                src.host_ptr().add(src_offset),
                bytes,
                stream.raw,
            )
        }
    }

    unsafe fn copy_to_host_async(
        &self,
        dst: &CudaPinnedMemory,
        dst_offset: usize,
        src: &CudaDeviceMemory,
        src_offset: usize,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        use haloport_core::{DeviceMemory, PinnedMemory};
        check_range(
            "cuda",
            "copy to host, destination",
            dst_offset,
            bytes,
            dst.len_bytes(),
        )?;
        check_range(
            "cuda",
            "copy to host, source",
            src_offset,
            bytes,
            src.len_bytes(),
        )?;
        // SAFETY: as for copy_to_device_async.
        unsafe {
            ffi::memcpy_dtoh_async(
                dst.host_ptr().add(dst_offset),
                src.device_addr() + src_offset as u64,
                bytes,
                stream.raw,
            )
        }
    }

    unsafe fn copy_3d_async(&self, copy: &Copy3d, stream: &CudaStream) -> Result<()> {
        copy.check("cuda")?;
        if !self.unified_addressing {
            return Err(Error::Unsupported {
                backend: "cuda",
                what: format!(
                    "3-D copies between device addresses: {} has no unified addressing \
                     (CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 0)",
                    self.info.name
                ),
            });
        }
        // SAFETY: the rows lie in memory the caller keeps valid and untouched until the copy
        // completes (this method's contract, 1 and 2); stream.raw belongs to this backend's
        // context.
        unsafe { ffi::memcpy_3d_async(copy, stream.raw) }
    }

    unsafe fn launch(
        &self,
        launch: Launch<'_>,
        dims: LaunchDims,
        stream: &Self::Stream,
    ) -> Result<()> {
        dims.check("cuda", self.info.max_threads_per_block)?;
        launch.check("cuda", dims)?;
        let kernel = launch.kernel();
        let kind = launch_kind(kernel, self.cooperative_launch, &self.info)?;
        let f = self.module.function(kernel)?;
        // SAFETY: each kernel's single parameter is the struct launch.arg_ptr() points at
        // (hp_kernels.cuh); addresses inside it satisfy this method's contract (the caller's);
        // stream.raw belongs to this backend's context.
        let launched = unsafe {
            ffi::launch_one_arg(f, dims, stream.raw, launch.arg_ptr(), kernel.symbol(), kind)?
        };
        match launched {
            ffi::Launched::Queued => Ok(()),
            ffi::Launched::TooLargeToBeCoresident => Err(not_coresident(kernel, dims, &self.info)),
        }
    }

    fn max_resident_blocks(&self, kernel: Kernel, threads: u32) -> Result<u32> {
        // A co-residency kernel the device cannot launch cooperatively is refused here already,
        // so strategies that check occupancy first fail before allocating.
        launch_kind(kernel, self.cooperative_launch, &self.info)?;
        let f = self.module.function(kernel)?;
        // SAFETY: f belongs to the live module.
        let per_sm = unsafe { ffi::occupancy_per_sm(f, threads)? };
        Ok(per_sm * self.info.multiprocessors)
    }

    fn export_ipc(&self, memory: &CudaDeviceMemory) -> Result<IpcHandle> {
        memory.export_ipc()
    }

    fn open_ipc(&self, handle: &IpcHandle) -> Result<CudaPeerMemory> {
        CudaPeerMemory::open(&self.ctx, handle)
    }

    fn device_identity(&self) -> Result<DeviceIdentity> {
        Ok(DeviceIdentity {
            backend: "cuda".into(),
            id: ffi::device_pci_bus_id(self.ctx.device)?,
        })
    }

    fn can_access_peer(&self, peer: &DeviceIdentity) -> Result<bool> {
        let theirs = peer_bus_id(peer)?;
        let mine = self.device_identity()?;
        if parse_pci_bus_id(&mine.id) == Some(theirs) {
            return Ok(true);
        }
        match ffi::device_by_pci_bus_id(&peer.id)? {
            Some(dev) => ffi::can_access_peer(self.ctx.device, dev),
            None => Ok(false),
        }
    }
}

/// A PCI bus id as numbers (`DeviceIdentity::parse_pci_bus_id`).
fn parse_pci_bus_id(id: &str) -> Option<PciBusId> {
    DeviceIdentity::parse_pci_bus_id(id)
}

/// The PCI bus id of a peer's [`DeviceIdentity`], once it is shown to be a CUDA device's.
///
/// # Errors
/// [`Error::InvalidInput`] for another backend's identity or an id that is no PCI bus id.
fn peer_bus_id(peer: &DeviceIdentity) -> Result<PciBusId> {
    peer.pci_bus_id_for("cuda")
}

#[cfg(test)]
mod tests;
