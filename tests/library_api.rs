//! The library's API used directly (no CLI), on the host backend in one process (MPI as a
//! singleton): misuse is an error naming what was wrong, never a panic or a poisoned
//! exchange; and one exchange fills every halo cell with the value of the cell it mirrors.

#![allow(unsafe_code)] // pinned-memory copies to fill and read fields

use haloport::core::domain::{DomainSpec, ElemType};
use haloport::core::halo::{Field, HaloExchange, HaloOptions};
use haloport::core::{Backend, Coherence, PinnedMemory};
use haloport::host::HostBackend;
use std::time::{Duration, Instant};

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[test]
fn the_exchange_refuses_misuse_and_fills_every_halo() {
    let universe = mpi::initialize().expect("MPI initializes (as a singleton without mpirun)");
    let world = universe.world();
    let backend = HostBackend::new(0).expect("host backend");
    let spec = DomainSpec {
        grid: [6, 5, 4],
        procs: None,
        periodic: [true, true, true],
        halo: [1, 2, 1],
        elem: ElemType::F64,
        fields: 2,
        layout: Default::default(),
    };
    let mut exchange =
        HaloExchange::new(&backend, &world, &spec, HaloOptions::default()).expect("exchange");
    let plan = exchange.plan().clone();
    let d = plan.decomposition.clone();
    let a = Field::alloc(&backend, &plan).expect("field a");
    let b = Field::alloc(&backend, &plan).expect("field b");
    let stream = backend.create_stream().expect("stream");

    // Misuse: each is refused with a message naming it, and the exchange stays usable.
    let err = |r: haloport::Result<()>| r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err(exchange.exchange(&[&a], &stream)).contains("declared with 2 fields, 1 were given"));
    let f32_spec = DomainSpec {
        elem: ElemType::F32,
        ..spec.clone()
    };
    let f32_plan = haloport::core::domain::HaloPlan::compile(&f32_spec, 1, 0).expect("plan");
    let small = Field::alloc(&backend, &f32_plan).expect("f32 field");
    assert!(err(exchange.exchange(&[&a, &small], &stream)).contains("does not fit the plan"));
    assert!(err(exchange.finish(&stream)).contains("finish called without start"));
    exchange.start(&[&a, &b], &stream).expect("start");
    assert!(err(exchange.start(&[&a, &b], &stream)).contains("start called twice"));
    exchange.finish(&stream).expect("finish");
    exchange.wait().expect("wait");

    // Every cell, halos included, gets a value from its global coordinates (wrapped into the
    // grid for the interior, marked -1 in the halos); after one exchange each halo cell must
    // hold the value of the interior cell it mirrors (periodic everywhere, one rank).
    let value = |g: [i64; 3], field: u32| -> f64 {
        let w: Vec<i64> = (0..3)
            .map(|k| g[k].rem_euclid(spec.grid[k] as i64))
            .collect();
        f64::from(field) * 1e6 + (w[0] + 100 * w[1] + 10_000 * w[2]) as f64
    };
    let cells = d.alloc_elems() as usize;
    let interior =
        |at: [u64; 3]| (0..3).all(|k| at[k] >= d.halo[k] && at[k] < d.halo[k] + d.local[k]);
    let each = |f: &mut dyn FnMut([u64; 3])| {
        for z in 0..d.alloc[2] {
            for y in 0..d.alloc[1] {
                for x in 0..d.alloc[0] {
                    f([x, y, z]);
                }
            }
        }
    };
    let staging = backend
        .alloc_pinned(cells * 8, Coherence::Coherent)
        .expect("pinned");
    // Interior cells their values, halo cells -1.
    let upload = || {
        for (k, field) in [&a, &b].into_iter().enumerate() {
            let mut values = vec![-1.0_f64; cells];
            each(&mut |at| {
                if interior(at) {
                    values[d.index(at) as usize] = value(d.global_of(at), k as u32);
                }
            });
            // SAFETY: staging holds `cells` f64s; no copy is queued on it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    values.as_ptr(),
                    staging.host_ptr().cast::<f64>(),
                    cells,
                )
            };
            let memory = field.device_memory().expect("allocated field");
            // SAFETY: both live until the synchronization right after; nothing else touches
            // them.
            unsafe {
                backend
                    .copy_to_device_async(memory, 0, &staging, 0, cells * 8, &stream)
                    .expect("upload")
            };
            backend
                .stream_synchronize(&stream, deadline())
                .expect("upload done");
        }
    };
    // Every cell, halos included, must hold the value of the cell it is or mirrors.
    let check = |when: &str| {
        for (k, field) in [&a, &b].into_iter().enumerate() {
            let memory = field.device_memory().expect("allocated field");
            // SAFETY: as above.
            unsafe {
                backend
                    .copy_to_host_async(&staging, 0, memory, 0, cells * 8, &stream)
                    .expect("download")
            };
            backend
                .stream_synchronize(&stream, deadline())
                .expect("download done");
            // SAFETY: the copy completed; staging holds `cells` f64s.
            let got =
                unsafe { std::slice::from_raw_parts(staging.host_ptr().cast::<f64>(), cells) };
            let mut halo_cells = 0;
            each(&mut |at| {
                // Every cell is interior or a halo cell the exchange fills (all halos are > 0).
                let want = value(d.global_of(at), k as u32);
                assert_eq!(
                    got[d.index(at) as usize],
                    want,
                    "{when}: field {k} cell {at:?}"
                );
                if !interior(at) {
                    halo_cells += 1;
                }
            });
            assert_eq!(
                halo_cells,
                cells - (6 * 5 * 4),
                "every halo cell was checked"
            );
        }
    };
    upload();
    exchange.exchange(&[&a, &b], &stream).expect("exchange");
    check("after an exchange");
    // Every neighbour is the rank itself: its messages are copied straight into the halos they
    // fill by the pack `start` queues, with nothing left to unpack (a copy through the
    // receive slots would fill them only in `finish`).
    upload();
    exchange.start(&[&a, &b], &stream).expect("start");
    check("after start");
    exchange.finish(&stream).expect("finish");
    exchange.wait().expect("wait");
    check("after finish");
}
