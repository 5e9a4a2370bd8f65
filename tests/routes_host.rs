//! Routes per neighbour on the host backend, in jobs where groups of 2 ranks count as nodes:
//! `ipc` and `auto` by capability, `auto` falling back where a same-node peer lacks peer
//! access (at both ends), routes files (`--routes`) followed link by link, `haloport tune`
//! writing one from measurements that the stencil then follows, and bad files refused.

mod common;

use std::path::Path;

use common::nccl::standin;
use common::nodes::{assert_pretend_node_links, in_two_pretend_nodes};
use common::{mpirun, mpirun_with_env, read_json};

#[test]
fn ipc_peers_on_other_nodes_go_host_staged() {
    let result = in_two_pretend_nodes(&["--transport", "ipc"]);
    assert_pretend_node_links(&result, "ipc", "mpi");
}

#[test]
fn auto_routes_each_neighbour_ipc_within_a_node_and_through_mpi_between_nodes() {
    // On the host backend auto by capability never takes NCCL.
    for (setting, between) in [("off", "mpi"), ("on", "gpu-mpi")] {
        let result = in_two_pretend_nodes(&["--transport", "auto", "--gpu-aware-mpi", setting]);
        assert_pretend_node_links(&result, "ipc", between);
    }
}

/// Every link of every rank: (rank, peer, link, why, routes passed over).
fn routes_of(result: &serde_json::Value) -> Vec<(i64, i64, String, String, Vec<String>)> {
    let mut out = Vec::new();
    for (rank, links) in result["links"]
        .as_array()
        .expect("links")
        .iter()
        .enumerate()
    {
        for l in links.as_array().expect("a rank's links") {
            let passed = l["passed_over"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .map(|p| p["route"].as_str().unwrap_or("?").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            out.push((
                rank as i64,
                l["peer"].as_i64().expect("peer"),
                l["link"].as_str().expect("link").to_owned(),
                l["why"].as_str().expect("why").to_owned(),
                passed,
            ));
        }
    }
    out
}

#[test]
fn auto_takes_another_route_at_both_ends_where_a_peer_lacks_peer_access_and_ipc_refuses() {
    // Rank 1 reaches no other device: its link with rank 0 (same node) goes host-staged at
    // both ends; ranks 2 and 3 keep theirs device-direct.
    let result = in_two_pretend_nodes(&["--transport", "auto", "--inject", "no-peer-access=1"]);
    for (rank, peer, link, why, passed) in routes_of(&result) {
        let want = if rank == peer {
            "local"
        } else if rank / 2 != peer / 2 || rank.min(peer) == 0 && rank.max(peer) == 1 {
            "mpi"
        } else {
            "ipc"
        };
        assert_eq!(link, want, "rank {rank} to {peer}: {why}");
        if want == "mpi" && rank / 2 == peer / 2 {
            assert_eq!(passed.first().map(String::as_str), Some("ipc"), "{why}");
        }
    }
    let mut args = vec![
        "stencil", "--grid", "16x8x8", "--procs", "4x1x1", "--steps", "2",
    ];
    args.extend(["--transport", "ipc", "--inject", "no-peer-access=1"]);
    let job = mpirun_with_env(4, &[("HALOPORT_IPC_RANKS_PER_NODE", "2")], &args);
    // Every rank fails alike (the first to report may end the job before the others print).
    assert_ne!(job.code, Some(0), "{}", job.explain());
    let refusal = "rank 1 (device host) cannot store into rank 0's device (host): no peer access";
    assert!(job.stderr.contains(refusal), "{}", job.explain());
    assert!(!job.stderr.contains("panicked"), "{}", job.explain());
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the routes file");
    path.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn a_routes_file_orders_each_kind_of_link_and_sets_the_strategy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = standin(dir.path());
    // Within a node NCCL first (the stand-in serves it on the host backend), between nodes
    // GPU-aware MPI where MPI takes the memory (`on`), and the taskqueue strategy.
    let file = write(
        dir.path(),
        "routes.json",
        r#"{"schema": "haloport-routes/1", "within_node": ["nccl", "ipc", "mpi"],
            "between_nodes": ["gpu-mpi", "mpi"],
            "settings": {"strategy": "tq", "threads": 128, "elems_per_thread": 2,
                         "signalled_blocks": 8}}"#,
    );
    let json = dir.path().join("run.json");
    let args = [
        "stencil",
        "--grid",
        "16x8x8",
        "--procs",
        "4x1x1",
        "--steps",
        "3",
        "--gpu-aware-mpi",
        "on",
        "--routes",
        &file,
        "--json",
        json.to_str().expect("utf-8 path"),
    ];
    let env = [
        ("HALOPORT_IPC_RANKS_PER_NODE", "2"),
        ("HALOPORT_NCCL_LIBRARY", lib.to_str().expect("utf-8 path")),
    ];
    let job = mpirun_with_env(4, &env, &args);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let result = read_json(&json);
    assert_eq!(result["verified"], true);
    assert_eq!(
        (result["transport"].as_str(), result["variant"].as_str()),
        (Some("auto"), Some("tq"))
    );
    assert_pretend_node_links(&result, "nccl", "gpu-mpi");
    for (rank, peer, _, why, _) in routes_of(&result) {
        if rank != peer {
            assert!(why.contains("routes given"), "rank {rank} to {peer}: {why}");
        }
    }
}

#[test]
fn bad_routes_files_are_refused_on_every_rank_naming_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let other_schema = write(
        dir.path(),
        "other.json",
        r#"{"schema": "other/9", "within_node": ["mpi"], "between_nodes": ["mpi"]}"#,
    );
    let missing = dir.path().join("missing.json");
    for (file, needle) in [
        (other_schema.as_str(), "schema 'other/9'"),
        (missing.to_str().expect("utf-8 path"), "cannot be read"),
    ] {
        let job = mpirun(2, &["stencil", "--grid", "8x8x8", "--routes", file]);
        job.assert_fails_with(2, needle);
        job.assert_fails_with(2, file);
    }
}

#[test]
fn tune_writes_a_routes_file_from_verified_measurements_that_the_stencil_follows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("routes.json");
    let out_str = out.to_str().expect("utf-8 path");
    let declaration = ["--grid", "16x8x8", "--procs", "4x1x1", "--steps", "2"];
    let mut args = vec!["tune"];
    args.extend(declaration);
    args.extend(["--exchange-reps", "3", "--out", out_str]);
    args.extend(["--try-threads", "128", "--try-elems-per-thread", "4"]);
    args.extend(["--try-signalled-blocks", "8"]);
    let env = [("HALOPORT_IPC_RANKS_PER_NODE", "2")];
    let job = mpirun_with_env(4, &env, &args);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let file = read_json(&out);
    assert_eq!(file["schema"], "haloport-routes/1");
    let names = |key: &str| -> Vec<String> {
        file[key]
            .as_array()
            .expect("a route list")
            .iter()
            .map(|v| v.as_str().expect("a route").to_owned())
            .collect()
    };
    let (within, between) = (names("within_node"), names("between_nodes"));
    let measurements = file["measurements"].as_array().expect("measurements");
    // The last time of a route of a kind of link: the routes within a node are timed again
    // beside the routes chosen between nodes ("within-node (again, ...): ipc").
    let last = |label: &str, route: &str| {
        measurements
            .iter()
            .rev()
            .find(|m| {
                let tried = m["tried"].as_str().unwrap_or("");
                tried.starts_with(label) && tried.ends_with(&format!(": {route}"))
            })
            .unwrap_or_else(|| panic!("{label}: {route} tried: {file}"))
    };
    let timed = |label: &str, route: &str| last(label, route)["exchange_median_us"].as_f64();
    assert!(measurements.iter().all(|m| m["verified"] == true), "{file}");
    // NCCL does not load here, so the routes between nodes differ from auto's first (nccl):
    // the routes within a node were timed again beside them.
    assert!(
        measurements.iter().any(|m| m["tried"]
            .as_str()
            .is_some_and(|t| t.starts_with("within-node (again, between nodes "))),
        "{file}"
    );
    // Every route was tried; those that served every link are ranked by their time, first.
    for (label, routes) in [("within-node", &within), ("between-nodes", &between)] {
        let times: Vec<Option<f64>> = routes.iter().map(|r| timed(label, r)).collect();
        let served: Vec<f64> = times.iter().flatten().copied().collect();
        assert!(
            served.windows(2).all(|w| w[0] <= w[1]),
            "{label}: {routes:?} {times:?}"
        );
        assert!(
            times
                .iter()
                .skip_while(|t| t.is_some())
                .all(Option::is_none),
            "{label}: measured routes come before the rest: {routes:?} {times:?}"
        );
        // Without a library NCCL serves nothing, and says why.
        let nccl = last(label, "nccl");
        assert!(
            nccl["passed_over"]
                .as_str()
                .is_some_and(|w| w.contains("NCCL")),
            "{nccl}"
        );
    }
    assert!(within.contains(&"ipc".to_owned()) && timed("within-node", "ipc").is_some());
    assert!(
        file["why"]["within_node"]
            .as_str()
            .is_some_and(|w| w.contains(" us")),
        "{file}"
    );
    // The stencil with the file: each link takes the first route of its kind that serves it
    // there (GPU-aware MPI is `auto`, so off on the host backend, and NCCL is not found).
    let serves = |r: &&String| r.as_str() == "ipc" || r.as_str() == "mpi";
    let first = |routes: &[String]| routes.iter().find(serves).cloned().expect("a route");
    let (want_within, want_between) = (first(&within), first(&between));
    let result = in_two_pretend_nodes(&["--routes", out_str]);
    assert_pretend_node_links(&result, &want_within, &want_between);
    let settings = &file["settings"];
    assert_eq!(result["variant"], settings["strategy"]);
}

#[test]
fn info_sets_the_exchange_up_and_prints_every_neighbours_route_and_why() {
    let args = [
        "info",
        "--neighbours",
        "--grid",
        "16x8x8",
        "--procs",
        "4x1x1",
        "--transport",
        "auto",
    ];
    let job = mpirun_with_env(4, &[("HALOPORT_IPC_RANKS_PER_NODE", "2")], &args);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(job
        .stdout
        .contains("routes of the host exchange over 4 ranks (auto):"));
    for rank in 0..4 {
        assert!(
            job.stdout.contains(&format!("rank {rank}:\n")),
            "{}",
            job.explain()
        );
    }
    let route_lines: Vec<&str> = job
        .stdout
        .lines()
        .filter(|l| l.starts_with("  +") || l.starts_with("  -"))
        .collect();
    assert_eq!(route_lines.len(), 4 * 26, "{}", job.stdout);
    assert!(route_lines
        .iter()
        .any(|l| l.contains(" ipc ") && l.contains("same node; auto by capability")));
    assert!(route_lines
        .iter()
        .any(|l| l.contains(" mpi ") && l.contains("another node; auto by capability")));
}
