//! Fault injection, in one place for every strategy and transport: [`Faulty`] wraps any
//! host-initiated transport, and `inject_into_chunks` rewrites the table a GPU-initiated
//! transport's kernels follow. One [`Fault`] is injected on every rank in every iteration.
//!
//! - `drop-send=B`: block B's sends are never started; its receivers must time out naming it.
//! - `short-send=B`: block B is sent one element short (legal MPI: a receive may be posted for
//!   more than arrives); verification must report the block.
//! - `corrupt-recv=B`: element 0 of block B's receive buffer is overwritten when the receive
//!   completes, before the completion is reported to the strategy; verification must report it.
//!   (Host-initiated only: GPU-initiated transports have no CPU step between arrival and
//!   unpack.)

// Corrupting a received buffer writes through the region's raw pointer.
#![allow(unsafe_code)]

use std::time::Instant;

use super::{Capabilities, HostRegion, HostTransport, Transport};
use crate::backend::{Backend, Coherence};
use crate::error::Result;
use crate::exchange::ExchangeBuffers;
use crate::pattern::RankPattern;
use crate::shared::hp_ipc_chunk;

/// Faults a run can inject on purpose, to prove that checks and time-outs catch them. The
/// [`Faulty`] transport injects them, so every strategy gets
/// them alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Overwrite element 0 of this block's receive buffer after it arrived and before unpack, on
    /// every rank, in every iteration: verification must report it.
    CorruptRecv {
        /// The block whose receive buffer is corrupted.
        block: usize,
    },
    /// Never send this block, on every rank: its receivers must end with a time-out error
    /// naming the block, not hang.
    DropSend {
        /// The block whose send is never posted.
        block: usize,
    },
    /// Send this block one element short (legal MPI: a receive may be posted for more than
    /// arrives), on every rank: verification must report the block.
    ShortSend {
        /// The block sent one element short.
        block: usize,
    },
}

impl Fault {
    /// The block the fault names.
    pub fn block(self) -> usize {
        match self {
            Fault::CorruptRecv { block }
            | Fault::DropSend { block }
            | Fault::ShortSend { block } => block,
        }
    }

    /// Checks that the fault names a block of the pattern (the largest any rank has).
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the fault and the blocks there are.
    pub fn check_block_exists(self, blocks: usize) -> crate::Result<()> {
        if self.block() < blocks {
            return Ok(());
        }
        Err(crate::Error::InvalidInput(format!(
            "--inject {self}: block {} does not exist; the pattern has blocks 0 to {}",
            self.block(),
            blocks.saturating_sub(1)
        )))
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::CorruptRecv { block } => write!(f, "corrupt-recv={block}"),
            Fault::DropSend { block } => write!(f, "drop-send={block}"),
            Fault::ShortSend { block } => write!(f, "short-send={block}"),
        }
    }
}

impl std::str::FromStr for Fault {
    type Err = crate::Error;

    /// `corrupt-recv=BLOCK`, `drop-send=BLOCK` or `short-send=BLOCK`.
    fn from_str(s: &str) -> crate::Result<Fault> {
        let bad = || {
            crate::Error::InvalidInput(format!(
                "unknown fault '{s}'; known faults: corrupt-recv=BLOCK, drop-send=BLOCK, short-send=BLOCK"
            ))
        };
        let (kind, arg) = s.split_once('=').ok_or_else(bad)?;
        let block = arg.parse().map_err(|_| {
            crate::Error::InvalidInput(format!("fault '{s}': '{arg}' is not a block number"))
        });
        match kind {
            "corrupt-recv" => Ok(Fault::CorruptRecv { block: block? }),
            "drop-send" => Ok(Fault::DropSend { block: block? }),
            "short-send" => Ok(Fault::ShortSend { block: block? }),
            _ => Err(bad()),
        }
    }
}

/// The value `corrupt-recv` writes: no pack ever writes a negative value.
pub const CORRUPT_VALUE: f64 = -1.0;

/// A transport that injects `fault` (or nothing) into `inner`.
pub struct Faulty<T: Transport> {
    inner: T,
    fault: Option<Fault>,
    /// `corrupt-recv`: the region of the faulty block's pending receive.
    corrupt_target: Option<HostRegion>,
}

impl<T: Transport> Faulty<T> {
    /// Wraps `inner`; with `fault == None` every call passes straight through.
    pub fn new(inner: T, fault: Option<Fault>) -> Faulty<T> {
        Faulty {
            inner,
            fault,
            corrupt_target: None,
        }
    }

    /// The region to send for block `block`, or `None` when its send is dropped.
    fn outgoing(&self, block: usize, region: HostRegion) -> Option<HostRegion> {
        match self.fault {
            Some(Fault::DropSend { block: b }) if b == block => None,
            Some(Fault::ShortSend { block: b }) if b == block => {
                Some(region.prefix(region.elems().saturating_sub(1)))
            }
            _ => Some(region),
        }
    }

    /// `corrupt-recv`: called when block `block`'s receive completed, before the strategy
    /// learns of it.
    fn received(&mut self, block: usize) {
        if !matches!(self.fault, Some(Fault::CorruptRecv { block: b }) if b == block) {
            return;
        }
        if let Some(region) = self.corrupt_target.take() {
            if region.elems() > 0 {
                // SAFETY: the receive into this region just completed and its completion has
                // not been reported yet, so the transport still owns the region's contents
                // (HostRegion's contract, 2); the region holds at least one element, and its
                // allocation lives as long as `region`.
                unsafe { region.as_ptr().write_volatile(CORRUPT_VALUE) };
            }
        }
    }
}

impl<T: Transport> Transport for Faulty<T> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn rank(&self) -> i32 {
        self.inner.rank()
    }

    fn size(&self) -> i32 {
        self.inner.size()
    }

    fn barrier(&mut self, deadline: Instant) -> Result<()> {
        self.inner.barrier(deadline)
    }
}

impl<T: HostTransport> HostTransport for Faulty<T> {
    fn register<B: Backend>(
        &mut self,
        backend: &B,
        pattern: &RankPattern,
        coherence: Coherence,
    ) -> Result<ExchangeBuffers<B>> {
        self.inner.register(backend, pattern, coherence)
    }

    fn post_recv(&mut self, block: usize, region: HostRegion, source: i32) -> Result<()> {
        if matches!(self.fault, Some(Fault::CorruptRecv { block: b }) if b == block) {
            self.corrupt_target = Some(region.clone());
        }
        self.inner.post_recv(block, region, source)
    }

    fn send(
        &mut self,
        block: usize,
        region: HostRegion,
        dest: i32,
        deadline: Instant,
    ) -> Result<()> {
        match self.outgoing(block, region) {
            Some(region) => self.inner.send(block, region, dest, deadline),
            None => Ok(()),
        }
    }

    fn isend(&mut self, block: usize, region: HostRegion, dest: i32) -> Result<()> {
        match self.outgoing(block, region) {
            Some(region) => self.inner.isend(block, region, dest),
            None => Ok(()),
        }
    }

    fn wait_recvs(&mut self, deadline: Instant) -> Result<()> {
        self.inner.wait_recvs(deadline)?;
        if let Some(fault) = self.fault {
            self.received(fault.block());
        }
        Ok(())
    }

    fn test_any_recv(&mut self) -> Result<Option<usize>> {
        let done = self.inner.test_any_recv()?;
        if let Some(block) = done {
            self.received(block);
        }
        Ok(done)
    }

    fn pending_recvs(&self) -> usize {
        self.inner.pending_recvs()
    }

    fn wait_sends(&mut self, deadline: Instant) -> Result<()> {
        self.inner.wait_sends(deadline)
    }
}

/// Injects `fault` into the chunk table of a GPU-initiated transport, so the kernels stay free
/// of fault code: a dropped block's chunks store nothing and raise `scratch_flag` (a word of
/// the sender's own that nobody waits for) instead of the destination's arrival flag; a
/// shortened block's last chunk stores one element fewer.
pub(crate) fn inject_into_chunks(
    fault: Option<Fault>,
    chunks: &mut [hp_ipc_chunk],
    scratch_flag: u64,
) {
    for chunk in chunks {
        match fault {
            Some(Fault::DropSend { block }) if chunk.block as usize == block => {
                chunk.send_end = chunk.begin;
                chunk.dest_arrival = scratch_flag;
                chunk.dest_flag_parity_bytes = 0;
            }
            Some(Fault::ShortSend { block })
                if chunk.block as usize == block
                    && chunk.end == chunk.elems
                    && chunk.end > chunk.begin =>
            {
                chunk.send_end = chunk.end - 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block `block`'s chunk of elements [begin, end) of `elems`, raising flag 1000 + index.
    fn chunk(block: u32, begin: u64, end: u64, elems: u64, index: u64) -> hp_ipc_chunk {
        hp_ipc_chunk {
            block,
            elems,
            begin,
            end,
            send_end: end,
            dest_arrival: 1000 + index,
            dest_flag_parity_bytes: 64,
            ..hp_ipc_chunk::default()
        }
    }

    /// What fault injection may change, and the range it must not.
    fn view(chunks: &[hp_ipc_chunk]) -> Vec<[u64; 5]> {
        chunks
            .iter()
            .map(|c| {
                [
                    c.begin,
                    c.end,
                    c.send_end,
                    c.dest_arrival,
                    c.dest_flag_parity_bytes,
                ]
            })
            .collect()
    }

    fn table() -> Vec<hp_ipc_chunk> {
        vec![
            chunk(0, 0, 1, 1, 0),
            chunk(1, 0, 500, 1000, 1),
            chunk(1, 500, 1000, 1000, 2),
        ]
    }

    #[test]
    fn a_dropped_block_stores_nothing_and_raises_only_the_scratch_flag() {
        let mut chunks = table();
        inject_into_chunks(Some(Fault::DropSend { block: 1 }), &mut chunks, 7);
        assert_eq!(
            view(&chunks[..1]),
            view(&table()[..1]),
            "other blocks are untouched"
        );
        for c in &chunks[1..] {
            assert_eq!(c.send_end, c.begin, "stores nothing");
            assert_eq!((c.dest_arrival, c.dest_flag_parity_bytes), (7, 0));
            assert_eq!(c.end - c.begin, 500, "its receive side is untouched");
        }
    }

    #[test]
    fn a_short_block_loses_only_its_last_element() {
        let mut chunks = table();
        inject_into_chunks(Some(Fault::ShortSend { block: 1 }), &mut chunks, 7);
        assert_eq!(view(&chunks[..2]), view(&table()[..2]));
        assert_eq!(chunks[2].send_end, 999);
        assert_eq!(chunks[2].dest_arrival, 1002, "its flag is raised as ever");
        let mut untouched = table();
        inject_into_chunks(None, &mut untouched, 7);
        inject_into_chunks(Some(Fault::CorruptRecv { block: 1 }), &mut untouched, 7);
        assert_eq!(view(&untouched), view(&table()));
    }
}
