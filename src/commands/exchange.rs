//! What `run` and `sweep` share: choosing the backend, building a strategy for a variant,
//! aligning clocks, writing result headers and files.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use haloport::core::clock::{ping_pong, ClockFit, ClockSample};
use haloport::core::collective::all_gather;
use haloport::core::pattern::RankPattern;
use haloport::core::transport::faulty::Faulty;
use haloport::core::transport::mpi::MpiTransport;
use haloport::core::{Backend, Error};
use haloport::provenance::provenance;
use haloport_cli::results::{ResultHeader, RESULT_FORMAT};
use haloport_thesis::measure::{Protocol, RankOutcome};
use haloport_thesis::strategy::{
    Baseline, ExchangeOptions, IpcExchange, LibraryExchange, MpiOnly, Strategy, Taskqueue,
};
use haloport_thesis::Variant;
use mpi::topology::SimpleCommunicator;

use crate::cli::BackendKind;
use crate::commands::{host_name, mpi_library};

/// Work that runs on whichever backend the command line chose.
pub trait OnBackend {
    /// Runs on `backend`.
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()>;
}

/// Opens the chosen backend for this rank's local index and runs `task` on it: the one `match`
/// on the backend kind; everything below it is generic.
pub fn dispatch(kind: BackendKind, local_rank: usize, task: impl OnBackend) -> anyhow::Result<()> {
    match kind {
        #[cfg(feature = "host")]
        BackendKind::Host => task.run(&haloport::host::HostBackend::new(local_rank)?),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => task.run(&haloport::cuda::CudaBackend::new(local_rank)?),
        #[cfg(feature = "hip")]
        BackendKind::Hip => task.run(&haloport::hip::HipBackend::new(local_rank)?),
        // Reached only for backends this binary was built without.
        #[allow(unreachable_patterns)]
        other => Err(not_built(other).into()),
    }
}

/// The error for a backend this binary cannot run.
pub fn not_built(kind: BackendKind) -> Error {
    kind.not_built()
}

/// A strategy for `variant` on `backend`, over a fresh MPI transport.
pub fn make_strategy<'b, B: Backend>(
    backend: &'b B,
    world: &SimpleCommunicator,
    variant: Variant,
    threads: u32,
    patterns: &[RankPattern],
    exchange: ExchangeOptions,
) -> anyhow::Result<Box<dyn Strategy + 'b>> {
    use mpi::topology::Communicator;
    if let Variant::Ipc(options) = variant {
        return Ok(Box::new(IpcExchange::new(
            backend, world, patterns, threads, options, exchange,
        )?));
    }
    if let Variant::Library(options) = variant {
        return Ok(Box::new(LibraryExchange::new(
            backend, world, patterns, threads, options, exchange,
        )?));
    }
    let pattern = &patterns[world.rank() as usize];
    let transport = Faulty::new(MpiTransport::new(world, exchange.timeout)?, exchange.fault);
    let strategy: Box<dyn Strategy + 'b> = match variant {
        Variant::Baseline(options) => Box::new(Baseline::new(
            backend, transport, pattern, threads, options, exchange,
        )?),
        Variant::Taskqueue(options) => Box::new(Taskqueue::new(
            backend, transport, pattern, threads, options, exchange,
        )?),
        Variant::MpiOnly => Box::new(MpiOnly::new(
            backend, transport, pattern, threads, exchange,
        )?),
        other => {
            return Err(Error::InvalidInput(format!("variant {other} has no strategy yet")).into())
        }
    };
    Ok(strategy)
}

/// Ping-pong samples taken before and after a measurement, each (SPEC 6).
const CLOCK_SAMPLES: u32 = 16;

/// Clock alignment around a measurement: samples at the start, more at the end, one fit.
pub struct ClockAlignment {
    samples: Vec<ClockSample>,
    timeout: Duration,
}

impl ClockAlignment {
    /// Takes the starting samples.
    pub fn start<B: Backend>(backend: &B, timeout: Duration) -> anyhow::Result<Self> {
        let samples = ping_pong(backend, CLOCK_SAMPLES, timeout)
            .context("aligning device and host clocks before measuring")?;
        Ok(ClockAlignment { samples, timeout })
    }

    /// Takes the closing samples and fits the line; `None` (with a warning) if it cannot.
    pub fn finish<B: Backend>(
        mut self,
        backend: &B,
        rank: i32,
    ) -> anyhow::Result<Option<ClockFit>> {
        self.samples.extend(
            ping_pong(backend, CLOCK_SAMPLES, self.timeout)
                .context("aligning device and host clocks after measuring")?,
        );
        let fit = ClockFit::fit(&self.samples);
        if fit.is_none() {
            tracing::warn!(
                "rank {rank}: no clock fit through {} samples",
                self.samples.len()
            );
        }
        Ok(fit)
    }
}

/// Gathers every rank's outcome of one measurement onto every rank.
pub fn gather_outcomes(
    world: &SimpleCommunicator,
    outcome: RankOutcome,
) -> anyhow::Result<Vec<RankOutcome>> {
    Ok(all_gather(world, Ok(outcome), |r, msg| {
        Error::InvalidInput(format!("rank {r} could not report its results: {msg}"))
    })?)
}

/// The header of a result file.
#[allow(clippy::too_many_arguments)]
pub fn header<B: Backend>(
    backend: &B,
    kind: &'static str,
    ranks: i32,
    pattern: String,
    protocol: Protocol,
    exchange: &ExchangeOptions,
    clock: Vec<Option<ClockFit>>,
) -> ResultHeader {
    ResultHeader {
        schema: haloport_cli::results::BENCH_SCHEMA,
        format: RESULT_FORMAT,
        kind,
        build: provenance(),
        host: host_name(),
        mpi_library: mpi_library(),
        backend: backend.name().to_owned(),
        device: backend.device_info().clone(),
        ranks,
        pattern,
        iterations: protocol.iterations,
        warmup: protocol.warmup,
        runs: protocol.runs,
        timeout_s: exchange.timeout.as_secs_f64(),
        flag_stride: exchange.flag_stride,
        poll_backoff_ns: exchange.poll_backoff_ns,
        verify: exchange.verify,
        fault: exchange.fault.map(|f| f.to_string()),
        clock,
    }
}

/// Checks, before any work, that rank 0 will be able to write `path` (an existing file is
/// opened for writing but not truncated; a new one is created and removed again). Collective:
/// every rank gets the same verdict.
///
/// # Errors
/// [`Error::InvalidInput`] naming the file and why it cannot be written.
pub fn check_writable(world: &SimpleCommunicator, path: Option<&Path>) -> anyhow::Result<()> {
    check_writable_as(world, path, "--json")
}

/// As [`check_writable`], naming the file by `flag` in the error.
///
/// # Errors
/// As [`check_writable`].
pub fn check_writable_as(
    world: &SimpleCommunicator,
    path: Option<&Path>,
    flag: &str,
) -> anyhow::Result<()> {
    use mpi::topology::Communicator;
    let mine = match path {
        Some(path) if world.rank() == 0 => probe_writable(path, flag),
        _ => Ok(()),
    };
    all_gather(world, mine, |_, msg| Error::InvalidInput(msg))?;
    Ok(())
}

fn probe_writable(path: &Path, flag: &str) -> std::result::Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("{flag} {shown}: is a directory, not a file"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{flag} {shown}: cannot be written: {e}"))?;
    if !existed {
        std::fs::remove_file(path).map_err(|e| format!("{flag} {shown}: {e}"))?;
    }
    Ok(())
}

/// Writes `value` as JSON to `path`: pretty for one run, compact for sweeps (which hold every
/// timeline of every variant and get large).
pub fn write_json(path: &Path, value: &impl serde::Serialize, pretty: bool) -> anyhow::Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        serde_json::to_string(value)?
    };
    std::fs::write(path, text + "\n").map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    Ok(())
}
