//! The shared conformance suite on HIP: it skips, saying so, where the HIP runtime sees no AMD
//! GPU (everywhere this project can reach), and fails under `HALOPORT_REQUIRE_GPU=1`. Also the
//! IPC handle and device-id checks (pure, so they run without a GPU), the IPC calls one process
//! can make (skipping without a device), graphs (the calls failing cleanly everywhere; a capture
//! replayed, skipping without a device), and the bindings' constants against the header.

use super::*;
use std::time::{Duration, Instant};

use haloport_core::{
    Backend, Coherence, DeviceIdentity, DeviceMemory, Error, IpcHandle, PinnedMemory,
};

use crate::backend::{parse_pci_bus_id, peer_bus_id};
use crate::{ffi, memory};

/// The GPUs this build's HIP runtime drives, for skip lines.
const GPU: &str = if cfg!(feature = "nvidia-layer") {
    "NVIDIA GPU for HIP on NVIDIA"
} else {
    "AMD GPU"
};

/// The backend, or `None` (with the reason printed) when this machine has no GPU for it.
fn backend() -> Option<HipBackend> {
    match HipBackend::new(0) {
        Ok(b) => Some(b),
        Err(Error::NoDevice { reason, .. }) => {
            println!("SKIPPED: no {GPU}: {reason}");
            None
        }
        Err(e) => panic!("a GPU is present ({GPU}) but the backend failed: {e}"),
    }
}

haloport_core::backend_conformance_tests!(backend());

#[test]
fn no_amd_gpu_is_an_error_naming_hip_not_a_crash() {
    // Runs the real runtime path: hipGetDeviceCount through libamdhip64 (or the HIP-on-NVIDIA
    // layer, which answers hipErrorInsufficientDriver on a machine without libcuda).
    match device_count() {
        Ok(n) => assert!(n >= 1),
        Err(e) => {
            assert!(matches!(e, Error::NoDevice { .. }), "{e:?}");
            assert!(e.to_string().contains("hip: no device"), "{e}");
            let named = [
                "hipErrorNoDevice",
                "hipErrorInsufficientDriver",
                "counts 0 devices",
            ];
            assert!(named.iter().any(|n| e.to_string().contains(n)), "{e}");
            println!("{e}");
        }
    }
}

/// Found running the backend through the HIP-on-NVIDIA layer on a machine without a driver:
/// `hipErrorInsufficientDriver` was reported as a failed call instead of "no device". Both
/// codes that mean the runtime has no device are now no device, naming the code; nothing else
/// is.
#[test]
fn no_gpu_and_no_driver_are_no_device_other_codes_are_errors() {
    use ffi::sys::hipError_t as E;
    assert_eq!(
        ffi::no_device_reason(E::hipErrorNoDevice),
        Some("hipErrorNoDevice")
    );
    assert!(ffi::no_device_reason(E::hipErrorInsufficientDriver)
        .is_some_and(|why| why.starts_with("hipErrorInsufficientDriver")));
    for other in [
        E::hipSuccess,
        E::hipErrorInvalidValue,
        E::hipErrorNotInitialized,
        E::hipErrorInvalidDevice,
        E::hipErrorUnknown,
    ] {
        assert_eq!(ffi::no_device_reason(other), None, "{other:?}");
    }
}

/// Found running the conformance suite's non-coherent check against the HIP-on-NVIDIA build: the
/// pinned memory reported the kind asked for as the kind served, while the layer serves
/// non-coherent as coherent, so `coherence_served` named a kind the device does not offer. What
/// is served now follows the platform, and the device's list is built from it.
#[test]
fn the_coherence_served_is_what_the_platform_serves() {
    use haloport_core::Coherence;
    assert_eq!(memory::served(Coherence::Coherent), Coherence::Coherent);
    let non_coherent = memory::served(Coherence::NonCoherent);
    if cfg!(feature = "nvidia-layer") {
        assert_eq!(non_coherent, Coherence::Coherent);
    } else {
        assert_eq!(non_coherent, Coherence::NonCoherent);
    }
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
    let e = memory::ipc_handle_bytes(&handle("cuda", 64)).expect_err("a cuda handle");
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert!(
        e.to_string().contains("made by the \"cuda\" backend"),
        "{e}"
    );
    for len in [0, 63, 65, 128] {
        let e = memory::ipc_handle_bytes(&handle("hip", len)).expect_err("wrong length");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        assert!(
            e.to_string()
                .contains(&format!("(hipIpcMemHandle_t) has 64 bytes, this one {len}")),
            "{e}"
        );
    }
    assert_eq!(
        memory::ipc_handle_bytes(&handle("hip", 64)).ok(),
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
    assert_eq!(parse_pci_bus_id("0000:c1:00.0"), Some((0, 0xc1, 0, 0)));
    assert_eq!(
        parse_pci_bus_id("00000000:C1:00.0"),
        parse_pci_bus_id("0000:c1:00.0")
    );
    assert_eq!(parse_pci_bus_id("0001:c1:1f.7"), Some((1, 0xc1, 0x1f, 7)));
    for bad in [
        "",
        "host",
        "0000:c1:00",
        "0000:c1.00.0",
        "0000:c1:00.",
        "0000:c1:00.10",
        "0000:c11:00.0",
        "000000000:c1:00.0",
        "0000:+1:00.0",
        "0000:c1:00.0 ",
        "0000:g1:00.0",
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
    let e = peer_bus_id(&id("cuda", "0000:c1:00.0")).expect_err("a cuda device");
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert!(e.to_string().contains("the \"cuda\" backend"), "{e}");
    let e = peer_bus_id(&id("hip", "GPU-1234")).expect_err("no bus id");
    assert!(e.to_string().contains("not a PCI bus id"), "{e}");
    assert_eq!(
        peer_bus_id(&id("hip", "0000:c1:00.0")).ok(),
        Some((0, 0xc1, 0, 0))
    );
}

/// Runs `check` on the backend, or says why not: skipped without a device, failed without one
/// under `HALOPORT_REQUIRE_GPU=1` (as the conformance macro does).
fn on_gpu(name: &str, check: impl FnOnce(&HipBackend)) {
    match backend() {
        Some(b) => check(&b),
        None if std::env::var("HALOPORT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("HALOPORT_REQUIRE_GPU=1 but no {GPU} for {name}")
        }
        None => println!("SKIPPED: {name}: no {GPU}"),
    }
}

#[test]
fn export_gives_a_whole_allocation_handle_this_process_refuses_to_open() {
    on_gpu("ipc export and same-process open", |b| {
        let memory = b.alloc_device(4096).expect("alloc");
        let h = b
            .export_ipc(&memory)
            .expect("hipIpcGetMemHandle on a hipMalloc base");
        assert_eq!(h.backend, "hip");
        assert_eq!(h.bytes.len(), 64);
        assert_eq!(h.len, memory.len_bytes());
        let e = b.open_ipc(&h).expect_err("a handle of this process");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        assert!(e.to_string().contains("this process exported"), "{e}");
        let e = b.open_ipc(&handle("host", 64)).expect_err("a host handle");
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    });
}

#[test]
fn the_device_is_named_by_its_pci_bus_id_and_reaches_itself() {
    on_gpu("device identity and peer access", |b| {
        let me = b.device_identity().expect("hipDeviceGetPCIBusId");
        assert_eq!(me.backend, "hip");
        assert!(parse_pci_bus_id(&me.id).is_some(), "{me:?}");
        assert!(b.can_access_peer(&me).expect("the same device"));
        let absent = DeviceIdentity {
            backend: "hip".into(),
            id: "fffe:fe:1f.7".into(),
        };
        assert_eq!(
            b.can_access_peer(&absent).ok(),
            Some(false),
            "unseen device"
        );
    });
}

/// The device info names the platform: through the layer, NVIDIA and "HIP on NVIDIA" in the
/// vendor and the driver line (so every result's header says it), the CUDA kernels' 1 GHz timer,
/// only coherent memory offered, warps of the device's width; on AMD, AMD.
#[test]
fn the_device_info_names_the_platform() {
    on_gpu("the device info's platform", |b| {
        let info = b.device_info();
        println!("{info:?}");
        assert!(info.warp_width == 32 || info.warp_width == 64, "{info:?}");
        if cfg!(feature = "nvidia-layer") {
            assert!(info.driver.contains(crate::PLATFORM), "{}", info.driver);
            assert!(info.vendor.contains("HIP on NVIDIA"), "{}", info.vendor);
            assert_eq!(info.timer_hz, 1_000_000_000);
            assert_eq!(
                info.coherence_kinds,
                vec![haloport_core::Coherence::Coherent]
            );
            assert!(
                info.driver.contains("cooperative launch: yes"),
                "{}",
                info.driver
            );
        } else {
            assert_eq!(info.vendor, "AMD");
        }
    });
}

/// The graph calls on null handles, which HIP refuses without reading them: with a device or
/// without one (no device, no driver), each is an error naming its call, never a panic or a
/// crash. Runs everywhere, no skip.
#[test]
fn graph_calls_fail_cleanly_with_or_without_a_device() {
    let null_stream: ffi::hipStream_t = std::ptr::null_mut();
    // SAFETY: the null stream always exists; HIP refuses to capture it
    // (hipErrorStreamCaptureUnsupported), and without a device answers before capturing.
    let begin = unsafe { ffi::stream_begin_capture(null_stream) };
    // SAFETY: as above; it is not capturing (hipErrorIllegalState), or there is no device.
    let end = unsafe { ffi::stream_end_capture(null_stream) };
    // SAFETY: a null graph is refused (hipErrorInvalidValue) before anything is launched.
    let launch = unsafe { ffi::graph_launch(std::ptr::null_mut(), null_stream) };
    // SAFETY: a null graph is refused (hipErrorInvalidValue); nothing is destroyed.
    let destroy = unsafe { ffi::graph_destroy(std::ptr::null_mut()) };
    for (call, result) in [
        ("hipStreamBeginCapture", begin.map(|_| ())),
        ("hipStreamEndCapture", end.map(|_| ())),
        ("hipGraphLaunch", launch),
        ("hipGraphExecDestroy", destroy),
    ] {
        let e = result.expect_err(call);
        assert!(
            matches!(e, Error::Backend { call: named, .. } if named == call),
            "{call}: {e:?}"
        );
        println!("{e}");
    }
}

/// A capture of two copies ends in a graph that replays them, on the capturing stream and on
/// another (ordered after the first replay), reading the host buffer as it is at each replay;
/// the graph drops after its last replay. Ending a capture never begun is the runtime's error,
/// naming hipStreamEndCapture.
#[test]
fn a_captured_graph_replays_on_any_stream_and_drops_after_its_last_replay() {
    on_gpu("graphs", |b| {
        const BYTES: usize = 4096;
        let src = b.alloc_pinned(BYTES, Coherence::Coherent).expect("pinned");
        let dst = b.alloc_pinned(BYTES, Coherence::Coherent).expect("pinned");
        let dev = b.alloc_device(BYTES).expect("device");
        let (s1, s2) = (
            b.create_stream().expect("stream"),
            b.create_stream().expect("stream"),
        );
        let deadline = || Instant::now() + Duration::from_secs(10);
        let fill = |value: u8| {
            // SAFETY: src holds BYTES bytes, and no copy is queued while the host writes them.
            unsafe { std::ptr::write_bytes(src.host_ptr(), value, BYTES) }
        };
        let read = || {
            // SAFETY: dst holds BYTES bytes, and every copy into it completed (synchronized).
            unsafe { std::slice::from_raw_parts(dst.host_ptr(), BYTES) }.to_vec()
        };

        let e = b
            .end_capture(&s1)
            .map(|_| ())
            .expect_err("no capture begun");
        assert!(
            matches!(
                e,
                Error::Backend {
                    call: "hipStreamEndCapture",
                    ..
                }
            ),
            "{e:?}"
        );
        b.begin_capture(&s1).expect("hipStreamBeginCapture");
        // SAFETY: the memory stays allocated until every replay completed (synchronized below,
        // and the graph drops before it).
        unsafe {
            b.copy_to_device_async(&dev, 0, &src, 0, BYTES, &s1)
                .expect("captured copy");
            b.copy_to_host_async(&dst, 0, &dev, 0, BYTES, &s1)
                .expect("captured copy");
        }
        let graph = b.end_capture(&s1).expect("end capture and instantiate");
        assert_eq!(read(), vec![0; BYTES], "captured work is not run");

        fill(7);
        // SAFETY: as above.
        unsafe { b.launch_graph(&graph, &s1) }.expect("hipGraphLaunch");
        b.stream_synchronize(&s1, deadline()).expect("first replay");
        assert_eq!(read(), vec![7; BYTES]);
        fill(9);
        // SAFETY: as above.
        unsafe { b.launch_graph(&graph, &s2) }.expect("hipGraphLaunch on another stream");
        b.stream_synchronize(&s2, deadline())
            .expect("second replay");
        assert_eq!(read(), vec![9; BYTES]);
        // SAFETY: as above; dropped without waiting for the replay: the graph waits itself.
        unsafe { b.launch_graph(&graph, &s1) }.expect("a third replay");
        drop(graph);
    });
}

mod bindings {
    use std::process::Command;

    use crate::ffi;

    include!(concat!(env!("OUT_DIR"), "/hip_header_values.rs"));

    /// Compiles `constants` against the installed header with the hipcc that built the kernels.
    fn check(constants: &[(String, i64)]) -> Result<(), String> {
        let dir = tempfile::tempdir().expect("temp dir");
        // An AMD target: the check reads the header, and HIP-on-NVIDIA builds have no gfx list.
        let arch = env!("HALOPORT_HIP_CHECK_ARCH");
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
        let mut header = std::fs::read_to_string(env!("HALOPORT_HIP_HEADER")).expect("the header");
        // HIP on NVIDIA: the layer's declarations of what HIP 5.2 lacks (build.rs).
        let extra = env!("HALOPORT_HIP_EXTRA_HEADER");
        if !extra.is_empty() {
            header.push_str(&std::fs::read_to_string(extra).expect("the layer's header"));
        }
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
