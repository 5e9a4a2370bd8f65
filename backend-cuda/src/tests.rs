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

#[path = "../build/toolchain.rs"]
mod toolchain;

mod toolchain_discovery {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::toolchain::{arch_list, find, pip_nvcc_candidates, Search};

    fn touch(path: &std::path::Path) {
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(path, b"").expect("touch");
    }

    fn search(extra: Vec<PathBuf>) -> Search<'static> {
        Search {
            program: "nvcc",
            program_vars: &["NVCC"],
            root_vars: &["CUDA_HOME", "CUDA_PATH"],
            default_roots: &["/nonexistent/haloport-test-cuda"],
            extra,
        }
    }

    #[test]
    fn explicit_variables_win_over_path_and_pip() {
        let dir = tempfile::tempdir().expect("temp dir");
        let explicit = dir.path().join("explicit/nvcc");
        let home = dir.path().join("home");
        let on_path = dir.path().join("path");
        for p in [&explicit, &home.join("bin/nvcc"), &on_path.join("nvcc")] {
            touch(p);
        }
        let env: HashMap<&str, String> = [
            ("NVCC", explicit.display().to_string()),
            ("CUDA_HOME", home.display().to_string()),
            ("PATH", on_path.display().to_string()),
        ]
        .into();
        let get = |v: &str| env.get(v).cloned();
        assert_eq!(find(&search(vec![]), &get), Ok(explicit.clone()));
        let no_nvcc = |v: &str| if v == "NVCC" { None } else { get(v) };
        assert_eq!(find(&search(vec![]), &no_nvcc), Ok(home.join("bin/nvcc")));
        let path_only = |v: &str| if v == "PATH" { get(v) } else { None };
        assert_eq!(find(&search(vec![]), &path_only), Ok(on_path.join("nvcc")));
    }

    #[test]
    fn a_pip_installed_nvcc_is_found_in_a_virtualenv() {
        let dir = tempfile::tempdir().expect("temp dir");
        let nvcc = dir
            .path()
            .join("venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc");
        touch(&nvcc);
        let candidates = pip_nvcc_candidates(&[dir.path().join("venv")]);
        assert_eq!(find(&search(candidates), &|_| None), Ok(nvcc));
    }

    #[test]
    fn nothing_found_lists_every_place_tried() {
        let tried = find(
            &search(vec![PathBuf::from("/nonexistent/pip/nvcc")]),
            &|v| (v == "PATH").then(|| "/nonexistent/a:/nonexistent/b".to_owned()),
        )
        .expect_err("nothing to find");
        let all = tried.join("\n");
        for needle in [
            "$NVCC (not set)",
            "$CUDA_HOME (not set)",
            "/nonexistent/a/nvcc ($PATH)",
            "/nonexistent/haloport-test-cuda/bin/nvcc",
            "/nonexistent/pip/nvcc (pip)",
        ] {
            assert!(all.contains(needle), "missing {needle} in\n{all}");
        }
    }

    #[test]
    fn architecture_lists_split_on_common_separators() {
        assert_eq!(arch_list("80;90"), vec!["80", "90"]);
        assert_eq!(
            arch_list(" gfx906, gfx908 ;gfx90a "),
            vec!["gfx906", "gfx908", "gfx90a"]
        );
        assert!(arch_list(" ; ").is_empty());
    }
}
