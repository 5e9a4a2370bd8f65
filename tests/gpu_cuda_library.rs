//! The library on an NVIDIA GPU as an application uses it, one process (MPI as a singleton):
//! each call of the exchange makes its device current and gives the application's back (an
//! application that switched away between calls, or never made one current), and fields in
//! memory the kernels cannot use (pageable or pinned host memory, a range past its allocation)
//! are refused naming the field, before any kernel touches them. Compiled always; without the
//! `cuda` feature or a CUDA device it prints `SKIPPED: ...` and passes, unless
//! `HALOPORT_REQUIRE_GPU=1`.

#![allow(unsafe_code)] // adopting the application's memory, as an application does

mod common;

#[test]
fn each_call_makes_the_exchanges_device_current_and_memory_it_cannot_use_is_refused() {
    if common::require_device("cuda") {
        #[cfg(feature = "cuda")]
        on_gpu::run();
    }
}

#[cfg(feature = "cuda")]
mod on_gpu {
    use std::time::{Duration, Instant};

    use cudarc::driver::result::ctx;
    use cudarc::driver::sys::CUcontext;
    use haloport::core::backend::{download_bytes, upload_bytes};
    use haloport::core::domain::{DomainSpec, ElemType, HaloPlan};
    use haloport::core::halo::{Field, HaloExchange, HaloOptions};
    use haloport::core::{Backend, Coherence, DeviceMemory, Error, PinnedMemory};
    use haloport::cuda::{CudaBackend, CudaDeviceMemory};

    use super::common::halos;

    fn deadline() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    fn current() -> usize {
        ctx::get_current()
            .expect("cuCtxGetCurrent")
            .map_or(0, |c| c as usize)
    }

    /// What an application does between haloport's calls: makes no context current (a thread
    /// of its own, or a device switched away from).
    fn switch_away() {
        // SAFETY: null unbinds the thread's context.
        unsafe { ctx::set_current(std::ptr::null_mut::<std::ffi::c_void>() as CUcontext) }
            .expect("cuCtxSetCurrent(NULL)");
    }

    /// The field before the exchange, as bytes.
    fn initial(plan: &HaloPlan) -> Vec<u8> {
        halos::initial(plan)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    /// Halo cells that do not hold the interior cell they mirror (periodic, one rank).
    fn wrong_halos(backend: &CudaBackend, memory: &CudaDeviceMemory, plan: &HaloPlan) -> usize {
        let stream = backend.create_stream().expect("stream");
        let bytes = download_bytes(backend, memory, memory.len_bytes(), &stream, deadline())
            .expect("download");
        halos::wrong_halos(plan, &halos::f64s(&bytes))
    }

    pub fn run() {
        let universe = mpi::initialize().expect("MPI initializes (as a singleton)");
        let world = universe.world();
        let backend = CudaBackend::new(0).expect("CUDA backend");
        let ours = current();
        assert_ne!(
            ours, 0,
            "the backend makes its context current where it is created"
        );
        let spec = DomainSpec {
            grid: [24, 20, 16],
            procs: Some([1, 1, 1]),
            periodic: [true, true, true],
            halo: [1, 1, 1],
            elem: ElemType::F64,
            fields: 1,
            layout: Default::default(),
        };
        let mut exchange =
            HaloExchange::new(&backend, &world, &spec, HaloOptions::default()).expect("exchange");
        let plan = exchange.plan().clone();
        let bytes = plan.decomposition.alloc_elems() as usize * 8;
        let stream = backend.create_stream().expect("stream");
        let memory = backend.alloc_device(bytes).expect("memory");
        upload_bytes(&backend, &memory, &initial(&plan), &stream, deadline()).expect("upload");
        // SAFETY: (1) device memory of this backend, valid for `bytes`; (2) freed after the
        // exchange; (3) nothing else touches it meanwhile.
        let field = unsafe { Field::adopt(memory.device_addr(), bytes, &plan) }.expect("adopt");

        // The application switches away before every call: each call still runs on the
        // exchange's device, and hands the application back its own (none) afterwards.
        switch_away();
        exchange
            .start(&[&field], &stream)
            .expect("start, no context current");
        assert_eq!(current(), 0, "start gave the application's context back");
        exchange
            .finish(&stream)
            .expect("finish, no context current");
        assert_eq!(current(), 0, "finish gave the application's context back");
        exchange.wait().expect("wait, no context current");
        assert_eq!(current(), 0, "wait gave the application's context back");
        // SAFETY: the backend's own context, retained while it lives.
        unsafe { ctx::set_current(ours as CUcontext) }.expect("cuCtxSetCurrent");
        assert_eq!(
            wrong_halos(&backend, &memory, &plan),
            0,
            "halos after the switched calls"
        );
        // Entering where the exchange's context is current already changes nothing.
        let entered = backend.enter().expect("enter");
        assert!(!entered.switched());
        drop(entered);
        assert_eq!(current(), ours);

        // Memory the kernels cannot use: refused naming the field, the exchange still usable.
        let pageable = vec![0u8; bytes];
        let pinned = backend
            .alloc_pinned(bytes, Coherence::Coherent)
            .expect("pinned");
        let short = backend.alloc_device(bytes).expect("memory");
        let cases = [
            (pageable.as_ptr() as u64, "not memory the GPU driver knows"),
            (pinned.host_ptr() as u64, "host memory"),
            (
                short.device_addr() + 64,
                "run past the end of its allocation",
            ),
        ];
        for (addr, why) in cases {
            // SAFETY: adopting is checked before any kernel touches the memory: the exchange
            // refuses it (asserted), so nothing dereferences it.
            let bad = unsafe { Field::adopt(addr, bytes, &plan) }.expect("adopt");
            match exchange.start(&[&bad], &stream) {
                Err(Error::InvalidInput(m)) => {
                    assert!(m.contains("field 0") && m.contains(why), "{why}: {m}")
                }
                other => panic!("{why}: expected InvalidInput, got {other:?}"),
            }
        }
        exchange.exchange(&[&field], &stream).expect("still usable");
        assert_eq!(
            wrong_halos(&backend, &memory, &plan),
            0,
            "halos after the refusals"
        );
        exchange.close().expect("close");
        println!("PASS: calls with no context current ran on the exchange's device and gave it back; pageable, pinned and overrunning fields refused");
    }
}
