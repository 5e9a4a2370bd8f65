//! What the stand-in tests share: building the stand-in library (`standin/nccl_standin.c`)
//! with `mpicc` (the MPI rsmpi links, so the library and the test share one MPI), and running
//! one `#[ignore]`d test of the calling binary as the ranks of an `mpirun -np 2` job.

#![allow(dead_code)] // each test binary uses part of these helpers

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Set in the ranks' environment: the test runs as a rank, not as the parent.
pub const CHILD: &str = "HALOPORT_NCCL_TEST_CHILD";

static BUILDS: AtomicUsize = AtomicUsize::new(0);

/// Builds the stand-in into a folder of its own under cargo's scratch folder for tests (test
/// processes run side by side) and returns the library's path. `defines` are extra `-D`s.
pub fn build_standin(defines: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "nccl-standin-{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let lib = dir.join("libnccl_standin.so");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/standin/nccl_standin.c");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let output = Command::new(&mpicc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-fvisibility=hidden")
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(source)
        .arg("-o")
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("{mpicc} runs (ci/setup.sh installs libopenmpi-dev): {e}"));
    assert!(
        output.status.success(),
        "{mpicc} {source} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    lib
}

/// Runs the test `name` of this binary as 2 ranks under `mpirun` (bounded by `limit_s`), with
/// `env` set on every rank, and asserts that both ranks printed "rank N: passed" and the job
/// succeeded. Returns what the job printed.
pub fn two_ranks(name: &str, env: &[(&str, &str)], limit_s: u32) -> String {
    let me = std::env::current_exe().expect("the test's own path");
    let mut command = Command::new("timeout");
    command.args([
        &limit_s.to_string(),
        "mpirun",
        "--oversubscribe",
        "-np",
        "2",
        "-x",
        CHILD,
    ]);
    for (k, v) in env {
        command.env(k, v).args(["-x", k]);
    }
    let output = command
        .arg(&me)
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun runs (see README: ci/setup.sh)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let text = format!("--- stdout\n{stdout}\n--- stderr\n{stderr}");
    let passed = (0..2)
        .filter(|r| stdout.contains(&format!("rank {r}: passed")))
        .count();
    assert!(
        output.status.success() && passed == 2,
        "{name}: {passed} of 2 ranks passed ({}); {text}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{name}: a panic; {text}");
    print!("{stdout}");
    text
}

/// In a rank: panics unless run by [`two_ranks`] (the `#[ignore]`d rank tests are not meant to
/// be run alone).
pub fn assert_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "a rank of an MPI job: run by its parent test under mpirun"
    );
}
