//! The thesis's workloads as a payload of the library's halo exchange (`lib-{base|tq}-{mpi|ipc}`)
//! on the host backend: every variant under `mpirun -np 2` and `-np 4`, every built-in pattern,
//! both verification modes, exact check counts; device timelines; peers on other nodes; the
//! fault and bad input.

mod common;

use common::{mpirun, mpirun_with_env, read_json};

const LIBRARY_VARIANTS: [&str; 4] = ["lib-base-mpi", "lib-tq-mpi", "lib-base-ipc", "lib-tq-ipc"];

/// Runs 2 x 4 iterations of thesis-4 over the transport in the variant's name.
fn library_args<'a>(variant: &'a str, pattern: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let transport = if variant.ends_with("ipc") {
        "ipc"
    } else {
        "mpi"
    };
    common::thesis4_args(transport, variant, pattern, extra)
}

fn every_library_variant_verifies(np: u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    for pattern in ["pairwise", "ring", "mixed"] {
        for variant in LIBRARY_VARIANTS {
            for (verify, per_block) in [("sample", None), ("full", Some(()))] {
                let json = dir
                    .path()
                    .join(format!("{variant}-{pattern}-{verify}.json"));
                let mut args = library_args(variant, pattern, &["--verify", verify, "--json"]);
                args.push(json.to_str().expect("utf-8 path"));
                let job = mpirun(np, &args);
                assert_eq!(
                    job.code,
                    Some(0),
                    "{variant} {pattern} {verify} -np {np}: {}",
                    job.explain()
                );
                let r = read_json(&json);
                assert_eq!(r["verified"], true, "{variant} {pattern} {verify}");
                assert_eq!(r["strategy"], "library");
                assert_eq!(r["wrong"], 0);
                assert_eq!(r["missing"], 0);
                // Per rank and iteration (8 of them): the thesis's sample, 128 + 2 per block,
                // or every element of the four blocks.
                let per_iteration: u64 = match per_block {
                    None => 4 * (128 + 2),
                    Some(()) => 1 + 15_000 + 30_000 + 45_000,
                };
                assert_eq!(
                    r["checked"],
                    per_iteration * 8 * u64::from(np),
                    "{variant} {pattern} {verify}"
                );
            }
        }
    }
}

#[test]
fn every_library_variant_verifies_on_2_ranks_with_every_pattern() {
    every_library_variant_verifies(2);
}

#[test]
fn every_library_variant_verifies_on_4_ranks_with_every_pattern() {
    every_library_variant_verifies(4);
}

#[test]
fn every_library_variant_records_a_device_timeline() {
    // The last run's measured iterations (3 of 4), per rank and block: the pack phase (the
    // grid blocks of the message that sends the block) and the unpack phase (those of the
    // one that receives it), each stamped and in order, inside its iteration on the host
    // clock. A stamp never written (zero) would land long before its iteration.
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in LIBRARY_VARIANTS {
        let json = dir.path().join(format!("{variant}.json"));
        let mut args = library_args(variant, "mixed", &["--json"]);
        args.push(json.to_str().expect("utf-8 path"));
        let job = mpirun(2, &args);
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        let timelines = r["timelines"].as_array().expect("timelines");
        assert_eq!(timelines.len(), 2, "{variant}: a timeline per rank");
        for (rank, timeline) in timelines.iter().enumerate() {
            let uncertainty = r["clock"][rank]["uncertainty_ns"].as_f64();
            let slack = uncertainty.expect("a clock fit") / 1e3 + 5.0;
            let iterations = timeline.as_array().expect("iterations");
            assert_eq!(iterations.len(), 3, "{variant} rank {rank}");
            for it in iterations {
                let duration = it["duration_us"].as_f64().expect("duration");
                let blocks = it["blocks"].as_array().expect("blocks");
                assert_eq!(blocks.len(), 4, "{variant} rank {rank}");
                for b in blocks {
                    for phase in ["pack_us", "unpack_us"] {
                        let at = |i: usize| b[phase][i].as_f64().unwrap_or(f64::NAN);
                        let (start, end) = (at(0), at(1));
                        assert!(
                            start <= end && start > -slack && end < duration + slack,
                            "{variant} rank {rank}: {phase} of {b} out of order or outside 0..{duration} us"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn over_ipc_peers_on_other_nodes_take_host_staged_mpi() {
    // Nodes of two ranks (the ipc transport's test hook): ring and mixed send some blocks
    // within a node (device-direct) and some across (host-staged) in the same exchange.
    for pattern in ["ring", "mixed"] {
        for variant in ["lib-base-ipc", "lib-tq-ipc"] {
            let args = library_args(variant, pattern, &[]);
            let job = mpirun_with_env(4, &[("HALOPORT_IPC_RANKS_PER_NODE", "2")], &args);
            assert_eq!(job.code, Some(0), "{variant} {pattern}: {}", job.explain());
            assert!(
                job.stdout
                    .contains("verified: true (16640 of 16640 planned checks made"),
                "{variant} {pattern}: {}",
                job.explain()
            );
        }
    }
}

#[test]
fn a_dropped_block_ends_every_rank_with_a_time_out_naming_it() {
    // Pairwise (one entry per block, both ways) on 2 ranks, and a ring (one entry to the next
    // rank, one from the previous) on 3.
    for (pattern, np) in [("pairwise", 2), ("ring", 3)] {
        for variant in LIBRARY_VARIANTS {
            let args = library_args(
                variant,
                pattern,
                &["--inject", "drop-send=2", "--timeout", "1"],
            );
            let job = mpirun(np, &args);
            assert_eq!(job.code, Some(3), "{variant} {pattern}: {}", job.explain());
            for rank in 0..np {
                // Block 2 comes from the previous rank.
                let source = (rank + np - 1) % np;
                let named = job.stderr.lines().any(|line| {
                    line.contains(&format!("rank {rank}: timed out"))
                        && (line.contains(&format!("block 2 (rank {source})"))
                            || line.contains(&format!("rank {source} (block 2)")))
                });
                assert!(named, "{variant} {pattern}: rank {rank}: {}", job.explain());
            }
            assert!(!job.stderr.contains("panicked"), "{}", job.explain());
            assert!(job.took.as_secs() < 20, "{variant} took {:?}", job.took);
        }
    }
}

#[test]
fn one_block_a_region_still_verifies_every_element() {
    // `--lib-blocks 1`: every region of a signalled message served by one grid block, so each
    // message raises its flag without a count.
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in ["lib-tq-mpi", "lib-tq-ipc"] {
        let json = dir.path().join(format!("{variant}.json"));
        let mut args = library_args(
            variant,
            "mixed",
            &["--lib-blocks", "1", "--verify", "full", "--json"],
        );
        args.push(json.to_str().expect("utf-8 path"));
        let job = mpirun(2, &args);
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "{variant}");
        assert_eq!(r["wrong"], 0, "{variant}");
        assert_eq!(
            r["checked"],
            (1 + 15_000 + 30_000 + 45_000) * 8 * 2,
            "{variant}"
        );
    }
}

#[test]
fn faults_and_pacing_the_library_cannot_serve_are_refused() {
    let job = mpirun(
        2,
        &library_args("lib-base-mpi", "pairwise", &["--inject", "corrupt-recv=1"]),
    );
    job.assert_fails_with(2, "they take drop-send only");
    let job = mpirun(
        2,
        &library_args("lib-tq-ipc", "pairwise", &["--no-barrier"]),
    );
    job.assert_fails_with(2, "--no-barrier applies to the device-direct variants");
    let mut args = library_args("lib-tq-ipc", "pairwise", &[]);
    args[2] = "mpi";
    let job = mpirun(2, &args);
    job.assert_fails_with(2, "variant lib-tq-ipc needs the transport in its name");
}
