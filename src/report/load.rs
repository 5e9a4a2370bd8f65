//! Reading result files back: a sweep (`sweep.json`, optionally gzipped) or a run's `--json`
//! file, as the same list of (variant, workload) entries.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use haloport_core::strategy::EventProfile;
use haloport_core::timeline::IterationTimeline;
use serde::Deserialize;

use crate::report::headline::Measured;

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
    /// Rank 0's measured iteration times per run.
    pub iteration_us: Vec<Vec<f64>>,
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
    bail!("{} holds no sweep.json or sweep.json.gz", input.display())
}

/// Loads a sweep or run result file (or a directory holding `sweep.json[.gz]`).
///
/// # Errors
/// A file that cannot be read, is not JSON, or is not a haloport result.
pub fn load(input: &Path) -> anyhow::Result<Loaded> {
    let path = resolve(input)?;
    let value: serde_json::Value = serde_json::from_str(&text(&path)?)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    let s = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
    let i = |key: &str| value[key].as_i64().unwrap_or_default();
    let kind = s("kind");
    let header = Header {
        kind: if kind.is_empty() {
            "run".into()
        } else {
            kind.clone()
        },
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
    };
    let raw = match value.get("results") {
        Some(results) => results.clone(),
        None if value.get("variant").is_some() => serde_json::Value::Array(vec![value.clone()]),
        None => bail!(
            "{} is not a haloport result file (no \"results\" and no \"variant\")",
            path.display()
        ),
    };
    let mut entries: Vec<Entry> = serde_json::from_value(raw)
        .with_context(|| format!("{}: results are not in haloport's format", path.display()))?;
    for e in &mut entries {
        e.profile = e.profiles.first().copied().flatten();
    }
    let mut workloads: Vec<String> = Vec::new();
    for e in &entries {
        if !workloads.contains(&e.workload) {
            workloads.push(e.workload.clone());
        }
    }
    Ok(Loaded {
        path,
        header,
        workloads,
        entries,
    })
}
