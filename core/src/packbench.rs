//! Pack and unpack throughput of the library's region kernels on one device (SPEC 13's
//! speed targets), beside the copy engine moving the same regions and beside the device's
//! own copy bandwidth, all measured in one run; and the plan's overhead: a compiled
//! [`HaloExchange`] against the same kernels launched by hand.
//!
//! Times come from device events around `reps` back-to-back launches (or copies), divided by
//! `reps`; each figure is the median of `runs` such measurements. Bytes count what is read
//! plus what is written (a pack of B bytes moves 2B).

// Launches and copies take raw device addresses of the field and the buffers.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use serde::Serialize;

use crate::backend::{upload_table, Backend, DeviceMemory, Launch, LaunchDims};
use crate::domain::{DomainSpec, ElemType, HaloPlan, Subarray};
use crate::error::{Error, Result};
use crate::halo::{direction_name, Field, HaloExchange, HaloOptions};
use crate::regions::{assign_blocks, pair_regions, Copy3d, THREADS};
use crate::shared::{hp_region, hp_regions_args, HP_NO_MESSAGE};
use crate::stats::median;
use crate::variant::TransportKind;

/// What to measure.
#[derive(Debug, Clone, Copy)]
pub struct PackBenchConfig {
    /// The local domain (interior extents) of one rank.
    pub local: [u64; 3],
    /// Halo width in every dimension.
    pub halo: u32,
    /// Element type.
    pub elem: ElemType,
    /// Launches per timed measurement.
    pub reps: u32,
    /// Measurements per figure (the median is reported).
    pub runs: u32,
    /// Elements each thread of the region kernels moves (sets the blocks per region).
    pub elems_per_thread: u32,
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// What was moved, and how.
    pub what: String,
    /// Bytes read plus written per repetition.
    pub bytes: u64,
    /// Median time per repetition, microseconds.
    pub median_us: f64,
    /// bytes / median time, GB/s (10^9 bytes per second).
    pub gbs: f64,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct PackBenchResult {
    /// The device's copy bandwidth, the best of the measured device-to-device copies, GB/s.
    pub device_gbs: f64,
    /// Every figure, the bandwidth references first.
    pub rows: Vec<BenchRow>,
    /// Median time of [`HaloExchange::exchange`] of all 26 regions with this rank as its own
    /// periodic neighbour, and of the same kernels launched by hand, microseconds.
    pub plan_exchange_us: f64,
    /// See `plan_exchange_us`.
    pub hand_exchange_us: f64,
    /// The same kernels by hand with an event recorded after each exchange, as the plan records
    /// one to know when its buffers are free again.
    pub hand_event_exchange_us: f64,
}

fn region(field: u64, buffer: u64, sub: &Subarray) -> hp_region {
    hp_region {
        field,
        buffer,
        offset: sub.offset,
        count: sub.count,
        stride: sub.stride,
        first_block: 0,
        blocks: 0,
        message: HP_NO_MESSAGE,
        ..hp_region::default()
    }
}

/// Times `work` (queued `reps` times between two events) `runs` times; the median per rep, us.
///
/// Returns with `stream` idle, error or not: the memory the work uses is freed after the
/// stream when the caller returns early. (The work here never waits for anything, so the
/// stream drains.)
fn time<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    config: &PackBenchConfig,
    work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let timed = time_unsynchronized(backend, stream, config, work);
    let drained = backend.stream_synchronize(stream, Instant::now() + Duration::from_secs(60));
    let us = timed?;
    drained?;
    Ok(us)
}

fn time_unsynchronized<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    config: &PackBenchConfig,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let (start, end) = (backend.create_event()?, backend.create_event()?);
    work()?; // warm-up
    let mut per_rep = Vec::with_capacity(config.runs as usize);
    for _ in 0..config.runs {
        backend.record_event(&start, stream)?;
        for _ in 0..config.reps {
            work()?;
        }
        backend.record_event(&end, stream)?;
        backend.event_synchronize(&end, Instant::now() + Duration::from_secs(60))?;
        let ms = backend.event_elapsed_ms(&start, &end)?;
        per_rep.push(1e3 * f64::from(ms) / f64::from(config.reps));
    }
    Ok(median(&per_rep).unwrap_or(0.0))
}

/// A table of regions in device memory with their grid, ready to launch.
struct Table<B: Backend> {
    memory: B::DeviceMemory,
    regions: u32,
    blocks: u32,
}

/// `regions` numbered and uploaded; paired ([`pair_regions`]) when `pair`, as the halo
/// exchange pairs its own.
fn table<B: Backend>(
    backend: &B,
    mut regions: Vec<hp_region>,
    elem: ElemType,
    elems_per_thread: u32,
    pair: bool,
) -> Result<Table<B>> {
    let ept = u64::from(elems_per_thread);
    let mut blocks = assign_blocks(&mut regions, THREADS, ept)?;
    if pair {
        blocks = pair_regions(&mut regions, elem.bytes(), THREADS, ept)?;
    }
    Ok(Table {
        memory: upload_table::<_, _, u8>(backend, &regions, &[])?,
        regions: regions.len() as u32,
        blocks,
    })
}

/// Queues one launch of the region kernel over `table`.
///
/// # Safety
/// Every region's field and buffer lie inside allocations that live until the launch
/// completed.
unsafe fn launch_regions<B: Backend>(
    backend: &B,
    table: &Table<B>,
    pack: bool,
    elem: ElemType,
    stream: &B::Stream,
) -> Result<()> {
    let args = hp_regions_args {
        regions: table.memory.device_addr(),
        num_regions: table.regions,
        elem_bytes: elem.bytes(),
        epoch: 1,
        ..hp_regions_args::default()
    };
    let launch = if pack {
        Launch::PackRegions(&args)
    } else {
        Launch::UnpackRegions(&args)
    };
    let dims = LaunchDims {
        blocks: table.blocks,
        threads: THREADS,
    };
    // SAFETY: forwarded from this function's contract; the table lives in `table`.
    unsafe { backend.launch(launch, dims, stream) }
}

/// Runs the benchmark on `backend`. `world` must hold this rank only in spirit: the plan
/// comparison compiles a one-rank periodic domain over `alone` (`MPI_COMM_SELF`).
///
/// # Errors
/// Backend errors; [`Error::InvalidInput`] for a domain too large for the device.
pub fn run_pack_bench<B: Backend>(
    backend: &B,
    alone: &SimpleCommunicator,
    config: &PackBenchConfig,
) -> Result<PackBenchResult> {
    let spec = DomainSpec {
        grid: config.local,
        procs: Some([1, 1, 1]),
        periodic: [true; 3],
        halo: [config.halo; 3],
        elem: config.elem,
        fields: 1,
    };
    let plan = HaloPlan::compile(&spec, 1, 0)?;
    let eb = u64::from(config.elem.bytes());
    let field = Field::alloc(backend, &plan)?;
    let field_addr = field.device_addr();
    let field_bytes = field.len_bytes() as u64;
    let stream = backend.create_stream()?;
    let mut rows = Vec::new();
    // SAFETY (both helpers): every launch and copy of this benchmark reads and writes the
    // field, its copy, the face buffer and the tables, which all live until the end of this
    // function, after the last synchronization in `time`.
    let regions = |t: &Table<B>, pack: bool| -> Result<()> {
        // SAFETY: see above.
        unsafe { launch_regions(backend, t, pack, config.elem, &stream) }
    };
    let engine = |c: &Copy3d| -> Result<()> {
        // SAFETY: see above.
        unsafe { backend.copy_3d_async(c, &stream) }
    };

    // The device's own bandwidth: the whole field copied by the copy engine and by the kernel.
    let copy_of_field = backend.alloc_device(field_bytes as usize)?;
    let flat = Subarray::of_box(plan.decomposition.alloc, [0; 3], plan.decomposition.alloc);
    let whole = table(
        backend,
        vec![region(field_addr, copy_of_field.device_addr(), &flat)],
        config.elem,
        config.elems_per_thread,
        false,
    )?;
    let flat_copy = Copy3d {
        src: field_addr,
        src_pitch: field_bytes as usize,
        src_rows: 1,
        dst: copy_of_field.device_addr(),
        dst_pitch: field_bytes as usize,
        dst_rows: 1,
        width: field_bytes as usize,
        height: 1,
        depth: 1,
    };
    let mut add = |what: String, bytes: u64, us: f64| {
        rows.push(BenchRow {
            what,
            bytes,
            median_us: us,
            gbs: bytes as f64 / (us * 1e3),
        });
    };
    let us = time(backend, &stream, config, || engine(&flat_copy))?;
    add(
        "device copy of the field (copy engine)".into(),
        2 * field_bytes,
        us,
    );
    let us = time(backend, &stream, config, || regions(&whole, true))?;
    add(
        "device copy of the field (pack kernel, one region)".into(),
        2 * field_bytes,
        us,
    );

    // The six faces, packed into one buffer, and each alone.
    let faces: Vec<[i8; 3]> = plan
        .neighbours
        .iter()
        .filter(|n| n.direction.iter().filter(|&&c| c != 0).count() == 1)
        .map(|n| n.direction)
        .collect();
    let sizes: Vec<u64> = faces
        .iter()
        .map(|&d| plan.decomposition.halo_boxes(d).0.elems() * eb)
        .collect();
    let buffer = backend.alloc_device(sizes.iter().sum::<u64>().max(1) as usize)?;
    let mut at = buffer.device_addr();
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for (&d, &size) in faces.iter().zip(&sizes) {
        let (send_box, recv_box) = plan.decomposition.halo_boxes(d);
        send.push(region(field_addr, at, &send_box));
        recv.push(region(field_addr, at, &recv_box));
        at += size;
    }
    let face_bytes: u64 = sizes.iter().sum();
    let merged =
        |rs: &[hp_region]| -> Vec<hp_region> { rs.iter().map(crate::regions::merged).collect() };
    // With the x faces paired (as the exchange runs them), and without.
    for pair in [true, false] {
        let how = if pair { "" } else { ", x faces unpaired" };
        let pack_all = table(
            backend,
            merged(&send),
            config.elem,
            config.elems_per_thread,
            pair,
        )?;
        let unpack_all = table(
            backend,
            merged(&recv),
            config.elem,
            config.elems_per_thread,
            pair,
        )?;
        let us = time(backend, &stream, config, || regions(&pack_all, true))?;
        add(
            format!("6 faces, pack kernel (one launch{how})"),
            2 * face_bytes,
            us,
        );
        let us = time(backend, &stream, config, || regions(&unpack_all, false))?;
        add(
            format!("6 faces, unpack kernel (one launch{how})"),
            2 * face_bytes,
            us,
        );
    }
    let copies = |rs: &[hp_region], pack: bool| -> Result<Vec<Copy3d>> {
        rs.iter()
            .map(|r| {
                let copy = if pack {
                    Copy3d::pack_region(r, config.elem.bytes())
                } else {
                    Copy3d::unpack_region(r, config.elem.bytes())
                };
                copy.ok_or_else(|| Error::Internal(format!("no 3-D copy for region {r:?}")))
            })
            .collect()
    };
    let (pack_copies, unpack_copies) = (copies(&send, true)?, copies(&recv, false)?);
    let us = time(backend, &stream, config, || {
        pack_copies.iter().try_for_each(&engine)
    })?;
    add(
        "6 faces, pack by the copy engine (6 3-D copies)".into(),
        2 * face_bytes,
        us,
    );
    let us = time(backend, &stream, config, || {
        unpack_copies.iter().try_for_each(&engine)
    })?;
    add(
        "6 faces, unpack by the copy engine (6 3-D copies)".into(),
        2 * face_bytes,
        us,
    );
    for (i, &d) in faces.iter().enumerate() {
        let one = table(
            backend,
            merged(&send[i..=i]),
            config.elem,
            config.elems_per_thread,
            true,
        )?;
        let bytes = 2 * sizes[i];
        let us = time(backend, &stream, config, || regions(&one, true))?;
        add(
            format!("face {}, pack kernel", direction_name(d)),
            bytes,
            us,
        );
        let copy = pack_copies[i];
        let us = time(backend, &stream, config, || engine(&copy))?;
        add(
            format!("face {}, pack by the copy engine", direction_name(d)),
            bytes,
            us,
        );
    }
    let device_gbs = rows[0].gbs.max(rows[1].gbs);

    // The plan against the same kernels by hand: all 26 regions, this rank its own neighbour.
    let mut exchange = HaloExchange::new(
        backend,
        alone,
        &spec,
        HaloOptions {
            transport: TransportKind::Mpi,
            threads: THREADS,
            elems_per_thread: config.elems_per_thread,
            ..HaloOptions::default()
        },
    )?;
    let plan_us = time(backend, &stream, config, || {
        exchange.start(&[&field], &stream)?;
        exchange.finish(&stream)
    })?;
    exchange.wait(&stream)?;
    drop(exchange);
    let messages: Vec<u64> = plan
        .neighbours
        .iter()
        .map(|n| n.send.elems() * eb)
        .collect();
    let scratch = backend.alloc_device(messages.iter().sum::<u64>().max(1) as usize)?;
    let mut at = scratch.device_addr();
    let mut by_tag = std::collections::HashMap::new();
    let mut hand_send = Vec::new();
    for (n, &bytes) in plan.neighbours.iter().zip(&messages) {
        hand_send.push(region(field_addr, at, &n.send));
        by_tag.insert(n.send_tag, at);
        at += bytes;
    }
    let hand_recv: Vec<hp_region> = plan
        .neighbours
        .iter()
        .map(|n| region(field_addr, by_tag[&n.recv_tag], &n.recv))
        .collect();
    let (hand_pack, hand_unpack) = (
        table(
            backend,
            hand_send,
            config.elem,
            config.elems_per_thread,
            true,
        )?,
        table(
            backend,
            hand_recv,
            config.elem,
            config.elems_per_thread,
            true,
        )?,
    );
    let hand_us = time(backend, &stream, config, || {
        regions(&hand_pack, true)?;
        regions(&hand_unpack, false)
    })?;
    let marker = backend.create_marker()?;
    let hand_event_us = time(backend, &stream, config, || {
        regions(&hand_pack, true)?;
        regions(&hand_unpack, false)?;
        backend.record_event(&marker, &stream)
    })?;
    Ok(PackBenchResult {
        device_gbs,
        rows,
        plan_exchange_us: plan_us,
        hand_exchange_us: hand_us,
        hand_event_exchange_us: hand_event_us,
    })
}
