//! Device-direct transport within a node (SPEC 12, `ipc`): every rank keeps its receive buffers
//! and flags in device memory, exports them once at set-up, and its peers' kernels store
//! straight into them (CUDA/HIP IPC over NVLink/xGMI; the host backend through memory shared
//! between the processes of a node).
//!
//! Set-up, collective over the job: find each rank's node (`MPI_Comm_split_type(SHARED)`),
//! allocate the receive buffers (two slots, so iteration e + 1 never overwrites what a peer
//! still unpacks of iteration e) and the flags, export them, exchange the handles over MPI,
//! check that every peer is on this node and reachable (peer access), open the peers' memory,
//! and write the chunk table the kernels read (`hp_ipc_chunk`, `kernels-cu/haloport_shared.h`).
//! Every verdict is shared, so all ranks fail alike, with the same message, before any exchange.
//!
//! A pattern block is served by up to `max_chunks` chunks, one GPU block each (with one GPU
//! block per pattern block, 9 SMs cannot fill NVLink: `shared/device-facts.md`). The chunking
//! depends only on the block's size, so sender and receiver agree on it.
//!
//! Peers on another node fall back to host-staged MPI within the same exchange: the kernels
//! store those chunks into pinned host staging buffers and raise a pinned flag; the CPU sends a
//! block once all its chunks are staged, receives remote blocks into pinned buffers and raises
//! their chunks' arrival flags, which the same kernels wait for ([`RemoteStaging`]). For tests on
//! one machine, `HALOPORT_IPC_RANKS_PER_NODE=N` makes ranks count as nodes of N consecutive
//! ranks.

// The chunk table is written into pinned memory and copied to the device.
#![allow(unsafe_code)]

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use mpi::topology::{Communicator, SimpleCommunicator};

use crate::backend::{upload_table, Backend, Coherence, DeviceMemory, PinnedMemory};
use crate::error::{Error, Result};
use crate::exchange::{layout, ExchangeBuffers};
use crate::pattern::RankPattern;
use crate::shared::hp_ipc_chunk;
use crate::transport::faulty::inject_into_chunks;
use crate::transport::mpi::MpiTransport;
use crate::transport::node::{share_with_node, NodeShare};
use crate::transport::Fault;
use crate::transport::TransportKind;
use crate::transport::{Capabilities, HostTransport, Transport};

/// Below this many elements a chunk is not split further.
const MIN_CHUNK_ELEMS: u64 = 4096;

/// Elements per chunk in a job whose ranks have `patterns`: the largest block of any rank split
/// into `max_chunks`, never below `MIN_CHUNK_ELEMS`. Every rank computes it from the same
/// patterns, so senders and receivers agree; and every chunk moves at most that much, so the
/// GPU blocks of an exchange finish together instead of waiting for the largest block's.
pub fn chunk_elems_for(patterns: &[RankPattern], max_chunks: u32) -> u64 {
    let largest = patterns
        .iter()
        .flat_map(|p| &p.blocks)
        .map(|b| b.elems)
        .max()
        .unwrap_or(0);
    largest
        .div_ceil(u64::from(max_chunks.max(1)))
        .max(MIN_CHUNK_ELEMS)
}

/// Chunks serving a block of `elems` elements, `chunk_elems` at most each.
pub fn chunks_of(elems: u64, chunk_elems: u64) -> u32 {
    u32::try_from(elems.div_ceil(chunk_elems.max(1)).max(1)).unwrap_or(u32::MAX)
}

/// One chunk of one rank's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Pattern block.
    pub block: u32,
    /// Index within the block.
    pub index: u32,
    /// Elements [begin, end) of the block.
    pub begin: u64,
    /// See `begin`.
    pub end: u64,
    /// The block's size.
    pub elems: u64,
}

/// A rank's chunks in order (block by block), and where each block's chunks start.
pub fn plan_chunks(pattern: &RankPattern, chunk_elems: u64) -> (Vec<ChunkPlan>, Vec<usize>) {
    let mut chunks = Vec::new();
    let mut first = Vec::with_capacity(pattern.blocks.len());
    for (b, block) in pattern.blocks.iter().enumerate() {
        first.push(chunks.len());
        let n = u64::from(chunks_of(block.elems, chunk_elems));
        for k in 0..n {
            chunks.push(ChunkPlan {
                block: b as u32,
                index: k as u32,
                begin: k * block.elems / n,
                end: (k + 1) * block.elems / n,
                elems: block.elems,
            });
        }
    }
    (chunks, first)
}

/// One rank's side of the device-direct transport: its own receive buffers and flags, its
/// peers' opened memory, and the chunk table in device memory.
pub struct IpcTransport<B: Backend> {
    /// Host-staged MPI beside it: the closing barrier (and, later, remote peers).
    mpi: MpiTransport,
    // Drop order: the peers' memory is unmapped before ours is freed.
    /// Kept open (mapped) while our kernels may store into them.
    _peers: NodeShare<B>,
    table: B::DeviceMemory,
    /// Freed in `drop` only after every rank passed the closing barrier.
    recv: ManuallyDrop<B::DeviceMemory>,
    flags: ManuallyDrop<B::DeviceMemory>,
    chunks: Vec<ChunkPlan>,
    /// Blocks exchanged with ranks on other nodes, over host-staged MPI; `None` when every peer
    /// is on this node.
    remote: Option<RemoteStaging<B>>,
    /// Every flag has a twin per epoch parity (no rank of the job has a peer on another node).
    pipelines: bool,
    drain_timeout: Duration,
}

/// The host-staged part of a device-direct exchange: blocks whose destination or source is on
/// another node.
///
/// Pinned flags, u32, 4 bytes apart: `staged[c]` (kernel -> CPU: chunk c's store into the send
/// staging buffer is complete), `arrival[c]` (CPU -> kernel: chunk c's block arrived by MPI),
/// then a word that is always `u32::MAX` (the credit of a staged chunk: the CPU sends only after
/// the previous iteration's sends completed) and a scratch word (the credit a remote source
/// never reads).
pub struct RemoteStaging<B: Backend> {
    buffers: ExchangeBuffers<B>,
    flags: B::PinnedMemory,
    chunks: usize,
    /// Blocks sent to another node, with their chunks, and whether sent this iteration.
    out: Vec<(usize, Vec<usize>, bool)>,
    /// Blocks received from another node, with their chunks.
    incoming: Vec<(usize, Vec<usize>)>,
}

impl<B: Backend> RemoteStaging<B> {
    fn new(
        backend: &B,
        buffers: ExchangeBuffers<B>,
        mine: &RankPattern,
        chunks: &[ChunkPlan],
        here: i32,
        node_of: impl Fn(i32) -> i32,
    ) -> Result<Self> {
        let n = chunks.len();
        let flags = backend.alloc_pinned(4 * (2 * n + 2), Coherence::Coherent)?;
        let chunks_of_block = |b: usize| -> Vec<usize> {
            (0..n).filter(|&c| chunks[c].block as usize == b).collect()
        };
        let staging = RemoteStaging {
            buffers,
            flags,
            chunks: n,
            out: (0..mine.blocks.len())
                .filter(|&b| node_of(mine.blocks[b].dest) != here)
                .map(|b| (b, chunks_of_block(b), false))
                .collect(),
            incoming: (0..mine.blocks.len())
                .filter(|&b| node_of(mine.blocks[b].source) != here)
                .map(|b| (b, chunks_of_block(b)))
                .collect(),
        };
        staging.flag(2 * n).store(u32::MAX, Ordering::Release);
        Ok(staging)
    }

    fn flag(&self, index: usize) -> &AtomicU32 {
        // SAFETY: index < 2 * chunks + 2, inside the flags allocation of that many u32s; it is
        // page-aligned, so every entry is aligned; it lives as long as &self; kernels access it
        // only atomically.
        unsafe { AtomicU32::from_ptr(self.flags.host_ptr().cast::<u32>().add(index)) }
    }

    fn staged_addr(&self, c: usize) -> u64 {
        self.flags.device_addr() + 4 * c as u64
    }

    fn arrival_addr(&self, c: usize) -> u64 {
        self.flags.device_addr() + 4 * (self.chunks + c) as u64
    }

    fn always_addr(&self) -> u64 {
        self.flags.device_addr() + 4 * (2 * self.chunks) as u64
    }

    fn scratch_addr(&self) -> u64 {
        self.flags.device_addr() + 4 * (2 * self.chunks + 1) as u64
    }
}

/// Where a rank's allocations are, for the chunk table.
#[derive(Clone, Copy)]
struct Addresses {
    recv: u64,
    flags: u64,
}

impl<B: Backend> IpcTransport<B> {
    /// Sets up the device-direct transport for `patterns` (every rank's, as agreed), `max_chunks`
    /// chunks per block at most, flags `stride` bytes apart. Collective over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`], the same on every rank, when a backend cannot export or open
    /// device memory, when a peer is on another node, or when a device cannot reach its peer's;
    /// allocation and MPI errors.
    pub fn new(
        backend: &B,
        world: &SimpleCommunicator,
        patterns: &[RankPattern],
        max_chunks: u32,
        stride: u32,
        drain_timeout: Duration,
        fault: Option<Fault>,
    ) -> Result<Self> {
        let rank = world.rank();
        let mine = patterns
            .get(rank as usize)
            .ok_or_else(|| Error::Internal(format!("no pattern for rank {rank}")))?;
        let stride = u64::from(stride);
        let chunk_elems = chunk_elems_for(patterns, max_chunks);
        let (chunks, _) = plan_chunks(mine, chunk_elems);
        let slot_bytes = slot_bytes_of(mine);
        let wanted: Vec<i32> = mine
            .blocks
            .iter()
            .flat_map(|b| [b.dest, b.source])
            .collect();
        let (mut memories, share) = share_with_node(
            backend,
            world,
            || {
                Ok(vec![
                    backend.alloc_device(2 * slot_bytes as usize)?,
                    backend.alloc_device(flag_bytes(chunks.len(), stride) as usize)?,
                ])
            },
            &wanted,
            "the ipc transport",
        )?;
        let (flags, recv) = match (memories.pop(), memories.pop()) {
            (Some(flags), Some(recv)) => (flags, recv),
            _ => return Err(Error::Internal("ipc allocations vanished".into())),
        };
        let own = Addresses {
            recv: recv.device_addr(),
            flags: flags.device_addr(),
        };
        let address = |p: i32| -> Result<Addresses> {
            if p == rank {
                return Ok(own);
            }
            Ok(Addresses {
                recv: share.peer_addr(p, 0)?,
                flags: share.peer_addr(p, 1)?,
            })
        };
        let node_of = |r: i32| share.nodes()[r as usize];
        let here = node_of(rank);
        // Host-staged MPI beside it: the closing barrier, and the blocks of peers on other
        // nodes, staged where that transport stages them.
        let mut mpi = MpiTransport::new(world, drain_timeout)?;
        let remote = if mine
            .blocks
            .iter()
            .any(|b| node_of(b.dest) != here || node_of(b.source) != here)
        {
            let buffers = mpi.register(backend, mine, Coherence::Coherent)?;
            Some(RemoteStaging::new(
                backend, buffers, mine, &chunks, here, node_of,
            )?)
        } else {
            mpi.prepare(mine.blocks.len())?;
            None
        };
        let (own_offsets, _) = layout(mine);
        // A flag per epoch parity lets consecutive epochs' kernels run at once; only when no
        // rank of the job has a peer on another node (whose host-staged part has one staging
        // buffer and flag per block), decided alike on every rank from the same patterns.
        let pipelines = patterns.iter().enumerate().all(|(r, p)| {
            let node = node_of(r as i32);
            p.blocks
                .iter()
                .all(|b| node_of(b.dest) == node && node_of(b.source) == node)
        });
        let parity_on = u64::from(pipelines);
        let own_parity_bytes = parity_on * flag_parity_bytes(chunks.len(), stride);
        let mut entries = Vec::with_capacity(chunks.len());
        for (c, chunk) in chunks.iter().enumerate() {
            let block = &mine.blocks[chunk.block as usize];
            let (dest, source) = (block.dest, block.source);
            let b = chunk.block as usize;
            let k = chunk.index as usize;
            let mut entry = hp_ipc_chunk {
                block: chunk.block,
                reserved: 0,
                elems: chunk.elems,
                begin: chunk.begin,
                end: chunk.end,
                send_end: chunk.end,
                ..hp_ipc_chunk::default()
            };
            match &remote {
                // Outgoing to another node: into our send staging, announced to our CPU.
                Some(r) if node_of(dest) != here => {
                    entry.dest_recv = r.buffers.device_addrs(b).0;
                    entry.dest_slot_bytes = 0;
                    entry.dest_arrival = r.staged_addr(c);
                    entry.credit = r.always_addr();
                }
                _ => {
                    let dest_pattern = &patterns[dest as usize];
                    let (dest_offsets, _) = layout(dest_pattern);
                    let (dest_chunks, dest_first) = plan_chunks(dest_pattern, chunk_elems);
                    let to = address(dest)?;
                    entry.dest_recv = to.recv + 8 * dest_offsets[b] as u64;
                    entry.dest_slot_bytes = slot_bytes_of(dest_pattern);
                    entry.dest_arrival = to.flags + (dest_first[b] + k) as u64 * stride;
                    entry.dest_flag_parity_bytes =
                        parity_on * flag_parity_bytes(dest_chunks.len(), stride);
                    entry.credit = own.flags + (chunks.len() + c) as u64 * stride;
                    entry.flag_parity_bytes = own_parity_bytes;
                }
            }
            match &remote {
                // Incoming from another node: MPI delivers into our receive staging and our CPU
                // raises the arrival flag.
                Some(r) if node_of(source) != here => {
                    entry.recv = r.buffers.device_addrs(b).1;
                    entry.slot_bytes = 0;
                    entry.arrival = r.arrival_addr(c);
                    entry.source_credit = r.scratch_addr();
                }
                _ => {
                    let source_pattern = &patterns[source as usize];
                    let (source_chunks, source_first) = plan_chunks(source_pattern, chunk_elems);
                    let from = address(source)?;
                    entry.recv = own.recv + 8 * own_offsets[b] as u64;
                    entry.slot_bytes = slot_bytes;
                    entry.arrival = own.flags + c as u64 * stride;
                    entry.flag_parity_bytes = own_parity_bytes;
                    entry.source_credit =
                        from.flags + (source_chunks.len() + source_first[b] + k) as u64 * stride;
                    entry.source_flag_parity_bytes =
                        parity_on * flag_parity_bytes(source_chunks.len(), stride);
                }
            }
            entry.source = source;
            entry.dest = dest;
            entries.push(entry);
        }
        inject_into_chunks(
            fault,
            &mut entries,
            own.flags + scratch_flag_offset(chunks.len(), stride),
        );
        let table = upload_table::<_, _, u8>(backend, &entries, &[])?;
        Ok(IpcTransport {
            mpi,
            _peers: share,
            table,
            recv: ManuallyDrop::new(recv),
            flags: ManuallyDrop::new(flags),
            chunks,
            remote,
            pipelines,
            drain_timeout,
        })
    }

    /// True when the kernels of consecutive epochs may run at once: every flag has a twin per
    /// epoch parity, which needs every rank of the job to have all its peers on its node.
    pub fn pipelines(&self) -> bool {
        self.pipelines
    }

    /// True when some blocks go to or come from another node over host-staged MPI.
    pub fn has_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// Starts an iteration's host-staged part: posts the receives of remote blocks.
    ///
    /// # Errors
    /// MPI errors.
    pub fn begin_remote(&mut self) -> Result<()> {
        let Some(remote) = &mut self.remote else {
            return Ok(());
        };
        for (_, _, sent) in &mut remote.out {
            *sent = false;
        }
        for (b, _) in &remote.incoming {
            let source = remote.buffers.pattern().blocks[*b].source;
            self.mpi
                .post_recv(*b, remote.buffers.recv_region(*b), source)?;
        }
        Ok(())
    }

    /// One step of the host-staged part: sends every remote block whose chunks the kernels
    /// staged for `epoch`, and raises the arrival flags of every remote block MPI delivered.
    /// Returns true when every remote block was sent and received.
    ///
    /// # Errors
    /// MPI errors.
    pub fn progress_remote(&mut self, epoch: u32) -> Result<bool> {
        let Some(remote) = &mut self.remote else {
            return Ok(true);
        };
        for i in 0..remote.out.len() {
            let (b, ref chunks, sent) = remote.out[i];
            if sent
                || !chunks
                    .iter()
                    .all(|&c| remote.flag(c).load(Ordering::Acquire) == epoch)
            {
                continue;
            }
            let dest = remote.buffers.pattern().blocks[b].dest;
            self.mpi.isend(b, remote.buffers.send_region(b), dest)?;
            remote.out[i].2 = true;
        }
        while let Some(b) = self.mpi.test_any_recv()? {
            if let Some((_, chunks)) = remote.incoming.iter().find(|(block, _)| *block == b) {
                for &c in chunks {
                    remote
                        .flag(remote.chunks + c)
                        .store(epoch, Ordering::Release);
                }
            }
        }
        Ok(remote.out.iter().all(|o| o.2) && self.mpi.pending_recvs() == 0)
    }

    /// Ends an iteration's host-staged part: waits for the remote sends.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the sends still pending at `deadline`; MPI errors.
    pub fn finish_remote(&mut self, deadline: Instant) -> Result<()> {
        if self.remote.is_some() {
            self.mpi.wait_sends(deadline)?;
        }
        Ok(())
    }

    /// Remote blocks not sent (their chunks not all staged) or not received yet, for errors.
    pub fn remote_report(&self) -> Option<String> {
        let remote = self.remote.as_ref()?;
        let mut parts: Vec<String> = remote
            .out
            .iter()
            .filter(|o| !o.2)
            .map(|(b, _, _)| {
                format!(
                    "block {b}: not all chunks staged for host-staged MPI to rank {} on another node",
                    remote.buffers.pattern().blocks[*b].dest
                )
            })
            .collect();
        if self.mpi.pending_recvs() > 0 {
            parts.push(format!(
                "{} remote blocks not received over host-staged MPI",
                self.mpi.pending_recvs()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// This rank's chunks, in the order of the chunk table.
    pub fn chunks(&self) -> &[ChunkPlan] {
        &self.chunks
    }

    /// Device address of the chunk table (`hp_ipc_chunk[chunks().len()]`).
    pub fn table_addr(&self) -> u64 {
        self.table.device_addr()
    }
}

impl<B: Backend> Transport for IpcTransport<B> {
    fn name(&self) -> &'static str {
        "ipc"
    }

    /// Kernels store into the peers' device memory; blocks for other nodes go host-staged
    /// inside the transport, which the strategy does not see.
    fn capabilities(&self) -> Capabilities {
        TransportKind::Ipc.capabilities()
    }

    fn rank(&self) -> i32 {
        self.mpi.rank()
    }

    fn size(&self) -> i32 {
        self.mpi.size()
    }

    /// The closing barrier of an iteration (polled `MPI_Ibarrier`, SPEC 4).
    fn barrier(&mut self, deadline: Instant) -> Result<()> {
        self.mpi.barrier(deadline)
    }
}

impl<B: Backend> Drop for IpcTransport<B> {
    /// Peers may still store into our memory (a last credit) after our own kernels ended: wait
    /// for every rank at a barrier before freeing. If the barrier does not complete (a failed
    /// rank), leak our memory rather than free what a peer may still write.
    fn drop(&mut self) {
        let deadline = crate::backend::deadline_in(self.drain_timeout);
        match self.mpi.barrier(deadline) {
            Ok(()) => {
                // SAFETY: each is dropped once, here, and never used again.
                unsafe {
                    ManuallyDrop::drop(&mut self.recv);
                    ManuallyDrop::drop(&mut self.flags);
                }
            }
            Err(e) => tracing::error!(
                "rank {}: closing the ipc transport: {e}; its device memory is leaked so peers can never store into freed memory",
                self.mpi.rank()
            ),
        }
    }
}

/// Bytes of one receive slot of a rank with `pattern`.
fn slot_bytes_of(pattern: &RankPattern) -> u64 {
    (8 * layout(pattern).1).max(8) as u64
}

/// Bytes of the flags of a rank with `chunks` chunks: for epochs of parity 0 the arrival flags,
/// then the credit flags; the same for parity 1; then a scratch flag that nobody waits for
/// (fault injection raises it instead of a dropped chunk's arrival flag).
fn flag_bytes(chunks: usize, stride: u64) -> u64 {
    scratch_flag_offset(chunks, stride) + stride
}

/// Bytes from a flag of parity 0 to its twin of parity 1.
fn flag_parity_bytes(chunks: usize, stride: u64) -> u64 {
    2 * chunks as u64 * stride
}

/// Where the scratch flag lies in the flags allocation.
fn scratch_flag_offset(chunks: usize, stride: u64) -> u64 {
    2 * flag_parity_bytes(chunks, stride)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::BlockSpec;

    #[test]
    fn blocks_split_into_chunks_no_larger_than_the_largest_blocks_share() {
        let pattern = RankPattern {
            rank: 0,
            blocks: [1_u64, 15_000, 130_000]
                .iter()
                .map(|&elems| BlockSpec {
                    elems,
                    dest: 1,
                    source: 1,
                })
                .collect(),
        };
        let other = RankPattern {
            rank: 1,
            blocks: vec![BlockSpec {
                elems: 260_000,
                dest: 0,
                source: 0,
            }],
        };
        // The largest block of any rank (260000) in 4: 65000 elements per chunk, on every rank.
        let chunk_elems = chunk_elems_for(&[pattern.clone(), other], 4);
        assert_eq!(chunk_elems, 65_000);
        assert_eq!(chunk_elems_for(std::slice::from_ref(&pattern), 4), 32_500);
        assert_eq!(chunk_elems_for(std::slice::from_ref(&pattern), 1000), 4096);
        assert_eq!(chunk_elems_for(std::slice::from_ref(&pattern), 0), 130_000);
        assert_eq!(chunks_of(1, 4096), 1);
        assert_eq!(chunks_of(4096, 4096), 1);
        assert_eq!(chunks_of(4097, 4096), 2);
        let (chunks, first) = plan_chunks(&pattern, 32_500);
        assert_eq!(first, vec![0, 1, 2]);
        assert_eq!(chunks.len(), 6, "1 + 1 + 4");
        assert!(chunks.iter().all(|c| c.end - c.begin <= 32_500));
        for (b, block) in pattern.blocks.iter().enumerate() {
            let mine: Vec<_> = chunks.iter().filter(|c| c.block == b as u32).collect();
            assert_eq!(mine.first().map(|c| c.begin), Some(0));
            assert_eq!(mine.last().map(|c| c.end), Some(block.elems));
            assert!(mine.windows(2).all(|w| w[0].end == w[1].begin));
        }
    }
}
