//! [`HipBackend`]: the Backend trait on one AMD GPU, or, built with `nvidia-layer`, on one
//! NVIDIA GPU through haloport's HIP-on-CUDA layer (see [`crate::PLATFORM`]).

use std::time::Instant;

use haloport_core::backend::{check_device_memory, check_range, PciBusId, PointerFacts};
use haloport_core::{
    Backend, Coherence, Copy3d, Current, DeviceIdentity, DeviceInfo, DeviceMemory, Error,
    IpcHandle, Kernel, KernelUnit, Launch, LaunchDims, PinnedMemory, Result,
};

use crate::ffi::{self, Attribute};
use crate::kernels;
use crate::memory::{self, HipDeviceMemory, HipPeerMemory, HipPinnedMemory};
use crate::module::Module;
use crate::stream::{HipEvent, HipGraph, HipStream};

/// `s_memrealtime`'s rate, assumed where the runtime does not report it: the constant 100 MHz
/// reference clock of gfx9 (MI50, MI100, MI200, MI300); see the crate docs' "Timer".
pub(crate) const ASSUMED_WALL_CLOCK_HZ: u64 = 100_000_000;

/// The HIP backend, on one device.
pub struct HipBackend {
    info: DeviceInfo,
    module: Module,
    /// `hipDeviceAttributeCooperativeLaunch`: the device can launch grids whose blocks are all
    /// resident at once.
    cooperative: bool,
}

/// How many GPUs the HIP runtime sees (AMD GPUs; NVIDIA GPUs through the layer).
///
/// # Errors
/// [`Error::NoDevice`] when it sees none (`hipErrorNoDevice`: no GPU;
/// `hipErrorInsufficientDriver`: no driver), naming the code and the platform.
pub fn device_count() -> Result<usize> {
    ffi::device_count()?.map_err(|why| Error::NoDevice {
        backend: "hip",
        reason: format!("the HIP runtime sees no {} ({why})", platform_gpu()),
    })
}

/// What kind of GPU this build's HIP runtime drives, for messages.
fn platform_gpu() -> &'static str {
    if cfg!(feature = "nvidia-layer") {
        "NVIDIA GPU through haloport's HIP-on-NVIDIA layer"
    } else {
        "AMD GPU"
    }
}

impl HipBackend {
    /// Opens device `local_rank % device_count` and loads the kernels.
    ///
    /// # Errors
    /// [`Error::NoDevice`] without a GPU; [`Error::KernelsUnavailable`] when the code objects do
    /// not load on the device (a target not built); runtime errors.
    pub fn new(local_rank: usize) -> Result<HipBackend> {
        let count = device_count()?;
        let ordinal = local_rank % count;
        ffi::set_device(ordinal)?;
        let attr = |a| ffi::attribute(ordinal, a);
        if attr(Attribute::CanMapHostMemory)? == 0 {
            return Err(Error::Unsupported {
                backend: "hip",
                what: format!("device {ordinal} cannot map pinned host memory"),
            });
        }
        let name = ffi::device_name(ordinal)?;
        let wall_clock = match kernels::FIXED_TIMER_HZ {
            // The kernels' timer is the image's, not s_memrealtime (see kernels::FIXED_TIMER_HZ).
            Some(_) => None,
            None => ffi::wall_clock_khz(ordinal)?,
        };
        let (timer_hz, timer) = match (kernels::FIXED_TIMER_HZ, wall_clock) {
            (Some(hz), _) => (
                hz,
                format!(
                    "timer %globaltimer {} MHz (the CUDA kernels')",
                    hz / 1_000_000
                ),
            ),
            (None, Some(khz)) => (u64::from(khz) * 1000, format!("wall clock {khz} kHz")),
            (None, None) => {
                tracing::warn!(
                    "hip: {name}: the HIP runtime does not report hipDeviceAttributeWallClockRate \
                     (bindings from {}); assuming s_memrealtime runs at {} MHz (gfx9); the \
                     clock fit measures the real rate",
                    ffi::header(),
                    ASSUMED_WALL_CLOCK_HZ / 1_000_000
                );
                (
                    ASSUMED_WALL_CLOCK_HZ,
                    format!(
                        "wall clock assumed {} MHz (not reported)",
                        ASSUMED_WALL_CLOCK_HZ / 1_000_000
                    ),
                )
            }
        };
        let cooperative = attr(Attribute::CooperativeLaunch)? != 0;
        let coop = match (cooperative, ffi::HAS_MODULE_COOPERATIVE_LAUNCH) {
            (true, true) => "yes",
            (false, _) => "no (device)",
            (true, false) => "no (built against a HIP without hipModuleLaunchCooperativeKernel)",
        };
        // The kinds offered are the kinds served (memory::served): through the layer, only
        // coherent (CUDA has one kind).
        let mut coherence_kinds = vec![Coherence::Coherent];
        if memory::served(Coherence::NonCoherent) == Coherence::NonCoherent {
            coherence_kinds.push(Coherence::NonCoherent);
        }
        let (vendor, platform) = if cfg!(feature = "nvidia-layer") {
            (
                "NVIDIA (HIP on NVIDIA through haloport's layer)",
                format!("{}; ", crate::PLATFORM),
            )
        } else {
            ("AMD", String::new())
        };
        let info = DeviceInfo {
            vendor: vendor.into(),
            name: name.clone(),
            ordinal,
            device_count: count,
            multiprocessors: attr(Attribute::MultiprocessorCount)? as u32,
            warp_width: attr(Attribute::WarpSize)? as u32,
            max_threads_per_block: attr(Attribute::MaxThreadsPerBlock)? as u32,
            timer_hz,
            coherence_kinds,
            driver: format!(
                "{platform}HIP runtime {}, driver {}, bindings from {}, {timer}, cooperative \
                 launch: {coop}, kernels: {}",
                ffi::runtime_version()?,
                ffi::driver_version()?,
                ffi::header(),
                kernels::describe()
            ),
        };
        let no_kernels = || Error::KernelsUnavailable {
            backend: "hip",
            reason: "this build has no HIP kernels (build haloport with --features hip)".into(),
        };
        let [exchange, stencil] = KernelUnit::ALL.map(kernels::image);
        let images = [
            exchange.ok_or_else(no_kernels)?,
            stencil.ok_or_else(no_kernels)?,
        ];
        let module = Module::load(images).map_err(|e| Error::KernelsUnavailable {
            backend: "hip",
            reason: format!(
                "the kernels ({}) do not load on {name}: {e}",
                kernels::describe()
            ),
        })?;
        Ok(HipBackend {
            info,
            module,
            cooperative,
        })
    }
}

impl Backend for HipBackend {
    type Stream = HipStream;
    type Event = HipEvent;
    type DeviceMemory = HipDeviceMemory;
    type PinnedMemory = HipPinnedMemory;
    type PeerMemory = HipPeerMemory;
    type Graph = HipGraph;

    fn name(&self) -> &'static str {
        "hip"
    }

    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    fn enter(&self) -> Result<Current> {
        let previous = ffi::current_device()?;
        if previous == self.info.ordinal {
            return Ok(Current::unchanged());
        }
        ffi::set_device(self.info.ordinal)?;
        Ok(Current::switched_from(previous, ffi::set_device))
    }

    fn check_device_range(&self, addr: u64, bytes: u64, what: &str) -> Result<()> {
        let facts = match ffi::pointer_info(addr)? {
            Some(at) => PointerFacts {
                known: true,
                device_memory: at.device_memory,
                managed: at.managed,
                device: i64::from(at.device),
                range: (at.range_size > 0).then_some((at.range_start, at.range_size as u64)),
            },
            None => PointerFacts {
                known: false,
                device_memory: false,
                managed: false,
                device: -1,
                range: None,
            },
        };
        let ours = (self.info.ordinal as i64, self.info.name.as_str());
        check_device_memory(&facts, addr, bytes, what, ours)
    }

    fn alloc_device(&self, bytes: usize) -> Result<HipDeviceMemory> {
        HipDeviceMemory::new(bytes)
    }

    fn alloc_pinned(&self, bytes: usize, coherence: Coherence) -> Result<HipPinnedMemory> {
        HipPinnedMemory::new(bytes, coherence)
    }

    fn create_stream(&self) -> Result<HipStream> {
        HipStream::new()
    }

    fn create_urgent_stream(&self) -> Result<HipStream> {
        HipStream::urgent()
    }

    fn stream_query(&self, stream: &HipStream) -> Result<bool> {
        stream.query()
    }

    fn stream_synchronize(&self, stream: &HipStream, deadline: Instant) -> Result<()> {
        stream.synchronize(deadline)
    }

    fn create_event(&self) -> Result<HipEvent> {
        HipEvent::new()
    }

    /// No timestamp: recording a timing event costs more, once per launch of the exchange.
    fn create_marker(&self) -> Result<HipEvent> {
        HipEvent::marker()
    }

    fn record_event(&self, event: &HipEvent, stream: &HipStream) -> Result<()> {
        event.record(stream)
    }

    fn event_query(&self, event: &HipEvent) -> Result<bool> {
        event.query()
    }

    fn event_synchronize(&self, event: &HipEvent, deadline: Instant) -> Result<()> {
        event.synchronize(deadline)
    }

    fn stream_wait_event(&self, stream: &HipStream, event: &HipEvent) -> Result<()> {
        stream.wait_event(event)
    }

    fn begin_capture(&self, stream: &HipStream) -> Result<()> {
        // SAFETY: the stream is live while its owner lives; an adopted null stream is the
        // runtime's error (it cannot be captured), returned.
        unsafe { ffi::stream_begin_capture(stream.raw) }
    }

    fn end_capture(&self, stream: &HipStream) -> Result<HipGraph> {
        HipGraph::end_capture(stream)
    }

    unsafe fn launch_graph(&self, graph: &HipGraph, stream: &HipStream) -> Result<()> {
        // SAFETY: what the graph's kernels touch is the caller's contract.
        unsafe { graph.launch(stream) }
    }

    fn stream_id(&self, stream: &HipStream) -> u64 {
        stream.raw as u64
    }

    fn vendor_stream(&self, stream: &HipStream) -> Option<*mut std::ffi::c_void> {
        Some(stream.raw.cast())
    }

    fn event_elapsed_ms(&self, start: &HipEvent, end: &HipEvent) -> Result<f32> {
        start.elapsed_ms(end)
    }

    unsafe fn copy_to_device_async(
        &self,
        dst: &HipDeviceMemory,
        dst_offset: usize,
        src: &HipPinnedMemory,
        src_offset: usize,
        bytes: usize,
        stream: &HipStream,
    ) -> Result<()> {
        check_range(
            "hip",
            "copy to device, destination",
            dst_offset,
            bytes,
            dst.len_bytes(),
        )?;
        check_range(
            "hip",
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
        dst: &HipPinnedMemory,
        dst_offset: usize,
        src: &HipDeviceMemory,
        src_offset: usize,
        bytes: usize,
        stream: &HipStream,
    ) -> Result<()> {
        check_range(
            "hip",
            "copy to host, destination",
            dst_offset,
            bytes,
            dst.len_bytes(),
        )?;
        check_range(
            "hip",
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

    unsafe fn copy_3d_async(&self, copy: &Copy3d, stream: &HipStream) -> Result<()> {
        copy.check("hip")?;
        // SAFETY: the rows lie in memory the caller keeps valid and untouched until the copy
        // completes (this method's contract, 1 and 2); stream.raw is a live stream.
        unsafe { ffi::memcpy_3d_async(copy, stream.raw) }
    }

    unsafe fn launch(
        &self,
        launch: Launch<'_>,
        dims: LaunchDims,
        stream: &Self::Stream,
    ) -> Result<()> {
        dims.check("hip", self.info.max_threads_per_block)?;
        launch.check("hip", dims)?;
        let kernel = launch.kernel();
        let f = self.module.function(kernel)?;
        if !kernel.needs_coresidency() {
            // SAFETY: each kernel's single parameter is the struct launch.arg_ptr() points at
            // (hp_kernels.cuh); addresses inside it satisfy this method's contract (the
            // caller's).
            return unsafe {
                ffi::launch_one_arg(f, dims, stream.raw, launch.arg_ptr(), kernel.symbol())
            };
        }
        // Its blocks wait for each other through the CPU: a plain launch of a grid that does not
        // fit would hang, so only a cooperative launch, which the runtime refuses when the grid
        // cannot be co-resident, will do.
        let refuse = |why: &str| Error::Unsupported {
            backend: "hip",
            what: format!(
                "launching {} ({} blocks x {} threads) on {} with all blocks resident at once: \
                 {why}",
                kernel.symbol(),
                dims.blocks,
                dims.threads,
                self.info.name
            ),
        };
        if !self.cooperative {
            return Err(refuse(
                "the device does not support cooperative launch \
                 (hipDeviceAttributeCooperativeLaunch is 0)",
            ));
        }
        #[cfg(haloport_hip_module_cooperative)]
        {
            // SAFETY: as for the plain launch above.
            unsafe {
                ffi::launch_cooperative(
                    f,
                    dims,
                    stream.raw,
                    launch.arg_ptr(),
                    kernel.symbol(),
                    &self.info.name,
                )
            }
        }
        #[cfg(not(haloport_hip_module_cooperative))]
        {
            let _ = f;
            Err(refuse(&format!(
                "haloport was built against {}, which has no hipModuleLaunchCooperativeKernel \
                 (its hipLaunchCooperativeKernel cannot launch module functions); build with a \
                 HIP whose hip_runtime_api.h declares it (set HIP_PATH or ROCM_PATH)",
                ffi::header()
            )))
        }
    }

    fn max_resident_blocks(&self, kernel: Kernel, threads: u32) -> Result<u32> {
        let f = self.module.function(kernel)?;
        // SAFETY: f belongs to the live module.
        let per_cu = unsafe { ffi::occupancy_per_cu(f, threads)? };
        Ok(per_cu * self.info.multiprocessors)
    }

    fn export_ipc(&self, memory: &HipDeviceMemory) -> Result<IpcHandle> {
        memory.export_ipc()
    }

    fn open_ipc(&self, handle: &IpcHandle) -> Result<HipPeerMemory> {
        HipPeerMemory::open(handle)
    }

    fn device_identity(&self) -> Result<DeviceIdentity> {
        Ok(DeviceIdentity {
            backend: "hip".into(),
            id: ffi::device_pci_bus_id(self.info.ordinal)?,
        })
    }

    fn can_access_peer(&self, peer: &DeviceIdentity) -> Result<bool> {
        let theirs = peer_bus_id(peer)?;
        let mine = self.device_identity()?;
        if parse_pci_bus_id(&mine.id) == Some(theirs) {
            return Ok(true);
        }
        match ffi::device_by_pci_bus_id(&peer.id)? {
            Some(ordinal) => ffi::can_access_peer(self.info.ordinal, ordinal),
            None => Ok(false),
        }
    }
}

/// A PCI bus id as numbers (`DeviceIdentity::parse_pci_bus_id`).
pub(crate) fn parse_pci_bus_id(id: &str) -> Option<PciBusId> {
    DeviceIdentity::parse_pci_bus_id(id)
}

/// The PCI bus id of a peer's [`DeviceIdentity`], once it is shown to be a HIP device's.
///
/// # Errors
/// [`Error::InvalidInput`] for another backend's identity or an id that is no PCI bus id.
pub(crate) fn peer_bus_id(peer: &DeviceIdentity) -> Result<PciBusId> {
    peer.pci_bus_id_for("hip")
}
