//! The memory every strategy exchanges through: per-block send and receive buffers in pinned
//! host memory, and the tables the kernels read and write (block table, check records,
//! timestamps), laid out once at set-up (thesis 3.1.3, figure 3.2).
//!
//! Invariants: each block's buffers start on a 512-byte boundary inside one allocation per
//! direction; the block table is written once, before any launch; check records and timestamps
//! are read by the CPU only after the kernels that write them completed (an `unsafe` contract
//! on [`ExchangeBuffers::take_checks`] and [`ExchangeBuffers::read_times`], which the
//! strategies keep by tracking whether their kernels were seen finished). The send and receive
//! allocations are shared with the transport ([`HostRegion`]s hold a share), so a request MPI
//! still works on keeps its memory alive even when the strategy is gone. This module touches
//! raw pinned memory and says why at each place.

#![allow(unsafe_code)]

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::backend::{Backend, Coherence, DeviceMemory, PinnedMemory};
use crate::error::Result;
use crate::pattern::RankPattern;
use crate::shared::{hp_block, hp_block_check, hp_block_times, hp_exchange_args};
use crate::transport::HostRegion;
use crate::verify::{planned_checks, Verify};

/// Elements between block starts are rounded up to this many (512 bytes).
const ALIGN_ELEMS: usize = 64;

/// Buffers and kernel tables for one rank's pattern.
pub struct ExchangeBuffers<B: Backend> {
    send_device: Option<B::DeviceMemory>,
    send: Shared<B::PinnedMemory>,
    recv: Shared<B::PinnedMemory>,
    table: B::PinnedMemory,
    checks: B::PinnedMemory,
    times: B::PinnedMemory,
    offsets: Vec<usize>,
    pattern: RankPattern,
}

/// An allocation shared with the transport: the CPU and device addresses are read once, and
/// the memory is freed when the last share (this one, or a pending request's) is dropped.
struct Shared<M> {
    memory: Arc<Mutex<M>>,
    host: *mut f64,
    coherence: (Coherence, Coherence),
}

// SAFETY: `host` is an address into the allocation `memory` keeps alive; M itself is Send.
unsafe impl<M: Send> Send for Shared<M> {}

impl<M: PinnedMemory> Shared<M> {
    fn new(memory: M) -> Shared<M> {
        Shared {
            host: memory.host_ptr().cast::<f64>(),
            coherence: (memory.coherence_requested(), memory.coherence_served()),
            memory: Arc::new(Mutex::new(memory)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, M> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where each block starts (in elements) in one allocation per direction, and the allocation's
/// size in elements: every block on a 512-byte boundary. A peer computes the same layout from
/// this rank's pattern (the device-direct path stores into it).
pub(crate) fn layout(pattern: &RankPattern) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(pattern.blocks.len());
    let mut at = 0_usize;
    for block in &pattern.blocks {
        offsets.push(at);
        at += (block.elems as usize).div_ceil(ALIGN_ELEMS) * ALIGN_ELEMS;
    }
    (offsets, at)
}

impl<B: Backend> ExchangeBuffers<B> {
    /// Allocates send and receive buffers with the given coherence, and the kernel tables in
    /// coherent pinned memory, and writes the block table.
    ///
    /// # Errors
    /// The backend's allocation errors.
    pub fn new(backend: &B, pattern: &RankPattern, buffers: Coherence) -> Result<Self> {
        let (offsets, total_elems) = layout(pattern);
        let n = pattern.blocks.len();
        let bytes = total_elems * std::mem::size_of::<f64>();
        let send = backend.alloc_pinned(bytes, buffers)?;
        let recv = backend.alloc_pinned(bytes, buffers)?;
        let table =
            backend.alloc_pinned(n * std::mem::size_of::<hp_block>(), Coherence::Coherent)?;
        let checks = backend.alloc_pinned(
            n * std::mem::size_of::<hp_block_check>(),
            Coherence::Coherent,
        )?;
        let times = backend.alloc_pinned(
            n * std::mem::size_of::<hp_block_times>(),
            Coherence::Coherent,
        )?;
        let f64_bytes = std::mem::size_of::<f64>() as u64;
        let entries: Vec<hp_block> = pattern
            .blocks
            .iter()
            .zip(&offsets)
            .map(|(block, &off)| hp_block {
                send: send.device_addr() + off as u64 * f64_bytes,
                send_device: 0,
                recv: recv.device_addr() + off as u64 * f64_bytes,
                elems: block.elems,
                source: block.source,
                dest: block.dest,
            })
            .collect();
        // SAFETY: table was allocated for exactly n hp_block entries, page-aligned by the backend;
        // no kernel runs yet.
        unsafe {
            std::ptr::copy_nonoverlapping(entries.as_ptr(), table.host_ptr().cast::<hp_block>(), n);
        }
        Ok(ExchangeBuffers {
            send_device: None,
            send: Shared::new(send),
            recv: Shared::new(recv),
            table,
            checks,
            times,
            offsets,
            pattern: pattern.clone(),
        })
    }

    /// Adds a device-memory copy of the send buffers, same layout, and points every block's
    /// `send_device` at its part (memcpy taskqueue, thesis 3.5).
    ///
    /// # Errors
    /// The backend's allocation error.
    pub fn attach_device_send(&mut self, backend: &B) -> Result<()> {
        let device = backend.alloc_device(self.send.lock().len_bytes())?;
        let table = self.table.host_ptr().cast::<hp_block>();
        for (b, &off) in self.offsets.iter().enumerate() {
            let addr = device.device_addr() + (off * std::mem::size_of::<f64>()) as u64;
            // SAFETY: the table holds one entry per block; no kernel runs while buffers are set
            // up (&mut self).
            unsafe { (*table.add(b)).send_device = addr };
        }
        self.send_device = Some(device);
        Ok(())
    }

    /// The device copy of the send buffers, if attached.
    pub fn device_send(&self) -> Option<&B::DeviceMemory> {
        self.send_device.as_ref()
    }

    /// Device addresses (kernels' view) of block `block`'s send and receive buffers.
    pub fn device_addrs(&self, block: usize) -> (u64, u64) {
        let offset = 8 * self.offsets[block] as u64;
        (
            self.send.lock().device_addr() + offset,
            self.recv.lock().device_addr() + offset,
        )
    }

    /// The pinned send buffers (locked: the transport may hold a share of them).
    pub fn pinned_send(&self) -> MutexGuard<'_, B::PinnedMemory> {
        self.send.lock()
    }

    /// Byte offset and length of block `block`'s buffers inside their allocations.
    pub fn byte_range(&self, block: usize) -> (usize, usize) {
        let f64_bytes = std::mem::size_of::<f64>();
        (
            self.offsets[block] * f64_bytes,
            self.pattern.blocks[block].elems as usize * f64_bytes,
        )
    }

    /// The pattern these buffers were laid out for.
    pub fn pattern(&self) -> &RankPattern {
        &self.pattern
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.offsets.len()
    }

    fn region(&self, memory: &Shared<B::PinnedMemory>, block: usize) -> HostRegion {
        let elems = self.pattern.blocks[block].elems as usize;
        let owner: Arc<dyn Send + Sync> = memory.memory.clone();
        // SAFETY: (1) the block's range [offset, offset + elems) lies inside the allocation by
        // layout(), which lives as long as any share of it, `owner` included; (2) the
        // strategies hand a region to the transport only between the kernels that touch it
        // (pack before a send, unpack after the receive completed).
        unsafe { HostRegion::new(memory.host.add(self.offsets[block]), elems, owner) }
    }

    /// Block `block`'s send buffer, for the transport.
    pub fn send_region(&self, block: usize) -> HostRegion {
        self.region(&self.send, block)
    }

    /// Block `block`'s receive buffer, for the transport.
    pub fn recv_region(&self, block: usize) -> HostRegion {
        self.region(&self.recv, block)
    }

    /// The kernels' argument for one iteration.
    pub fn kernel_args(&self, rank: i32, iteration: u32, verify: Verify) -> hp_exchange_args {
        hp_exchange_args {
            blocks: self.table.device_addr(),
            checks: self.checks.device_addr(),
            times: self.times.device_addr(),
            num_blocks: self.blocks() as u32,
            rank,
            iteration,
            verify: verify.code(),
        }
    }

    /// Checks every block's record must show after unpack with `threads` threads (SPEC 5).
    pub fn planned_checks(&self, verify: Verify, threads: u32) -> Vec<u64> {
        self.pattern
            .blocks
            .iter()
            .map(|b| planned_checks(verify, threads, b.elems))
            .collect()
    }

    /// The coherence the send and receive buffers were asked for and got.
    pub fn coherence(&self) -> (Coherence, Coherence) {
        self.send.coherence
    }

    /// Reads every block's check record and zeroes it for the next iteration.
    ///
    /// Reading them while an unpack kernel may still write them cannot be written in safe code:
    ///
    /// ```compile_fail,E0133
    /// use haloport_core::exchange::ExchangeBuffers;
    /// fn read_too_early<B: haloport_core::Backend>(buffers: &mut ExchangeBuffers<B>) {
    ///     let _ = buffers.take_checks(); // an unpack may still be running
    /// }
    /// ```
    ///
    /// # Safety
    /// 1. No kernel that writes the check records is queued or running: the stream of every
    ///    unpack launched on these buffers was seen idle after that launch.
    pub unsafe fn take_checks(&mut self) -> Vec<hp_block_check> {
        let n = self.blocks();
        let ptr = self.checks.host_ptr().cast::<hp_block_check>();
        // SAFETY: checks holds n records; no kernel writes them now (contract, 1); &mut self
        // keeps other CPU users out.
        unsafe {
            let taken = std::slice::from_raw_parts(ptr, n).to_vec();
            std::ptr::write_bytes(ptr, 0, n);
            taken
        }
    }

    /// [`Self::take_checks`] for a strategy that tracks whether its kernels were seen idle.
    ///
    /// # Errors
    /// [`Error::Internal`](crate::Error::Internal) when `kernels_idle` is false.
    pub fn take_checks_when_idle(&mut self, kernels_idle: bool) -> Result<Vec<hp_block_check>> {
        ensure_idle(kernels_idle)?;
        // SAFETY: the caller saw every stream its kernels ran on idle after the last launch.
        Ok(unsafe { self.take_checks() })
    }

    /// [`Self::read_times`] for a strategy that tracks whether its kernels were seen idle.
    ///
    /// # Errors
    /// [`Error::Internal`](crate::Error::Internal) when `kernels_idle` is false.
    pub fn read_times_when_idle(&self, kernels_idle: bool) -> Result<Vec<hp_block_times>> {
        ensure_idle(kernels_idle)?;
        // SAFETY: as for take_checks_when_idle.
        Ok(unsafe { self.read_times() })
    }

    /// Reads every block's device timestamps of the last iteration.
    ///
    /// # Safety
    /// 1. No kernel that writes the timestamps is queued or running (as for
    ///    [`Self::take_checks`]).
    pub unsafe fn read_times(&self) -> Vec<hp_block_times> {
        // SAFETY: times holds one record per block; no kernel writes them now (contract, 1).
        unsafe {
            std::slice::from_raw_parts(
                self.times.host_ptr().cast::<hp_block_times>(),
                self.blocks(),
            )
            .to_vec()
        }
    }
}

/// The error for reading kernel output (check records, timestamps) while kernels that write it
/// may still run: after an iteration that failed before its kernels were seen finished.
///
/// # Errors
/// [`Error::Internal`](crate::Error::Internal) when `kernels_idle` is false.
pub fn ensure_idle(kernels_idle: bool) -> crate::Result<()> {
    if kernels_idle {
        Ok(())
    } else {
        Err(crate::Error::Internal(
            "check records and timestamps read while the kernels writing them may still run (the last iteration failed)".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::BlockSpec;

    #[test]
    fn blocks_start_aligned_and_do_not_overlap() {
        let pattern = RankPattern {
            rank: 0,
            blocks: [1_u64, 64, 65, 130_000]
                .iter()
                .map(|&elems| BlockSpec {
                    elems,
                    dest: 0,
                    source: 0,
                })
                .collect(),
        };
        let (offsets, total) = layout(&pattern);
        assert_eq!(offsets, vec![0, 64, 128, 256]);
        assert_eq!(total, 256 + 130_048);
        for (b, block) in pattern.blocks.iter().enumerate() {
            let end = offsets[b] + block.elems as usize;
            assert!(end <= offsets.get(b + 1).copied().unwrap_or(total));
            assert_eq!(offsets[b] % ALIGN_ELEMS, 0);
        }
    }
}
