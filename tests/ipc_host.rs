//! The device-direct transport on the host backend (memory shared between the ranks of a
//! node): both ipc variants under `mpirun -np 2` and `-np 4`, every built-in pattern, with and
//! without the closing barrier, verified; its faults and bad input.

mod common;

use common::{mpirun, read_json};

const IPC_VARIANTS: [&str; 2] = ["ipc-base", "ipc-tq"];

/// The arguments every device-direct run here shares, then `extra`.
fn ipc_args<'a>(variant: &'a str, pattern: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    common::thesis4_args("ipc", variant, pattern, extra)
}

fn ipc_run(
    np: u32,
    variant: &str,
    pattern: &str,
    extra: &[&str],
    json: &std::path::Path,
) -> common::Job {
    let mut args = ipc_args(variant, pattern, extra);
    args.extend(["--json", json.to_str().expect("utf-8 path")]);
    mpirun(np, &args)
}

fn every_ipc_variant_verifies(np: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    for pattern in ["pairwise", "ring", "mixed"] {
        for variant in IPC_VARIANTS {
            for back_to_back in [false, true] {
                let json = dir
                    .path()
                    .join(format!("{variant}-{pattern}-{back_to_back}.json"));
                let extra: &[&str] = if back_to_back { &["--no-barrier"] } else { &[] };
                let job = ipc_run(np, variant, pattern, extra, &json);
                assert_eq!(
                    job.code,
                    Some(0),
                    "{variant} {pattern} -np {np}: {}",
                    job.explain()
                );
                let r = read_json(&json);
                assert_eq!(r["verified"], true, "{variant} {pattern}");
                assert_eq!(r["transport"], "ipc");
                assert_eq!(r["barrier"], !back_to_back);
                assert_eq!(r["wrong"], 0);
                assert_eq!(r["missing"], 0);
                // thesis-4 blocks of 1, 15000, 30000 and 45000 elements are served by 1, 3, 6
                // and 8 chunks (the largest block's share, 5625, at most each); each chunk
                // checks one element per thread plus its first and last.
                let per_iteration = 18 * (128 + 2);
                assert_eq!(
                    r["checked"],
                    u64::from(np) * per_iteration * 2 * 4,
                    "{variant} {pattern}: checks performed"
                );
                assert_eq!(r["planned"], r["checked"]);
                // The report says how back-to-back times are measured.
                let out = dir
                    .path()
                    .join(format!("report-{variant}-{pattern}-{back_to_back}"));
                let report = common::alone(&[
                    "report",
                    json.to_str().expect("utf-8 path"),
                    "--out",
                    out.to_str().expect("utf-8 path"),
                ]);
                assert_eq!(report.code, Some(0), "{}", report.explain());
                let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
                assert_eq!(
                    md.contains(
                        "each of their times is the period between iterations' ends, averaged over\nthe iterations in flight"
                    ),
                    back_to_back,
                    "{md}"
                );
            }
        }
    }
}

#[test]
fn both_ipc_variants_verify_on_2_ranks_with_every_pattern_with_and_without_barrier() {
    every_ipc_variant_verifies(2);
}

#[test]
fn both_ipc_variants_verify_on_4_ranks_with_every_pattern_with_and_without_barrier() {
    every_ipc_variant_verifies(4);
}

#[test]
fn a_dropped_chunk_ends_every_rank_with_a_time_out_naming_the_block() {
    // Back to back the next iteration is already launched when the time-out strikes: it must
    // be aborted too, not left to hang or to free memory under a running kernel.
    for (variant, pacing) in IPC_VARIANTS
        .iter()
        .flat_map(|v| [(v, "--barrier"), (v, "--no-barrier")])
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut args = vec!["--inject", "drop-send=2", "--timeout", "1"];
        if pacing == "--no-barrier" {
            args.push(pacing);
        }
        let job = ipc_run(2, variant, "pairwise", &args, &dir.path().join("r.json"));
        assert_ne!(job.code, Some(0), "{}", job.explain());
        for (rank, peer) in [(0, 1), (1, 0)] {
            let expected = format!(
                "rank {rank}: timed out after 1.0 s in the device-direct exchange: block 2: 6 of 6 incoming chunks timed out on the device (from rank {peer})"
            );
            assert!(
                job.stderr.contains(&expected),
                "{variant} {pacing}: expected\n{expected}\n{}",
                job.explain()
            );
        }
        assert!(!job.stderr.contains("panicked"), "{}", job.explain());
        assert!(
            job.took.as_secs() < 20,
            "{variant} {pacing} took {:?}",
            job.took
        );
    }
}

#[test]
fn a_short_chunk_fails_verification_naming_the_block() {
    for variant in IPC_VARIANTS {
        let dir = tempfile::tempdir().expect("temp dir");
        let job = ipc_run(
            2,
            variant,
            "pairwise",
            &["--inject", "short-send=3"],
            &dir.path().join("r.json"),
        );
        job.assert_fails_with(1, "verification failed");
        assert!(
            job.stdout
                .contains("wrong value: rank 0 block 3 run 0 iteration 0: element 44999"),
            "{variant}: {}",
            job.explain()
        );
    }
}

#[test]
fn transports_and_variants_that_do_not_fit_are_refused() {
    mpirun(2, &["run", "--variant", "ipc-base", "--runs", "1"]).assert_fails_with(
        2,
        "variant ipc-base needs a GPU-initiated transport; mpi is host-initiated, staged in pinned host memory: give --transport ipc",
    );
    mpirun(
        2,
        &[
            "run",
            "--variant",
            "base-nb-wait",
            "--transport",
            "ipc",
            "--runs",
            "1",
        ],
    )
    .assert_fails_with(
        2,
        "variant base-nb-wait needs a transport whose transfers the CPU starts; ipc is GPU-initiated, device buffers: give --transport mpi",
    );
    mpirun(
        2,
        &[
            "run",
            "--variant",
            "tq-nb-pb",
            "--no-barrier",
            "--runs",
            "1",
        ],
    )
    .assert_fails_with(
        2,
        "--no-barrier applies to the device-direct variants (ipc-base, ipc-tq) only",
    );
    mpirun(
        2,
        &[
            "run",
            "--variant",
            "ipc-tq",
            "--transport",
            "ipc",
            "--inject",
            "corrupt-recv=1",
            "--runs",
            "1",
        ],
    )
    .assert_fails_with(
        2,
        "the device-direct variants have no CPU step between arrival and unpack",
    );
    mpirun(2, &["run", "--transport", "nvlink"]).assert_fails_with(2, "unknown transport 'nvlink'");
}

/// Test hook of the ipc transport: ranks count as nodes of this many consecutive ranks.
const RANKS_PER_NODE: &str = "HALOPORT_IPC_RANKS_PER_NODE";

fn split_node_run(
    np: u32,
    per_node: &str,
    variant: &str,
    pattern: &str,
    extra: &[&str],
) -> common::Job {
    let args = ipc_args(variant, pattern, extra);
    common::mpirun_with_env(np, &[(RANKS_PER_NODE, per_node)], &args)
}

#[test]
fn peers_on_other_nodes_fall_back_to_host_staged_mpi_within_the_exchange() {
    // Nodes of two ranks: ring and mixed send some blocks within a node (device-direct) and
    // some across (host-staged MPI) in the same exchange.
    for pattern in ["ring", "mixed"] {
        for variant in IPC_VARIANTS {
            for extra in [&[][..], &["--no-barrier"][..]] {
                let job = split_node_run(4, "2", variant, pattern, extra);
                assert_eq!(
                    job.code,
                    Some(0),
                    "{variant} {pattern} {extra:?}: {}",
                    job.explain()
                );
                assert!(
                    job.stdout
                        .contains("verified: true (74880 of 74880 planned checks made"),
                    "{variant} {pattern}: {}",
                    job.explain()
                );
            }
        }
    }
}

#[test]
fn faults_on_blocks_to_another_node_are_caught() {
    // One rank per node: every block takes the host-staged path.
    for variant in IPC_VARIANTS {
        let job = split_node_run(2, "1", variant, "pairwise", &["--inject", "short-send=3"]);
        job.assert_fails_with(1, "verification failed");
        assert!(
            job.stdout
                .contains("wrong value: rank 0 block 3 run 0 iteration 0: element 44999"),
            "{variant}: {}",
            job.explain()
        );
        let job = split_node_run(
            2,
            "1",
            variant,
            "pairwise",
            &["--inject", "drop-send=2", "--timeout", "1"],
        );
        for (rank, peer) in [(0, 1), (1, 0)] {
            let expected = format!(
                "rank {rank}: timed out after 1.0 s in the device-direct exchange: block 2: 6 of 6 incoming chunks timed out on the device (from rank {peer})"
            );
            assert!(
                job.stderr.contains(&expected),
                "{variant}: expected\n{expected}\n{}",
                job.explain()
            );
        }
        assert!(job.took.as_secs() < 20, "{variant} took {:?}", job.took);
    }
}

#[test]
fn results_record_the_transport_of_every_block_each_way() {
    // Ring over 4 ranks in nodes of 2: rank 1 sends to rank 2 (other node) and receives from
    // rank 0 (same node).
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("links.json");
    let mut args = ipc_args("ipc-base", "ring", &[]);
    args.extend(["--json", json.to_str().expect("utf-8 path")]);
    let job = common::mpirun_with_env(4, &[(RANKS_PER_NODE, "2")], &args);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let result = read_json(&json);
    let rank1 = result["links"][1].as_array().cloned().unwrap_or_default();
    assert!(!rank1.is_empty(), "{result}");
    for link in &rank1 {
        let expect = |peer: &serde_json::Value| {
            if peer.as_i64().is_some_and(|p| p / 2 == 0) {
                "ipc"
            } else {
                "mpi"
            }
        };
        assert_eq!(link["send"], expect(&link["to"]), "{link}");
        assert_eq!(link["recv"], expect(&link["from"]), "{link}");
    }
    assert!(rank1.iter().any(|l| l["send"] == "mpi"), "{rank1:?}");
    assert!(rank1.iter().any(|l| l["recv"] == "ipc"), "{rank1:?}");
    // A host-staged variant records every block as mpi.
    let json = dir.path().join("mpi.json");
    let job = mpirun(
        2,
        &[
            "run",
            "--workload",
            "small",
            "--runs",
            "1",
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let result = read_json(&json);
    let all: Vec<&serde_json::Value> = result["links"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r.as_array().into_iter().flatten())
        .collect();
    assert!(!all.is_empty() && all.iter().all(|l| l["send"] == "mpi" && l["recv"] == "mpi"));
}
