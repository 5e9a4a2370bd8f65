//! `haloport stencil` on the host backend: the library's halo exchange end to end. The Jacobi
//! result must be bit-for-bit the one rank 0 computes alone over the whole grid, and the
//! checksum must be the same for every decomposition of one problem (np 1, 2, 4, 8, given and
//! chosen process grids, both transports). Bad declarations are refused before any exchange.

mod common;

use common::nodes::{assert_pretend_node_links, in_two_pretend_nodes, links_of};
use common::{mpirun, mpirun_with_env, read_json};

/// Runs the stencil and returns its result file, asserting it succeeded and verified.
fn verified_run(np: u32, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("stencil.json");
    let mut all = vec!["stencil"];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().expect("utf-8 path")]);
    let job = mpirun(np, &all);
    assert_eq!(job.code, Some(0), "-np {np} {args:?}: {}", job.explain());
    assert!(job.stdout.contains("verified: true"), "{}", job.explain());
    let result = read_json(&json);
    assert_eq!(result["verified"], true, "{result}");
    assert_eq!(result["schema"], haloport_cli::results::BENCH_SCHEMA);
    assert_eq!(
        result["step_us"].as_array().map(Vec::len),
        result["steps"].as_u64().map(|s| s as usize),
        "one time per step"
    );
    // The compute alone is measured, and the exchange's exposed cost and hidden share follow
    // from it and the step.
    let number = |key: &str| result[key].as_f64().unwrap_or(f64::NAN);
    let (step, compute) = (number("step_median_us"), number("compute_median_us"));
    assert!(compute > 0.0, "{result}");
    assert!(
        (number("exposed_exchange_us") - (step - compute)).abs() < 1e-6,
        "{result}"
    );
    assert!((0.0..=1.0).contains(&number("hidden_fraction")), "{result}");
    result
}

/// The problem every decomposition solves: non-cubic, halo 2, f32, periodic in x and z only,
/// two fields.
const PROBLEM: [&str; 12] = [
    "--grid",
    "20x12x10",
    "--halo",
    "2",
    "--periodic",
    "xz",
    "--type",
    "f32",
    "--fields",
    "2",
    "--steps",
    "6",
];

#[test]
fn every_decomposition_verifies_and_agrees_on_the_checksum() {
    let mut checksums = Vec::new();
    for (np, procs) in [
        (1, None),
        (2, None),
        (2, Some("1x2x1")),
        (4, Some("2x1x2")),
        (4, None),
        (8, None),
        (8, Some("4x2x1")),
    ] {
        let mut args = PROBLEM.to_vec();
        if let Some(p) = procs {
            args.extend(["--procs", p]);
        }
        let result = verified_run(np, &args);
        let ranks = result["links"].as_array().map(Vec::len);
        assert_eq!(ranks, Some(np as usize), "one link list per rank");
        // --overlap auto: one rank's neighbours are all itself, so its steps do not overlap.
        assert_eq!(result["overlap"], np > 1, "-np {np}: {result}");
        checksums.push((
            np,
            procs,
            result["checksum"].as_str().unwrap_or("").to_owned(),
        ));
    }
    let first = &checksums[0].2;
    assert_eq!(first.len(), 16, "{checksums:?}");
    for (np, procs, sum) in &checksums {
        assert_eq!(sum, first, "-np {np} procs {procs:?}: {checksums:?}");
    }
}

#[test]
fn other_problems_verify_on_both_transports_and_element_types() {
    // all_direct: every neighbour device-direct (none local, none host-staged). one_launch:
    // the pack and the unpack are one launch on every rank. Over ipc every rank's neighbours
    // are device-direct or itself (copied straight into its halos), unless x faces are local
    // (their copies pair); over mpi the CPU comes between.
    for (np, transport, all_direct, one_launch, extra) in [
        (
            2,
            "ipc",
            false,
            true,
            vec!["--grid", "16x16x8", "--periodic", "xyz"],
        ),
        (
            2,
            "ipc",
            true,
            true,
            vec!["--grid", "16x12x8", "--periodic", "x"],
        ),
        (
            2,
            "ipc",
            false,
            false,
            vec!["--grid", "16x16x8", "--periodic", "xyz", "--procs", "1x1x2"],
        ),
        (
            4,
            "ipc",
            false,
            true,
            vec!["--grid", "17x9x8", "--periodic", "y", "--type", "f64"],
        ),
        (
            4,
            "mpi",
            false,
            false,
            vec!["--grid", "17x9x8", "--periodic", "none", "--halo", "1"],
        ),
        (
            3,
            "mpi",
            false,
            false,
            vec!["--grid", "10x10x9", "--procs", "1x1x3", "--fields", "3"],
        ),
        // Fields from the application's own allocations, through Field::adopt.
        (
            2,
            "ipc",
            false,
            true,
            vec!["--grid", "12x10x8", "--adopt", "--variant", "tq"],
        ),
        // Fields from the library's allocations, and placed with their interior's first cell
        // on a 32-byte boundary (rows of 16 f32 elements: each field 28 bytes into its
        // allocation); every other case places its inner box's first cell so.
        (
            2,
            "ipc",
            false,
            true,
            vec![
                "--grid",
                "28x10x8",
                "--type",
                "f32",
                "--placement",
                "library",
            ],
        ),
        (
            2,
            "ipc",
            false,
            true,
            vec![
                "--grid",
                "28x10x8",
                "--type",
                "f32",
                "--placement",
                "interior",
            ],
        ),
        // Without overlap: each step's exchange, then the whole interior.
        (
            2,
            "ipc",
            true,
            true,
            vec![
                "--grid",
                "24x10x8",
                "--periodic",
                "x",
                "--type",
                "f32",
                "--overlap",
                "off",
            ],
        ),
        (
            3,
            "mpi",
            false,
            false,
            vec!["--grid", "10x10x9", "--procs", "1x1x3", "--overlap", "off"],
        ),
    ] {
        let mut args = vec!["--transport", transport, "--steps", "4"];
        args.extend(extra);
        let result = verified_run(np, &args);
        let placement = match args.iter().position(|&a| a == "--placement") {
            Some(at) => args[at + 1],
            None if args.contains(&"--adopt") => "adopted",
            None => "tiles",
        };
        assert_eq!(result["placement"], placement, "{result}");
        // Every rank here has a neighbour other than itself: auto overlaps.
        assert_eq!(result["overlap"], !args.contains(&"off"), "{result}");
        let links: Vec<String> = result["links"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|rank| rank.as_array().cloned().unwrap_or_default())
            .filter_map(|l| l["link"].as_str().map(str::to_owned))
            .collect();
        assert!(!links.is_empty(), "{result}");
        let ran_in_one_launch: Vec<bool> = result["one_launch"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_bool)
            .collect();
        assert_eq!(
            ran_in_one_launch,
            vec![one_launch; np as usize],
            "{args:?}: {result}"
        );
        if transport == "mpi" {
            assert!(
                links.iter().all(|l| l == "mpi" || l == "local"),
                "{links:?}"
            );
        } else if all_direct {
            assert!(links.iter().all(|l| l == "ipc"), "{links:?}");
        } else {
            assert!(links.iter().any(|l| l == "ipc"), "{links:?}");
        }
    }
}

#[test]
fn gpu_aware_mpi_moves_messages_from_the_exchanges_device_memory_and_agrees_bit_for_bit() {
    // On the host backend `on` is plain MPI on the exchange's own buffers; `auto` keeps
    // host-staged there. Both strategies, every decomposition's checksum the same.
    let mut checksums = Vec::new();
    for (np, setting, variant) in [
        (1, "on", "base"),
        (2, "on", "base"),
        (4, "on", "tq"),
        (4, "auto", "base"),
        (4, "off", "tq"),
    ] {
        let mut args = PROBLEM.to_vec();
        args.extend(["--gpu-aware-mpi", setting, "--variant", variant]);
        let result = verified_run(np, &args);
        let want = if setting == "on" { "gpu-mpi" } else { "mpi" };
        for rank in 0..np as usize {
            for (peer, link) in links_of(&result, rank) {
                let expected = if peer == rank as i64 { "local" } else { want };
                assert_eq!(link, expected, "-np {np} {setting}: rank {rank} to {peer}");
            }
        }
        checksums.push(result["checksum"].as_str().unwrap_or("").to_owned());
    }
    assert!(
        checksums
            .iter()
            .all(|c| c == &checksums[0] && c.len() == 16),
        "{checksums:?}"
    );
    // Beside device-direct peers on its node, GPU-aware MPI serves those on other nodes.
    let result = in_two_pretend_nodes(&["--transport", "ipc", "--gpu-aware-mpi", "on"]);
    assert_pretend_node_links(&result, "ipc", "gpu-mpi");
}

#[test]
fn bad_declarations_are_refused_before_any_exchange() {
    let cases: [(u32, Vec<&str>, &str); 5] = [
        (
            4,
            vec!["--procs", "2x1x1"],
            "process grid 2x1x1 has 2 ranks; the job has 4",
        ),
        (
            4,
            vec!["--grid", "8x3x8", "--procs", "1x2x2", "--halo", "2"],
            "local extent 1 in y is smaller than the halo width 2",
        ),
        (
            2,
            vec!["--variant", "pipelined"],
            "unknown halo exchange strategy 'pipelined'",
        ),
        (1, vec!["--grid", "8x8"], "is not a grid"),
        (1, vec!["--periodic", "xw"], "names no periodic dimensions"),
    ];
    for (np, extra, needle) in cases {
        let mut args = vec!["stencil"];
        args.extend(extra);
        mpirun(np, &args).assert_fails_with(2, needle);
    }
    let job = mpirun_with_env(
        2,
        &[("HALOPORT_TEST_EXTRA_FIELD_ON_RANK", "1")],
        &["stencil", "--grid", "8x8x8"],
    );
    job.assert_fails_with(2, "the ranks declared different domains");
    assert!(job.stderr.contains("rank 1 has"), "{}", job.explain());
}

#[test]
fn the_taskqueue_strategy_verifies_and_agrees_with_the_baseline() {
    let checksum = |np: u32, extra: &[&str]| -> String {
        let mut args = PROBLEM.to_vec();
        args.extend_from_slice(extra);
        let result = verified_run(np, &args);
        result["checksum"].as_str().unwrap_or("").to_owned()
    };
    let reference = checksum(1, &[]);
    for (np, extra) in [
        (2, vec!["--variant", "tq"]),
        (4, vec!["--variant", "tq", "--procs", "2x1x2"]),
        (8, vec!["--variant", "tq", "--transport", "ipc"]),
    ] {
        assert_eq!(checksum(np, &extra), reference, "-np {np} {extra:?}");
    }
    // Host-staged and device-direct neighbours in one taskqueue exchange.
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("mixed.json");
    let mut args = vec!["stencil", "--variant", "tq", "--transport", "ipc"];
    args.extend_from_slice(&PROBLEM);
    args.extend([
        "--procs",
        "4x1x1",
        "--json",
        json.to_str().expect("utf-8 path"),
    ]);
    let job = mpirun_with_env(4, &[("HALOPORT_IPC_RANKS_PER_NODE", "2")], &args);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let result = read_json(&json);
    assert_eq!(result["verified"], true);
    assert_eq!(result["variant"], "tq");
    assert_eq!(result["checksum"].as_str(), Some(reference.as_str()));
}

#[test]
fn a_dropped_message_ends_every_rank_with_a_time_out_naming_the_halo() {
    for extra in [
        &["--variant", "base"][..],
        &["--variant", "tq"][..],
        &["--transport", "ipc"][..],
        // Every neighbour device-direct: the unpack's wait on the device gives up.
        &["--transport", "ipc", "--periodic", "x"][..],
    ] {
        let mut args = vec![
            "stencil",
            "--grid",
            "16x8x8",
            "--procs",
            "2x1x1",
            "--steps",
            "2",
            "--timeout",
            "1",
            "--inject",
            "drop-send=+x",
        ];
        args.extend_from_slice(extra);
        let job = mpirun(2, &args);
        // One rank's failure aborts the job (exit code 3); both name the halo they never got.
        assert_eq!(job.code, Some(3), "{extra:?}: {}", job.explain());
        assert!(
            job.stderr.contains("timed out after 1.0 s"),
            "{extra:?}: {}",
            job.explain()
        );
        assert!(
            job.stderr.contains("-x halo"),
            "{extra:?}: {}",
            job.explain()
        );
        assert!(!job.stderr.contains("panicked"), "{}", job.explain());
        assert!(job.took.as_secs() < 30, "{extra:?} took {:?}", job.took);
    }
    mpirun(1, &["stencil", "--inject", "drop-send=+w"])
        .assert_fails_with(2, "unknown halo fault 'drop-send=+w'");
}

#[test]
fn a_rank_stalled_after_its_work_ends_the_job_with_a_time_out_not_a_hang_in_finalize() {
    // Rank 1 stalls (an hour) after the run, before the barrier ahead of MPI_Finalize: rank 0
    // gives up after HALOPORT_FINALIZE_TIMEOUT_S and aborts the job, which ends rank 1 too.
    let job = mpirun_with_env(
        2,
        &[
            ("HALOPORT_TEST_STALL_BEFORE_FINALIZE_ON_RANK", "1"),
            ("HALOPORT_FINALIZE_TIMEOUT_S", "2"),
        ],
        &["stencil", "--grid", "16x8x8", "--steps", "2"],
    );
    assert_eq!(job.code, Some(3), "{}", job.explain());
    assert!(job.stdout.contains("verified: true"), "{}", job.explain());
    assert!(
        job.stderr.contains(
            "rank 0: timed out after 2.0 s waiting for every rank to finish before MPI_Finalize"
        ),
        "{}",
        job.explain()
    );
    assert!(job.took.as_secs() < 60, "took {:?}", job.took);
}

#[test]
fn adopted_memory_is_checked_against_the_plan() {
    use haloport::core::domain::{DomainSpec, ElemType, HaloPlan};
    use haloport::core::halo::Field;
    use haloport::host::HostBackend;
    let spec = DomainSpec {
        grid: [8, 6, 4],
        procs: Some([1, 1, 1]),
        periodic: [true; 3],
        halo: [1; 3],
        elem: ElemType::F64,
        fields: 1,
        layout: Default::default(),
    };
    let plan = HaloPlan::compile(&spec, 1, 0).expect("plan");
    let needed = 10 * 8 * 6 * 8;
    let refused = |addr: u64, bytes: usize| -> String {
        // SAFETY: every call below is refused before the memory could be used.
        match unsafe { Field::<HostBackend>::adopt(addr, bytes, &plan) } {
            Ok(_) => String::from("accepted"),
            Err(e) => e.to_string(),
        }
    };
    assert!(refused(0, needed).contains("must be non-null and aligned to 8 bytes"));
    assert!(refused(0x1004, needed).contains("aligned to 8 bytes"));
    let short = refused(0x1000, needed - 8);
    assert!(
        short.contains(&format!(
            "the plan's local array (with halos) needs {needed} bytes"
        )),
        "{short}"
    );
}

#[test]
fn padded_allocations_verify_on_1_2_4_and_8_ranks_with_the_same_checksum() {
    // Padding after the high halo in every dimension (as a pitched or aligned allocation has):
    // the same problem, the same checksum, whatever the padding and the decomposition.
    let plain = verified_run(1, &PROBLEM);
    for (np, transport) in [(1, "mpi"), (2, "ipc"), (4, "mpi"), (8, "ipc")] {
        let mut args = PROBLEM.to_vec();
        args.extend(["--pad", "3,1,2", "--transport", transport]);
        let padded = verified_run(np, &args);
        assert_eq!(
            padded["checksum"], plain["checksum"],
            "-np {np} {transport}"
        );
    }
}

#[test]
fn f32_rows_of_a_multiple_of_4_elements_take_the_lanes_and_others_are_told_how() {
    // Rows of 66 f32 elements take the lanes' off form in planes of 34 rows; in planes of 33
    // rows they march in the march kernel's tiles. With overlap the report says which padding
    // gives the lanes of 4 points; without (one rank), which gives rows of whole sectors, where
    // --placement auto places the interior on one. The result is the same every way.
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("stencil.json");
    let run = |grid: &str, extra: &[&str]| {
        let mut all = vec!["stencil", "--grid", grid, "--type", "f32", "--steps", "2"];
        all.extend_from_slice(extra);
        all.extend(["--json", json.to_str().expect("utf-8 path")]);
        let job = mpirun(1, &all);
        assert_eq!(job.code, Some(0), "{grid} {extra:?}: {}", job.explain());
        (job.stdout, read_json(&json))
    };
    let (stdout, off) = run("64x32x32", &["--overlap", "on"]);
    assert_eq!(off["inner_kernel"], "hp_stencil27_march32", "{off}");
    assert!(off.get("lanes_padding").is_none(), "{off}");
    assert!(!stdout.contains("hint:"), "{stdout}");
    let (stdout, alone) = run("64x32x32", &[]);
    assert_eq!(alone["lanes_padding"], 6, "{alone}");
    assert!(
        stdout.contains("hint: rows of 66 f32 elements: --pad 6,0,0 makes them a multiple of 8"),
        "{stdout}"
    );
    assert_eq!(alone["checksum"], off["checksum"]);
    let (_, aligned) = run("64x32x32", &["--pad", "2,0,0"]);
    assert_eq!(aligned["inner_kernel"], "hp_stencil27_march32", "{aligned}");
    assert_eq!(aligned["checksum"], off["checksum"]);
    // --placement auto: one rank's steps do not overlap, so fields whose rows (68 elements,
    // 272 bytes) can be placed are placed for the lanes over the interior; rows of 66 (264
    // bytes, at two phases) cannot be, and with overlap the step's tiles want their own.
    assert_eq!(alone["overlap"], false, "{alone}");
    assert_eq!(alone["placement"], "tiles", "{alone}");
    assert_eq!(aligned["lanes_padding"], 4, "{aligned}");
    assert_eq!(aligned["placement"], "interior", "{aligned}");
    let (_, overlapped) = run("64x32x32", &["--pad", "2,0,0", "--overlap", "on"]);
    assert_eq!(overlapped["placement"], "tiles", "{overlapped}");
    assert_eq!(overlapped["checksum"], off["checksum"]);
    // Each field is placed for its own update: the f64 field marches in tiles (--types takes
    // the place of --type).
    let (_, mixed) = run("64x32x32", &["--types", "f32,f64", "--pad", "2,0,0"]);
    assert_eq!(mixed["placement"], "interior,tiles", "{mixed}");
    let (stdout, plain) = run("64x31x32", &["--overlap", "on"]);
    assert_eq!(plain["inner_kernel"], "hp_stencil27_marching", "{plain}");
    assert_eq!(plain["lanes_padding"], 2, "{plain}");
    assert!(
        stdout.contains("hint: rows of 66 f32 elements: --pad 2,0,0 makes them a multiple of 4"),
        "{stdout}"
    );
    let (stdout, padded) = run("64x31x32", &["--pad", "2,0,0", "--overlap", "on"]);
    assert_eq!(padded["inner_kernel"], "hp_stencil27_march32", "{padded}");
    assert!(padded.get("lanes_padding").is_none(), "{padded}");
    assert!(!stdout.contains("hint:"), "{stdout}");
    let (stdout, sectors) = run("64x31x32", &["--pad", "6,0,0"]);
    assert_eq!(sectors["placement"], "interior", "{sectors}");
    assert!(sectors.get("lanes_padding").is_none(), "{sectors}");
    assert!(!stdout.contains("hint:"), "{stdout}");
    for result in [
        &off,
        &alone,
        &aligned,
        &overlapped,
        &mixed,
        &plain,
        &padded,
        &sectors,
    ] {
        assert_eq!(result["verified"], true, "{result}");
    }
    assert_eq!(padded["checksum"], plain["checksum"]);
    assert_eq!(sectors["checksum"], plain["checksum"]);
}

#[test]
fn the_7_point_stencil_moves_6_messages_and_verifies_on_1_2_4_and_8_ranks() {
    // PROBLEM, periodic everywhere, so that every rank has all its neighbours.
    let problem = [
        "--grid",
        "20x12x10",
        "--halo",
        "2",
        "--periodic",
        "xyz",
        "--type",
        "f32",
        "--fields",
        "2",
        "--steps",
        "6",
    ];
    let mut checksum = None;
    for (np, transport) in [(1, "mpi"), (2, "ipc"), (4, "mpi"), (8, "ipc")] {
        let mut args = problem.to_vec();
        args.extend(["--stencil", "7", "--transport", transport]);
        let result = verified_run(np, &args);
        assert_eq!(result["stencil"], 7);
        // Faces only: 6 messages, where the 27-point stencil needs 26.
        assert_eq!(result["messages"], 6, "-np {np}");
        let sum = result["checksum"].clone();
        assert_eq!(*checksum.get_or_insert(sum.clone()), sum, "-np {np}");
    }
    let full = verified_run(2, &problem);
    assert_eq!(full["messages"], 26);
    assert_ne!(
        Some(full["checksum"].clone()),
        checksum,
        "7 and 27 points differ"
    );
}

#[test]
fn halo_widths_that_differ_by_side_verify_on_1_2_4_and_8_ranks() {
    // An upwind-like declaration: no halo on the high x side (a one-sided mean there), widths
    // of 2 in z, none on the low y side; the 27-point and the 7-point stencil.
    for stencil in ["27", "7"] {
        let mut checksum = None;
        for (np, transport) in [(1, "mpi"), (2, "ipc"), (4, "mpi"), (8, "ipc")] {
            let args = [
                "--grid",
                "20x12x10",
                "--periodic",
                "xz",
                "--type",
                "f32",
                "--steps",
                "3",
                "--halo-lo",
                "1,0,2",
                "--halo-hi",
                "0,1,2",
                "--stencil",
                stencil,
                "--transport",
                transport,
            ];
            let result = verified_run(np, &args);
            assert_eq!(result["halo_lo"], serde_json::json!([1, 0, 2]));
            let sum = result["checksum"].clone();
            assert_eq!(
                *checksum.get_or_insert(sum.clone()),
                sum,
                "-np {np} {stencil}"
            );
        }
    }
}

#[test]
fn stencils_and_halos_the_domain_cannot_serve_are_refused_before_any_exchange() {
    mpirun(2, &["stencil", "--stencil", "9"]).assert_fails_with(2, "'9' is not a stencil: 7 or 27");
    mpirun(2, &["stencil", "--halo-lo", "1,1"]).assert_fails_with(2, "give three numbers");
    mpirun(
        4,
        &[
            "stencil",
            "--grid",
            "8x8x8",
            "--procs",
            "4x1x1",
            "--halo-hi",
            "3,1,1",
        ],
    )
    .assert_fails_with(2, "smaller than the halo width 3");
    // Graphs need a GPU backend: refused before any exchange, on every rank.
    mpirun(2, &["stencil", "--graph"]).assert_fails_with(2, "--graph needs a GPU backend");
}

#[test]
fn an_uneven_decomposition_of_the_application_verifies_on_1_2_4_and_8_ranks() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Where the parts start per dimension: deliberately uneven, one file per job size (TOML,
    // and JSON for 8 ranks).
    let files = [
        (1, "one.toml", "x = [0]\ny = [0]\nz = [0]\n"),
        (2, "two.toml", "x = [0, 3]\ny = [0]\nz = [0]\n"),
        (4, "four.toml", "x = [0, 13]\ny = [0, 2]\nz = [0]\n"),
        (
            8,
            "eight.json",
            r#"{"x": [0, 5], "y": [0, 9], "z": [0, 1]}"#,
        ),
    ];
    let even = verified_run(2, &["--grid", "20x12x10", "--steps", "3"]);
    for (np, name, text) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write the decomposition");
        let path = path.to_str().expect("utf-8 path");
        let args = [
            "--grid",
            "20x12x10",
            "--steps",
            "3",
            "--decomposition",
            path,
            "--transport",
            if np % 4 == 0 { "ipc" } else { "mpi" },
        ];
        let result = verified_run(np, &args);
        // The same problem whatever the partition: the same bits.
        assert_eq!(result["checksum"], even["checksum"], "-np {np} {name}");
    }
    // Parts that overlap, leave a gap, or do not fit the job are refused before any exchange.
    for (np, text, expected) in [
        (
            2,
            "x = [0, 3, 3]\ny = [0]\nz = [0]\n",
            "overlap or leave an empty part",
        ),
        (
            1,
            "x = [2]\ny = [0]\nz = [0]\n",
            "leave a gap: the first must be 0",
        ),
        (
            2,
            "x = [0, 25]\ny = [0]\nz = [0]\n",
            "the last must lie inside the grid",
        ),
        (
            4,
            "x = [0, 3]\ny = [0]\nz = [0]\n",
            "has 2 ranks; the job has 4",
        ),
        (
            2,
            "x = [0, 19]\ny = [0]\nz = [0]\n",
            "smaller than the halo width 2",
        ),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).expect("write the decomposition");
        mpirun(
            np,
            &[
                "stencil",
                "--grid",
                "20x12x10",
                "--halo",
                "2",
                "--decomposition",
                path.to_str().expect("utf-8 path"),
            ],
        )
        .assert_fails_with(2, expected);
    }
}

#[test]
fn fields_of_different_types_and_components_verify_on_1_2_4_and_8_ranks() {
    // An f32 and an f64 field of 3 interleaved components each (a velocity), exchanged in one
    // message per neighbour; and a single 3-component field.
    for extra in [
        &["--types", "f32,f64", "--components", "3"][..],
        &["--components", "3", "--stencil", "7"][..],
    ] {
        let mut checksum = None;
        for (np, transport) in [(1, "mpi"), (2, "ipc"), (4, "mpi"), (8, "ipc")] {
            let mut args = vec![
                "--grid",
                "20x12x10",
                "--steps",
                "3",
                "--transport",
                transport,
            ];
            args.extend_from_slice(extra);
            let result = verified_run(np, &args);
            let sum = result["checksum"].clone();
            assert_eq!(
                *checksum.get_or_insert(sum.clone()),
                sum,
                "-np {np} {extra:?}"
            );
        }
    }
    mpirun(1, &["stencil", "--types", "f32,f16"])
        .assert_fails_with(2, "unknown element type 'f16'");
}

#[test]
fn the_scaling_mode_runs_every_rank_count_verified_with_a_table_json_and_plot() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (mode, grids) in [
        ("strong", [[24, 20, 16], [24, 20, 16], [24, 20, 16]]),
        ("weak", [[12, 10, 8], [24, 10, 8], [24, 20, 8]]),
    ] {
        let json = dir.path().join(format!("{mode}.json"));
        let svg = dir.path().join(format!("{mode}.svg"));
        let grid = if mode == "strong" {
            "24x20x16"
        } else {
            "12x10x8"
        };
        let job = mpirun(
            4,
            &[
                "stencil",
                "--grid",
                grid,
                "--steps",
                "2",
                "--exchange-reps",
                "2",
                "--scaling",
                mode,
                "--json",
                json.to_str().expect("utf-8 path"),
                "--plot",
                svg.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{mode}: {}", job.explain());
        assert!(
            job.stdout
                .contains(&format!("{mode} scaling of the stencil")),
            "{}",
            job.explain()
        );
        let result = read_json(&json);
        let rows = result["rows"].as_array().expect("rows");
        let ranks: Vec<u64> = rows.iter().filter_map(|r| r["ranks"].as_u64()).collect();
        assert_eq!(ranks, [1, 2, 4], "{result}");
        for (row, grid) in rows.iter().zip(grids) {
            assert_eq!(row["verified"], true, "{row}");
            assert_eq!(row["grid"], serde_json::json!(grid), "{mode}: {row}");
            assert!(
                row["compute_median_us"].as_f64().unwrap_or(0.0) > 0.0,
                "{row}"
            );
            // The 27-point stencil, periodic everywhere: every rank sends to all 26 neighbours.
            assert_eq!(row["messages"], 26, "{row}");
            assert!(row["setup_us"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
        }
        assert_eq!(rows[0]["efficiency"].as_f64(), Some(1.0), "{result}");
        let plot = std::fs::read_to_string(&svg).expect("the plot");
        assert!(plot.starts_with("<svg") && plot.contains("parallel efficiency"));
    }
    // A count that fails (rank 1's set-up, at 2 ranks) ends the job on every rank, with the
    // count named; no rank is left waiting for the next count.
    let job = mpirun(
        4,
        &[
            "stencil",
            "--scaling",
            "strong",
            "--inject",
            "setup-fails=1",
        ],
    );
    assert_ne!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stderr.contains("the stencil on 2 ranks"),
        "{}",
        job.explain()
    );
    // Each count chooses its own process grid.
    let job = mpirun(2, &["stencil", "--procs", "2x1x1", "--scaling", "strong"]);
    assert_eq!(job.code, Some(2), "{}", job.explain());
    assert!(
        job.stderr.contains("give neither --procs"),
        "{}",
        job.explain()
    );
}

#[test]
fn the_fused_step_agrees_bit_for_bit_with_the_ordinary_exchange_on_1_2_4_and_8_ranks() {
    // The boundary's update stores the neighbours' halos itself: the same bits as the ordinary
    // exchange, for halos as wide as the stencil's reach and wider, uneven widths, both
    // stencils and element types.
    let uneven = ["--halo-lo", "1,0,2", "--halo-hi", "0,1,2", "--stencil", "7"];
    for extra in [&[][..], &uneven[..]] {
        // PROBLEM less its steps.
        let mut args: Vec<&str> = PROBLEM[..10].to_vec();
        args.extend_from_slice(extra);
        args.extend(["--steps", "5", "--transport", "ipc"]);
        let ordinary = verified_run(2, &args);
        assert_eq!(ordinary["fused"], false);
        args.push("--fused");
        for np in [1, 2, 4, 8] {
            let fused = verified_run(np, &args);
            assert_eq!(fused["fused"], true, "{fused}");
            // f32 and the 7-point stencil: the inner box and the boundary's slabs.
            assert_eq!(fused["fused_update"], "slabs", "{fused}");
            assert_eq!(fused["checksum"], ordinary["checksum"], "-np {np} {args:?}");
        }
    }
    let f64_args = ["--grid", "16x12x8", "--type", "f64", "--steps", "4"];
    let ordinary = verified_run(4, &f64_args);
    let mut fused_args = f64_args.to_vec();
    fused_args.extend(["--transport", "ipc", "--fused"]);
    assert_eq!(
        verified_run(4, &fused_args)["checksum"],
        ordinary["checksum"]
    );
}

#[test]
fn the_fused_step_over_the_whole_interior_agrees_with_the_ordinary_exchange() {
    // f64 parts of at least 32 x 4 cells march in tiles: a fused step is one launch over the
    // interior, its boundary tiles storing into the neighbours (edges and corners across the
    // periodic wrap too).
    let args = [
        "--grid",
        "64x8x6",
        "--type",
        "f64",
        "--periodic",
        "xyz",
        "--steps",
        "4",
    ];
    let ordinary = verified_run(2, &args);
    assert!(ordinary.get("fused_update").is_none(), "{ordinary}");
    for (np, procs) in [(1, "1x1x1"), (2, "2x1x1"), (4, "2x2x1")] {
        let mut fused_args = args.to_vec();
        fused_args.extend(["--transport", "ipc", "--fused", "--procs", procs]);
        let fused = verified_run(np, &fused_args);
        assert_eq!(fused["fused_update"], "interior", "-np {np}: {fused}");
        assert_eq!(fused["checksum"], ordinary["checksum"], "-np {np}");
    }
}

#[test]
fn the_fused_step_serves_neighbours_it_does_not_map_by_an_ordinary_exchange() {
    // Between two pretend nodes the messages go by MPI, within each by ipc: fused mode stores
    // into the ipc neighbours and exchanges with the others inside fused_finish.
    let ordinary = in_two_pretend_nodes(&["--transport", "mpi"]);
    let mixed = in_two_pretend_nodes(&["--transport", "auto", "--fused"]);
    assert_pretend_node_links(&mixed, "ipc", "mpi");
    assert_eq!(mixed["fused"], true);
    assert_eq!(mixed["checksum"], ordinary["checksum"], "{mixed}");
    let unmapped = in_two_pretend_nodes(&["--transport", "mpi", "--fused"]);
    assert_pretend_node_links(&unmapped, "mpi", "mpi");
    assert_eq!(unmapped["checksum"], ordinary["checksum"], "{unmapped}");
}

#[test]
fn the_fused_step_refuses_what_it_cannot_run_naming_why() {
    mpirun(
        2,
        &[
            "stencil",
            "--fused",
            "--transport",
            "ipc",
            "--placement",
            "tiles",
        ],
    )
    .assert_fails_with(2, "they must be the library's allocations");
    mpirun(
        2,
        &[
            "stencil",
            "--fused",
            "--transport",
            "ipc",
            "--overlap",
            "off",
        ],
    )
    .assert_fails_with(2, "overlap 'off' does not apply");
    mpirun(2, &["stencil", "--fused", "--adopt"]).assert_fails_with(2, "cannot be used with");
}
