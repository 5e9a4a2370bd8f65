//! The shared conformance suite on CUDA (skips, saying so, without a CUDA device), the
//! launch-mode decisions and IPC handle and device-id checks (pure, so they run without a GPU),
//! and the IPC calls one process can make (skipping without a device).

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

fn handle(backend: &str, bytes: usize) -> IpcHandle {
    IpcHandle {
        backend: backend.into(),
        bytes: vec![7; bytes],
        len: 4096,
    }
}

#[test]
fn ipc_handles_of_another_backend_or_length_are_refused_naming_why() {
    let e = memory::ipc_handle_bytes(&handle("hip", 64)).expect_err("a hip handle");
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert!(e.to_string().contains("made by the \"hip\" backend"), "{e}");
    for len in [0, 63, 65, 128] {
        let e = memory::ipc_handle_bytes(&handle("cuda", len)).expect_err("wrong length");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        assert!(
            e.to_string()
                .contains(&format!("(CUipcMemHandle) has 64 bytes, this one {len}")),
            "{e}"
        );
    }
    assert_eq!(
        memory::ipc_handle_bytes(&handle("cuda", 64)).ok(),
        Some([7; 64])
    );
}

#[test]
fn exported_handles_are_known_until_their_allocation_is_forgotten() {
    let list = memory::ExportedHandles::new();
    let (a, b) = ([1_u8; 64], [2_u8; 64]);
    assert!(!list.contains(&a));
    list.record(0x1000, a);
    list.record(0x1000, a);
    list.record(0x2000, b);
    assert!(list.contains(&a) && list.contains(&b));
    list.forget(0x1000);
    assert!(!list.contains(&a) && list.contains(&b));
    list.forget(0x3000);
    assert!(list.contains(&b));
}

#[test]
fn pci_bus_ids_compare_as_numbers() {
    assert_eq!(parse_pci_bus_id("0000:1B:00.0"), Some((0, 0x1b, 0, 0)));
    assert_eq!(
        parse_pci_bus_id("00000000:1b:00.0"),
        parse_pci_bus_id("0000:1B:00.0")
    );
    assert_eq!(parse_pci_bus_id("0001:c1:1f.7"), Some((1, 0xc1, 0x1f, 7)));
    for bad in [
        "",
        "host",
        "0000:1B:00",
        "0000:1B.00.0",
        "0000:1B:00.",
        "0000:1B:00.10",
        "0000:1BB:00.0",
        "000000000:1B:00.0",
        "0000:+1:00.0",
        "0000:1B:00.0 ",
        "0000:1G:00.0",
    ] {
        assert_eq!(parse_pci_bus_id(bad), None, "{bad:?}");
    }
}

#[test]
fn peer_identities_of_another_backend_or_malformed_are_refused() {
    let id = |backend: &str, id: &str| DeviceIdentity {
        backend: backend.into(),
        id: id.into(),
    };
    let e = peer_bus_id(&id("hip", "0000:1B:00.0")).expect_err("a hip device");
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert!(e.to_string().contains("the \"hip\" backend"), "{e}");
    let e = peer_bus_id(&id("cuda", "GPU-1234")).expect_err("no bus id");
    assert!(e.to_string().contains("not a PCI bus id"), "{e}");
    assert_eq!(
        peer_bus_id(&id("cuda", "0000:1B:00.0")).ok(),
        Some((0, 0x1b, 0, 0))
    );
}

/// Runs `check` on the backend, or says why not: skipped without a device, failed without one
/// under `HALOPORT_REQUIRE_GPU=1` (as the conformance macro does).
fn on_gpu(name: &str, check: impl FnOnce(&CudaBackend)) {
    match backend() {
        Some(b) => check(&b),
        None if std::env::var("HALOPORT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("HALOPORT_REQUIRE_GPU=1 but no CUDA device for {name}")
        }
        None => println!("SKIPPED: {name}: no CUDA device"),
    }
}

#[test]
fn export_gives_a_whole_allocation_handle_this_process_refuses_to_open() {
    on_gpu("ipc export and same-process open", |b| {
        let memory = b.alloc_device(4096).expect("alloc");
        let h = b
            .export_ipc(&memory)
            .expect("cuIpcGetMemHandle on a cuMemAlloc base");
        assert_eq!(h.backend, "cuda");
        assert_eq!(h.bytes.len(), 64);
        assert_eq!(h.len, 4096);
        let e = b
            .open_ipc(&h)
            .expect_err("CUDA never opens its own process's handle");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        assert!(e.to_string().contains("this process exported"), "{e}");
        let e = b.open_ipc(&handle("host", 64)).expect_err("a host handle");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        // Freed memory is forgotten, so its handle now reaches the driver: what it answers
        // (refusing a freed allocation's handle) is printed, not asserted.
        drop(memory);
        match b.open_ipc(&h) {
            Ok(peer) => println!("the driver opened a freed allocation's handle: {peer:?}"),
            Err(e) => println!("the driver refused a freed allocation's handle: {e}"),
        }
    });
}

#[test]
fn the_device_is_named_by_its_pci_bus_id_and_reaches_itself() {
    on_gpu("device identity and peer access", |b| {
        let me = b.device_identity().expect("cuDeviceGetPCIBusId");
        assert_eq!(me.backend, "cuda");
        assert!(parse_pci_bus_id(&me.id).is_some(), "{me:?}");
        assert!(b.can_access_peer(&me).expect("the same device"));
        let upper = DeviceIdentity {
            backend: "cuda".into(),
            id: me.id.to_uppercase(),
        };
        assert!(b
            .can_access_peer(&upper)
            .expect("the same device, other case"));
        let absent = DeviceIdentity {
            backend: "cuda".into(),
            id: "fffe:fe:1f.7".into(),
        };
        assert_eq!(
            b.can_access_peer(&absent).ok(),
            Some(false),
            "unseen device"
        );
        for ordinal in 0..b.device_info().device_count {
            let dev = ffi::device(ordinal).expect("cuDeviceGet");
            let other = DeviceIdentity {
                backend: "cuda".into(),
                id: ffi::device_pci_bus_id(dev).expect("cuDeviceGetPCIBusId"),
            };
            let reach = b.can_access_peer(&other).expect("cuDeviceCanAccessPeer");
            println!("{} -> {}: {reach}", me.id, other.id);
        }
    });
}
