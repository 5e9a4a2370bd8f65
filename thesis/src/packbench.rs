//! Pack and unpack throughput of the library's region kernels on one device (SPEC 13's
//! speed targets), beside the copy engine moving the same regions and beside the device's
//! own copy bandwidth, all measured in one run; and the plan's overhead: a compiled
//! [`HaloExchange`] against the same kernels launched by hand.
//!
//! Times come from device events around `reps` back-to-back launches (or copies), divided by
//! `reps`; each figure is the median of `runs` such measurements. The cold figures time one
//! launch after a copy of the whole field, which leaves none of the faces in the device's
//! cache when the field is larger than it. Bytes count what is read plus what is written (a
//! pack of B bytes moves 2B).

// Launches and copies take raw device addresses of the field and the buffers.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use serde::Serialize;

use crate::stats::median;
use crate::variant::TransportKind;
use haloport_core::backend::{
    download_bytes, upload_bytes, upload_table, Backend, DeviceMemory, Launch, LaunchDims,
};
use haloport_core::domain::{DomainSpec, ElemType, HaloPlan, Subarray};
use haloport_core::error::{Error, Result};
use haloport_core::halo::{direction_name, Field, HaloExchange, HaloOptions};
use haloport_core::regions::{
    assign_blocks, elems, field_index, kernel_form, pair_regions, Copy3d,
};
use haloport_core::shared::{hp_region, hp_regions_args, HP_NO_MESSAGE, HP_REGIONS_FULL};

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
    /// Threads per block of the region kernels.
    pub threads: u32,
    /// Run the full form of the region kernels even where the plain one serves
    /// ([`kernel_form`]), to compare them.
    pub full_form: bool,
    /// Let the kernels read their region table from device memory even where the launch's
    /// parameters would carry it ([`hp_regions_args::with_inline_table`]), to compare them.
    pub table_in_memory: bool,
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
    /// What the measured 6-face kernels moved, checked on the host.
    pub check: FaceCheck,
}

/// The 6-face pack and unpack kernels (x faces paired, as measured) run once more on known
/// values and checked element by element on the host.
#[derive(Debug, Clone, Serialize)]
pub struct FaceCheck {
    /// Packed elements compared with the field's element they came from.
    pub packed: u64,
    /// Elements of the whole field compared after the unpack: the halos must hold the
    /// buffer's words, every other element its own.
    pub field: u64,
    /// Comparisons that failed.
    pub wrong: u64,
}

impl FaceCheck {
    /// Every comparison was made and matched.
    pub fn verified(&self) -> bool {
        self.wrong == 0 && self.packed > 0
    }
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

/// Times `work` (queued `config.reps` times between two events) `config.runs` times; the
/// median per rep, us.
fn time<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    config: &PackBenchConfig,
    work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    time_after(backend, stream, config.runs, config.reps, || Ok(()), work)
}

/// Times one `work` queued after `cool` (a copy of the whole field, so `work` starts with a
/// cache that holds none of its data, as after a stencil sweep), `config.runs` times; the
/// median, us. It includes the launch's own latency, which back-to-back launches hide.
fn time_cold<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    config: &PackBenchConfig,
    cool: impl FnMut() -> Result<()>,
    work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    time_after(backend, stream, config.runs, 1, cool, work)
}

/// `runs` times: `before`, then `reps` of `work` between two events; the median per rep, us.
///
/// Returns with `stream` idle, error or not: the memory the work uses is freed after the
/// stream when the caller returns early. (The work here never waits for anything, so the
/// stream drains.)
fn time_after<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    runs: u32,
    reps: u32,
    before: impl FnMut() -> Result<()>,
    work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let timed = time_unsynchronized(backend, stream, runs, reps, before, work);
    let drained = backend.stream_synchronize(stream, Instant::now() + Duration::from_secs(60));
    let us = timed?;
    drained?;
    Ok(us)
}

fn time_unsynchronized<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    runs: u32,
    reps: u32,
    mut before: impl FnMut() -> Result<()>,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let (start, end) = (backend.create_event()?, backend.create_event()?);
    work()?; // warm-up
    let mut per_rep = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        before()?;
        backend.record_event(&start, stream)?;
        for _ in 0..reps {
            work()?;
        }
        backend.record_event(&end, stream)?;
        backend.event_synchronize(&end, Instant::now() + Duration::from_secs(60))?;
        let ms = backend.event_elapsed_ms(&start, &end)?;
        per_rep.push(1e3 * f64::from(ms) / f64::from(reps));
    }
    Ok(median(&per_rep).unwrap_or(0.0))
}

/// A table of regions in device memory with their grid, ready to launch.
struct Table<B: Backend> {
    memory: B::DeviceMemory,
    /// The regions uploaded to `memory`; the launch carries them unless `in_memory`.
    regions: Vec<hp_region>,
    in_memory: bool,
    blocks: u32,
    threads: u32,
    elem: ElemType,
    /// `HP_REGIONS_*` ([`kernel_form`]).
    form: u32,
}

/// `regions` numbered and uploaded; paired ([`pair_regions`]) when `pair`, as the halo
/// exchange pairs its own.
fn table<B: Backend>(
    backend: &B,
    mut regions: Vec<hp_region>,
    config: &PackBenchConfig,
    pair: bool,
) -> Result<Table<B>> {
    let (ept, threads, elem) = (
        u64::from(config.elems_per_thread),
        config.threads,
        config.elem,
    );
    let mut blocks = assign_blocks(&mut regions, threads, ept)?;
    if pair {
        blocks = pair_regions(&mut regions, elem.bytes(), threads, ept)?;
    }
    Ok(Table {
        memory: upload_table::<_, _, u8>(backend, &regions, &[])?,
        in_memory: config.table_in_memory,
        blocks,
        threads,
        elem,
        form: if config.full_form {
            HP_REGIONS_FULL
        } else {
            kernel_form(&regions, threads, elem.bytes())
        },
        regions,
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
    stream: &B::Stream,
) -> Result<()> {
    let mut args = hp_regions_args {
        regions: table.memory.device_addr(),
        num_regions: table.regions.len() as u32,
        elem_bytes: table.elem.bytes(),
        epoch: 1,
        form: table.form,
        ..hp_regions_args::default()
    };
    if !table.in_memory {
        args = args.with_inline_table(&table.regions);
    }
    let launch = if pack {
        Launch::PackRegions(&args)
    } else {
        Launch::UnpackRegions(&args)
    };
    let dims = LaunchDims {
        blocks: table.blocks,
        threads: table.threads,
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
        layout: Default::default(),
    };
    let plan = HaloPlan::compile(&spec, 1, 0)?;
    let eb = u64::from(config.elem.bytes());
    let field = Field::alloc(backend, &plan)?;
    let field_addr = field.device_addr();
    let field_bytes = field.len_bytes() as u64;
    let stream = backend.create_stream()?;
    let deadline = || Instant::now() + Duration::from_secs(60);
    let mut rows = Vec::new();
    // SAFETY (both helpers): every launch and copy of this benchmark reads and writes the
    // field, its copy, the face buffer and the tables, which all live until the end of this
    // function, after the last synchronization in `time`.
    let regions = |t: &Table<B>, pack: bool| -> Result<()> {
        // SAFETY: see above.
        unsafe { launch_regions(backend, t, pack, &stream) }
    };
    let engine = |c: &Copy3d| -> Result<()> {
        // SAFETY: see above.
        unsafe { backend.copy_3d_async(c, &stream) }
    };

    // The device's own bandwidth: the whole field copied by the copy engine and by the kernel.
    let copy_of_field = backend.alloc_device(field_bytes as usize)?;
    let flat = Subarray::of_box(plan.decomposition.alloc, [0; 3], plan.decomposition.alloc);
    let whole = vec![region(field_addr, copy_of_field.device_addr(), &flat)];
    let whole = table(backend, whole, config, false)?;
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
    // pack-bench declares the same halo on every side: both boxes always exist.
    let boxes = |d: [i8; 3]| match plan.decomposition.halo_boxes(d) {
        (Some(send), Some(recv)) => Ok((send, recv)),
        _ => Err(Error::Internal(format!(
            "pack-bench's face {d:?} has an empty side"
        ))),
    };
    let sizes: Vec<u64> = faces
        .iter()
        .map(|&d| Ok(boxes(d)?.0.elems() * eb))
        .collect::<Result<_>>()?;
    let buffer = backend.alloc_device(sizes.iter().sum::<u64>().max(1) as usize)?;
    let mut at = buffer.device_addr();
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for (&d, &size) in faces.iter().zip(&sizes) {
        let (send_box, recv_box) = boxes(d)?;
        send.push(region(field_addr, at, &send_box));
        recv.push(region(field_addr, at, &recv_box));
        at += size;
    }
    let face_bytes: u64 = sizes.iter().sum();
    let merged = |rs: &[hp_region]| -> Vec<hp_region> {
        rs.iter().map(haloport_core::regions::merged).collect()
    };
    // With the x faces paired (as the exchange runs them), and without.
    for pair in [true, false] {
        let how = if pair { "" } else { ", x faces unpaired" };
        let pack_all = table(backend, merged(&send), config, pair)?;
        let unpack_all = table(backend, merged(&recv), config, pair)?;
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
        if pair {
            // As in a stencil's exchange: the faces' lines are not in the cache to begin with.
            let cool = || engine(&flat_copy);
            let us = time_cold(backend, &stream, config, cool, || regions(&pack_all, true))?;
            add(
                "6 faces, pack kernel (one launch, cold: after a copy of the field)".into(),
                2 * face_bytes,
                us,
            );
            let us = time_cold(backend, &stream, config, cool, || {
                regions(&unpack_all, false)
            })?;
            add(
                "6 faces, unpack kernel (one launch, cold: after a copy of the field)".into(),
                2 * face_bytes,
                us,
            );
            let contiguous = Copy3d {
                width: face_bytes as usize,
                src_pitch: face_bytes as usize,
                dst_pitch: face_bytes as usize,
                ..flat_copy
            };
            let us = time_cold(backend, &stream, config, cool, || engine(&contiguous))?;
            add(
                "as many contiguous bytes by the copy engine (cold: after a copy of the field)"
                    .into(),
                2 * face_bytes,
                us,
            );
        }
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
    let check = {
        let pack_all = table(backend, merged(&send), config, true)?;
        let unpack_all = table(backend, merged(&recv), config, true)?;
        let faces = Faces {
            send: &send,
            recv: &recv,
            buffer: &buffer,
            bytes: face_bytes as usize,
        };
        check_faces(
            backend,
            &stream,
            &field,
            &faces,
            eb as usize,
            || {
                regions(&pack_all, true)?;
                download_bytes(backend, &buffer, face_bytes as usize, &stream, deadline())
            },
            || regions(&unpack_all, false),
        )?
    };
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
        let one = table(backend, merged(&send[i..=i]), config, true)?;
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
            threads: config.threads,
            elems_per_thread: config.elems_per_thread,
            ..HaloOptions::default()
        },
    )?;
    let plan_us = time(backend, &stream, config, || {
        exchange.start(&[&field], &stream)?;
        exchange.finish(&stream)
    })?;
    exchange.wait()?;
    drop(exchange);
    let both = |n: &haloport_core::domain::Neighbour| match (n.send, n.recv) {
        (Some(send), Some(recv)) => Ok((send, recv)),
        _ => Err(Error::Internal(format!(
            "pack-bench's neighbour {:?} has an empty side",
            n.direction
        ))),
    };
    let messages: Vec<u64> = plan
        .neighbours
        .iter()
        .map(|n| Ok(both(n)?.0.elems() * eb))
        .collect::<Result<_>>()?;
    let scratch = backend.alloc_device(messages.iter().sum::<u64>().max(1) as usize)?;
    let mut at = scratch.device_addr();
    let mut by_tag = std::collections::HashMap::new();
    let mut hand_send = Vec::new();
    for (n, &bytes) in plan.neighbours.iter().zip(&messages) {
        hand_send.push(region(field_addr, at, &both(n)?.0));
        by_tag.insert(n.send_tag, at);
        at += bytes;
    }
    let hand_recv: Vec<hp_region> = plan
        .neighbours
        .iter()
        .map(|n| Ok(region(field_addr, by_tag[&n.recv_tag], &both(n)?.1)))
        .collect::<Result<_>>()?;
    // The plan chooses its kernels' form and table itself: so do the kernels by hand.
    let config = &PackBenchConfig {
        full_form: false,
        table_in_memory: false,
        ..*config
    };
    let (hand_pack, hand_unpack) = (
        table(backend, hand_send, config, true)?,
        table(backend, hand_recv, config, true)?,
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
        check,
    })
}

/// The six faces' regions and their packed buffer.
struct Faces<'a, B: Backend> {
    send: &'a [hp_region],
    recv: &'a [hp_region],
    buffer: &'a B::DeviceMemory,
    bytes: usize,
}

/// Word `i` (`eb` bytes, little-endian) of `bytes`.
fn word(bytes: &[u8], i: u64, eb: usize) -> u64 {
    let at = i as usize * eb;
    let mut w = [0_u8; 8];
    w[..eb].copy_from_slice(&bytes[at..at + eb]);
    u64::from_le_bytes(w)
}

fn set_word(bytes: &mut [u8], i: u64, eb: usize, value: u64) {
    let at = i as usize * eb;
    bytes[at..at + eb].copy_from_slice(&value.to_le_bytes()[..eb]);
}

/// Fills the field with its own element numbers (+ 1), runs `pack` (which returns the packed
/// buffer) and checks every packed word; then fills the buffer with other words, runs `unpack`
/// and checks the whole field against the host's own unpack.
fn check_faces<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    field: &Field<B>,
    faces: &Faces<'_, B>,
    eb: usize,
    pack: impl FnOnce() -> Result<Vec<u8>>,
    unpack: impl FnOnce() -> Result<()>,
) -> Result<FaceCheck> {
    let deadline = || Instant::now() + Duration::from_secs(60);
    let memory = field
        .device_memory()
        .ok_or_else(|| Error::Internal("pack-bench's field is its own allocation".into()))?;
    let words = (field.len_bytes() / eb) as u64;
    let mut expected = vec![0_u8; field.len_bytes()];
    for i in 0..words {
        set_word(&mut expected, i, eb, i + 1);
    }
    upload_bytes(backend, memory, &expected, stream, deadline())?;
    let packed = pack()?;
    let base = faces.buffer.device_addr();
    let mut check = FaceCheck {
        packed: 0,
        field: words,
        wrong: 0,
    };
    for r in faces.send {
        let at = (r.buffer - base) / eb as u64;
        for e in 0..elems(r) {
            check.packed += 1;
            if word(&packed, at + e, eb) != word(&expected, field_index(r, e), eb) {
                check.wrong += 1;
            }
        }
    }
    // Complemented numbers: no buffer word equals the field word it replaces.
    let mut incoming = vec![0_u8; faces.bytes];
    for i in 0..(faces.bytes / eb) as u64 {
        set_word(&mut incoming, i, eb, !i);
    }
    upload_bytes(backend, faces.buffer, &incoming, stream, deadline())?;
    unpack()?;
    for r in faces.recv {
        let at = (r.buffer - base) / eb as u64;
        for e in 0..elems(r) {
            set_word(
                &mut expected,
                field_index(r, e),
                eb,
                word(&incoming, at + e, eb),
            );
        }
    }
    let after = download_bytes(backend, memory, field.len_bytes(), stream, deadline())?;
    check.wrong += after
        .chunks_exact(eb)
        .zip(expected.chunks_exact(eb))
        .filter(|(a, b)| a != b)
        .count() as u64;
    Ok(check)
}
