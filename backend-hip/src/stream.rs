//! HIP streams and events.
//!
//! Streams are non-blocking. Waits poll `hipStreamQuery`/`hipEventQuery` against a deadline
//! instead of blocking in the runtime, so they can time out. Dropping a stream first waits for
//! its work (haloport's kernels all end by themselves), so memory freed after it is unused.

use std::time::Instant;

use haloport_core::backend::poll_until;
use haloport_core::Result;

use crate::ffi;

/// A `hipStreamCreateWithFlags`ed stream.
pub struct HipStream {
    pub(crate) raw: ffi::hipStream_t,
}

// SAFETY: HIP streams may be used from any thread of the process.
unsafe impl Send for HipStream {}

impl HipStream {
    pub(crate) fn new() -> Result<Self> {
        Ok(HipStream {
            raw: ffi::stream_create()?,
        })
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::stream_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a HIP stream", || self.query())
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        // SAFETY: raw is live and destroyed once, after its work completed.
        let result =
            unsafe { ffi::stream_synchronize(self.raw).and(ffi::stream_destroy(self.raw)) };
        if let Err(e) = result {
            tracing::error!("{e}");
        }
    }
}

/// A `hipEventCreate`d event with timing.
pub struct HipEvent {
    pub(crate) raw: ffi::hipEvent_t,
}

// SAFETY: HIP events may be used from any thread of the process.
unsafe impl Send for HipEvent {}

impl HipEvent {
    pub(crate) fn new() -> Result<Self> {
        Ok(HipEvent {
            raw: ffi::event_create()?,
        })
    }

    pub(crate) fn record(&self, stream: &HipStream) -> Result<()> {
        // SAFETY: both handles are live while their owners live.
        unsafe { ffi::event_record(self.raw, stream.raw) }
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::event_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a HIP event", || self.query())
    }

    pub(crate) fn elapsed_ms(&self, end: &HipEvent) -> Result<f32> {
        // SAFETY: both events are live while their owners live.
        unsafe { ffi::event_elapsed_ms(self.raw, end.raw) }
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        // SAFETY: raw is live and destroyed once.
        if let Err(e) = unsafe { ffi::event_destroy(self.raw) } {
            tracing::error!("{e}");
        }
    }
}
