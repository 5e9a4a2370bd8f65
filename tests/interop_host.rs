//! The library adopted by a real code, on the host backend: the `app_kernel` example (the
//! application's own kernel on its own stream, over a Cartesian communicator) verified under
//! `mpirun -np 1, 2, 4`; and the collective safety of set-up and teardown through the CLI:
//! ranks that chose different options, a set-up step that fails on one rank, and an `ipc`
//! exchange whose ranks span two nodes each end with the same error or cleanly, never a hang.

mod common;

use std::process::Command;
use std::time::Instant;

use common::{binary, mpirun, mpirun_with_env};

/// The `app_kernel` example cargo built beside the test (examples are built by `cargo test`).
fn example() -> std::path::PathBuf {
    let mut path = std::path::PathBuf::from(binary());
    path.pop();
    path.push("examples");
    path.push("app_kernel");
    path
}

fn mpirun_example(np: u32, args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .args(["120", "mpirun", "--oversubscribe", "-np", &np.to_string()])
        .arg(example())
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs")
}

#[test]
fn the_application_kernel_example_verifies_on_1_2_and_4_ranks() {
    for (np, transport) in [(1, "mpi"), (2, "mpi"), (4, "mpi"), (4, "ipc")] {
        let out = mpirun_example(np, &["--transport", transport, "--steps", "6"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("verified: bit-for-bit equal"),
            "-np {np} {transport}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("Cartesian"), "{stdout}");
    }
}

#[test]
fn ranks_that_chose_different_transports_fail_alike_without_hanging() {
    let bin = binary();
    let args =
        |transport: &'static str| stencil_args(&["--grid", "16x8x8", "--transport", transport]);
    let started = Instant::now();
    let out = Command::new("timeout")
        .args(["60", "mpirun", "--oversubscribe", "-np", "1", &bin])
        .args(args("ipc"))
        .args([":", "-np", "1", &bin])
        .args(args("mpi"))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the ranks chose different exchange options")
            && stderr.contains("--transport ipc")
            && stderr.contains("--transport mpi"),
        "{stderr}"
    );
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
}

/// `haloport stencil` on the host backend with a small grid and `extra`; the time-out is
/// generous, as a loaded 2-core CI machine runs several ranks' host kernels on two cores.
fn stencil_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "stencil",
        "--backend",
        "host",
        "--steps",
        "3",
        "--timeout",
        "10",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_set_up_step_that_fails_on_one_rank_stops_every_rank() {
    for np in [2, 4] {
        let job = mpirun(
            np,
            &stencil_args(&["--grid", "16x8x8", "--inject", "setup-fails=1"]),
        );
        assert_ne!(job.code, Some(0), "{}", job.explain());
        assert!(
            job.stderr.contains("an injected set-up failure"),
            "{}",
            job.explain()
        );
        assert!(!job.stderr.contains("panicked"), "{}", job.explain());
        assert!(job.took.as_secs() < 20, "-np {np} took {:?}", job.took);
    }
}

#[test]
fn every_rank_of_an_ipc_exchange_over_two_nodes_closes_cleanly() {
    let job = mpirun_with_env(
        3,
        &[("HALOPORT_IPC_RANKS_PER_NODE", "2")],
        &stencil_args(&[
            "--grid",
            "24x8x8",
            "--procs",
            "3x1x1",
            "--periodic",
            "x",
            "--transport",
            "ipc",
        ]),
    );
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(job.stdout.contains("verified: true"), "{}", job.explain());
    assert!(
        !job.stderr.contains("ERROR") && !job.stderr.contains("timed out"),
        "teardown was not symmetric: {}",
        job.explain()
    );
}
