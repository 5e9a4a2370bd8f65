//! The durable sweep directory: what `haloport sweep` writes while it runs, so that an
//! interrupted sweep (a time-out in one cell, a killed job) keeps every finished run,
//! `haloport report` can show a partial sweep for what it is, and `haloport sweep --resume DIR`
//! runs only what is missing.
//!
//! The unit that finishes is one run of one cell, (workload, variant, run): a sweep runs run r
//! of every cell before run r + 1 of any. Layout of `DIR`:
//!
//! ```text
//! DIR/sweep-manifest.json                      written first: the plan (SweepPlan: protocol,
//!                                              variants, workloads, pattern, backend, ranks,
//!                                              resolved patterns) and the starting job's header
//! DIR/cells/<workload>/<variant>/run-<r>.json  one per finished unit (RunRecord): every rank's
//!                                              outcome of run r, raw timeline kept (the clock
//!                                              fit is attached only when sweep.json is made)
//! DIR/sweep.json, DIR/sweep.csv                assembled from the cells once every unit is there
//! DIR/replaced-<unix seconds>/                 an earlier sweep's files, moved aside when a new
//!                                              (not resumed) sweep starts in DIR
//! ```
//!
//! Invariants: every file is written whole or not at all (a temporary name in the same folder,
//! synced, then renamed over the final name); only rank 0 writes; `sweep.json` exists only when
//! every unit of the manifest's plan is on disk, because a fresh sweep moves the older sweep's
//! files aside before writing its manifest and a resume removes the assembled files before it
//! runs anything. Nothing here uses MPI: the sweep command shares rank 0's answers itself.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use haloport_core::clock::ClockFit;
use haloport_core::pattern::RankPattern;
use haloport_core::Coherence;
use haloport_thesis::measure::{Protocol, RankOutcome};
use haloport_thesis::{Variant, Workload};
use serde::{Deserialize, Serialize};

use crate::results::{merge_run, VariantResult};

/// The manifest's file name.
pub const MANIFEST: &str = "sweep-manifest.json";
/// The folder holding one file per finished unit.
pub const CELLS: &str = "cells";
/// The assembled sweep.
pub const SWEEP_JSON: &str = "sweep.json";
/// The assembled sweep as CSV.
pub const SWEEP_CSV: &str = "sweep.csv";

/// What a new sweep moves aside: an earlier sweep's files, and the report made from them.
const EARLIER_SWEEP: [&str; 6] = [
    MANIFEST,
    CELLS,
    SWEEP_JSON,
    "sweep.json.gz",
    SWEEP_CSV,
    "report.md",
];

/// Format version of the manifest and run files; bumped when a key changes meaning.
pub const SWEEP_DIR_FORMAT: u32 = 1;

/// What a sweep measures: everything that must be the same for two jobs to add runs to the same
/// cells. The time-out is left out on purpose: a sweep stopped by a time-out may be resumed with
/// a longer one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// "host", "cuda" or "hip".
    pub backend: String,
    /// Ranks in the job.
    pub ranks: i32,
    /// Pattern name or file.
    pub pattern: String,
    /// Iterations per run, warm-up included.
    pub iterations: u32,
    /// Warm-up iterations per run.
    pub warmup: u32,
    /// Runs per cell.
    pub runs: u32,
    /// Bytes between the taskqueue's per-block flags.
    pub flag_stride: u32,
    /// Pause between the taskqueue's polls, nanoseconds.
    pub poll_backoff_ns: u32,
    /// Which received elements unpack checks ("sample" or "full").
    #[serde(default = "default_verify")]
    pub verify: String,
    /// Whether iterations end with a barrier (`--no-barrier` turns it off for device-direct
    /// variants).
    #[serde(default = "default_barrier")]
    pub barrier: bool,
    /// Device-direct: most GPU blocks per pattern block.
    #[serde(default = "default_ipc_chunks")]
    pub ipc_chunks: u32,
    /// Library variants: most GPU blocks per region of a signalled message.
    #[serde(default = "default_lib_blocks")]
    pub lib_blocks: u32,
    /// Variant names in sweep order (the `mpi-only` floor first), no duplicates.
    pub variants: Vec<String>,
    /// Workload names in sweep order, no duplicates.
    pub workloads: Vec<String>,
    /// Per workload, every rank's pattern as validated (a changed pattern file shows here).
    pub patterns: Vec<Vec<RankPattern>>,
    /// Every rank's node (its lowest world rank), for the per-block transport record; empty in
    /// manifests that predate it.
    #[serde(default)]
    pub nodes: Vec<i32>,
}

fn default_verify() -> String {
    "sample".into()
}

fn default_barrier() -> bool {
    true
}

fn default_ipc_chunks() -> u32 {
    4
}

/// What the library variants used before the option existed.
fn default_lib_blocks() -> u32 {
    16
}

/// One finished-or-not piece of a sweep: run `run` of variant `variant` on workload `workload`
/// (indices into the plan's lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Index into [`SweepPlan::workloads`].
    pub workload: usize,
    /// Index into [`SweepPlan::variants`].
    pub variant: usize,
    /// Run, 0-based.
    pub run: u32,
}

impl SweepPlan {
    /// The protocol every cell runs.
    pub fn protocol(&self) -> Protocol {
        Protocol {
            iterations: self.iterations,
            warmup: self.warmup,
            runs: self.runs,
        }
    }

    /// Every unit in the order a sweep runs them: run by run, then workload, then variant.
    pub fn units(&self) -> Vec<Unit> {
        let mut units = Vec::new();
        for run in 0..self.runs {
            for workload in 0..self.workloads.len() {
                for variant in 0..self.variants.len() {
                    units.push(Unit {
                        workload,
                        variant,
                        run,
                    });
                }
            }
        }
        units
    }

    /// "VARIANT on WORKLOAD, run R": how messages name a unit.
    pub fn label(&self, unit: Unit) -> String {
        format!(
            "{} on {}, run {}",
            self.variants[unit.variant], self.workloads[unit.workload], unit.run
        )
    }

    /// Where a unit's file lives under `dir`.
    pub fn unit_path(&self, dir: &Path, unit: Unit) -> PathBuf {
        dir.join(CELLS)
            .join(&self.workloads[unit.workload])
            .join(&self.variants[unit.variant])
            .join(format!("run-{}.json", unit.run))
    }

    /// What differs between this plan (a manifest's) and `requested`, one line per key, e.g.
    /// `runs: 2 in the manifest, 5 requested`; empty when they are the same.
    pub fn differences(&self, requested: &SweepPlan) -> Vec<String> {
        let mut out = Vec::new();
        let mut key = |name: &str, had: String, now: String| {
            if had != now {
                out.push(format!("{name}: {had} in the manifest, {now} requested"));
            }
        };
        key("backend", self.backend.clone(), requested.backend.clone());
        key("ranks", self.ranks.to_string(), requested.ranks.to_string());
        key("pattern", self.pattern.clone(), requested.pattern.clone());
        key(
            "iterations",
            self.iterations.to_string(),
            requested.iterations.to_string(),
        );
        key(
            "warm-up",
            self.warmup.to_string(),
            requested.warmup.to_string(),
        );
        key("runs", self.runs.to_string(), requested.runs.to_string());
        key(
            "flag stride",
            self.flag_stride.to_string(),
            requested.flag_stride.to_string(),
        );
        key(
            "poll back-off",
            self.poll_backoff_ns.to_string(),
            requested.poll_backoff_ns.to_string(),
        );
        key(
            "verification",
            self.verify.clone(),
            requested.verify.clone(),
        );
        key(
            "barrier each iteration",
            self.barrier.to_string(),
            requested.barrier.to_string(),
        );
        key(
            "ipc chunks per block",
            self.ipc_chunks.to_string(),
            requested.ipc_chunks.to_string(),
        );
        key(
            "library blocks per region",
            self.lib_blocks.to_string(),
            requested.lib_blocks.to_string(),
        );
        key(
            "variants",
            self.variants.join(","),
            requested.variants.join(","),
        );
        key(
            "workloads",
            self.workloads.join(","),
            requested.workloads.join(","),
        );
        if self.pattern == requested.pattern
            && self.workloads == requested.workloads
            && self.ranks == requested.ranks
            && self.patterns != requested.patterns
        {
            out.push(format!(
                "pattern {}: its blocks differ from the manifest's (was the pattern file changed?)",
                self.pattern
            ));
        }
        out
    }
}

/// `DIR/sweep-manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// [`SWEEP_DIR_FORMAT`].
    pub format: u32,
    /// What the sweep measures.
    pub plan: SweepPlan,
    /// The options that started the sweep, as given on its command line after `sweep`, less
    /// `--out DIR` and `--quiet`: `sweep --resume DIR` alone runs with them. Empty in manifests
    /// written before they were recorded.
    #[serde(default)]
    pub args: Vec<String>,
    /// The result header of the job that started the sweep (build, host, device, MPI library),
    /// as [`crate::results::ResultHeader`] writes it; a partial report shows it.
    pub header: serde_json::Value,
}

/// `DIR/cells/<workload>/<variant>/run-<r>.json`: one finished unit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Workload name.
    pub workload: String,
    /// Variant name.
    pub variant: String,
    /// Run, 0-based.
    pub run: u32,
    /// Coherence of the send/receive buffers asked for, as result files spell it.
    pub buffers_requested: String,
    /// Coherence served.
    pub buffers_served: String,
    /// Every rank's outcome of this run, in rank order, before any clock fit.
    pub outcomes: Vec<RankOutcome>,
}

/// How result files spell a coherence kind (its serde name).
pub fn coherence_name(c: Coherence) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| c.to_string())
}

/// The coherence kind a result file names. `Coherence` only serializes (it lives in
/// haloport-core), so this matches the name against every kind there is.
fn coherence_from_name(name: &str) -> Option<Coherence> {
    [Coherence::Coherent, Coherence::NonCoherent]
        .into_iter()
        .find(|c| coherence_name(*c) == name)
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, synced, then
/// renamed over `path`. Creates the parent folders.
///
/// # Errors
/// The folder, the temporary file or the rename fails; the error names the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let parent = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Starts a new sweep in `dir`: moves an earlier sweep's files (manifest, cells, sweep.json,
/// sweep.csv, report.md) into `dir/replaced-<unix seconds>/`, so none of them can pass for this
/// sweep's, then writes the manifest. Returns where the earlier files went, if anywhere.
///
/// # Errors
/// A file cannot be moved or the manifest cannot be written.
pub fn start_fresh(dir: &Path, manifest: &Manifest) -> anyhow::Result<Option<PathBuf>> {
    let earlier: Vec<&str> = EARLIER_SWEEP
        .into_iter()
        .filter(|name| dir.join(name).exists())
        .collect();
    let mut moved_to = None;
    if !earlier.is_empty() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut aside = dir.join(format!("replaced-{secs}"));
        let mut n = 1;
        while aside.exists() {
            n += 1;
            aside = dir.join(format!("replaced-{secs}-{n}"));
        }
        std::fs::create_dir_all(&aside).with_context(|| format!("creating {}", aside.display()))?;
        for name in earlier {
            std::fs::rename(dir.join(name), aside.join(name)).with_context(|| {
                format!(
                    "moving the earlier sweep's {} aside into {}",
                    dir.join(name).display(),
                    aside.display()
                )
            })?;
        }
        moved_to = Some(aside);
    }
    write_atomic(&dir.join(MANIFEST), &serde_json::to_vec_pretty(manifest)?)?;
    Ok(moved_to)
}

/// Reads `dir`'s manifest.
///
/// # Errors
/// No manifest (not a sweep directory, or one from before durable sweeps), or one that is not
/// a manifest.
pub fn read_manifest(dir: &Path) -> anyhow::Result<Manifest> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is {} a sweep directory?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a sweep manifest", path.display()))
}

/// The units of `plan` with no file under `dir`, in sweep order.
pub fn missing(dir: &Path, plan: &SweepPlan) -> Vec<Unit> {
    plan.units()
        .into_iter()
        .filter(|u| !plan.unit_path(dir, *u).is_file())
        .collect()
}

/// Removes `dir`'s assembled `sweep.json` and `sweep.csv`, which a resume makes again from the
/// cells, so that neither looks current while units are missing.
///
/// # Errors
/// A file exists and cannot be removed.
pub fn remove_assembled(dir: &Path) -> anyhow::Result<()> {
    for name in [SWEEP_JSON, "sweep.json.gz", SWEEP_CSV] {
        let path = dir.join(name);
        if path.exists() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes one finished unit.
///
/// # Errors
/// The file cannot be encoded or written.
pub fn write_run(
    dir: &Path,
    plan: &SweepPlan,
    unit: Unit,
    coherence: (Coherence, Coherence),
    outcomes: &[RankOutcome],
) -> anyhow::Result<()> {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        workload: &'a str,
        variant: &'a str,
        run: u32,
        buffers_requested: String,
        buffers_served: String,
        outcomes: &'a [RankOutcome],
    }
    let record = Borrowed {
        workload: &plan.workloads[unit.workload],
        variant: &plan.variants[unit.variant],
        run: unit.run,
        buffers_requested: coherence_name(coherence.0),
        buffers_served: coherence_name(coherence.1),
        outcomes,
    };
    write_atomic(&plan.unit_path(dir, unit), &serde_json::to_vec(&record)?)
}

/// Reads one unit's file and checks it is the unit it claims to be, with one outcome per rank.
///
/// # Errors
/// Unreadable, not a run record, or a record of another unit or rank count.
pub fn read_run(dir: &Path, plan: &SweepPlan, unit: Unit) -> anyhow::Result<RunRecord> {
    let path = plan.unit_path(dir, unit);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let record: RunRecord = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a sweep run record", path.display()))?;
    let ranks_in_order = record
        .outcomes
        .iter()
        .enumerate()
        .all(|(r, o)| o.rank == r as i32);
    if record.workload != plan.workloads[unit.workload]
        || record.variant != plan.variants[unit.variant]
        || record.run != unit.run
        || record.outcomes.len() != plan.ranks as usize
        || !ranks_in_order
    {
        bail!(
            "{} does not hold {} for {} ranks (it says {} on {}, run {}, {} outcomes)",
            path.display(),
            plan.label(unit),
            plan.ranks,
            record.variant,
            record.workload,
            record.run,
            record.outcomes.len()
        );
    }
    Ok(record)
}

/// One cell's result from the runs on disk, in run order: every rank's runs merged
/// ([`merge_run`]), then each rank's clock fit attached where `fits` gives one (a complete sweep;
/// a partial one has no fit yet and so no timelines). `None` when no run of the cell is on disk.
///
/// # Errors
/// A run file that cannot be read or is not this cell's; names in the plan that are no
/// variant, workload or coherence kind this build knows.
pub fn assemble_cell(
    dir: &Path,
    plan: &SweepPlan,
    workload: usize,
    variant: usize,
    fits: Option<&[Option<ClockFit>]>,
) -> anyhow::Result<Option<VariantResult>> {
    let mut merged: Option<Vec<RankOutcome>> = None;
    let mut coherence = (String::new(), String::new());
    for run in 0..plan.runs {
        let unit = Unit {
            workload,
            variant,
            run,
        };
        if !plan.unit_path(dir, unit).is_file() {
            continue;
        }
        let record = read_run(dir, plan, unit)?;
        coherence = (record.buffers_requested, record.buffers_served);
        match &mut merged {
            None => merged = Some(record.outcomes),
            Some(all) => {
                for (into, run) in all.iter_mut().zip(record.outcomes) {
                    merge_run(into, run);
                }
            }
        }
    }
    let Some(mut outcomes) = merged else {
        return Ok(None);
    };
    if let Some(fits) = fits {
        for (outcome, fit) in outcomes.iter_mut().zip(fits) {
            if let Some(fit) = fit {
                outcome.attach_clock(*fit);
            }
        }
    }
    let variant_name = &plan.variants[variant];
    let workload_name = &plan.workloads[workload];
    let v: Variant = variant_name
        .parse()
        .with_context(|| format!("{}: variant {variant_name}", dir.join(MANIFEST).display()))?;
    let w: Workload = workload_name
        .parse()
        .with_context(|| format!("{}: workload {workload_name}", dir.join(MANIFEST).display()))?;
    let kind = |name: &str| {
        coherence_from_name(name).with_context(|| {
            format!("{variant_name} on {workload_name}: unknown buffer coherence '{name}'")
        })
    };
    let coherence = (kind(&coherence.0)?, kind(&coherence.1)?);
    Ok(Some(
        VariantResult::from_outcomes(
            &v,
            w,
            &plan.patterns[workload],
            &outcomes,
            plan.protocol(),
            coherence,
            plan.barrier,
        )
        .with_links(&plan.nodes),
    ))
}

/// The missing units grouped by cell, one line each in sweep order:
/// `base-nb-wait on small: runs 1, 2 of 3 missing`.
pub fn describe_missing(plan: &SweepPlan, missing: &[Unit]) -> Vec<String> {
    let mut lines = Vec::new();
    for w in 0..plan.workloads.len() {
        for v in 0..plan.variants.len() {
            let runs: Vec<String> = missing
                .iter()
                .filter(|u| u.workload == w && u.variant == v)
                .map(|u| u.run.to_string())
                .collect();
            if runs.is_empty() {
                continue;
            }
            let mut line = format!("{} on {}: ", plan.variants[v], plan.workloads[w]);
            if runs.len() == plan.runs as usize {
                let _ = write!(line, "all {} runs missing", plan.runs);
            } else {
                let s = if runs.len() == 1 { "" } else { "s" };
                let _ = write!(line, "run{s} {} of {} missing", runs.join(", "), plan.runs);
            }
            lines.push(line);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> SweepPlan {
        SweepPlan {
            backend: "host".into(),
            ranks: 1,
            pattern: "pairwise".into(),
            iterations: 3,
            warmup: 1,
            runs: 2,
            flag_stride: 128,
            poll_backoff_ns: 0,
            verify: "sample".into(),
            barrier: true,
            ipc_chunks: 4,
            lib_blocks: 16,
            variants: vec!["mpi-only".into(), "base-nb-wait".into()],
            workloads: vec!["small".into()],
            patterns: vec![vec![RankPattern {
                rank: 0,
                blocks: vec![],
            }]],
            nodes: vec![0],
        }
    }

    fn outcome(times: &[f64]) -> RankOutcome {
        RankOutcome {
            iteration_us: times.to_vec(),
            checked: 4,
            ..RankOutcome::default()
        }
    }

    #[test]
    fn units_run_by_run_and_are_named_in_messages() {
        let p = plan();
        let units = p.units();
        assert_eq!(units.len(), 4);
        assert_eq!(p.label(units[1]), "base-nb-wait on small, run 0");
        assert_eq!(p.label(units[2]), "mpi-only on small, run 1");
        assert_eq!(
            p.unit_path(Path::new("d"), units[3]),
            Path::new("d/cells/small/base-nb-wait/run-1.json")
        );
    }

    #[test]
    fn differences_name_each_key() {
        let a = plan();
        let mut b = plan();
        assert!(a.differences(&b).is_empty());
        b.runs = 5;
        b.variants.push("tq-nb-pb".into());
        assert_eq!(
            a.differences(&b),
            vec![
                "runs: 2 in the manifest, 5 requested".to_owned(),
                "variants: mpi-only,base-nb-wait in the manifest, mpi-only,base-nb-wait,tq-nb-pb requested"
                    .to_owned()
            ]
        );
        let mut c = plan();
        c.patterns[0][0]
            .blocks
            .push(haloport_core::pattern::BlockSpec {
                elems: 1,
                dest: 0,
                source: 0,
            });
        assert!(a.differences(&c)[0].contains("blocks differ"));
        let d = SweepPlan {
            lib_blocks: 8,
            ..plan()
        };
        assert_eq!(
            a.differences(&d),
            vec!["library blocks per region: 16 in the manifest, 8 requested".to_owned()]
        );
    }

    #[test]
    fn a_manifest_from_before_the_library_blocks_reads_as_sixteen() {
        let mut json = serde_json::to_value(plan()).expect("encode");
        json.as_object_mut().expect("object").remove("lib_blocks");
        let read: SweepPlan = serde_json::from_value(json).expect("decode");
        assert_eq!(read.lib_blocks, 16);
    }

    #[test]
    fn runs_on_disk_assemble_into_cells_and_the_rest_is_missing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let p = plan();
        let both = (Coherence::Coherent, Coherence::NonCoherent);
        let units = p.units();
        write_run(dir.path(), &p, units[0], both, &[outcome(&[1.0, 2.0])]).expect("write");
        write_run(dir.path(), &p, units[1], both, &[outcome(&[5.0, 6.0])]).expect("write");
        write_run(dir.path(), &p, units[2], both, &[outcome(&[3.0, 4.0])]).expect("write");
        assert_eq!(missing(dir.path(), &p), vec![units[3]]);
        assert_eq!(
            describe_missing(&p, &[units[3]]),
            vec!["base-nb-wait on small: run 1 of 2 missing".to_owned()]
        );
        let cell = assemble_cell(dir.path(), &p, 0, 0, None)
            .expect("assembles")
            .expect("on disk");
        assert_eq!(cell.iteration_us, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert_eq!(cell.checked, 8);
        assert_eq!(cell.buffers_served, Coherence::NonCoherent);
        let partial = assemble_cell(dir.path(), &p, 0, 1, None)
            .expect("assembles")
            .expect("on disk");
        assert_eq!(partial.iteration_us, vec![vec![5.0, 6.0]]);
        // A file holding another unit is refused by name.
        std::fs::copy(
            p.unit_path(dir.path(), units[0]),
            p.unit_path(dir.path(), units[3]),
        )
        .expect("copy");
        let err = assemble_cell(dir.path(), &p, 0, 1, None)
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        assert!(
            err.contains("does not hold base-nb-wait on small, run 1"),
            "{err}"
        );
    }

    #[test]
    fn a_fresh_start_moves_an_earlier_sweep_aside() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(SWEEP_JSON), "{}").expect("write");
        std::fs::create_dir_all(dir.path().join(CELLS).join("small")).expect("mkdir");
        let manifest = Manifest {
            format: SWEEP_DIR_FORMAT,
            plan: plan(),
            args: vec!["--runs".into(), "2".into()],
            header: serde_json::json!({"kind": "sweep"}),
        };
        let aside = start_fresh(dir.path(), &manifest)
            .expect("starts")
            .expect("moved");
        assert!(!dir.path().join(SWEEP_JSON).exists());
        assert!(!dir.path().join(CELLS).exists());
        assert!(aside.join(SWEEP_JSON).is_file() && aside.join(CELLS).is_dir());
        assert_eq!(read_manifest(dir.path()).expect("manifest").plan, plan());
        // Nothing earlier: nothing moved.
        let again = tempfile::tempdir().expect("temp dir");
        assert_eq!(start_fresh(again.path(), &manifest).expect("starts"), None);
    }
}
