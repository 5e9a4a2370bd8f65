//! `haloport run`: one variant on one workload, verified and timed, with a summary on rank 0
//! and optionally a JSON result file.

use std::time::Duration;

use anyhow::Context;
use haloport::core::clock::{ping_pong, ClockFit};
use haloport::core::collective::{agree_on_pattern, all_gather};
use haloport::core::measure::{measure, RankOutcome, WrongValue};
use haloport::core::pattern::RankPattern;
use haloport::core::stats::Summary;
use haloport::core::strategy::{Baseline, ExchangeOptions, Strategy};
use haloport::core::timeline::BlockPhases;
use haloport::core::transport::mpi::MpiTransport;
use haloport::core::{Backend, Coherence, Error, Variant};
use haloport::provenance::provenance;
use haloport::results::{per_run, summary, verification, RunResult, RESULT_FORMAT};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::cli::{BackendKind, RunArgs};
use crate::commands::{host_name, local_rank, mpi_library};

/// Ping-pong samples taken before and after the measurement, each (SPEC 6).
const CLOCK_SAMPLES: u32 = 16;

pub fn run(world: &SimpleCommunicator, args: &RunArgs) -> anyhow::Result<()> {
    let rank = world.rank();
    args.protocol().validate()?;
    let elems = args.workload.block_elems();
    let mine = args.pattern.resolve(rank, world.size(), &elems);
    let patterns = agree_on_pattern(world, mine)?;
    let local = local_rank(world);
    match args.backend {
        BackendKind::Host => {
            #[cfg(feature = "host")]
            return execute(
                &haloport::host::HostBackend::new(local)?,
                world,
                args,
                &patterns,
            );
        }
        BackendKind::Cuda => {
            #[cfg(feature = "cuda")]
            return execute(
                &haloport::cuda::CudaBackend::new(local)?,
                world,
                args,
                &patterns,
            );
        }
        BackendKind::Hip => {}
    }
    let _ = (local, &patterns);
    Err(not_built(args.backend).into())
}

/// The error for a backend this binary cannot run.
pub fn not_built(kind: BackendKind) -> Error {
    let built = env!("HALOPORT_BACKENDS");
    Error::InvalidInput(format!(
        "the {} backend is not available in this binary (built with: {built}); the host backend runs everywhere",
        kind.name()
    ))
}

fn make_strategy<'b, B: Backend>(
    backend: &'b B,
    world: &SimpleCommunicator,
    args: &RunArgs,
    pattern: &RankPattern,
) -> anyhow::Result<Box<dyn Strategy + 'b>> {
    let transport = MpiTransport::new(world)?;
    let exchange = ExchangeOptions {
        timeout: Duration::from_secs_f64(args.timeout),
        fault: args.inject,
    };
    let threads = args.workload.threads();
    match args.variant {
        Variant::Baseline(options) => Ok(Box::new(Baseline::new(
            backend, transport, pattern, threads, options, exchange,
        )?)),
        other => Err(Error::InvalidInput(format!("variant {other} has no strategy yet")).into()),
    }
}

fn execute<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    args: &RunArgs,
    patterns: &[RankPattern],
) -> anyhow::Result<()> {
    let rank = world.rank();
    let protocol = args.protocol();
    let pattern = &patterns[rank as usize];
    let timeout = Duration::from_secs_f64(args.timeout);
    let mut clock_samples =
        ping_pong(backend, CLOCK_SAMPLES, timeout).context("aligning clocks before the run")?;
    let (mut outcome, coherence) = {
        let mut strategy = make_strategy(backend, world, args, pattern).with_context(|| {
            format!(
                "setting up {} on the {} backend",
                args.variant,
                backend.name()
            )
        })?;
        world.barrier();
        let outcome = measure(strategy.as_mut(), rank, protocol, |_, _| {})
            .with_context(|| format!("running {}", args.variant))?;
        (outcome, strategy.buffer_coherence())
    };
    clock_samples.extend(
        ping_pong(backend, CLOCK_SAMPLES, timeout).context("aligning clocks after the run")?,
    );
    match ClockFit::fit(&clock_samples) {
        Some(fit) => outcome.attach_clock(fit),
        None => tracing::warn!(
            "rank {rank}: no clock fit through {} samples",
            clock_samples.len()
        ),
    }
    let outcomes = all_gather(world, Ok(outcome), |r, msg| {
        Error::InvalidInput(format!("rank {r} could not report its results: {msg}"))
    })?;
    let (verified, checked, wrong, errors) = verification(&outcomes);
    if rank == 0 {
        let result = build_result(
            backend,
            args,
            patterns,
            &outcomes,
            coherence,
            (verified, checked, wrong, errors),
        );
        print_summary(&result);
        if let Some(path) = &args.json {
            let text = serde_json::to_string_pretty(&result)?;
            std::fs::write(path, text + "\n").map_err(|source| Error::Io {
                path: path.display().to_string(),
                source,
            })?;
            println!("result written to {}", path.display());
        }
    }
    if !verified {
        return Err(Error::VerificationFailed(format!(
            "{wrong} of {checked} checked elements were wrong"
        ))
        .into());
    }
    Ok(())
}

fn build_result<B: Backend>(
    backend: &B,
    args: &RunArgs,
    patterns: &[RankPattern],
    outcomes: &[RankOutcome],
    (buffers, served): (Coherence, Coherence),
    (verified, checked, wrong, errors): (bool, u64, u64, Vec<WrongValue>),
) -> RunResult {
    let protocol = args.protocol();
    let rank0 = &outcomes[0];
    let stats = summary(rank0);
    RunResult {
        format: RESULT_FORMAT,
        build: provenance(),
        host: host_name(),
        mpi_library: mpi_library(),
        backend: backend.name().to_owned(),
        device: backend.device_info().clone(),
        variant: args.variant.name(),
        strategy: args.variant.strategy().to_owned(),
        workload: args.workload.name().to_owned(),
        pattern: args.pattern.name(),
        ranks: patterns.len() as i32,
        blocks: patterns[0].blocks.len(),
        threads: args.workload.threads(),
        iterations: protocol.iterations,
        warmup: protocol.warmup,
        runs: protocol.runs,
        buffers_requested: buffers,
        buffers_served: served,
        iteration_us: per_run(rank0, protocol),
        median_us: stats.median,
        mean_us: stats.mean,
        stddev_us: stats.stddev,
        min_us: stats.min,
        max_us: stats.max,
        verified,
        checked,
        wrong,
        errors,
        patterns: patterns.to_vec(),
        clock: outcomes.iter().map(|o| o.clock).collect(),
        timelines: outcomes.iter().map(|o| o.timeline.clone()).collect(),
        timeout_s: args.timeout,
        fault: args.inject.map(|f| f.to_string()),
    }
}

fn print_summary(r: &RunResult) {
    let bytes: u64 = r.patterns[0].blocks.iter().map(|b| b.elems * 8).sum();
    println!(
        "haloport run: {} on {} ({}), workload {} ({} blocks x {} threads, {:.2} MB per rank and direction), pattern {}, {} ranks",
        r.variant,
        r.backend,
        r.device.name,
        r.workload,
        r.blocks,
        r.threads,
        bytes as f64 / 1e6,
        r.pattern,
        r.ranks
    );
    if r.buffers_requested != r.buffers_served {
        println!(
            "buffers: {} requested, served as {} by this backend",
            r.buffers_requested, r.buffers_served
        );
    }
    let measured: usize = r.iteration_us.iter().map(Vec::len).sum();
    println!(
        "protocol: {} runs x {} iterations ({} warm-up): {measured} measured iterations",
        r.runs, r.iterations, r.warmup
    );
    println!(
        "time per iteration (rank 0): median {:.1} us, mean {:.1} us, stddev {:.1} us, min {:.1} us, max {:.1} us",
        r.median_us, r.mean_us, r.stddev_us, r.min_us, r.max_us
    );
    print_device_phases(r);
    println!(
        "verified: {} ({} elements checked on {} ranks, {} wrong)",
        r.verified, r.checked, r.ranks, r.wrong
    );
    for e in r.errors.iter().take(10) {
        println!(
            "  wrong value: rank {} block {} run {} iteration {}: element {} expected {} found {} ({} wrong in block)",
            e.rank, e.block, e.run, e.iteration, e.index, e.expected, e.found, e.wrong_in_block
        );
    }
    if r.errors.len() > 10 {
        println!("  ... {} more recorded wrong values", r.errors.len() - 10);
    }
}

/// Rank 0's kernel phases over the last run, from the device timeline, and its clock fit.
fn print_device_phases(r: &RunResult) {
    let (Some(Some(fit)), Some(timeline)) = (r.clock.first(), r.timelines.first()) else {
        println!("device timeline: none (no clock fit)");
        return;
    };
    let phase = |pick: fn(&BlockPhases) -> [f64; 2]| {
        let spans: Vec<f64> = timeline
            .iter()
            .map(|it| {
                let first = it
                    .blocks
                    .iter()
                    .map(|b| pick(b)[0])
                    .fold(f64::INFINITY, f64::min);
                let last = it
                    .blocks
                    .iter()
                    .map(|b| pick(b)[1])
                    .fold(f64::NEG_INFINITY, f64::max);
                last - first
            })
            .collect();
        Summary::of(&spans).map_or(0.0, |s| s.median)
    };
    println!(
        "device (rank 0, last run, median): pack {:.1} us, unpack {:.1} us, first to last block; clock fit {:.6} ns/tick, uncertainty {:.0} ns (residual rms {:.0} ns, half round trip {:.0} ns, {} samples)",
        phase(|b| b.pack_us),
        phase(|b| b.unpack_us),
        fit.slope,
        fit.uncertainty_ns,
        fit.residual_rms_ns,
        fit.half_round_trip_ns,
        fit.samples
    );
}
