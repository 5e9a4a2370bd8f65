//! Per-iteration timelines: when each block packed and unpacked, on the host clock, relative to
//! the start of its iteration (SPEC 6; thesis figures 4.4 and 4.8).
//!
//! The measurement keeps the raw device stamps of the last run's measured iterations; once the
//! clock fit exists they are converted to host microseconds.

use serde::{Deserialize, Serialize};

use haloport_core::clock::ClockFit;
use haloport_core::shared::hp_block_times;

/// Something the CPU did or saw during an iteration (SPEC 6: CPU events with their block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CpuEventKind {
    /// A kernel launch was queued.
    Launch,
    /// The pack kernel completed (baseline).
    PackDone,
    /// A block's H2D copy completed; the block may pack (memcpy taskqueue).
    CopyInDone,
    /// A block's task arrived from the GPU (taskqueue).
    Task,
    /// A block's D2H copy completed (memcpy taskqueue).
    CopyOutDone,
    /// A block's send was posted (MPI_Isend) or completed (MPI_Send).
    Send,
    /// A block's receive completed (or, with MPI_Waitall, all of them).
    Recv,
    /// All kernels of the iteration completed.
    KernelsDone,
    /// Non-blocking sends completed.
    SendsDone,
    /// The closing barrier passed.
    Barrier,
}

/// A CPU event with its block, stamped on the host clock ([`haloport_core::clock::host_now_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuEvent {
    /// What happened.
    pub kind: CpuEventKind,
    /// The block it concerns, if one.
    pub block: Option<u32>,
    /// When, host nanoseconds.
    pub at_ns: u64,
}

impl CpuEvent {
    /// An event now.
    pub fn now(kind: CpuEventKind, block: Option<usize>) -> CpuEvent {
        CpuEvent {
            kind,
            block: block.map(|b| b as u32),
            at_ns: haloport_core::clock::host_now_ns(),
        }
    }
}

/// A CPU event on an iteration's timeline, microseconds since the iteration started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimedCpuEvent {
    /// What happened.
    pub kind: CpuEventKind,
    /// The block it concerns, if one.
    pub block: Option<u32>,
    /// When, microseconds since the iteration started.
    pub at_us: f64,
}

/// One iteration as measured: host stamps around it, device stamps per block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawIteration {
    /// Iteration within its run (warm-up included).
    pub iteration: u32,
    /// Host clock at the start and the end of the iteration ([`haloport_core::clock::host_now_ns`]).
    pub cpu_start_ns: u64,
    /// See `cpu_start_ns`.
    pub cpu_end_ns: u64,
    /// Per block: pack start, pack end, unpack start, unpack end, in device ticks.
    pub device: Vec<[u64; 4]>,
    /// What the CPU did, in order.
    pub cpu: Vec<CpuEvent>,
}

impl RawIteration {
    /// Device stamps from the kernels' timestamp records.
    pub fn device_stamps(times: &[hp_block_times]) -> Vec<[u64; 4]> {
        times
            .iter()
            .map(|t| [t.pack_start, t.pack_end, t.unpack_start, t.unpack_end])
            .collect()
    }
}

/// One block's kernel phases, in microseconds since its iteration started (host clock).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlockPhases {
    /// Pack start and end.
    pub pack_us: [f64; 2],
    /// Unpack start and end.
    pub unpack_us: [f64; 2],
}

/// One iteration on the host clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationTimeline {
    /// Iteration within its run.
    pub iteration: u32,
    /// Host time the iteration took, microseconds.
    pub duration_us: f64,
    /// Per block, in block order.
    pub blocks: Vec<BlockPhases>,
    /// CPU events, in order.
    pub cpu: Vec<TimedCpuEvent>,
}

/// Converts raw iterations to host-clock timelines with `fit`.
pub fn convert(raw: &[RawIteration], fit: &ClockFit) -> Vec<IterationTimeline> {
    raw.iter()
        .map(|it| {
            let start = it.cpu_start_ns as f64;
            let us = |gpu: u64| (fit.to_host_ns(gpu) - start) / 1e3;
            IterationTimeline {
                iteration: it.iteration,
                duration_us: (it.cpu_end_ns.saturating_sub(it.cpu_start_ns)) as f64 / 1e3,
                blocks: it
                    .device
                    .iter()
                    .map(|d| BlockPhases {
                        pack_us: [us(d[0]), us(d[1])],
                        unpack_us: [us(d[2]), us(d[3])],
                    })
                    .collect(),
                cpu: it
                    .cpu
                    .iter()
                    .map(|e| TimedCpuEvent {
                        kind: e.kind,
                        block: e.block,
                        at_us: (e.at_ns as f64 - start) / 1e3,
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use haloport_core::clock::{ClockFit, ClockSample};

    #[test]
    fn device_stamps_land_inside_their_iteration_on_the_host_clock() {
        // Device timer = host clock + 1 s, same rate.
        let offset = 1_000_000_000_u64;
        let samples: Vec<_> = [0_u64, 1_000_000]
            .iter()
            .map(|&cpu| ClockSample {
                gpu_before: cpu + offset - 100,
                gpu_after: cpu + offset + 100,
                cpu_ns: cpu,
            })
            .collect();
        let fit = ClockFit::fit(&samples).expect("fits");
        let raw = RawIteration {
            iteration: 4,
            cpu_start_ns: 10_000,
            cpu_end_ns: 50_000,
            device: vec![[
                offset + 12_000,
                offset + 20_000,
                offset + 30_000,
                offset + 31_000,
            ]],
            cpu: vec![CpuEvent {
                kind: CpuEventKind::Recv,
                block: Some(0),
                at_ns: 25_000,
            }],
        };
        let t = convert(&[raw], &fit);
        assert_eq!(t[0].iteration, 4);
        assert!((t[0].duration_us - 40.0).abs() < 1e-9);
        let b = t[0].blocks[0];
        assert!(
            (b.pack_us[0] - 2.0).abs() < 1e-6 && (b.pack_us[1] - 10.0).abs() < 1e-6,
            "{b:?}"
        );
        assert!((b.unpack_us[0] - 20.0).abs() < 1e-6 && (b.unpack_us[1] - 21.0).abs() < 1e-6);
        assert_eq!(t[0].cpu[0].block, Some(0));
        assert!((t[0].cpu[0].at_us - 15.0).abs() < 1e-9);
    }
}
