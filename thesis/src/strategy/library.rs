//! The thesis's synthetic workload as a payload of the library's machinery (SPEC 13): every
//! pattern block becomes a message of the `MessageExchange` that runs the halo exchange, its
//! one region synthetic (`HP_PAYLOAD_SYNTHETIC`): pack stores the thesis's values, unpack checks
//! them (the thesis's sample, or every element). Strategy (`base`, `tq`:
//! [`HaloStrategy`](haloport_core::halo::HaloStrategy)), transport (`mpi`, `ipc`), backend and payload
//! are then four independent axes, and `lib-{base|tq}-{mpi|ipc}` run the thesis's workloads,
//! verified and timed alike, beside the thesis's own variants.
//!
//! A block whose destination and source are one peer is one entry both ways; otherwise it is
//! two, one to the destination and one from the source, each tagged with the block's id.
//! Iterations keep the thesis protocol: each ends with an MPI barrier.
//!
//! Device timelines: the region kernels stamp every grid block of every exchange, as the
//! thesis's kernels stamp every block (the measurement keeps the last run's); a pattern block's
//! pack phase spans the grid blocks of the message that sends it, from the first one's start
//! (before its wait for the slot) to the last one's end (after its count and flag), its unpack
//! phase those of the message that receives it (from the end of the first one's wait for the
//! data).

use mpi::topology::{Communicator, SimpleCommunicator};

use crate::observe::{BlockChecks, Observer};
use crate::strategy::{ExchangeOptions, Fault, Strategy};
use crate::timeline::{CpuEvent, CpuEventKind};
use crate::variant::LibraryOptions;
use haloport_core::backend::{Backend, Coherence};
use haloport_core::domain::Subarray;
use haloport_core::error::{Error, Result};
use haloport_core::halo::messages::{
    Entry, EntryName, EntryTable, MessageExchange, Messages, Payload,
};
use haloport_core::halo::HaloOptions;
use haloport_core::pattern::RankPattern;
use haloport_core::regions::ELEMS_PER_THREAD;
use haloport_core::shared::{hp_block_check, hp_block_times};
use haloport_core::verify::planned_checks;

/// The thesis's synthetic blocks exchanged by the library's halo machinery.
pub struct LibraryExchange<'b, B: Backend> {
    // Drop order: the exchange waits for its kernels before the stream goes.
    exchange: MessageExchange<'b, B>,
    stream: B::Stream,
    /// Per pattern block, the entry that sends it.
    sending: Vec<usize>,
    /// Per pattern block, the entry that receives it.
    receiving: Vec<usize>,
    /// Per pattern block, the checks unpack makes (the thesis's sample, or every element).
    planned: Vec<u64>,
    timeout: std::time::Duration,
    events: Vec<CpuEvent>,
}

/// Rank `pattern.rank`'s entries: one per block both ways where the block's destination is
/// also its source, else one to the destination and one from the source.
fn entries_of(pattern: &RankPattern) -> Vec<Entry> {
    let mut entries = Vec::with_capacity(pattern.blocks.len());
    for (b, block) in pattern.blocks.iter().enumerate() {
        let tag = b as i32;
        let region = Some(Subarray {
            offset: 0,
            count: [block.elems, 1, 1],
            stride: [1, block.elems, block.elems],
        });
        let entry = |peer: i32, send: bool, recv: bool| Entry {
            peer,
            send_tag: tag,
            recv_tag: tag,
            send: region.filter(|_| send),
            recv: region.filter(|_| recv),
            name: EntryName::Block(b),
        };
        if block.dest == block.source {
            entries.push(entry(block.dest, true, true));
        } else {
            entries.push(entry(block.dest, true, false));
            entries.push(entry(block.source, false, true));
        }
    }
    entries
}

impl<'b, B: Backend> LibraryExchange<'b, B> {
    /// Sets up the exchange of `patterns` (every rank's) for this rank of `world`, `threads`
    /// threads per GPU block. Collective over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for faults other than `drop-send` (the blocks travel as the
    /// library's messages, with no CPU step to corrupt or shorten); the engine's set-up
    /// errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        patterns: &[RankPattern],
        threads: u32,
        options: LibraryOptions,
        exchange: ExchangeOptions,
    ) -> Result<Self> {
        let rank = world.rank();
        let mut entries = EntryTable::default();
        for (r, p) in patterns.iter().enumerate() {
            entries.push_list(r as i32, &entries_of(p));
        }
        let ours = entries
            .get(rank)
            .ok_or_else(|| Error::Internal(format!("no pattern for rank {rank}")))?
            .to_vec();
        let dropped = match exchange.fault {
            None => None,
            Some(Fault::DropSend { block }) => ours
                .iter()
                .position(|e| e.send.is_some() && e.send_tag == block as i32),
            Some(other) => {
                return Err(Error::InvalidInput(format!(
                    "--inject {other}: the library variants carry blocks as the library's messages; they take drop-send only"
                )))
            }
        };
        let pattern = &patterns[rank as usize];
        let entry_of = |b: usize, send: bool| {
            ours.iter()
                .position(|e| {
                    if send {
                        e.send.is_some() && e.send_tag == b as i32
                    } else {
                        e.recv.is_some() && e.recv_tag == b as i32
                    }
                })
                .ok_or_else(|| {
                    let way = if send { "sending" } else { "receiving" };
                    Error::Internal(format!("block {b} has no {way} entry"))
                })
        };
        let (sending, receiving) = (0..pattern.blocks.len())
            .map(|b| Ok((entry_of(b, true)?, entry_of(b, false)?)))
            .collect::<Result<(Vec<_>, Vec<_>)>>()?;
        let halo = HaloOptions {
            transport: options.transport,
            strategy: options.strategy,
            timeout: exchange.timeout,
            threads,
            elems_per_thread: ELEMS_PER_THREAD as u32,
            signalled_blocks: exchange.lib_blocks,
            fault: None,
            ..HaloOptions::default()
        };
        // One field of f64 cells: the thesis's blocks.
        let messages = Messages {
            entries,
            cells: vec![8],
            word: 8,
            payload: Payload::Synthetic,
        };
        let mut engine = MessageExchange::new(backend, world, &messages, halo, dropped)?;
        engine.set_verify(exchange.verify);
        engine.record_device_times(true);
        Ok(LibraryExchange {
            exchange: engine,
            stream: backend.create_stream()?,
            sending,
            receiving,
            planned: pattern
                .blocks
                .iter()
                .map(|b| planned_checks(exchange.verify, threads, b.elems))
                .collect(),
            timeout: exchange.timeout,
            events: Vec::with_capacity(8),
        })
    }
}

impl<B: Backend> Strategy for LibraryExchange<'_, B> {
    fn iteration(&mut self, iteration: u32) -> Result<()> {
        self.exchange.set_iteration(iteration);
        // One launch where every message is device-direct, else the pack and the unpack.
        self.exchange
            .exchange(Vec::new(), Vec::new(), &self.stream)?;
        self.events.push(CpuEvent::now(CpuEventKind::Launch, None));
        self.exchange.wait()?;
        self.events
            .push(CpuEvent::now(CpuEventKind::KernelsDone, None));
        self.exchange
            .barrier(haloport_core::backend::deadline_in(self.timeout))?;
        self.events.push(CpuEvent::now(CpuEventKind::Barrier, None));
        Ok(())
    }

    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        let records: Vec<hp_block_check> = match self.exchange.take_checks() {
            Ok(per_entry) => self.receiving.iter().map(|&e| per_entry[e]).collect(),
            // Before the first exchange there is nothing to report: no checks.
            Err(_) if !self.exchange.has_run() => {
                vec![hp_block_check::default(); self.receiving.len()]
            }
            Err(e) => return Err(e),
        };
        observer.checks(BlockChecks {
            records: &records,
            planned: &self.planned,
            state: &|_| None,
        });
        // Taken after every exchange (which zeroes them), kept only when wanted.
        if self.exchange.has_run() {
            let per_entry = self.exchange.take_device_times()?;
            if observer.wants_device_times() {
                let times: Vec<hp_block_times> = self
                    .sending
                    .iter()
                    .zip(&self.receiving)
                    .map(|(&s, &r)| hp_block_times {
                        unpack_start: per_entry[r].unpack_start,
                        unpack_end: per_entry[r].unpack_end,
                        ..per_entry[s]
                    })
                    .collect();
                observer.device_times(&times);
            }
        }
        observer.cpu_events(std::mem::take(&mut self.events));
        Ok(())
    }

    /// Host staging is the engine's own coherent pinned memory.
    fn buffer_coherence(&self) -> (Coherence, Coherence) {
        (Coherence::Coherent, Coherence::Coherent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use haloport_core::pattern::BlockSpec;

    #[test]
    fn a_block_is_one_entry_when_it_goes_and_comes_from_one_peer_else_two() {
        let pattern = RankPattern {
            rank: 1,
            blocks: vec![
                BlockSpec {
                    elems: 10,
                    dest: 0,
                    source: 0,
                },
                BlockSpec {
                    elems: 20,
                    dest: 2,
                    source: 0,
                },
            ],
        };
        let entries = entries_of(&pattern);
        assert_eq!(entries.len(), 3);
        assert_eq!((entries[0].peer, entries[0].send_tag), (0, 0));
        assert!(entries[0].send.is_some() && entries[0].recv.is_some());
        assert_eq!(entries[1].peer, 2);
        assert!(entries[1].send.is_some() && entries[1].recv.is_none());
        assert_eq!((entries[2].peer, entries[2].recv_tag), (0, 1));
        assert!(entries[2].send.is_none() && entries[2].recv.is_some());
        assert_eq!(entries[2].recv.map(|s| s.elems()), Some(20));
        assert_eq!(entries[1].name.to_string(), "block 1");
    }
}
