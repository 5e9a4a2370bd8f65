//! Host-side hot paths of the taskqueue's CPU event loop and of the measurement (Criterion):
//! what one negative test for an event costs in each posting mode (thesis 3.4.4 weighs the
//! channel scan against the queue's atomics), raising a go flag, and the statistics and clock
//! fit run after every measurement. Run with `cargo bench -p haloport-host`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use haloport_core::clock::{ClockFit, ClockSample};
use haloport_core::control::ControlBlock;
use haloport_host::HostBackend;
use haloport_thesis::stats::Summary;

fn event_tests(c: &mut Criterion) {
    let backend = HostBackend::new(0).expect("host backend");
    for blocks in [9_usize, 27] {
        let control = ControlBlock::new(&backend, blocks, 128).expect("control block");
        c.bench_function(
            &format!("channel scan, {blocks} blocks, nothing posted"),
            |b| b.iter(|| (0..blocks).find(|&blk| control.channel_task(blk, black_box(7)))),
        );
        c.bench_function(
            &format!("queue head check, {blocks} blocks, nothing posted"),
            |b| b.iter(|| control.queue_task(black_box(3), black_box(7))),
        );
        c.bench_function(&format!("raise a go flag, {blocks} blocks"), |b| {
            b.iter(|| control.release_unpack(black_box(blocks - 1), black_box(7)))
        });
    }
}

fn after_measurement(c: &mut Criterion) {
    let times: Vec<f64> = (0..400).map(|i| 1000.0 + f64::from(i % 37) * 3.5).collect();
    c.bench_function("summary of 400 iteration times", |b| {
        b.iter(|| Summary::of(black_box(&times)))
    });
    let samples: Vec<ClockSample> = (0..32_u64)
        .map(|i| ClockSample {
            gpu_before: 1_763_700_000_000_000_000 + i * 1_000_000,
            gpu_after: 1_763_700_000_000_000_000 + i * 1_000_000 + 4_000,
            cpu_ns: 5_000_000 + i * 1_000_000 + 2_000,
        })
        .collect();
    c.bench_function("clock fit through 32 samples", |b| {
        b.iter(|| ClockFit::fit(black_box(&samples)))
    });
}

criterion_group!(benches, event_tests, after_measurement);
criterion_main!(benches);
