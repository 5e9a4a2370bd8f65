//! Reading result files back: a sweep (`sweep.json`, optionally gzipped) or a run's `--json`
//! file, as the same list of (variant, workload) entries. A sweep directory without
//! `sweep.json` but with a manifest is a partial sweep (interrupted, or still running): its
//! cells are read from the runs on disk and the result says what is missing ([`Partial`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use haloport_core::pattern::RankPattern;
use haloport_thesis::strategy::EventProfile;
use haloport_thesis::timeline::IterationTimeline;
use serde::Deserialize;

use crate::report::headline::Measured;
use crate::results::sweep_dir;

/// What a report says about where the results come from.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// "run" or "sweep".
    pub kind: String,
    /// "host", "cuda", "hip".
    pub backend: String,
    /// Device name.
    pub device: String,
    /// Device vendor.
    pub vendor: String,
    /// Host name.
    pub host: String,
    /// Ranks.
    pub ranks: i64,
    /// Pattern.
    pub pattern: String,
    /// Runs, iterations, warm-up.
    pub runs: i64,
    /// See `runs`.
    pub iterations: i64,
    /// See `runs`.
    pub warmup: i64,
    /// Build revision.
    pub git: String,
}

/// One (variant, workload) result.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Blocks per rank.
    pub blocks: usize,
    /// Median, mean, spread (microseconds).
    pub median_us: f64,
    /// See `median_us`.
    pub stddev_us: f64,
    /// Verification verdict.
    pub verified: bool,
    /// How bytes travelled ("mpi", "ipc"); `None` in files that predate it.
    #[serde(default)]
    pub transport: Option<String>,
    /// Whether iterations ended with a barrier; `None` in files that predate it.
    #[serde(default)]
    pub barrier: Option<bool>,
    /// Rank 0's measured iteration times per run.
    pub iteration_us: Vec<Vec<f64>>,
    /// Every rank's pattern as validated (empty in files that predate it).
    #[serde(default)]
    pub patterns: Vec<RankPattern>,
    /// Every rank's last-run timeline.
    #[serde(default)]
    pub timelines: Vec<Vec<IterationTimeline>>,
    /// Rank 0's event-loop profile (taken from the per-rank list).
    #[serde(skip)]
    pub profile: Option<EventProfile>,
    #[serde(default, rename = "profile")]
    profiles: Vec<Option<EventProfile>>,
}

impl Entry {
    /// The numbers the headline table needs.
    pub fn measured(&self) -> Measured {
        Measured {
            variant: self.variant.clone(),
            workload: self.workload.clone(),
            median_us: self.median_us,
            stddev_us: self.stddev_us,
            verified: self.verified,
        }
    }

    /// Every measured iteration time of rank 0.
    pub fn all_times(&self) -> Vec<f64> {
        self.iteration_us.iter().flatten().copied().collect()
    }

    /// Bytes each rank sends per iteration (8 per f64 element), in rank order; empty when the
    /// file holds no patterns. Each block's send and receive buffers have the same size, so
    /// this is also what each rank receives.
    pub fn bytes_per_rank(&self) -> Vec<u64> {
        self.patterns
            .iter()
            .map(|p| p.blocks.iter().map(|b| b.elems * 8).sum())
            .collect()
    }
}

/// What a partial sweep lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    /// Runs the sweep's plan holds (cells times runs).
    pub total_runs: usize,
    /// Runs not on disk.
    pub missing_runs: usize,
    /// The missing runs, one line per cell (`base-nb-wait on small: run 1 of 2 missing`).
    pub missing: Vec<String>,
}

impl Partial {
    /// One line saying the sweep is partial and how much is missing.
    pub fn summary(&self) -> String {
        if self.missing_runs == 0 {
            format!(
                "PARTIAL sweep: all {} runs are on disk but sweep.json was never assembled; `haloport sweep --resume DIR` (same options) assembles it",
                self.total_runs
            )
        } else {
            format!(
                "PARTIAL sweep: {} of {} runs missing (interrupted or still running); `haloport sweep --resume DIR` (same options) runs them",
                self.missing_runs, self.total_runs
            )
        }
    }
}

/// A loaded result file.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it came from.
    pub path: PathBuf,
    /// Provenance.
    pub header: Header,
    /// Workloads, in file order.
    pub workloads: Vec<String>,
    /// Entries, in file order.
    pub entries: Vec<Entry>,
    /// Set for a sweep directory with runs on disk but no `sweep.json`.
    pub partial: Option<Partial>,
}

fn text(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut out)
            .with_context(|| format!("decompressing {}", path.display()))?;
        return Ok(out);
    }
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", path.display()))
}

/// Resolves a directory to the sweep file inside it.
fn resolve(input: &Path) -> anyhow::Result<PathBuf> {
    if !input.is_dir() {
        return Ok(input.to_path_buf());
    }
    for name in ["sweep.json", "sweep.json.gz"] {
        let candidate = input.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "{} holds no sweep.json or sweep.json.gz (nor a partial sweep's {})",
        input.display(),
        sweep_dir::MANIFEST
    )
}

/// Loads a sweep or run result file (or a directory holding `sweep.json[.gz]`, or the manifest
/// and run files of a partial sweep).
///
/// # Errors
/// A file that cannot be read, is not JSON, or is not a haloport result.
pub fn load(input: &Path) -> anyhow::Result<Loaded> {
    let assembled = ["sweep.json", "sweep.json.gz"]
        .iter()
        .any(|name| input.join(name).is_file());
    if input.is_dir() && !assembled && input.join(sweep_dir::MANIFEST).is_file() {
        return load_partial(input);
    }
    let path = resolve(input)?;
    let value: serde_json::Value = serde_json::from_str(&text(&path)?)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    let header = header_of(&value);
    let raw = match value.get("results") {
        Some(results) => results.clone(),
        None if value.get("variant").is_some() => serde_json::Value::Array(vec![value.clone()]),
        None => bail!(
            "{} is not a haloport result file (no \"results\" and no \"variant\")",
            path.display()
        ),
    };
    let entries = entries_of(&path, raw)?;
    Ok(Loaded {
        path,
        header,
        workloads: workloads_of(&entries),
        entries,
        partial: None,
    })
}

/// A partial sweep: every cell with a run on disk, over the runs it has.
fn load_partial(dir: &Path) -> anyhow::Result<Loaded> {
    let manifest = sweep_dir::read_manifest(dir)?;
    let plan = &manifest.plan;
    let missing = sweep_dir::missing(dir, plan);
    let mut results = Vec::new();
    for workload in 0..plan.workloads.len() {
        for variant in 0..plan.variants.len() {
            if let Some(cell) = sweep_dir::assemble_cell(dir, plan, workload, variant, None)? {
                results.push(cell);
            }
        }
    }
    let path = dir.join(sweep_dir::MANIFEST);
    let mut header = header_of(&manifest.header);
    header.kind = "partial sweep".into();
    let entries = entries_of(&path, serde_json::to_value(&results)?)?;
    Ok(Loaded {
        path,
        header,
        workloads: workloads_of(&entries),
        entries,
        partial: Some(Partial {
            total_runs: plan.units().len(),
            missing_runs: missing.len(),
            missing: sweep_dir::describe_missing(plan, &missing),
        }),
    })
}

/// The header keys of a result file (or of a manifest's starting header).
fn header_of(value: &serde_json::Value) -> Header {
    let s = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
    let i = |key: &str| value[key].as_i64().unwrap_or_default();
    let kind = s("kind");
    Header {
        kind: if kind.is_empty() { "run".into() } else { kind },
        backend: s("backend"),
        device: value["device"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        vendor: value["device"]["vendor"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        host: s("host"),
        ranks: i("ranks"),
        pattern: s("pattern"),
        runs: i("runs"),
        iterations: i("iterations"),
        warmup: i("warmup"),
        git: value["build"]["git"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned(),
    }
}

/// The entries of a result list.
fn entries_of(path: &Path, raw: serde_json::Value) -> anyhow::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = serde_json::from_value(raw)
        .with_context(|| format!("{}: results are not in haloport's format", path.display()))?;
    for e in &mut entries {
        e.profile = e.profiles.first().copied().flatten();
    }
    Ok(entries)
}

/// Workloads in the order the entries first name them.
fn workloads_of(entries: &[Entry]) -> Vec<String> {
    let mut workloads: Vec<String> = Vec::new();
    for e in entries {
        if !workloads.contains(&e.workload) {
            workloads.push(e.workload.clone());
        }
    }
    workloads
}
