//! `haloport plan`: one rank's set-up of a job of any size, computed as the exchange computes
//! it (its own plan and its neighbours', the layout of its messages), without MPI or a GPU.
//! Prints the set-up time (median of `--repeat` compilations), the process's peak memory, the
//! neighbours, each message's size, and the route each neighbour would take and why (from the
//! same decision the exchange makes, with what can be known offline: the nodes as
//! `--ranks-per-node` says, peer access within a node assumed, NCCL looked for here, GPU-aware
//! MPI as `--gpu-aware-mpi` says); `--json` writes the same.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use haloport::core::domain::{direction_tag, DomainSpec};
use haloport::core::halo::routes::{self, LinkFacts, Locality};
use haloport::core::halo::{direction_name, HaloOptions, RankSetup, RouteChoice, RoutesFile};
use haloport::core::transport::{self, GpuAwareMpi};
use haloport_thesis::stats::median;
use serde::Serialize;

use crate::cli::PlanArgs;

#[derive(Serialize)]
struct NeighbourRow {
    direction: String,
    tag: i32,
    rank: i32,
    kind: String,
    cells_sent: u64,
    cells_received: u64,
    message_bytes: u64,
    /// Where the neighbour is, its route, why, and the routes passed over.
    #[serde(flatten)]
    route: RouteChoice,
}

#[derive(Serialize)]
struct PlanResult {
    /// The schema of the benchmarks' JSON ([`BENCH_SCHEMA`](haloport_cli::results::BENCH_SCHEMA)).
    schema: &'static str,
    ranks: i32,
    rank: i32,
    spec: DomainSpec,
    procs: [u32; 3],
    coords: [u32; 3],
    local: [u64; 3],
    origin: [u64; 3],
    setup_us_median: f64,
    peak_memory_bytes: Option<u64>,
    peers: usize,
    mailbox_bytes: u64,
    staging_bytes: u64,
    /// What the routes were chosen from.
    routes_from: String,
    neighbours: Vec<NeighbourRow>,
}

/// Runs `haloport plan`.
///
/// # Errors
/// A declaration that does not fit the job ([`haloport::Error::InvalidInput`]), or a JSON
/// file that cannot be written.
pub fn run(args: &PlanArgs) -> anyhow::Result<()> {
    let spec = args.declaration.spec(args.neighbourhood)?;
    let mut times = Vec::with_capacity(args.repeat as usize);
    let mut setup = None;
    for _ in 0..args.repeat {
        let t0 = Instant::now();
        let compiled = RankSetup::compile(&spec, args.ranks, args.rank)?;
        times.push(t0.elapsed().as_secs_f64());
        setup = Some(compiled);
    }
    let setup = setup.context("no compilation ran")?;
    let d = &setup.plan.decomposition;
    let (options, facts, routes_from) = route_inputs(args)?;
    let neighbours: Vec<NeighbourRow> = setup
        .plan
        .neighbours
        .iter()
        .zip(&setup.message_bytes)
        .map(|(n, &bytes)| {
            let route = routes::choose(options.transport, options.routes.as_ref(), facts(n.rank));
            NeighbourRow {
                direction: direction_name(n.direction),
                tag: direction_tag(n.direction),
                rank: n.rank,
                kind: format!("{:?}", n.kind()).to_lowercase(),
                cells_sent: n.send.map_or(0, |s| s.elems()),
                cells_received: n.recv.map_or(0, |s| s.elems()),
                message_bytes: bytes,
                route,
            }
        })
        .collect();
    let result = PlanResult {
        schema: haloport_cli::results::BENCH_SCHEMA,
        ranks: args.ranks,
        rank: args.rank,
        procs: d.procs,
        coords: d.coords,
        local: d.local,
        origin: d.origin,
        setup_us_median: 1e6 * median(&times).unwrap_or(0.0),
        peak_memory_bytes: peak_memory(),
        peers: setup.peers(),
        mailbox_bytes: setup.mailbox_bytes,
        staging_bytes: setup.staging_bytes,
        routes_from,
        neighbours,
        spec,
    };
    print(&result).context("writing the plan to standard output")?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&result)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn print(r: &PlanResult) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let [px, py, pz] = r.procs;
    let [cx, cy, cz] = r.coords;
    let [lx, ly, lz] = r.local;
    let [ox, oy, oz] = r.origin;
    writeln!(
        out,
        "rank {} of {} on a {px}x{py}x{pz} process grid, at ({cx}, {cy}, {cz}): {lx}x{ly}x{lz} cells from ({ox}, {oy}, {oz})",
        r.rank, r.ranks
    )?;
    writeln!(
        out,
        "  set-up: {:.1} us (median), peak memory of this process {}",
        r.setup_us_median,
        r.peak_memory_bytes.map_or_else(
            || "unknown".to_owned(),
            |b| format!("{:.1} MB", b as f64 / 1e6)
        )
    )?;
    writeln!(
        out,
        "  {} messages to {} distinct ranks; receive slots and flags {} bytes (device), staging up to 2 x {} bytes (pinned, as far as host-staged messages reach)",
        r.neighbours.len(),
        r.peers,
        r.mailbox_bytes,
        r.staging_bytes
    )?;
    writeln!(out, "  routes: {}", r.routes_from)?;
    writeln!(
        out,
        "  direction  tag    rank     kind  cells out  cells in  message bytes  route    why"
    )?;
    for n in &r.neighbours {
        writeln!(
            out,
            "  {:<9} {:>4} {:>7} {:>8} {:>10} {:>9} {:>14}  {:<8} {}",
            n.direction,
            n.tag,
            n.rank,
            n.kind,
            n.cells_sent,
            n.cells_received,
            n.message_bytes,
            n.route.link.name(),
            n.route.explained()
        )?;
    }
    Ok(())
}

/// The exchange's options for the routes, what is known of each peer's link, and a line
/// saying what the routes were chosen from.
fn route_inputs(
    args: &PlanArgs,
) -> anyhow::Result<(HaloOptions, impl Fn(i32) -> LinkFacts, String)> {
    let mut options = HaloOptions {
        transport: args.transport,
        ..HaloOptions::default()
    };
    if let Some(path) = &args.routes {
        options = RoutesFile::read(path)?.apply(options);
    }
    let backend = args.backend.name();
    let nccl = routes::asks_for_nccl(options.transport, options.routes.as_ref(), backend)
        .then(|| transport::nccl::probe(backend));
    let device_mpi = args.gpu_aware_mpi == GpuAwareMpi::On;
    let per_node = args.ranks_per_node.unwrap_or(args.ranks);
    let within = options.transport.within_node();
    let rank = args.rank;
    let facts = {
        let nccl = matches!(nccl, Some(Ok(_)));
        move |peer: i32| LinkFacts {
            locality: if peer == rank {
                Locality::Itself
            } else if !within {
                Locality::NotAsked
            } else if peer / per_node == rank / per_node {
                Locality::SameNode
            } else {
                Locality::OtherNode
            },
            peer_access: within && peer / per_node == rank / per_node,
            nccl,
            device_mpi,
        }
    };
    let from = format!(
        "transport {}{}; {} ranks per node, peer access within a node assumed; NCCL/RCCL for {backend}: {}; GPU-aware MPI: {}",
        options.transport,
        args.routes
            .as_ref()
            .map_or_else(String::new, |p| format!(" in the order of {}", p.display())),
        per_node,
        match &nccl {
            None => "not asked".to_owned(),
            Some(Ok(found)) => found.clone(),
            Some(Err(why)) => format!("not found ({why})"),
        },
        match args.gpu_aware_mpi {
            GpuAwareMpi::On => "on",
            GpuAwareMpi::Off => "off",
            GpuAwareMpi::Auto => "taken as off (auto is asked of the MPI library at run time)",
        }
    );
    Ok((options, facts, from))
}

/// The process's peak resident memory (Linux `VmHWM`), where the system says.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
