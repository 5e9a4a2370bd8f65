//! The baseline on NVIDIA GPUs through the CLI: every variant under `mpirun -np 2`, verified,
//! with device timelines and a clock fit. Compiled always; without the `cuda` feature or a CUDA
//! device each test prints `SKIPPED: ...` and passes, unless `HALOPORT_REQUIRE_GPU=1`.

mod common;

use common::{mpirun, mpirun_with_env, read_json};

fn require_gpu() -> bool {
    common::require_device("cuda")
}

#[test]
fn every_baseline_variant_verifies_on_cuda_with_a_clock_fit() {
    if !require_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in common::BASELINE_VARIANTS {
        let json = dir.path().join(format!("{variant}.json"));
        let job = mpirun(
            2,
            &[
                "run",
                "--backend",
                "cuda",
                "--variant",
                variant,
                "--workload",
                "thesis-9",
                "--runs",
                "2",
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "{variant}");
        assert_eq!(r["backend"], "cuda");
        // Per block: one check per thread plus the first and the last element.
        assert_eq!(
            r["checked"],
            2 * 9 * (128 + 2) * 2 * 13,
            "{variant}: checks performed"
        );
        assert_eq!(r["planned"], r["checked"], "{variant}: checks planned");
        let fit = &r["clock"][0];
        let slope = fit["slope"].as_f64().expect("a clock fit");
        assert!(
            (slope - 1.0).abs() < 0.01,
            "{variant}: globaltimer runs at {slope} ns/tick"
        );
        assert!(
            fit["uncertainty_ns"].as_f64().is_some_and(|u| u < 1e6),
            "{variant}: {fit}"
        );
        // Pack precedes unpack in every block of every timed iteration, and both fall inside
        // their iteration on the host clock (within the fit's uncertainty).
        let slack = fit["uncertainty_ns"].as_f64().unwrap_or(0.0) / 1e3 + 5.0;
        for it in r["timelines"][0].as_array().expect("timeline") {
            let duration = it["duration_us"].as_f64().expect("duration");
            for b in it["blocks"].as_array().expect("blocks") {
                let (p0, p1) = (
                    b["pack_us"][0].as_f64().unwrap_or(f64::NAN),
                    b["pack_us"][1].as_f64().unwrap_or(f64::NAN),
                );
                let (u0, u1) = (
                    b["unpack_us"][0].as_f64().unwrap_or(f64::NAN),
                    b["unpack_us"][1].as_f64().unwrap_or(f64::NAN),
                );
                assert!(
                    p0 <= p1 && p1 <= u0 && u0 <= u1,
                    "{variant}: phases out of order: {b}"
                );
                assert!(
                    p0 > -slack && u1 < duration + slack,
                    "{variant}: {b} outside 0..{duration} us"
                );
            }
        }
    }
}

#[test]
fn two_ranks_sharing_one_gpu_still_verify() {
    if !require_gpu() {
        return;
    }
    // Only device 0 visible: both ranks map to it (local_rank % 1), time-sliced.
    let job = mpirun_with_env(
        2,
        &[("CUDA_VISIBLE_DEVICES", "0")],
        &[
            "run",
            "--backend",
            "cuda",
            "--variant",
            "base-nb-test",
            "--workload",
            "small",
            "--runs",
            "2",
        ],
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(job.stdout.contains("verified: true"), "{}", job.explain());
}

#[test]
fn every_taskqueue_variant_verifies_on_cuda_with_its_events_counted() {
    if !require_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in common::TASKQUEUE_VARIANTS {
        let json = dir.path().join(format!("{variant}.json"));
        let job = mpirun(
            2,
            &[
                "run",
                "--backend",
                "cuda",
                "--variant",
                variant,
                "--workload",
                "thesis-27",
                "--runs",
                "2",
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "{variant}");
        assert_eq!(
            r["checked"],
            2 * 27 * (128 + 2) * 2 * 13,
            "{variant}: checks performed"
        );
        assert_eq!(r["planned"], r["checked"], "{variant}: checks planned");
        let per_block = if variant.starts_with("tqm-") { 4 } else { 2 };
        for profile in r["profile"].as_array().expect("profiles") {
            assert_eq!(profile["events"], per_block * 27 * 2 * 10, "{variant}");
        }
        // In the persistent kernel every block unpacks after it packed, within its iteration.
        for it in r["timelines"][0].as_array().expect("timeline") {
            for b in it["blocks"].as_array().expect("blocks") {
                let pack_end = b["pack_us"][1].as_f64().unwrap_or(f64::NAN);
                let unpack_start = b["unpack_us"][0].as_f64().unwrap_or(f64::NAN);
                assert!(pack_end <= unpack_start, "{variant}: {b}");
            }
        }
    }
}

#[test]
fn a_dropped_send_in_the_gpu_taskqueue_times_out_on_both_ranks() {
    if !require_gpu() {
        return;
    }
    let job = mpirun(
        2,
        &[
            "run",
            "--backend",
            "cuda",
            "--variant",
            "tq-nb-pb",
            "--workload",
            "thesis-9",
            "--runs",
            "1",
            "--inject",
            "drop-send=3",
            "--timeout",
            "2",
        ],
    );
    assert_ne!(job.code, Some(0), "{}", job.explain());
    for (rank, peer) in [(0, 1), (1, 0)] {
        let expected = format!(
            "rank {rank}: timed out after 2.0 s in the taskqueue event loop (17 of 18 events): block 3: \
             GPU waiting for its go flag (receive not arrived); CPU: its send dropped by fault \
             injection, receive from rank {peer} not completed"
        );
        assert!(
            job.stderr.contains(&expected),
            "expected\n{expected}\n{}",
            job.explain()
        );
    }
    assert!(job.took.as_secs() < 20, "took {:?}", job.took);
    println!("{}", job.stderr);
}

#[test]
fn both_ipc_variants_verify_on_cuda_with_and_without_barrier() {
    if !require_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in ["ipc-base", "ipc-tq"] {
        for back_to_back in [false, true] {
            let json = dir.path().join(format!("{variant}-{back_to_back}.json"));
            let mut args = vec![
                "run",
                "--backend",
                "cuda",
                "--transport",
                "ipc",
                "--variant",
                variant,
                "--workload",
                "thesis-9",
                "--runs",
                "2",
                "--json",
                json.to_str().expect("utf-8 path"),
            ];
            if back_to_back {
                args.push("--no-barrier");
            }
            let job = mpirun(2, &args);
            assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
            let r = read_json(&json);
            assert_eq!(r["verified"], true, "{variant}");
            assert_eq!(r["transport"], "ipc");
            assert_eq!(r["barrier"], !back_to_back);
            // thesis-9: chunks of at most 120000 / 8 = 15000 elements serve blocks of 1, 15000,
            // ..., 120000 elements: 1 + 1 + 2 + ... + 8 = 37 chunks; per chunk one check per
            // thread plus its first and last element.
            assert_eq!(r["checked"], 2 * 37 * (128 + 2) * 2 * 13, "{variant}");
            assert_eq!(r["planned"], r["checked"], "{variant}");
        }
    }
}

#[test]
fn the_stencil_verifies_on_cuda_over_both_transports_and_element_types() {
    if !require_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for (transport, elem, periodic) in [
        ("mpi", "f64", "xyz"),
        ("ipc", "f32", "xz"),
        ("ipc", "f64", "none"),
    ] {
        let json = dir.path().join(format!("{transport}-{elem}.json"));
        let job = mpirun(
            2,
            &[
                "stencil",
                "--backend",
                "cuda",
                "--transport",
                transport,
                "--type",
                elem,
                "--periodic",
                periodic,
                "--grid",
                "40x24x20",
                "--halo",
                "2",
                "--fields",
                "2",
                "--steps",
                "8",
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{transport} {elem}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "{transport} {elem}: {r}");
        assert_eq!(r["backend"], "cuda");
    }
}

#[test]
fn the_stencil_replays_its_captured_graph_verified_and_refuses_host_staged_neighbours() {
    if !require_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    // 7 steps: two plain, two replays (the first moving the graph's epochs past the plain
    // ones), one plain again; verified bit for bit against one rank. Periodic in x alone, two
    // ranks have only device-direct neighbours: their plain exchanges are the one launch, its
    // table built while the graph is captured (the timed blocking exchanges come after).
    // --overlap auto overlaps where a neighbour is another rank; off: each step's exchange,
    // then the whole interior.
    for (np, transport, elem, periodic, choice, overlap) in [
        (1, "mpi", "f64", "xyz", "auto", false),
        (1, "mpi", "f64", "xyz", "on", true),
        (2, "ipc", "f32", "xyz", "auto", true),
        (2, "ipc", "f64", "xyz", "auto", true),
        (2, "ipc", "f64", "x", "auto", true),
        (2, "ipc", "f32", "x", "off", false),
        (2, "ipc", "f64", "xyz", "off", false),
    ] {
        let json = dir
            .path()
            .join(format!("graph-{np}-{elem}-{periodic}-{choice}.json"));
        let job = mpirun(
            np,
            &[
                "stencil",
                "--backend",
                "cuda",
                "--graph",
                "--transport",
                transport,
                "--type",
                elem,
                "--periodic",
                periodic,
                "--grid",
                "40x24x20",
                "--fields",
                "2",
                "--steps",
                "7",
                "--exchange-reps",
                "2",
                "--overlap",
                choice,
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(
            job.code,
            Some(0),
            "-np {np} {transport} {periodic} --overlap {choice}: {}",
            job.explain()
        );
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "-np {np} {transport} {periodic}: {r}");
        assert_eq!(r["graph"], true);
        assert_eq!(r["overlap"], overlap, "{r}");
        // The 7 steps without the exchange: three replays of their own graph, one plain.
        assert_eq!(
            r["compute_replayed_steps"], 6,
            "-np {np} {transport} {periodic}: {r}"
        );
    }
    // Over MPI between two ranks every neighbour is host-staged: refused on every rank.
    mpirun(
        2,
        &[
            "stencil",
            "--backend",
            "cuda",
            "--graph",
            "--transport",
            "mpi",
        ],
    )
    .assert_fails_with(2, "host-staged");
}

#[test]
fn the_library_variants_verify_every_element_over_ipc_on_cuda() {
    if !require_gpu() {
        return;
    }
    // Every message device-direct, every element of every block checked.
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in ["lib-base-ipc", "lib-tq-ipc"] {
        for pattern in ["pairwise", "mixed"] {
            let json = dir.path().join(format!("{variant}-{pattern}.json"));
            let job = mpirun(
                2,
                &[
                    "run",
                    "--backend",
                    "cuda",
                    "--transport",
                    "ipc",
                    "--variant",
                    variant,
                    "--workload",
                    "thesis-9",
                    "--pattern",
                    pattern,
                    "--verify",
                    "full",
                    "--runs",
                    "3",
                    "--json",
                    json.to_str().expect("utf-8 path"),
                ],
            );
            let what = format!("{variant} {pattern}");
            assert_eq!(job.code, Some(0), "{what}: {}", job.explain());
            let r = read_json(&json);
            assert_eq!(r["verified"], true, "{what}: {r}");
            assert_eq!(r["wrong"], 0, "{what}");
            assert_eq!(r["missing"], 0, "{what}");
            assert_eq!(r["planned"], r["checked"], "{what}");
        }
    }
}
