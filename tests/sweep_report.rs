//! `sweep`, `report` and `compare` end to end on host-backend sweeps: the files they write,
//! the tables, valid SVG with the expected series, Chrome traces, and refusals; durable sweeps
//! (an interrupted sweep keeps its finished runs, `report` says it is partial, `--resume`
//! finishes it) and compare's refusal of unlike results.

mod common;

use std::path::Path;

use common::{alone, mpirun, mpirun_with_env, read_json};

fn sweep(out: &Path, variants: &str) -> common::Job {
    sweep_with(&[], "--out", out, variants, "small,thesis-4", "2")
}

/// A host sweep of `variants` on `workloads`, `runs` runs of 4 iterations, in `dir` (`--out` or
/// `--resume`), with `env` set on every rank.
fn sweep_with(
    env: &[(&str, &str)],
    mode: &str,
    dir: &Path,
    variants: &str,
    workloads: &str,
    runs: &str,
) -> common::Job {
    mpirun_with_env(
        2,
        env,
        &[
            "sweep",
            "--backend",
            "host",
            "--variants",
            variants,
            "--workloads",
            workloads,
            "--runs",
            runs,
            "--iters",
            "4",
            "--warmup",
            "1",
            "--quiet",
            mode,
            dir.to_str().expect("utf-8"),
        ],
    )
}

/// Every run file under `dir/cells`, as `workload/variant/run-R.json`, sorted.
fn cell_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, at: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(at).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).expect("under base");
                out.push(rel.to_str().expect("utf-8").to_owned());
            }
        }
    }
    let mut out = Vec::new();
    let cells = dir.join("cells");
    if cells.is_dir() {
        walk(&cells, &cells, &mut out);
    }
    out.sort();
    out
}

/// What must not differ between two complete sweeps of the same plan: keys, names, runs and
/// measured iterations per cell, timelines per rank, checks, verdicts, clock fits, CSV rows.
fn shape(dir: &Path) -> serde_json::Value {
    let s = read_json(&dir.join("sweep.json"));
    let mut keys: Vec<&String> = s.as_object().expect("object").keys().collect();
    keys.sort();
    let cells: Vec<serde_json::Value> = s["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            let mut keys: Vec<&String> = r.as_object().expect("object").keys().collect();
            keys.sort();
            serde_json::json!({
                "keys": keys,
                "name": [&r["variant"], &r["workload"]],
                "runs": r["iteration_us"].as_array().expect("runs").iter()
                    .map(|run| run.as_array().map(Vec::len)).collect::<Vec<_>>(),
                "timelines": r["timelines"].as_array().expect("timelines").iter()
                    .map(|t| t.as_array().map(Vec::len)).collect::<Vec<_>>(),
                "checked": &r["checked"],
                "verified": &r["verified"],
            })
        })
        .collect();
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).expect("csv");
    serde_json::json!({
        "keys": keys,
        "variants": &s["variants"],
        "workloads": &s["workloads"],
        "runs": &s["runs"],
        "fits": s["clock"].as_array().expect("clock").iter()
            .map(|f| f["slope"].is_number()).collect::<Vec<_>>(),
        "cells": cells,
        "csv_rows": csv.lines().count(),
    })
}

/// Parses an SVG and returns every text it draws.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not valid XML: {e}", path.display()));
    assert_eq!(
        doc.root_element().tag_name().name(),
        "svg",
        "{}",
        path.display()
    );
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_owned())
        .collect()
}

#[test]
fn a_sweep_writes_json_and_csv_with_the_floor_and_interleaved_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = sweep(dir.path(), "base-nb-wait,tq-nb-pb,tqm-nb-tq");
    assert_eq!(job.code, Some(0), "{}", job.explain());
    for needle in [
        "| small | mpi-only |",
        "| thesis-4 | tqm-nb-tq |",
        "1.000 (reference)",
    ] {
        assert!(
            job.stdout.contains(needle),
            "missing {needle}: {}",
            job.explain()
        );
    }
    let s = read_json(&dir.path().join("sweep.json"));
    assert_eq!(s["kind"], "sweep");
    assert_eq!(s["schema"], haloport_cli::results::BENCH_SCHEMA);
    assert_eq!(
        s["variants"],
        serde_json::json!(["mpi-only", "base-nb-wait", "tq-nb-pb", "tqm-nb-tq"])
    );
    let results = s["results"].as_array().expect("results");
    assert_eq!(results.len(), 8);
    for r in results {
        assert_eq!(r["verified"], true, "{}", r["variant"]);
        assert_eq!(
            r["iteration_us"].as_array().map(Vec::len),
            Some(2),
            "two runs"
        );
    }
    let fits = s["clock"].as_array().expect("clock fits");
    assert_eq!(fits.len(), 2);
    assert!(fits.iter().all(|f| f["slope"].as_f64().is_some()));
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).expect("csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "variant,strategy,workload,run,iterations,median_us,mean_us,stddev_us,min_us,max_us,verified");
    assert_eq!(
        lines.len(),
        1 + 4 * 2 * 2,
        "one row per variant, workload and run"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tq-nb-pb,taskqueue,thesis-4,1,3,")),
        "{csv}"
    );
}

#[test]
fn report_writes_tables_valid_svg_plots_and_traces() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = sweep(dir.path(), "base-nb-wait,base-bl-wait,tq-nb-pb,tq-bl-tq");
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let job = alone(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    assert!(md.contains("| workload | variant | median us | stddev us | speedup vs fastest baseline (same send kind) | efficiency vs mpi-only | verified |"));
    for workload in ["small", "thesis-4"] {
        for variant in [
            "mpi-only",
            "base-nb-wait",
            "base-bl-wait",
            "tq-nb-pb",
            "tq-bl-tq",
        ] {
            assert!(
                md.contains(&format!("| {workload} | {variant} |")),
                "{workload} {variant} missing:\n{md}"
            );
        }
        assert!(
            md.contains(&format!("| {workload} | base-nb-wait | "))
                && md.contains("1.000 (reference)")
        );
    }
    assert!(md.contains("## Event-loop profiling"), "{md}");

    let speedup = svg_texts(&dir.path().join("speedup.svg"));
    for series in ["small", "thesis-4", "tq-nb-pb", "tq-bl-tq", "base-bl-wait"] {
        assert!(
            speedup.iter().any(|t| t == series),
            "speedup.svg lacks {series}: {speedup:?}"
        );
    }
    assert!(
        speedup.iter().any(|t| t.starts_with("speedup")),
        "x axis label"
    );
    let packing = svg_texts(&dir.path().join("packing.svg"));
    assert!(
        packing.iter().any(|t| t == "tq-nb-pb") && packing.iter().any(|t| t == "base-nb-wait"),
        "{packing:?}"
    );
    assert!(packing.iter().any(|t| t == "packing time (us)"));
    let spread = svg_texts(&dir.path().join("spread.svg"));
    assert!(
        spread.iter().any(|t| t == "Time per iteration, thesis-4"),
        "{spread:?}"
    );
    let profile = svg_texts(&dir.path().join("profile.svg"));
    assert!(
        profile.iter().any(|t| t == "tq-bl-tq") && !profile.iter().any(|t| t == "base-nb-wait"),
        "{profile:?}"
    );
    // The report draws the fastest baseline and the fastest taskqueue variant per workload.
    let find = |prefix: &str| {
        std::fs::read_dir(dir.path())
            .expect("read dir")
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix) && n.contains("thesis-4"))
            })
            .unwrap_or_else(|| panic!("no {prefix}*thesis-4 file in {}", dir.path().display()))
    };
    let timeline = svg_texts(&find("timeline-tq-"));
    for series in [
        "packing (GPU)",
        "unpacking (GPU)",
        "CPU: task from GPU",
        "CPU: receive done",
        "CPU",
        "block 3",
    ] {
        assert!(
            timeline.iter().any(|t| t == series),
            "timeline lacks {series}: {timeline:?}"
        );
    }
    svg_texts(&find("timeline-base-"));
    let trace = read_json(&find("trace-tq-"));
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    assert!(events.iter().any(|e| e["name"] == "pack" && e["ph"] == "X"));
    assert!(events
        .iter()
        .any(|e| e["name"] == "Task" && e["ph"] == "i" && e["pid"] == 1));
}

#[test]
fn compare_puts_common_results_side_by_side_and_refuses_disjoint_files() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    assert_eq!(sweep(a.path(), "base-nb-wait,tq-nb-pb").code, Some(0));
    assert_eq!(sweep(b.path(), "tq-nb-pb,tq-bl-pb").code, Some(0));
    let out = tempfile::tempdir().expect("temp dir");
    let job = alone(&[
        "compare",
        a.path().to_str().expect("utf-8"),
        b.path().to_str().expect("utf-8"),
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stdout
            .contains("| workload | variant | [0] median us | [1] median us | [1] / [0] |"),
        "{}",
        job.explain()
    );
    assert!(
        job.stdout.contains("| small | tq-nb-pb |")
            && job.stdout.contains("| thesis-4 | mpi-only |")
    );
    assert!(
        !job.stdout.contains("base-nb-wait |") && !job.stdout.contains("tq-bl-pb |"),
        "{}",
        job.explain()
    );
    let texts = svg_texts(&out.path().join("compare.svg"));
    assert!(texts.iter().any(|t| t == "small tq-nb-pb"), "{texts:?}");

    // A run's file and a sweep that never ran its variant share nothing.
    let run_json = out.path().join("run.json");
    let job = mpirun(
        2,
        &[
            "run",
            "--variant",
            "base-bl-test",
            "--workload",
            "small",
            "--runs",
            "1",
            "--json",
            run_json.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    alone(&[
        "compare",
        run_json.to_str().expect("utf-8"),
        b.path().to_str().expect("utf-8"),
    ])
    .assert_fails_with(2, "share no variant on any workload: nothing to compare");
    alone(&["compare", run_json.to_str().expect("utf-8")]).assert_fails_with(2, "required");
}

#[test]
fn sweep_and_report_refuse_bad_input() {
    alone(&["sweep", "--variants", "tq-xx-pb", "--out", "/tmp/x"])
        .assert_fails_with(2, "unknown variant 'tq-xx-pb'");
    alone(&["sweep", "--workloads", "small,huge", "--out", "/tmp/x"])
        .assert_fails_with(2, "unknown workload 'huge'");
    alone(&["report", "/nonexistent/dir"]).assert_fails_with(2, "reading /nonexistent/dir");
    let dir = tempfile::tempdir().expect("temp dir");
    alone(&["report", dir.path().to_str().expect("utf-8")])
        .assert_fails_with(2, "holds no sweep.json");
}

#[test]
fn an_interrupted_sweep_keeps_its_runs_report_says_partial_and_resume_completes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    // An earlier sweep's files must never pass for the new sweep's.
    std::fs::write(d.join("sweep.json"), "{\"stale\": true}\n").expect("write");
    std::fs::write(d.join("sweep.csv"), "stale\n").expect("write");
    let (variants, workloads) = ("base-nb-wait,tq-nb-pb", "small,thesis-4");
    let stop = [("HALOPORT_SWEEP_STOP_AFTER", "5")];
    sweep_with(&stop, "--out", d, variants, workloads, "2")
        .assert_fails_with(2, "sweep stopped after 5 of 12 runs");
    assert!(!d.join("sweep.json").exists() && !d.join("sweep.csv").exists());
    let aside: Vec<_> = std::fs::read_dir(d)
        .expect("read dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("sweep.json").is_file())
        .collect();
    assert_eq!(aside.len(), 1, "the stale sweep.json moved aside once");
    assert!(std::fs::read_to_string(aside[0].join("sweep.json"))
        .expect("read")
        .contains("stale"));
    assert!(d.join("sweep-manifest.json").is_file());
    // Run 0 of every cell in sweep order, the first five of them, each written whole.
    assert_eq!(
        cell_files(d),
        [
            "small/base-nb-wait/run-0.json",
            "small/mpi-only/run-0.json",
            "small/tq-nb-pb/run-0.json",
            "thesis-4/base-nb-wait/run-0.json",
            "thesis-4/mpi-only/run-0.json",
        ]
    );
    let run = read_json(&d.join("cells/small/tq-nb-pb/run-0.json"));
    assert_eq!(
        run["outcomes"].as_array().map(Vec::len),
        Some(2),
        "both ranks"
    );

    let job = alone(&["report", d.to_str().expect("utf-8")]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stdout.contains("PARTIAL sweep: 7 of 12 runs missing"),
        "{}",
        job.explain()
    );
    assert!(job
        .stdout
        .contains("missing: tq-nb-pb on thesis-4: all 2 runs missing"));
    let md = std::fs::read_to_string(d.join("report.md")).expect("report.md");
    assert!(md.contains("**PARTIAL sweep: 7 of 12 runs missing"), "{md}");
    assert!(
        md.contains("- base-nb-wait on small: run 1 of 2 missing"),
        "{md}"
    );
    assert!(md.contains("| small | tq-nb-pb |"), "{md}");
    assert!(
        !md.contains("| thesis-4 | tq-nb-pb |"),
        "no run, no row: {md}"
    );

    // A resume with other options is refused, naming what differs, and runs nothing.
    sweep_with(&[], "--resume", d, variants, workloads, "3")
        .assert_fails_with(2, "runs: 2 in the manifest, 3 requested");
    sweep_with(&[], "--resume", d, "base-nb-wait", workloads, "2").assert_fails_with(
        2,
        "variants: mpi-only,base-nb-wait,tq-nb-pb in the manifest, mpi-only,base-nb-wait requested",
    );
    assert_eq!(cell_files(d).len(), 5);

    // `--resume DIR` alone takes the options the manifest recorded.
    let job = mpirun(
        2,
        &["sweep", "--resume", d.to_str().expect("utf-8"), "--quiet"],
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stdout.contains("resumed: ran the 7 of 12 runs missing"),
        "{}",
        job.explain()
    );
    assert_eq!(cell_files(d).len(), 12);
    let job = alone(&["report", d.to_str().expect("utf-8")]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(!job.stdout.contains("PARTIAL"), "{}", job.explain());

    // The resumed sweep.json is shaped like a fresh one: every cell, every run, every rank.
    let fresh = tempfile::tempdir().expect("temp dir");
    let job = sweep_with(&[], "--out", fresh.path(), variants, workloads, "2");
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert_eq!(shape(d), shape(fresh.path()));
    assert_eq!(shape(d)["cells"].as_array().map(Vec::len), Some(6));
}

#[test]
fn duplicated_workloads_and_variants_run_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = sweep_with(
        &[],
        "--out",
        dir.path(),
        "base-nb-wait,base-nb-wait",
        "small,small",
        "1",
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stderr
            .contains("note: workload small named more than once: each runs once"),
        "{}",
        job.explain()
    );
    let s = read_json(&dir.path().join("sweep.json"));
    assert_eq!(
        s["variants"],
        serde_json::json!(["mpi-only", "base-nb-wait"])
    );
    assert_eq!(s["workloads"], serde_json::json!(["small"]));
    assert_eq!(s["results"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        cell_files(dir.path()),
        ["small/base-nb-wait/run-0.json", "small/mpi-only/run-0.json"]
    );
}

#[test]
fn compare_refuses_unlike_results_and_marks_them_when_forced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec![
            "run",
            "--variant",
            "base-nb-wait",
            "--workload",
            "small",
            "--runs",
            "1",
            "--iters",
            "4",
            "--warmup",
            "1",
            "--json",
            path.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        let job = mpirun(2, &args);
        assert!(path.is_file(), "{}", job.explain());
        path.to_str().expect("utf-8").to_owned()
    };
    let good = run("good.json", &[]);
    let wrong = run("wrong.json", &["--inject", "corrupt-recv=0"]);
    let ring = run("ring.json", &["--pattern", "ring"]);

    let job = alone(&["compare", &good, &wrong]);
    job.assert_fails_with(2, "refusing to compare [0] ");
    assert!(
        job.stderr
            .contains("small base-nb-wait: verified: [0] yes, [1] NO"),
        "{}",
        job.explain()
    );
    assert!(job.stderr.contains("wrong.json"), "{}", job.explain());
    alone(&["compare", &good, &ring])
        .assert_fails_with(2, "every label: pattern: [0] pairwise, [1] ring");

    let out = tempfile::tempdir().expect("temp dir");
    let job = alone(&[
        "compare",
        &good,
        &wrong,
        "--force",
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stdout.contains("**MISMATCH: 1 of 1 rows")
            && job
                .stdout
                .contains("| MISMATCH: verified: [0] yes, [1] NO |"),
        "{}",
        job.explain()
    );
    let texts = svg_texts(&out.path().join("compare.svg"));
    assert!(
        texts.iter().any(|t| t == "MISMATCH small base-nb-wait"),
        "{texts:?}"
    );
}

#[test]
fn a_sweep_and_its_report_cover_the_library_variants_beside_the_thesis_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let job = sweep(dir.path(), "base-nb-wait,library");
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let s = read_json(&dir.path().join("sweep.json"));
    assert_eq!(
        s["variants"],
        serde_json::json!([
            "mpi-only",
            "base-nb-wait",
            "lib-base-mpi",
            "lib-tq-mpi",
            "lib-base-ipc",
            "lib-tq-ipc"
        ])
    );
    let results = s["results"].as_array().expect("results");
    assert_eq!(results.len(), 2 * 6);
    for r in results {
        assert_eq!(r["verified"], true, "{}", r["variant"]);
        let variant = r["variant"].as_str().expect("a name");
        if let Some(transport) = variant.strip_prefix("lib-").map(|v| &v[v.len() - 3..]) {
            assert_eq!(r["strategy"], "library", "{variant}");
            assert_eq!(r["transport"], transport, "{variant}");
            assert_eq!(r["barrier"], true, "{variant}");
        }
    }
    // The same checks as the thesis's variants: one sample of 128 + 2 per block and iteration.
    let checked = |variant: &str| {
        results
            .iter()
            .find(|r| r["variant"] == variant && r["workload"] == "thesis-4")
            .map(|r| r["checked"].clone())
    };
    assert_eq!(checked("lib-tq-ipc"), checked("base-nb-wait"));
    // Device timelines as the thesis's variants have them: per rank, per measured iteration of
    // the last run, a phase record per block.
    let timeline_shape = |variant: &str| {
        let r = results
            .iter()
            .find(|r| r["variant"] == variant && r["workload"] == "thesis-4")
            .expect("a result");
        r["timelines"]
            .as_array()
            .expect("timelines")
            .iter()
            .map(|t| {
                let iterations = t.as_array().expect("iterations");
                iterations
                    .iter()
                    .map(|it| it["blocks"].as_array().map_or(0, Vec::len))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(timeline_shape("base-nb-wait"), vec![vec![4; 3]; 2]);
    for variant in ["lib-base-mpi", "lib-tq-mpi", "lib-base-ipc", "lib-tq-ipc"] {
        assert_eq!(
            timeline_shape(variant),
            timeline_shape("base-nb-wait"),
            "{variant}"
        );
    }
    let job = alone(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    for variant in ["lib-base-mpi", "lib-tq-mpi", "lib-base-ipc", "lib-tq-ipc"] {
        assert!(
            md.contains(&format!("| thesis-4 | {variant} |")),
            "{variant} missing:\n{md}"
        );
    }
}
