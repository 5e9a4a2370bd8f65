//! The reference floor: the same messages, exchanged host-to-host by the same MPI calls, with no
//! GPU involved (`mpi-only`).
//!
//! Per iteration: post `MPI_Irecv` for every block, `MPI_Isend` every block, `MPI_Waitall` the
//! receives, `MPI_Waitall` the sends, `MPI_Barrier`: the baseline's `base-nb-wait` minus its
//! kernels. The send buffers are filled on the CPU in [`Strategy::prepare`], outside the timed
//! region, and the received data is checked on the CPU afterwards with the kernels' rule, so the
//! floor is verified like every exchange. Reports show each variant's time over this floor: how
//! far an exchange is from what the host MPI path allows.

#![allow(unsafe_code)]

use crate::observe::{BlockChecks, Observer};
use crate::strategy::{ExchangeOptions, Strategy};
use crate::timeline::{CpuEvent, CpuEventKind};
use haloport_core::backend::{Backend, Coherence};
use haloport_core::error::Result;
use haloport_core::exchange::ExchangeBuffers;
use haloport_core::pattern::RankPattern;
use haloport_core::shared::hp_block_check;
use haloport_core::transport::HostTransport;
use haloport_core::verify::{check_block, packed_value};

/// The `mpi-only` reference on host buffers.
pub struct MpiOnly<B: Backend, T: HostTransport> {
    transport: T,
    buffers: ExchangeBuffers<B>,
    exchange: ExchangeOptions,
    threads: u32,
    /// The iteration whose data the buffers hold, once it completed.
    iteration: Option<u32>,
    events: Vec<CpuEvent>,
}

impl<B: Backend, T: HostTransport> MpiOnly<B, T> {
    /// Allocates the same pinned buffers the GPU strategies hand to MPI.
    ///
    /// # Errors
    /// Allocation and transport errors.
    pub fn new(
        backend: &B,
        mut transport: T,
        pattern: &RankPattern,
        threads: u32,
        exchange: ExchangeOptions,
    ) -> Result<Self> {
        let buffers = transport.register(backend, pattern, Coherence::Coherent)?;
        Ok(MpiOnly {
            transport,
            buffers,
            exchange,
            threads: threads.max(1),
            iteration: None,
            events: Vec::new(),
        })
    }
}

impl<B: Backend, T: HostTransport> Strategy for MpiOnly<B, T> {
    fn prepare(&mut self, iteration: u32) -> Result<()> {
        let rank = self.transport.rank();
        for b in 0..self.buffers.blocks() {
            let region = self.buffers.send_region(b);
            // SAFETY: the region is valid for its elems; no request is pending between
            // iterations and no kernel runs on this strategy's buffers.
            let send = unsafe { std::slice::from_raw_parts_mut(region.as_ptr(), region.elems()) };
            for (i, v) in send.iter_mut().enumerate() {
                *v = packed_value(iteration, rank, b as u32, i as u64);
            }
        }
        self.iteration = Some(iteration);
        Ok(())
    }

    fn iteration(&mut self, _iteration: u32) -> Result<()> {
        // Checked only once the iteration completed: a failed one may leave receives pending.
        let prepared = self.iteration.take();
        let timeout = self.exchange.timeout;
        for b in 0..self.buffers.blocks() {
            let source = self.buffers.pattern().blocks[b].source;
            self.transport
                .post_recv(b, self.buffers.recv_region(b), source)?;
        }
        for b in 0..self.buffers.blocks() {
            let dest = self.buffers.pattern().blocks[b].dest;
            self.transport.isend(b, self.buffers.send_region(b), dest)?;
        }
        self.transport
            .wait_recvs(haloport_core::backend::deadline_in(timeout))?;
        self.events.push(CpuEvent::now(CpuEventKind::Recv, None));
        self.transport
            .wait_sends(haloport_core::backend::deadline_in(timeout))?;
        self.events
            .push(CpuEvent::now(CpuEventKind::SendsDone, None));
        self.transport
            .barrier(haloport_core::backend::deadline_in(timeout))?;
        self.events.push(CpuEvent::now(CpuEventKind::Barrier, None));
        self.iteration = prepared;
        Ok(())
    }

    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        let records = self.check_received();
        let planned = self
            .buffers
            .planned_checks(self.exchange.verify, self.threads);
        observer.checks(BlockChecks {
            records: &records,
            planned: &planned,
            state: &|_| None,
        });
        // No kernels: no device times.
        observer.cpu_events(std::mem::take(&mut self.events));
        Ok(())
    }

    fn buffer_coherence(&self) -> (Coherence, Coherence) {
        self.buffers.coherence()
    }
}

impl<B: Backend, T: HostTransport> MpiOnly<B, T> {
    /// Checks the received data as unpack would, on the CPU, after the timed region.
    fn check_received(&mut self) -> Vec<hp_block_check> {
        let Some(iteration) = self.iteration.take() else {
            return vec![hp_block_check::default(); self.buffers.blocks()];
        };
        (0..self.buffers.blocks())
            .map(|b| {
                let source = self.buffers.pattern().blocks[b].source;
                let region = self.buffers.recv_region(b);
                // SAFETY: the region is valid for its elems; its receive completed (the
                // iteration waited for all) and nothing writes it until the next iteration.
                let recv = unsafe { std::slice::from_raw_parts(region.as_ptr(), region.elems()) };
                check_block(recv, self.exchange.verify, self.threads, |i| {
                    packed_value(iteration, source, b as u32, i)
                })
            })
            .collect()
    }
}
