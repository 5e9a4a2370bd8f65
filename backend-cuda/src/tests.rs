//! The shared conformance suite on CUDA (skips, saying so, without a CUDA device), the
//! launch-mode decisions (pure, so they run without a GPU), and the build script's toolchain
//! discovery.

use super::*;

/// The backend, or `None` (with the reason printed) when this machine has no CUDA device.
fn backend() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(Error::NoDevice { reason, .. }) => {
            println!("SKIPPED: no CUDA device: {reason}");
            None
        }
        Err(e) => panic!("a CUDA device is present but the backend failed: {e}"),
    }
}

haloport_core::backend_conformance_tests!(backend());

#[test]
fn no_device_is_an_error_not_a_panic() {
    // On a machine without libcuda this is the NoDevice path; on one whose driver is older than
    // this build needs, the Unsupported one; with a GPU it counts devices. Never a panic.
    match device_count() {
        Ok(n) => assert!(n >= 1),
        Err(e @ Error::NoDevice { .. }) => assert!(e.to_string().contains("cuda: no device")),
        Err(e @ Error::Unsupported { .. }) => assert!(e.to_string().contains("is older than")),
        Err(e) => panic!("unexpected error: {e}"),
    }
    // Twice: the probe is cached and must give the same answer.
    assert_eq!(device_count().ok(), device_count().ok());
}

fn h100() -> DeviceInfo {
    DeviceInfo {
        vendor: "NVIDIA".into(),
        name: "NVIDIA H100 80GB HBM3".into(),
        ordinal: 1,
        device_count: 2,
        multiprocessors: 132,
        warp_width: 32,
        max_threads_per_block: 1024,
        timer_hz: 1_000_000_000,
        coherence_kinds: vec![Coherence::Coherent],
        driver: String::new(),
    }
}

#[test]
fn only_coresidency_kernels_launch_cooperatively() {
    for kernel in Kernel::ALL {
        let kind = launch_kind(kernel, true, &h100()).expect("cooperative device");
        let want = if kernel.needs_coresidency() {
            ffi::LaunchKind::Cooperative
        } else {
            ffi::LaunchKind::Plain
        };
        assert_eq!(kind, want, "{kernel:?}");
    }
}

#[test]
fn a_device_without_cooperative_launch_refuses_the_taskqueue_naming_itself() {
    let e = launch_kind(Kernel::Taskqueue, false, &h100()).expect_err("no cooperative launch");
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("taskqueue kernel"), "{msg}");
    assert!(msg.contains("NVIDIA H100 80GB HBM3 (device 1)"), "{msg}");
    assert_eq!(
        launch_kind(Kernel::Pack, false, &h100()).ok(),
        Some(ffi::LaunchKind::Plain)
    );
}

#[test]
fn a_grid_too_large_to_be_coresident_is_unsupported_not_a_bare_code() {
    let dims = LaunchDims {
        blocks: 4096,
        threads: 1024,
    };
    let e = not_coresident(Kernel::Taskqueue, dims, &h100());
    assert_eq!(
        e.to_string(),
        "cuda: unsupported: the taskqueue kernel needs all 4096 blocks of 1024 threads resident \
         at once, but NVIDIA H100 80GB HBM3 cannot hold them (cuLaunchCooperativeKernel: \
         CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)"
    );
}
