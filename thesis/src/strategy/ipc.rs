//! The device-direct strategies (SPEC 12): between ranks of one node no CPU in the data path,
//! no host memory, no MPI message; kernels store each chunk straight into the destination's
//! receive slot over the [`IpcTransport`], fence at system scope and raise the destination's
//! per-chunk flag. Blocks for ranks on other nodes take host-staged MPI within the same
//! exchange: the same kernels stage them in pinned memory, and the CPU sends and receives them
//! while it waits for the kernels.
//!
//! - `ipc-base` (thesis 3.3's shape): per iteration the CPU queues the pack kernel and then the
//!   unpack kernel on one stream, and waits for every chunk's final state; unpack's blocks wait
//!   (bounded) for their chunks' flags. (Unpack on a second stream, overlapping pack, measured
//!   slower on 2 x H200: its blocks spin while pack stores; `results/HISTORY.md: h200x2-ipc`.)
//! - `ipc-tq` (thesis 3.4 with the CPU taken out): one persistent kernel per iteration; each of
//!   its blocks sends its chunk, then waits for its incoming chunk and unpacks it. Its blocks wait
//!   for the peer's blocks, so it is launched cooperatively (co-resident or refused).
//!
//! Every iteration ends when every incoming chunk was unpacked and, with the thesis protocol
//! (the default), every rank passed an MPI barrier; `ExchangeOptions::barrier = false` runs
//! iterations back to back, safe because receive buffers have two slots guarded by credit
//! flags. Back to back, iterations are also pipelined (when no rank of the job has a block for
//! another node): `PIPELINE_DEPTH` (3) epochs are in flight. Before the CPU waits for iteration
//! i, the kernels of i + 1 and i + 2 are queued, epochs alternating between two streams: one
//! epoch's kernels start while the previous epoch's last blocks still run (each epoch parity
//! has its own flags), and the epoch after next waits in its stream behind this one, so the GPU
//! starts it the moment this one ends, without waiting for the CPU to see the end, verify and
//! launch. Each epoch in flight has its own records. A pipelined iteration is measured as the
//! period between iterations' ends, averaged over the depth (`measure.rs`). Epochs count this
//! strategy's own iterations (1, 2, ...), so a fresh strategy with fresh flags agrees with its
//! peers' fresh strategies. Every device wait has the time-out and watches the abort flag; the
//! CPU names each chunk that did not finish, with its state.

// Kernel launches take raw device addresses; per-chunk records are read from pinned memory.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;

use crate::observe::{BlockChecks, Observer};
use crate::strategy::{ExchangeOptions, Fault, Strategy};
use crate::timeline::{CpuEvent, CpuEventKind};
use crate::variant::{IpcMode, IpcOptions};
use haloport_core::backend::check_threads;
use haloport_core::backend::{Backend, Coherence, Kernel, Launch, LaunchDims, PinnedMemory};
use haloport_core::error::{Error, Result};
use haloport_core::exchange::ensure_idle;
use haloport_core::pattern::RankPattern;
use haloport_core::shared::{self, hp_block_check, hp_block_times, hp_ipc_args};
use haloport_core::transport::ipc::IpcTransport;
use haloport_core::transport::Transport;
use haloport_core::verify::{merge_checks, planned_checks};

/// Epochs in flight when pipelined: the one the CPU waits for, the next (on the other stream,
/// overlapping it) and the one after (queued behind it on its stream). Flags have a twin per
/// epoch parity only: an epoch's senders wait for the credit of the epoch two before, which
/// orders every store of epoch e + 2 after epoch e's unpack, so two epochs of one parity never
/// overlap on a flag, however many are queued. Records, written by every epoch, need a set each.
/// On 2 x H200, thesis-9 back to back: 20.1 us with two in flight
/// (`results/HISTORY.md: h200x2-paired-faces`): the link idled while the CPU saw a pair of
/// overlapping epochs end and launched the next.
const PIPELINE_DEPTH: u32 = 3;

/// Per-chunk records the kernels write and the CPU reads: checks, timestamps, states, abort.
struct ChunkRecords<B: Backend> {
    checks: B::PinnedMemory,
    times: B::PinnedMemory,
    /// `chunks` u32 receiving-side states, `chunks` sending-side states, then the abort flag.
    states: B::PinnedMemory,
    chunks: usize,
}

impl<B: Backend> ChunkRecords<B> {
    fn new(backend: &B, chunks: usize) -> Result<Self> {
        let n = chunks.max(1);
        Ok(ChunkRecords {
            checks: backend.alloc_pinned(n * size_of::<hp_block_check>(), Coherence::Coherent)?,
            times: backend.alloc_pinned(n * size_of::<hp_block_times>(), Coherence::Coherent)?,
            states: backend.alloc_pinned(4 * (2 * n + 1), Coherence::Coherent)?,
            chunks,
        })
    }

    fn flag(&self, index: usize) -> &AtomicU32 {
        // SAFETY: index <= 2 * chunks, inside the states allocation (4 * (2 * chunks + 1)
        // bytes); the allocation is page-aligned and entries 4-byte aligned; it lives as long as
        // &self; kernels access it only atomically.
        unsafe { AtomicU32::from_ptr(self.states.host_ptr().cast::<u32>().add(index)) }
    }

    /// The receiving side's state of chunk `chunk`.
    fn state(&self, chunk: usize) -> u32 {
        self.flag(chunk).load(Ordering::Acquire)
    }

    /// The sending side's state of chunk `chunk`.
    fn send_state(&self, chunk: usize) -> u32 {
        self.flag(self.chunks + chunk).load(Ordering::Acquire)
    }

    fn abort(&self) -> &AtomicU32 {
        self.flag(2 * self.chunks)
    }

    fn send_states_addr(&self) -> u64 {
        self.states.device_addr() + 4 * self.chunks as u64
    }

    fn abort_addr(&self) -> u64 {
        self.states.device_addr() + 8 * self.chunks as u64
    }

    /// Marks every chunk not started, before a launch (no kernel writes the states then).
    fn reset(&self) {
        for index in 0..2 * self.chunks {
            self.flag(index)
                .store(shared::HP_IPC_IDLE, Ordering::Relaxed);
        }
    }

    /// True when some chunk gave up (timed out or aborted) on either side.
    fn any_given_up(&self) -> bool {
        (0..2 * self.chunks).any(|i| {
            let s = self.flag(i).load(Ordering::Acquire);
            s == shared::HP_IPC_TIMED_OUT || s == shared::HP_IPC_ABORTED
        })
    }

    /// True when every chunk reached its final states on both sides (done, or given up). The
    /// kernels write a chunk's records before its final states, with release ordering.
    fn all_final(&self) -> bool {
        let given_up = |s| s == shared::HP_IPC_TIMED_OUT || s == shared::HP_IPC_ABORTED;
        (0..self.chunks).all(|c| {
            let (recv, send) = (self.state(c), self.send_state(c));
            (recv == shared::HP_IPC_DONE || given_up(recv))
                && (send == shared::HP_IPC_SENT || given_up(send))
        })
    }

    /// # Safety
    /// 1. No kernel will write the records again: every chunk of the last launch reached its
    ///    final states (the kernels write a chunk's records before them), or the stream drained.
    unsafe fn take_checks(&mut self) -> Vec<hp_block_check> {
        let ptr = self.checks.host_ptr().cast::<hp_block_check>();
        // SAFETY: the allocation holds `chunks` records; no kernel writes them (contract, 1).
        unsafe {
            let taken = std::slice::from_raw_parts(ptr, self.chunks).to_vec();
            std::ptr::write_bytes(ptr, 0, self.chunks);
            taken
        }
    }

    /// # Safety
    /// 1. As for [`Self::take_checks`].
    unsafe fn times(&self) -> Vec<hp_block_times> {
        // SAFETY: the allocation holds `chunks` records; no kernel writes them (contract, 1).
        unsafe {
            std::slice::from_raw_parts(self.times.host_ptr().cast::<hp_block_times>(), self.chunks)
                .to_vec()
        }
    }
}

/// A device-direct strategy on backend `B`.
pub struct IpcExchange<'b, B: Backend> {
    // Drop order: the streams (waiting for the kernels) before the memory they use.
    /// One stream, or, pipelined, one per epoch parity: then an epoch's kernels start while the
    /// previous epoch's last blocks still run (each parity has its own flags).
    streams: Vec<B::Stream>,
    /// One set of records, or, pipelined, one per epoch in flight: the kernels of later epochs
    /// write theirs while the CPU reads epoch e's.
    records: Vec<ChunkRecords<B>>,
    transport: IpcTransport<B>,
    backend: &'b B,
    pattern: RankPattern,
    options: IpcOptions,
    exchange: ExchangeOptions,
    threads: u32,
    /// The last epoch launched.
    epoch: u32,
    /// The epoch the CPU waits for or last waited for, whose records are reported.
    waited: u32,
    /// Iterations run pipelined: back to back (no closing barrier) and no rank of the job with
    /// a block for another node (its host-staged part has one staging buffer per block, not
    /// two, and the flags have no twin per parity).
    pipelined: bool,
    /// Pipelined: the iterations launched ahead, oldest first, with their epochs.
    ahead: VecDeque<(u32, u32)>,
    events: Vec<CpuEvent>,
    kernels_idle: bool,
}

impl<'b, B: Backend> IpcExchange<'b, B> {
    /// Sets up the transport (collective over `world`) and the records for `patterns` (every
    /// rank's), `threads` threads per GPU block.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a thread count the device cannot run, for `corrupt-recv`
    /// (no CPU touches the data on this path), or when the transport cannot serve the pattern;
    /// allocation and vendor errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        patterns: &[RankPattern],
        threads: u32,
        options: IpcOptions,
        exchange: ExchangeOptions,
    ) -> Result<Self> {
        check_threads(backend, threads)?;
        if let Some(fault @ Fault::CorruptRecv { .. }) = exchange.fault {
            return Err(Error::InvalidInput(format!(
                "--inject {fault}: the device-direct variants have no CPU step between arrival and unpack to corrupt; use drop-send or short-send"
            )));
        }
        let transport = IpcTransport::new(
            backend,
            world,
            patterns,
            exchange.ipc_chunks,
            exchange.flag_stride,
            exchange.timeout,
            exchange.fault,
        )?;
        let chunks = transport.chunks().len();
        if options.mode == IpcMode::Taskqueue {
            let resident = backend.max_resident_blocks(Kernel::IpcTaskqueue, threads)?;
            if (resident as usize) < chunks {
                return Err(Error::Unsupported {
                    backend: backend.name(),
                    what: format!(
                        "the ipc-tq kernel needs all {chunks} blocks of {threads} threads resident at once, but {} holds only {resident}",
                        backend.device_info().name
                    ),
                });
            }
        }
        let pattern = patterns[transport.rank() as usize].clone();
        let pipelined = !exchange.barrier && transport.pipelines();
        let depth = if pipelined { PIPELINE_DEPTH } else { 1 };
        Ok(IpcExchange {
            streams: (0..depth.min(2))
                .map(|_| backend.create_stream())
                .collect::<Result<_>>()?,
            records: (0..depth)
                .map(|_| ChunkRecords::new(backend, chunks))
                .collect::<Result<_>>()?,
            transport,
            backend,
            pattern,
            options,
            exchange,
            threads,
            epoch: 0,
            waited: 0,
            pipelined,
            ahead: VecDeque::with_capacity(PIPELINE_DEPTH as usize),
            events: Vec::with_capacity(8),
            kernels_idle: true,
        })
    }

    /// The records of epoch `epoch`.
    fn records_of(&self, epoch: u32) -> &ChunkRecords<B> {
        &self.records[epoch as usize % self.records.len()]
    }

    /// The records of the epoch waited for.
    fn current(&self) -> &ChunkRecords<B> {
        self.records_of(self.waited)
    }

    fn args(&self, iteration: u32, epoch: u32) -> hp_ipc_args {
        let records = self.records_of(epoch);
        let timer_hz = self.backend.device_info().timer_hz as f64;
        hp_ipc_args {
            chunks: self.transport.table_addr(),
            checks: records.checks.device_addr(),
            times: records.times.device_addr(),
            states: records.states.device_addr(),
            send_states: records.send_states_addr(),
            abort_flag: records.abort_addr(),
            timeout_ticks: (self.exchange.timeout.as_secs_f64() * timer_hz) as u64,
            num_chunks: records.chunks as u32,
            rank: self.transport.rank(),
            iteration,
            epoch,
            verify: self.exchange.verify.code(),
            poll_backoff_ns: self.exchange.poll_backoff_ns,
        }
    }

    /// Describes every chunk that did not finish, grouped by block, for a time-out error.
    fn stuck_report(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (b, block) in self.pattern.blocks.iter().enumerate() {
            let chunks: Vec<usize> = (0..self.current().chunks)
                .filter(|&c| self.transport.chunks()[c].block as usize == b)
                .collect();
            let receiving: Vec<u32> = chunks
                .iter()
                .map(|&c| self.current().state(c))
                .filter(|&s| s != shared::HP_IPC_DONE)
                .collect();
            let sending: Vec<u32> = chunks
                .iter()
                .map(|&c| self.current().send_state(c))
                .filter(|&s| s != shared::HP_IPC_SENT)
                .collect();
            if let Some(&state) = receiving.first() {
                parts.push(format!(
                    "block {b}: {} of {} incoming chunks {} (from rank {})",
                    receiving.len(),
                    chunks.len(),
                    ipc_state_name(state),
                    block.source
                ));
            }
            if let Some(&state) = sending.first() {
                parts.push(format!(
                    "block {b}: {} of {} outgoing chunks {} (to rank {})",
                    sending.len(),
                    chunks.len(),
                    ipc_state_name(state),
                    block.dest
                ));
            }
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Waits until every chunk reached its final states: polling them in pinned memory sees
    /// the end microseconds before a stream query would report the kernels finished. Then the
    /// records are complete (written before the final states) and nothing writes them again.
    fn wait_for_kernels(&mut self, epoch: u32) -> Result<()> {
        self.waited = epoch;
        let rank = self.transport.rank();
        // Each kernel wait gives up after the time-out; a chunk may wait twice (credit, data).
        let limit = 2 * self.exchange.timeout + Duration::from_secs(1);
        let since = Instant::now();
        loop {
            // Blocks for other nodes travel by host-staged MPI meanwhile (the transport).
            let remote_done = match self.transport.progress_remote(epoch) {
                Ok(done) => done,
                Err(e) => return Err(self.abort_kernels(e)),
            };
            if self.current().all_final() && (remote_done || self.current().any_given_up()) {
                break;
            }
            if since.elapsed() >= limit {
                let what = format!(
                    "waiting for the device-direct kernels: {}",
                    self.stuck_report()
                        .or_else(|| self.transport.remote_report())
                        .unwrap_or_else(|| "every chunk finished late".into())
                );
                return Err(self.abort_kernels(Error::Timeout {
                    rank: Some(rank),
                    what,
                    after: limit,
                }));
            }
            std::hint::spin_loop();
        }
        if let Some(stuck) = self
            .stuck_report()
            .or_else(|| self.transport.remote_report())
        {
            // The kernels gave up by themselves; let them end before reporting.
            return Err(self.abort_kernels(Error::Timeout {
                rank: Some(rank),
                what: format!("in the device-direct exchange: {stuck}"),
                after: self.exchange.timeout,
            }));
        }
        self.kernels_idle = true;
        Ok(())
    }

    /// Raises the abort flag of every epoch in flight (each set's latest) and waits, at most
    /// the time-out, for the streams; the records count as readable only if they drained.
    fn abort_kernels(&mut self, error: Error) -> Error {
        let in_flight = self.records.len() as u32;
        for epoch in self.epoch.saturating_sub(in_flight - 1)..=self.epoch {
            self.records_of(epoch)
                .abort()
                .store(epoch, Ordering::Release);
        }
        let deadline = haloport_core::backend::deadline_in(self.exchange.timeout);
        let drained = self
            .streams
            .iter()
            .try_for_each(|stream| self.backend.stream_synchronize(stream, deadline));
        self.kernels_idle = drained.is_ok();
        if let Err(e) = drained {
            tracing::error!(
                "rank {}: the device-direct kernels did not end after the abort flag: {e}",
                self.transport.rank()
            );
        }
        error
    }

    /// Launches the kernels of the next epoch for global iteration `iteration`; returns the
    /// epoch.
    ///
    /// # Errors
    /// Launch errors, after the kernels already in flight were aborted.
    fn launch(&mut self, iteration: u32) -> Result<u32> {
        self.epoch += 1;
        let epoch = self.epoch;
        // No kernel writes this set: its last epoch (one depth before) was waited for and
        // reported.
        self.records_of(epoch).reset();
        self.transport.begin_remote()?;
        let args = self.args(iteration, epoch);
        let dims = LaunchDims {
            blocks: self.records_of(epoch).chunks as u32,
            threads: self.threads,
        };
        self.kernels_idle = false;
        let stream = &self.streams[epoch as usize % self.streams.len()];
        // SAFETY: args point into the transport's and the records' allocations and into peers'
        // memory the transport keeps open; all outlive the kernels (every epoch launched is
        // waited for, by an iteration or by drop, or the kernels aborted and drained; dropping
        // the strategy drops, and so waits for, the streams first).
        let launched = unsafe {
            match self.options.mode {
                IpcMode::Base => self
                    .backend
                    .launch(Launch::IpcPack(&args), dims, stream)
                    .and_then(|()| self.backend.launch(Launch::IpcUnpack(&args), dims, stream)),
                IpcMode::Taskqueue => {
                    self.backend
                        .launch(Launch::IpcTaskqueue(&args), dims, stream)
                }
            }
        };
        if let Err(e) = launched {
            // A pack kernel may already run: make its waits give up before returning.
            return Err(self.abort_kernels(e));
        }
        self.events.push(CpuEvent::now(CpuEventKind::Launch, None));
        Ok(epoch)
    }
}

impl<B: Backend> Drop for IpcExchange<'_, B> {
    /// The epochs launched ahead run to their end (their peers launched theirs) before the
    /// streams and the records go; after the first that does not end cleanly (the others
    /// aborted with it), none is waited for.
    fn drop(&mut self) {
        while let Some((_, epoch)) = self.ahead.pop_front() {
            if let Err(e) = self.wait_for_kernels(epoch) {
                tracing::warn!(
                    "rank {}: the device-direct iteration launched ahead did not end cleanly: {e}",
                    self.transport.rank()
                );
                break;
            }
        }
    }
}

/// Words for a device-direct chunk state, for error messages.
pub fn ipc_state_name(state: u32) -> &'static str {
    match state {
        shared::HP_IPC_IDLE => "not started",
        shared::HP_IPC_WAIT_CREDIT => "waiting for the receiver to free its slot",
        shared::HP_IPC_PACKING => "packing",
        shared::HP_IPC_WAIT_DATA => "waiting for their data",
        shared::HP_IPC_UNPACKING => "unpacking",
        shared::HP_IPC_DONE => "done",
        shared::HP_IPC_SENT => "sent",
        shared::HP_IPC_TIMED_OUT => "timed out on the device",
        shared::HP_IPC_ABORTED => "aborted by the CPU",
        _ => "in an unknown state",
    }
}

impl<B: Backend> Strategy for IpcExchange<'_, B> {
    fn iteration(&mut self, iteration: u32) -> Result<()> {
        let epoch = match self.ahead.front() {
            Some(&(launched, epoch)) if launched == iteration => {
                self.ahead.pop_front();
                epoch
            }
            Some(_) => {
                // Launched ahead for other iterations than the one asked for: let them end and
                // forget them.
                while let Some((_, epoch)) = self.ahead.pop_front() {
                    self.wait_for_kernels(epoch)?;
                    self.take_checks()?;
                }
                self.launch(iteration)?
            }
            None => self.launch(iteration)?,
        };
        if self.pipelined {
            // Back to back: the next iterations' kernels are queued too, so the GPU goes on
            // while the CPU waits for, and then verifies, this one.
            while self.ahead.len() + 1 < PIPELINE_DEPTH as usize {
                let last = self.ahead.back().map_or(iteration, |&(it, _)| it);
                let next = last.wrapping_add(1);
                let epoch = self.launch(next)?;
                self.ahead.push_back((next, epoch));
            }
        }
        self.wait_for_kernels(epoch)?;
        self.events
            .push(CpuEvent::now(CpuEventKind::KernelsDone, None));
        if self.transport.has_remote() {
            self.transport
                .finish_remote(haloport_core::backend::deadline_in(self.exchange.timeout))?;
            self.events
                .push(CpuEvent::now(CpuEventKind::SendsDone, None));
        }
        if self.exchange.barrier {
            self.transport
                .barrier(haloport_core::backend::deadline_in(self.exchange.timeout))?;
            self.events.push(CpuEvent::now(CpuEventKind::Barrier, None));
        }
        Ok(())
    }

    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        let records = self.take_checks()?;
        let planned = self.planned_checks();
        observer.checks(BlockChecks {
            records: &records,
            planned: &planned,
            state: &|block| Some(self.block_state(block)),
        });
        if observer.wants_device_times() {
            observer.device_times(&self.device_times()?);
        }
        observer.cpu_events(std::mem::take(&mut self.events));
        Ok(())
    }

    /// Device memory only: there are no host buffers to be coherent.
    fn buffer_coherence(&self) -> (Coherence, Coherence) {
        (Coherence::Coherent, Coherence::Coherent)
    }

    fn pipeline_depth(&self) -> u32 {
        if self.pipelined {
            PIPELINE_DEPTH
        } else {
            1
        }
    }
}

impl<B: Backend> IpcExchange<'_, B> {
    /// Folds the chunks' records into one per block: checks and wrong values summed, the lowest
    /// wrong index kept.
    fn take_checks(&mut self) -> Result<Vec<hp_block_check>> {
        ensure_idle(self.kernels_idle)?;
        let waited = self.waited as usize % self.records.len();
        // SAFETY: every chunk of the epoch waited for reached its final states, after which
        // the kernels write no record of its set (the epochs in flight write the other sets;
        // the next to use this one is launched only after this report), or the stream drained
        // (kernels_idle).
        let chunks = unsafe { self.records[waited].take_checks() };
        let mut blocks = vec![hp_block_check::default(); self.pattern.blocks.len()];
        for (plan, c) in self.transport.chunks().iter().zip(chunks) {
            merge_checks(&mut blocks[plan.block as usize], &c);
        }
        Ok(blocks)
    }

    fn planned_checks(&self) -> Vec<u64> {
        let mut planned = vec![0_u64; self.pattern.blocks.len()];
        for chunk in self.transport.chunks() {
            planned[chunk.block as usize] +=
                planned_checks(self.exchange.verify, self.threads, chunk.end - chunk.begin);
        }
        planned
    }

    /// Every chunk of block `block` with its sending and receiving state.
    fn block_state(&self, block: usize) -> String {
        let states: Vec<String> = (0..self.current().chunks)
            .filter(|&c| self.transport.chunks()[c].block as usize == block)
            .map(|c| {
                format!(
                    "{} / {}",
                    ipc_state_name(self.current().send_state(c)),
                    ipc_state_name(self.current().state(c))
                )
            })
            .collect();
        format!("chunks (sending / receiving): {}", states.join(", "))
    }

    /// Per block, the first chunk's start and the last chunk's end of each phase.
    fn device_times(&self) -> Result<Vec<hp_block_times>> {
        ensure_idle(self.kernels_idle)?;
        // SAFETY: as for take_checks.
        let chunks = unsafe { self.current().times() };
        let mut blocks: Vec<Option<hp_block_times>> = vec![None; self.pattern.blocks.len()];
        for (plan, t) in self.transport.chunks().iter().zip(chunks) {
            let b = &mut blocks[plan.block as usize];
            *b = Some(match b {
                None => t,
                Some(a) => hp_block_times {
                    pack_start: a.pack_start.min(t.pack_start),
                    pack_end: a.pack_end.max(t.pack_end),
                    unpack_start: a.unpack_start.min(t.unpack_start),
                    unpack_end: a.unpack_end.max(t.unpack_end),
                },
            });
        }
        Ok(blocks.into_iter().map(Option::unwrap_or_default).collect())
    }
}
