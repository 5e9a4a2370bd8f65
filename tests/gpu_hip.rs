//! Every strategy on AMD GPUs through the CLI, under `mpirun -np 2`. Compiled always; without
//! the `hip` feature or an AMD GPU (everywhere this project can reach) each test prints
//! `SKIPPED: ...` and passes, unless `HALOPORT_REQUIRE_GPU=1`. Nothing here claims to have run on
//! AMD unless it printed no SKIPPED line.

mod common;

use common::{mpirun, read_json};

fn require_amd_gpu() -> bool {
    common::require_device("hip")
}

#[test]
fn every_variant_verifies_on_hip_and_non_coherent_buffers_are_non_coherent() {
    if !require_amd_gpu() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for variant in common::BASELINE_VARIANTS
        .into_iter()
        .chain(common::TASKQUEUE_VARIANTS)
    {
        let json = dir.path().join(format!("{variant}.json"));
        let job = mpirun(
            2,
            &[
                "run",
                "--backend",
                "hip",
                "--variant",
                variant,
                "--workload",
                "thesis-9",
                "--runs",
                "2",
                "--poll-backoff",
                "200",
                "--json",
                json.to_str().expect("utf-8 path"),
            ],
        );
        assert_eq!(job.code, Some(0), "{variant}: {}", job.explain());
        let r = read_json(&json);
        assert_eq!(r["verified"], true, "{variant}");
        assert_eq!(r["backend"], "hip");
        if variant.ends_with("-nc") {
            assert_eq!(
                r["buffers_served"], "non-coherent",
                "{variant}: AMD serves non-coherent memory"
            );
        }
    }
}
