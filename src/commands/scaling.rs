//! `haloport stencil --scaling strong|weak`: the same stencil on 1, 2, 4, ... ranks of the job
//! (and all of them), one after the other in one job, in the style of NVIDIA's
//! multi-gpu-programming-models: strong, the same grid on every count; weak, the same part per
//! rank (`--grid` is then one rank's part). Each count runs on a communicator of the job's first
//! ranks, verified as a single run is; a table, a JSON file (`--json`) and an SVG plot (`--plot`)
//! give each count's step, compute alone, exposed exchange and parallel efficiency.

use std::path::Path;

use anyhow::Context;
use haloport::core::collective::agree;
use haloport::core::domain::{dims_create, DomainSpec};
use haloport::core::halo::HaloOptions;
use haloport::core::{Backend, Error};
use mpi::topology::{Color as MpiColor, Communicator, SimpleCommunicator};
use plotters::prelude::*;
use serde::Serialize;

use crate::cli::{ScalingMode, StencilArgs};
use crate::commands::exchange::write_json;
use crate::commands::stencil::measured;

/// One rank count's figures.
#[derive(Debug, Clone, Serialize)]
struct ScalingRow {
    ranks: i32,
    procs: [u32; 3],
    grid: [u64; 3],
    step_median_us: f64,
    compute_median_us: f64,
    exposed_exchange_us: f64,
    exchange_median_us: f64,
    /// Messages rank 0 sends per exchange (6 for the 7-point stencil's faces, 26 for all).
    messages: usize,
    /// The exchange's set-up on the slowest rank.
    setup_us: f64,
    /// Strong: t(1) / (n t(n)); weak: t(1) / t(n); from the median steps.
    efficiency: f64,
    verified: bool,
}

#[derive(Debug, Serialize)]
struct ScalingResult {
    /// The schema of the benchmarks' JSON ([`BENCH_SCHEMA`](haloport_cli::results::BENCH_SCHEMA)).
    schema: &'static str,
    command: &'static str,
    mode: &'static str,
    backend: String,
    device: String,
    rows: Vec<ScalingRow>,
}

/// The rank counts of a job of `size`: powers of two below it, then `size`.
fn counts(size: i32) -> Vec<i32> {
    let mut counts: Vec<i32> = std::iter::successors(Some(1_i32), |&n| n.checked_mul(2))
        .take_while(|&n| n < size)
        .collect();
    counts.push(size);
    counts
}

/// Runs the scaling series on `world`, every rank alike.
///
/// # Errors
/// An explicit process grid or decomposition (each count chooses its own), and any run's
/// errors; a count whose result did not verify fails the command after the table.
pub fn run<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    args: &StencilArgs,
    spec: &DomainSpec,
    options: HaloOptions,
    mode: ScalingMode,
) -> anyhow::Result<()> {
    if spec.procs.is_some() || spec.layout.splits.is_some() {
        return Err(Error::InvalidInput(
            "--scaling chooses each rank count's process grid: give neither --procs nor --decomposition".into(),
        )
        .into());
    }
    let mut rows = Vec::new();
    for n in counts(world.size()) {
        let mut spec = spec.clone();
        if mode == ScalingMode::Weak {
            let procs = dims_create(n.unsigned_abs());
            spec.procs = Some(procs);
            spec.grid = [0, 1, 2].map(|k| spec.grid[k] * u64::from(procs[k]));
        }
        let inside = world.rank() < n;
        let sub = world.split_by_color(if inside {
            MpiColor::with_value(0)
        } else {
            MpiColor::undefined()
        });
        let outcome = match sub {
            Some(sub) => measured(
                backend,
                &sub,
                args,
                spec,
                options,
                &std::cell::OnceCell::new(),
            )
            .map_err(|e| {
                e.downcast::<Error>()
                    .unwrap_or_else(|e| Error::Internal(format!("{e:#}")))
            }),
            None => Ok(None),
        };
        // Every rank of the job learns how this count ended before the next begins: the ranks
        // outside it never wait for ranks that stopped on an error.
        let step = format!("the stencil on {n} ranks");
        if let Some(r) = agree(world, &step, outcome).context(step)? {
            rows.push(ScalingRow {
                ranks: r.ranks,
                procs: r.procs,
                grid: r.grid,
                step_median_us: r.step_median_us,
                compute_median_us: r.compute_median_us,
                exposed_exchange_us: r.exposed_exchange_us,
                exchange_median_us: r.exchange_median_us,
                messages: r.messages,
                setup_us: r.setup_us,
                efficiency: 0.0,
                verified: r.verified,
            });
        }
    }
    if world.rank() != 0 {
        return Ok(());
    }
    let base = rows.first().map_or(0.0, |r| r.step_median_us);
    for row in &mut rows {
        let ideal = match mode {
            ScalingMode::Strong => base / f64::from(row.ranks),
            ScalingMode::Weak => base,
        };
        row.efficiency = if row.step_median_us > 0.0 {
            ideal / row.step_median_us
        } else {
            0.0
        };
    }
    let result = ScalingResult {
        schema: haloport_cli::results::BENCH_SCHEMA,
        command: "stencil --scaling",
        mode: mode.name(),
        backend: backend.name().to_owned(),
        device: backend.device_info().name.clone(),
        rows,
    };
    print_table(&result);
    if let Some(path) = &args.json {
        write_json(path, &result, true)?;
    }
    if let Some(path) = &args.plot {
        plot(&result, path)?;
        println!("plot written to {}", path.display());
    }
    if let Some(bad) = result.rows.iter().find(|r| !r.verified && !args.no_verify) {
        return Err(Error::VerificationFailed(format!(
            "the stencil on {} ranks did not verify",
            bad.ranks
        ))
        .into());
    }
    Ok(())
}

fn print_table(r: &ScalingResult) {
    println!(
        "{} scaling of the stencil ({} backend, {}):",
        r.mode, r.backend, r.device
    );
    println!("| ranks | process grid | grid | step | compute alone | exposed exchange | blocking exchange | messages | set-up | efficiency | verified |");
    println!("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for row in &r.rows {
        let [px, py, pz] = row.procs;
        let [nx, ny, nz] = row.grid;
        println!(
            "| {} | {px}x{py}x{pz} | {nx}x{ny}x{nz} | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {} | {:.0} us | {:.0} % | {} |",
            row.ranks,
            row.step_median_us,
            row.compute_median_us,
            row.exposed_exchange_us,
            row.exchange_median_us,
            row.messages,
            row.setup_us,
            100.0 * row.efficiency,
            row.verified
        );
    }
}

/// One of a step's parts, read off a row.
type Part = fn(&ScalingRow) -> f64;

/// Parallel efficiency against ranks, with the step's parts beside it on a second plot.
fn plot(r: &ScalingResult, path: &Path) -> anyhow::Result<()> {
    let fail = |e: String| Error::InvalidInput(format!("drawing {}: {e}", path.display()));
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
    let (left, right) = root.split_horizontally(450);
    let most = r.rows.iter().map(|row| row.ranks).max().unwrap_or(1);
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("{} scaling: parallel efficiency", r.mode),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(0..most + 1, 0.0..1.2)
        .map_err(|e| fail(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("ranks")
        .y_desc("efficiency")
        .draw()
        .map_err(|e| fail(e.to_string()))?;
    let points: Vec<(i32, f64)> = r
        .rows
        .iter()
        .map(|row| (row.ranks, row.efficiency))
        .collect();
    chart
        .draw_series(LineSeries::new(points.clone(), BLUE))
        .map_err(|e| fail(e.to_string()))?;
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
        .map_err(|e| fail(e.to_string()))?;
    let top = r
        .rows
        .iter()
        .map(|row| row.step_median_us)
        .fold(1.0, f64::max)
        * 1.2;
    let mut parts = ChartBuilder::on(&right)
        .caption("median step and its parts", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0..most + 1, 0.0..top)
        .map_err(|e| fail(e.to_string()))?;
    parts
        .configure_mesh()
        .x_desc("ranks")
        .y_desc("us")
        .draw()
        .map_err(|e| fail(e.to_string()))?;
    let series: [(&str, Part, RGBColor); 3] = [
        ("step", |row| row.step_median_us, BLACK),
        ("compute alone", |row| row.compute_median_us, BLUE),
        (
            "exposed exchange",
            |row| row.exposed_exchange_us.max(0.0),
            RED,
        ),
    ];
    for (name, value, color) in series {
        parts
            .draw_series(LineSeries::new(
                r.rows.iter().map(|row| (row.ranks, value(row))),
                color,
            ))
            .map_err(|e| fail(e.to_string()))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
    }
    parts
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(|e| fail(e.to_string()))?;
    root.present().map_err(|e| fail(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::counts;

    #[test]
    fn rank_counts_are_powers_of_two_then_the_job() {
        assert_eq!(counts(1), [1]);
        assert_eq!(counts(4), [1, 2, 4]);
        assert_eq!(counts(6), [1, 2, 4, 6]);
        assert_eq!(counts(8), [1, 2, 4, 8]);
    }
}
