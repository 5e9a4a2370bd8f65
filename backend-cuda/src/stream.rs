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

/// A `cuStreamCreate`d stream.
pub struct CudaStream {
    pub(crate) raw: ffi::CUstream,
    _ctx: Arc<Context>,
}

// SAFETY: CUDA streams may be used from any thread of the process.
unsafe impl Send for CudaStream {}

impl CudaStream {
    pub(crate) fn new(ctx: &Arc<Context>) -> Result<Self> {
        Ok(CudaStream {
            raw: ffi::stream_create()?,
            _ctx: Arc::clone(ctx),
        })
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::stream_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a CUDA stream", || self.query())
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
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
