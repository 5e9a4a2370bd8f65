//! The taskqueue's control block: per-block flags in coherent pinned memory that the persistent
//! kernel and the CPU hand to each other (layout: `hp_taskqueue_args` in
//! `kernels-cu/haloport_shared.h`), plus the queue's lock and tail in device memory.
//!
//! Each flag is written by one side and read by the other; the CPU side here uses atomics with
//! acquire loads and release stores, matching the kernel's system-scope acquire/release. Values
//! are iteration epochs, so nothing is reset between iterations. This module turns raw pinned
//! addresses into atomics and says why each is sound.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::backend::{Backend, Coherence, DeviceMemory, PinnedMemory};
use crate::error::{Error, Result};
use crate::shared::{self, hp_exchange_args, hp_taskqueue_args};

/// The smallest flag stride: one u64 queue entry.
pub const MIN_STRIDE: u32 = 8;

/// Flags for `blocks` blocks, `stride` bytes apart.
pub struct ControlBlock<B: Backend> {
    memory: B::PinnedMemory,
    queue: B::DeviceMemory,
    blocks: usize,
    stride: usize,
}

/// Which of the per-block flag arrays.
#[derive(Debug, Clone, Copy)]
enum Array {
    Tasks = 0,
    PackGo = 1,
    UnpackGo = 2,
    States = 3,
}

impl<B: Backend> ControlBlock<B> {
    /// Allocates the flags (zeroed: no epoch is 0) and the queue's lock and tail.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a stride that is not a multiple of 8 of at least 8 bytes;
    /// allocation errors.
    pub fn new(backend: &B, blocks: usize, stride: u32) -> Result<Self> {
        if stride < MIN_STRIDE || stride % MIN_STRIDE != 0 {
            return Err(Error::InvalidInput(format!(
                "flag stride {stride} bytes: must be a multiple of {MIN_STRIDE}, at least {MIN_STRIDE}"
            )));
        }
        let stride = stride as usize;
        // Four per-block arrays, then the abort flag on its own stride.
        let bytes = (4 * blocks + 1) * stride;
        Ok(ControlBlock {
            memory: backend.alloc_pinned(bytes, Coherence::Coherent)?,
            queue: backend.alloc_device(8)?,
            blocks,
            stride,
        })
    }

    fn offset(&self, array: Array, index: usize) -> usize {
        (array as usize * self.blocks + index) * self.stride
    }

    fn abort_offset(&self) -> usize {
        4 * self.blocks * self.stride
    }

    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: offset + 4 <= the allocation (offsets come from offset()/abort_offset() with
        // index < blocks); the allocation is page-aligned and offsets are multiples of 8, so the
        // address is aligned; the memory lives as long as &self; every access from either side
        // is atomic.
        unsafe { AtomicU32::from_ptr(self.memory.host_ptr().add(offset).cast::<u32>()) }
    }

    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: as for u32_at; the stride is a multiple of 8, so 8-byte entries are aligned.
        unsafe { AtomicU64::from_ptr(self.memory.host_ptr().add(offset).cast::<u64>()) }
    }

    /// The kernel's argument for one iteration.
    pub fn kernel_args(
        &self,
        exchange: hp_exchange_args,
        mode: u32,
        epoch: u32,
        timeout_ticks: u64,
        poll_backoff_ns: u32,
    ) -> hp_taskqueue_args {
        let base = self.memory.device_addr();
        let at = |array| base + self.offset(array, 0) as u64;
        hp_taskqueue_args {
            exchange,
            tasks: at(Array::Tasks),
            pack_go: at(Array::PackGo),
            unpack_go: at(Array::UnpackGo),
            states: at(Array::States),
            abort_flag: base + self.abort_offset() as u64,
            queue_lock: self.queue.device_addr(),
            queue_tail: self.queue.device_addr() + 4,
            timeout_ticks,
            mode,
            stride: self.stride as u32,
            epoch,
            poll_backoff_ns,
        }
    }

    /// Channel mode: has block `block` posted its task for `epoch`?
    pub fn channel_task(&self, block: usize, epoch: u32) -> bool {
        self.u32_at(self.offset(Array::Tasks, block))
            .load(Ordering::Acquire)
            == epoch
    }

    /// Queue mode: the block in queue slot `slot` if its entry belongs to `epoch`.
    pub fn queue_task(&self, slot: usize, epoch: u32) -> Option<usize> {
        let entry = self
            .u64_at(self.offset(Array::Tasks, slot % self.blocks))
            .load(Ordering::Acquire);
        ((entry >> 32) as u32 == epoch && entry & 0xffff_ffff != 0)
            .then(|| (entry & 0xffff_ffff) as usize - 1)
    }

    /// Memcpy mode: lets block `block` pack (its H2D copy finished).
    pub fn release_pack(&self, block: usize, epoch: u32) {
        self.u32_at(self.offset(Array::PackGo, block))
            .store(epoch, Ordering::Release);
    }

    /// Lets block `block` unpack (its receive completed).
    pub fn release_unpack(&self, block: usize, epoch: u32) {
        self.u32_at(self.offset(Array::UnpackGo, block))
            .store(epoch, Ordering::Release);
    }

    /// The state block `block` last published (`HP_TQ_*`).
    pub fn state(&self, block: usize) -> u32 {
        self.u32_at(self.offset(Array::States, block))
            .load(Ordering::Acquire)
    }

    /// Marks every block not started; call before each launch, while no kernel runs, so that a
    /// time-out report never shows a state left over from the previous iteration.
    pub fn reset_states(&self) {
        for block in 0..self.blocks {
            self.u32_at(self.offset(Array::States, block))
                .store(shared::HP_TQ_IDLE, Ordering::Relaxed);
        }
    }

    /// Makes every block waiting in iteration `epoch` give up.
    pub fn raise_abort(&self, epoch: u32) {
        self.u32_at(self.abort_offset())
            .store(epoch, Ordering::Release);
    }
}

/// Words for a kernel state, for error messages.
pub fn state_name(state: u32) -> &'static str {
    match state {
        shared::HP_TQ_IDLE => "not started",
        shared::HP_TQ_WAIT_COPY => "waiting for its H2D copy",
        shared::HP_TQ_PACKING => "packing",
        shared::HP_TQ_WAIT_RECV => "waiting for its go flag (receive not arrived)",
        shared::HP_TQ_UNPACKING => "unpacking",
        shared::HP_TQ_DONE => "done",
        shared::HP_TQ_TIMED_OUT => "timed out on the device",
        shared::HP_TQ_ABORTED => "aborted by the CPU",
        _ => "in an unknown state",
    }
}
