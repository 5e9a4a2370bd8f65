//! `sweep`, `report` and `compare` end to end on host-backend sweeps: the files they write,
//! the tables, valid SVG with the expected series, Chrome traces, and refusals.

mod common;

use std::path::Path;

use common::{alone, mpirun, read_json};

fn sweep(out: &Path, variants: &str) -> common::Job {
    mpirun(
        2,
        &[
            "sweep",
            "--backend",
            "host",
            "--variants",
            variants,
            "--workloads",
            "small,thesis-4",
            "--runs",
            "2",
            "--iters",
            "4",
            "--warmup",
            "1",
            "--quiet",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    )
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
