//! Running the `haloport` binary under `mpirun` from tests.
//!
//! mpirun jobs are run one at a time (a lock), since CI machines have few cores and every
//! job oversubscribes them; `--oversubscribe` lets 4 ranks run on 2 cores.

#![allow(dead_code)] // each test binary uses part of these helpers

pub mod halos;
pub mod nccl;
pub mod nodes;
pub mod scenarios;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The 8 baseline variants (thesis table 3.1).
pub const BASELINE_VARIANTS: [&str; 8] = [
    "base-nb-wait",
    "base-nb-test",
    "base-bl-wait",
    "base-bl-test",
    "base-nb-wait-nc",
    "base-nb-test-nc",
    "base-bl-wait-nc",
    "base-bl-test-nc",
];

/// The 8 taskqueue variants (thesis table 3.2).
pub const TASKQUEUE_VARIANTS: [&str; 8] = [
    "tq-nb-tq",
    "tq-nb-pb",
    "tq-bl-tq",
    "tq-bl-pb",
    "tqm-nb-tq",
    "tqm-nb-pb",
    "tqm-bl-tq",
    "tqm-bl-pb",
];

/// What a job printed and how it ended.
pub struct Job {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Job {
    fn from(output: Output, took: Duration) -> Job {
        Job {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            took,
        }
    }

    /// Fails the test with everything the job printed.
    pub fn explain(&self) -> String {
        format!(
            "exit code {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }

    /// Asserts the job failed with `code` and said `needle` on stderr, with no panic.
    pub fn assert_fails_with(&self, code: i32, needle: &str) {
        assert_eq!(self.code, Some(code), "{}", self.explain());
        assert!(
            self.stderr.contains(needle),
            "expected '{needle}' in stderr; {}",
            self.explain()
        );
        assert!(
            !self.stderr.contains("panicked"),
            "a panic; {}",
            self.explain()
        );
        assert!(
            !self.stderr.contains("RUST_BACKTRACE"),
            "a panic; {}",
            self.explain()
        );
    }
}

/// The binary under test: `HALOPORT_BIN` when set (test binaries carried to a GPU machine, where
/// the build tree's path does not exist), else the one cargo built.
pub fn binary() -> String {
    std::env::var("HALOPORT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_haloport").to_owned())
}

/// `run` arguments for `variant` over `transport` on `pattern`: 2 runs of 4 iterations (1
/// warm-up) of thesis-4 (blocks of 1, 15000, 30000 and 45000 elements), then `extra`.
pub fn thesis4_args<'a>(
    transport: &'a str,
    variant: &'a str,
    pattern: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--transport",
        transport,
        "--variant",
        variant,
        "--workload",
        "thesis-4",
        "--pattern",
        pattern,
        "--runs",
        "2",
        "--iters",
        "4",
        "--warmup",
        "1",
    ];
    args.extend_from_slice(extra);
    args
}

/// Runs `haloport ARGS` under `mpirun -np NP`.
pub fn mpirun(np: u32, args: &[&str]) -> Job {
    mpirun_with_env(np, &[], args)
}

/// Runs `haloport ARGS` under `mpirun -np NP` with extra environment variables for every rank.
pub fn mpirun_with_env(np: u32, env: &[(&str, &str)], args: &[&str]) -> Job {
    let _one = ONE_JOB_AT_A_TIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let start = Instant::now();
    let mut command = Command::new("mpirun");
    command.args(["--oversubscribe", "-np", &np.to_string()]);
    for (name, value) in env {
        command.env(name, value).args(["-x", name]);
    }
    let output = command
        .arg(binary())
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun must be installed (see README: ci/setup.sh)");
    Job::from(output, start.elapsed())
}

/// Runs `haloport ARGS` without mpirun (a singleton MPI job).
pub fn alone(args: &[&str]) -> Job {
    let _one = ONE_JOB_AT_A_TIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let start = Instant::now();
    let output = Command::new(binary())
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("the haloport binary runs");
    Job::from(output, start.elapsed())
}

/// Reads a result JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Whether `haloport info` finds a device for `backend` ("cuda", "hip"); otherwise prints
/// `SKIPPED: ...` with the reason and returns false, or fails the test when
/// `HALOPORT_REQUIRE_GPU=1` (on GPU machines a missing device is an error, not a skip).
pub fn require_device(backend: &str) -> bool {
    let job = alone(&["info", "--json"]);
    let info: serde_json::Value = serde_json::from_str(&job.stdout).unwrap_or_default();
    let backends = info["per_rank"][0]["backends"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let why = match backends.iter().find(|b| b[0] == backend) {
        Some(entry) => entry[1]
            .get("Err")
            .map(|w| w.as_str().unwrap_or("unknown").to_owned()),
        None => Some(format!("haloport info failed: {}", job.explain())),
    };
    match why {
        None => true,
        Some(why) => {
            if std::env::var("HALOPORT_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("HALOPORT_REQUIRE_GPU=1 but no {backend} device: {why}");
            }
            println!("SKIPPED: no {backend} device: {why}");
            false
        }
    }
}
