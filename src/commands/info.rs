//! `haloport info`: what this binary can do here. Backends built in, the device each rank
//! would use and its coherence support, the MPI library and whether it takes each GPU
//! backend's device memory (GPU-aware MPI), and the toolchain it was built with.

use haloport::core::collective::all_gather;
use haloport::core::domain::Neighbourhood;
use haloport::core::halo::{direction_name, resolve_procs, HaloExchange, HaloOptions, RouteChoice};
use haloport::core::transport::{gpu_aware, nccl, MpiDeviceSupport};
use haloport::core::Backend;
use haloport::core::{DeviceInfo, Error};
use haloport::provenance::{provenance, Provenance};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use crate::cli::InfoArgs;
use crate::commands::exchange::{dispatch, OnBackend};
use crate::commands::stencil::read_routes;
use crate::commands::{host_name, local_rank, mpi_library};

/// What one rank reports.
#[derive(Debug, Serialize, Deserialize)]
struct RankInfo {
    rank: i32,
    host: String,
    local_rank: usize,
    /// One line per backend: its device for this rank, or why there is none.
    backends: Vec<(String, Result<DeviceSummary, String>)>,
    /// Per GPU backend: whether this rank's MPI library takes its device memory, and how
    /// that was found.
    gpu_aware_mpi: Vec<(String, MpiDeviceSupport)>,
    /// Per GPU backend: the NCCL (RCCL) library the nccl route would load, or why none.
    nccl: Vec<(String, Result<String, String>)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct DeviceSummary {
    name: String,
    vendor: String,
    ordinal: usize,
    device_count: usize,
    multiprocessors: u32,
    warp_width: u32,
    timer_hz: u64,
    coherence_kinds: Vec<String>,
    driver: String,
}

impl From<&DeviceInfo> for DeviceSummary {
    fn from(d: &DeviceInfo) -> Self {
        DeviceSummary {
            name: d.name.clone(),
            vendor: d.vendor.clone(),
            ordinal: d.ordinal,
            device_count: d.device_count,
            multiprocessors: d.multiprocessors,
            warp_width: d.warp_width,
            timer_hz: d.timer_hz,
            coherence_kinds: d.coherence_kinds.iter().map(ToString::to_string).collect(),
            driver: d.driver.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct Info {
    build: Provenance,
    mpi_library: String,
    ranks: i32,
    per_rank: Vec<RankInfo>,
}

#[cfg(not(all(feature = "cuda", feature = "hip")))]
fn not_built(name: &str) -> (String, Result<DeviceSummary, String>) {
    (
        name.to_owned(),
        Err(format!(
            "not available in this binary (built with: {})",
            haloport::foreign::built_backends()
        )),
    )
}

// Which entries exist depends on the features compiled in.
#[allow(clippy::vec_init_then_push)]
fn probe_backends(local: usize) -> Vec<(String, Result<DeviceSummary, String>)> {
    use haloport::Backend;
    let mut out = Vec::new();
    #[cfg(feature = "host")]
    out.push((
        "host".to_owned(),
        haloport::host::HostBackend::new(local)
            .map(|b| DeviceSummary::from(b.device_info()))
            .map_err(|e| e.to_string()),
    ));
    #[cfg(feature = "cuda")]
    out.push((
        "cuda".to_owned(),
        haloport::cuda::CudaBackend::new(local)
            .map(|b| DeviceSummary::from(b.device_info()))
            .map_err(|e| e.to_string()),
    ));
    #[cfg(not(feature = "cuda"))]
    out.push(not_built("cuda"));
    #[cfg(feature = "hip")]
    out.push((
        "hip".to_owned(),
        haloport::hip::HipBackend::new(local)
            .map(|b| DeviceSummary::from(b.device_info()))
            .map_err(|e| e.to_string()),
    ));
    #[cfg(not(feature = "hip"))]
    out.push(not_built("hip"));
    let _ = local;
    out
}

/// One rank's neighbours and their routes (`--neighbours`).
#[derive(Debug, Serialize, Deserialize)]
struct RankRoutes {
    rank: i32,
    /// Per neighbour: its direction, its rank and the route chosen, with the reason.
    neighbours: Vec<(String, i32, RouteChoice)>,
}

/// Sets the exchange up and reports this rank's routes.
struct Routes<'a> {
    world: &'a SimpleCommunicator,
    spec: haloport::core::domain::DomainSpec,
    options: HaloOptions,
}

impl OnBackend for Routes<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let exchange = HaloExchange::new(backend, self.world, &self.spec, self.options)?;
        let neighbours = exchange
            .plan()
            .neighbours
            .iter()
            .zip(exchange.route_choices())
            .map(|(n, c)| (direction_name(n.direction), n.rank, c.clone()))
            .collect();
        let mine = RankRoutes {
            rank: self.world.rank(),
            neighbours,
        };
        drop(exchange);
        let all = all_gather(self.world, Ok(mine), |r, msg| {
            Error::InvalidInput(format!("rank {r} could not report its routes: {msg}"))
        })?;
        if self.world.rank() == 0 {
            println!(
                "routes of the {} exchange over {} ranks ({}):",
                backend.name(),
                self.world.size(),
                self.options.transport
            );
            for r in &all {
                println!("rank {}:", r.rank);
                for (direction, peer, c) in &r.neighbours {
                    println!(
                        "  {direction:<8} rank {peer:>4}  {:<8} {}",
                        c.link.name(),
                        c.explained()
                    );
                }
            }
        }
        Ok(())
    }
}

/// `--neighbours`: the exchange of the declaration set up on the chosen backend, every rank's
/// routes printed. Collective over `world`.
fn print_routes(world: &SimpleCommunicator, args: &InfoArgs) -> anyhow::Result<()> {
    let spec = resolve_procs(&args.declaration.spec(Neighbourhood::All)?, world)?;
    let routes = read_routes(world, args.routes.as_deref())?;
    let options = HaloOptions {
        transport: args.transport,
        gpu_aware_mpi: args.gpu_aware_mpi,
        ..HaloOptions::default()
    };
    let options = routes.map_or(options, |file| file.apply(options));
    dispatch(
        args.backend,
        local_rank(world),
        Routes {
            world,
            spec,
            options,
        },
    )
}

pub fn run(world: &SimpleCommunicator, args: &InfoArgs) -> anyhow::Result<()> {
    print_machine(world, args)?;
    if args.neighbours {
        print_routes(world, args)?;
    }
    Ok(())
}

fn print_machine(world: &SimpleCommunicator, args: &InfoArgs) -> anyhow::Result<()> {
    let local = local_rank(world);
    let mine = RankInfo {
        rank: world.rank(),
        host: host_name(),
        local_rank: local,
        backends: probe_backends(local),
        gpu_aware_mpi: ["cuda", "hip"]
            .map(|b| (b.to_owned(), gpu_aware::query(b, world)))
            .into(),
        nccl: ["cuda", "hip"]
            .map(|b| (b.to_owned(), nccl::probe(b)))
            .into(),
    };
    let per_rank = all_gather(world, Ok(mine), |r, msg| {
        Error::InvalidInput(format!("rank {r} could not report: {msg}"))
    })?;
    if world.rank() != 0 {
        return Ok(());
    }
    let info = Info {
        build: provenance(),
        mpi_library: mpi_library(),
        ranks: world.size(),
        per_rank,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    let b = &info.build;
    println!(
        "haloport {} (git {}, {} build, {})",
        b.version, b.git, b.profile, b.target
    );
    println!("toolchain: {}", b.rustc);
    println!("backends built in: {}", b.backends);
    println!("HIP platform: {}", b.hip_platform);
    println!("MPI library: {}", info.mpi_library);
    println!("ranks: {}", info.ranks);
    for r in &info.per_rank {
        println!(
            "rank {} on {} (local rank {}):",
            r.rank, r.host, r.local_rank
        );
        for (backend, device) in &r.backends {
            match device {
                Ok(d) => println!(
                    "  {backend}: device {} of {}: {} ({}), {} multiprocessors, warp {}, timer {} Hz, pinned memory offered: {}; {}",
                    d.ordinal,
                    d.device_count,
                    d.name,
                    d.vendor,
                    d.multiprocessors,
                    d.warp_width,
                    d.timer_hz,
                    d.coherence_kinds.join(", "),
                    d.driver
                ),
                Err(why) => println!("  {backend}: {why}"),
            }
        }
        for (backend, support) in &r.gpu_aware_mpi {
            let answer = if support.available { "yes" } else { "no" };
            println!(
                "  GPU-aware MPI for {backend} device memory: {answer} ({})",
                support.how
            );
        }
        for (backend, library) in &r.nccl {
            match library {
                Ok(found) => println!("  nccl route for {backend}: {found}"),
                Err(why) => println!("  nccl route for {backend}: unavailable: {why}"),
            }
        }
    }
    Ok(())
}
