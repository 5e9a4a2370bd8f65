//! The `haloport` command: `info` and `run`, started under `mpirun`/`srun`.
//!
//! Errors every rank detects alike (bad input, a pattern that fails the collective check) are
//! printed once, by rank 0, and every rank exits with code 2 after finalizing MPI. An error of
//! one rank (a failed device or MPI call, a time-out) is printed by that rank, which then aborts
//! the job (`MPI_Abort`, exit code 3) so no other rank waits for it. A run whose verification
//! found wrong values exits with code 1 on every rank, after writing its results. Before
//! `MPI_Finalize` every rank waits for the others in a barrier that gives up
//! (`HALOPORT_FINALIZE_TIMEOUT_S`, 300 s by default): a rank that stopped or died after its work
//! would otherwise leave the others in `MPI_Finalize` for ever; on that time-out the job is
//! aborted (exit code 3).

mod cli;
mod commands;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use mpi::topology::{Communicator, SimpleCommunicator};

use cli::{Cli, Command};

/// Exit code when the exchange delivered wrong data.
const EXIT_WRONG_DATA: u8 = 1;
/// Exit code for bad input.
const EXIT_USAGE: u8 = 2;
/// How long a timed-out rank waits before aborting the job, so others can report too.
const TIMEOUT_REPORT_GRACE: Duration = Duration::from_secs(2);
/// Exit code (via MPI_Abort) for a failure of one rank.
const EXIT_FAILURE: i32 = 3;
/// How long a rank waits for the others before `MPI_Finalize`, seconds, unless
/// `HALOPORT_FINALIZE_TIMEOUT_S` says otherwise: long enough for rank 0 to verify a run alone.
const FINALIZE_TIMEOUT_S: u64 = 300;
/// Test hook: this rank stalls (an hour) before the barrier ahead of `MPI_Finalize`, as a rank
/// stopped after its work would (`HALOPORT_TEST_STALL_BEFORE_FINALIZE_ON_RANK=R`).
const STALL_HOOK: &str = "HALOPORT_TEST_STALL_BEFORE_FINALIZE_ON_RANK";

/// This process's rank as the launcher told it, without initializing MPI (for messages that
/// come before MPI exists).
fn launcher_rank() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HALOPORT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let only_rank0 = launcher_rank().unwrap_or(0) == 0;
            if !e.use_stderr() || only_rank0 {
                // Help and version go to stdout; usage errors to stderr, once per job.
                let _ = e.print();
            }
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };

    // Reading result files needs no MPI.
    let offline = match &cli.command {
        Command::Report(args) => Some(commands::report::report(args)),
        Command::Compare(args) => Some(commands::report::compare(args)),
        Command::Plan(args) => Some(commands::plan::run(args)),
        _ => None,
    };
    if let Some(result) = offline {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                print_error(&format!("{e:#}"));
                ExitCode::from(EXIT_USAGE)
            }
        };
    }

    let Some(universe) = mpi::initialize() else {
        print_error("MPI was already initialized");
        return ExitCode::from(EXIT_USAGE);
    };
    let world = universe.world();
    abort_the_job_on_panic();
    let result = match cli.command {
        Command::Info(args) => commands::info::run(&world, &args),
        Command::Run(args) => commands::run::run(&world, &args),
        Command::Sweep(args) => commands::sweep::run(&world, &args),
        Command::Stencil(args) => commands::stencil::run(&world, &args),
        Command::Tune(args) => commands::tune::run(&world, &args),
        Command::PackBench(args) => commands::packbench::run(&world, &args),
        Command::Report(_) | Command::Compare(_) | Command::Plan(_) => Ok(()),
    };
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&world, e),
    };
    finish_together(&world);
    code
}

/// Waits, bounded, for every rank to reach the end before `MPI_Finalize` (when `universe` is
/// dropped); aborts the job where one does not arrive in time.
fn finish_together(world: &SimpleCommunicator) {
    if world.size() < 2 {
        return;
    }
    if std::env::var(STALL_HOOK)
        .ok()
        .and_then(|r| r.parse::<i32>().ok())
        == Some(world.rank())
    {
        std::thread::sleep(Duration::from_secs(3600));
    }
    let seconds = match std::env::var("HALOPORT_FINALIZE_TIMEOUT_S") {
        Err(_) => FINALIZE_TIMEOUT_S,
        Ok(text) => text.trim().parse().unwrap_or_else(|_| {
            print_error(&format!(
                "rank {}: HALOPORT_FINALIZE_TIMEOUT_S='{text}' is not a whole number of seconds; using {FINALIZE_TIMEOUT_S}",
                world.rank()
            ));
            FINALIZE_TIMEOUT_S
        }),
    };
    let deadline = haloport::core::backend::deadline_in(Duration::from_secs(seconds));
    let what = "waiting for every rank to finish before MPI_Finalize (a rank stopped or died?)";
    if let Err(e) = haloport::core::collective::barrier_until(world, deadline, what) {
        print_error(&format!("{e}; aborting the job"));
        world.abort(EXIT_FAILURE);
    }
}

/// Writes `error: MESSAGE` to stderr in one write, so the lines of ranks failing together do
/// not interleave mid-line.
fn print_error(message: &str) {
    use std::io::Write;
    let line = format!("error: {message}\n");
    // Nothing better to do if stderr itself fails.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A panic is a bug, but it must not leave the other ranks waiting in MPI for this one: after
/// the panic's own message, the whole job is aborted (exit code 3).
fn abort_the_job_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        print_error(&format!(
            "rank {}: haloport panicked (a bug); aborting the job",
            SimpleCommunicator::world().rank()
        ));
        SimpleCommunicator::world().abort(EXIT_FAILURE);
    }));
}

fn fail(world: &SimpleCommunicator, e: anyhow::Error) -> ExitCode {
    let collective = e
        .downcast_ref::<haloport::Error>()
        .is_some_and(haloport::Error::is_collective);
    if collective {
        if world.rank() == 0 {
            print_error(&format!("{e:#}"));
        }
        let verification = matches!(
            e.downcast_ref::<haloport::Error>(),
            Some(haloport::Error::VerificationFailed(_))
        );
        return ExitCode::from(if verification {
            EXIT_WRONG_DATA
        } else {
            EXIT_USAGE
        });
    }
    let message = format!("{e:#}");
    let rank = format!("rank {}: ", world.rank());
    if message.contains(&rank) {
        print_error(&message);
    } else {
        print_error(&format!("{rank}{message}"));
    }
    if world.size() > 1 {
        // Ranks stuck on the same lost message time out within moments of each other: let
        // them report their own time-outs before the abort ends them.
        if matches!(
            e.downcast_ref::<haloport::Error>(),
            Some(haloport::Error::Timeout { .. })
        ) {
            std::thread::sleep(TIMEOUT_REPORT_GRACE);
        }
        world.abort(EXIT_FAILURE);
    }
    ExitCode::from(EXIT_FAILURE as u8)
}
