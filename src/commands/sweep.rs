//! `haloport sweep`: every requested variant on every requested workload in one MPI job, the
//! `mpi-only` floor included, with the thesis's protocol by default (13 iterations, 3 warm-up,
//! 40 runs). Runs are interleaved: run r of every (workload, variant) comes before run r + 1 of
//! any, each on a freshly set-up strategy, so drift on a noisy machine hits all variants alike.
//! Writes `sweep.json` (self-describing) and `sweep.csv` (one row per variant, workload, run)
//! and prints the headline table on rank 0.

use anyhow::Context;
use haloport::core::collective::agree_on_pattern;
use haloport::core::measure::{measure_run, RankOutcome};
use haloport::core::pattern::RankPattern;
use haloport::core::{Backend, Coherence, Error, Variant, Workload};
use haloport::report::{headline, markdown, Measured};
use haloport::results::{SweepResult, VariantResult};
use indicatif::{ProgressBar, ProgressStyle};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::cli::SweepArgs;
use crate::commands::exchange::{
    dispatch, gather_outcomes, header, make_strategy, write_json, ClockAlignment, OnBackend,
};
use crate::commands::local_rank;

pub fn run(world: &SimpleCommunicator, args: &SweepArgs) -> anyhow::Result<()> {
    args.protocol.protocol().validate()?;
    let mut patterns = Vec::new();
    for &workload in &args.workloads.0 {
        let mine = args
            .pattern
            .resolve(world.rank(), world.size(), &workload.block_elems());
        patterns.push(agree_on_pattern(world, mine)?);
    }
    std::fs::create_dir_all(&args.out).map_err(|source| Error::Io {
        path: args.out.display().to_string(),
        source,
    })?;
    dispatch(
        args.backend,
        local_rank(world),
        Sweep {
            world,
            args,
            patterns,
        },
    )
}

struct Sweep<'a> {
    world: &'a SimpleCommunicator,
    args: &'a SweepArgs,
    /// Per workload, every rank's pattern.
    patterns: Vec<Vec<RankPattern>>,
}

/// One (workload, variant) cell of the sweep on this rank.
struct Cell {
    workload: Workload,
    variant: Variant,
    patterns: usize,
    outcome: RankOutcome,
    coherence: (Coherence, Coherence),
}

impl OnBackend for Sweep<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let Sweep {
            world,
            args,
            patterns,
        } = self;
        let rank = world.rank();
        let protocol = args.protocol.protocol();
        let exchange = args.exchange.options(None);
        let variants = args.variant_list();
        let mut cells: Vec<Cell> = Vec::new();
        for (w, &workload) in args.workloads.0.iter().enumerate() {
            for &variant in &variants {
                cells.push(Cell {
                    workload,
                    variant,
                    patterns: w,
                    outcome: RankOutcome::new(rank, protocol),
                    coherence: (Coherence::Coherent, Coherence::Coherent),
                });
            }
        }
        let progress = (rank == 0 && !args.quiet).then(|| {
            let bar = ProgressBar::new((cells.len() as u64) * u64::from(protocol.runs));
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });

        let clock = ClockAlignment::start(backend, exchange.timeout)?;
        for run in 0..protocol.runs {
            for cell in &mut cells {
                if let Some(bar) = &progress {
                    bar.set_message(format!("{} {}", cell.workload, cell.variant));
                }
                let pattern = &patterns[cell.patterns][rank as usize];
                let context = || format!("{} on {}, run {run}", cell.variant, cell.workload);
                let mut strategy = make_strategy(
                    backend,
                    world,
                    cell.variant,
                    cell.workload.threads(),
                    pattern,
                    exchange,
                )
                .with_context(context)?;
                world.barrier();
                measure_run(
                    strategy.as_mut(),
                    &mut cell.outcome,
                    protocol,
                    run,
                    &mut |_, _| {},
                )
                .with_context(context)?;
                cell.coherence = strategy.buffer_coherence();
                if let Some(bar) = &progress {
                    bar.inc(1);
                }
            }
        }
        if let Some(bar) = progress {
            bar.finish_with_message("done");
        }
        let fit = clock.finish(backend, rank)?;

        let mut results = Vec::with_capacity(cells.len());
        let mut fits = Vec::new();
        for mut cell in cells {
            if let Some(fit) = fit {
                cell.outcome.attach_clock(fit);
            }
            let outcomes = gather_outcomes(world, cell.outcome)?;
            if fits.is_empty() {
                fits = outcomes.iter().map(|o| o.clock).collect();
            }
            results.push(VariantResult::from_outcomes(
                &cell.variant,
                cell.workload,
                &patterns[cell.patterns],
                &outcomes,
                protocol,
                cell.coherence,
            ));
        }
        let sweep = SweepResult {
            header: header(
                backend,
                "sweep",
                world.size(),
                args.pattern.name(),
                protocol,
                &exchange,
                fits,
            ),
            variants: variants.iter().map(Variant::name).collect(),
            workloads: args
                .workloads
                .0
                .iter()
                .map(|w| w.name().to_owned())
                .collect(),
            results,
        };
        if rank == 0 {
            let json = args.out.join("sweep.json");
            write_json(&json, &sweep, false)?;
            let csv = args.out.join("sweep.csv");
            std::fs::write(&csv, sweep.csv()).map_err(|source| Error::Io {
                path: csv.display().to_string(),
                source,
            })?;
            let measured: Vec<Measured> = sweep
                .results
                .iter()
                .map(|r| Measured {
                    variant: r.variant.clone(),
                    workload: r.workload.clone(),
                    median_us: r.median_us,
                    stddev_us: r.stddev_us,
                    verified: r.verified,
                })
                .collect();
            println!(
                "haloport sweep: {} variants (and mpi-only) x {} workloads x {} runs on {} ({}), {} ranks",
                variants.len() - 1,
                args.workloads.0.len(),
                protocol.runs,
                backend.name(),
                backend.device_info().name,
                world.size()
            );
            print!("{}", markdown(&headline(&measured)));
            println!("written: {} and {}", json.display(), csv.display());
        }
        let failed: Vec<String> = sweep
            .results
            .iter()
            .filter(|r| !r.verified)
            .map(|r| format!("{} on {} ({} wrong)", r.variant, r.workload, r.wrong))
            .collect();
        if !failed.is_empty() {
            return Err(Error::VerificationFailed(failed.join(", ")).into());
        }
        Ok(())
    }
}
