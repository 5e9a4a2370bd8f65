//! The taskqueue exchange (thesis 3.4, 3.5): one persistent kernel per iteration, calling back
//! to the CPU through flags in coherent pinned memory.
//!
//! Per iteration the CPU launches the kernel, (memcpy variants) queues every block's H2D copy on
//! the block's own stream, posts `MPI_Irecv` for every block, then processes exactly
//! 2 x blocks events (4 x blocks with memcpy), one per test, in the thesis's order
//! (figures 3.8 and 3.12):
//!
//! 1. a task from the GPU (the queue's head, or a scan of the per-block channels): zero-copy ->
//!    send that block; memcpy -> queue its D2H copy;
//! 2. (memcpy) a block stream that went idle, found with a stream query only in the states that
//!    need one (thesis 3.5.2): H2D done -> release packing; D2H done -> send;
//! 3. a completed receive (`MPI_Testany`) -> raise that block's go flag.
//!
//! Then it waits for the kernel, for non-blocking sends, and for the barrier. Nothing waits
//! forever: when no event comes within the time-out, the CPU raises the abort flag (the kernel's
//! blocks give up), waits for the kernel, and returns a time-out naming each unfinished block
//! and the state it was stuck in. The kernel has twice that time-out on its own side.

// Kernel launches take raw device addresses into the exchange buffers (Backend::launch).
#![allow(unsafe_code)]

use std::time::Instant;

use crate::observe::Observer;
use crate::strategy::{EventProfile, ExchangeOptions, Strategy};
use crate::timeline::{CpuEvent, CpuEventKind};
use crate::variant::{SendBuffers, SendMode, TaskPosting, TaskqueueOptions};
use haloport_core::backend::check_threads;
use haloport_core::backend::{Backend, Coherence, Kernel, Launch, LaunchDims};
use haloport_core::control::{state_name, ControlBlock};
use haloport_core::error::{Error, Result};
use haloport_core::exchange::ExchangeBuffers;
use haloport_core::pattern::RankPattern;
use haloport_core::shared;
use haloport_core::transport::HostTransport;

/// Where the CPU is with one block in the current iteration (thesis 3.5.2's
/// `memcpy_event_processed`, as named states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockStep {
    /// Memcpy: the H2D copy is in flight.
    CopyingIn,
    /// Waiting for the block's task.
    Packing,
    /// Memcpy: the D2H copy is in flight.
    CopyingOut,
    /// Sent (or, with a dropped-send fault, skipped).
    Sent,
}

/// The taskqueue strategy on backend `B` over transport `T`.
pub struct Taskqueue<'b, B: Backend, T: HostTransport> {
    // Drop order: requests and queued device work refer to the buffers and flags below.
    transport: T,
    block_streams: Vec<B::Stream>,
    stream: B::Stream,
    control: ControlBlock<B>,
    buffers: ExchangeBuffers<B>,
    backend: &'b B,
    options: TaskqueueOptions,
    exchange: ExchangeOptions,
    dims: LaunchDims,
    /// Queue mode: tasks read so far (the head), over all iterations.
    queue_head: usize,
    /// Queue mode: tasks read in this iteration.
    tasks_seen: usize,
    steps: Vec<BlockStep>,
    received: Vec<bool>,
    events: Vec<CpuEvent>,
    profile: EventProfile,
    /// False from a launch until the kernel and block streams were seen idle: check records
    /// and timestamps may be read only when true.
    kernels_idle: bool,
}

impl<'b, B: Backend, T: HostTransport> Taskqueue<'b, B, T> {
    /// Allocates buffers, flags and streams for `pattern`, `threads` threads per block, after
    /// checking that all blocks of the persistent kernel can be resident at once.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the device cannot hold every block at once (they wait for
    /// each other through the CPU, so a block that never starts would deadlock the rest);
    /// [`Error::InvalidInput`] for a thread count the device cannot run; allocation errors.
    pub fn new(
        backend: &'b B,
        mut transport: T,
        pattern: &RankPattern,
        threads: u32,
        options: TaskqueueOptions,
        exchange: ExchangeOptions,
    ) -> Result<Self> {
        let blocks = pattern.blocks.len();
        check_threads(backend, threads)?;
        let resident = backend.max_resident_blocks(Kernel::Taskqueue, threads)?;
        if (resident as usize) < blocks {
            return Err(Error::Unsupported {
                backend: backend.name(),
                what: format!(
                    "the taskqueue kernel needs all {blocks} blocks of {threads} threads resident at once, \
                     but {} holds only {resident}",
                    backend.device_info().name
                ),
            });
        }
        let mut buffers = transport.register(backend, pattern, Coherence::Coherent)?;
        let memcpy = options.buffers == SendBuffers::Memcpy;
        if memcpy {
            buffers.attach_device_send(backend)?;
        }
        let control = ControlBlock::new(backend, blocks, exchange.flag_stride)?;
        let stream = backend.create_stream()?;
        let block_streams = if memcpy {
            (0..blocks)
                .map(|_| backend.create_stream())
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        Ok(Taskqueue {
            transport,
            block_streams,
            stream,
            control,
            buffers,
            backend,
            options,
            exchange,
            dims: LaunchDims {
                blocks: blocks as u32,
                threads,
            },
            queue_head: 0,
            tasks_seen: 0,
            steps: vec![BlockStep::Packing; blocks],
            received: vec![false; blocks],
            events: Vec::with_capacity(8 * blocks),
            profile: EventProfile::default(),
            kernels_idle: true,
        })
    }

    fn memcpy(&self) -> bool {
        self.options.buffers == SendBuffers::Memcpy
    }

    fn mode(&self) -> u32 {
        let mut mode = 0;
        if self.options.tasks == TaskPosting::Queue {
            mode |= shared::HP_TQ_MODE_QUEUE;
        }
        if self.memcpy() {
            mode |= shared::HP_TQ_MODE_MEMCPY;
        }
        mode
    }

    fn send_block(&mut self, block: usize) -> Result<()> {
        self.steps[block] = BlockStep::Sent;
        let dest = self.buffers.pattern().blocks[block].dest;
        let region = self.buffers.send_region(block);
        match self.options.send {
            SendMode::Blocking => {
                let deadline = haloport_core::backend::deadline_in(self.exchange.timeout);
                self.transport.send(block, region, dest, deadline)?;
            }
            SendMode::NonBlocking => self.transport.isend(block, region, dest)?,
        }
        self.events
            .push(CpuEvent::now(CpuEventKind::Send, Some(block)));
        Ok(())
    }

    /// The next task from the GPU, if one was posted.
    ///
    /// # Errors
    /// [`Error::Internal`] for a queue entry naming a block that does not exist or is not
    /// packing: memory the protocol relies on was overwritten.
    fn next_task(&mut self, epoch: u32) -> Result<Option<usize>> {
        match self.options.tasks {
            TaskPosting::Queue => {
                // The queue has one slot per block and wraps: after this iteration's last task,
                // the next slot holds this iteration's first one again.
                if self.tasks_seen == self.steps.len() {
                    return Ok(None);
                }
                let Some(block) = self.control.queue_task(self.queue_head, epoch) else {
                    return Ok(None);
                };
                if self.steps.get(block) != Some(&BlockStep::Packing) {
                    return Err(Error::Internal(format!(
                        "task queue slot {} names block {block}, which is not waiting for its task",
                        self.queue_head
                    )));
                }
                self.queue_head += 1;
                self.tasks_seen += 1;
                Ok(Some(block))
            }
            TaskPosting::Channel => Ok((0..self.steps.len()).find(|&b| {
                self.steps[b] == BlockStep::Packing && self.control.channel_task(b, epoch)
            })),
        }
    }

    /// One test for an event, in the thesis's order; handles the event found, if any.
    fn test_for_event(&mut self, epoch: u32) -> Result<bool> {
        if let Some(block) = self.next_task(epoch)? {
            self.events
                .push(CpuEvent::now(CpuEventKind::Task, Some(block)));
            if self.memcpy() {
                let (offset, bytes) = self.buffers.byte_range(block);
                let device = self.buffers.device_send().ok_or_else(|| {
                    Error::Internal("memcpy taskqueue without device send buffers".into())
                })?;
                // SAFETY: (1) the buffers outlive the block streams (field order; dropping a
                // stream waits for its work); (2) the block's state machine lets nothing else
                // touch its range until this copy is seen finished (CopyingOut).
                unsafe {
                    self.backend.copy_to_host_async(
                        &self.buffers.pinned_send(),
                        offset,
                        device,
                        offset,
                        bytes,
                        &self.block_streams[block],
                    )?;
                }
                self.steps[block] = BlockStep::CopyingOut;
            } else {
                self.send_block(block)?;
            }
            return Ok(true);
        }
        if self.memcpy() {
            for block in 0..self.steps.len() {
                let step = self.steps[block];
                if !matches!(step, BlockStep::CopyingIn | BlockStep::CopyingOut)
                    || !self.backend.stream_query(&self.block_streams[block])?
                {
                    continue;
                }
                if step == BlockStep::CopyingIn {
                    self.control.release_pack(block, epoch);
                    self.steps[block] = BlockStep::Packing;
                    self.events
                        .push(CpuEvent::now(CpuEventKind::CopyInDone, Some(block)));
                } else {
                    self.events
                        .push(CpuEvent::now(CpuEventKind::CopyOutDone, Some(block)));
                    self.send_block(block)?;
                }
                return Ok(true);
            }
        }
        if let Some(block) = self.transport.test_any_recv()? {
            self.received[block] = true;
            self.control.release_unpack(block, epoch);
            self.events
                .push(CpuEvent::now(CpuEventKind::Recv, Some(block)));
            return Ok(true);
        }
        Ok(false)
    }

    /// Describes every unfinished block for a time-out error.
    fn stuck_report(&self) -> String {
        let mut parts = Vec::new();
        for block in 0..self.steps.len() {
            let gpu = self.control.state(block);
            if gpu == shared::HP_TQ_DONE {
                continue;
            }
            let source = self.buffers.pattern().blocks[block].source;
            let cpu = match self.steps[block] {
                BlockStep::CopyingIn => "its H2D copy not seen finished",
                BlockStep::Packing => "its task not seen",
                BlockStep::CopyingOut => "its D2H copy not seen finished",
                BlockStep::Sent if self.exchange.drops_send(block) => {
                    "its send dropped by fault injection"
                }
                BlockStep::Sent => "sent",
            };
            let recv = if self.received[block] {
                "received".to_owned()
            } else {
                format!("receive from rank {source} not completed")
            };
            parts.push(format!(
                "block {block}: GPU {}; CPU: {cpu}, {recv}",
                state_name(gpu)
            ));
        }
        parts.join("; ")
    }
}

impl<B: Backend, T: HostTransport> Taskqueue<'_, B, T> {
    /// Everything after the launch: copies in, receives, the event loop, the kernel's end.
    /// Any error here leaves the kernel running; [`Strategy::iteration`] then raises the abort
    /// flag and drains it.
    fn serve_launched_kernel(&mut self, epoch: u32) -> Result<()> {
        let rank = self.transport.rank();
        let blocks = self.steps.len();
        let timeout = self.exchange.timeout;
        let memcpy = self.memcpy();
        if memcpy {
            let device = self.buffers.device_send().ok_or_else(|| {
                Error::Internal("memcpy taskqueue without device send buffers".into())
            })?;
            for block in 0..blocks {
                let (offset, bytes) = self.buffers.byte_range(block);
                // SAFETY: as for the D2H copy: the buffers outlive the block streams, and the
                // block packs only after the CPU saw this copy finish (CopyingIn).
                unsafe {
                    self.backend.copy_to_device_async(
                        device,
                        offset,
                        &self.buffers.pinned_send(),
                        offset,
                        bytes,
                        &self.block_streams[block],
                    )?;
                }
            }
        }
        for block in 0..blocks {
            let source = self.buffers.pattern().blocks[block].source;
            self.transport
                .post_recv(block, self.buffers.recv_region(block), source)?;
        }

        let expected = blocks * if memcpy { 4 } else { 2 };
        let mut processed = 0;
        let mut last_event = Instant::now();
        let mut profile = EventProfile::default();
        while processed < expected {
            let found = self.test_for_event(epoch)?;
            profile.test(found);
            if found {
                processed += 1;
                last_event = Instant::now();
            } else if last_event.elapsed() > timeout {
                // Read where every block is before the abort changes it.
                return Err(Error::Timeout {
                    rank: Some(rank),
                    what: format!(
                        "in the taskqueue event loop ({processed} of {expected} events): {}",
                        self.stuck_report()
                    ),
                    after: timeout,
                });
            }
        }
        self.profile = profile;
        self.backend
            .stream_synchronize(&self.stream, haloport_core::backend::deadline_in(timeout))
            .map_err(|e| e.on_rank(rank))
    }

    /// After a failure with the kernel launched: makes every block give up (abort flag) and
    /// waits, at most the time-out, for the kernel and the block streams to end. Says in the
    /// error when they did not; then the buffers stay marked busy.
    fn abort_launched_kernel(&mut self, epoch: u32, error: Error) -> Error {
        self.control.raise_abort(epoch);
        let deadline = haloport_core::backend::deadline_in(self.exchange.timeout);
        let drained = self
            .backend
            .stream_synchronize(&self.stream, deadline)
            .and_then(|()| {
                self.block_streams
                    .iter()
                    .try_for_each(|s| self.backend.stream_synchronize(s, deadline))
            });
        match drained {
            Ok(()) => {
                self.kernels_idle = true;
                error
            }
            Err(e) => match error {
                Error::Timeout { rank, what, after } => Error::Timeout {
                    rank,
                    what: format!("{what}; the kernel did not end after the abort flag: {e}"),
                    after,
                },
                other => {
                    tracing::error!(
                        "rank {}: the taskqueue kernel did not end after the abort flag: {e}",
                        self.transport.rank()
                    );
                    other
                }
            },
        }
    }
}

impl<B: Backend, T: HostTransport> Strategy for Taskqueue<'_, B, T> {
    fn iteration(&mut self, iteration: u32) -> Result<()> {
        let rank = self.transport.rank();
        let epoch = iteration + 1;
        let timeout = self.exchange.timeout;
        let timer_hz = self.backend.device_info().timer_hz as f64;
        // The kernel waits twice as long as the CPU: the CPU, which can name the missing
        // receive or task, reports first; the device's own time-out is the backstop for a CPU
        // that stopped serving it.
        let args = self.control.kernel_args(
            self.buffers
                .kernel_args(rank, iteration, self.exchange.verify),
            self.mode(),
            epoch,
            (2.0 * timeout.as_secs_f64() * timer_hz) as u64,
            self.exchange.poll_backoff_ns,
        );
        let first_step = if self.memcpy() {
            BlockStep::CopyingIn
        } else {
            BlockStep::Packing
        };
        self.steps.fill(first_step);
        self.received.fill(false);
        self.tasks_seen = 0;
        self.control.reset_states();

        self.kernels_idle = false;
        // SAFETY: args point into self.buffers and self.control, which outlive the kernel: the
        // kernel is waited for (or aborted and waited for) before this method returns, and
        // dropping the strategy drops (and so synchronizes) the streams before the memory.
        unsafe {
            self.backend
                .launch(Launch::Taskqueue(&args), self.dims, &self.stream)?
        };
        self.events.push(CpuEvent::now(CpuEventKind::Launch, None));
        if let Err(e) = self.serve_launched_kernel(epoch) {
            return Err(self.abort_launched_kernel(epoch, e));
        }
        self.kernels_idle = true;
        self.events
            .push(CpuEvent::now(CpuEventKind::KernelsDone, None));
        if self.options.send == SendMode::NonBlocking {
            self.transport
                .wait_sends(haloport_core::backend::deadline_in(timeout))?;
            self.events
                .push(CpuEvent::now(CpuEventKind::SendsDone, None));
        }
        self.transport
            .barrier(haloport_core::backend::deadline_in(timeout))?;
        self.events.push(CpuEvent::now(CpuEventKind::Barrier, None));
        Ok(())
    }

    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        let control = &self.control;
        crate::observe::report_records(
            &mut self.buffers,
            self.kernels_idle,
            self.exchange.verify,
            self.dims.threads,
            &|block| Some(format!("GPU state {}", state_name(control.state(block)))),
            observer,
        )?;
        observer.cpu_events(std::mem::take(&mut self.events));
        observer.event_profile(&std::mem::take(&mut self.profile));
        Ok(())
    }

    fn buffer_coherence(&self) -> (Coherence, Coherence) {
        self.buffers.coherence()
    }
}
