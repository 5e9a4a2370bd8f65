//! Strategies decide *when* to pack, send, wait and unpack (SPEC 4). They are generic over the
//! backend (`B: Backend`) and the transport (`T: Transport`), and reach into neither.
//!
//! One call of [`Strategy::iteration`] is one halo-exchange iteration: it returns when all
//! sends completed, all unpacking finished and every rank passed the closing barrier.

pub mod baseline;
pub mod ipc;
pub mod library;
pub mod mpi_only;
pub mod taskqueue;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use haloport_core::backend::Coherence;
use haloport_core::verify::Verify;

pub use haloport_core::transport::Fault;

pub use baseline::Baseline;
pub use ipc::IpcExchange;
pub use library::LibraryExchange;
pub use mpi_only::MpiOnly;
pub use taskqueue::Taskqueue;

use crate::observe::Observer;

/// Options every strategy takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExchangeOptions {
    /// How long any single wait may take before the run ends with a time-out error.
    pub timeout: Duration,
    /// A fault to inject, if any.
    pub fault: Option<Fault>,
    /// Bytes between per-block flags of the taskqueue (thesis 3.6.3: a cache line or more keeps
    /// blocks from false sharing; 8 packs them densely).
    pub flag_stride: u32,
    /// Pause between a taskqueue block's polls of its flags, nanoseconds; 0 spins. The thesis
    /// (4.6.2) found constant polling delaying flag propagation on AMD GPUs.
    pub poll_backoff_ns: u32,
    /// Which received elements unpack checks.
    pub verify: Verify,
    /// End every iteration with an MPI barrier (the thesis protocol, SPEC 4). Only the
    /// device-direct variants may run without it (back to back): their receive slots are
    /// guarded by credit flags; host-staged variants always keep it.
    pub barrier: bool,
    /// Device-direct: GPU blocks (chunks) serving the largest pattern block of any rank;
    /// every chunk moves at most that block's share, so smaller blocks get fewer.
    pub ipc_chunks: u32,
    /// The library variants (`lib-*`): most GPU blocks serving one region of a signalled
    /// message ([`HaloOptions::signalled_blocks`](haloport_core::halo::HaloOptions::signalled_blocks)).
    pub lib_blocks: u32,
}

impl ExchangeOptions {
    /// True when the fault options say block `block`'s send is never started (for messages:
    /// the [`Faulty`](haloport_core::transport::faulty::Faulty) transport does the dropping).
    pub fn drops_send(&self, block: usize) -> bool {
        self.fault == Some(Fault::DropSend { block })
    }
}

impl Default for ExchangeOptions {
    fn default() -> Self {
        ExchangeOptions {
            timeout: Duration::from_secs(10),
            fault: None,
            flag_stride: 128,
            poll_backoff_ns: 0,
            verify: Verify::Sample,
            barrier: true,
            // Measured on 2 x H200 (results/HISTORY.md: h200x2-ipc-chunks): 8 is as fast as 4
            // on small, thesis-9 and thesis-27 and fastest on large.
            ipc_chunks: 8,
            lib_blocks: haloport_core::halo::HaloOptions::default().signalled_blocks,
        }
    }
}

/// One halo-exchange strategy, set up for one rank's pattern.
pub trait Strategy {
    /// Work that belongs to no timed region, before iteration `iteration` (the mpi-only
    /// reference fills its send buffers here; GPU strategies pack inside the iteration).
    ///
    /// # Errors
    /// As [`Strategy::iteration`].
    fn prepare(&mut self, iteration: u32) -> crate::Result<()> {
        let _ = iteration;
        Ok(())
    }

    /// Runs one iteration with global iteration number `iteration` (part of the packed values).
    ///
    /// # Errors
    /// Backend, MPI and time-out errors, naming the block and state where there is one.
    fn iteration(&mut self, iteration: u32) -> crate::Result<()>;

    /// Hands the last iteration's instrumentation to `observer` and resets it: the check
    /// records (always), the device timestamps (when the observer wants them), the CPU events
    /// and the event-loop profile. Called after the iteration, outside its timed region.
    ///
    /// # Errors
    /// [`Error::Internal`](crate::Error::Internal) when kernels that write the records may still
    /// be running (the last iteration failed before its kernels were seen finished).
    fn report(&mut self, observer: &mut dyn Observer) -> crate::Result<()>;

    /// Coherence of the send and receive buffers: (requested, served).
    fn buffer_coherence(&self) -> (Coherence, Coherence);

    /// How many iterations' GPU work may be in flight at once: 1, or more when iterations
    /// overlap (the next iterations' GPU work starts before this one is verified and reported).
    /// A pipelined iteration is measured as the period between iterations' ends, averaged over
    /// this many, so that what the GPU did while the CPU verified (untimed) counts too.
    fn pipeline_depth(&self) -> u32 {
        1
    }
}

/// Event-loop profiling of thesis 4.4: how often the CPU found an event right after finding
/// one (it may have been busy while events waited), and the most events it found in a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EventProfile {
    /// Events processed.
    pub events: u64,
    /// Events found by a test that directly followed a positive test.
    pub chained: u64,
    /// Most events found in a row, with no negative test between them.
    pub max_in_row: u64,
    #[serde(skip)]
    in_row: u64,
}

impl EventProfile {
    /// Records one test for an event: `found` or not.
    pub fn test(&mut self, found: bool) {
        if found {
            self.events += 1;
            if self.in_row > 0 {
                self.chained += 1;
            }
            self.in_row += 1;
            self.max_in_row = self.max_in_row.max(self.in_row);
        } else {
            self.in_row = 0;
        }
    }

    /// Adds another profile's counts (iterations are independent: runs do not carry over).
    pub fn merge(&mut self, other: &EventProfile) {
        self.events += other.events;
        self.chained += other.chained;
        self.max_in_row = self.max_in_row.max(other.max_in_row);
    }

    /// Share of events processed right after another event, 0 to 1.
    pub fn chained_share(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.chained as f64 / self.events as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_bad_ones_are_named() {
        assert_eq!(
            "drop-send=3".parse::<Fault>().ok(),
            Some(Fault::DropSend { block: 3 })
        );
        assert_eq!(
            "corrupt-recv=0".parse::<Fault>().ok(),
            Some(Fault::CorruptRecv { block: 0 })
        );
        let msg = |s: &str| {
            s.parse::<Fault>()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(msg("drop-send=x").contains("'x' is not a block number"));
        assert!(msg("explode=1").contains("unknown fault 'explode=1'"));
        let options = ExchangeOptions {
            fault: Some(Fault::DropSend { block: 2 }),
            ..ExchangeOptions::default()
        };
        assert!(options.drops_send(2) && !options.drops_send(1));
        assert_eq!(
            "short-send=2".parse::<Fault>().ok(),
            Some(Fault::ShortSend { block: 2 })
        );
        let missing = Fault::DropSend { block: 9 }.check_block_exists(9);
        let missing = missing.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            missing.contains("block 9 does not exist; the pattern has blocks 0 to 8"),
            "{missing}"
        );
        assert!(Fault::ShortSend { block: 8 }.check_block_exists(9).is_ok());
        for fault in [
            Fault::DropSend { block: 4 },
            Fault::CorruptRecv { block: 1 },
            Fault::ShortSend { block: 3 },
        ] {
            assert_eq!(fault.to_string().parse::<Fault>().ok(), Some(fault));
        }
    }

    #[test]
    fn event_profile_counts_chains_and_runs() {
        let mut p = EventProfile::default();
        // found, found, miss, found, found, found, miss
        for found in [true, true, false, true, true, true, false] {
            p.test(found);
        }
        assert_eq!(p.events, 5);
        assert_eq!(
            p.chained, 3,
            "the 2nd, 5th and 6th events followed a positive test"
        );
        assert_eq!(p.max_in_row, 3);
        assert!((p.chained_share() - 0.6).abs() < 1e-12);
        let mut total = EventProfile::default();
        total.merge(&p);
        total.merge(&p);
        assert_eq!((total.events, total.chained, total.max_in_row), (10, 6, 3));
    }
}
