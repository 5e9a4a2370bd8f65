//! The exchange with the application's own streams and memory, on the host backend in one
//! process (MPI as a singleton): it orders and frees only on events it recorded itself, so no
//! combination of streams lets one of its kernels touch memory the application freed (the host
//! backend makes such a touch visible, as a "use after free" error of the stream), and its
//! usage errors, time-outs and caches behave as documented.

#![allow(unsafe_code)] // adopting the application's memory, as an application does

mod common;

use std::time::{Duration, Instant};

use haloport::core::backend::{download_bytes, upload_bytes};
use haloport::core::domain::{DomainSpec, ElemType, HaloPlan};
use haloport::core::halo::{Field, HaloExchange, HaloOptions};
use haloport::core::{Backend, DeviceMemory, Error};
use haloport::host::{HostAllocation, HostBackend, HostStream};

use common::halos;

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// The application's own slow work ahead of the exchange on `stream`.
fn slow_work(stream: &HostStream) {
    stream
        .enqueue(|| {
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        })
        .expect("enqueue");
}

fn upload(backend: &HostBackend, memory: &HostAllocation, values: &[f64], s: &HostStream) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    upload_bytes(backend, memory, &bytes, s, deadline()).expect("upload");
}

/// Whether every halo cell of a one-rank periodic field holds the interior cell it mirrors.
fn halos_filled(backend: &HostBackend, memory: &HostAllocation, plan: &HaloPlan) -> bool {
    let stream = backend.create_stream().expect("stream");
    let bytes =
        download_bytes(backend, memory, memory.len_bytes(), &stream, deadline()).expect("download");
    let got = halos::f64s(&bytes);
    halos::wrong_halos(plan, &got[..plan.decomposition.alloc_elems() as usize]) == 0
}

#[test]
fn the_exchange_owns_its_ordering_and_never_touches_freed_memory() {
    let universe = mpi::initialize().expect("MPI initializes (as a singleton without mpirun)");
    let world = universe.world();
    let backend = HostBackend::new(0).expect("host backend");
    let spec = DomainSpec {
        grid: [6, 5, 4],
        procs: None,
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
    let (s1, s2) = (
        backend.create_stream().expect("s1"),
        backend.create_stream().expect("s2"),
    );

    // Usage errors are Usage, and leave the exchange usable.
    let owned = Field::alloc(&backend, &plan).expect("field");
    assert!(matches!(exchange.finish(&s1), Err(Error::Usage(_))));
    exchange.start(&[&owned], &s1).expect("start");
    assert!(matches!(
        exchange.start(&[&owned], &s1),
        Err(Error::Usage(m)) if m.contains("start called twice")
    ));
    exchange.finish(&s1).expect("finish");
    exchange.wait().expect("wait");

    // The sequence that used to free memory under a running kernel: the exchange on s1, held
    // back behind the application's slow work, then `wait` (it used to synchronize only the
    // stream it was given, s2, which ran nothing), then the application frees its memory.
    let memory = backend.alloc_device(bytes).expect("memory");
    upload(&backend, &memory, &halos::initial(&plan), &s2);
    // SAFETY: (1) a device address of this backend, valid for `bytes`; (2) freed only after
    // `wait` returned; (3) nothing else touches the field meanwhile.
    let field = unsafe { Field::adopt(memory.device_addr(), bytes, &plan) }.expect("adopt");
    slow_work(&s1);
    exchange.start(&[&field], &s1).expect("start");
    exchange.finish(&s1).expect("finish");
    exchange.wait().expect("wait");
    assert!(
        halos_filled(&backend, &memory, &plan),
        "wait returned before the unpack ran"
    );
    drop(field);
    drop(memory);
    backend
        .stream_synchronize(&s1, deadline())
        .expect("no kernel of the exchange ran on freed memory");

    // The host backend does see a use after free: here the application breaks its promise
    // (frees the field before `wait`), and the unpack queued behind its slow work is refused.
    let memory = backend.alloc_device(bytes).expect("memory");
    // SAFETY: deliberately broken promise (2): freed before the exchange was waited for. The
    // host backend's region kernels refuse freed memory instead of touching it (checked below),
    // so nothing is corrupted.
    let field = unsafe { Field::adopt(memory.device_addr(), bytes, &plan) }.expect("adopt");
    slow_work(&s1);
    exchange.start(&[&field], &s1).expect("start");
    exchange.finish(&s1).expect("finish");
    drop(field);
    drop(memory);
    let refused = backend.stream_synchronize(&s1, deadline());
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("use after free")),
        "the host backend did not report the use after free: {refused:?}"
    );
    drop(exchange);

    // Start on one stream, finish on another: the unpack (on s2, idle) must wait for the pack
    // (on s1, behind slow work), and the next pack for that unpack.
    let mut exchange =
        HaloExchange::new(&backend, &world, &spec, HaloOptions::default()).expect("exchange");
    let (s1, s2) = (
        backend.create_stream().expect("s1"),
        backend.create_stream().expect("s2"),
    );
    let memory = backend.alloc_device(bytes).expect("memory");
    // SAFETY: as above, kept until after `wait`.
    let field = unsafe { Field::adopt(memory.device_addr(), bytes, &plan) }.expect("adopt");
    for round in 0..2 {
        upload(&backend, &memory, &halos::initial(&plan), &s1);
        slow_work(&s1);
        exchange.start(&[&field], &s1).expect("start");
        exchange.finish(&s2).expect("finish");
        exchange.wait().expect("wait");
        assert!(
            halos_filled(&backend, &memory, &plan),
            "round {round}: the unpack on s2 ran before the pack on s1"
        );
    }

    // The region-table cache stays bounded however many different fields are exchanged.
    let stream = backend.create_stream().expect("stream");
    let mut fields = Vec::new();
    for _ in 0..3 * HaloExchange::<HostBackend>::TABLE_SETS {
        // Kept alive, so that every exchange has fields at new addresses.
        fields.push(Field::alloc(&backend, &plan).expect("field"));
        let field = fields.last().expect("a field");
        exchange.exchange(&[field], &stream).expect("exchange");
        let (cached, retired) = exchange.table_sets();
        assert!(
            cached <= HaloExchange::<HostBackend>::TABLE_SETS && retired <= 1,
            "{cached} table sets cached, {retired} retired"
        );
    }
    exchange.close().expect("close");
    drop(field);
    drop(memory);

    // A time-out too long to represent is a wait without end, not an overflow.
    let options = HaloOptions {
        timeout: Duration::MAX,
        ..HaloOptions::default()
    };
    let mut exchange = HaloExchange::new(&backend, &world, &spec, options).expect("exchange");
    let field = Field::alloc(&backend, &plan).expect("field");
    exchange
        .exchange(&[&field], &stream)
        .expect("an exchange with Duration::MAX");
    exchange.close().expect("close");
}
