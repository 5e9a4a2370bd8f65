//! Reports from result files: the tables of thesis 4.2-4.5 as Markdown, the plots of figures
//! 4.4/4.8, 4.7, 4.9, 4.11 and 4.15 as SVG, timelines as Chrome trace JSON, and side-by-side
//! comparison of files from different machines, backends or vendors.
//!
//! Everything here reads result files ([`mod@load`]) and needs neither MPI nor a GPU. A partial
//! sweep (runs on disk, no `sweep.json`) is reported over the runs it has, and says so at the
//! top of the report and in [`Written::partial`].

pub mod compare;
pub mod headline;
pub mod load;
pub mod plots;
pub mod trace;

use std::fmt::Write;
use std::path::{Path, PathBuf};

pub use headline::{headline, markdown, HeadlineRow, Measured};
pub use load::{load, Entry, Loaded, Partial};

/// Files a report wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// The Markdown report.
    pub report: PathBuf,
    /// Plots and traces, in the order written.
    pub files: Vec<PathBuf>,
    /// Set when the input was a partial sweep: what it lacks.
    pub partial: Option<Partial>,
}

/// The report being written: its Markdown and the files beside it.
struct Output<'a> {
    md: String,
    dir: &'a Path,
    written: Written,
}

impl Output<'_> {
    /// Draws a plot into `name` and embeds it.
    fn plot(
        &mut self,
        name: &str,
        title: &str,
        draw: impl FnOnce(&Path) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let path = self.dir.join(name);
        if draw(&path)? {
            let _ = writeln!(self.md, "- {title}:\n\n  ![{title}]({name})\n");
            self.written.files.push(path);
        }
        Ok(())
    }

    /// Writes a file into `name` and links it.
    fn link(
        &mut self,
        name: &str,
        title: &str,
        write: impl FnOnce(&Path) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let path = self.dir.join(name);
        if write(&path)? {
            let _ = writeln!(self.md, "- {title}: [{name}]({name})");
            self.written.files.push(path);
        }
        Ok(())
    }
}

/// The variants a timeline plot and trace are drawn for on `workload`: the fastest baseline and
/// the fastest taskqueue variant.
fn showcase<'a>(data: &'a Loaded, workload: &str) -> Vec<&'a Entry> {
    let fastest = |prefix: &str| {
        data.entries
            .iter()
            .filter(|e| e.workload == workload && e.variant.starts_with(prefix))
            .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
    };
    [fastest("base-"), fastest("tq")]
        .into_iter()
        .flatten()
        .collect()
}

/// Writes `report.md`, the SVG plots and the Chrome traces for the results in `input` into `dir`.
///
/// # Errors
/// Unreadable input, or files that cannot be written.
pub fn write_report(input: &Path, dir: &Path) -> anyhow::Result<Written> {
    let data = load(input)?;
    std::fs::create_dir_all(dir)?;
    let written = Written {
        partial: data.partial.clone(),
        ..Written::default()
    };
    let measured: Vec<Measured> = data.entries.iter().map(Entry::measured).collect();
    let rows = headline(&measured);

    let mut md = String::new();
    let h = &data.header;
    let _ = writeln!(md, "# haloport report\n");
    // Device names often start with their vendor ("NVIDIA H200"): say it once.
    let device = if h.device.starts_with(&h.vendor) {
        h.device.clone()
    } else {
        format!("{} {}", h.vendor, h.device)
    };
    let _ = writeln!(
        md,
        "{} on {} ({device}), host {}, {} ranks, pattern {}, {} runs x {} iterations ({} warm-up), build {}.\n",
        h.kind, h.backend, h.host, h.ranks, h.pattern, h.runs, h.iterations, h.warmup, h.git
    );
    if data.entries.iter().any(|e| e.barrier == Some(false)) {
        let _ = writeln!(
            md,
            "**Back to back:** the device-direct variants ran without the closing barrier, pipelined, several\n\
             epochs in flight; each of their times is the period between iterations' ends, averaged over\n\
             the iterations in flight.\n"
        );
    }
    if let Some(partial) = &data.partial {
        let _ = writeln!(md, "**{}.**\n", partial.summary());
        let _ = writeln!(
            md,
            "Cells are summarised over the runs on disk; a cell with no run is left out. There are no\n\
             timelines: converting device times needs the clock fit made when the sweep completes.\n"
        );
        if !partial.missing.is_empty() {
            let _ = writeln!(md, "Missing:\n");
            for line in &partial.missing {
                let _ = writeln!(md, "- {line}");
            }
            md.push('\n');
        }
    }
    let _ = writeln!(
        md,
        "## Time per iteration, speedup and efficiency (thesis tables 4.2-4.5)\n"
    );
    let _ = writeln!(
        md,
        "Median over every measured iteration of rank 0. Speedup: the fastest baseline of the same send\n\
         kind on the same workload over this variant (above 1 is faster). Efficiency: the mpi-only floor\n\
         (the same messages between host buffers, no GPU) over this variant.\n"
    );
    md.push_str(&markdown(&rows));

    let profiles: Vec<&Entry> = data
        .entries
        .iter()
        .filter(|e| e.profile.is_some())
        .collect();
    if !profiles.is_empty() {
        let _ = writeln!(md, "\n## Event-loop profiling (thesis 4.4, figure 4.15)\n");
        let _ = writeln!(
            md,
            "| workload | variant | events (rank 0) | right after another event | most in a row |"
        );
        let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: |");
        for e in &profiles {
            if let Some(p) = &e.profile {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.1} % | {} |",
                    e.workload,
                    e.variant,
                    p.events,
                    100.0 * p.chained_share(),
                    p.max_in_row
                );
            }
        }
    }

    let _ = writeln!(md, "\n## Plots\n");
    let mut out = Output { md, dir, written };
    out.plot("speedup.svg", "Speedup per variant (fig. 4.7)", |p| {
        plots::speedup(&rows, p)
    })?;
    out.plot("spread.svg", "Iteration-time spread (fig. 4.11)", |p| {
        plots::spread(&data, p)
    })?;
    out.plot("packing.svg", "Packing time per block (fig. 4.9)", |p| {
        plots::packing(&data, p)
    })?;
    out.plot("profile.svg", "Event-loop profiling (fig. 4.15)", |p| {
        plots::profile(&data, p)
    })?;
    for workload in &data.workloads {
        for entry in showcase(&data, workload) {
            let (v, w) = (&entry.variant, &entry.workload);
            out.plot(
                &format!("timeline-{v}-{w}.svg"),
                &format!("One iteration of {v} on {w} (figs. 4.4, 4.8)"),
                |p| plots::timeline(entry, p),
            )?;
            out.link(
                &format!("trace-{v}-{w}.json"),
                &format!("Chrome trace of {v} on {w} (open in Perfetto)"),
                |p| trace::write(entry, p),
            )?;
        }
    }
    let Output {
        md, mut written, ..
    } = out;
    let report = dir.join("report.md");
    std::fs::write(&report, md)?;
    written.report = report;
    Ok(written)
}
