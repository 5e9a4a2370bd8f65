//! `haloport stencil`: the library end to end (SPEC 13). Jacobi sweeps of a 27-point stencil
//! over a 3-D grid, halos exchanged by [`HaloExchange`](haloport::core::halo::HaloExchange)
//! with the exchange overlapped with the inner update, then verified bit-for-bit: rank 0
//! gathers the final fields and computes the same steps alone over the whole grid with the same
//! kernels; `"verified": true` only when every bit matched.

use std::time::Duration;

use anyhow::Context;
use haloport::core::collective::{all_gather, all_gather_until};
use haloport::core::domain::{DomainSpec, HaloPlan, Neighbourhood};
use haloport::core::halo::{
    direction_name, resolve_procs, HaloOptions, HaloStrategy, RouteChoice, RoutesFile,
};
use haloport::core::{Backend, Error, Kernel};
use haloport::foreign::BackendKind;
use haloport::provenance::{provenance, Provenance};
use haloport_stencil::{
    run_jacobi, run_reference, FieldKind, FieldPlacement, JacobiConfig, Stencil as JacobiStencil,
};
use haloport_thesis::stats::median;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::Serialize;

use crate::cli::StencilArgs;
use crate::commands::exchange::{check_writable, dispatch, write_json, OnBackend};
use crate::commands::{host_name, local_rank};

/// Test hook: this rank declares one field more than the others, to show the collective check
/// of the declaration (`HALOPORT_TEST_EXTRA_FIELD_ON_RANK=R`).
const EXTRA_FIELD_HOOK: &str = "HALOPORT_TEST_EXTRA_FIELD_ON_RANK";

/// The result file.
#[derive(Debug, Serialize)]
pub(crate) struct StencilResult {
    /// The schema of the benchmarks' JSON ([`BENCH_SCHEMA`](haloport_cli::results::BENCH_SCHEMA)).
    schema: &'static str,
    command: &'static str,
    provenance: Provenance,
    backend: String,
    pub(crate) device: String,
    host: String,
    pub(crate) ranks: i32,
    pub(crate) grid: [u64; 3],
    pub(crate) procs: [u32; 3],
    halo: u32,
    /// Halo widths per side, low then high, per dimension.
    halo_lo: [u32; 3],
    halo_hi: [u32; 3],
    /// Allocated cells after the high halo, per dimension.
    pad: [u32; 3],
    /// Rank 0's allocated local array (halos and padding included), cells per dimension.
    alloc: [u64; 3],
    /// The kernel that updated rank 0's inner box of the first field (the step's bulk);
    /// absent where that box is empty (and in older results).
    #[serde(skip_serializing_if = "Option::is_none")]
    inner_kernel: Option<&'static str>,
    /// The cells of padding after each of rank 0's rows that would give its f32 box its
    /// faster form: rows of whole 32-byte sectors where `--placement auto` would then place
    /// the field for its interior, else the lanes of 4 points (`hp_stencil27_march32`); absent
    /// where it has it or cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    lanes_padding: Option<u64>,
    /// What rows so padded are a multiple of, in elements: 4 (the lanes) or 8 (whole sectors);
    /// absent with `lanes_padding`.
    #[serde(skip_serializing_if = "Option::is_none")]
    padded_multiple: Option<u64>,
    /// 7 or 27: the points the update averages.
    stencil: u32,
    /// Messages rank 0 sends per exchange (its neighbours that receive something).
    pub(crate) messages: usize,
    periodic: [bool; 3],
    #[serde(rename = "type")]
    pub(crate) elem: String,
    fields: u32,
    steps: u32,
    variant: String,
    transport: String,
    /// Per rank, per neighbour: the direction, the peer, how its messages travelled and why.
    pub(crate) links: Vec<Vec<LinkRecord>>,
    /// Per rank: whether its blocking exchanges after the steps packed and unpacked in one
    /// launch; absent where none ran (and in older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    one_launch: Vec<bool>,
    /// Per step, the slowest rank's wall time, microseconds.
    step_us: Vec<f64>,
    pub(crate) step_median_us: f64,
    /// Blocking exchanges of all fields after the steps (slowest rank), microseconds.
    pub(crate) exchange_median_us: f64,
    /// exchange_median_us / step_median_us.
    exchange_share: f64,
    /// The same steps without the exchange (slowest rank), microseconds: the compute alone.
    pub(crate) compute_median_us: f64,
    /// step_median_us - compute_median_us: what the exchange adds to a step.
    pub(crate) exposed_exchange_us: f64,
    /// 1 - exposed / exchange (clamped to 0..1): how much of a blocking exchange the step hides.
    hidden_fraction: f64,
    /// How the update kernel walked its boxes: `march` or `points`.
    stencil_form: String,
    /// Where the fields lived (`--placement`, `auto` resolved): `library`, `adopted`, `tiles`
    /// or `interior`, or for fields placed differently their placements in order joined by
    /// commas; older results lack it.
    #[serde(default)]
    placement: String,
    /// Steps replayed from a captured graph, two per replay (`--graph`); older results lack it.
    #[serde(default)]
    graph: bool,
    /// Of the steps without the exchange (rank 0's), those replayed from a graph, two per
    /// replay (with `--graph`); older results lack it (their compute ran uncaptured).
    #[serde(default)]
    compute_replayed_steps: u32,
    /// Each step's inner box ran beside its exchange (`--overlap`; false: the exchange,
    /// then the whole interior); older results lack it (they overlapped).
    overlap: bool,
    /// Fused mode (`--fused`): the boundary's update stored the neighbours' halos, no pack or
    /// unpack ran; older results lack it.
    #[serde(default)]
    fused: bool,
    /// How rank 0's fused steps updated the interior: `interior` (one launch over it per
    /// field, in the march form's f64 tiles) or `slabs` (the inner box, and the boundary's
    /// slabs beside it in the point form); absent outside fused mode (and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fused_update: Option<String>,
    /// The shell's x and y slabs ran as launches of their own (`--shell-launches`), not in
    /// the inner box's tiles; older results lack it.
    #[serde(default)]
    shell_launches: bool,
    /// Where rank 0's inner box took the shell's x and y slabs into its tiles: its tiles
    /// holding slab points, and how many of them ran before the halos were in (left to the
    /// fix-up) in the last step; absent where it did not (and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shell_tiles: Option<ShellTilesRecord>,
    /// Every field copied to the other by the copy engine (slowest rank), microseconds: a
    /// step's traffic at the device's copy speed, measured in the same run.
    copy_median_us: f64,
    /// copy_median_us / compute_median_us: the compute's speed as a fraction of the copy's.
    compute_speed_of_copy: f64,
    /// The exchange's set-up (`HaloExchange::new`: plan, buffers, IPC handles, agreement) on
    /// the slowest rank, microseconds; older results lack it.
    #[serde(default)]
    pub(crate) setup_us: f64,
    /// Order-independent checksum of the gathered final fields (hex).
    checksum: String,
    pub(crate) verified: bool,
    pub(crate) verification: String,
}

/// [`haloport_stencil::ShellTilesListed`] in a result.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub(crate) struct ShellTilesRecord {
    capacity: u32,
    fixed_up_last_step: u32,
}

/// What one rank's run measured, as gathered by every rank.
#[derive(Debug, Serialize, serde::Deserialize)]
struct RankRun {
    links: Vec<LinkRecord>,
    one_launch: Option<bool>,
    steps: Vec<f64>,
    exchanges: Vec<f64>,
    computes: Vec<f64>,
    copies: Vec<f64>,
    setup: f64,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub(crate) struct LinkRecord {
    direction: String,
    peer: i32,
    /// Where the neighbour is, its route (`link`), why, and the routes passed over before it.
    #[serde(flatten)]
    pub(crate) route: RouteChoice,
}

/// The declaration of `args`, checked alike on every rank of `world` before any device
/// work. Collective over `world`.
///
/// # Errors
/// [`Error::InvalidInput`] for a declaration that does not fit the job or flags that do not
/// go together.
pub(crate) fn stencil_spec(
    world: &SimpleCommunicator,
    args: &StencilArgs,
) -> anyhow::Result<DomainSpec> {
    if args.steps == 0 {
        return Err(Error::InvalidInput("--steps must be at least 1".into()).into());
    }
    // The 7-point stencil reads the faces only; the 27-point one all 26 neighbours.
    let mut spec = args.declaration.spec(match args.stencil {
        JacobiStencil::Point7 => Neighbourhood::Faces,
        JacobiStencil::Point27 => Neighbourhood::All,
    })?;
    if std::env::var(EXTRA_FIELD_HOOK)
        .ok()
        .and_then(|v| v.parse().ok())
        == Some(world.rank())
    {
        spec.fields += 1;
    }
    if args.graph && args.backend == BackendKind::Host {
        return Err(Error::InvalidInput(
            "--graph needs a GPU backend (cuda or hip): the host backend runs each queued item once and captures no graphs".into(),
        )
        .into());
    }
    // Refused alike on every rank, before any device work.
    HaloPlan::compile(&resolve_procs(&spec, world)?, world.size(), world.rank())?;
    Ok(spec)
}

pub fn run(world: &SimpleCommunicator, args: &StencilArgs) -> anyhow::Result<()> {
    let strategy: HaloStrategy = args.variant.parse()?;
    let spec = stencil_spec(world, args)?;
    check_writable(world, args.json.as_deref())?;
    let routes = read_routes(world, args.routes.as_deref())?;
    let options = halo_options(args, strategy, routes.as_ref());
    dispatch(
        args.backend,
        local_rank(world),
        Stencil {
            world,
            args,
            spec,
            options,
        },
    )
}

struct Stencil<'a> {
    world: &'a SimpleCommunicator,
    args: &'a StencilArgs,
    spec: DomainSpec,
    options: HaloOptions,
}

impl OnBackend for Stencil<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let Stencil {
            world,
            args,
            spec,
            options,
        } = self;
        if let Some(mode) = args.scaling {
            return super::scaling::run(backend, world, args, &spec, options, mode);
        }
        let reference = std::cell::OnceCell::new();
        let Some(result) = measured(backend, world, args, spec, options, &reference)? else {
            return Ok(());
        };
        print_summary(&result);
        if let Some(path) = &args.json {
            write_json(path, &result, true)?;
        }
        if !result.verified && !args.no_verify {
            return Err(Error::VerificationFailed(result.verification).into());
        }
        Ok(())
    }
}

/// The exchange's options from the command line: the flags, or where a routes file is
/// given, its routes (`auto` in its order) and settings over them.
pub(crate) fn halo_options(
    args: &StencilArgs,
    strategy: HaloStrategy,
    routes: Option<&RoutesFile>,
) -> HaloOptions {
    let options = HaloOptions {
        transport: args.transport,
        strategy,
        timeout: Duration::from_secs_f64(args.timeout),
        elems_per_thread: args.elems_per_thread,
        threads: args.threads,
        signalled_blocks: args.signalled_blocks,
        fault: args.inject,
        checked: args.checked,
        gpu_aware_mpi: args.gpu_aware_mpi,
        routes: None,
    };
    routes.map_or(options, |file| file.apply(options))
}

/// Reads the routes file `path` on every rank of `world`: a rank that cannot read it stops
/// every rank, with its reason. Collective over `world`.
///
/// # Errors
/// The file's problem as [`RoutesFile::read`] names it, on every rank.
pub(crate) fn read_routes(
    world: &SimpleCommunicator,
    path: Option<&std::path::Path>,
) -> anyhow::Result<Option<RoutesFile>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let mine = RoutesFile::read(path).map_err(|e| e.to_string());
    let all = all_gather(world, mine, |r, msg| {
        Error::InvalidInput(format!("rank {r}: {msg}"))
    })?;
    Ok(all.into_iter().next())
}

/// One run of the stencil on `comm` (every rank of it) with the exchange's `options`, verified
/// unless `--no-verify`: the result on `comm`'s rank 0, `None` on the others.
pub(crate) fn measured<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    args: &StencilArgs,
    spec: DomainSpec,
    options: HaloOptions,
    reference: &std::cell::OnceCell<haloport_stencil::GlobalFields>,
) -> anyhow::Result<Option<StencilResult>> {
    let world = comm;
    {
        let config = JacobiConfig {
            spec,
            stencil: args.stencil,
            steps: args.steps,
            options,
            exchange_reps: args.exchange_reps,
            compute_steps: args.steps,
            form: args.stencil_form.code(),
            fields: if args.adopt {
                FieldPlacement::Adopted
            } else {
                args.placement.placement()
            },
            graph: args.graph,
            shell_launches: args.shell_launches,
            overlap: args.overlap.overlap(),
            fused: args.fused,
        };
        let run = run_jacobi(backend, world, &config)
            .with_context(|| format!("running the stencil on the {} backend", backend.name()))?;
        let records: Vec<LinkRecord> = run
            .plan
            .neighbours
            .iter()
            .zip(&run.routes)
            .map(|(n, route)| LinkRecord {
                direction: direction_name(n.direction),
                peer: n.rank,
                route: route.clone(),
            })
            .collect();
        let collective = |r: i32, msg: String| Error::InvalidInput(format!("rank {r}: {msg}"));
        let mine = RankRun {
            links: records,
            one_launch: run.one_launch,
            steps: run.step_seconds.clone(),
            exchanges: run.exchange_seconds.clone(),
            computes: run.compute_seconds.clone(),
            copies: run.copy_seconds.clone(),
            setup: run.setup_seconds,
        };
        // Bounded: a rank that stopped after its run must not leave the others here. Rank 0
        // comes last, after taking every rank's part of the fields: the time-out for each.
        let size = u32::try_from(world.size()).unwrap_or(1).max(1);
        let ranks = all_gather_until(
            world,
            Ok(mine),
            collective,
            haloport::core::backend::deadline_in(config.options.timeout.saturating_mul(size)),
            "gathering every rank's timings",
        )?;
        let per_rank = |f: fn(&RankRun) -> Vec<f64>| ranks.iter().map(f).collect::<Vec<_>>();
        let steps = per_rank(|r| r.steps.clone());
        let exchanges = per_rank(|r| r.exchanges.clone());
        let computes = per_rank(|r| r.computes.clone());
        let copies = per_rank(|r| r.copies.clone());
        let setups = per_rank(|r| vec![r.setup]);
        let one_launch: Vec<bool> = ranks.iter().filter_map(|r| r.one_launch).collect();
        let links: Vec<Vec<LinkRecord>> = ranks.into_iter().map(|r| r.links).collect();
        let shell_tiles = run.shell_tiles;
        let compute_replayed_steps = run.compute_replayed;
        let overlap = run.overlapped;
        let Some(gathered) = run.gathered else {
            return Ok(None);
        };
        let slowest = |per_rank: &[Vec<f64>]| -> Vec<f64> {
            let n = per_rank.iter().map(Vec::len).min().unwrap_or(0);
            (0..n)
                .map(|i| per_rank.iter().map(|v| v[i] * 1e6).fold(0.0, f64::max))
                .collect()
        };
        let step_us = slowest(&steps);
        let exchange_us = slowest(&exchanges);
        let (verified, verification) = if args.no_verify {
            (false, "skipped (--no-verify)".to_owned())
        } else {
            // Computed once for runs of one problem (a tuning's candidates).
            let reference = match reference.get() {
                Some(fields) => fields,
                None => {
                    let fields = run_reference(backend, &config)
                        .context("computing the one-rank reference over the whole grid")?;
                    reference.get_or_init(|| fields)
                }
            };
            match gathered.first_difference(reference) {
                None => (
                    true,
                    format!(
                        "bit-for-bit equal to one rank computing the whole {}x{}x{} grid",
                        config.spec.grid[0], config.spec.grid[1], config.spec.grid[2]
                    ),
                ),
                Some(diff) => (
                    false,
                    format!("differs from the one-rank reference: {diff}"),
                ),
            }
        };
        let (step_median_us, exchange_median_us, compute_median_us) = (
            median(&step_us).unwrap_or(0.0),
            median(&exchange_us).unwrap_or(0.0),
            median(&slowest(&computes)).unwrap_or(0.0),
        );
        let exposed_exchange_us = step_median_us - compute_median_us;
        let copy_median_us = median(&slowest(&copies)).unwrap_or(0.0);
        let result = StencilResult {
            schema: haloport_cli::results::BENCH_SCHEMA,
            command: "stencil",
            provenance: provenance(),
            backend: backend.name().to_owned(),
            device: backend.device_info().name.clone(),
            host: host_name(),
            ranks: world.size(),
            grid: config.spec.grid,
            procs: run.plan.decomposition.procs,
            halo: args.declaration.halo,
            halo_lo: config.spec.halo_lo(),
            halo_hi: config.spec.halo_hi(),
            pad: config.spec.layout.pad,
            alloc: run.plan.decomposition.alloc,
            inner_kernel: run.inner_kernel.map(Kernel::symbol),
            lanes_padding: run.inner_rows_padding.map(|p| p.cells),
            padded_multiple: run.inner_rows_padding.map(|p| p.multiple),
            stencil: config.stencil.points(),
            messages: run
                .plan
                .neighbours
                .iter()
                .filter(|n| n.send.is_some())
                .count(),
            periodic: config.spec.periodic,
            elem: FieldKind::of(&config.spec)?
                .iter()
                .map(|k| match k.components {
                    1 => k.elem.to_string(),
                    c => format!("{}x{c}", k.elem),
                })
                .collect::<Vec<_>>()
                .join(","),
            fields: config.spec.fields,
            steps: args.steps,
            variant: options.strategy.name().to_owned(),
            transport: options.transport.to_string(),
            links,
            one_launch,
            step_median_us,
            exchange_median_us,
            exchange_share: if step_median_us > 0.0 {
                exchange_median_us / step_median_us
            } else {
                0.0
            },
            compute_median_us,
            exposed_exchange_us,
            stencil_form: args.stencil_form.name().to_owned(),
            placement: placement_names(&run.placements),
            graph: args.graph,
            compute_replayed_steps,
            overlap,
            fused: args.fused,
            fused_update: run.fused_update.map(|f| f.name().to_owned()),
            shell_launches: args.shell_launches,
            shell_tiles: shell_tiles.map(|t| ShellTilesRecord {
                capacity: t.capacity,
                fixed_up_last_step: t.last_step,
            }),
            copy_median_us,
            compute_speed_of_copy: if compute_median_us > 0.0 {
                copy_median_us / compute_median_us
            } else {
                0.0
            },
            hidden_fraction: if exchange_median_us > 0.0 {
                (1.0 - exposed_exchange_us / exchange_median_us).clamp(0.0, 1.0)
            } else {
                0.0
            },
            setup_us: slowest(&setups).first().copied().unwrap_or(0.0),
            step_us,
            checksum: format!("{:016x}", gathered.checksum()),
            verified,
            verification,
        };
        Ok(Some(result))
    }
}

/// The placement of rank 0's fields: one name where they share it, else each field's in order.
fn placement_names(placements: &[FieldPlacement]) -> String {
    let names: Vec<&str> = placements.iter().map(|p| p.name()).collect();
    if names.windows(2).all(|w| w[0] == w[1]) {
        names.first().copied().unwrap_or_default().to_owned()
    } else {
        names.join(",")
    }
}

/// Where rank 0's f32 box misses its faster form only for its rows' length: the padding that
/// gives it (the lanes of 4 points, or rows of whole sectors for the lanes over the interior).
fn lanes_hint(r: &StencilResult) -> Option<String> {
    let multiple = r.padded_multiple?;
    let why = if multiple == u64::from(haloport::core::shared::HP_LANES_POINTS) {
        format!(
            "for the faster f32 tiles ({})",
            Kernel::StencilMarch32.symbol()
        )
    } else {
        "whole 32-byte sectors, so that every row of the interior starts on one".to_owned()
    };
    r.lanes_padding.map(|short| {
        format!(
            "rows of {} f32 elements: --pad {},{},{} makes them a multiple of {multiple}, {why}",
            r.alloc[0],
            u64::from(r.pad[0]) + short,
            r.pad[1],
            r.pad[2],
        )
    })
}

fn print_summary(r: &StencilResult) {
    let [px, py, pz] = r.procs;
    let [nx, ny, nz] = r.grid;
    println!(
        "stencil {nx}x{ny}x{nz} on {px}x{py}x{pz} ranks ({} backend, {}), {}-point, halo {:?} / {:?}, {} fields ({}), {} steps, {} over {}, {} messages per exchange",
        r.backend,
        r.device,
        r.stencil,
        r.halo_lo,
        r.halo_hi,
        r.fields,
        r.elem,
        r.steps,
        r.variant,
        r.transport,
        r.messages
    );
    println!(
        "  step median {:.1} us{}{}, exchange median {:.1} us ({:.1} % of a step)",
        r.step_median_us,
        if r.graph {
            " (two steps per replay of a captured graph, each half of it)"
        } else {
            ""
        },
        if r.fused {
            " (fused: the boundary's update stores the neighbours' halos, no pack or unpack)"
        } else if r.overlap {
            ""
        } else {
            " (no overlap: the exchange, then the whole interior)"
        },
        r.exchange_median_us,
        100.0 * r.exchange_share
    );
    println!(
        "  compute alone {:.1} us per step ({} form, {} fields{}; {:.0} % of the copy speed: copying the fields takes {:.1} us): the exchange adds {:.1} us to a step ({:.0} % of it hidden)",
        r.compute_median_us,
        r.stencil_form,
        r.placement,
        if r.compute_replayed_steps > 0 {
            ", two steps per replay of a graph, as the steps"
        } else {
            ""
        },
        100.0 * r.compute_speed_of_copy,
        r.copy_median_us,
        r.exposed_exchange_us,
        100.0 * r.hidden_fraction
    );
    if let Some(kernel) = r.inner_kernel {
        println!("  inner box: {kernel} (rank 0)");
    }
    match r.fused_update.as_deref() {
        Some("interior") => println!(
            "  fused update: one launch over the interior per field, in f64 march tiles (rank 0)"
        ),
        Some(_) => println!(
            "  fused update: the inner box, and the boundary's slabs beside it in the point form (rank 0)"
        ),
        None => {}
    }
    if let Some(hint) = lanes_hint(r) {
        println!("  hint: {hint}");
    }
    if let Some(t) = r.shell_tiles {
        println!(
            "  shell: the inner box took its x and y slabs into its tiles; of its {} tiles holding slab points, {} ran before the halos were in (left to the fix-up) in the last step (rank 0)",
            t.capacity, t.fixed_up_last_step
        );
    }
    println!(
        "  set-up of the exchange {:.1} us (slowest rank)",
        r.setup_us
    );
    println!("  checksum {}", r.checksum);
    println!("  verified: {} ({})", r.verified, r.verification);
}
