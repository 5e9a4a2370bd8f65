//! CUDA streams and events.
//!
//! Streams are non-blocking (no implicit synchronization with the legacy stream). Waits poll
//! `cuStreamQuery`/`cuEventQuery` against a deadline instead of blocking in the driver, so they
//! can time out. Dropping a stream first waits for its work (haloport's kernels all end by
//! themselves: spin-waits inside them time out), so memory freed after it is no longer in use.

use std::sync::Arc;
use std::time::Instant;

use haloport_core::backend::poll_until;
use haloport_core::Result;

use crate::ffi;
use crate::Context;

/// A CUDA stream: one haloport created (`cuStreamCreate`, or `cuStreamCreateWithPriority` for
/// an urgent one; destroyed on drop), or one the application owns, adopted with
/// [`CudaStream::from_raw`] (never destroyed by haloport).
pub struct CudaStream {
    pub(crate) raw: ffi::CUstream,
    /// False for an adopted stream: dropping it neither waits for nor destroys it.
    owned: bool,
    _ctx: Arc<Context>,
}

// SAFETY: CUDA streams may be used from any thread of the process.
unsafe impl Send for CudaStream {}

impl CudaStream {
    pub(crate) fn new(ctx: &Arc<Context>) -> Result<Self> {
        Ok(CudaStream {
            raw: ffi::stream_create()?,
            owned: true,
            _ctx: Arc::clone(ctx),
        })
    }

    /// A stream of the context's greatest priority.
    pub(crate) fn urgent(ctx: &Arc<Context>) -> Result<Self> {
        Ok(CudaStream {
            raw: ffi::stream_create_urgent()?,
            owned: true,
            _ctx: Arc::clone(ctx),
        })
    }

    /// Adopts a stream the application owns, without taking ownership, so that the
    /// application's kernels (launched by any means: cudarc, its own C library, NVRTC) and
    /// haloport's exchange are ordered on one stream. `raw` may be null: the legacy default
    /// stream. Dropping the returned value leaves the stream alone.
    ///
    /// # Safety
    /// 1. `raw` is a live `CUstream` (equally a `cudaStream_t`) of `backend`'s device, created
    ///    in its primary context (the context the CUDA runtime and cudarc's `CudaContext::new`
    ///    use), or null.
    /// 2. The stream is not destroyed while haloport may still use it: until every exchange
    ///    started or finished on it was waited for ([`HaloExchange::wait`]) and the returned
    ///    value was dropped.
    /// 3. Work the application queues on the stream between an exchange's `start` and `finish`
    ///    writes neither the cells the exchange sends nor any halo cell.
    ///
    /// Vendor: [CUstream](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html).
    ///
    /// [`HaloExchange::wait`]: haloport_core::halo::HaloExchange::wait
    pub unsafe fn from_raw(backend: &crate::CudaBackend, raw: ffi::CUstream) -> CudaStream {
        CudaStream {
            raw,
            owned: false,
            _ctx: Arc::clone(&backend.ctx),
        }
    }

    /// The raw handle (a `CUstream`, equally a `cudaStream_t`), for launching the application's
    /// own work on the stream. It stays valid while `self` lives.
    pub fn as_raw(&self) -> ffi::CUstream {
        self.raw
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::stream_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a CUDA stream", || self.query())
    }

    pub(crate) fn wait_event(&self, event: &CudaEvent) -> Result<()> {
        // SAFETY: both handles are live while their owners live (an adopted stream by
        // from_raw's contract).
        unsafe { ffi::stream_wait_event(self.raw, event.raw) }
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // SAFETY: raw is live and destroyed once, after its work completed.
        let result =
            unsafe { ffi::stream_synchronize(self.raw).and(ffi::stream_destroy(self.raw)) };
        if let Err(e) = result {
            tracing::error!("{e}");
        }
    }
}

/// A `cuEventCreate`d event with timing.
pub struct CudaEvent {
    pub(crate) raw: ffi::CUevent,
    _ctx: Arc<Context>,
}

// SAFETY: CUDA events may be used from any thread of the process.
unsafe impl Send for CudaEvent {}

impl CudaEvent {
    pub(crate) fn new(ctx: &Arc<Context>) -> Result<Self> {
        Ok(CudaEvent {
            raw: ffi::event_create()?,
            _ctx: Arc::clone(ctx),
        })
    }

    /// An event without timing (a completion marker).
    pub(crate) fn marker(ctx: &Arc<Context>) -> Result<Self> {
        Ok(CudaEvent {
            raw: ffi::event_create_marker()?,
            _ctx: Arc::clone(ctx),
        })
    }

    /// The raw handle (a `CUevent`, equally a `cudaEvent_t`), for making the application's
    /// streams wait on it (`cuStreamWaitEvent`). It stays valid while `self` lives.
    pub fn as_raw(&self) -> ffi::CUevent {
        self.raw
    }

    pub(crate) fn record(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: both handles are live while their owners live.
        unsafe { ffi::event_record(self.raw, stream.raw) }
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::event_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a CUDA event", || self.query())
    }

    pub(crate) fn elapsed_ms(&self, end: &CudaEvent) -> Result<f32> {
        // SAFETY: both events are live while their owners live.
        unsafe { ffi::event_elapsed_ms(self.raw, end.raw) }
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // SAFETY: raw is live and destroyed once.
        if let Err(e) = unsafe { ffi::event_destroy(self.raw) } {
            tracing::error!("{e}");
        }
    }
}

/// An instantiated graph of captured stream work (`CUgraphExec`), replayed by
/// [`Backend::launch_graph`](haloport_core::Backend::launch_graph).
pub struct CudaGraph {
    pub(crate) raw: ffi::CUgraphExec,
    _ctx: Arc<Context>,
}

// SAFETY: an executable graph may be launched from any thread; haloport never launches one
// from two threads at once (it is used through `&self` of one owner).
unsafe impl Send for CudaGraph {}

impl CudaGraph {
    /// Ends the capture on `stream` and instantiates it.
    pub(crate) fn end_capture(stream: &CudaStream) -> Result<Self> {
        // SAFETY: the stream is live while its owner lives; a stream not capturing is the
        // driver's error, returned.
        let raw = unsafe { ffi::stream_end_capture(stream.raw)? };
        Ok(CudaGraph {
            raw,
            _ctx: Arc::clone(&stream._ctx),
        })
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        // SAFETY: raw is live and destroyed once; queued replays complete first.
        if let Err(e) = unsafe { ffi::graph_destroy(self.raw) } {
            tracing::error!("{e}");
        }
    }
}
