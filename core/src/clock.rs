//! Aligning device timestamps with the host clock (SPEC 6, thesis 4.3).
//!
//! Kernels stamp with the device's global timer; the CPU stamps with [`host_now_ns`]. A
//! ping-pong kernel and the CPU take turns through two flags in coherent pinned memory (see
//! `hp_pingpong_args` in `kernels-cu/haloport_shared.h`); each turn yields a sample whose host
//! stamp lies between two device stamps. A least-squares line `cpu = a * gpu + b` through the
//! midpoints of samples taken at the start and the end of a measurement converts device stamps
//! to host time. Its uncertainty is reported two ways: how far samples lie from the line (RMS
//! residual) and how wide the window each sample was taken in is (half the round trip).
//!
//! This module touches the flags in pinned memory with atomics, and says why at each place.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Coherence, Launch, LaunchDims, PinnedMemory};
use crate::error::{Error, Result};
use crate::shared::{hp_clock_sample, hp_pingpong_args};

/// Nanoseconds on the host's monotonic clock since the first call in this process: the host
/// time every haloport timestamp uses.
pub fn host_now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// One ping-pong turn: device stamps before and after, host stamp in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    /// Device timer before the CPU saw the kernel's flag.
    pub gpu_before: u64,
    /// Device timer after the kernel saw the CPU's answer.
    pub gpu_after: u64,
    /// Host clock ([`host_now_ns`]) when the CPU answered.
    pub cpu_ns: u64,
}

/// Plays `count` turns of clock ping-pong on `backend`.
///
/// # Errors
/// Backend errors; [`Error::Timeout`] when either side waits longer than `timeout` for a turn.
pub fn ping_pong<B: Backend>(
    backend: &B,
    count: u32,
    timeout: Duration,
) -> Result<Vec<ClockSample>> {
    let n = count as usize;
    let sample_bytes = n * std::mem::size_of::<hp_clock_sample>();
    // Samples first, then the two flags on their own 128-byte lines.
    let flags_at = sample_bytes.div_ceil(128) * 128;
    let memory = backend.alloc_pinned(flags_at + 256, Coherence::Coherent)?;
    let base = memory.host_ptr();
    // SAFETY: the allocation holds flags_at + 256 bytes, page-aligned, so both flags are in
    // bounds and 4-byte aligned; they are only accessed atomically while the kernel runs.
    let (gpu_seq, cpu_seq) = unsafe {
        (
            AtomicU32::from_ptr(base.add(flags_at).cast::<u32>()),
            AtomicU32::from_ptr(base.add(flags_at + 128).cast::<u32>()),
        )
    };
    let timer_hz = backend.device_info().timer_hz;
    let args = hp_pingpong_args {
        samples: memory.device_addr(),
        gpu_seq: memory.device_addr() + flags_at as u64,
        cpu_seq: memory.device_addr() + flags_at as u64 + 128,
        timeout_ticks: (timeout.as_secs_f64() * timer_hz as f64) as u64,
        count,
        reserved: 0,
    };
    let stream = backend.create_stream()?;
    let one = LaunchDims {
        blocks: 1,
        threads: 1,
    };
    // SAFETY: args point into `memory`, which outlives the kernel: the stream is synchronized
    // below on every path (the kernel gives up by itself after timeout_ticks), and `stream` is
    // declared after `memory`, so it is dropped first.
    unsafe { backend.launch(Launch::ClockPingPong(&args), one, &stream)? };
    let samples = base.cast::<hp_clock_sample>();
    let answered = (|| {
        for i in 1..=count {
            let since = Instant::now();
            while gpu_seq.load(Ordering::Acquire) != i {
                if since.elapsed() > timeout {
                    return Err(Error::Timeout {
                        rank: None,
                        what: format!(
                            "waiting for the clock ping-pong kernel's turn {i} of {count}"
                        ),
                        after: timeout,
                    });
                }
                // Spin while a device would answer (microseconds); past that, the "device" may be
                // a host thread sharing this core, which needs the core to answer at all.
                if since.elapsed() > Duration::from_micros(20) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            let now = host_now_ns();
            // SAFETY: sample i - 1 is in bounds; the kernel never writes its `cpu` field.
            unsafe {
                std::ptr::addr_of_mut!((*samples.add(i as usize - 1)).cpu).write_volatile(now)
            };
            cpu_seq.store(i, Ordering::Release);
        }
        Ok(())
    })();
    let synchronized = backend.stream_synchronize(
        &stream,
        crate::backend::deadline_in(timeout.saturating_mul(2)),
    );
    answered?;
    synchronized?;
    // SAFETY: the kernel completed; the samples are plain data now.
    let raw = unsafe { std::slice::from_raw_parts(samples, n) };
    raw.iter()
        .enumerate()
        .map(|(i, s)| {
            if s.gpu_after < s.gpu_before || s.gpu_after == 0 {
                return Err(Error::Timeout {
                    rank: None,
                    what: format!(
                        "in the clock ping-pong kernel waiting for the CPU's turn {}",
                        i + 1
                    ),
                    after: timeout,
                });
            }
            Ok(ClockSample {
                gpu_before: s.gpu_before,
                gpu_after: s.gpu_after,
                cpu_ns: s.cpu,
            })
        })
        .collect()
}

/// A line mapping device timer ticks to host nanoseconds, with its uncertainty.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockFit {
    /// Device ticks of the first sample's midpoint; the fit is centred here so that f64 keeps
    /// nanosecond precision on timers counting from 1970.
    pub gpu_origin: u64,
    /// Host nanoseconds of the first sample.
    pub cpu_origin: u64,
    /// Host nanoseconds per device tick (about `1e9 / timer_hz`).
    pub slope: f64,
    /// Host nanoseconds at `gpu_origin`, relative to `cpu_origin`.
    pub intercept_ns: f64,
    /// Root mean square distance of the samples from the line, in host nanoseconds.
    pub residual_rms_ns: f64,
    /// Median half round trip of the samples, in host nanoseconds: the window within which each
    /// sample's host stamp is known to lie.
    pub half_round_trip_ns: f64,
    /// The larger of the two: how far a converted timestamp may be off.
    pub uncertainty_ns: f64,
    /// Samples the fit used.
    pub samples: usize,
}

impl ClockFit {
    /// Fits a line through the samples' midpoints. `None` for fewer than two samples or when all
    /// samples share one device time.
    pub fn fit(samples: &[ClockSample]) -> Option<ClockFit> {
        let first = samples.first()?;
        let gpu_origin = first.gpu_before / 2 + first.gpu_after / 2;
        let cpu_origin = first.cpu_ns;
        let points: Vec<(f64, f64)> = samples
            .iter()
            .map(|s| {
                let mid =
                    s.gpu_before / 2 + s.gpu_after / 2 + (s.gpu_before % 2 + s.gpu_after % 2) / 2;
                // Subtract in integers: as f64, timers near 2^60 keep only 256-ns steps.
                (
                    (i128::from(mid) - i128::from(gpu_origin)) as f64,
                    (i128::from(s.cpu_ns) - i128::from(cpu_origin)) as f64,
                )
            })
            .collect();
        let n = points.len() as f64;
        if points.len() < 2 {
            return None;
        }
        let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        if sxx == 0.0 {
            return None;
        }
        let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let slope = sxy / sxx;
        let intercept = mean_y - slope * mean_x;
        let residual_rms_ns = (points
            .iter()
            .map(|p| (p.1 - (slope * p.0 + intercept)).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        let mut halves: Vec<f64> = samples
            .iter()
            .map(|s| (s.gpu_after - s.gpu_before) as f64 * slope / 2.0)
            .collect();
        halves.sort_by(f64::total_cmp);
        let half_round_trip_ns = halves[halves.len() / 2];
        Some(ClockFit {
            gpu_origin,
            cpu_origin,
            slope,
            intercept_ns: intercept,
            residual_rms_ns,
            half_round_trip_ns,
            uncertainty_ns: residual_rms_ns.max(half_round_trip_ns),
            samples: samples.len(),
        })
    }

    /// Converts a device timestamp to host nanoseconds ([`host_now_ns`]'s clock).
    pub fn to_host_ns(&self, gpu: u64) -> f64 {
        let x = (i128::from(gpu) - i128::from(self.gpu_origin)) as f64;
        self.cpu_origin as f64 + self.intercept_ns + self.slope * x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(gpu_mid: u64, half: u64, cpu: u64) -> ClockSample {
        ClockSample {
            gpu_before: gpu_mid - half,
            gpu_after: gpu_mid + half,
            cpu_ns: cpu,
        }
    }

    #[test]
    fn fit_recovers_offset_and_rate_on_a_1970_based_timer() {
        // A device timer near 1.7e18 ns ticking at 1 GHz, a host clock offset by 5 ms.
        let t0 = 1_763_700_000_000_000_000_u64;
        let samples: Vec<_> = (0..32)
            .map(|i| {
                let gpu = t0 + i * 1_000_000 + if i >= 16 { 900_000_000 } else { 0 };
                sample(gpu, 1500, 5_000_000 + (gpu - t0))
            })
            .collect();
        let fit = ClockFit::fit(&samples).expect("fits");
        assert!((fit.slope - 1.0).abs() < 1e-12, "{fit:?}");
        assert!(fit.residual_rms_ns < 1.0, "{fit:?}");
        assert_eq!(fit.half_round_trip_ns, 1500.0);
        assert_eq!(fit.uncertainty_ns, 1500.0);
        let probe = t0 + 123_456_789;
        assert!((fit.to_host_ns(probe) - (5_000_000.0 + 123_456_789.0)).abs() < 1.0);
    }

    #[test]
    fn fit_handles_a_100_mhz_timer_and_reports_scatter() {
        // AMD's wall clock ticks at 100 MHz: 10 ns per tick; jitter the host stamps by +-40 ns.
        let samples: Vec<_> = (0..20_u64)
            .map(|i| {
                let jitter = if i % 2 == 0 { 40 } else { 0 };
                sample(1_000 + i * 10_000, 5, 77 + i * 100_000 + jitter)
            })
            .collect();
        let fit = ClockFit::fit(&samples).expect("fits");
        assert!((fit.slope - 10.0).abs() < 1e-3, "{fit:?}");
        assert!((fit.residual_rms_ns - 20.0).abs() < 0.5, "{fit:?}");
        assert!((fit.half_round_trip_ns - 50.0).abs() < 0.1, "{fit:?}");
        assert_eq!(fit.uncertainty_ns, fit.half_round_trip_ns);
    }

    #[test]
    fn too_few_or_degenerate_samples_do_not_fit() {
        assert!(ClockFit::fit(&[]).is_none());
        assert!(ClockFit::fit(&[sample(100, 1, 5)]).is_none());
        assert!(ClockFit::fit(&[sample(100, 1, 5), sample(100, 1, 9)]).is_none());
    }
}
