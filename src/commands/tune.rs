//! `haloport tune`: measures the routes and settings of the exchange for one declaration on
//! this machine and writes what it chose, and why, to a routes file that the library and the
//! CLI take (`--routes FILE`).
//!
//! Every measurement is one verified stencil run of the declaration (`haloport stencil`'s,
//! with the same flags), timed by its blocking exchanges of all fields (the median of the
//! slowest rank's). First the routes, one kind of link at a time (within a node, between
//! nodes): each route that may serve it is put first in the `auto` order, and a route counts
//! only where every link of that kind took it; the routes within a node are timed again beside
//! the routes chosen between nodes where those differ from the order by capability. Then the settings, one at a time from the
//! defaults with the routes chosen: strategy, threads, elements per thread, signalled blocks
//! (where a link is device-direct); each keeps the fastest value before the next is tried.

use std::collections::BTreeMap;

use anyhow::Context;
use haloport::core::collective::all_gather;
use haloport::core::domain::DomainSpec;
use haloport::core::halo::routes::{Locality, Preference, TunedSettings, ROUTES_SCHEMA};
use haloport::core::halo::{HaloOptions, HaloStrategy, Link, RouteOrder, RoutesFile};
use haloport::core::transport::GpuAwareMpi;
use haloport::core::{Backend, Error};
use haloport::provenance::{provenance, Provenance};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use crate::cli::TuneArgs;
use crate::commands::exchange::{check_writable_as, dispatch, write_json, OnBackend};
use crate::commands::stencil::{halo_options, measured, stencil_spec, LinkRecord, StencilResult};
use crate::commands::{host_name, local_rank};

/// One measured setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Measurement {
    /// What was tried: "within-node: nccl", "threads: 512".
    tried: String,
    /// The blocking exchange's median over the slowest rank, microseconds; absent where the
    /// route did not serve every link of its kind.
    exchange_median_us: Option<f64>,
    /// The stencil step's median (the exchange overlapped), microseconds.
    step_median_us: f64,
    /// Whether the run's fields matched one rank computing the whole grid, bit for bit.
    verified: bool,
    /// Why it did not count, where it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    passed_over: Option<String>,
}

/// Why each part of the file was chosen.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Reasons {
    within_node: String,
    between_nodes: String,
    settings: String,
}

/// Where the measurements ran.
#[derive(Debug, Clone, Serialize)]
struct MeasuredOn {
    host: String,
    backend: String,
    device: String,
    ranks: i32,
    grid: [u64; 3],
    procs: [u32; 3],
    fields: u32,
    #[serde(rename = "type")]
    elem: String,
    exchange_reps: u32,
    build: Provenance,
}

/// The file `tune` writes: what the library reads ([`RoutesFile`]) and the evidence.
#[derive(Debug, Serialize)]
struct TuneFile {
    #[serde(flatten)]
    routes: RoutesFile,
    why: Reasons,
    measured_on: MeasuredOn,
    measurements: Vec<Measurement>,
}

/// What every rank learns of one measured run (rank 0's result, gathered).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Outcome {
    exchange_median_us: f64,
    step_median_us: f64,
    verified: bool,
    verification: String,
    /// Per rank, per neighbour: where it is, its route and the routes passed over before it.
    links: Vec<Vec<LinkRecord>>,
    device: String,
    grid: [u64; 3],
    procs: [u32; 3],
    elem: String,
}

impl Outcome {
    /// Whether every link of `kind` took `link`; else the reason of the first that did not.
    fn served(&self, kind: Locality, link: Link) -> Result<(), String> {
        let mut of_kind = self
            .links
            .iter()
            .flatten()
            .map(|l| &l.route)
            .filter(|r| r.locality == kind);
        match of_kind.find(|r| r.link != link) {
            None => Ok(()),
            Some(r) => Err(r.passed_over.iter().find(|p| p.route == link).map_or_else(
                || format!("a link took {}", r.link.name()),
                |p| p.why.clone(),
            )),
        }
    }

    /// Whether any link is of `kind`.
    fn has(&self, kind: Locality) -> bool {
        self.links
            .iter()
            .flatten()
            .any(|l| l.route.locality == kind)
    }

    /// Whether any link took `link`.
    fn uses(&self, link: Link) -> bool {
        self.links.iter().flatten().any(|l| l.route.link == link)
    }
}

struct Tune<'a> {
    world: &'a SimpleCommunicator,
    args: &'a TuneArgs,
    spec: DomainSpec,
}

impl OnBackend for Tune<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let Tune { world, args, spec } = self;
        let base = halo_options(&args.stencil, HaloStrategy::Base, None);
        let mut tuner = Tuner {
            backend,
            world,
            args,
            spec,
            measurements: Vec::new(),
            reference: std::cell::OnceCell::new(),
        };
        let by_capability = RouteOrder::by_capability();
        let first = tuner.measure("auto by capability", base_with(base, by_capability))?;
        let (within_node, mut within_why) =
            tuner.routes(base, &first, Locality::SameNode, by_capability, "")?;
        let mut order = RouteOrder {
            within_node,
            ..by_capability
        };
        let (between_nodes, between_why) =
            tuner.routes(base, &first, Locality::OtherNode, order, "")?;
        order.between_nodes = between_nodes;
        // An exchange takes as long as its slowest link: the routes within a node were timed
        // beside the routes between nodes by capability. Where those changed, again beside the
        // ones chosen.
        let chosen_between = order.between_nodes.routes()[0];
        if first.has(Locality::SameNode)
            && first.has(Locality::OtherNode)
            && chosen_between != by_capability.between_nodes.routes()[0]
        {
            let again = format!(" (again, between nodes {})", chosen_between.name());
            (order.within_node, within_why) =
                tuner.routes(base, &first, Locality::SameNode, order, &again)?;
        }
        let (settings, settings_why) = tuner.settings(base_with(base, order))?;
        if world.rank() != 0 {
            return Ok(());
        }
        let file = TuneFile {
            routes: RoutesFile {
                schema: ROUTES_SCHEMA.to_owned(),
                order,
                settings: Some(settings),
            },
            why: Reasons {
                within_node: within_why,
                between_nodes: between_why,
                settings: settings_why,
            },
            measured_on: MeasuredOn {
                host: host_name(),
                backend: backend.name().to_owned(),
                device: first.device.clone(),
                ranks: world.size(),
                grid: first.grid,
                procs: first.procs,
                fields: tuner.spec.fields,
                elem: first.elem.clone(),
                exchange_reps: args.stencil.exchange_reps,
                build: provenance(),
            },
            measurements: tuner.measurements,
        };
        print_choice(&file);
        write_json(&args.out, &file, true)?;
        println!("routes written to {}", args.out.display());
        Ok(())
    }
}

/// `options` under `auto` in `order`.
fn base_with(mut options: HaloOptions, order: RouteOrder) -> HaloOptions {
    options.transport = haloport::core::transport::TransportKind::Auto;
    options.routes = Some(order);
    options
}

struct Tuner<'a, B: Backend> {
    backend: &'a B,
    world: &'a SimpleCommunicator,
    args: &'a TuneArgs,
    spec: DomainSpec,
    measurements: Vec<Measurement>,
    /// The one-rank result every candidate must match: the same problem each time.
    reference: std::cell::OnceCell<haloport_stencil::GlobalFields>,
}

impl<B: Backend> Tuner<'_, B> {
    /// One verified run with `options`, its outcome on every rank. A run that does not verify
    /// stops the tuning: its time means nothing.
    fn measure(&mut self, tried: &str, options: HaloOptions) -> anyhow::Result<Outcome> {
        let result = measured(
            self.backend,
            self.world,
            &self.args.stencil,
            self.spec.clone(),
            options,
            &self.reference,
        )
        .with_context(|| format!("tuning: measuring {tried}"))?;
        let mine: Option<Outcome> = result.as_ref().map(outcome);
        let all = all_gather(self.world, Ok(mine), |r, msg| {
            Error::InvalidInput(format!("rank {r} could not report its measurement: {msg}"))
        })?;
        let outcome = all
            .into_iter()
            .flatten()
            .next()
            .ok_or_else(|| Error::Internal("no rank reported the measurement".into()))?;
        if !outcome.verified && !self.args.stencil.no_verify {
            return Err(Error::VerificationFailed(format!(
                "tuning, {tried}: {}",
                outcome.verification
            ))
            .into());
        }
        tracing::info!(
            "tune: {tried}: exchange {:.1} us, step {:.1} us",
            outcome.exchange_median_us,
            outcome.step_median_us
        );
        Ok(outcome)
    }

    /// The routes for links of `kind`, in the order measured: each route that may serve them
    /// put first in `order`; those that did not serve every link after, in `order`'s order.
    fn routes(
        &mut self,
        base: HaloOptions,
        first: &Outcome,
        kind: Locality,
        order: RouteOrder,
        pass: &str,
    ) -> anyhow::Result<(Preference, String)> {
        let (label, current) = match kind {
            Locality::SameNode => ("within-node", order.within_node),
            _ => ("between-nodes", order.between_nodes),
        };
        if !first.has(kind) {
            let why = format!(
                "not measured: no neighbour {} in this job; {current} by capability",
                if kind == Locality::SameNode {
                    "on the same node"
                } else {
                    "on another node"
                }
            );
            return Ok((current, why));
        }
        let mut timed: Vec<(Link, f64)> = Vec::new();
        let mut passed_over: Vec<(Link, String)> = Vec::new();
        for &candidate in current.routes() {
            let rest: Vec<Link> = std::iter::once(candidate)
                .chain(current.routes().iter().copied().filter(|&l| l != candidate))
                .collect();
            let preference = Preference::new(&rest)?;
            let trial = match kind {
                Locality::SameNode => RouteOrder {
                    within_node: preference,
                    ..order
                },
                _ => RouteOrder {
                    between_nodes: preference,
                    ..order
                },
            };
            let mut options = base_with(base, trial);
            // The host backend's "device" memory is host memory: any MPI takes it.
            if candidate == Link::DeviceMpi && self.backend.name() == "host" {
                options.gpu_aware_mpi = GpuAwareMpi::On;
            }
            let tried = format!("{label}{pass}: {}", candidate.name());
            let outcome = self.measure(&tried, options)?;
            let served = outcome.served(kind, candidate);
            self.measurements.push(Measurement {
                tried,
                exchange_median_us: served.is_ok().then_some(outcome.exchange_median_us),
                step_median_us: outcome.step_median_us,
                verified: outcome.verified,
                passed_over: served.as_ref().err().cloned(),
            });
            match served {
                Ok(()) => timed.push((candidate, outcome.exchange_median_us)),
                Err(why) => passed_over.push((candidate, why)),
            }
        }
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        let ranked: Vec<Link> = timed
            .iter()
            .map(|(l, _)| *l)
            .chain(passed_over.iter().map(|(l, _)| *l))
            .collect();
        let mut why = format!(
            "blocking exchange{pass}, median of {} (slowest rank): {}",
            self.args.stencil.exchange_reps,
            timed
                .iter()
                .map(|(l, us)| format!("{} {us:.1} us", l.name()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (l, reason) in &passed_over {
            why.push_str(&format!("; {} not measured ({reason})", l.name()));
        }
        Ok((Preference::new(&ranked)?, why))
    }

    /// The settings, one at a time from `options`' (the defaults), each keeping its fastest
    /// value before the next is tried.
    fn settings(&mut self, options: HaloOptions) -> anyhow::Result<(TunedSettings, String)> {
        let mut best = options;
        let mut best_us = f64::INFINITY;
        let record = |tuner: &mut Self, tried: String, o: HaloOptions| {
            let outcome = tuner.measure(&tried, o)?;
            tuner.measurements.push(Measurement {
                tried,
                exchange_median_us: Some(outcome.exchange_median_us),
                step_median_us: outcome.step_median_us,
                verified: outcome.verified,
                passed_over: None,
            });
            anyhow::Ok(outcome)
        };
        let first = record(self, "settings: defaults".into(), best)?;
        best_us = best_us.min(first.exchange_median_us);
        let mut tried_values: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        type Setter = fn(&mut HaloOptions, u32);
        let strategies: Vec<u32> = if first.uses(Link::Staged) || first.uses(Link::DeviceMpi) {
            vec![0, 1]
        } else {
            Vec::new()
        };
        let axes: [(&str, Vec<u32>, Setter); 4] = [
            ("strategy", strategies, |o, v| {
                o.strategy = if v == 0 {
                    HaloStrategy::Base
                } else {
                    HaloStrategy::Taskqueue
                }
            }),
            ("threads", self.args.try_threads.clone(), |o, v| {
                o.threads = v
            }),
            (
                "elements per thread",
                self.args.try_elems_per_thread.clone(),
                |o, v| o.elems_per_thread = v,
            ),
            (
                "signalled blocks",
                if first.uses(Link::Direct) {
                    self.args.try_signalled_blocks.clone()
                } else {
                    Vec::new()
                },
                |o, v| o.signalled_blocks = v,
            ),
        ];
        for (axis, values, set) in axes {
            for v in values {
                let mut trial = best;
                set(&mut trial, v);
                if trial == best {
                    continue;
                }
                let shown = if axis == "strategy" {
                    trial.strategy.name().to_owned()
                } else {
                    v.to_string()
                };
                let outcome = record(self, format!("{axis}: {shown}"), trial)?;
                tried_values
                    .entry(axis)
                    .or_default()
                    .push(format!("{shown} {:.1} us", outcome.exchange_median_us));
                if outcome.exchange_median_us < best_us {
                    best_us = outcome.exchange_median_us;
                    best = trial;
                }
            }
        }
        let settings = TunedSettings {
            strategy: best.strategy,
            threads: best.threads,
            elems_per_thread: best.elems_per_thread,
            signalled_blocks: best.signalled_blocks,
        };
        let why = format!(
            "fastest blocking exchange, {best_us:.1} us (defaults {:.1} us); tried {}",
            first.exchange_median_us,
            if tried_values.is_empty() {
                "nothing else".to_owned()
            } else {
                tried_values
                    .iter()
                    .map(|(axis, v)| format!("{axis}: {}", v.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        );
        Ok((settings, why))
    }
}

/// What every rank needs of rank 0's result.
fn outcome(r: &StencilResult) -> Outcome {
    Outcome {
        exchange_median_us: r.exchange_median_us,
        step_median_us: r.step_median_us,
        verified: r.verified,
        verification: r.verification.clone(),
        links: r.links.clone(),
        device: r.device.clone(),
        grid: r.grid,
        procs: r.procs,
        elem: r.elem.clone(),
    }
}

fn print_choice(file: &TuneFile) {
    let o = &file.routes.order;
    println!(
        "tuned on {} ({} backend, {}), {} ranks",
        file.measured_on.host,
        file.measured_on.backend,
        file.measured_on.device,
        file.measured_on.ranks
    );
    println!("  {:<44} {:>12} {:>12}", "tried", "exchange us", "step us");
    for m in &file.measurements {
        let exchange = m
            .exchange_median_us
            .map_or_else(|| "-".to_owned(), |us| format!("{us:.1}"));
        println!(
            "  {:<44} {:>12} {:>12.1}",
            m.tried, exchange, m.step_median_us
        );
        if let Some(why) = &m.passed_over {
            println!("    passed over: {why}");
        }
    }
    println!(
        "  within a node: {} ({})",
        o.within_node, file.why.within_node
    );
    println!(
        "  between nodes: {} ({})",
        o.between_nodes, file.why.between_nodes
    );
    if let Some(s) = file.routes.settings {
        println!(
            "  settings: {}, {} threads, {} elements per thread, {} signalled blocks ({})",
            s.strategy.name(),
            s.threads,
            s.elems_per_thread,
            s.signalled_blocks,
            file.why.settings
        );
    }
}

/// Runs `haloport tune`.
///
/// # Errors
/// The stencil's errors for the declaration, a run that does not verify, or an output file
/// that cannot be written.
pub fn run(world: &SimpleCommunicator, args: &TuneArgs) -> anyhow::Result<()> {
    let s = &args.stencil;
    if s.routes.is_some()
        || s.scaling.is_some()
        || s.graph
        || s.inject.is_some()
        || s.json.is_some()
    {
        return Err(Error::InvalidInput(
            "tune measures the routes itself: give none of --routes, --scaling, --graph, --inject, --json (its file is --out)".into(),
        )
        .into());
    }
    if s.exchange_reps == 0 {
        return Err(Error::InvalidInput(
            "tune times blocking exchanges: --exchange-reps must be at least 1".into(),
        )
        .into());
    }
    let spec = stencil_spec(world, s)?;
    check_writable_as(world, Some(&args.out), "--out")?;
    dispatch(s.backend, local_rank(world), Tune { world, args, spec })
}
