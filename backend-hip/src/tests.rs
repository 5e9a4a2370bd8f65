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

mod bindings {
    use std::process::Command;

    use crate::ffi;

    include!(concat!(env!("OUT_DIR"), "/hip_header_values.rs"));

    /// Compiles `constants` against the installed header with the hipcc that built the kernels.
    fn check(constants: &[(String, i64)]) -> Result<(), String> {
        let dir = tempfile::tempdir().expect("temp dir");
        let arch = env!("HALOPORT_HIP_ARCHS")
            .split(';')
            .next()
            .expect("an arch");
        let mut cmd = Command::new(env!("HALOPORT_HIPCC"));
        cmd.arg(format!("--offload-arch={arch}"))
            .arg("-Wno-unused-command-line-argument");
        let source = haloport_toolchain::constant_check_source("hip/hip_runtime_api.h", constants);
        haloport_toolchain::syntax_check(&mut cmd, &dir.path().join("check.hip"), &source)
    }

    /// The constants ffi.rs uses hold the installed header's values, and the check that proves it
    /// fails when one of them drifts (as hip-runtime-sys 0.1.2's `hipDeviceAttributeWallClockRate
    /// = 10017` did from HIP 5.2's header, which has no such attribute).
    #[test]
    fn constants_ffi_uses_match_the_installed_header() {
        let used = ffi::constants_used();
        for (name, value) in &used {
            let header = HEADER_VALUES
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v);
            assert_eq!(header, Some(*value), "{name}: header vs bindings");
        }
        check(&used).unwrap_or_else(|e| panic!("the installed header disagrees:\n{e}"));

        let mut drifted = used.clone();
        drifted[1].1 += 1;
        let err = check(&drifted).expect_err("a drifted constant must not compile");
        assert!(err.contains(&drifted[1].0), "{err}");
        let invented = [("hipDeviceAttributeNoSuchAttribute".to_owned(), 10017)];
        assert!(check(&invented).is_err(), "a constant the header lacks");
    }

    /// What the header lacks is built without, and the cfgs say so.
    #[test]
    fn optional_items_follow_the_header() {
        let has = |name: &str| HEADER_VALUES.iter().any(|(n, _)| *n == name);
        assert_eq!(
            cfg!(haloport_hip_wall_clock_rate),
            has("hipDeviceAttributeWallClockRate")
        );
        let header = std::fs::read_to_string(env!("HALOPORT_HIP_HEADER")).expect("the header");
        assert_eq!(
            ffi::HAS_MODULE_COOPERATIVE_LAUNCH,
            header.contains("hipModuleLaunchCooperativeKernel(")
        );
        println!(
            "bindings from {}: wall-clock attribute {}, module cooperative launch {}",
            ffi::header(),
            has("hipDeviceAttributeWallClockRate"),
            ffi::HAS_MODULE_COOPERATIVE_LAUNCH
        );
    }
}
