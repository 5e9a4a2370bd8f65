//! The conformance suite every backend must pass, generic over `B: Backend` (STYLE: one suite,
//! instantiated per backend by [`backend_conformance_tests!`](crate::backend_conformance_tests)).
//!
//! Each check returns `Err` with a message saying what broke; the macro turns each into a test.
//! GPU backends instantiate it in tests that skip, with a printed line, where no device exists.

// The checks launch kernels on raw device addresses, as strategies do.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use crate::backend::{Backend, Coherence, Launch, LaunchDims, PinnedMemory};
use crate::exchange::ExchangeBuffers;
use crate::pattern::{BlockSpec, RankPattern};
use crate::transport::faulty::CORRUPT_VALUE;
use crate::verify::{packed_value, planned_checks, Verify};

mod fused;
mod regions;

pub use fused::fused_signal_stores_waits_and_times_out;
pub use regions::{
    copy_3d_matches_the_region_kernels, local_copies_fill_the_halos_they_mirror,
    one_launch_exchange_packs_then_unpacks, paired_regions_move_the_same_elements,
    region_and_stencil_launches_check_their_arguments, region_messages_signal_each_epoch,
    region_pack_and_unpack_follow_the_index_rule, region_waits_time_out_and_abort,
    stencil27_matches_the_cpu_bit_for_bit, stencil_halos_in_boxes_update_the_interior,
    stencil_shell_in_tiles_matches_the_cpu, synthetic_regions_pack_and_check_the_thesis_values,
};

type Check = std::result::Result<(), String>;

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Check {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn e(err: crate::Error) -> String {
    err.to_string()
}

/// A rank-0 pattern that sends to itself, sizes from one element to many.
fn self_pattern() -> RankPattern {
    RankPattern {
        rank: 0,
        blocks: [1_u64, 15, 1000, 130_000]
            .iter()
            .map(|&elems| BlockSpec {
                elems,
                dest: 0,
                source: 0,
            })
            .collect(),
    }
}

/// Copies every block's send buffer into its receive buffer on the CPU, as a transport would.
fn loop_back<B: Backend>(buffers: &ExchangeBuffers<B>) {
    for b in 0..buffers.blocks() {
        let (s, r) = (buffers.send_region(b), buffers.recv_region(b));
        // SAFETY: both regions are valid for elems f64 values and do not overlap; no kernel runs.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), r.as_ptr(), s.elems()) };
    }
}

fn pack_loop_unpack<B: Backend>(
    backend: &B,
    coherence: Coherence,
    verify: Verify,
    damage: impl Fn(&ExchangeBuffers<B>),
) -> std::result::Result<ExchangeBuffers<B>, String> {
    let pattern = self_pattern();
    let buffers = ExchangeBuffers::new(backend, &pattern, coherence).map_err(e)?;
    let stream = backend.create_stream().map_err(e)?;
    let dims = LaunchDims {
        blocks: buffers.blocks() as u32,
        threads: THREADS,
    };
    let args = buffers.kernel_args(0, 7, verify);
    // SAFETY: args point into `buffers`, alive until after the synchronize below.
    unsafe { backend.launch(Launch::Pack(&args), dims, &stream) }.map_err(e)?;
    backend.stream_synchronize(&stream, deadline()).map_err(e)?;
    loop_back(&buffers);
    damage(&buffers);
    // SAFETY: as above.
    unsafe { backend.launch(Launch::Unpack(&args), dims, &stream) }.map_err(e)?;
    backend.stream_synchronize(&stream, deadline()).map_err(e)?;
    Ok(buffers)
}

/// The check records after [`pack_loop_unpack`], which synchronized its stream.
fn checks_of<B: Backend>(buffers: &mut ExchangeBuffers<B>) -> Vec<crate::shared::hp_block_check> {
    // SAFETY: pack_loop_unpack synchronized the only stream its kernels ran on.
    unsafe { buffers.take_checks() }
}

/// Writes `f(block elements)` over block `block`'s receive buffer, as a faulty transport would.
fn damage_recv<B: Backend>(buffers: &ExchangeBuffers<B>, block: usize, f: impl Fn(&mut [f64])) {
    let region = buffers.recv_region(block);
    // SAFETY: the region is valid for elems values; no kernel runs (between pack and unpack).
    f(unsafe { std::slice::from_raw_parts_mut(region.as_ptr(), region.elems()) });
}

const THREADS: u32 = 32;

/// Pack writes each element's own value; unpack of the same data finds nothing wrong and
/// makes exactly the planned checks (sample: first, last and one per thread; full: all).
pub fn pack_then_unpack_verifies<B: Backend>(backend: &B) -> Check {
    for verify in [Verify::Sample, Verify::Full] {
        let mut buffers = pack_loop_unpack(backend, Coherence::Coherent, verify, |_| {})?;
        for b in 0..buffers.blocks() {
            let region = buffers.send_region(b);
            // SAFETY: the region is valid for elems values; no kernel runs.
            let data = unsafe { std::slice::from_raw_parts(region.as_ptr(), region.elems()) };
            ensure(
                data.iter()
                    .enumerate()
                    .all(|(i, &v)| v == packed_value(7, 0, b as u32, i as u64)),
                || format!("block {b}: pack did not write each element's value"),
            )?;
        }
        let planned = buffers.planned_checks(verify, THREADS);
        for (b, c) in checks_of(&mut buffers).iter().enumerate() {
            ensure(u64::from(c.checked) == planned[b] && c.wrong == 0, || {
                format!(
                    "{verify}: block {b}: unpack checked {} and found {} wrong, expected {} and 0",
                    c.checked, c.wrong, planned[b]
                )
            })?;
        }
        ensure(
            checks_of(&mut buffers).iter().all(|c| c.checked == 0),
            || "take_checks did not reset the check records".into(),
        )?;
    }
    Ok(())
}

/// A corrupted element is found, with its index, expected and found values.
pub fn unpack_reports_a_wrong_value<B: Backend>(backend: &B) -> Check {
    let mut buffers = pack_loop_unpack(backend, Coherence::Coherent, Verify::Sample, |bufs| {
        damage_recv(bufs, 2, |d| d[0] = CORRUPT_VALUE)
    })?;
    let checks = checks_of(&mut buffers);
    let c = checks[2];
    ensure(c.wrong >= 1 && c.first_index == 0, || {
        format!(
            "block 2: expected a wrong value at index 0, got {} at {}",
            c.wrong, c.first_index
        )
    })?;
    ensure(
        c.first_found == CORRUPT_VALUE && c.first_expected == packed_value(7, 0, 2, 0),
        || {
            format!(
                "block 2: recorded expected {} found {}",
                c.first_expected, c.first_found
            )
        },
    )?;
    ensure(
        checks
            .iter()
            .enumerate()
            .all(|(b, c)| b == 2 || c.wrong == 0),
        || "a block other than the corrupted one reported wrong values".into(),
    )
}

/// A message one element short (its last element still holds an older iteration's value) and
/// a message shifted by one element are both caught, each at the element that gives it away.
pub fn unpack_catches_short_and_shifted_messages<B: Backend>(backend: &B) -> Check {
    let mut buffers = pack_loop_unpack(backend, Coherence::Coherent, Verify::Sample, |bufs| {
        damage_recv(bufs, 3, |d| {
            let last = d.len() - 1;
            d[last] = packed_value(6, 0, 3, last as u64);
        });
        damage_recv(bufs, 2, |d| d.rotate_right(1));
    })?;
    let checks = checks_of(&mut buffers);
    let last = self_pattern().blocks[3].elems - 1;
    ensure(
        checks[3].wrong == 1 && checks[3].first_index == last,
        || {
            format!(
                "short block 3: expected one wrong value at its last element {last}, got {} at {}",
                checks[3].wrong, checks[3].first_index
            )
        },
    )?;
    ensure(checks[2].wrong == checks[2].checked, || {
        format!(
            "shifted block 2: {} of {} checks wrong, expected all",
            checks[2].wrong, checks[2].checked
        )
    })
}

/// Full verification finds a wrong element that the sample does not look at.
pub fn full_verification_sees_every_element<B: Backend>(backend: &B) -> Check {
    let elems = self_pattern().blocks[2].elems;
    let sampled: Vec<u64> = (0..THREADS)
        .map(|t| crate::verify::checked_index(t, THREADS, elems))
        .collect();
    let hidden = (1..elems - 1)
        .find(|i| !sampled.contains(i))
        .ok_or("no unsampled element")?;
    let damage = |bufs: &ExchangeBuffers<B>| damage_recv(bufs, 2, |d| d[hidden as usize] = 0.5);
    let mut sample = pack_loop_unpack(backend, Coherence::Coherent, Verify::Sample, damage)?;
    ensure(checks_of(&mut sample)[2].wrong == 0, || {
        format!("the sample was expected not to look at element {hidden}")
    })?;
    let mut full = pack_loop_unpack(backend, Coherence::Coherent, Verify::Full, damage)?;
    let c = checks_of(&mut full)[2];
    ensure(
        c.wrong == 1
            && c.first_index == hidden
            && u64::from(c.checked) == planned_checks(Verify::Full, THREADS, elems),
        || {
            format!(
                "full: expected one wrong value at {hidden} of {elems} checks, got {} at {} of {}",
                c.wrong, c.first_index, c.checked
            )
        },
    )
}

/// Non-coherent buffers work for the baseline's pattern of use, and the served kind is reported
/// truthfully: either what was asked or a kind the device says it offers.
pub fn non_coherent_buffers_work_and_report_what_they_are<B: Backend>(backend: &B) -> Check {
    let mut buffers = pack_loop_unpack(backend, Coherence::NonCoherent, Verify::Sample, |_| {})?;
    ensure(checks_of(&mut buffers).iter().all(|c| c.wrong == 0), || {
        "unpack found wrong values in non-coherent buffers".into()
    })?;
    let (asked, served) = buffers.coherence();
    ensure(asked == Coherence::NonCoherent, || {
        format!("requested kind recorded as {asked}")
    })?;
    ensure(
        backend.device_info().coherence_kinds.contains(&served),
        || format!("served {served}, which the device does not list as offered"),
    )
}

/// Device timestamps are stamped in order: pack start <= pack end <= unpack start <= unpack end.
pub fn kernels_stamp_device_times_in_order<B: Backend>(backend: &B) -> Check {
    let buffers = pack_loop_unpack(backend, Coherence::Coherent, Verify::Sample, |_| {})?;
    // SAFETY: pack_loop_unpack synchronized the only stream its kernels ran on.
    let times = unsafe { buffers.read_times() };
    for (b, t) in times.iter().enumerate() {
        ensure(
            t.pack_start > 0
                && t.pack_start <= t.pack_end
                && t.pack_end <= t.unpack_start
                && t.unpack_start <= t.unpack_end,
            || format!("block {b}: timestamps out of order: {t:?}"),
        )?;
    }
    Ok(())
}

/// Copies to the device and back return the same bytes; events around them complete and give a
/// non-negative elapsed time; stream and event queries say complete after synchronization.
pub fn copies_round_trip_and_events_complete<B: Backend>(backend: &B) -> Check {
    const N: usize = 1 << 20;
    let src = backend.alloc_pinned(N, Coherence::Coherent).map_err(e)?;
    let dst = backend.alloc_pinned(N, Coherence::Coherent).map_err(e)?;
    let dev = backend.alloc_device(N).map_err(e)?;
    // SAFETY: src is valid for N bytes and no copy is queued yet.
    let bytes = unsafe { std::slice::from_raw_parts_mut(src.host_ptr(), N) };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let stream = backend.create_stream().map_err(e)?;
    let (start, end) = (
        backend.create_event().map_err(e)?,
        backend.create_event().map_err(e)?,
    );
    backend.record_event(&start, &stream).map_err(e)?;
    // SAFETY: (1) src, dev and dst live until the end of this function, after the stream is
    // synchronized; (2) nothing else touches them meanwhile.
    unsafe {
        backend
            .copy_to_device_async(&dev, 0, &src, 0, N, &stream)
            .map_err(e)?;
        backend
            .copy_to_host_async(&dst, 0, &dev, 0, N, &stream)
            .map_err(e)?;
    }
    backend.record_event(&end, &stream).map_err(e)?;
    // A marker (no timing) completes like any event.
    let marker = backend.create_marker().map_err(e)?;
    backend.record_event(&marker, &stream).map_err(e)?;
    backend.event_synchronize(&marker, deadline()).map_err(e)?;
    backend.event_synchronize(&end, deadline()).map_err(e)?;
    ensure(backend.event_query(&end).map_err(e)?, || {
        "event incomplete after synchronize".into()
    })?;
    backend.stream_synchronize(&stream, deadline()).map_err(e)?;
    ensure(backend.stream_query(&stream).map_err(e)?, || {
        "stream busy after synchronize".into()
    })?;
    let ms = backend.event_elapsed_ms(&start, &end).map_err(e)?;
    ensure(ms >= 0.0, || format!("elapsed time {ms} ms is negative"))?;
    // SAFETY: dst is valid for N bytes; the stream is idle.
    let back = unsafe { std::slice::from_raw_parts(dst.host_ptr(), N) };
    ensure(
        back.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8),
        || "bytes changed on the way to the device and back".into(),
    )
}

/// An urgent stream runs copies like any stream and orders after a plain one through a marker
/// (as the stencil's step forks and joins its streams): bytes uploaded on a plain stream come
/// back unchanged through an urgent one that waited for the upload.
pub fn urgent_streams_order_after_plain_ones<B: Backend>(backend: &B) -> Check {
    const N: usize = 1 << 20;
    let src = backend.alloc_pinned(N, Coherence::Coherent).map_err(e)?;
    let dst = backend.alloc_pinned(N, Coherence::Coherent).map_err(e)?;
    let dev = backend.alloc_device(N).map_err(e)?;
    // SAFETY: src and dst are valid for N bytes and no copy is queued yet.
    unsafe {
        let bytes = std::slice::from_raw_parts_mut(src.host_ptr(), N);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i % 241) as u8;
        }
        std::ptr::write_bytes(dst.host_ptr(), 0, N);
    }
    let plain = backend.create_stream().map_err(e)?;
    let urgent = backend.create_urgent_stream().map_err(e)?;
    let uploaded = backend.create_marker().map_err(e)?;
    // SAFETY: (1) src, dev and dst live until the end of this function, after both streams
    // are synchronized; (2) the download waits for the upload through the marker.
    unsafe {
        backend
            .copy_to_device_async(&dev, 0, &src, 0, N, &plain)
            .map_err(e)?;
        backend.record_event(&uploaded, &plain).map_err(e)?;
        backend.stream_wait_event(&urgent, &uploaded).map_err(e)?;
        backend
            .copy_to_host_async(&dst, 0, &dev, 0, N, &urgent)
            .map_err(e)?;
    }
    backend.stream_synchronize(&urgent, deadline()).map_err(e)?;
    backend.stream_synchronize(&plain, deadline()).map_err(e)?;
    // SAFETY: dst is valid for N bytes; both streams are idle.
    let back = unsafe { std::slice::from_raw_parts(dst.host_ptr(), N) };
    ensure(
        back.iter().enumerate().all(|(i, &b)| b == (i % 241) as u8),
        || "bytes copied back on an urgent stream after the upload differ".into(),
    )
}

/// Copies outside an allocation are refused with an error, not performed.
pub fn out_of_range_copies_are_refused<B: Backend>(backend: &B) -> Check {
    let src = backend.alloc_pinned(64, Coherence::Coherent).map_err(e)?;
    let dev = backend.alloc_device(32).map_err(e)?;
    let stream = backend.create_stream().map_err(e)?;
    // SAFETY: the copy is refused before anything is queued; were it queued, src and dev
    // outlive the stream (declared before it, so dropped after it).
    let queued = unsafe { backend.copy_to_device_async(&dev, 0, &src, 0, 64, &stream) };
    ensure(queued.is_err(), || {
        "a 64-byte copy into a 32-byte allocation was accepted".into()
    })
}

/// Clock ping-pong completes, every sample's host stamp is ordered, and the fit's rate matches
/// the timer rate the device reports within 1 %.
pub fn clock_ping_pong_fits_the_reported_timer_rate<B: Backend>(backend: &B) -> Check {
    let mut samples = crate::clock::ping_pong(backend, 16, Duration::from_secs(10)).map_err(e)?;
    // Start and end sets far apart, as around a measurement, so scheduling noise in single
    // samples (up to milliseconds on busy CI machines) cannot move the slope by 1 %.
    std::thread::sleep(Duration::from_millis(500));
    samples.extend(crate::clock::ping_pong(backend, 16, Duration::from_secs(10)).map_err(e)?);
    ensure(
        samples.windows(2).all(|w| w[0].cpu_ns < w[1].cpu_ns),
        || "host stamps of consecutive samples are not increasing".into(),
    )?;
    ensure(samples.iter().all(|s| s.gpu_before <= s.gpu_after), || {
        "a sample's device stamps are out of order".into()
    })?;
    let fit = crate::clock::ClockFit::fit(&samples).ok_or("no fit through the samples")?;
    let expected = 1e9 / backend.device_info().timer_hz as f64;
    ensure((fit.slope / expected - 1.0).abs() < 0.01, || {
        format!("fit slope {} ns/tick, timer says {expected}", fit.slope)
    })
}

/// The occupancy query answers for every kernel with at least one resident block.
pub fn occupancy_is_reported<B: Backend>(backend: &B) -> Check {
    for kernel in crate::backend::Kernel::ALL {
        let n = backend.max_resident_blocks(kernel, 128).map_err(e)?;
        ensure(n >= 1, || format!("{kernel:?}: {n} resident blocks"))?;
    }
    Ok(())
}

/// Instantiates the conformance suite as `#[test]` functions for a backend.
///
/// `$make` is an expression returning `Option<B>`: `None` means no device is present, and each
/// test prints `SKIPPED: ...` (or fails, if `HALOPORT_REQUIRE_GPU=1`).
#[macro_export]
macro_rules! backend_conformance_tests {
    ($make:expr) => {
        $crate::backend_conformance_tests!(@each $make;
            pack_then_unpack_verifies,
            unpack_reports_a_wrong_value,
            unpack_catches_short_and_shifted_messages,
            full_verification_sees_every_element,
            non_coherent_buffers_work_and_report_what_they_are,
            kernels_stamp_device_times_in_order,
            copies_round_trip_and_events_complete,
            urgent_streams_order_after_plain_ones,
            out_of_range_copies_are_refused,
            clock_ping_pong_fits_the_reported_timer_rate,
            occupancy_is_reported,
            region_pack_and_unpack_follow_the_index_rule,
            paired_regions_move_the_same_elements,
            local_copies_fill_the_halos_they_mirror,
            synthetic_regions_pack_and_check_the_thesis_values,
            region_messages_signal_each_epoch,
            region_waits_time_out_and_abort,
            one_launch_exchange_packs_then_unpacks,
            stencil27_matches_the_cpu_bit_for_bit,
            stencil_shell_in_tiles_matches_the_cpu,
            stencil_halos_in_boxes_update_the_interior,
            copy_3d_matches_the_region_kernels,
            region_and_stencil_launches_check_their_arguments,
            fused_signal_stores_waits_and_times_out);
    };
    (@each $make:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                match $make {
                    Some(backend) => {
                        if let Err(msg) = $crate::conformance::$name(&backend) {
                            panic!("{}: {msg}", stringify!($name));
                        }
                    }
                    None => {
                        if std::env::var("HALOPORT_REQUIRE_GPU").as_deref() == Ok("1") {
                            panic!("HALOPORT_REQUIRE_GPU=1 but no device for {}", stringify!($name));
                        }
                        println!("SKIPPED: {}: no device for this backend", stringify!($name));
                    }
                }
            }
        )*
    };
}
