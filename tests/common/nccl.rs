//! The stand-in NCCL (`nccl/standin`: the NCCL calls haloport makes, over MPI on host memory),
//! built with `mpicc` for tests of the nccl route on the host backend.

use std::path::PathBuf;
use std::process::Command;

/// Builds the stand-in library into `dir` and returns its path.
pub fn standin(dir: &std::path::Path) -> PathBuf {
    let lib = dir.join("libnccl_standin.so");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/nccl/standin/nccl_standin.c");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let output = Command::new(&mpicc)
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-fvisibility=hidden",
            source,
            "-o",
        ])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("{mpicc} runs (ci/setup.sh installs it): {e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    lib
}
