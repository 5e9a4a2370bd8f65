//! The measurement protocol (SPEC 6, thesis 4.2): runs of iterations, the first few of each
//! run warm-up, every iteration timed on the CPU and verified.
//!
//! An iteration's time runs from just before the strategy starts it to just after its closing
//! barrier. A pipelined strategy has d > 1 iterations in flight (the next ones' GPU work starts
//! before this one is verified), so one call's wait may cover several and the next calls then
//! find theirs done: its iteration's time is the span from the end of the iteration d before
//! to its own end, divided by d, the period averaged over the iterations in flight.
//! Verification (reading the kernels' check records) happens after the timed region.
//! Global iteration numbers run on across runs, so a stale buffer from an earlier run can never
//! carry the expected value.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::observe::{BlockChecks, Discard, Observer};
use crate::strategy::{EventProfile, Strategy};
use crate::timeline::{convert, CpuEvent, IterationTimeline, RawIteration};
use haloport_core::clock::{host_now_ns, ClockFit};
use haloport_core::error::{Error, Result};
use haloport_core::shared::hp_block_times;

/// Most wrong-value records one rank keeps; all of them are counted.
pub const MAX_RECORDED_ERRORS: usize = 100;

/// Most iterations (runs x iterations) one measurement may have: their times alone take
/// 800 MB per rank, and global iteration numbers stay far below where packed values repeat.
pub const MAX_ITERATIONS: u64 = 100_000_000;

/// Most measured times reserved up front; beyond it the vector grows as iterations finish.
const RESERVE_TIMES: usize = 1 << 16;

/// How many runs and iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    /// Iterations per run, warm-up included (thesis: 13).
    pub iterations: u32,
    /// Leading iterations of each run that are not timed (thesis: 3).
    pub warmup: u32,
    /// Runs (SPEC: 40).
    pub runs: u32,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            iterations: 13,
            warmup: 3,
            runs: 40,
        }
    }
}

impl Protocol {
    /// Checks that at least one iteration is measured.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the offending numbers.
    pub fn validate(&self) -> Result<()> {
        if self.runs == 0 {
            return Err(Error::InvalidInput("--runs must be at least 1".into()));
        }
        if self.warmup >= self.iterations {
            return Err(Error::InvalidInput(format!(
                "--iters {} with --warmup {} leaves no measured iteration; --iters must exceed --warmup",
                self.iterations, self.warmup
            )));
        }
        let total = u64::from(self.iterations) * u64::from(self.runs);
        if total > MAX_ITERATIONS {
            return Err(Error::InvalidInput(format!(
                "--runs {} x --iters {} = {total} iterations: more than the {MAX_ITERATIONS} one measurement records",
                self.runs, self.iterations
            )));
        }
        Ok(())
    }

    /// Measured iterations per run.
    pub fn measured(&self) -> u32 {
        self.iterations - self.warmup
    }
}

/// A wrong value unpack found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrongValue {
    /// Rank whose receive buffer held it.
    pub rank: i32,
    /// Block.
    pub block: usize,
    /// Run (0-based).
    pub run: u32,
    /// Iteration within the run (0-based, warm-up included).
    pub iteration: u32,
    /// Index of the first wrong element in the block.
    pub index: u64,
    /// What the source rank packed.
    pub expected: f64,
    /// What was there.
    pub found: f64,
    /// Wrong elements among those checked in this block in this iteration.
    pub wrong_in_block: u32,
}

/// A block whose check record shows fewer (or more) checks than planned: its unpack never ran,
/// or did not finish (SPEC 5: a failed iteration, never a pass).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingCheck {
    /// Rank whose block it is.
    pub rank: i32,
    /// Block.
    pub block: usize,
    /// Run (0-based).
    pub run: u32,
    /// Iteration within the run (0-based, warm-up included).
    pub iteration: u32,
    /// Checks planned for the block.
    pub planned: u64,
    /// Checks its record shows.
    pub done: u64,
    /// Where the block ended, where the strategy knows (e.g. the taskqueue kernel's state).
    pub state: Option<String>,
}

/// What one rank measured and verified.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankOutcome {
    /// The rank.
    pub rank: i32,
    /// Measured iteration times in microseconds, run after run.
    pub iteration_us: Vec<f64>,
    /// Elements checked by unpack, over all blocks and iterations.
    pub checked: u64,
    /// Checks planned over all blocks and iterations: equal to `checked` in a complete run.
    #[serde(default)]
    pub planned: u64,
    /// Blocks and iterations whose checks fell short of the plan (first
    /// [`MAX_RECORDED_ERRORS`] recorded; all counted in `missing`).
    #[serde(default)]
    pub missing_checks: Vec<MissingCheck>,
    /// Block-iterations whose checks fell short of the plan.
    #[serde(default)]
    pub missing: u64,
    /// Wrong elements found.
    pub wrong: u64,
    /// The first [`MAX_RECORDED_ERRORS`] wrong values, one record per block and iteration.
    pub errors: Vec<WrongValue>,
    /// Raw stamps of the last run's measured iterations; emptied by [`Self::attach_clock`].
    pub raw_timeline: Vec<RawIteration>,
    /// The clock fit of this rank's device, once attached.
    pub clock: Option<ClockFit>,
    /// The last run's measured iterations on the host clock, once the clock is attached.
    pub timeline: Vec<IterationTimeline>,
    /// Event-loop profile over all measured iterations (strategies with an event loop).
    pub profile: Option<EventProfile>,
}

impl RankOutcome {
    /// An empty outcome for `rank`, with room for the protocol's measured iterations.
    pub fn new(rank: i32, protocol: Protocol) -> RankOutcome {
        RankOutcome {
            rank,
            iteration_us: Vec::with_capacity(
                (u64::from(protocol.runs) * u64::from(protocol.measured()))
                    .min(RESERVE_TIMES as u64) as usize,
            ),
            ..RankOutcome::default()
        }
    }

    /// Attaches this rank's clock fit and converts the raw timeline with it.
    pub fn attach_clock(&mut self, fit: ClockFit) {
        self.timeline = convert(&self.raw_timeline, &fit);
        self.raw_timeline.clear();
        self.clock = Some(fit);
    }
}

/// Runs the protocol on one rank: every run on the same strategy. Every rank must call it with
/// the same protocol. `on_iteration(run, iteration)` is called after every iteration.
///
/// # Errors
/// The strategy's errors, which end the measurement at once.
pub fn measure(
    strategy: &mut dyn Strategy,
    rank: i32,
    protocol: Protocol,
    mut on_iteration: impl FnMut(u32, u32),
) -> Result<RankOutcome> {
    protocol.validate()?;
    let mut outcome = RankOutcome::new(rank, protocol);
    for run in 0..protocol.runs {
        measure_run(strategy, &mut outcome, protocol, run, &mut on_iteration)?;
    }
    Ok(outcome)
}

/// Runs run `run` of the protocol on `strategy`, adding to `outcome`. A sweep calls this with
/// a fresh strategy per run, interleaving variants between runs.
///
/// # Errors
/// The strategy's errors, which end the measurement at once.
pub fn measure_run(
    strategy: &mut dyn Strategy,
    outcome: &mut RankOutcome,
    protocol: Protocol,
    run: u32,
    on_iteration: &mut dyn FnMut(u32, u32),
) -> Result<()> {
    // The first iteration's check records start zeroed; clear anything a previous user left.
    strategy.report(&mut Discard)?;
    let mut periods = Periods::new(strategy.pipeline_depth());
    for it in 0..protocol.iterations {
        // Global iteration numbers run on across runs: a stale buffer never holds the value
        // the current iteration expects.
        let global = run * protocol.iterations + it;
        strategy.prepare(global)?;
        let called = host_now_ns();
        strategy.iteration(global)?;
        let end = host_now_ns();
        let (start, time_ns) = periods.time(called, end);
        let measured = it >= protocol.warmup;
        if measured {
            outcome.iteration_us.push(time_ns / 1e3);
        }
        let mut recorder = IterationRecorder {
            outcome: &mut *outcome,
            run,
            iteration: it,
            measured,
            keep_timeline: measured && run + 1 == protocol.runs,
            checks_reported: 0,
            timeline: RawIteration {
                iteration: it,
                cpu_start_ns: start,
                cpu_end_ns: end,
                device: Vec::new(),
                cpu: Vec::new(),
            },
        };
        strategy.report(&mut recorder)?;
        recorder.finish()?;
        on_iteration(run, it);
    }
    Ok(())
}

/// The time of each iteration from its host stamps. Pipelined, the GPU works on this
/// iteration while the CPU verifies the previous one, and iterations in flight together often
/// end together: an iteration lasts the period averaged over up to `depth` iterations, from
/// the end of the oldest. Otherwise it lasts from its call to its end.
struct Periods {
    depth: usize,
    /// Ends of the last `depth` iterations, oldest first.
    ends: VecDeque<u64>,
}

impl Periods {
    fn new(depth: u32) -> Periods {
        let depth = depth.max(1) as usize;
        Periods {
            depth,
            ends: VecDeque::with_capacity(depth),
        }
    }

    /// The start stamp and the length in ns of an iteration called at `called` that ended at
    /// `end`.
    fn time(&mut self, called: u64, end: u64) -> (u64, f64) {
        let timed = match (self.ends.front(), self.ends.back()) {
            (Some(&oldest), Some(&previous)) if self.depth > 1 => (
                previous,
                end.saturating_sub(oldest) as f64 / self.ends.len() as f64,
            ),
            _ => (called, end.saturating_sub(called) as f64),
        };
        if self.ends.len() == self.depth {
            self.ends.pop_front();
        }
        self.ends.push_back(end);
        timed
    }
}

/// The benchmark's observer of one iteration: verification into the rank's outcome, the
/// timeline of the last run's measured iterations, the event-loop profile of measured ones.
struct IterationRecorder<'a> {
    outcome: &'a mut RankOutcome,
    run: u32,
    iteration: u32,
    measured: bool,
    keep_timeline: bool,
    checks_reported: u32,
    timeline: RawIteration,
}

impl IterationRecorder<'_> {
    /// Ends the iteration's record.
    ///
    /// # Errors
    /// [`Error::Internal`] when the strategy did not report its check records exactly once.
    fn finish(self) -> Result<()> {
        if self.checks_reported != 1 {
            return Err(Error::Internal(format!(
                "the strategy reported its check records {} times for one iteration",
                self.checks_reported
            )));
        }
        if self.keep_timeline {
            self.outcome.raw_timeline.push(self.timeline);
        }
        Ok(())
    }
}

impl Observer for IterationRecorder<'_> {
    fn wants_device_times(&self) -> bool {
        self.keep_timeline
    }

    fn checks(&mut self, checks: BlockChecks<'_>) {
        self.checks_reported += 1;
        let (rank, run, iteration) = (self.outcome.rank, self.run, self.iteration);
        let outcome = &mut *self.outcome;
        // A record missing for a planned block counts as that block never checked.
        let blocks = checks.planned.len().max(checks.records.len());
        for block in 0..blocks {
            let plan = checks.planned.get(block).copied().unwrap_or(0);
            let check = checks.records.get(block).copied().unwrap_or_default();
            outcome.checked += u64::from(check.checked);
            outcome.planned += plan;
            if u64::from(check.checked) != plan {
                outcome.missing += 1;
                if outcome.missing_checks.len() < MAX_RECORDED_ERRORS {
                    outcome.missing_checks.push(MissingCheck {
                        rank,
                        block,
                        run,
                        iteration,
                        planned: plan,
                        done: u64::from(check.checked),
                        state: (checks.state)(block),
                    });
                }
            }
            if check.wrong > 0 {
                outcome.wrong += u64::from(check.wrong);
                if outcome.errors.len() < MAX_RECORDED_ERRORS {
                    outcome.errors.push(WrongValue {
                        rank,
                        block,
                        run,
                        iteration,
                        index: check.first_index,
                        expected: check.first_expected,
                        found: check.first_found,
                        wrong_in_block: check.wrong,
                    });
                }
            }
        }
    }

    fn device_times(&mut self, times: &[hp_block_times]) {
        self.timeline.device = RawIteration::device_stamps(times);
    }

    fn cpu_events(&mut self, events: Vec<CpuEvent>) {
        // Events of iterations not kept are dropped, so they never pile up.
        if self.keep_timeline {
            self.timeline.cpu = events;
        }
    }

    fn event_profile(&mut self, profile: &EventProfile) {
        if self.measured {
            self.outcome
                .profile
                .get_or_insert_with(EventProfile::default)
                .merge(profile);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_needs_a_measured_iteration() {
        assert!(Protocol::default().validate().is_ok());
        assert_eq!(Protocol::default().measured(), 10);
        let p = Protocol {
            iterations: 3,
            warmup: 3,
            runs: 1,
        };
        let msg = p
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("--iters must exceed --warmup"), "{msg}");
        let p = Protocol {
            runs: 0,
            ..Protocol::default()
        };
        assert!(p.validate().is_err());
        let p = Protocol {
            runs: 100_000_000,
            iterations: 13,
            warmup: 3,
        };
        let msg = p
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("= 1300000000 iterations: more than the 100000000"),
            "{msg}"
        );
        // An allowed but large protocol does not reserve its whole time vector up front.
        let big = Protocol {
            runs: 7_000_000,
            ..Protocol::default()
        };
        assert!(big.validate().is_ok());
        assert!(RankOutcome::new(0, big).iteration_us.capacity() <= RESERVE_TIMES);
    }

    /// A strategy whose block 1 never gets unpacked: its record stays empty.
    struct OneBlockNeverUnpacked;

    impl Strategy for OneBlockNeverUnpacked {
        fn iteration(&mut self, _iteration: u32) -> Result<()> {
            Ok(())
        }
        fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
            let full = haloport_core::shared::hp_block_check {
                checked: 18,
                ..Default::default()
            };
            observer.checks(BlockChecks {
                records: &[full, haloport_core::shared::hp_block_check::default(), full],
                planned: &[18; 3],
                state: &|block| Some(format!("block {block} timed out on the device")),
            });
            Ok(())
        }
        fn buffer_coherence(&self) -> (haloport_core::Coherence, haloport_core::Coherence) {
            (
                haloport_core::Coherence::Coherent,
                haloport_core::Coherence::Coherent,
            )
        }
    }

    #[test]
    fn a_block_never_unpacked_is_a_missing_check_naming_the_block_and_its_state() {
        let protocol = Protocol {
            iterations: 3,
            warmup: 1,
            runs: 2,
        };
        let outcome = measure(&mut OneBlockNeverUnpacked, 5, protocol, |_, _| {})
            .expect("the measurement itself completes");
        assert_eq!(outcome.wrong, 0);
        assert_eq!(outcome.planned, 6 * 3 * 18);
        assert_eq!(outcome.checked, 6 * 2 * 18);
        assert_eq!(outcome.missing, 6, "block 1 in each of 6 iterations");
        let first = &outcome.missing_checks[0];
        assert_eq!(
            (first.rank, first.block, first.run, first.iteration),
            (5, 1, 0, 0)
        );
        assert_eq!((first.planned, first.done), (18, 0));
        assert_eq!(
            first.state.as_deref(),
            Some("block 1 timed out on the device")
        );
    }

    /// A strategy that forgets to report its check records.
    struct ReportsNothing;

    impl Strategy for ReportsNothing {
        fn iteration(&mut self, _iteration: u32) -> Result<()> {
            Ok(())
        }
        fn report(&mut self, _observer: &mut dyn Observer) -> Result<()> {
            Ok(())
        }
        fn buffer_coherence(&self) -> (haloport_core::Coherence, haloport_core::Coherence) {
            (
                haloport_core::Coherence::Coherent,
                haloport_core::Coherence::Coherent,
            )
        }
    }

    #[test]
    fn an_iteration_without_check_records_is_an_error_not_a_pass() {
        let protocol = Protocol {
            iterations: 2,
            warmup: 1,
            runs: 1,
        };
        let msg = measure(&mut ReportsNothing, 0, protocol, |_, _| {})
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("reported its check records 0 times for one iteration"),
            "{msg}"
        );
    }

    /// A strategy with `depth` iterations in flight that does nothing but report empty checks.
    struct InFlight {
        depth: u32,
    }

    impl Strategy for InFlight {
        fn iteration(&mut self, _iteration: u32) -> Result<()> {
            Ok(())
        }
        fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
            observer.checks(BlockChecks {
                records: &[],
                planned: &[],
                state: &|_| None,
            });
            Ok(())
        }
        fn buffer_coherence(&self) -> (haloport_core::Coherence, haloport_core::Coherence) {
            (
                haloport_core::Coherence::Coherent,
                haloport_core::Coherence::Coherent,
            )
        }
        fn pipeline_depth(&self) -> u32 {
            self.depth
        }
    }

    #[test]
    fn the_measurement_times_a_pipelined_strategy_by_its_periods() {
        let protocol = Protocol {
            iterations: 5,
            warmup: 1,
            runs: 1,
        };
        let outcome =
            measure(&mut InFlight { depth: 2 }, 0, protocol, |_, _| {}).expect("measured");
        // Pipelined, each measured iteration starts where the one before it ended.
        let timeline = &outcome.raw_timeline;
        assert_eq!(timeline.len(), 4);
        for pair in timeline.windows(2) {
            assert_eq!(pair[1].cpu_start_ns, pair[0].cpu_end_ns, "{timeline:?}");
        }
    }

    #[test]
    fn a_pipelined_iteration_lasts_the_period_over_its_depth() {
        // Stamps in ms: each call comes 2 ms after the previous end (the untimed verification),
        // and every other call waits 6 ms more for both epochs in flight.
        let calls_and_ends = [(0, 1), (3, 10), (12, 13), (15, 22), (24, 25), (27, 34)];
        let times = |depth| {
            let mut periods = Periods::new(depth);
            calls_and_ends
                .iter()
                .map(|&(called, end)| periods.time(called * 1000, end * 1000))
                .collect::<Vec<_>>()
        };
        // Two periods hold one 6 ms wait: 6 ms each once two ends are known, measured from
        // the previous end; not alternately 9 and 3.
        assert_eq!(
            times(2),
            [
                (0, 1000.0),
                (1000, 9000.0),
                (10000, 6000.0),
                (13000, 6000.0),
                (22000, 6000.0),
                (25000, 6000.0)
            ]
        );
        // Not pipelined (depth 0 counts as 1), every iteration lasts from its call.
        assert_eq!(
            times(0),
            [
                (0, 1000.0),
                (3000, 7000.0),
                (12000, 1000.0),
                (15000, 7000.0),
                (24000, 1000.0),
                (27000, 7000.0)
            ]
        );
        assert_eq!(times(1), times(0));
    }
}
