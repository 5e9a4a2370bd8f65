//! haloport-host: the [`Backend`] trait on host memory and threads.
//!
//! A CPU reference backend with the trait's full semantics, so every strategy, the MPI layer
//! and the CLI run and are tested on machines without a GPU (SPEC 1).
//!
//! ## Memory
//! Device addresses are host addresses. Device memory is a page-aligned shared mapping of an
//! anonymous shared-memory file, so that other processes (ranks) of the node can map it too;
//! pinned memory is a page-aligned heap allocation (`memory.rs`). Host memory is always
//! coherent: non-coherent requests are served as coherent and reported so
//! ([`PinnedMemory::coherence_served`]).
//!
//! ## IPC (SPEC 12, the `ipc` transport)
//! [`Backend::export_ipc`] of device memory gives an [`IpcHandle`] whose `bytes` are the
//! exporting process's id (`u32`) and the descriptor of the allocation's shared-memory file
//! (`i32`), both little-endian; [`Backend::open_ipc`] opens `/proc/PID/fd/FD` and maps it
//! ([`HostPeerMemory`]). The one "device" is the node's memory: every rank's
//! [`Backend::device_identity`] is `host`, and each can store into every other's memory.
//! Linux only (`memfd_create`, `/proc`).
//!
//! ## Streams and events
//! A stream is a worker thread executing queued work in order; stream and event queries report
//! what has really completed. Copies and kernels are queued work.
//!
//! ## Kernels
//! The shared kernels are re-implemented in Rust (`kernels.rs`, `ipc_kernels.rs`,
//! `region_kernels.rs`) with the CUDA/HIP sources' semantics; a launch runs grid blocks
//! concurrently, one thread per block, except the region kernels and the stencil, whose blocks
//! never wait for each other: a few worker threads take their blocks in turn.
//!
//! ## Timer
//! The device timer is a monotonic host clock in nanoseconds ([`kernels::timer_ns`]).

mod ffi;
mod fused_kernels;
mod ipc_kernels;
mod kernels;
mod memory;
mod region_kernels;
mod stream;

use std::time::Instant;

use haloport_core::{
    Backend, Coherence, Copy3d, Current, DeviceIdentity, DeviceInfo, Error, IpcHandle, Kernel,
    Launch, LaunchDims, PinnedMemory, Result,
};
use kernels::HostLaunch;

pub use kernels::timer_ns;
pub use memory::{HostAllocation, HostPeerMemory};
pub use stream::{HostEvent, HostStream};

/// The host backend.
pub struct HostBackend {
    info: DeviceInfo,
    max_resident_blocks: u32,
}

impl HostBackend {
    /// Most threads per block the host backend accepts (as CUDA and HIP devices).
    pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

    /// Most blocks of one launch that run at once (one OS thread each).
    pub const MAX_RESIDENT_BLOCKS: u32 = 4096;

    /// Creates the host backend. It has one device, which every local rank shares
    /// (`local_rank % 1 == 0`, as SPEC 2 maps ranks to devices).
    ///
    /// # Errors
    /// None today; the signature matches the GPU backends, whose creation can fail.
    pub fn new(_local_rank: usize) -> Result<HostBackend> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        // Start the device timer's epoch now, not at the first kernel.
        timer_ns();
        Ok(HostBackend {
            info: DeviceInfo {
                vendor: "host".into(),
                name: format!("host CPU ({threads} hardware threads)"),
                ordinal: 0,
                device_count: 1,
                multiprocessors: threads,
                warp_width: 1,
                max_threads_per_block: Self::MAX_THREADS_PER_BLOCK,
                timer_hz: 1_000_000_000,
                coherence_kinds: vec![Coherence::Coherent],
                driver: format!("haloport-host {}", env!("CARGO_PKG_VERSION")),
            },
            max_resident_blocks: Self::MAX_RESIDENT_BLOCKS,
        })
    }

    /// Pretends the device holds at most `blocks` resident blocks, like a small GPU: for testing
    /// how strategies treat occupancy limits.
    pub fn with_max_resident_blocks(mut self, blocks: u32) -> HostBackend {
        self.max_resident_blocks = blocks;
        self
    }
}

fn copy_work(dst: u64, src: u64, bytes: usize) -> stream::Work {
    Box::new(move || {
        // SAFETY: both ranges were checked against their allocations when queued, and the
        // allocations outlive the queued work (copy_to_*_async's contract, 1).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    })
}

/// Why the host backend captures no graphs.
fn no_graphs() -> Error {
    Error::Unsupported {
        backend: "host",
        what: "graphs (capturing a step for replay): the host backend runs each queued item once; use the cuda or hip backend".into(),
    }
}

impl Backend for HostBackend {
    type Stream = HostStream;
    type Event = HostEvent;
    type DeviceMemory = HostAllocation;
    type PinnedMemory = HostAllocation;
    type PeerMemory = HostPeerMemory;
    /// No graphs: the host backend's streams run each item of work once.
    type Graph = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "host"
    }

    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The host has one device, always current.
    fn enter(&self) -> Result<Current> {
        Ok(Current::unchanged())
    }

    /// Any memory of this process is the host backend's device memory: only a null address,
    /// or a range past the end of the address space, is refused.
    fn check_device_range(&self, addr: u64, bytes: u64, what: &str) -> Result<()> {
        if addr == 0 {
            return Err(Error::InvalidInput(format!("{what} is at address 0")));
        }
        if addr.checked_add(bytes).is_none() {
            return Err(Error::InvalidInput(format!(
                "{what} at {addr:#x} runs {bytes} bytes past the end of the address space"
            )));
        }
        Ok(())
    }

    fn alloc_device(&self, bytes: usize) -> Result<HostAllocation> {
        HostAllocation::shared(bytes, "device memory")
    }

    fn alloc_pinned(&self, bytes: usize, coherence: Coherence) -> Result<HostAllocation> {
        HostAllocation::heap(bytes, coherence, "pinned host memory")
    }

    fn create_stream(&self) -> Result<HostStream> {
        HostStream::new()
    }

    fn stream_query(&self, stream: &HostStream) -> Result<bool> {
        stream.query()
    }

    fn stream_synchronize(&self, stream: &HostStream, deadline: Instant) -> Result<()> {
        stream.synchronize(deadline)
    }

    fn create_event(&self) -> Result<HostEvent> {
        Ok(HostEvent::default())
    }

    fn record_event(&self, event: &HostEvent, stream: &HostStream) -> Result<()> {
        event.record(stream)
    }

    fn event_query(&self, event: &HostEvent) -> Result<bool> {
        Ok(event.query())
    }

    fn event_synchronize(&self, event: &HostEvent, deadline: Instant) -> Result<()> {
        event.synchronize(deadline)
    }

    fn stream_wait_event(&self, stream: &HostStream, event: &HostEvent) -> Result<()> {
        stream.enqueue(event.wait_work())
    }

    fn begin_capture(&self, _stream: &HostStream) -> Result<()> {
        Err(no_graphs())
    }

    fn end_capture(&self, _stream: &HostStream) -> Result<Self::Graph> {
        Err(no_graphs())
    }

    unsafe fn launch_graph(&self, graph: &Self::Graph, _stream: &HostStream) -> Result<()> {
        match *graph {}
    }

    fn stream_id(&self, stream: &HostStream) -> u64 {
        stream.id()
    }

    /// Host streams are threads of this process: no vendor handle.
    fn vendor_stream(&self, _stream: &HostStream) -> Option<*mut std::ffi::c_void> {
        None
    }

    fn event_elapsed_ms(&self, start: &HostEvent, end: &HostEvent) -> Result<f32> {
        match (start.reached(), end.reached()) {
            (Some(a), Some(b)) => Ok(if b >= a {
                b.duration_since(a).as_secs_f32() * 1e3
            } else {
                -(a.duration_since(b).as_secs_f32() * 1e3)
            }),
            _ => Err(Error::InvalidInput(
                "host: elapsed time of an event that has not completed".into(),
            )),
        }
    }

    unsafe fn copy_to_device_async(
        &self,
        dst: &HostAllocation,
        dst_offset: usize,
        src: &HostAllocation,
        src_offset: usize,
        bytes: usize,
        stream: &HostStream,
    ) -> Result<()> {
        dst.check_range(dst_offset, bytes, "copy to device, destination")?;
        src.check_range(src_offset, bytes, "copy to device, source")?;
        stream.enqueue(copy_work(
            dst.addr() + dst_offset as u64,
            src.addr() + src_offset as u64,
            bytes,
        ))
    }

    unsafe fn copy_to_host_async(
        &self,
        dst: &HostAllocation,
        dst_offset: usize,
        src: &HostAllocation,
        src_offset: usize,
        bytes: usize,
        stream: &HostStream,
    ) -> Result<()> {
        dst.check_range(dst_offset, bytes, "copy to host, destination")?;
        src.check_range(src_offset, bytes, "copy to host, source")?;
        stream.enqueue(copy_work(
            dst.host_ptr() as u64 + dst_offset as u64,
            src.addr() + src_offset as u64,
            bytes,
        ))
    }

    /// Copies row by row on the stream's worker, as the other host copies.
    unsafe fn copy_3d_async(&self, copy: &Copy3d, stream: &HostStream) -> Result<()> {
        copy.check("host")?;
        let c = *copy;
        stream.enqueue(Box::new(move || {
            for z in 0..c.depth {
                for y in 0..c.height {
                    let src = c.src as usize + (z * c.src_rows + y) * c.src_pitch;
                    let dst = c.dst as usize + (z * c.dst_rows + y) * c.dst_pitch;
                    // SAFETY: the row lies inside the spans the caller keeps valid until the
                    // copy completes (copy_3d_async's contract, 1); the offsets cannot
                    // overflow (checked above: the spans fit in usize).
                    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, c.width) };
                }
            }
            Ok(())
        }))
    }

    unsafe fn launch(
        &self,
        launch: Launch<'_>,
        dims: LaunchDims,
        stream: &HostStream,
    ) -> Result<()> {
        dims.check("host", Self::MAX_THREADS_PER_BLOCK)?;
        launch.check("host", dims)?;
        let work = match launch {
            Launch::Pack(args) | Launch::Unpack(args) => {
                if args.blocks == 0 || args.checks == 0 {
                    return Err(Error::InvalidInput(
                        "host: launch with a null block table or check table".into(),
                    ));
                }
                HostLaunch::Exchange(launch.kernel(), *args)
            }
            Launch::ClockPingPong(args) => HostLaunch::ClockPingPong(*args),
            Launch::Taskqueue(args) => HostLaunch::Taskqueue(*args),
            Launch::IpcPack(args) | Launch::IpcUnpack(args) | Launch::IpcTaskqueue(args) => {
                HostLaunch::Ipc(launch.kernel(), *args)
            }
            Launch::PackRegions(args)
            | Launch::UnpackRegions(args)
            | Launch::ExchangeRegions(args) => {
                HostLaunch::Regions(launch.kernel(), Box::new(*args))
            }
            // The march-only kernel computes the same bits as the point form.
            Launch::Stencil27(args)
            | Launch::StencilMarching(args)
            | Launch::StencilMarch64(args)
            | Launch::StencilMarch7(args)
            | Launch::StencilMarch32(args) => HostLaunch::Stencil(*args),
            Launch::StencilMarch64Shell(args) => HostLaunch::ShellBox(*args, dims.threads),
            Launch::StencilShellReady(args) => HostLaunch::ShellReady(*args),
            Launch::StencilShellFixup(args) => HostLaunch::ShellFixup(*args, dims.threads),
            Launch::EpochStep(args) => HostLaunch::EpochStep(*args),
            Launch::FusedSignal(args) => HostLaunch::FusedSignal(*args),
            Launch::StencilFused(args) => HostLaunch::StencilFused(*args),
            other => {
                return Err(Error::Unsupported {
                    backend: "host",
                    what: format!("kernel {:?}", other.kernel()),
                })
            }
        };
        stream.enqueue(Box::new(move || {
            // SAFETY: the caller upheld Backend::launch's contract for these addresses.
            unsafe { kernels::run(work, dims) }
        }))
    }

    /// Blocks are OS threads, all resident at once; the bound keeps a runaway grid from
    /// exhausting the process's threads.
    fn max_resident_blocks(&self, _kernel: Kernel, threads: u32) -> Result<u32> {
        if threads == 0 || threads > Self::MAX_THREADS_PER_BLOCK {
            return Err(Error::InvalidInput(format!(
                "host: {threads} threads per block (1 to {})",
                Self::MAX_THREADS_PER_BLOCK
            )));
        }
        Ok(self.max_resident_blocks)
    }

    /// The handle names this process and the allocation's shared-memory file: it stays valid
    /// while `memory` lives (see the crate docs for its bytes).
    fn export_ipc(&self, memory: &HostAllocation) -> Result<IpcHandle> {
        memory.ipc_handle()
    }

    fn open_ipc(&self, handle: &IpcHandle) -> Result<HostPeerMemory> {
        HostPeerMemory::open(handle)
    }

    fn device_identity(&self) -> Result<DeviceIdentity> {
        Ok(DeviceIdentity {
            backend: "host".into(),
            id: "host".into(),
        })
    }

    /// Every host-backend rank of the node shares the node's memory; a GPU is not reachable.
    fn can_access_peer(&self, peer: &DeviceIdentity) -> Result<bool> {
        Ok(peer.backend == "host")
    }
}

#[cfg(test)]
mod tests;
