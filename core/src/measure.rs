//! The measurement protocol (SPEC 6, thesis 4.2): runs of iterations, the first few of each
//! run warm-up, every iteration timed on the CPU and verified.
//!
//! An iteration's time runs from just before the strategy starts it to just after its closing
//! barrier. Verification (reading the kernels' check records) happens after the timed region.
//! Global iteration numbers run on across runs, so a stale buffer from an earlier run can never
//! carry the expected value.

use serde::{Deserialize, Serialize};

use crate::clock::{host_now_ns, ClockFit};
use crate::error::{Error, Result};
use crate::strategy::{EventProfile, Strategy};
use crate::timeline::{convert, IterationTimeline, RawIteration};

/// Most wrong-value records one rank keeps; all of them are counted.
pub const MAX_RECORDED_ERRORS: usize = 100;

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
        if u64::from(self.iterations) * u64::from(self.runs) > u64::from(u32::MAX / 2) {
            return Err(Error::InvalidInput(format!(
                "{} runs of {} iterations are too many",
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

/// What one rank measured and verified.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankOutcome {
    /// The rank.
    pub rank: i32,
    /// Measured iteration times in microseconds, run after run.
    pub iteration_us: Vec<f64>,
    /// Elements checked by unpack, over all blocks and iterations.
    pub checked: u64,
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
            iteration_us: Vec::with_capacity((protocol.runs * protocol.measured()) as usize),
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
    let rank = outcome.rank;
    // The first iteration's check records start zeroed; clear anything a previous user left.
    strategy.take_checks();
    for it in 0..protocol.iterations {
        // Global iteration numbers run on across runs: a stale buffer never holds the value
        // the current iteration expects.
        let global = run * protocol.iterations + it;
        strategy.prepare(global)?;
        let start = host_now_ns();
        strategy.iteration(global)?;
        let end = host_now_ns();
        let measured = it >= protocol.warmup;
        if measured {
            outcome.iteration_us.push((end - start) as f64 / 1e3);
        }
        if measured && run + 1 == protocol.runs {
            outcome.raw_timeline.push(RawIteration {
                iteration: it,
                cpu_start_ns: start,
                cpu_end_ns: end,
                device: RawIteration::device_stamps(&strategy.device_times()),
                cpu: strategy.take_cpu_events(),
            });
        }
        // Events of iterations not kept are taken and dropped, so they never pile up.
        strategy.take_cpu_events();
        if let Some(profile) = strategy.take_profile() {
            if measured {
                outcome
                    .profile
                    .get_or_insert_with(EventProfile::default)
                    .merge(&profile);
            }
        }
        for (block, check) in strategy.take_checks().into_iter().enumerate() {
            outcome.checked += u64::from(check.checked);
            if check.wrong > 0 {
                outcome.wrong += u64::from(check.wrong);
                if outcome.errors.len() < MAX_RECORDED_ERRORS {
                    outcome.errors.push(WrongValue {
                        rank,
                        block,
                        run,
                        iteration: it,
                        index: check.first_index,
                        expected: check.first_expected,
                        found: check.first_found,
                        wrong_in_block: check.wrong,
                    });
                }
            }
        }
        on_iteration(run, it);
    }
    Ok(())
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
    }
}
