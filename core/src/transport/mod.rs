//! Transports move a block's bytes from one rank to another (SPEC 4, 12: strategy, transport
//! and backend are separate axes).
//!
//! A strategy decides *when* to pack, send, wait and unpack; a transport decides *how* bytes
//! travel and *where* the buffers they travel from live. Every transport is a [`Transport`]: it
//! names itself, says what it can do ([`Capabilities`]) and closes iterations with a barrier.
//! How transfers start splits them in two:
//!
//! - [`HostTransport`]: the CPU starts and completes each transfer. At set-up
//!   ([`HostTransport::register`]) it allocates the block buffers where it moves them from:
//!   host-staged MPI ([`mpi::MpiTransport`]) stages them in pinned host memory; GPU-aware MPI
//!   would hand out device memory instead, and no strategy would change.
//! - GPU-initiated: kernels store straight into the peer's buffers and raise its flags. At
//!   set-up the transport allocates and exports the receive buffers and flags, exchanges the
//!   handles over MPI and writes the table the kernels follow; the device-direct transport
//!   ([`ipc::IpcTransport`]) does so within a node and chooses host-staged MPI per peer for
//!   ranks on other nodes.
//!
//! Requests are kept per block: block b's receive is request b, its send is request b, and the
//! MPI tag is b (SPEC 3). Every wait is polled against a deadline and ends in
//! [`Error::Timeout`](crate::Error::Timeout) naming the blocks still pending: the library never
//! ends the process, the caller decides. Faults for tests are injected in one place,
//! [`faulty`], for every strategy alike.

// HostRegion carries a raw pointer into pinned memory across the transport boundary.
#![allow(unsafe_code)]

pub mod faulty;
pub mod gpu_aware;
pub mod ipc;
mod kind;
pub mod mpi;
pub mod nccl;
pub mod node;

pub use faulty::Fault;
pub use gpu_aware::{GpuAwareMpi, MpiDeviceSupport};
pub use kind::TransportKind;

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Coherence};
use crate::error::Result;
use crate::exchange::ExchangeBuffers;
use crate::pattern::RankPattern;

/// A block's buffer that a transport may read (send) or write (receive): in host memory, or in
/// device memory where GPU-aware MPI moves it.
///
/// It carries a share of its allocation (`owner`): a transport keeps the region, and so the
/// memory, alive for as long as a request on it is pending, and leaks it rather than free it
/// when a request cannot be completed (see [`mpi::MpiTransport`]'s `Drop`). Only
/// [`crate::exchange::ExchangeBuffers`] makes these, from memory it owns.
#[derive(Clone)]
pub struct HostRegion {
    ptr: *mut f64,
    elems: usize,
    owner: Arc<dyn Send + Sync>,
}

// SAFETY: a HostRegion is an address, a length and a share of the allocation behind them
// (itself Send + Sync); who touches the memory when is ordered by the strategy and the
// transport's contract (post to completion: the transport's).
unsafe impl Send for HostRegion {}

impl std::fmt::Debug for HostRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRegion")
            .field("ptr", &self.ptr)
            .field("elems", &self.elems)
            .finish_non_exhaustive()
    }
}

impl HostRegion {
    /// # Safety
    /// 1. `ptr` is valid for reads and writes of `elems` f64 values, aligned for f64, for as
    ///    long as `owner` lives: by the CPU (host memory), or by the MPI library alone
    ///    (device memory handed to GPU-aware MPI, which the CPU never dereferences).
    /// 2. From a receive's post until the transport reports it complete, only the transport
    ///    writes the region; from a send's start until it completes, nobody writes it.
    pub(crate) unsafe fn new(
        ptr: *mut f64,
        elems: usize,
        owner: Arc<dyn Send + Sync>,
    ) -> HostRegion {
        HostRegion { ptr, elems, owner }
    }

    /// First element's address.
    pub fn as_ptr(&self) -> *mut f64 {
        self.ptr
    }

    /// Number of f64 elements.
    pub fn elems(&self) -> usize {
        self.elems
    }

    /// The first `elems` elements of this region (fault injection sends a block short).
    pub fn prefix(&self, elems: usize) -> HostRegion {
        HostRegion {
            ptr: self.ptr,
            elems: elems.min(self.elems),
            owner: Arc::clone(&self.owner),
        }
    }
}

/// What a transport can do (SPEC 12); a strategy that needs what a transport lacks refuses it
/// by name before anything runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// The CPU starts each transfer and waits for it ([`HostTransport`]).
    pub host_initiated: bool,
    /// Kernels start transfers themselves: they store into the peer's buffers and raise its
    /// flags, with no CPU in the data path.
    pub gpu_initiated: bool,
    /// Block buffers may live in device memory (otherwise they are staged in pinned host
    /// memory).
    pub device_buffers: bool,
    /// Transfers can be ordered on a GPU stream (NCCL/RCCL would be).
    pub stream_ordered: bool,
}

impl Capabilities {
    /// The capabilities in words, for messages.
    pub fn describe(&self) -> String {
        let mut words = vec![if self.gpu_initiated {
            "GPU-initiated"
        } else {
            "host-initiated"
        }];
        words.push(if self.device_buffers {
            "device buffers"
        } else {
            "staged in pinned host memory"
        });
        if self.stream_ordered {
            words.push("stream-ordered");
        }
        words.join(", ")
    }
}

/// What every transport has.
pub trait Transport {
    /// The transport's name, as `--transport` spells it.
    fn name(&self) -> &'static str;

    /// What the transport can do.
    fn capabilities(&self) -> Capabilities;

    /// This process's rank.
    fn rank(&self) -> i32;

    /// Number of ranks.
    fn size(&self) -> i32;

    /// Waits until every rank reached this point (the closing barrier of an iteration).
    fn barrier(&mut self, deadline: Instant) -> Result<()>;
}

/// A transport whose transfers the CPU starts and completes.
///
/// It holds at most one pending receive and one pending send per block. Every wait takes a
/// deadline: a message that never comes ends in [`Error::Timeout`](crate::Error::Timeout)
/// naming the block, not a hang.
pub trait HostTransport: Transport {
    /// Set-up, once before any exchange: prepares one request slot per block of `pattern` and
    /// allocates the block buffers where this transport moves them from (with `coherence`
    /// where it stages them in host memory), with the kernel tables beside them.
    ///
    /// # Errors
    /// Allocation errors; [`Error::Internal`](crate::Error::Internal) while requests are
    /// pending.
    fn register<B: Backend>(
        &mut self,
        backend: &B,
        pattern: &RankPattern,
        coherence: Coherence,
    ) -> Result<ExchangeBuffers<B>>;

    /// Posts the receive of block `block` from rank `source` into `region` (MPI_Irecv). The
    /// transport owns the region's contents until it reports the receive complete.
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
}
