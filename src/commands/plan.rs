//! `haloport plan`: one rank's set-up of a job of any size, computed as the exchange computes
//! it (its own plan and its neighbours', the layout of its messages), without MPI or a GPU.
//! Prints the set-up time (median of `--repeat` compilations), the process's peak memory, the
//! neighbours and each message's size; `--json` writes the same.

use std::io::Write;
use std::time::Instant;

use anyhow::Context;
use haloport::core::domain::{direction_tag, DomainSpec};
use haloport::core::halo::{direction_name, RankSetup};
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
    let neighbours: Vec<NeighbourRow> = setup
        .plan
        .neighbours
        .iter()
        .zip(&setup.message_bytes)
        .map(|(n, &bytes)| NeighbourRow {
            direction: direction_name(n.direction),
            tag: direction_tag(n.direction),
            rank: n.rank,
            kind: format!("{:?}", n.kind()).to_lowercase(),
            cells_sent: n.send.map_or(0, |s| s.elems()),
            cells_received: n.recv.map_or(0, |s| s.elems()),
            message_bytes: bytes,
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
    writeln!(
        out,
        "  direction  tag    rank     kind  cells out  cells in  message bytes"
    )?;
    for n in &r.neighbours {
        writeln!(
            out,
            "  {:<9} {:>4} {:>7} {:>8} {:>10} {:>9} {:>14}",
            n.direction, n.tag, n.rank, n.kind, n.cells_sent, n.cells_received, n.message_bytes
        )?;
    }
    Ok(())
}

/// The process's peak resident memory (Linux `VmHWM`), where the system says.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
