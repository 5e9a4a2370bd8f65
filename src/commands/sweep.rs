//! `haloport sweep`: every requested variant on every requested workload in one MPI job, the
//! `mpi-only` floor included, with the thesis's protocol by default (13 iterations, 3 warm-up,
//! 40 runs). Runs are interleaved: run r of every (workload, variant) comes before run r + 1 of
//! any, each on a freshly set-up strategy, so drift on a noisy machine hits all variants alike.
//!
//! Durability (see [`haloport_cli::results::sweep_dir`] for the layout): rank 0 first writes the
//! sweep's manifest, after moving an earlier sweep's files aside; after each finished unit
//! (workload, variant, run) every rank's outcome is gathered and rank 0 writes it under
//! `DIR/cells/`. Only when every unit is on disk does rank 0 assemble `sweep.json` (the clock fit
//! attached) and `sweep.csv`, and print the headline table. `--resume DIR` alone runs with the
//! options the manifest recorded; with options, checks them against the manifest; either way
//! it runs only the units missing. Duplicated workloads or variants
//! run once. Every error of a unit names it: variant, workload and run.
//!
//! Threading: one thread per rank; rank 0 alone touches the directory and shares its answers
//! (what to run, refusals, the verdict) with the other ranks through collectives.

use std::path::Path;

use anyhow::{bail, Context};
use clap::Parser;
use haloport::core::clock::ClockFit;
use haloport::core::collective::{agree_on_pattern, all_gather};
use haloport::core::pattern::RankPattern;
use haloport::core::transport::node::nodes_of_every_rank;
use haloport::core::{Backend, Error};
use haloport_cli::report::{headline, markdown, Measured};
use haloport_cli::results::sweep_dir::{self, Manifest, SweepPlan, Unit};
use haloport_cli::results::{ResultHeader, SweepResult};
use haloport_thesis::measure::{measure_run, RankOutcome};
use haloport_thesis::{Variant, Workload};
use indicatif::{ProgressBar, ProgressStyle};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use serde::{de::DeserializeOwned, Serialize};

use crate::cli::SweepArgs;
use crate::commands::exchange::{
    dispatch, gather_outcomes, header, make_strategy, ClockAlignment, OnBackend,
};
use crate::commands::local_rank;

/// Test hook: stop the sweep with an error after this many units of this job were written, as
/// an interruption would, so tests can check what an interrupted sweep leaves behind and that
/// `--resume` finishes it. Not for users; unset, it does nothing.
const STOP_AFTER_VAR: &str = "HALOPORT_SWEEP_STOP_AFTER";

/// Runs the sweep `args` asks for, every rank alike.
///
/// # Errors
/// Bad input and refused resumes (collective, exit 2); a failed unit, named by variant,
/// workload and run; wrong values in any cell (after the results are written).
pub fn run(world: &SimpleCommunicator, args: &SweepArgs) -> anyhow::Result<()> {
    let recorded;
    let args = match &args.resume {
        Some(dir) if resumed_alone() => {
            recorded = recorded_args(world, dir, args.quiet)?;
            &recorded
        }
        _ => args,
    };
    args.protocol.protocol().validate()?;
    let stop_after = stop_after()?;
    let (workloads, repeated) = args.workload_list();
    if !repeated.is_empty() && world.rank() == 0 {
        let names: Vec<&str> = repeated.iter().map(|w| w.name()).collect();
        eprintln!(
            "note: workload {} named more than once: each runs once",
            names.join(", ")
        );
    }
    let mut patterns = Vec::new();
    for &workload in &workloads {
        let mine = args
            .pattern
            .resolve(world.rank(), world.size(), &workload.block_elems());
        patterns.push(agree_on_pattern(world, mine)?);
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).map_err(|source| Error::Io {
            path: out.display().to_string(),
            source,
        })?;
    }
    dispatch(
        args.backend,
        local_rank(world),
        Sweep {
            world,
            args,
            workloads,
            patterns,
            stop_after,
        },
    )
}

/// This process's command line after `sweep`.
fn sweep_argv() -> Vec<String> {
    std::env::args()
        .skip_while(|a| a != "sweep")
        .skip(1)
        .collect()
}

/// The options worth recording in the manifest: the command line less `--out DIR` and
/// `--quiet` (a resume names its own directory and may be quiet or not).
fn options_to_record() -> Vec<String> {
    let mut kept = Vec::new();
    let mut argv = sweep_argv().into_iter();
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--out" => {
                argv.next();
            }
            "--quiet" => {}
            _ if a.starts_with("--out=") => {}
            _ => kept.push(a),
        }
    }
    kept
}

/// Whether the command line is `sweep --resume DIR` with nothing else (but `--quiet`): the
/// sweep then runs with the options its manifest recorded.
fn resumed_alone() -> bool {
    let mut argv = sweep_argv().into_iter();
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--resume" => {
                argv.next();
            }
            "--quiet" => {}
            _ if a.starts_with("--resume=") => {}
            _ => return false,
        }
    }
    true
}

/// The options the sweep in `dir` was started with (rank 0 reads its manifest and tells every
/// rank), as arguments of a resume of it.
///
/// # Errors
/// A directory without a manifest, or with one written before options were recorded.
fn recorded_args(world: &SimpleCommunicator, dir: &Path, quiet: bool) -> anyhow::Result<SweepArgs> {
    let recorded = if world.rank() == 0 {
        sweep_dir::read_manifest(dir).and_then(|m| {
            if m.args.is_empty() {
                bail!(
                    "the manifest in {} does not record the sweep's options (it predates them): run the command that started it, with --resume in place of --out",
                    dir.display()
                );
            }
            Ok(m.args)
        })
    } else {
        Ok(Vec::new())
    };
    let mut argv: Vec<String> = vec!["haloport".into(), "sweep".into()];
    argv.extend(from_rank0(world, recorded)?);
    argv.extend(["--resume".into(), dir.display().to_string()]);
    if quiet {
        argv.push("--quiet".into());
    }
    match crate::cli::Cli::try_parse_from(&argv) {
        Ok(crate::cli::Cli {
            command: crate::cli::Command::Sweep(args),
        }) => Ok(args),
        Ok(_) => bail!("the manifest in {} does not record a sweep", dir.display()),
        Err(e) => bail!(
            "the options recorded in the manifest in {} no longer parse: {e}",
            dir.display()
        ),
    }
}

/// Reads [`STOP_AFTER_VAR`].
fn stop_after() -> anyhow::Result<Option<usize>> {
    match std::env::var(STOP_AFTER_VAR) {
        Err(_) => Ok(None),
        Ok(v) => v.trim().parse().map(Some).map_err(|_| {
            Error::InvalidInput(format!("{STOP_AFTER_VAR}={v} is not a number of runs")).into()
        }),
    }
}

struct Sweep<'a> {
    world: &'a SimpleCommunicator,
    args: &'a SweepArgs,
    /// Workloads, each once.
    workloads: Vec<Workload>,
    /// Per workload, every rank's pattern.
    patterns: Vec<Vec<RankPattern>>,
    /// See [`STOP_AFTER_VAR`].
    stop_after: Option<usize>,
}

/// Shares rank 0's `answer` (or its error, as a collective error every rank returns) with every
/// rank; the other ranks' contributions are ignored.
fn from_rank0<T: Serialize + DeserializeOwned + Default>(
    world: &SimpleCommunicator,
    answer: anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mine = if world.rank() == 0 {
        answer.map_err(|e| format!("{e:#}"))
    } else {
        Ok(T::default())
    };
    let mut all = all_gather(world, mine, |_, msg| Error::InvalidInput(msg))?;
    Ok(all.swap_remove(0))
}

/// Rank 0: makes `dir` ready and says which units to run. A new sweep moves an earlier one
/// aside and writes the manifest; a resume checks the manifest against `plan` and returns only
/// what is missing.
fn prepare(
    dir: &Path,
    plan: &SweepPlan,
    resume: bool,
    header: &ResultHeader,
) -> anyhow::Result<Vec<(usize, usize, u32)>> {
    let units = if resume {
        let manifest = sweep_dir::read_manifest(dir)?;
        let differences = manifest.plan.differences(plan);
        if !differences.is_empty() {
            bail!(
                "cannot resume the sweep in {}: it was started with other options (run `haloport sweep --resume DIR` alone to use those its manifest recorded):\n  {}",
                dir.display(),
                differences.join("\n  ")
            );
        }
        let missing = sweep_dir::missing(dir, plan);
        if !missing.is_empty() {
            sweep_dir::remove_assembled(dir)?;
        }
        missing
    } else {
        let manifest = Manifest {
            format: sweep_dir::SWEEP_DIR_FORMAT,
            plan: plan.clone(),
            args: options_to_record(),
            header: serde_json::to_value(header)?,
        };
        if let Some(aside) = sweep_dir::start_fresh(dir, &manifest)? {
            eprintln!(
                "note: moved the earlier sweep's files in {} to {}",
                dir.display(),
                aside.display()
            );
        }
        plan.units()
    };
    Ok(units
        .into_iter()
        .map(|u| (u.workload, u.variant, u.run))
        .collect())
}

impl OnBackend for Sweep<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let Sweep {
            world,
            args,
            workloads,
            patterns,
            stop_after,
        } = self;
        let rank = world.rank();
        let protocol = args.protocol.protocol();
        let exchange = args.exchange.options(None);
        let variants = args.variant_list();
        let dir = args.dir();
        let plan = SweepPlan {
            backend: backend.name().to_owned(),
            ranks: world.size(),
            pattern: args.pattern.name(),
            iterations: protocol.iterations,
            warmup: protocol.warmup,
            runs: protocol.runs,
            flag_stride: exchange.flag_stride,
            poll_backoff_ns: exchange.poll_backoff_ns,
            verify: exchange.verify.name().to_owned(),
            barrier: exchange.barrier,
            ipc_chunks: exchange.ipc_chunks,
            lib_blocks: exchange.lib_blocks,
            variants: variants.iter().map(Variant::name).collect(),
            workloads: workloads.iter().map(|w| w.name().to_owned()).collect(),
            patterns: patterns.clone(),
            nodes: nodes_of_every_rank(world)?,
        };
        let start_header = header(
            backend,
            "sweep",
            world.size(),
            args.pattern.name(),
            protocol,
            &exchange,
            Vec::new(),
        );
        let prepared = if rank == 0 {
            prepare(dir, &plan, args.resume.is_some(), &start_header)
        } else {
            Ok(Vec::new())
        };
        let todo: Vec<Unit> = from_rank0(world, prepared)?
            .into_iter()
            .map(|(workload, variant, run)| Unit {
                workload,
                variant,
                run,
            })
            .collect();
        let total = plan.units().len();

        let progress = (rank == 0 && !args.quiet).then(|| {
            let bar = ProgressBar::new(todo.len() as u64);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        let clock = ClockAlignment::start(backend, exchange.timeout)?;
        for (done, &unit) in todo.iter().enumerate() {
            let context = || plan.label(unit);
            if let Some(bar) = &progress {
                bar.set_message(context());
            }
            let workload = workloads[unit.workload];
            let mut strategy = make_strategy(
                backend,
                world,
                variants[unit.variant],
                workload.threads(),
                &patterns[unit.workload],
                exchange,
            )
            .with_context(context)?;
            world.barrier();
            let mut outcome = RankOutcome::new(rank, protocol);
            measure_run(
                strategy.as_mut(),
                &mut outcome,
                protocol,
                unit.run,
                &mut |_, _| {},
            )
            .with_context(context)?;
            let coherence = strategy.buffer_coherence();
            drop(strategy);
            let outcomes = gather_outcomes(world, outcome).with_context(context)?;
            if rank == 0 {
                sweep_dir::write_run(dir, &plan, unit, coherence, &outcomes)
                    .with_context(context)?;
            }
            if let Some(bar) = &progress {
                bar.inc(1);
            }
            if stop_after == Some(done + 1) && done + 1 < todo.len() {
                if let Some(bar) = &progress {
                    bar.abandon();
                }
                return Err(Error::InvalidInput(format!(
                    "sweep stopped after {} of {} runs as {STOP_AFTER_VAR} asks (a test hook); the finished runs are in {}, `sweep --resume` runs the rest",
                    done + 1,
                    todo.len(),
                    dir.join(sweep_dir::CELLS).display()
                ))
                .into());
            }
        }
        if let Some(bar) = progress {
            bar.finish_with_message("done");
        }
        let fit = clock.finish(backend, rank)?;
        let fits: Vec<Option<ClockFit>> = all_gather(world, Ok(fit), |r, msg| {
            Error::InvalidInput(format!("rank {r} could not report its clock fit: {msg}"))
        })?;

        let assembled = if rank == 0 {
            let header = header(
                backend,
                "sweep",
                world.size(),
                args.pattern.name(),
                protocol,
                &exchange,
                fits.clone(),
            );
            assemble(dir, &plan, &fits, header).map(|(sweep, failed)| {
                println!(
                    "haloport sweep: {} variants (and mpi-only) x {} workloads x {} runs on {} ({}), {} ranks",
                    plan.variants.len() - 1,
                    plan.workloads.len(),
                    protocol.runs,
                    backend.name(),
                    backend.device_info().name,
                    world.size()
                );
                if args.resume.is_some() {
                    println!(
                        "resumed: ran the {} of {total} runs missing from {}",
                        todo.len(),
                        dir.display()
                    );
                }
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
                print!("{}", markdown(&headline(&measured)));
                println!(
                    "written: {} and {}",
                    dir.join(sweep_dir::SWEEP_JSON).display(),
                    dir.join(sweep_dir::SWEEP_CSV).display()
                );
                failed
            })
        } else {
            Ok(Vec::new())
        };
        let failed: Vec<String> = from_rank0(world, assembled)?;
        if !failed.is_empty() {
            return Err(Error::VerificationFailed(failed.join(", ")).into());
        }
        Ok(())
    }
}

/// Rank 0: builds `sweep.json` and `sweep.csv` from every unit on disk, each rank's clock fit
/// attached, and writes them. Returns the sweep and the cells that failed verification.
fn assemble(
    dir: &Path,
    plan: &SweepPlan,
    fits: &[Option<ClockFit>],
    header: ResultHeader,
) -> anyhow::Result<(SweepResult, Vec<String>)> {
    let missing = sweep_dir::missing(dir, plan);
    if !missing.is_empty() {
        bail!(
            "{} lost runs while the sweep ran:\n  {}",
            dir.display(),
            sweep_dir::describe_missing(plan, &missing).join("\n  ")
        );
    }
    let mut results = Vec::new();
    for workload in 0..plan.workloads.len() {
        for variant in 0..plan.variants.len() {
            let cell = sweep_dir::assemble_cell(dir, plan, workload, variant, Some(fits))?
                .with_context(|| {
                    format!(
                        "{} on {}: no run on disk",
                        plan.variants[variant], plan.workloads[workload]
                    )
                })?;
            results.push(cell);
        }
    }
    let sweep = SweepResult {
        header,
        variants: plan.variants.clone(),
        workloads: plan.workloads.clone(),
        results,
    };
    sweep_dir::write_atomic(
        &dir.join(sweep_dir::SWEEP_JSON),
        (serde_json::to_string(&sweep)? + "\n").as_bytes(),
    )?;
    sweep_dir::write_atomic(&dir.join(sweep_dir::SWEEP_CSV), sweep.csv().as_bytes())?;
    let failed = sweep
        .results
        .iter()
        .filter(|r| !r.verified)
        .map(|r| format!("{} on {} ({} wrong)", r.variant, r.workload, r.wrong))
        .collect();
    Ok((sweep, failed))
}
