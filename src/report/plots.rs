//! The report's SVG plots (plotters, SVG backend: text is written as SVG text, no fonts needed).
//! Every plot has a title, labelled axes with units, and a legend where there are series.
//! Each function returns `Ok(false)` when the results hold nothing to draw.

use std::path::Path;

use anyhow::anyhow;
use plotters::prelude::*;

use crate::report::headline::HeadlineRow;
use crate::report::load::{Entry, Loaded};

use haloport_thesis::timeline::{CpuEventKind, IterationTimeline};

type Res = anyhow::Result<bool>;

pub(crate) fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a plot: {e}")
}

/// Draws the series legend of `chart` in a framed box at `position`.
pub fn legend<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(position)
        .draw()
        .map_err(plot_err)
}

/// Series colours: matplotlib's "tab10", dark enough for lines and text on white.
const TAB10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The `i`-th series colour.
pub fn color(i: usize) -> RGBColor {
    TAB10[i % TAB10.len()]
}

/// Horizontal bars grouped by variant (down the side), one bar per workload in each group, in
/// the order they first appear: the layout of figures 4.7 and 4.15.
struct GroupedBars<'a> {
    variants: Vec<&'a str>,
    workloads: Vec<&'a str>,
    /// (variant index, workload index, value).
    bars: Vec<(usize, usize, f64)>,
}

impl<'a> GroupedBars<'a> {
    fn new(items: impl Iterator<Item = (&'a str, &'a str, f64)>) -> Self {
        let mut grouped = GroupedBars {
            variants: Vec::new(),
            workloads: Vec::new(),
            bars: Vec::new(),
        };
        let index = |list: &mut Vec<&'a str>, name: &'a str| {
            list.iter().position(|n| *n == name).unwrap_or_else(|| {
                list.push(name);
                list.len() - 1
            })
        };
        for (variant, workload, value) in items {
            let v = index(&mut grouped.variants, variant);
            let w = index(&mut grouped.workloads, workload);
            grouped.bars.push((v, w, value));
        }
        grouped
    }

    /// Rows on the y axis: one per (variant, workload) plus a gap after each variant.
    fn slots(&self) -> i32 {
        (self.variants.len() * (self.workloads.len() + 1)) as i32
    }

    fn max(&self, at_least: f64) -> f64 {
        self.bars.iter().map(|b| b.2).fold(at_least, f64::max) * 1.1
    }

    /// Draws the bars on `area`; variant names when `y_label_area > 20`, a workload legend when
    /// `legend_at` is given, a vertical line at `reference` when given.
    #[allow(clippy::too_many_arguments)]
    fn draw(
        &self,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        title: &str,
        x_desc: &str,
        y_label_area: u32,
        at_least: f64,
        reference: Option<f64>,
        legend_at: Option<SeriesLabelPosition>,
    ) -> anyhow::Result<()> {
        let slot = self.workloads.len() + 1;
        let slots = self.slots();
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(0.0..self.max(at_least), 0..slots)
            .map_err(plot_err)?;
        let named = y_label_area > 20;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(slots as usize)
            .y_label_formatter(&|y| {
                let y = *y as usize;
                match self.variants.get(y / slot) {
                    Some(v) if named && y % slot == slot / 2 => (*v).to_owned(),
                    _ => String::new(),
                }
            })
            .x_desc(x_desc)
            .y_desc(if named { "variant" } else { "" })
            .draw()
            .map_err(plot_err)?;
        for (w, workload) in self.workloads.iter().enumerate() {
            let bars = self.bars.iter().filter(|b| b.1 == w).map(|&(v, _, value)| {
                let y = (v * slot + w) as i32;
                Rectangle::new([(0.0, y), (value, y + 1)], color(w).filled())
            });
            let series = chart.draw_series(bars).map_err(plot_err)?;
            if legend_at.is_some() {
                series.label(*workload).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color(w).filled())
                });
            }
        }
        if let Some(x) = reference {
            chart
                .draw_series(LineSeries::new([(x, 0), (x, slots)], BLACK.stroke_width(1)))
                .map_err(plot_err)?;
        }
        if let Some(position) = legend_at {
            legend(&mut chart, position)?;
        }
        Ok(())
    }
}

/// Figure 4.7: speedup of every variant over the fastest baseline of its send kind, one bar per
/// workload, variants down the side.
pub fn speedup(rows: &[HeadlineRow], path: &Path) -> Res {
    let bars = GroupedBars::new(
        rows.iter()
            .filter_map(|r| Some((r.variant.as_str(), r.workload.as_str(), r.speedup?))),
    );
    if bars.bars.is_empty() {
        return Ok(false);
    }
    let root = SVGBackend::new(path, (900, 120 + 14 * bars.slots() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    bars.draw(
        &root,
        "Speedup over the fastest baseline of the same send kind",
        "speedup (fastest baseline time / variant time; 1 = as fast)",
        120,
        1.0,
        Some(1.0),
        Some(SeriesLabelPosition::LowerRight),
    )?;
    root.present().map_err(plot_err)?;
    Ok(true)
}

/// Figure 4.11: spread of iteration times per variant, one panel per workload (box: quartiles,
/// line: median, whiskers: 1.5 interquartile ranges).
pub fn spread(data: &Loaded, path: &Path) -> Res {
    if data.entries.is_empty() {
        return Ok(false);
    }
    let per_panel = data
        .workloads
        .iter()
        .map(|w| data.entries.iter().filter(|e| &e.workload == w).count())
        .max()
        .unwrap_or(1);
    let panel_height = 90 + 22 * per_panel as u32;
    let root = SVGBackend::new(path, (900, panel_height * data.workloads.len() as u32))
        .into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    for (panel, workload) in root
        .split_evenly((data.workloads.len(), 1))
        .iter()
        .zip(&data.workloads)
    {
        let entries: Vec<&Entry> = data
            .entries
            .iter()
            .filter(|e| &e.workload == workload)
            .collect();
        let times: Vec<Vec<f64>> = entries.iter().map(|e| e.all_times()).collect();
        // The axis spans the whiskers (1.5 interquartile ranges), not single outliers, so the
        // boxes stay readable.
        let (lo, hi) = times
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| Quartiles::new(t).values())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), q| {
                (a.min(f64::from(q[0])), b.max(f64::from(q[4])))
            });
        if !lo.is_finite() {
            continue;
        }
        let pad = (hi - lo).max(1.0) * 0.05;
        let n = entries.len() as i32;
        let names: Vec<String> = entries.iter().map(|e| e.variant.clone()).collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("Time per iteration, {workload}"),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(120)
            .build_cartesian_2d(
                (lo - pad) as f32..(hi + pad) as f32,
                (0..n).into_segmented(),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n as usize)
            .y_label_formatter(&|y| match y {
                SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc("time per iteration (us)")
            .y_desc("variant")
            .draw()
            .map_err(plot_err)?;
        let boxes: Vec<_> = times
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, t)| {
                Boxplot::new_horizontal(SegmentValue::CenterOf(i as i32), &Quartiles::new(t))
                    .width(12)
                    .style(color(i))
            })
            .collect();
        chart.draw_series(boxes).map_err(plot_err)?;
    }
    root.present().map_err(plot_err)?;
    Ok(true)
}

fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    haloport_thesis::stats::median(&values.collect::<Vec<_>>())
}

/// Figure 4.9: packing time per block (rank 0, median over the last run's iterations) for the
/// fastest non-blocking baseline and the non-blocking taskqueue variants, on the workload with
/// the most blocks.
pub fn packing(data: &Loaded, path: &Path) -> Res {
    let Some(workload) = data
        .entries
        .iter()
        .filter(|e| {
            e.timelines
                .first()
                .is_some_and(|t| t.iter().any(|i| !i.blocks.is_empty()))
        })
        .max_by_key(|e| e.blocks)
        .map(|e| e.workload.clone())
    else {
        return Ok(false);
    };
    let fastest_baseline = data
        .entries
        .iter()
        .filter(|e| e.workload == workload && e.variant.starts_with("base-nb"))
        .min_by(|a, b| a.median_us.total_cmp(&b.median_us));
    let chosen: Vec<&Entry> = fastest_baseline
        .into_iter()
        .chain(data.entries.iter().filter(|e| {
            e.workload == workload
                && (e.variant.starts_with("tq-nb") || e.variant.starts_with("tqm-nb"))
        }))
        .collect();
    let series: Vec<(String, Vec<(i32, f64)>)> = chosen
        .iter()
        .filter_map(|e| {
            let timeline = e.timelines.first()?;
            let points: Vec<(i32, f64)> = (0..e.blocks)
                .filter_map(|b| {
                    median(
                        timeline
                            .iter()
                            .filter_map(|it| it.blocks.get(b))
                            .map(|p| p.pack_us[1] - p.pack_us[0]),
                    )
                    .map(|m| (b as i32, m))
                })
                .collect();
            (!points.is_empty()).then(|| (e.variant.clone(), points))
        })
        .collect();
    if series.is_empty() {
        return Ok(false);
    }
    let blocks = chosen.iter().map(|e| e.blocks).max().unwrap_or(1) as i32;
    let max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Packing time per block, {workload} (rank 0, median of the last run)"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(-1..blocks, 0.0..max)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("block")
        .y_desc("packing time (us)")
        .draw()
        .map_err(plot_err)?;
    for (i, (name, points)) in series.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(plot_err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(plot_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(plot_err)?;
    Ok(true)
}

/// Figure 4.15: event-loop profiling of the taskqueue variants: share of events processed right
/// after another event, and the most in a row (rank 0), one bar per workload.
pub fn profile(data: &Loaded, path: &Path) -> Res {
    let profiled = || {
        data.entries
            .iter()
            .filter_map(|e| Some((e.variant.as_str(), e.workload.as_str(), e.profile?)))
    };
    let chained = GroupedBars::new(profiled().map(|(v, w, p)| (v, w, 100.0 * p.chained_share())));
    let in_row = GroupedBars::new(profiled().map(|(v, w, p)| (v, w, p.max_in_row as f64)));
    if chained.bars.is_empty() {
        return Ok(false);
    }
    let root = SVGBackend::new(path, (1100, 120 + 14 * chained.slots() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (left, right) = root.split_horizontally(560);
    chained.draw(
        &left,
        "Events right after another event",
        "share of events (%)",
        100,
        1.0,
        None,
        None,
    )?;
    in_row.draw(
        &right,
        "Most events in a row",
        "events",
        20,
        1.0,
        None,
        Some(SeriesLabelPosition::LowerRight),
    )?;
    root.present().map_err(plot_err)?;
    Ok(true)
}

/// The iteration of the median duration from rank 0's last run.
pub fn median_iteration(entry: &Entry) -> Option<&IterationTimeline> {
    let timeline = entry.timelines.first()?;
    let mut sorted: Vec<&IterationTimeline> = timeline.iter().collect();
    sorted.sort_by(|a, b| a.duration_us.total_cmp(&b.duration_us));
    sorted.get(sorted.len() / 2).copied()
}

fn event_name(kind: CpuEventKind) -> &'static str {
    match kind {
        CpuEventKind::Launch => "kernel launched",
        CpuEventKind::PackDone => "pack kernel done",
        CpuEventKind::CopyInDone => "H2D copy done",
        CpuEventKind::Task => "task from GPU",
        CpuEventKind::CopyOutDone => "D2H copy done",
        CpuEventKind::Send => "send",
        CpuEventKind::Recv => "receive done",
        CpuEventKind::KernelsDone => "kernels done",
        CpuEventKind::SendsDone => "sends done",
        CpuEventKind::Barrier => "barrier passed",
        _ => "other",
    }
}

/// Figures 4.4 and 4.8: one iteration (rank 0's median of the last run): per block, packing
/// and unpacking bars on the host clock; on the top row, the CPU's events.
pub fn timeline(entry: &Entry, path: &Path) -> Res {
    let Some(it) = median_iteration(entry) else {
        return Ok(false);
    };
    if it.blocks.is_empty() {
        return Ok(false);
    }
    let rows = it.blocks.len() as i32 + 1;
    let end = it
        .blocks
        .iter()
        .map(|b| b.unpack_us[1])
        .chain(it.cpu.iter().map(|e| e.at_us))
        .fold(it.duration_us, f64::max);
    let root = SVGBackend::new(path, (1000, 160 + 22 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} on {}: iteration {} ({:.1} us), rank 0",
                entry.variant, entry.workload, it.iteration, it.duration_us
            ),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end * 1.02, (0..rows).into_segmented())
        .map_err(plot_err)?;
    let cpu_row = rows - 1;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows as usize)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(r) if *r == cpu_row => "CPU".to_owned(),
            SegmentValue::CenterOf(r) if *r < cpu_row => format!("block {r}"),
            _ => String::new(),
        })
        .x_desc("time since the iteration started (us, host clock)")
        .draw()
        .map_err(plot_err)?;
    let bar = |row: i32, span: [f64; 2], c: RGBColor| {
        Rectangle::new(
            [
                (span[0], SegmentValue::Exact(row)),
                (span[1], SegmentValue::Exact(row + 1)),
            ],
            c.mix(0.8).filled(),
        )
    };
    let pack = RGBColor(31, 119, 180);
    let unpack = RGBColor(44, 160, 44);
    chart
        .draw_series(
            it.blocks
                .iter()
                .enumerate()
                .map(|(b, p)| bar(b as i32, p.pack_us, pack)),
        )
        .map_err(plot_err)?
        .label("packing (GPU)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], pack.filled()));
    chart
        .draw_series(
            it.blocks
                .iter()
                .enumerate()
                .map(|(b, p)| bar(b as i32, p.unpack_us, unpack)),
        )
        .map_err(plot_err)?
        .label("unpacking (GPU)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], unpack.filled()));
    let mut kinds: Vec<CpuEventKind> = Vec::new();
    for e in &it.cpu {
        if !kinds.contains(&e.kind) {
            kinds.push(e.kind);
        }
    }
    for (k, kind) in kinds.iter().enumerate() {
        let c = color(k + 2);
        let dots: Vec<_> = it
            .cpu
            .iter()
            .filter(|e| e.kind == *kind)
            .map(|e| {
                let row = e.block.map_or(cpu_row, |b| b as i32);
                Circle::new((e.at_us, SegmentValue::CenterOf(row)), 4, c.filled())
            })
            .collect();
        chart
            .draw_series(dots)
            .map_err(plot_err)?
            .label(format!("CPU: {}", event_name(*kind)))
            .legend(move |(x, y)| Circle::new((x + 6, y), 4, c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(plot_err)?;
    Ok(true)
}
