//! The nccl route on the host backend, through the stand-in NCCL (`nccl/standin`: the NCCL
//! calls haloport makes, over MPI on host memory), built here with `mpicc`: the stencil over
//! nccl verifies bit for bit on 2, 4 and 8 ranks and agrees with host-staged MPI; a dropped
//! message ends every rank with a time-out naming the halos the group held; without a
//! library the route is refused on every rank, saying where it looked.

mod common;

use common::nccl::standin;
use common::{mpirun_with_env, read_json};

const GRID: [&str; 6] = ["--grid", "20x12x10", "--steps", "4", "--type", "f32"];

#[test]
fn the_stencil_over_nccl_verifies_and_agrees_with_host_staged_mpi() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = standin(dir.path());
    let env = [("HALOPORT_NCCL_LIBRARY", lib.to_str().expect("utf-8 path"))];
    let mut checksums = Vec::new();
    for (np, transport, variant) in [
        (2, "nccl", "base"),
        (4, "nccl", "tq"),
        (8, "nccl", "base"),
        (4, "mpi", "base"),
    ] {
        let json = dir.path().join(format!("{np}-{transport}.json"));
        let mut args = vec!["stencil", "--transport", transport, "--variant", variant];
        args.extend(GRID);
        args.extend(["--json", json.to_str().expect("utf-8 path")]);
        let job = mpirun_with_env(np, &env, &args);
        assert_eq!(job.code, Some(0), "-np {np} {transport}: {}", job.explain());
        let result = read_json(&json);
        assert_eq!(result["verified"], true, "{result}");
        for rank in 0..np as usize {
            for link in result["links"][rank]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                let local = link["peer"].as_i64() == Some(rank as i64);
                let want = if local { "local" } else { transport };
                assert_eq!(link["link"], want, "-np {np}: rank {rank}: {link}");
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
}

#[test]
fn a_dropped_message_over_nccl_ends_every_rank_with_a_time_out_naming_the_halos() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = standin(dir.path());
    let env = [("HALOPORT_NCCL_LIBRARY", lib.to_str().expect("utf-8 path"))];
    let job = mpirun_with_env(
        2,
        &env,
        &[
            "stencil",
            "--transport",
            "nccl",
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
        ],
    );
    assert_eq!(job.code, Some(3), "{}", job.explain());
    for rank in [0, 1] {
        let line = format!("rank {rank}: timed out after 1.0 s waiting for ncclGroupEnd");
        assert!(job.stderr.contains(&line), "{line}: {}", job.explain());
    }
    assert!(job.stderr.contains("-x halo"), "{}", job.explain());
    assert!(!job.stderr.contains("panicked"), "{}", job.explain());
    assert!(job.took.as_secs() < 30, "took {:?}", job.took);
}

#[test]
fn without_a_library_the_nccl_route_is_refused_on_every_rank_saying_where_it_looked() {
    let job = mpirun_with_env(
        2,
        &[("HALOPORT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2")],
        &[
            "stencil",
            "--transport",
            "nccl",
            "--grid",
            "16x8x8",
            "--steps",
            "1",
        ],
    );
    assert_ne!(job.code, Some(0), "{}", job.explain());
    assert!(
        job.stderr
            .contains("NCCL not found: HALOPORT_NCCL_LIBRARY=/nonexistent/libnccl.so.2"),
        "{}",
        job.explain()
    );
    assert!(!job.stderr.contains("panicked"), "{}", job.explain());
}

#[test]
fn the_thesis_harness_runs_the_library_over_nccl_beside_mpi_and_ipc_verified() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = standin(dir.path());
    let env = [("HALOPORT_NCCL_LIBRARY", lib.to_str().expect("utf-8 path"))];
    let out = dir.path().join("sweep");
    let job = mpirun_with_env(
        2,
        &env,
        &[
            "sweep",
            "--variants",
            "lib-base-mpi,lib-base-nccl,lib-tq-nccl,lib-base-ipc",
            "--workloads",
            "thesis-9",
            "--runs",
            "1",
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    let sweep = read_json(&out.join("sweep.json"));
    let text = sweep.to_string();
    for variant in [
        "lib-base-mpi",
        "lib-base-nccl",
        "lib-tq-nccl",
        "lib-base-ipc",
    ] {
        assert!(text.contains(variant), "{variant} missing: {text}");
    }
    // Every row of the table verified.
    let rows: Vec<&str> = job
        .stdout
        .lines()
        .filter(|l| l.starts_with("| thesis-9"))
        .collect();
    assert_eq!(rows.len(), 5, "{}", job.stdout);
    assert!(
        rows.iter().all(|r| r.trim_end().ends_with("| true |")),
        "{}",
        job.stdout
    );
}
