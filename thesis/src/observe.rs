//! Instrumentation reaches whoever measures an exchange through an [`Observer`] (SPEC 13), not
//! through the exchange's own interface: after each iteration, outside the timed region, a
//! strategy's [`report`](crate::Strategy::report) hands the observer what its kernels and its
//! CPU recorded. The benchmark's observer (in [`measure`](crate::measure)) turns that into
//! verification, timelines and profiles; code that only exchanges passes [`Discard`].

use crate::strategy::EventProfile;
use crate::timeline::CpuEvent;
use haloport_core::exchange::ExchangeBuffers;
use haloport_core::shared::{hp_block_check, hp_block_times};
use haloport_core::verify::Verify;
use haloport_core::{Backend, Result};

/// One iteration's check records (SPEC 5): what unpack checked, per pattern block.
pub struct BlockChecks<'a> {
    /// Per block, what unpack checked and the first wrong value it found.
    pub records: &'a [hp_block_check],
    /// Per block, the checks its record must show: fewer means it was never (fully) unpacked.
    pub planned: &'a [u64],
    /// Where a block ended, for reports of a block whose checks are missing (the taskqueue's
    /// GPU state, say); `None` where the strategy keeps no state beyond the records.
    pub state: &'a dyn Fn(usize) -> Option<String>,
}

/// Receives what one iteration of a strategy recorded. The strategy calls
/// [`checks`](Observer::checks) exactly once per report, the other methods at most once.
pub trait Observer {
    /// Whether this iteration's device timestamps are wanted (reading them has a cost; the
    /// benchmark keeps them for the last run only).
    fn wants_device_times(&self) -> bool {
        false
    }

    /// The iteration's check records.
    fn checks(&mut self, checks: BlockChecks<'_>);

    /// Per block, the device timestamps of its kernel phases (only when wanted).
    fn device_times(&mut self, times: &[hp_block_times]) {
        let _ = times;
    }

    /// What the CPU did during the iteration, in order.
    fn cpu_events(&mut self, events: Vec<CpuEvent>) {
        let _ = events;
    }

    /// The event loop's profile of the iteration (strategies with an event loop).
    fn event_profile(&mut self, profile: &EventProfile) {
        let _ = profile;
    }
}

/// An observer that keeps nothing: for running a strategy without measuring it, or for
/// clearing what an earlier user left in its records.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl Observer for Discard {
    fn checks(&mut self, checks: BlockChecks<'_>) {
        let _ = checks;
    }
}

/// Reports the last iteration's check records of `buffers`, with the checks planned for
/// `verify` and `threads` threads per block and each block's `state`, and (when wanted) its
/// device timestamps to `observer`: the records part of a strategy's
/// [`report`](crate::Strategy::report) for every strategy that exchanges through such buffers.
///
/// # Errors
/// [`Error::Internal`](haloport_core::Error::Internal) when `kernels_idle` is false.
pub fn report_records<B: Backend>(
    buffers: &mut ExchangeBuffers<B>,
    kernels_idle: bool,
    verify: Verify,
    threads: u32,
    state: &dyn Fn(usize) -> Option<String>,
    observer: &mut dyn Observer,
) -> Result<()> {
    let records = buffers.take_checks_when_idle(kernels_idle)?;
    let planned = buffers.planned_checks(verify, threads);
    observer.checks(BlockChecks {
        records: &records,
        planned: &planned,
        state,
    });
    if observer.wants_device_times() {
        observer.device_times(&buffers.read_times_when_idle(kernels_idle)?);
    }
    Ok(())
}
