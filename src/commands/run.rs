//! `haloport run`: one variant on one workload, verified and timed, with a summary on rank 0
//! and optionally a JSON result file.

use anyhow::Context;
use haloport::core::collective::agree_on_pattern;
use haloport::core::pattern::RankPattern;
use haloport::core::transport::node::nodes_of_every_rank;
use haloport::core::verify::decode_value;
use haloport::core::{Backend, Error};
use haloport_cli::results::{RunResult, VariantResult};
use haloport_thesis::measure::measure;
use haloport_thesis::stats::Summary;
use haloport_thesis::timeline::BlockPhases;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::cli::RunArgs;
use crate::commands::exchange::{
    check_writable, dispatch, gather_outcomes, header, make_strategy, write_json, ClockAlignment,
    OnBackend,
};
use crate::commands::local_rank;

pub fn run(world: &SimpleCommunicator, args: &RunArgs) -> anyhow::Result<()> {
    args.protocol.protocol().validate()?;
    let elems = args.workload.block_elems();
    let mine = args.pattern.resolve(world.rank(), world.size(), &elems);
    let patterns = agree_on_pattern(world, mine)?;
    if let Some(fault) = args.inject {
        let blocks = patterns.iter().map(|p| p.blocks.len()).max().unwrap_or(0);
        fault.check_block_exists(blocks)?;
    }
    check_writable(world, args.json.as_deref())?;
    check_transport(args)?;
    dispatch(
        args.backend,
        local_rank(world),
        RunOne {
            world,
            args,
            patterns: &patterns,
        },
    )
}

struct RunOne<'a> {
    world: &'a SimpleCommunicator,
    args: &'a RunArgs,
    patterns: &'a [RankPattern],
}

impl OnBackend for RunOne<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let RunOne {
            world,
            args,
            patterns,
        } = self;
        let rank = world.rank();
        let protocol = args.protocol.protocol();
        let exchange = args.exchange.options(args.inject);
        let clock = ClockAlignment::start(backend, exchange.timeout)?;
        let (mut outcome, coherence) = {
            let mut strategy = make_strategy(
                backend,
                world,
                args.variant,
                args.workload.threads(),
                patterns,
                exchange,
            )
            .with_context(|| {
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
        let fit = clock.finish(backend, rank)?;
        if let Some(fit) = fit {
            outcome.attach_clock(fit);
        }
        let outcomes = gather_outcomes(world, outcome)?;
        let nodes = nodes_of_every_rank(world)?;
        let result = RunResult {
            header: header(
                backend,
                "run",
                world.size(),
                args.pattern.name(),
                protocol,
                &exchange,
                outcomes.iter().map(|o| o.clock).collect(),
            ),
            result: VariantResult::from_outcomes(
                &args.variant,
                args.workload,
                patterns,
                &outcomes,
                protocol,
                coherence,
                exchange.barrier,
            )
            .with_links(&nodes),
        };
        if rank == 0 {
            print_summary(&result);
            if let Some(path) = &args.json {
                write_json(path, &result, true)?;
                println!("result written to {}", path.display());
            }
        }
        let r = &result.result;
        if !r.verified {
            return Err(Error::VerificationFailed(format!(
                "{} of {} checked elements were wrong; {} block-iterations missed checks ({} of {} planned checks made)",
                r.wrong, r.checked, r.missing, r.checked, r.planned
            ))
            .into());
        }
        Ok(())
    }
}

fn print_summary(run: &RunResult) {
    let (h, r) = (&run.header, &run.result);
    let bytes: u64 = r.patterns[0].blocks.iter().map(|b| b.elems * 8).sum();
    println!(
        "haloport run: {} on {} ({}), workload {} ({} blocks x {} threads, {:.2} MB per rank and direction), pattern {}, {} ranks",
        r.variant,
        h.backend,
        h.device.name,
        r.workload,
        r.blocks,
        r.threads,
        bytes as f64 / 1e6,
        h.pattern,
        h.ranks
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
        h.runs, h.iterations, h.warmup
    );
    println!(
        "time per iteration (rank 0): median {:.1} us, mean {:.1} us, stddev {:.1} us, min {:.1} us, max {:.1} us",
        r.median_us, r.mean_us, r.stddev_us, r.min_us, r.max_us
    );
    print_device_phases(run);
    if let Some(Some(p)) = r.profile.first() {
        println!(
            "event loop (rank 0, measured iterations): {} events, {:.1} % right after another event, at most {} in a row",
            p.events,
            100.0 * p.chained_share(),
            p.max_in_row
        );
    }
    println!(
        "verified: {} ({} of {} planned checks made on {} ranks ({} verification), {} wrong)",
        r.verified, r.checked, r.planned, h.ranks, h.verify, r.wrong
    );
    for e in r.errors.iter().take(10) {
        println!(
            "  wrong value: rank {} block {} run {} iteration {}: element {} expected {} found {} ({}; {} wrong in block)",
            e.rank,
            e.block,
            e.run,
            e.iteration,
            e.index,
            e.expected,
            e.found,
            explain_value(e.expected, e.found, e.index),
            e.wrong_in_block
        );
    }
    if r.errors.len() > 10 {
        println!("  ... {} more recorded wrong values", r.errors.len() - 10);
    }
    for m in r.missing_checks.iter().take(10) {
        println!(
            "  missing checks: rank {} block {} run {} iteration {}: {} of {} planned checks made{}",
            m.rank,
            m.block,
            m.run,
            m.iteration,
            m.done,
            m.planned,
            m.state
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        );
    }
}

/// Rank 0's kernel phases over the last run, from the device timeline, and its clock fit.
fn print_device_phases(run: &RunResult) {
    let (Some(Some(fit)), Some(timeline)) =
        (run.header.clock.first(), run.result.timelines.first())
    else {
        println!("device timeline: none (no clock fit)");
        return;
    };
    if timeline.iter().all(|it| it.blocks.is_empty()) {
        println!("device timeline: none (no kernels in this variant)");
        return;
    }
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

/// Says what a wrong value looks like: stale (another iteration's or rank's key), shifted
/// (another element's value), or foreign (no value pack writes).
fn explain_value(expected: f64, found: f64, index: u64) -> String {
    match (decode_value(expected), decode_value(found)) {
        (Some((want_key, _)), Some((key, at))) if key == want_key => {
            format!("the value of element {at}: shifted")
        }
        (Some(_), Some((_, at))) if at == index => {
            "another iteration's or rank's value: stale".to_owned()
        }
        (Some(_), Some((_, at))) => format!("another iteration's value of element {at}"),
        _ => "not a value pack writes".to_owned(),
    }
}

/// Refuses a variant over a transport it does not use, and `--no-barrier` for host-staged
/// variants (the thesis protocol is theirs).
fn check_transport(args: &RunArgs) -> Result<(), Error> {
    args.variant.check_transport(args.transport)?;
    if args.exchange.no_barrier && !args.variant.may_run_back_to_back() {
        return Err(Error::InvalidInput(format!(
            "--no-barrier applies to the device-direct variants (ipc-base, ipc-tq) only; {} keeps the thesis protocol",
            args.variant
        )));
    }
    Ok(())
}
