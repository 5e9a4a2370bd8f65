//! The time of one blocking halo exchange called from Rust: the counterpart of
//! `bench/python/overhead.py`, on the same declaration (a periodic f64 grid, halo 1, one
//! field), timed the same way (back-to-back calls, median and minimum of each call's wall
//! time). Two calls are timed: `HaloExchange::exchange`, what a Rust program calls, and
//! `ForeignExchange::exchange`, what the Python package and the C ABI call into (raw field
//! address and stream handle). Python's time minus the latter is what the binding costs per
//! call; minus the former, what a Python user pays over a Rust one.
//!
//! ```text
//! cargo build --release -p haloport-python --example exchange_overhead \
//!     [--features haloport-python/cuda]
//! mpirun -np 1 target/release/examples/exchange_overhead --backend cuda --json rust.json
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use haloport::core::domain::{DomainSpec, ElemType};
use haloport::core::halo::{Field, HaloExchange, HaloOptions};
use haloport::core::transport::TransportKind;
use haloport::core::Backend;
use haloport::foreign::{BackendKind, ForeignBackend, ForeignExchange, RawField, RawStream};
use haloport::{Error, Result};
use mpi::collective::CommunicatorCollectives;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};

/// What to measure.
struct Config {
    backend: BackendKind,
    spec: DomainSpec,
    options: HaloOptions,
    reps: usize,
    json: Option<String>,
}

fn parse(args: &[String]) -> std::result::Result<Config, String> {
    let mut config = Config {
        backend: BackendKind::Host,
        spec: DomainSpec {
            grid: [32, 32, 32],
            procs: None,
            periodic: [true; 3],
            halo: [1; 3],
            elem: ElemType::F64,
            fields: 1,
            layout: Default::default(),
        },
        options: HaloOptions::default(),
        reps: 2000,
        json: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--backend" => config.backend = value.parse().map_err(|e: Error| e.to_string())?,
            "--transport" => {
                config.options.transport =
                    value.parse::<TransportKind>().map_err(|e| e.to_string())?
            }
            "--reps" => config.reps = value.parse().map_err(|_| format!("--reps {value}"))?,
            "--json" => config.json = Some(value.clone()),
            "--grid" => {
                let n: Vec<u64> = value
                    .split('x')
                    .map(str::parse)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| format!("--grid {value}: give NXxNYxNZ"))?;
                config.spec.grid = n
                    .try_into()
                    .map_err(|_| format!("--grid {value}: give NXxNYxNZ"))?;
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(config)
}

/// Median and minimum of `reps` calls, in microseconds, after a warm-up.
fn time_calls(reps: usize, mut call: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    for _ in 0..reps.min(200) {
        call()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        call()?;
        times.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    let least = times.iter().copied().fold(f64::INFINITY, f64::min);
    Ok((median(&times).unwrap_or(f64::NAN), least))
}

/// `HaloExchange::exchange` on a field and stream of the backend's own.
fn rust_call<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    config: &Config,
) -> Result<(f64, f64)> {
    let mut exchange = HaloExchange::new(backend, world, &config.spec, config.options)?;
    let field = Field::alloc(backend, exchange.plan())?;
    let stream = backend.create_stream()?;
    world.barrier();
    let times = time_calls(config.reps, || exchange.exchange(&[&field], &stream))?;
    exchange.close()?;
    Ok(times)
}

/// `ForeignExchange::exchange` on the raw address of a field and the raw handle of a stream,
/// as the Python package calls it.
fn foreign_call(
    backend: Arc<ForeignBackend>,
    world: &SimpleCommunicator,
    config: &Config,
) -> Result<(f64, f64)> {
    // SAFETY: `world` is a live communicator that every rank passes here.
    let mut exchange = unsafe {
        ForeignExchange::new(
            backend.clone(),
            world.as_raw(),
            &config.spec,
            config.options,
        )?
    };
    let bytes = usize::try_from(exchange.field_bytes(0)?)
        .map_err(|_| Error::InvalidInput("the field does not fit in memory".into()))?;
    world.barrier();
    let times = match &*backend {
        ForeignBackend::Host(b) => {
            let field = Field::alloc(b, exchange.plan())?;
            let raw = RawField {
                addr: field.device_addr(),
                bytes,
            };
            // SAFETY: the field is host memory of `bytes` bytes alive until after the calls,
            // each of which waits for its exchange.
            time_calls(config.reps, || unsafe {
                exchange.exchange(&[raw], RawStream(0))
            })?
        }
        #[cfg(feature = "cuda")]
        ForeignBackend::Cuda(b) => {
            let field = Field::alloc(b, exchange.plan())?;
            let stream = b.create_stream()?;
            let raw = RawField {
                addr: field.device_addr(),
                bytes,
            };
            let handle = RawStream(stream.as_raw() as usize);
            // SAFETY: the field is device memory of `bytes` bytes and the stream a live stream
            // of the same device, both alive until after the calls, each of which waits for
            // its exchange.
            time_calls(config.reps, || unsafe { exchange.exchange(&[raw], handle) })?
        }
        #[cfg(feature = "hip")]
        ForeignBackend::Hip(_) => {
            return Err(Error::InvalidInput(
                "this measurement covers the host and CUDA backends".into(),
            ))
        }
    };
    exchange.close()?;
    Ok(times)
}

/// The median of `values` (the mean of the two middle ones for an even count).
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    (n > 0).then(|| (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0)
}

fn run(world: &SimpleCommunicator, config: &Config) -> Result<()> {
    let device = world.split_shared(0).rank() as usize;
    // The foreign layer shares the backend as an `Arc`; it stays on this thread.
    #[allow(clippy::arc_with_non_send_sync)]
    let backend = Arc::new(ForeignBackend::open(config.backend, device)?);
    let rust = match &*backend {
        ForeignBackend::Host(b) => rust_call(b, world, config)?,
        #[cfg(feature = "cuda")]
        ForeignBackend::Cuda(b) => rust_call(b, world, config)?,
        #[cfg(feature = "hip")]
        ForeignBackend::Hip(b) => rust_call(b, world, config)?,
    };
    let foreign = foreign_call(backend.clone(), world, config)?;
    if world.rank() == 0 {
        let g = config.spec.grid;
        println!(
            "exchange_overhead: {} rank(s), {} backend ({}), grid {}x{}x{} f64 periodic halo 1, transport {}, {} calls",
            world.size(),
            config.backend.name(),
            backend.device_info().name,
            g[0],
            g[1],
            g[2],
            config.options.transport.name(),
            config.reps
        );
        println!(
            "  HaloExchange::exchange (Rust): median {:.1} us, min {:.1} us",
            rust.0, rust.1
        );
        println!(
            "  ForeignExchange::exchange (raw field and stream): median {:.1} us, min {:.1} us",
            foreign.0, foreign.1
        );
        if let Some(path) = &config.json {
            let text = format!(
                "{{\"backend\": \"{}\", \"grid\": [{}, {}, {}], \"reps\": {}, \"rust_median_us\": {}, \"rust_min_us\": {}, \"foreign_median_us\": {}, \"foreign_min_us\": {}}}\n",
                config.backend.name(),
                g[0],
                g[1],
                g[2],
                config.reps,
                rust.0,
                rust.1,
                foreign.0,
                foreign.1
            );
            std::fs::write(path, text)
                .map_err(|e| Error::InvalidInput(format!("writing {path}: {e}")))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("exchange_overhead: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(universe) = mpi::initialize() else {
        eprintln!("exchange_overhead: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    match run(&world, &config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("exchange_overhead: rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
