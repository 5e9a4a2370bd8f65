//! Transports move a block's bytes from one rank to another (SPEC 4: strategy, transport and
//! backend are separate axes).
//!
//! A strategy decides *when* to post, send and wait; a transport decides *how* bytes travel.
//! Today's transport is host-staged MPI ([`mpi::MpiTransport`]): buffers in pinned host memory,
//! handed to MPI. GPU-aware MPI, device-direct peer memory and NCCL/RCCL slot in beside it as
//! further implementations of [`Transport`].
//!
//! Requests are kept per block: block b's receive is request b, its send is request b, and the
//! MPI tag is b (SPEC 3).

// HostRegion carries a raw pointer into pinned memory across the transport boundary.
#![allow(unsafe_code)]

pub mod mpi;

use std::time::Instant;

use crate::error::Result;

/// A block's buffer in host memory that a transport may read (send) or write (receive).
///
/// Only [`ExchangeBuffers`](crate::exchange::ExchangeBuffers) makes these, from memory it owns
/// and keeps alive for as long as any transport request on it may be pending.
#[derive(Debug, Clone, Copy)]
pub struct HostRegion {
    ptr: *mut f64,
    elems: usize,
}

// SAFETY: a HostRegion is an address and a length; the memory it names is pinned host memory
// owned by ExchangeBuffers, which is itself Send. Accesses are ordered by the strategy.
unsafe impl Send for HostRegion {}

impl HostRegion {
    /// # Safety
    /// 1. `ptr` is valid for reads and writes of `elems` f64 values, aligned for f64.
    /// 2. The memory stays allocated while any transport request on this region is pending.
    pub(crate) unsafe fn new(ptr: *mut f64, elems: usize) -> HostRegion {
        HostRegion { ptr, elems }
    }

    /// First element's address.
    pub fn as_ptr(&self) -> *mut f64 {
        self.ptr
    }

    /// Number of f64 elements.
    pub fn elems(&self) -> usize {
        self.elems
    }
}

/// Moves blocks between ranks.
///
/// A transport holds at most one pending receive and one pending send per block. Every wait
/// takes a deadline: a message that never comes ends in [`Error::Timeout`](crate::Error::Timeout)
/// naming the block, not a hang.
pub trait Transport {
    /// This process's rank.
    fn rank(&self) -> i32;

    /// Number of ranks.
    fn size(&self) -> i32;

    /// Prepares request slots for `blocks` blocks; called once before any exchange.
    fn prepare(&mut self, blocks: usize) -> Result<()>;

    /// Posts the receive of block `block` from rank `source` into `region` (MPI_Irecv).
    fn post_recv(&mut self, block: usize, region: HostRegion, source: i32) -> Result<()>;

    /// Sends block `block` to rank `dest` and returns when `region` may be reused (MPI_Send).
    fn send(
        &mut self,
        block: usize,
        region: HostRegion,
        dest: i32,
        deadline: Instant,
    ) -> Result<()>;

    /// Starts sending block `block` to rank `dest` (MPI_Isend); completed by [`Self::wait_sends`].
    fn isend(&mut self, block: usize, region: HostRegion, dest: i32) -> Result<()>;

    /// Waits for all posted receives (MPI_Waitall).
    fn wait_recvs(&mut self, deadline: Instant) -> Result<()>;

    /// Tests whether any posted receive completed (MPI_Testany); returns its block, or `None`
    /// when none completed yet. Each completed receive is returned once.
    fn test_any_recv(&mut self) -> Result<Option<usize>>;

    /// Number of receives posted and not yet completed.
    fn pending_recvs(&self) -> usize;

    /// Waits for all non-blocking sends (MPI_Waitall).
    fn wait_sends(&mut self, deadline: Instant) -> Result<()>;

    /// Waits until every rank reached this point (MPI_Barrier).
    fn barrier(&mut self, deadline: Instant) -> Result<()>;
}
