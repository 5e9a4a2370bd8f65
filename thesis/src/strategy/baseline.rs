//! The baseline exchange (thesis 3.3): pack kernel, MPI, unpack kernel, in sequence.
//!
//! Per iteration: launch the pack kernel for all blocks; post `MPI_Irecv` for every block while
//! it runs; wait for it (the thesis's `hipDeviceSynchronize`); send every block, blocking or
//! not; wait for the receives with `MPI_Waitall` or a loop of `MPI_Testany`; launch the unpack
//! kernel; wait for non-blocking sends; wait for unpack; `MPI_Barrier`. Buffers are pinned host
//! memory, coherent or not: the CPU touches them only between kernels, so non-coherent memory
//! is enough (thesis 3.3.2).

// Kernel launches take raw device addresses into the exchange buffers (Backend::launch).
#![allow(unsafe_code)]

use std::time::Instant;

use crate::observe::Observer;
use crate::strategy::{ExchangeOptions, Strategy};
use crate::timeline::{CpuEvent, CpuEventKind};
use crate::variant::{BaselineOptions, SendMode, WaitMode};
use haloport_core::backend::check_threads;
use haloport_core::backend::{Backend, Coherence, Launch, LaunchDims};
use haloport_core::error::{Error, Result};
use haloport_core::exchange::ExchangeBuffers;
use haloport_core::pattern::RankPattern;
use haloport_core::transport::HostTransport;

/// The baseline strategy on backend `B` over transport `T`.
pub struct Baseline<'b, B: Backend, T: HostTransport> {
    // Drop order matters: pending transport requests and queued stream work refer to the
    // buffers, so the transport and the stream go first.
    transport: T,
    stream: B::Stream,
    buffers: ExchangeBuffers<B>,
    backend: &'b B,
    options: BaselineOptions,
    exchange: ExchangeOptions,
    dims: LaunchDims,
    events: Vec<CpuEvent>,
    /// False from a launch until the stream was seen idle: check records and timestamps may be
    /// read only when true.
    kernels_idle: bool,
}

impl<'b, B: Backend, T: HostTransport> Baseline<'b, B, T> {
    /// Allocates buffers and a stream for `pattern`, `threads` threads per block.
    ///
    /// # Errors
    /// Backend allocation errors; [`Error::InvalidInput`] if the device cannot run blocks of
    /// `threads` threads.
    pub fn new(
        backend: &'b B,
        mut transport: T,
        pattern: &RankPattern,
        threads: u32,
        options: BaselineOptions,
        exchange: ExchangeOptions,
    ) -> Result<Self> {
        check_threads(backend, threads)?;
        let buffers = transport.register(backend, pattern, options.buffers)?;
        let stream = backend.create_stream()?;
        Ok(Baseline {
            transport,
            stream,
            dims: LaunchDims {
                blocks: buffers.blocks() as u32,
                threads,
            },
            buffers,
            backend,
            options,
            exchange,
            events: Vec::with_capacity(8),
            kernels_idle: true,
        })
    }

    fn deadline(&self) -> Instant {
        haloport_core::backend::deadline_in(self.exchange.timeout)
    }

    fn pending_blocks(received: &[bool]) -> Vec<usize> {
        received
            .iter()
            .enumerate()
            .filter(|(_, done)| !**done)
            .map(|(b, _)| b)
            .collect()
    }

    /// The thesis's listing 3.11: `MPI_Testany` until every receive completed, with a time-out.
    fn test_any_until_all_received(&mut self) -> Result<()> {
        let deadline = self.deadline();
        let mut received = vec![false; self.buffers.blocks()];
        while self.transport.pending_recvs() > 0 {
            match self.transport.test_any_recv()? {
                Some(block) => {
                    received[block] = true;
                    self.events
                        .push(CpuEvent::now(CpuEventKind::Recv, Some(block)));
                }
                None if Instant::now() >= deadline => {
                    return Err(Error::Timeout {
                        rank: Some(self.transport.rank()),
                        what: format!(
                            "in the MPI_Testany loop waiting for the receives of blocks {:?}",
                            Self::pending_blocks(&received)
                        ),
                        after: self.exchange.timeout,
                    });
                }
                None => std::hint::spin_loop(),
            }
        }
        Ok(())
    }
}

impl<B: Backend, T: HostTransport> Strategy for Baseline<'_, B, T> {
    fn iteration(&mut self, iteration: u32) -> Result<()> {
        let rank = self.transport.rank();
        let blocks = self.buffers.blocks();
        let args = self
            .buffers
            .kernel_args(rank, iteration, self.exchange.verify);
        let event = |kind, block| CpuEvent::now(kind, block);

        self.kernels_idle = false;
        // SAFETY: args points into self.buffers' allocations, which outlive the kernel: the
        // stream is synchronized below before the buffers can be touched or dropped.
        unsafe {
            self.backend
                .launch(Launch::Pack(&args), self.dims, &self.stream)?
        };
        self.events.push(event(CpuEventKind::Launch, None));
        for b in 0..blocks {
            let source = self.buffers.pattern().blocks[b].source;
            self.transport
                .post_recv(b, self.buffers.recv_region(b), source)?;
        }
        self.backend
            .stream_synchronize(&self.stream, self.deadline())
            .map_err(|e| e.on_rank(rank))?;
        self.events.push(event(CpuEventKind::PackDone, None));

        for b in 0..blocks {
            let dest = self.buffers.pattern().blocks[b].dest;
            let region = self.buffers.send_region(b);
            match self.options.send {
                SendMode::Blocking => {
                    let deadline = self.deadline();
                    self.transport.send(b, region, dest, deadline)?;
                }
                SendMode::NonBlocking => self.transport.isend(b, region, dest)?,
            }
            self.events.push(event(CpuEventKind::Send, Some(b)));
        }
        match self.options.wait {
            WaitMode::WaitAll => {
                let deadline = self.deadline();
                self.transport.wait_recvs(deadline)?;
                self.events.push(event(CpuEventKind::Recv, None));
            }
            WaitMode::TestAny => self.test_any_until_all_received()?,
        }

        // SAFETY: as for the pack launch; receives completed, so MPI no longer writes them.
        unsafe {
            self.backend
                .launch(Launch::Unpack(&args), self.dims, &self.stream)?
        };
        self.events.push(event(CpuEventKind::Launch, None));
        if self.options.send == SendMode::NonBlocking {
            let deadline = self.deadline();
            self.transport.wait_sends(deadline)?;
            self.events.push(event(CpuEventKind::SendsDone, None));
        }
        self.backend
            .stream_synchronize(&self.stream, self.deadline())
            .map_err(|e| e.on_rank(rank))?;
        self.kernels_idle = true;
        self.events.push(event(CpuEventKind::KernelsDone, None));
        let deadline = self.deadline();
        self.transport.barrier(deadline)?;
        self.events.push(event(CpuEventKind::Barrier, None));
        Ok(())
    }

    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        crate::observe::report_records(
            &mut self.buffers,
            self.kernels_idle,
            self.exchange.verify,
            self.dims.threads,
            &|_| None,
            observer,
        )?;
        observer.cpu_events(std::mem::take(&mut self.events));
        Ok(())
    }

    fn buffer_coherence(&self) -> (Coherence, Coherence) {
        self.buffers.coherence()
    }
}
