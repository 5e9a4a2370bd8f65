//! `haloport compare`: the same variants and workloads from several result files (machines,
//! backends, vendors) side by side, with each file's median over the first file's.

use std::fmt::Write;
use std::path::Path;

use anyhow::bail;
use plotters::prelude::*;

use crate::report::load::Loaded;
use crate::report::plots::{legend, plot_err};

/// One (variant, workload) present in every file.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Median time per iteration in each file, in file order (microseconds).
    pub medians: Vec<f64>,
}

impl Row {
    /// Each file's median over the first file's (the first is 1).
    pub fn ratios(&self) -> Vec<f64> {
        self.medians.iter().map(|m| m / self.medians[0]).collect()
    }
}

/// A short label for a file: backend, device and host.
pub fn label(data: &Loaded) -> String {
    let h = &data.header;
    format!("{} {} @{}", h.backend, h.device, h.host)
}

/// The rows every file has, in the first file's order.
///
/// # Errors
/// Fewer than two files, or files that share no (variant, workload): nothing to compare.
pub fn rows(files: &[Loaded]) -> anyhow::Result<Vec<Row>> {
    if files.len() < 2 {
        bail!("compare needs at least two result files");
    }
    let rows: Vec<Row> = files[0]
        .entries
        .iter()
        .filter_map(|e| {
            let medians: Option<Vec<f64>> = files
                .iter()
                .map(|f| {
                    f.entries
                        .iter()
                        .find(|o| o.variant == e.variant && o.workload == e.workload)
                        .map(|o| o.median_us)
                })
                .collect();
            medians.map(|medians| Row {
                variant: e.variant.clone(),
                workload: e.workload.clone(),
                medians,
            })
        })
        .collect();
    if rows.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        bail!(
            "{} share no variant on any workload: nothing to compare",
            names.join(" and ")
        );
    }
    Ok(rows)
}

/// The comparison as a Markdown table.
pub fn markdown(files: &[Loaded], rows: &[Row]) -> String {
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        let _ = writeln!(out, "- [{}] {} ({})", i, label(f), f.path.display());
    }
    out.push('\n');
    out.push_str("| workload | variant |");
    for i in 0..files.len() {
        let _ = write!(out, " [{i}] median us |");
    }
    for i in 1..files.len() {
        let _ = write!(out, " [{i}] / [0] |");
    }
    out.push('\n');
    out.push_str("| --- | --- |");
    for _ in 0..(2 * files.len() - 1) {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for r in rows {
        let _ = write!(out, "| {} | {} |", r.workload, r.variant);
        for m in &r.medians {
            let _ = write!(out, " {m:.1} |");
        }
        for ratio in &r.ratios()[1..] {
            let _ = write!(out, " {ratio:.3} |");
        }
        out.push('\n');
    }
    out
}

/// A plot of each later file's time over the first file's, per (workload, variant).
///
/// # Errors
/// The plot cannot be drawn or written.
pub fn plot(files: &[Loaded], rows: &[Row], path: &Path) -> anyhow::Result<()> {
    let n = rows.len() as i32;
    let max = rows.iter().flat_map(|r| r.ratios()).fold(1.0_f64, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 140 + 18 * n as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let names: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r.workload, r.variant))
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Time per iteration relative to [0] {}", label(&files[0])),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(170)
        .build_cartesian_2d(0.0..max, (0..n).into_segmented())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n as usize)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("median time / median time of [0] (below 1 is faster)")
        .draw()
        .map_err(plot_err)?;
    for (f, file) in files.iter().enumerate().skip(1) {
        let c = crate::report::plots::color(f);
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| {
                Circle::new(
                    (r.ratios()[f], SegmentValue::CenterOf(i as i32)),
                    5,
                    c.filled(),
                )
            }))
            .map_err(plot_err)?
            .label(format!("[{f}] {}", label(file)))
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, c.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            [(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::load::{Entry, Header};

    fn file(path: &str, backend: &str, entries: &[(&str, &str, f64)]) -> Loaded {
        let entries = entries
            .iter()
            .map(|(variant, workload, median)| {
                serde_json::from_value::<Entry>(serde_json::json!({
                    "variant": variant, "workload": workload, "blocks": 4, "median_us": median,
                    "stddev_us": 1.0, "verified": true, "iteration_us": [[median]],
                }))
                .expect("entry")
            })
            .collect();
        Loaded {
            path: path.into(),
            header: Header {
                backend: backend.into(),
                device: "dev".into(),
                host: "h".into(),
                ..Header::default()
            },
            workloads: vec![],
            entries,
            partial: None,
        }
    }

    #[test]
    fn only_what_every_file_has_is_compared_with_ratios_to_the_first() {
        let a = file(
            "a.json",
            "cuda",
            &[
                ("base-nb-wait", "thesis-9", 1000.0),
                ("tq-nb-pb", "thesis-9", 900.0),
            ],
        );
        let b = file(
            "b.json",
            "hip",
            &[
                ("tq-nb-pb", "thesis-9", 1800.0),
                ("tq-bl-pb", "thesis-9", 5.0),
            ],
        );
        let files = [a, b];
        let rows = rows(&files).expect("one common row");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].ratios(), vec![1.0, 2.0]);
        let golden = "\
- [0] cuda dev @h (a.json)
- [1] hip dev @h (b.json)

| workload | variant | [0] median us | [1] median us | [1] / [0] |
| --- | --- | ---: | ---: | ---: |
| thesis-9 | tq-nb-pb | 900.0 | 1800.0 | 2.000 |
";
        assert_eq!(markdown(&files, &rows), golden);
    }

    #[test]
    fn files_sharing_nothing_are_refused() {
        let a = file("a.json", "cuda", &[("base-nb-wait", "small", 10.0)]);
        let b = file("b.json", "cuda", &[("base-nb-wait", "large", 10.0)]);
        let err = rows(&[a, b])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "a.json and b.json share no variant on any workload: nothing to compare"
        );
    }
}
