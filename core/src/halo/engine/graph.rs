//! Exchanges captured into a graph and replayed (SPEC 18): a step's launches queued once,
//! replayed with one call per step pair, no host work inside.
//!
//! Between [`MessageExchange::begin_capture`] and [`MessageExchange::end_capture`], `start`
//! and `finish` queue their launches on the capturing stream as always, but record no events
//! and wait for nothing: the backend holds the launches instead of running them. Device-direct,
//! NCCL and local messages can be captured; one through MPI needs the CPU between pack and
//! unpack, so capture is refused, naming it.
//!
//! Epochs. Every launch carries the epoch it was queued for, and flags compare epochs, so a
//! replay must see new ones. A captured launch's epoch is moved on by a word in device memory
//! (`hp_regions_args.epoch_base`) that the graph's last node adds its exchange count to
//! (`hp_epoch_step`); a replay after exchanges outside the graph first sets the word. Receive
//! slots alternate with the epoch's parity, and the captured tables name one slot each: a
//! graph holds an even number of exchanges, and replays only an even number of exchanges
//! after its capture.

// Launches of the epoch kernel and of graphs take raw device addresses.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Ending, Health, InFlight, MessageExchange, Payload};
use crate::backend::{Backend, DeviceMemory, Launch, LaunchDims};
use crate::error::{Error, Result};
use crate::halo::field::FieldMemory;
use crate::shared::hp_epoch_args;

/// A fresh number for each exchange, so that a graph replays only on the exchange it came from.
pub(super) fn next_exchange_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a capture in progress has gathered.
pub(crate) struct Capture<B: Backend> {
    /// The capturing stream ([`Backend::stream_id`]).
    stream: u64,
    /// The exchange's epoch and state when the capture began.
    first_epoch: u64,
    in_flight: InFlight,
    /// The word the captured launches add to their epoch.
    pub(super) base: B::DeviceMemory,
    /// The fields the captured launches use.
    pub(super) keep: Vec<Arc<FieldMemory<B>>>,
    /// Fused mode's signal launches captured (their epoch lives in device memory: a replay
    /// moves it on by itself).
    pub(super) fused: u64,
}

/// What a graph's launches use: kept by the graph, and by the exchange while a replay may run.
pub(crate) struct GraphParts<B: Backend> {
    graph: B::Graph,
    base: B::DeviceMemory,
    _keep: Vec<Arc<FieldMemory<B>>>,
}

/// Exchanges (and whatever else the caller queued between them) captured once by
/// [`HaloExchange::begin_capture`](crate::halo::HaloExchange::begin_capture) and
/// [`HaloExchange::end_capture`](crate::halo::HaloExchange::end_capture), replayed by
/// [`HaloExchange::replay`](crate::halo::HaloExchange::replay).
pub struct ExchangeGraph<B: Backend> {
    parts: Arc<GraphParts<B>>,
    /// The exchange it was captured from.
    exchange: u64,
    /// The exchange's epoch before the first captured exchange.
    first_epoch: u64,
    /// Exchanges per replay (even).
    exchanges: u64,
    /// What the base word holds once the replays queued so far ran.
    base_after: u64,
}

impl<B: Backend> std::fmt::Debug for ExchangeGraph<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeGraph")
            .field("exchanges", &self.exchanges)
            .field("first_epoch", &self.first_epoch)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> ExchangeGraph<B> {
    /// How many exchanges one replay runs.
    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }
}

impl<B: Backend> MessageExchange<'_, B> {
    /// Starts capturing on `stream`: until [`Self::end_capture`], `start` and `finish` (on
    /// this stream only) and whatever else the caller queues there are captured, not run.
    /// Waits first for every kernel of earlier exchanges.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first neighbour through MPI, if any;
    /// [`Error::Usage`] while capturing or between `start` and `finish`;
    /// [`Error::Unsupported`] on a backend without graphs; backend and time-out errors.
    pub fn begin_capture(&mut self, stream: &B::Stream) -> Result<()> {
        self.usable()?;
        if self.capture.is_some() {
            return Err(Error::Usage("begin_capture called while capturing".into()));
        }
        if self.in_flight.started() {
            return Err(Error::Usage(
                "begin_capture called between start and finish".into(),
            ));
        }
        if self.payload == Payload::Synthetic {
            return Err(Error::Internal(
                "synthetic exchanges are not captured".into(),
            ));
        }
        if let Some(i) = self.routes.iter().position(|r| r.link.through_mpi()) {
            let entry = &self.entries[i];
            return Err(Error::InvalidInput(format!(
                "the halo exchange cannot be captured into a graph: its {} messages with rank {} go through MPI, {} (MPI needs the CPU between pack and unpack); only device-direct, nccl and local neighbours can be captured (transport ipc on one node, nccl, or auto where NCCL loads)",
                entry.name,
                entry.peer,
                if self.routes[i].link == super::Link::Staged {
                    "host-staged"
                } else {
                    "from device memory"
                }
            )));
        }
        let quiet = self.wait_inner();
        self.fail_on(quiet)?;
        let base = self.backend.alloc_device(8)?;
        self.backend.begin_capture(stream)?;
        self.capture = Some(Capture {
            stream: self.backend.stream_id(stream),
            first_epoch: self.epoch,
            in_flight: self.in_flight,
            base,
            keep: Vec::new(),
            fused: 0,
        });
        Ok(())
    }

    /// Ends the capture on `stream` (also after an error inside it) and returns the graph.
    /// Nothing captured has run: the exchange is as it was before [`Self::begin_capture`].
    ///
    /// # Errors
    /// [`Error::Usage`] without a capture, when it ended between `start` and `finish`, or
    /// when it held an odd number of exchanges (or none); an error of the capture itself (the
    /// exchange's, or the backend's for work that cannot be captured).
    pub fn end_capture(&mut self, stream: &B::Stream) -> Result<ExchangeGraph<B>> {
        let capture = self
            .capture
            .take()
            .ok_or_else(|| Error::Usage("end_capture called without begin_capture".into()))?;
        let exchanges = self.epoch - capture.first_epoch;
        let unusable = if self.in_flight.started() {
            Some(Error::Usage(
                "the capture ended between start and finish: capture whole exchanges".into(),
            ))
        } else if (exchanges == 0 && capture.fused == 0) || exchanges % 2 == 1 {
            Some(Error::Usage(format!(
                "a graph must hold an even number of exchanges (the receive slots alternate from one exchange to the next); this capture held {exchanges}"
            )))
        } else {
            None
        };
        self.epoch = capture.first_epoch;
        self.in_flight = capture.in_flight;
        let queued = if unusable.is_none() && matches!(self.health, Health::Usable) {
            // The graph's last node moves its epochs on for the next replay.
            // SAFETY: the word lives in the graph's parts, which every replay keeps alive
            // until it completed.
            unsafe { self.launch_epoch_step(capture.base.device_addr(), exchanges, false, stream) }
        } else {
            Ok(())
        };
        // Always ended, so that the stream is usable again whatever failed.
        let graph = self.backend.end_capture(stream);
        self.usable()?;
        if let Some(e) = unusable {
            return Err(e);
        }
        queued?;
        Ok(ExchangeGraph {
            parts: Arc::new(GraphParts {
                graph: graph?,
                base: capture.base,
                _keep: capture.keep,
            }),
            exchange: self.id,
            first_epoch: capture.first_epoch,
            exchanges,
            base_after: 0,
        })
    }

    /// Queues one replay of `graph` on `stream`, after everything queued there before and
    /// after the last exchange's kernels wherever they ran: its exchanges run as captured,
    /// each with a new epoch. [`Self::wait`] waits for it like for an exchange.
    ///
    /// # Errors
    /// [`Error::Usage`] for a graph of another exchange, while capturing, between `start` and
    /// `finish`, or after an odd number of exchanges outside the graph since its capture;
    /// an earlier exchange's failure on the device; backend errors.
    pub fn replay(&mut self, graph: &mut ExchangeGraph<B>, stream: &B::Stream) -> Result<()> {
        self.usable()?;
        if graph.exchange != self.id {
            return Err(Error::Usage(
                "this graph was captured from another halo exchange".into(),
            ));
        }
        if self.capture.is_some() || self.in_flight.started() {
            return Err(Error::Usage(
                "replay called while capturing or between start and finish".into(),
            ));
        }
        let since = self.epoch - graph.first_epoch;
        // A graph of fused steps alone names no receive slot.
        if graph.exchanges > 0 && since % 2 == 1 {
            return Err(Error::Usage(format!(
                "{since} exchanges ran outside this graph since its capture: after an odd number its receive slots no longer line up; run one more exchange, or capture again"
            )));
        }
        let result = self.replay_inner(graph, since, stream);
        self.fail_on(result)
    }

    fn replay_inner(
        &mut self,
        graph: &mut ExchangeGraph<B>,
        since: u64,
        stream: &B::Stream,
    ) -> Result<()> {
        self.check_status()?;
        let id = self.backend.stream_id(stream);
        if self.in_flight.pending_unpack().is_some() && id != self.unpack_stream {
            self.backend.stream_wait_event(stream, &self.last_unpack)?;
        }
        self.in_flight = InFlight::Unrecorded;
        if graph.base_after != since {
            let word = graph.parts.base.device_addr();
            // SAFETY: the word lives in the graph's parts, kept in `replayed` below until
            // the replay is seen complete.
            unsafe { self.launch_epoch_step(word, since, true, stream)? };
        }
        // SAFETY: (1) the graph's launches name the exchange's tables (pinned in its cache,
        // freed only with the exchange), counters, flags, mailboxes and status words (as for
        // `launch`), the base word and the fields (in the graph's parts, kept in `replayed`
        // until the replay is seen complete); (2) they were checked when captured.
        unsafe { self.backend.launch_graph(&graph.parts.graph, stream)? };
        self.replayed.push(Arc::clone(&graph.parts));
        graph.base_after = since + graph.exchanges;
        self.epoch += graph.exchanges;
        self.backend.record_event(&self.last_pack, stream)?;
        self.backend.record_event(&self.last_unpack, stream)?;
        if let Some(fused) = self.memory.fused.as_deref() {
            fused.mark(self.backend, stream)?;
        }
        self.finished_on(id, Ending::Unpack)
    }

    /// Refuses a call on another stream than the capturing one.
    pub(super) fn check_capturing_stream(&self, stream: &B::Stream) -> Result<()> {
        match &self.capture {
            Some(c) if c.stream != self.backend.stream_id(stream) => Err(Error::Usage(
                "while capturing, start and finish must use the capturing stream".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Queues `hp_epoch_step` on `stream`: the u64 at `word` becomes `value` (`set`) or grows
    /// by it.
    ///
    /// # Safety
    /// `word` is device memory of this backend that stays allocated until the launch (or
    /// every replay of the graph that captured it) completed.
    unsafe fn launch_epoch_step(
        &self,
        word: u64,
        value: u64,
        set: bool,
        stream: &B::Stream,
    ) -> Result<()> {
        let args = hp_epoch_args {
            word,
            value,
            set: u32::from(set),
            reserved: 0,
        };
        let dims = LaunchDims {
            blocks: 1,
            threads: 1,
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { self.backend.launch(Launch::EpochStep(&args), dims, stream) }
    }
}
