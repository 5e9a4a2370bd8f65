//! Result files: one self-describing JSON document per `haloport run` and per `haloport sweep`.
//!
//! Both carry a [`ResultHeader`] (build provenance, host, MPI library, backend and device,
//! ranks, pattern, protocol, every rank's clock fit) and per (variant, workload) a
//! [`VariantResult`] (every measured iteration time per run, statistics, verification with every
//! recorded wrong value, timelines, event-loop profiles). A run's file flattens both into one
//! object, so its keys (`variant`, `median_us`, `verified`, ...) sit at the top level.
//!
//! A sweep also keeps every finished (workload, variant, run) unit on disk while it runs
//! ([`sweep_dir`]); [`merge_run`] folds those per-run outcomes back into one per cell.

pub mod sweep_dir;

use haloport::core::transport::TransportKind;
use haloport_core::clock::ClockFit;
use haloport_core::pattern::RankPattern;
use haloport_core::transport::node::{block_links, BlockLink};
use haloport_core::{Coherence, DeviceInfo};
use haloport_thesis::measure::{
    MissingCheck, Protocol, RankOutcome, WrongValue, MAX_RECORDED_ERRORS,
};
use haloport_thesis::stats::Summary;
use haloport_thesis::strategy::EventProfile;
use haloport_thesis::timeline::IterationTimeline;
use serde::Serialize;

use haloport::provenance::Provenance;

/// Format version of the result files; bumped when a key changes meaning.
pub const RESULT_FORMAT: u32 = 2;

/// The schema every benchmark's JSON names in its `schema` key: haloport's own result files
/// (`run`, `sweep`, `stencil`, `pack-bench`, `plan`) and the drivers in `bench/` (the NCCL peer,
/// the Python benchmarks). `bench/README.md` lists the keys they share.
pub const BENCH_SCHEMA: &str = "haloport-bench/1";

/// What every result file starts with.
#[derive(Debug, Clone, Serialize)]
pub struct ResultHeader {
    /// [`BENCH_SCHEMA`].
    pub schema: &'static str,
    /// Format version.
    pub format: u32,
    /// "run" or "sweep".
    pub kind: &'static str,
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
    /// Ranks in the job.
    pub ranks: i32,
    /// Pattern name or file.
    pub pattern: String,
    /// Iterations per run, warm-up included.
    pub iterations: u32,
    /// Warm-up iterations per run.
    pub warmup: u32,
    /// Runs.
    pub runs: u32,
    /// Time-out of every wait, seconds.
    pub timeout_s: f64,
    /// Bytes between the taskqueue's per-block flags.
    pub flag_stride: u32,
    /// Pause between the taskqueue's polls, nanoseconds.
    pub poll_backoff_ns: u32,
    /// Which received elements unpack checked: "sample" (first, last and one per thread per
    /// block) or "full" (every element).
    pub verify: haloport_core::Verify,
    /// Injected fault, if any.
    pub fault: Option<String>,
    /// Each rank's clock fit (device timer to host clock), where one was made.
    pub clock: Vec<Option<ClockFit>>,
}

/// One variant on one workload: times, statistics, verification, timelines.
#[derive(Debug, Clone, Serialize)]
pub struct VariantResult {
    /// Variant name, e.g. `base-nb-test`.
    pub variant: String,
    /// Strategy the variant belongs to: "baseline", "taskqueue", "device-direct" or "reference".
    pub strategy: String,
    /// The variant's transport: "mpi" (host-staged) or "ipc" (device-direct to peers on the
    /// same node, host-staged to the others: `links` says which each block took).
    pub transport: String,
    /// Per rank, per block: the peer each way and the transport it took (empty in sweeps that
    /// predate it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Vec<BlockLink>>,
    /// Whether every iteration ended with an MPI barrier (the thesis protocol), or iterations
    /// ran back to back (`--no-barrier`, device-direct variants only).
    pub barrier: bool,
    /// Workload name.
    pub workload: String,
    /// Blocks per rank (rank 0's count).
    pub blocks: usize,
    /// Threads per block.
    pub threads: u32,
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
    /// True only if every block of every iteration on every rank was checked as planned and
    /// every checked element was right.
    pub verified: bool,
    /// Elements checked, all ranks.
    pub checked: u64,
    /// Checks planned, all ranks (SPEC 5): `checked` must equal it.
    pub planned: u64,
    /// Block-iterations whose checks fell short of the plan, all ranks.
    pub missing: u64,
    /// Recorded block-iterations with missing checks (rank, block, run, iteration, state).
    pub missing_checks: Vec<MissingCheck>,
    /// Wrong elements found, all ranks.
    pub wrong: u64,
    /// Recorded wrong values (rank, block, run, iteration, index, expected, found), all ranks.
    pub errors: Vec<WrongValue>,
    /// Every rank's pattern as validated.
    pub patterns: Vec<RankPattern>,
    /// Each rank's last run on the host clock: per measured iteration, per block, pack and unpack
    /// start and end, and the CPU's events, in microseconds since the iteration started.
    pub timelines: Vec<Vec<IterationTimeline>>,
    /// Each rank's event-loop profile (thesis 4.4), for strategies with an event loop.
    pub profile: Vec<Option<EventProfile>>,
}

impl VariantResult {
    /// Records which transport every block took each way, given every rank's node (`nodes`
    /// empty: unknown, nothing recorded).
    pub fn with_links(mut self, nodes: &[i32]) -> VariantResult {
        if !nodes.is_empty() {
            let transport = self.transport.parse().unwrap_or(TransportKind::Mpi);
            self.links = block_links(&self.patterns, nodes, transport);
        }
        self
    }

    /// Builds the result of one variant on one workload from every rank's outcome.
    pub fn from_outcomes(
        variant: &haloport_thesis::Variant,
        workload: haloport_thesis::Workload,
        patterns: &[RankPattern],
        outcomes: &[RankOutcome],
        protocol: Protocol,
        (requested, served): (Coherence, Coherence),
        barrier: bool,
    ) -> VariantResult {
        let rank0 = &outcomes[0];
        let stats = Summary::of(&rank0.iteration_us).unwrap_or(Summary {
            count: 0,
            median: 0.0,
            mean: 0.0,
            stddev: 0.0,
            min: 0.0,
            max: 0.0,
        });
        let checked = outcomes.iter().map(|o| o.checked).sum();
        let wrong = outcomes.iter().map(|o| o.wrong).sum();
        let planned = outcomes.iter().map(|o| o.planned).sum();
        let missing = outcomes.iter().map(|o| o.missing).sum();
        VariantResult {
            variant: variant.name(),
            strategy: variant.strategy().to_owned(),
            transport: variant.transport().name().to_owned(),
            links: Vec::new(),
            // Only device-direct variants run without the closing barrier.
            barrier: barrier || !variant.may_run_back_to_back(),
            workload: workload.name().to_owned(),
            blocks: patterns[0].blocks.len(),
            threads: workload.threads(),
            buffers_requested: requested,
            buffers_served: served,
            iteration_us: rank0
                .iteration_us
                .chunks(protocol.measured() as usize)
                .map(<[f64]>::to_vec)
                .collect(),
            median_us: stats.median,
            mean_us: stats.mean,
            stddev_us: stats.stddev,
            min_us: stats.min,
            max_us: stats.max,
            verified: wrong == 0 && missing == 0 && checked > 0 && checked == planned,
            checked,
            planned,
            missing,
            missing_checks: outcomes
                .iter()
                .flat_map(|o| o.missing_checks.clone())
                .collect(),
            wrong,
            errors: outcomes.iter().flat_map(|o| o.errors.clone()).collect(),
            patterns: patterns.to_vec(),
            timelines: outcomes.iter().map(|o| o.timeline.clone()).collect(),
            profile: outcomes.iter().map(|o| o.profile).collect(),
        }
    }
}

/// Folds the outcome of one later run of a cell into `into`, the same rank's outcome of the
/// cell's earlier runs, as if both had been measured into one [`RankOutcome`]: times appended in
/// run order, check counts added, wrong values appended (still at most
/// [`MAX_RECORDED_ERRORS`]), timelines and event-loop profiles combined. Runs must be merged in
/// run order (only the last run keeps a timeline).
///
/// This is the one place that knows how a [`RankOutcome`] adds up: the destructuring below names
/// every field, so a field added to `RankOutcome` fails to compile here until it is merged too.
pub fn merge_run(into: &mut RankOutcome, run: RankOutcome) {
    let RankOutcome {
        rank: _,
        iteration_us,
        checked,
        planned,
        missing_checks,
        missing,
        wrong,
        errors,
        raw_timeline,
        clock,
        timeline,
        profile,
    } = run;
    into.iteration_us.extend(iteration_us);
    into.checked += checked;
    into.planned += planned;
    into.missing += missing;
    let room = MAX_RECORDED_ERRORS.saturating_sub(into.missing_checks.len());
    into.missing_checks
        .extend(missing_checks.into_iter().take(room));
    into.wrong += wrong;
    let room = MAX_RECORDED_ERRORS.saturating_sub(into.errors.len());
    into.errors.extend(errors.into_iter().take(room));
    into.raw_timeline.extend(raw_timeline);
    into.timeline.extend(timeline);
    if clock.is_some() {
        into.clock = clock;
    }
    if let Some(p) = profile {
        into.profile.get_or_insert_with(Default::default).merge(&p);
    }
}

/// The file `haloport run --json` writes.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Build, host, device, protocol, clocks.
    #[serde(flatten)]
    pub header: ResultHeader,
    /// The one variant's result.
    #[serde(flatten)]
    pub result: VariantResult,
}

/// The file `haloport sweep` writes.
#[derive(Debug, Clone, Serialize)]
pub struct SweepResult {
    /// Build, host, device, protocol, clocks.
    #[serde(flatten)]
    pub header: ResultHeader,
    /// Variants requested, in order (the `mpi-only` reference first).
    pub variants: Vec<String>,
    /// Workloads requested, in order.
    pub workloads: Vec<String>,
    /// One entry per (workload, variant).
    pub results: Vec<VariantResult>,
}

impl SweepResult {
    /// One CSV row per (variant, workload, run): the run's statistics over its measured
    /// iterations, and the variant's verification verdict.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "variant,strategy,workload,run,iterations,median_us,mean_us,stddev_us,min_us,max_us,verified\n",
        );
        for r in &self.results {
            for (run, times) in r.iteration_us.iter().enumerate() {
                if let Some(s) = Summary::of(times) {
                    out.push_str(&format!(
                        "{},{},{},{run},{},{:.3},{:.3},{:.3},{:.3},{:.3},{}\n",
                        r.variant,
                        r.strategy,
                        r.workload,
                        s.count,
                        s.median,
                        s.mean,
                        s.stddev,
                        s.min,
                        s.max,
                        r.verified
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use haloport_core::pattern::BuiltinPattern;
    use haloport_thesis::{Variant, Workload};

    fn outcome(rank: i32, checked: u64, wrong: u64) -> RankOutcome {
        RankOutcome {
            rank,
            iteration_us: vec![1.0, 2.0, 3.0, 4.0],
            checked,
            planned: checked,
            wrong,
            ..RankOutcome::default()
        }
    }

    fn result(outcomes: &[RankOutcome]) -> VariantResult {
        let protocol = Protocol {
            iterations: 3,
            warmup: 1,
            runs: 2,
        };
        let patterns: Vec<_> = (0..outcomes.len() as i32)
            .map(|r| {
                BuiltinPattern::Ring
                    .resolve(r, outcomes.len() as i32, &[1, 2])
                    .expect("pattern")
            })
            .collect();
        VariantResult::from_outcomes(
            &Variant::MpiOnly,
            Workload::Small,
            &patterns,
            outcomes,
            protocol,
            (Coherence::Coherent, Coherence::Coherent),
            true,
        )
    }

    #[test]
    fn verified_needs_checks_and_no_wrong_value_on_any_rank() {
        assert!(result(&[outcome(0, 10, 0), outcome(1, 10, 0)]).verified);
        assert!(!result(&[outcome(0, 10, 0), outcome(1, 10, 1)]).verified);
        assert!(
            !result(&[outcome(0, 0, 0)]).verified,
            "nothing checked is not verified"
        );
        let mut short = outcome(1, 10, 0);
        short.planned = 12;
        assert!(
            !result(&[outcome(0, 10, 0), short.clone()]).verified,
            "fewer checks than planned is not verified"
        );
        short.planned = 10;
        short.missing = 1;
        assert!(
            !result(&[outcome(0, 10, 0), short]).verified,
            "a block with missing checks is not verified"
        );
    }

    #[test]
    fn merging_runs_equals_measuring_them_into_one_outcome() {
        let mut a = outcome(1, 10, 1);
        a.iteration_us = vec![1.0, 2.0];
        a.errors = vec![WrongValue {
            rank: 1,
            block: 0,
            run: 0,
            iteration: 2,
            index: 0,
            expected: 1.0,
            found: 0.0,
            wrong_in_block: 1,
        }];
        a.profile = Some(EventProfile::default());
        let mut b = outcome(1, 5, 0);
        b.iteration_us = vec![3.0, 4.0];
        let mut p = EventProfile::default();
        p.test(true);
        b.profile = Some(p);
        merge_run(&mut a, b);
        assert_eq!(a.rank, 1);
        assert_eq!(a.iteration_us, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!((a.checked, a.wrong, a.errors.len()), (15, 1, 1));
        assert_eq!(a.profile.map(|p| p.events), Some(1));
    }

    #[test]
    fn merged_wrong_values_stay_capped() {
        let wrong = WrongValue {
            rank: 0,
            block: 0,
            run: 0,
            iteration: 0,
            index: 0,
            expected: 1.0,
            found: 0.0,
            wrong_in_block: 1,
        };
        let mut a = outcome(0, 1, 1);
        a.errors = vec![wrong.clone(); MAX_RECORDED_ERRORS - 1];
        let mut b = outcome(0, 1, 1);
        b.errors = vec![wrong; 5];
        merge_run(&mut a, b);
        assert_eq!(a.errors.len(), MAX_RECORDED_ERRORS);
    }

    #[test]
    fn times_are_split_per_run_and_summarised() {
        let r = result(&[outcome(0, 1, 0)]);
        assert_eq!(r.iteration_us, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert_eq!((r.median_us, r.min_us, r.max_us), (2.5, 1.0, 4.0));
    }
}
