//! HIP streams and events.
//!
//! Streams are non-blocking. Waits poll `hipStreamQuery`/`hipEventQuery` against a deadline
//! instead of blocking in the runtime, so they can time out. Dropping a stream first waits for
//! its work (haloport's kernels all end by themselves), so memory freed after it is unused.

use std::time::Instant;

use haloport_core::backend::poll_until;
use haloport_core::Result;

use crate::ffi;

/// A HIP stream: one haloport created (`hipStreamCreateWithFlags`, destroyed on drop), or one
/// the application owns, adopted with [`HipStream::from_raw`] (never destroyed by haloport).
pub struct HipStream {
    pub(crate) raw: ffi::hipStream_t,
    /// False for an adopted stream: dropping it neither waits for nor destroys it.
    owned: bool,
}

// SAFETY: HIP streams may be used from any thread of the process.
unsafe impl Send for HipStream {}

impl HipStream {
    pub(crate) fn new() -> Result<Self> {
        Ok(HipStream {
            raw: ffi::stream_create()?,
            owned: true,
        })
    }

    /// Adopts a stream the application owns, without taking ownership, so that the
    /// application's kernels and haloport's exchange are ordered on one stream. `raw` may be
    /// null: the default stream. Dropping the returned value leaves the stream alone.
    ///
    /// # Safety
    /// 1. `raw` is a live `hipStream_t` of `backend`'s device, or null.
    /// 2. The stream is not destroyed while haloport may still use it: until every exchange
    ///    started or finished on it was waited for ([`HaloExchange::wait`]) and the returned
    ///    value was dropped.
    /// 3. Work the application queues on the stream between an exchange's `start` and `finish`
    ///    writes neither the cells the exchange sends nor any halo cell.
    ///
    /// Vendor: `hipStream_t`.
    ///
    /// [`HaloExchange::wait`]: haloport_core::halo::HaloExchange::wait
    pub unsafe fn from_raw(_backend: &crate::HipBackend, raw: ffi::hipStream_t) -> HipStream {
        HipStream { raw, owned: false }
    }

    /// The raw handle, for launching the application's own work on the stream. It stays valid
    /// while `self` lives.
    pub fn as_raw(&self) -> ffi::hipStream_t {
        self.raw
    }

    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: raw is live while self lives.
        unsafe { ffi::stream_query(self.raw) }
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        poll_until(deadline, "a HIP stream", || self.query())
    }

    pub(crate) fn wait_event(&self, event: &HipEvent) -> Result<()> {
        // SAFETY: both handles are live while their owners live (an adopted stream by
        // from_raw's contract).
        unsafe { ffi::stream_wait_event(self.raw, event.raw) }
    }
}

impl Drop for HipStream {
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

/// A `hipEventCreate`d event with timing, or a marker without ([`HipEvent::marker`]).
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

    /// An event that only marks completion (`hipEventDisableTiming`), as the exchange records
    /// after every launch.
    pub(crate) fn marker() -> Result<Self> {
        Ok(HipEvent {
            raw: ffi::marker_create()?,
        })
    }

    /// The raw handle, for making the application's streams wait on it
    /// (`hipStreamWaitEvent`). It stays valid while `self` lives.
    pub fn as_raw(&self) -> ffi::hipEvent_t {
        self.raw
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
