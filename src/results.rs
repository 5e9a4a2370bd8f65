//! The result file of `haloport run`: one self-describing JSON document per run command.
//!
//! It carries what is needed to interpret it without the command line: build provenance, host,
//! MPI library, backend and device, variant, workload, pattern, the protocol, every measured
//! iteration time (per run), statistics, and the verification verdict with every recorded
//! wrong value.

use haloport_core::clock::ClockFit;
use haloport_core::measure::{Protocol, RankOutcome, WrongValue};
use haloport_core::pattern::RankPattern;
use haloport_core::stats::Summary;
use haloport_core::timeline::IterationTimeline;
use haloport_core::{Coherence, DeviceInfo};
use serde::Serialize;

use crate::provenance::Provenance;

/// Format version of [`RunResult`]; bumped when a key changes meaning.
pub const RESULT_FORMAT: u32 = 1;

/// One `haloport run`, as written by rank 0.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Format version.
    pub format: u32,
    /// How the binary was built.
    pub build: Provenance,
    /// Host name of rank 0.
    pub host: String,
    /// `MPI_Get_library_version`.
    pub mpi_library: String,
    /// "host", "cuda" or "hip".
    pub backend: String,
    /// Rank 0's device.
    pub device: DeviceInfo,
    /// Variant name, e.g. `base-nb-test`.
    pub variant: String,
    /// Strategy the variant belongs to.
    pub strategy: String,
    /// Workload name.
    pub workload: String,
    /// Pattern name or file.
    pub pattern: String,
    /// Ranks in the job.
    pub ranks: i32,
    /// Blocks per rank (rank 0's count).
    pub blocks: usize,
    /// Threads per block.
    pub threads: u32,
    /// Iterations per run, warm-up included.
    pub iterations: u32,
    /// Warm-up iterations per run.
    pub warmup: u32,
    /// Runs.
    pub runs: u32,
    /// Coherence of the send/receive buffers: asked for and served.
    pub buffers_requested: Coherence,
    /// See `buffers_requested`.
    pub buffers_served: Coherence,
    /// Rank 0's measured iteration times in microseconds: `iteration_us[run][i]`.
    pub iteration_us: Vec<Vec<f64>>,
    /// Median over all measured iterations.
    pub median_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Sample standard deviation.
    pub stddev_us: f64,
    /// Fastest iteration.
    pub min_us: f64,
    /// Slowest iteration.
    pub max_us: f64,
    /// True only if every checked element of every iteration on every rank was right.
    pub verified: bool,
    /// Elements checked, all ranks.
    pub checked: u64,
    /// Wrong elements found, all ranks.
    pub wrong: u64,
    /// Recorded wrong values (rank, block, run, iteration, index, expected, found), all ranks.
    pub errors: Vec<WrongValue>,
    /// Every rank's pattern as validated.
    pub patterns: Vec<RankPattern>,
    /// Each rank's clock fit (device timer to host clock), where one was made.
    pub clock: Vec<Option<ClockFit>>,
    /// Each rank's last run on the host clock: per measured iteration, per block, pack and unpack
    /// start and end in microseconds since the iteration started.
    pub timelines: Vec<Vec<IterationTimeline>>,
    /// Time-out of every wait, seconds.
    pub timeout_s: f64,
    /// Injected fault, if any.
    pub fault: Option<String>,
}

/// Verification over all ranks: (verified, checked, wrong, errors).
pub fn verification(outcomes: &[RankOutcome]) -> (bool, u64, u64, Vec<WrongValue>) {
    let checked = outcomes.iter().map(|o| o.checked).sum();
    let wrong = outcomes.iter().map(|o| o.wrong).sum();
    let errors: Vec<_> = outcomes.iter().flat_map(|o| o.errors.clone()).collect();
    (wrong == 0 && checked > 0, checked, wrong, errors)
}

/// Splits rank 0's flat list of measured times into runs.
pub fn per_run(outcome: &RankOutcome, protocol: Protocol) -> Vec<Vec<f64>> {
    outcome
        .iteration_us
        .chunks(protocol.measured() as usize)
        .map(<[f64]>::to_vec)
        .collect()
}

/// Statistics of rank 0's times, or zeros when nothing was measured.
pub fn summary(outcome: &RankOutcome) -> Summary {
    Summary::of(&outcome.iteration_us).unwrap_or(Summary {
        count: 0,
        median: 0.0,
        mean: 0.0,
        stddev: 0.0,
        min: 0.0,
        max: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(rank: i32, checked: u64, wrong: u64) -> RankOutcome {
        RankOutcome {
            rank,
            iteration_us: vec![1.0, 2.0, 3.0, 4.0],
            checked,
            wrong,
            errors: vec![],
            ..RankOutcome::default()
        }
    }

    #[test]
    fn verified_needs_checks_and_no_wrong_value_on_any_rank() {
        assert!(verification(&[outcome(0, 10, 0), outcome(1, 10, 0)]).0);
        assert!(!verification(&[outcome(0, 10, 0), outcome(1, 10, 1)]).0);
        assert!(
            !verification(&[outcome(0, 0, 0)]).0,
            "nothing checked is not verified"
        );
    }

    #[test]
    fn times_are_split_per_run() {
        let p = Protocol {
            iterations: 3,
            warmup: 1,
            runs: 2,
        };
        assert_eq!(
            per_run(&outcome(0, 1, 0), p),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
    }
}
