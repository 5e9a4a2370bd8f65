//! The shared conformance suite on HIP: it skips, saying so, where the HIP runtime sees no AMD
//! GPU (everywhere this project can reach), and fails under `HALOPORT_REQUIRE_GPU=1`.

use super::*;
use haloport_core::Error;

/// The backend, or `None` (with the reason printed) when this machine has no AMD GPU.
fn backend() -> Option<HipBackend> {
    match HipBackend::new(0) {
        Ok(b) => Some(b),
        Err(Error::NoDevice { reason, .. }) => {
            println!("SKIPPED: no AMD GPU: {reason}");
            None
        }
        Err(e) => panic!("an AMD GPU is present but the backend failed: {e}"),
    }
}

haloport_core::backend_conformance_tests!(backend());

#[test]
fn no_amd_gpu_is_an_error_naming_hip_not_a_crash() {
    // Runs the real runtime path: hipGetDeviceCount through libamdhip64.
    match device_count() {
        Ok(n) => assert!(n >= 1),
        Err(e) => assert!(e.to_string().contains("hip: no device"), "{e}"),
    }
}
