//! `haloport compare`: the same variants and workloads from several result files (machines,
//! backends, vendors) side by side, with each file's median over the first file's.
//!
//! Only like is put beside like: results under the same (variant, workload) label must all be
//! verified, come from the same pattern and rank count, move the same bytes per rank and
//! direction, and be complete (no run missing from a partial sweep). Otherwise [`rows`] refuses,
//! naming the files, the labels and what differs; with `force` it keeps the rows and marks each
//! affected one `MISMATCH: ...` in the table and the plot.

use std::fmt::Write;
use std::path::Path;

use anyhow::bail;
use plotters::prelude::*;

use crate::report::load::{Entry, Loaded};
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
    /// What differs between the files under this label (empty: like with like). Only a forced
    /// comparison has rows with mismatches.
    pub mismatch: Vec<String>,
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

/// `[0] a, [1] b, ...`: one value per file, for messages.
fn per_file<T: std::fmt::Display>(values: &[T]) -> String {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("[{i}] {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether every value equals the first.
fn all_same<T: PartialEq>(values: &[T]) -> bool {
    values.iter().all(|v| *v == values[0])
}

/// What differs between whole files: rank counts, patterns, partial sweeps.
fn file_mismatches(files: &[Loaded]) -> Vec<String> {
    let mut out = Vec::new();
    let ranks: Vec<i64> = files.iter().map(|f| f.header.ranks).collect();
    if !all_same(&ranks) {
        out.push(format!("ranks: {}", per_file(&ranks)));
    }
    let patterns: Vec<&str> = files.iter().map(|f| f.header.pattern.as_str()).collect();
    if !all_same(&patterns) {
        out.push(format!("pattern: {}", per_file(&patterns)));
    }
    for (i, f) in files.iter().enumerate() {
        if let Some(p) = &f.partial {
            out.push(format!(
                "[{i}] is a partial sweep ({} of {} runs missing)",
                p.missing_runs, p.total_runs
            ));
        }
    }
    out
}

/// What differs between the entries of one label, one per file.
fn entry_mismatches(files: &[Loaded], entries: &[&Entry]) -> Vec<String> {
    let mut out = Vec::new();
    if entries.iter().any(|e| !e.verified) {
        let verdicts: Vec<&str> = entries
            .iter()
            .map(|e| if e.verified { "yes" } else { "NO" })
            .collect();
        out.push(format!("verified: {}", per_file(&verdicts)));
    }
    // A protocol that differs makes the times incomparable: back to back is not the thesis
    // protocol, device-direct is not host-staged. Files that predate the fields are not checked.
    let barriers: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.barrier)
        .map(|b| if b { "barrier" } else { "back to back" })
        .collect();
    if !all_same(&barriers) {
        let shown: Vec<&str> = entries
            .iter()
            .map(|e| match e.barrier {
                Some(true) => "barrier",
                Some(false) => "back to back",
                None => "unknown",
            })
            .collect();
        out.push(format!("iterations: {}", per_file(&shown)));
    }
    let transports: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.transport.as_deref())
        .collect();
    if !all_same(&transports) {
        let shown: Vec<&str> = entries
            .iter()
            .map(|e| e.transport.as_deref().unwrap_or("unknown"))
            .collect();
        out.push(format!("transport: {}", per_file(&shown)));
    }
    // Files that predate recorded patterns cannot be checked here; the pattern name still is.
    let bytes: Vec<String> = entries
        .iter()
        .map(|e| {
            let b = e.bytes_per_rank();
            if b.is_empty() {
                "unknown".to_owned()
            } else if all_same(&b) {
                b[0].to_string()
            } else {
                format!("{b:?}")
            }
        })
        .collect();
    let known: Vec<&String> = bytes.iter().filter(|b| *b != "unknown").collect();
    if !all_same(&known) {
        out.push(format!(
            "bytes per rank and direction: {}",
            per_file(&bytes)
        ));
    }
    for (i, (f, e)) in files.iter().zip(entries).enumerate() {
        let runs = e.iteration_us.len() as i64;
        if runs < f.header.runs {
            out.push(format!(
                "[{i}] has {runs} of {} runs (partial)",
                f.header.runs
            ));
        }
    }
    out
}

/// The rows every file has, in the first file's order.
///
/// # Errors
/// Fewer than two files; files that share no (variant, workload): nothing to compare; and,
/// unless `force`, results under one label that are not alike (see the module doc): the error
/// names the files, each label and what differs.
pub fn rows(files: &[Loaded], force: bool) -> anyhow::Result<Vec<Row>> {
    if files.len() < 2 {
        bail!("compare needs at least two result files");
    }
    let rows: Vec<Row> = files[0]
        .entries
        .iter()
        .filter_map(|e| {
            let entries: Option<Vec<&Entry>> = files
                .iter()
                .map(|f| {
                    f.entries
                        .iter()
                        .find(|o| o.variant == e.variant && o.workload == e.workload)
                })
                .collect();
            entries.map(|entries| Row {
                variant: e.variant.clone(),
                workload: e.workload.clone(),
                medians: entries.iter().map(|o| o.median_us).collect(),
                mismatch: entry_mismatches(files, &entries),
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
    let whole = file_mismatches(files);
    let mut rows = rows;
    if !force && (!whole.is_empty() || rows.iter().any(|r| !r.mismatch.is_empty())) {
        let names: Vec<String> = files
            .iter()
            .enumerate()
            .map(|(i, f)| format!("[{i}] {}", f.path.display()))
            .collect();
        let mut lines: Vec<String> = whole.iter().map(|m| format!("every label: {m}")).collect();
        lines.extend(
            rows.iter()
                .filter(|r| !r.mismatch.is_empty())
                .map(|r| format!("{} {}: {}", r.workload, r.variant, r.mismatch.join("; "))),
        );
        bail!(
            "refusing to compare {}: results under the same label are not alike:\n  {}\n(--force compares them anyway, marking these rows MISMATCH)",
            names.join(", "),
            lines.join("\n  ")
        );
    }
    for r in &mut rows {
        let own = std::mem::take(&mut r.mismatch);
        r.mismatch = whole.iter().cloned().chain(own).collect();
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
    let marked = rows.iter().filter(|r| !r.mismatch.is_empty()).count();
    if marked > 0 {
        let _ = writeln!(
            out,
            "**MISMATCH: {marked} of {} rows put unlike results side by side (compared with --force); see the mismatch column.**\n",
            rows.len()
        );
    }
    out.push_str("| workload | variant |");
    for i in 0..files.len() {
        let _ = write!(out, " [{i}] median us |");
    }
    for i in 1..files.len() {
        let _ = write!(out, " [{i}] / [0] |");
    }
    if marked > 0 {
        out.push_str(" mismatch |");
    }
    out.push('\n');
    out.push_str("| --- | --- |");
    for _ in 0..(2 * files.len() - 1) {
        out.push_str(" ---: |");
    }
    if marked > 0 {
        out.push_str(" --- |");
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
        if marked > 0 {
            if r.mismatch.is_empty() {
                out.push_str(" |");
            } else {
                let _ = write!(out, " MISMATCH: {} |", r.mismatch.join("; "));
            }
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
        .map(|r| {
            let mark = if r.mismatch.is_empty() {
                ""
            } else {
                "MISMATCH "
            };
            format!("{mark}{} {}", r.workload, r.variant)
        })
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
        let rows = rows(&files, false).expect("one common row");
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
        let err = rows(&[a, b], false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "a.json and b.json share no variant on any workload: nothing to compare"
        );
    }

    /// Two files with the same two rows, alike in every way.
    fn alike() -> [Loaded; 2] {
        let rows = [
            ("base-nb-wait", "thesis-9", 1000.0),
            ("tq-nb-pb", "thesis-9", 900.0),
        ];
        let mut files = [file("a.json", "cuda", &rows), file("b.json", "hip", &rows)];
        for f in &mut files {
            f.header.ranks = 2;
            f.header.pattern = "pairwise".into();
            f.header.runs = 1;
        }
        files
    }

    fn refusal(files: &[Loaded]) -> String {
        rows(files, false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    fn blocks(elems: u64) -> Vec<RankPattern> {
        (0..2)
            .map(|rank| RankPattern {
                rank,
                blocks: vec![BlockSpec {
                    elems,
                    dest: 1 - rank,
                    source: 1 - rank,
                }],
            })
            .collect()
    }

    use haloport_core::pattern::{BlockSpec, RankPattern};

    #[test]
    fn alike_files_compare_without_marks() {
        let files = alike();
        let rows = rows(&files, false).expect("alike");
        assert!(rows.iter().all(|r| r.mismatch.is_empty()));
        assert!(!markdown(&files, &rows).contains("MISMATCH"));
    }

    #[test]
    fn an_unverified_result_beside_a_verified_one_is_refused() {
        let mut files = alike();
        files[1].entries[1].verified = false;
        let err = refusal(&files);
        assert!(
            err.starts_with("refusing to compare [0] a.json, [1] b.json: "),
            "{err}"
        );
        assert!(
            err.contains("\n  thesis-9 tq-nb-pb: verified: [0] yes, [1] NO\n"),
            "{err}"
        );
        assert!(!err.contains("base-nb-wait"), "only the unlike row: {err}");
        assert!(err.contains("--force"), "{err}");
    }

    #[test]
    fn different_patterns_ranks_or_bytes_are_refused() {
        let mut files = alike();
        files[1].header.pattern = "ring".into();
        assert!(
            refusal(&files).contains("every label: pattern: [0] pairwise, [1] ring"),
            "{}",
            refusal(&files)
        );

        let mut files = alike();
        files[1].header.ranks = 4;
        assert!(refusal(&files).contains("every label: ranks: [0] 2, [1] 4"));

        let mut files = alike();
        files[0].entries[0].patterns = blocks(100);
        files[1].entries[0].patterns = blocks(50);
        let err = refusal(&files);
        assert!(
            err.contains("thesis-9 base-nb-wait: bytes per rank and direction: [0] 800, [1] 400"),
            "{err}"
        );
        // Equal sizes are alike.
        files[1].entries[0].patterns = blocks(100);
        assert!(rows(&files, false).is_ok());
    }

    #[test]
    fn back_to_back_and_barrier_times_are_not_alike() {
        let mut files = alike();
        files[0].entries[0].barrier = Some(true);
        files[1].entries[0].barrier = Some(false);
        let err = refusal(&files);
        assert!(
            err.contains("base-nb-wait: iterations: [0] barrier, [1] back to back"),
            "{err}"
        );
        // A file that predates the field is not held against the other.
        files[1].entries[0].barrier = None;
        assert!(rows(&files, false).is_ok());
        files[0].entries[1].transport = Some("mpi".into());
        files[1].entries[1].transport = Some("ipc".into());
        let err = refusal(&files);
        assert!(
            err.contains("tq-nb-pb: transport: [0] mpi, [1] ipc"),
            "{err}"
        );
    }

    #[test]
    fn a_partial_sweep_is_refused() {
        let mut files = alike();
        files[1].header.runs = 2;
        files[1].partial = Some(crate::report::Partial {
            total_runs: 8,
            missing_runs: 2,
            missing: vec![],
        });
        let err = refusal(&files);
        assert!(
            err.contains("every label: [1] is a partial sweep (2 of 8 runs missing)"),
            "{err}"
        );
        assert!(err.contains("[1] has 1 of 2 runs (partial)"), "{err}");
    }

    #[test]
    fn force_keeps_unlike_rows_and_marks_them_loudly() {
        let mut files = alike();
        files[1].entries[1].verified = false;
        let marked = rows(&files, true).expect("forced");
        assert_eq!(marked.len(), 2);
        assert!(marked[0].mismatch.is_empty());
        assert_eq!(
            marked[1].mismatch,
            vec!["verified: [0] yes, [1] NO".to_owned()]
        );
        let golden = "\
- [0] cuda dev @h (a.json)
- [1] hip dev @h (b.json)

**MISMATCH: 1 of 2 rows put unlike results side by side (compared with --force); see the mismatch column.**

| workload | variant | [0] median us | [1] median us | [1] / [0] | mismatch |
| --- | --- | ---: | ---: | ---: | --- |
| thesis-9 | base-nb-wait | 1000.0 | 1000.0 | 1.000 | |
| thesis-9 | tq-nb-pb | 900.0 | 900.0 | 1.000 | MISMATCH: verified: [0] yes, [1] NO |
";
        assert_eq!(markdown(&files, &marked), golden);

        // A file-wide difference marks every row.
        let mut files = alike();
        files[1].header.pattern = "ring".into();
        let rows = rows(&files, true).expect("forced");
        assert!(rows
            .iter()
            .all(|r| r.mismatch == vec!["pattern: [0] pairwise, [1] ring".to_owned()]));
    }
}
