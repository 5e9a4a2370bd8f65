//! `haloport plan`: one rank's set-up of a job of any size, without MPI or a GPU. A rank of a
//! million-rank job compiles its plan and its 26 neighbours' alone, in a process of a few MB;
//! bad input is refused with exit code 2.

mod common;

use common::{alone, read_json};

/// `haloport plan` of `rank` in a job of `ranks` on a 10000^3 grid, its JSON.
fn plan(ranks: &str, rank: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("plan.json");
    let job = alone(&[
        "plan",
        "--ranks",
        ranks,
        "--rank",
        rank,
        "--grid",
        "10000x10000x10000",
        "--repeat",
        "5",
        "--json",
        json.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    read_json(&json)
}

#[test]
fn a_rank_of_a_million_rank_job_plans_alone() {
    let plan_1m = plan("1000000", "500500");
    assert_eq!(plan_1m["procs"], serde_json::json!([100, 100, 100]));
    assert_eq!(plan_1m["local"], serde_json::json!([100, 100, 100]));
    let neighbours = plan_1m["neighbours"].as_array().expect("neighbours");
    assert_eq!(neighbours.len(), 26, "{plan_1m}");
    assert_eq!(plan_1m["peers"], 26);
    // A face of 100 x 100 f64 cells, an edge of 100, a corner of 1.
    let bytes = |kind: &str| -> Vec<u64> {
        neighbours
            .iter()
            .filter(|n| n["kind"] == kind)
            .map(|n| n["message_bytes"].as_u64().expect("bytes"))
            .collect()
    };
    assert_eq!(bytes("face"), vec![80_000; 6]);
    assert_eq!(bytes("edge"), vec![800; 12]);
    assert_eq!(bytes("corner"), vec![8; 8]);
    // No state of the job's size: a rank of 1,000,000 needs no more memory than one of 8 (a
    // table of one u64 per rank alone would add 8 MB).
    let peak = |p: &serde_json::Value| p["peak_memory_bytes"].as_u64().expect("Linux");
    let plan_8 = plan("8", "5");
    assert!(
        peak(&plan_1m) < peak(&plan_8) + 1_000_000,
        "peak memory {} bytes at 1M ranks, {} at 8",
        peak(&plan_1m),
        peak(&plan_8)
    );
}

#[test]
fn plans_that_do_not_fit_the_job_are_refused() {
    alone(&["plan", "--ranks", "8", "--rank", "8", "--grid", "8x8x8"])
        .assert_fails_with(2, "rank 8 is not one of the job's 8 ranks");
    alone(&["plan", "--ranks", "64", "--grid", "8x8x8", "--halo", "3"])
        .assert_fails_with(2, "smaller than the halo width 3");
    alone(&[
        "plan", "--ranks", "6", "--grid", "8x8x8", "--procs", "2x2x2",
    ])
    .assert_fails_with(2, "has 8 ranks; the job has 6");
}

/// `haloport plan` of rank 0 of 8 ranks (2x2x2) with `args`, its JSON.
fn plan_routes(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("plan.json");
    let mut all = vec![
        "plan", "--ranks", "8", "--grid", "32x32x32", "--repeat", "1",
    ];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().expect("utf-8 path")]);
    let job = alone(&all);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(job.stdout.contains("route    why"), "{}", job.explain());
    read_json(&json)
}

/// Each neighbour's (rank, route, why).
fn routes(plan: &serde_json::Value) -> Vec<(i64, String, String)> {
    plan["neighbours"]
        .as_array()
        .expect("neighbours")
        .iter()
        .map(|n| {
            (
                n["rank"].as_i64().expect("rank"),
                n["link"].as_str().expect("link").to_owned(),
                n["why"].as_str().expect("why").to_owned(),
            )
        })
        .collect()
}

#[test]
fn plan_shows_each_neighbours_route_and_why_as_the_exchange_would_choose() {
    // Nodes of 4 ranks: ranks 0-3 share rank 0's node; GPU-aware MPI between nodes.
    let auto = plan_routes(&[
        "--ranks-per-node",
        "4",
        "--backend",
        "host",
        "--gpu-aware-mpi",
        "on",
    ]);
    for (peer, route, why) in routes(&auto) {
        let want = if peer < 4 { "ipc" } else { "gpu-mpi" };
        assert_eq!(route, want, "rank {peer}: {why}");
        assert!(
            why.contains(if peer < 4 {
                "same node"
            } else {
                "another node"
            }),
            "{why}"
        );
    }
    // Host-staged MPI for everyone, said so.
    let mpi = plan_routes(&["--transport", "mpi"]);
    assert!(routes(&mpi)
        .iter()
        .all(|(_, r, w)| r == "mpi" && w.contains("transport mpi")));
    // A routes file's order, and a bad one refused naming it.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("routes.json");
    std::fs::write(
        &file,
        r#"{"schema": "haloport-routes/1", "within_node": ["mpi", "ipc"], "between_nodes": ["mpi"]}"#,
    )
    .expect("write the routes file");
    let path = file.to_str().expect("utf-8 path");
    let ordered = plan_routes(&["--ranks-per-node", "4", "--routes", path]);
    assert!(routes(&ordered)
        .iter()
        .all(|(_, r, w)| r == "mpi" && w.contains("routes given")));
    std::fs::write(&file, "{}").expect("write the routes file");
    alone(&["plan", "--ranks", "8", "--routes", path]).assert_fails_with(2, path);
}
