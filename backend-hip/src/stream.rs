//! HIP streams, events and graphs.
//!
//! Streams are non-blocking. Waits poll `hipStreamQuery`/`hipEventQuery` against a deadline
//! instead of blocking in the runtime, so they can time out. Dropping a stream first waits for
//! its work (haloport's kernels all end by themselves), so memory freed after it is unused.
//!
//! A graph ([`HipGraph`]) is what a stream captured, instantiated. HIP, unlike CUDA, does not
//! document that `hipGraphExecDestroy` lets replays in flight finish, so a graph records a
//! marker after every replay, orders a replay on another stream after the previous one, and
//! waits for the marker before it is destroyed (as cudarc's `CudaSlice` waits for its last
//! use). A graph is used by one thread at a time (`Send`, not `Sync`).

use std::cell::Cell;
use std::time::{Duration, Instant};

use haloport_core::backend::poll_until;
use haloport_core::Result;

use crate::ffi;

/// A HIP stream: one haloport created (`hipStreamCreateWithFlags`, or
/// `hipStreamCreateWithPriority` for an urgent one; destroyed on drop), or one the application
/// owns, adopted with [`HipStream::from_raw`] (never destroyed by haloport).
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

    /// A stream of the device's greatest priority.
    pub(crate) fn urgent() -> Result<Self> {
        Ok(HipStream {
            raw: ffi::stream_create_urgent()?,
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

/// A `hipEventCreate`d event with timing, or a marker without (`HipEvent::marker`).
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

/// How long dropping a graph waits for its last replay before giving up and leaking it.
const GRAPH_DROP_WAIT: Duration = Duration::from_secs(60);

/// What a graph knows of its replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replays {
    /// Never launched.
    None,
    /// The last replay was queued on this stream (as a number), the marker recorded behind it.
    Last(usize),
    /// A replay was queued but its marker could not be recorded: when it ends is unknown.
    Unknown,
}

/// An instantiated graph of captured stream work (`hipGraphExec_t`), replayed by
/// [`Backend::launch_graph`](haloport_core::Backend::launch_graph). Dropping it waits for its
/// last replay, then destroys it (see the module docs).
///
/// Vendor: `hipGraphExec_t` (hipGraphInstantiate, hipGraphLaunch, hipGraphExecDestroy).
pub struct HipGraph {
    pub(crate) raw: ffi::hipGraphExec_t,
    /// Recorded behind every replay, on the replay's stream.
    marker: HipEvent,
    replays: Cell<Replays>,
}

// SAFETY: an executable graph and an event may be used from any thread of the process; the
// `Cell` keeps a graph to one thread at a time (it is not `Sync`).
unsafe impl Send for HipGraph {}

impl HipGraph {
    /// Ends the capture on `stream` and instantiates it.
    pub(crate) fn end_capture(stream: &HipStream) -> Result<Self> {
        // SAFETY: the stream is live while its owner lives; a stream not capturing is the
        // runtime's error, returned.
        let raw = unsafe { ffi::stream_end_capture(stream.raw)? };
        // Created after the capture ended, so that it is no part of it.
        match HipEvent::marker() {
            Ok(marker) => Ok(HipGraph {
                raw,
                marker,
                replays: Cell::new(Replays::None),
            }),
            Err(e) => {
                // SAFETY: raw was instantiated above, never launched, and is destroyed once.
                if let Err(destroy) = unsafe { ffi::graph_destroy(raw) } {
                    tracing::error!("{destroy}");
                }
                Err(e)
            }
        }
    }

    /// Queues one replay on `stream`, after the previous replay when that was on another
    /// stream, and records the marker behind it.
    ///
    /// # Errors
    /// The runtime's error.
    ///
    /// # Safety
    /// 1. As [`Backend::launch_graph`](haloport_core::Backend::launch_graph): everything the
    ///    graph's nodes touch stays valid until the replay completes.
    pub(crate) unsafe fn launch(&self, stream: &HipStream) -> Result<()> {
        let id = stream.raw as usize;
        match self.replays.get() {
            Replays::Last(last) if last != id => stream.wait_event(&self.marker)?,
            _ => {}
        }
        // SAFETY: both handles are live while their owners live; what the nodes touch is the
        // caller's contract (1).
        unsafe { ffi::graph_launch(self.raw, stream.raw)? };
        if let Err(e) = self.marker.record(stream) {
            self.replays.set(Replays::Unknown);
            return Err(e);
        }
        if self.replays.get() != Replays::Unknown {
            self.replays.set(Replays::Last(id));
        }
        Ok(())
    }
}

impl Drop for HipGraph {
    fn drop(&mut self) {
        let waited = match self.replays.get() {
            Replays::None => Ok(()),
            Replays::Last(_) => self.marker.synchronize(Instant::now() + GRAPH_DROP_WAIT),
            Replays::Unknown => Err(haloport_core::Error::Internal(
                "a replay's marker was not recorded".into(),
            )),
        };
        if let Err(e) = waited {
            // Destroying a graph that may still run is not known to be safe on HIP: leak it.
            tracing::error!("hip: leaking a graph whose last replay may still run: {e}");
            return;
        }
        // SAFETY: raw is live and destroyed once, after its last replay completed (waited
        // for above; replays on other streams were ordered before it).
        if let Err(e) = unsafe { ffi::graph_destroy(self.raw) } {
            tracing::error!("{e}");
        }
    }
}
