//! Every variant of every strategy (baseline and taskqueue) under `mpirun -np 2` and `-np 4`
//! with every built-in pattern, on the host backend, verified; and the wrong-value and
//! time-out faults caught.

mod common;

use common::{mpirun, read_json};

const PATTERNS: [&str; 3] = ["pairwise", "ring", "mixed"];

/// Runs every variant with every pattern on `np` ranks and checks each result file: verified,
/// with exactly the number of checks the workload implies (so a check that silently did not run
/// cannot pass), and one time per measured iteration.
fn every_variant_verifies(np: u32, workload: &str, blocks: u64, threads: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (runs, iters, warmup) = (2_u64, 4_u64, 1_u64);
    for pattern in PATTERNS {
        for variant in common::BASELINE_VARIANTS
            .into_iter()
            .chain(common::TASKQUEUE_VARIANTS)
        {
            let json = dir.path().join(format!("{variant}-{pattern}.json"));
            let job = mpirun(
                np,
                &[
                    "run",
                    "--backend",
                    "host",
                    "--variant",
                    variant,
                    "--workload",
                    workload,
                    "--pattern",
                    pattern,
                    "--runs",
                    "2",
                    "--iters",
                    "4",
                    "--warmup",
                    "1",
                    "--json",
                    json.to_str().expect("utf-8 path"),
                ],
            );
            assert_eq!(
                job.code,
                Some(0),
                "{variant} {pattern} -np {np}: {}",
                job.explain()
            );
            assert!(job.stdout.contains("verified: true"), "{}", job.explain());
            let r = read_json(&json);
            assert_eq!(r["verified"], true, "{variant} {pattern}");
            assert_eq!(r["variant"], variant);
            assert_eq!(r["pattern"], pattern);
            assert_eq!(r["ranks"], np);
            assert_eq!(r["wrong"], 0);
            assert_eq!(r["missing"], 0);
            // Per block: one check per thread, plus the first and the last element.
            let expected_checks = u64::from(np) * blocks * (threads + 2) * runs * iters;
            assert_eq!(
                r["checked"], expected_checks,
                "{variant} {pattern}: checks performed"
            );
            assert_eq!(
                r["planned"], expected_checks,
                "{variant} {pattern}: checks planned"
            );
            let times = r["iteration_us"]
                .as_array()
                .expect("iteration_us is a list");
            assert_eq!(times.len() as u64, runs);
            for run in times {
                let run = run.as_array().expect("a run's times");
                assert_eq!(run.len() as u64, iters - warmup);
                assert!(run.iter().all(|t| t.as_f64().is_some_and(|t| t > 0.0)));
            }
            let median = r["median_us"].as_f64().expect("median");
            assert!(median > 0.0 && r["stddev_us"].as_f64().is_some());
            // The taskqueue processes exactly 2 (zero-copy) or 4 (memcpy) events per block and
            // measured iteration, on every rank.
            let per_block = if variant.starts_with("tqm-") { 4 } else { 2 };
            for (rank, profile) in r["profile"]
                .as_array()
                .expect("profile list")
                .iter()
                .enumerate()
            {
                if variant.starts_with("base-") {
                    assert!(
                        profile.is_null(),
                        "{variant}: the baseline has no event loop"
                    );
                } else {
                    let events = per_block * blocks * runs * (iters - warmup);
                    assert_eq!(profile["events"], events, "{variant} {pattern} rank {rank}");
                    assert!(profile["max_in_row"].as_u64().is_some_and(|m| m >= 1));
                }
            }
        }
    }
}

#[test]
fn every_variant_and_pattern_verifies_on_2_ranks() {
    every_variant_verifies(2, "thesis-9", 9, 128);
}

#[test]
fn every_variant_and_pattern_verifies_on_4_ranks() {
    every_variant_verifies(4, "thesis-4", 4, 128);
}

#[test]
fn a_corrupted_receive_buffer_fails_verification_with_the_wrong_values_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("corrupt.json");
    let job = mpirun(
        2,
        &[
            "run",
            "--variant",
            "base-nb-test",
            "--workload",
            "small",
            "--runs",
            "1",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--inject",
            "corrupt-recv=2",
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    // Element 0 is checked twice per block: as the first element and by thread 0's sample.
    job.assert_fails_with(
        1,
        "verification failed: 12 of 432 checked elements were wrong",
    );
    assert!(job.stdout.contains("verified: false"), "{}", job.explain());
    let r = read_json(&json);
    assert_eq!(r["verified"], false);
    assert_eq!(r["wrong"], 12);
    let errors = r["errors"].as_array().expect("errors list");
    assert_eq!(errors.len(), 6, "one record per rank and iteration");
    // Rank 1's block 2 comes from rank 0: key 1000 * (iteration + 1) + 0 * 100 + 2, times
    // 2^21, plus the element index 0.
    let e = errors
        .iter()
        .find(|e| e["rank"] == 1 && e["iteration"] == 1)
        .expect("rank 1, iteration 1 recorded");
    assert_eq!(e["block"], 2);
    assert_eq!(e["expected"], 2002.0 * 2_097_152.0);
    assert_eq!(e["found"], -1.0);
    assert_eq!(e["index"], 0);
}

#[test]
fn a_dropped_send_ends_in_a_time_out_naming_the_block_not_a_hang() {
    // Testany loop: the strategy's own time-out names the missing block.
    let job = mpirun(
        2,
        &[
            "run",
            "--variant",
            "base-bl-test",
            "--inject",
            "drop-send=2",
            "--timeout",
            "1",
            "--runs",
            "1",
        ],
    );
    assert_ne!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stderr.contains(
            "timed out after 1.0 s in the MPI_Testany loop waiting for the receives of blocks [2]"
        ),
        "{}",
        job.explain()
    );
    assert!(job.took.as_secs() < 30, "took {:?}", job.took);
    // Waitall is polled too: the rank returns a time-out naming the block, and the CLI ends
    // the job.
    let job = mpirun(
        2,
        &[
            "run",
            "--variant",
            "base-nb-wait",
            "--inject",
            "drop-send=0",
            "--timeout",
            "1",
            "--runs",
            "1",
        ],
    );
    assert_ne!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stderr.contains(
            "timed out after 1.0 s in MPI_Waitall (polled) for the receives of blocks [0 (from rank"
        ) && !job.stderr.contains("1 (from rank"),
        "{}",
        job.explain()
    );
    // The receive that never came is cancelled and completed before its buffer is freed.
    assert!(
        job.stderr.contains(
            "MPI requests were still pending when the transport was dropped; cancelled and completed"
        ),
        "{}",
        job.explain()
    );
    assert!(!job.stderr.contains("panicked"), "{}", job.explain());
    assert!(job.took.as_secs() < 30, "took {:?}", job.took);
}

#[test]
fn a_corrupted_receive_fails_verification_in_the_taskqueue_too() {
    let job = mpirun(
        2,
        &[
            "run",
            "--variant",
            "tqm-nb-pb",
            "--workload",
            "small",
            "--runs",
            "1",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--inject",
            "corrupt-recv=1",
        ],
    );
    // Block 1 has 15 elements and 16 checking threads: threads 0 and 1 both check element 0,
    // and so does the check of the first element.
    job.assert_fails_with(
        1,
        "verification failed: 18 of 432 checked elements were wrong",
    );
    let line = "wrong value: rank 0 block 1 run 0 iteration 0: element 0 expected 2308964352 found -1 (not a value pack writes; 3 wrong in block)";
    assert!(job.stdout.contains(line), "{}", job.explain());
}

#[test]
fn a_dropped_send_in_the_taskqueue_ends_in_a_time_out_on_every_rank() {
    for variant in ["tq-nb-tq", "tq-bl-pb", "tqm-nb-pb", "tqm-bl-tq"] {
        let job = mpirun(
            2,
            &[
                "run",
                "--variant",
                variant,
                "--workload",
                "thesis-4",
                "--runs",
                "1",
                "--inject",
                "drop-send=2",
                "--timeout",
                "2",
            ],
        );
        assert_ne!(job.code, Some(0), "{variant}: {}", job.explain());
        for (rank, peer) in [(0, 1), (1, 0)] {
            let expected = format!(
                "rank {rank}: timed out after 2.0 s in the taskqueue event loop ({} of {} events): \
                 block 2: GPU waiting for its go flag (receive not arrived); CPU: its send dropped \
                 by fault injection, receive from rank {peer} not completed",
                if variant.starts_with("tqm-") { 15 } else { 7 },
                if variant.starts_with("tqm-") { 16 } else { 8 },
            );
            assert!(
                job.stderr.contains(&expected),
                "{variant}: expected\n{expected}\n{}",
                job.explain()
            );
        }
        assert!(!job.stderr.contains("panicked"), "{}", job.explain());
        // The time-out (2 s), the grace for other ranks to report (2 s), start-up and abort.
        assert!(job.took.as_secs() < 20, "{variant} took {:?}", job.took);
    }
}

/// Every strategy (all 16 variants and the mpi-only floor) fails verification when a block
/// arrives one element short, and names the block and its last element.
#[test]
fn a_short_send_fails_verification_with_the_block_named_on_every_strategy() {
    for variant in common::BASELINE_VARIANTS
        .into_iter()
        .chain(common::TASKQUEUE_VARIANTS)
        .chain(["mpi-only"])
    {
        let job = mpirun(
            2,
            &[
                "run",
                "--variant",
                variant,
                "--workload",
                "small",
                "--runs",
                "1",
                "--iters",
                "3",
                "--warmup",
                "1",
                "--inject",
                "short-send=2",
            ],
        );
        job.assert_fails_with(1, "verification failed");
        // Block 2 has 30 elements: element 29 never arrives, so it keeps the zero it was
        // allocated with, in every iteration.
        for needle in [
            "wrong value: rank 0 block 2 run 0 iteration 0: element 29",
            "wrong value: rank 1 block 2 run 0 iteration 1: element 29",
            "found 0 (not a value pack writes; 1 wrong in block)",
        ] {
            assert!(
                job.stdout.contains(needle),
                "{variant}: missing '{needle}'; {}",
                job.explain()
            );
        }
        assert!(
            !job.stdout.contains("block 0 run") && !job.stdout.contains("block 3 run"),
            "{variant}: only block 2 is short; {}",
            job.explain()
        );
    }
}

/// `--verify full` checks every element of every block on every strategy kind, and says so.
#[test]
fn full_verification_checks_every_element() {
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in ["base-nb-wait", "tq-nb-pb", "tqm-bl-tq", "mpi-only"] {
        let json = dir.path().join(format!("{variant}.json"));
        let job = mpirun(
            2,
            &[
                "run",
                "--variant",
                variant,
                "--workload",
                "thesis-4",
                "--runs",
                "1",
                "--iters",
                "2",
                "--warmup",
                "1",
                "--verify",
                "full",
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verify"], "full");
        // thesis-4: 1 + 15000 + 30000 + 45000 elements per rank and iteration.
        let expected = 2 * 90_001 * 2;
        assert_eq!(r["checked"], expected, "{variant}");
        assert_eq!(r["planned"], expected, "{variant}");
        assert_eq!(r["verified"], true, "{variant}");
    }
}
