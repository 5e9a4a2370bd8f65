//! The machinery under every exchange of messages between ranks: each rank's
//! entries, one per peer and direction of travel, each message a list of regions that the
//! region kernels pack and unpack.
//!
//! Per exchange (epoch e = 1, 2, ...): one pack launch covers every region of every message,
//! one unpack launch every received region; where every message is device-direct or a local
//! copy (and one is device-direct), one launch does both (`HP_REGIONS_FUSED`, with copies
//! `HP_REGIONS_FUSED_COPIES`, of synthetic regions only `HP_REGIONS_FUSED_SYNTHETIC`,
//! [`FusedTable`]). How a message travels is chosen per entry
//! ([`Link`]): to this rank itself copied by the pack straight into the halo it fills
//! (`HP_PAYLOAD_COPY`, nothing to unpack; a synthetic block through its own receive slot);
//! device-direct into a same-node peer's receive slot e & 1, announced by the peer's arrival
//! flag and guarded by our credit flag (the peer unpacked slot e & 1 of epoch e - 2), all on the
//! GPU; or host-staged: pack into pinned memory, MPI, unpack from pinned memory. Only
//! host-staged messages need the CPU between pack and unpack.
//!
//! What the regions hold is the [`Payload`]: the halos of the user's fields
//! ([`HaloExchange`](super::HaloExchange)), or the thesis's synthetic blocks, packed as values
//! and checked on arrival (the `lib-*` variants of `haloport-thesis`).
//!
//! This file holds the exchange's state and its phases (`start`, `finish`, `wait`); beside it,
//! `setup` builds it, `launch` queues the region kernels, `staged` moves host-staged messages,
//! `status` reads and raises the words the kernels and the CPU share, `tables` and `table_sets`
//! keep the region tables of each set of fields, `graph` captures steps into graphs,
//! `instrument` serves the thesis benchmark, and `close` ends it.

// Launches take raw device addresses of tables, fields and peers' memory; flags in pinned
// memory are read through atomics.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mpi::topology::{Communicator, SimpleCommunicator};

use super::exchange::{HaloFault, HaloOptions, HaloStrategy};
use super::field::FieldMemory;
use super::layout::{receiving_entry, sending_entry, Entry, EntryTable, Link, Mailbox, Side};
use super::routes::{self, LinkFacts, Locality, RouteChoice, RouteOrder};
use crate::backend::{
    deadline_in, poll_until, Backend, Coherence, DeviceMemory, Launch, LaunchDims, PinnedMemory,
};
use crate::collective::agree;
use crate::error::{Error, Result};
use crate::shared::{
    hp_block_check, hp_block_times, hp_message_signal, hp_region, hp_regions_args,
    HP_MESSAGE_ABORTED, HP_MESSAGE_OK, HP_MESSAGE_TIMED_OUT, HP_REGIONS_PLAIN,
};
use crate::transport::mpi::MpiTransport;
use crate::transport::node::{share_within_node, NodeShare, PeerAccess};
use crate::transport::TransportKind;
use crate::transport::{HostRegion, HostTransport, Transport};
use crate::verify::{merge_checks, Verify};

/// Where one entry's outgoing and incoming messages go, resolved at set-up.
#[derive(Debug, Clone, Copy)]
struct Route {
    link: Link,
    /// Outgoing: the receiver's buffer for slot 0 and slot 1, its arrival flag, our credit flag.
    dest: [u64; 2],
    dest_arrival: u64,
    credit: u64,
    /// Incoming: our buffer for slot 0 and slot 1, our arrival flag, the sender's credit flag.
    recv: [u64; 2],
    arrival: u64,
    source_credit: u64,
}

/// The stream a started exchange's one launch runs on beside the caller's work, and the marker
/// that orders it after what the caller queued before `start`.
struct Beside<B: Backend> {
    stream: B::Stream,
    fork: B::Event,
}

/// The region table of one side (pack or unpack) for one slot parity.
struct SideTable<M> {
    /// In device memory: the regions, then the message signals.
    memory: M,
    /// The same regions: launches carry them in their parameters where they fit
    /// ([`hp_regions_args::with_inline_table`]).
    regions: Vec<hp_region>,
    /// The message signals after the regions in `memory`, one per entry.
    signals: Vec<hp_message_signal>,
    /// The launch's grid blocks.
    blocks: u32,
    /// `HP_REGIONS_*`: which form of the region kernels the side runs
    /// ([`regions::kernel_form`](crate::regions::kernel_form)).
    form: u32,
}

/// Both sides' tables of one slot parity as one (`HP_REGIONS_FUSED`): the pack regions, then
/// the unpack regions naming messages `n..2n` (their status words follow the pack ones); in
/// `_memory` the regions, then the pack signals, then the unpack ones (read by the kernels
/// through `args` alone).
struct FusedTable<B: Backend> {
    _memory: B::DeviceMemory,
    /// A u64 per grid block that the block raises to the epoch once its work is done
    /// (`hp_regions_args.done`; coherent pinned): the host polls them instead of an event.
    done: B::PinnedMemory,
    /// The launch's argument, built with the table (its inline copy too): each launch sets
    /// only what changes from one exchange to the next ([`MessageExchange::launch_fused`]).
    args: RefCell<Box<hp_regions_args>>,
    /// The larger side's grid: block b packs its pack block b, then unpacks its unpack block b.
    blocks: u32,
}

/// How many sets of fields keep their region tables: a code that exchanges ever new fields
/// (reallocating them) would otherwise grow the cache without bound.
pub(crate) const TABLE_SETS: usize = 8;

mod close;
mod graph;
mod instrument;
mod launch;
mod nccl;
mod setup;
mod staged;
mod status;
mod table_sets;
mod tables;

use status::StatusLayout;

pub use graph::ExchangeGraph;
use graph::{Capture, GraphParts};
use table_sets::TableSets;

/// The region tables of one set of fields, for each slot parity.
struct Tables<B: Backend> {
    /// The epoch that last used them (which set to evict).
    last_used: u64,
    /// A captured graph's launches name them: never evicted.
    pinned: bool,
    pack: [SideTable<B::DeviceMemory>; 2],
    unpack: [SideTable<B::DeviceMemory>; 2],
    /// The one-launch exchange of each slot parity ([`MessageExchange::fuse`]), where every
    /// message is device-direct and every rank's grid on the device fits on it at once.
    fused: [Option<FusedTable<B>>; 2],
    /// Per entry, the pack grid blocks serving its outgoing message (first, count): valid
    /// only where no regions were paired (the synthetic payload).
    pack_ranges: Vec<Option<(u32, u32)>>,
    /// Per entry, the unpack grid blocks serving its incoming message (first, count).
    unpack_ranges: Vec<Option<(u32, u32)>>,
}

impl<B: Backend> Tables<B> {
    /// The most grid blocks any of the launches has.
    fn max_grid(&self) -> u32 {
        self.pack
            .iter()
            .chain(&self.unpack)
            .map(|t| t.blocks)
            .max()
            .unwrap_or(0)
    }
}

/// What the regions of the messages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// Regions of the fields whose addresses key each exchange.
    Fields,
    /// The thesis's synthetic blocks (SPEC 5): entry i's outgoing message is block
    /// `send_tag` of this rank, its incoming one block `recv_tag` of the peer, f64; unpack
    /// checks every element (`HP_PAYLOAD_SYNTHETIC`).
    Synthetic,
}

/// The memory of an exchange that kernels use: ours (tables, counters, flags, staging, the
/// mailbox) and our peers' (their mailboxes, opened).
struct Memory<B: Backend> {
    /// Fused mode's tables and the neighbours' fields it opened: dropped first (the
    /// neighbours' mappings before our memory).
    fused: Option<Box<crate::halo::fused_exchange::FusedExchange<B>>>,
    /// The NCCL communicator of NCCL messages: destroyed first (its last operations are done
    /// once the kernels are), taken and aborted when the exchange fails.
    nccl: Option<nccl::NcclLinks>,
    /// Same-node peers' mailboxes, opened (device-direct only): unmapped before ours is freed.
    _share: Option<NodeShare<B>>,
    /// At most [`TABLE_SETS`] sets, by the fields' addresses.
    tables: TableSets<Tables<B>>,
    /// Tables evicted from `tables` that a queued kernel may still read: freed once an unpack
    /// recorded after their last use is seen complete.
    retired: Vec<Tables<B>>,
    /// A u32 pair per message (pack and unpack blocks).
    counters: B::DeviceMemory,
    abort: Box<DeviceAbort<B>>,
    staging: Staging<B>,
    /// Pinned: u32 pack status per message, u32 unpack status per message, then at the next
    /// 8-byte boundary the u64 abort flag, (taskqueue) a u64 packed flag and a u64 arrived
    /// flag per message ([`StatusLayout`]).
    status: B::PinnedMemory,
    /// Our receive slots and flags, which same-node peers store into.
    _mailbox: B::DeviceMemory,
    /// Synthetic payload: a check record per unpack grid block (coherent pinned).
    checks: Option<B::PinnedMemory>,
    /// Once device times are recorded ([`MessageExchange::record_device_times`]): an
    /// `hp_block_times` per grid block of the larger launch (coherent pinned), which pack and
    /// unpack share (each stamps its own fields).
    times: Option<B::PinnedMemory>,
}

/// The u64 abort word the kernels' waits poll, in device memory: polled in pinned host memory,
/// each poll a read across PCIe, it slowed every kernel beside the waiting blocks 150-fold
/// (results/HISTORY.md: h200-pack-beside-waiters). The CPU raises it by a copy from the status
/// block's abort word on `stream`.
struct DeviceAbort<B: Backend> {
    word: B::DeviceMemory,
    stream: B::Stream,
}

/// Where MPI moves the messages that travel through it: pinned host memory for host-staged
/// ones, device memory for those over GPU-aware MPI.
struct Staging<B: Backend> {
    send: Arc<Mutex<B::PinnedMemory>>,
    recv: Arc<Mutex<B::PinnedMemory>>,
    send_host: *mut u8,
    recv_host: *mut u8,
    device_send: Arc<Mutex<B::DeviceMemory>>,
    device_recv: Arc<Mutex<B::DeviceMemory>>,
}

/// Bytes of staging the messages whose link is `staged` need: as far as they reach in the
/// slot layout, a token 8 where no message travels so (large's slots are 141 MB, which a device-direct
/// exchange would pin for nothing).
fn staging_extent(layout: &Mailbox, links: &[Link], staged: impl Fn(Link) -> bool) -> u64 {
    links
        .iter()
        .enumerate()
        .filter(|(_, &l)| staged(l))
        .map(|(i, _)| layout.offsets[i] + layout.message_bytes[i])
        .max()
        .unwrap_or(8)
}

/// What the exchange has queued that the CPU has not yet seen complete: the one state that
/// `start`, `finish`, `wait`, captures and `close` move through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InFlight {
    /// No exchange was started yet.
    Never,
    /// Kernels were queued with no event after them: while a call queues them, and for good
    /// once that call failed midway. Nothing can say when they end, so `close` leaks.
    Unrecorded,
    /// Between `start` and `finish`: the pack queued, `last_pack` recorded after it (outside
    /// a capture). `unpack_before`: the previous exchange's unpack is not yet seen complete
    /// (its `last_unpack` says when).
    Packed { unpack_before: bool },
    /// Between `start` and `finish`: `start` queued the whole exchange as one launch beside
    /// the caller's stream; its done words (and `last_unpack`) say when it ends.
    LaunchedBeside,
    /// After `finish`: the exchange ended as `how` says; `pending` until seen complete.
    Finished { how: Ending, pending: bool },
}

/// How an exchange's last kernels end, and so how their end is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// An unpack kernel, `last_unpack` recorded after it.
    Unpack,
    /// One launch that packed and unpacked: its done words rise a few microseconds before
    /// `last_unpack` (recorded after it too) would say so.
    OneLaunch,
}

impl InFlight {
    /// Between `start` and `finish`.
    fn started(self) -> bool {
        matches!(self, InFlight::Packed { .. } | InFlight::LaunchedBeside)
    }

    /// The last unpack queued and not yet seen complete, and how to see its end.
    fn pending_unpack(self) -> Option<Ending> {
        match self {
            InFlight::Packed {
                unpack_before: true,
            } => Some(Ending::Unpack),
            InFlight::LaunchedBeside => Some(Ending::OneLaunch),
            InFlight::Finished { how, pending: true } => Some(how),
            _ => None,
        }
    }
}

/// Whether the exchange may run: every exchange after an error returns that error.
enum Health {
    Usable,
    /// The error this exchange failed with: every later call returns it again.
    Failed(Error),
    /// Closed (by [`MessageExchange::close`] or a failed close): `drop` has nothing left to do.
    Closed,
}

/// The messages of one rank's exchange with its peers, set up once and run many times:
/// [`start`](Self::start), [`finish`](Self::finish), [`wait`](Self::wait).
///
/// Every exchange after an error returns that error: a failed exchange leaves peers'
/// counters and flags out of step, so the exchange must be built anew.
pub struct MessageExchange<'b, B: Backend> {
    // Drop order: pending MPI requests refer to the staging, queued kernels to the tables.
    mpi: MpiTransport,
    backend: &'b B,
    rank: i32,
    entries: Vec<Entry>,
    /// Bytes of one cell of each field, and the word they are moved in.
    cells: Vec<u64>,
    word: u32,
    /// The entry whose outgoing message an injected fault drops (never a local one).
    dropped: Option<usize>,
    payload: Payload,
    /// The global iteration synthetic values are made of.
    iteration: u32,
    /// Which elements a synthetic unpack checks.
    verify: Verify,
    /// The region kernels stamp `hp_block_times` ([`Self::record_device_times`]).
    record_times: bool,
    /// Where this rank's messages lie in its receive slots and send staging.
    layout: Mailbox,
    options: HaloOptions,
    routes: Vec<Route>,
    /// Each entry's route and why it was chosen, in entry order.
    choices: Vec<RouteChoice>,
    /// Some message is host-staged (the CPU moves it between pack and unpack).
    staged_routes: bool,
    /// Everything kernels (ours and peers') touch; freed in `drop` only once shown unused.
    memory: ManuallyDrop<Memory<B>>,
    /// 64-bit: flags carry it, and it never wraps.
    epoch: u64,
    /// Recorded after each pack, on `start`'s stream.
    last_pack: B::Event,
    /// The stream of the last pack ([`Backend::stream_id`]).
    pack_stream: u64,
    last_unpack: B::Event,
    /// The stream of the last unpack.
    unpack_stream: u64,
    in_flight: InFlight,
    /// Where a started exchange runs as one launch when every message is device-direct or a
    /// local copy ([`MessageExchange::fuse`]): its blocks wait on the device for each message
    /// and unpack it as it comes, as ipc-tq's do, beside whatever the caller queues between
    /// `start` and `finish` (`None`: some message is host-staged, or none is device-direct, and
    /// the unpack follows the pack on the caller's stream).
    beside: Option<Box<Beside<B>>>,
    /// Ranks of this node on this rank's device, itself included: each may queue its own
    /// one launch, whose blocks wait for the others' ([`MessageExchange::fuse`]).
    ranks_on_device: u32,
    /// The last one launch's done words (`FusedTable::done`): their host address and count,
    /// and how many of them, from the first, were seen raised to its epoch. The table outlives
    /// the launch (an evicted one is retired until an unpack after it is seen complete).
    done_words: (usize, u32),
    done_seen: std::cell::Cell<u32>,
    /// The stream the last `finish` made wait for an unpack queued beside.
    joined: Option<u64>,
    /// Fields the queued kernels use, until `last_unpack` is seen complete.
    in_use: Vec<Arc<FieldMemory<B>>>,
    /// The fields (their addresses) of the started exchange, and the index of their tables.
    current: Vec<u64>,
    current_set: usize,
    health: Health,
    /// Names this exchange to the graphs captured from it.
    id: u64,
    /// Between [`Self::begin_capture`] and [`Self::end_capture`]: what the graph will hold.
    capture: Option<Capture<B>>,
    /// Graphs replayed since the last unpack was seen complete (their memory stays).
    replayed: Vec<Arc<GraphParts<B>>>,
}

// SAFETY: the raw staging pointers address allocations the exchange owns (through the Arcs
// beside them); the exchange is driven by one thread at a time.
unsafe impl<B: Backend> Send for Staging<B> {}

/// What every rank of an exchange sends and receives.
pub struct Messages {
    /// The entries of this rank and of each of its peers, by rank (peers' layouts give the
    /// addresses we store into); no other rank's are needed.
    pub entries: EntryTable,
    /// Bytes of one cell of each field (one region per field in every message); a synthetic
    /// block is one field of 8-byte cells.
    pub cells: Vec<u64>,
    /// The word every field's cells are moved in (4 or 8 bytes; it divides every cell).
    pub word: u32,
    /// What the messages carry: the fields' regions, or synthetic blocks.
    pub payload: Payload,
}

impl<'b, B: Backend> MessageExchange<'b, B> {
    /// The backend the exchange runs on.
    pub fn backend(&self) -> &'b B {
        self.backend
    }

    /// How each entry's messages travel, in entry order.
    pub fn links(&self) -> Vec<Link> {
        self.routes.iter().map(|r| r.link).collect()
    }

    /// Each entry's route and why it was chosen, in entry order.
    pub fn route_choices(&self) -> &[RouteChoice] {
        &self.choices
    }

    /// The options the exchange was set up with.
    pub(crate) fn options(&self) -> HaloOptions {
        self.options
    }

    /// The exchange's own communicator (a duplicate of the one it was set up on).
    pub(crate) fn comm(&self) -> &SimpleCommunicator {
        self.mpi.comm()
    }

    /// Sets fused mode up for `sets` on `plan` (whose neighbours are this exchange's entries,
    /// in order). Collective.
    pub(crate) fn fuse_fields(
        &mut self,
        plan: &crate::domain::HaloPlan,
        sets: &[&[&super::Field<B>]],
    ) -> Result<()> {
        self.usable()?;
        if self.memory.fused.is_some() {
            return Err(Error::Usage(
                "fuse called on an exchange already fused".into(),
            ));
        }
        let fused = crate::halo::fused_exchange::FusedExchange::new(
            self.backend,
            self.mpi.comm(),
            plan,
            &self.links(),
            sets,
            self.options.timeout,
        )?;
        self.memory.fused = Some(Box::new(fused));
        Ok(())
    }

    /// Leaves fused mode (its set-up failed after [`Self::fuse_fields`]): its memory goes
    /// before any signal was queued.
    pub(crate) fn unfuse(&mut self) {
        self.memory.fused = None;
    }

    fn fused(&self) -> Result<&crate::halo::fused_exchange::FusedExchange<B>> {
        self.memory
            .fused
            .as_deref()
            .ok_or_else(|| Error::Usage("fused mode was not set up: call fuse first".into()))
    }

    /// [`crate::halo::HaloExchange::fused_start`].
    pub(crate) fn fused_start(&mut self, set: usize, stream: &B::Stream) -> Result<Vec<u64>> {
        self.usable()?;
        let capturing = self.fused_capture(stream)?;
        let fused = self.fused()?;
        fused.start(self.backend, set, stream, capturing)?;
        Ok(fused.descriptors(set)?.0.to_vec())
    }

    /// Whether a fused signal on `stream` is being captured (counted in the capture), refusing
    /// another stream than the capturing one.
    fn fused_capture(&mut self, stream: &B::Stream) -> Result<bool> {
        self.check_capturing_stream(stream)?;
        Ok(match self.capture.as_mut() {
            Some(capture) => {
                capture.fused += 1;
                true
            }
            None => false,
        })
    }

    /// [`crate::halo::HaloExchange::fused_finish`].
    pub(crate) fn fused_finish(&mut self, set: usize, stream: &B::Stream) -> Result<()> {
        self.usable()?;
        let capturing = self.fused_capture(stream)?;
        self.fused()?.finish(self.backend, set, stream, capturing)
    }

    /// [`crate::halo::HaloExchange::fused_descriptors`].
    pub(crate) fn fused_descriptors(&self, set: usize) -> Result<&[crate::shared::haloport_fused]> {
        Ok(self.fused()?.descriptors(set)?.1)
    }

    /// Whether the last exchange packed and unpacked in one launch (no kernel boundary).
    pub fn ran_in_one_launch(&self) -> bool {
        matches!(
            self.in_flight,
            InFlight::LaunchedBeside
                | InFlight::Finished {
                    how: Ending::OneLaunch,
                    ..
                }
        )
    }

    /// Starts an exchange of the messages of the regions at `key` (tables built on first use
    /// of a key) on `stream`: queues the pack (after everything queued before on `stream`),
    /// and sends the host-staged messages once packed. `keep` stays alive until the unpack is
    /// seen complete.
    ///
    /// # Errors
    /// [`Error::Internal`] when an exchange is already started; MPI, backend and time-out
    /// errors.
    pub fn start(
        &mut self,
        key: Vec<u64>,
        keep: Vec<Arc<FieldMemory<B>>>,
        stream: &B::Stream,
    ) -> Result<()> {
        self.usable_unstarted("start called twice without finish in between")?;
        let result = self.start_inner(key, keep, stream);
        self.fail_on(result)
    }

    fn start_inner(
        &mut self,
        key: Vec<u64>,
        keep: Vec<Arc<FieldMemory<B>>>,
        stream: &B::Stream,
    ) -> Result<()> {
        let (id, set) = self.prepare(&key, keep, stream)?;
        self.queue_start(key, id, set, stream)
    }

    /// A blocking exchange: [`Self::start`] and [`Self::finish`] at once. Where every message
    /// is device-direct (and the grids fit), one launch on `stream` packs and unpacks,
    /// ipc-tq's shape; otherwise `start`, then `finish`. The same flags and counters move
    /// either way, so peers may take either path.
    ///
    /// # Errors
    /// As [`Self::start`] and [`Self::finish`].
    pub fn exchange(
        &mut self,
        key: Vec<u64>,
        keep: Vec<Arc<FieldMemory<B>>>,
        stream: &B::Stream,
    ) -> Result<()> {
        self.usable_unstarted("a blocking exchange called between start and finish")?;
        let result = self.exchange_inner(key, keep, stream);
        self.fail_on(result)
    }

    fn exchange_inner(
        &mut self,
        key: Vec<u64>,
        keep: Vec<Arc<FieldMemory<B>>>,
        stream: &B::Stream,
    ) -> Result<()> {
        let (id, set) = self.prepare(&key, keep, stream)?;
        let Some(fused) = self.fused_table(set) else {
            self.queue_start(key, id, set, stream)?;
            return self.finish_inner(stream);
        };
        let launched = self.launch_fused(fused, stream);
        self.in_flight = InFlight::Unrecorded;
        self.done_words = launched?;
        self.done_seen.set(0);
        self.backend.record_event(&self.last_unpack, stream)?;
        self.joined = None;
        self.current = key;
        self.current_set = set;
        self.finished_on(id, Ending::OneLaunch)
    }

    /// The exchange's kernels were queued on the stream of id `id`, `last_unpack` recorded
    /// after them (ending as `how` says): it is finished, and in checked mode waited for.
    fn finished_on(&mut self, id: u64, how: Ending) -> Result<()> {
        self.in_flight = InFlight::Finished { how, pending: true };
        self.pack_stream = id;
        self.unpack_stream = id;
        if self.options.checked {
            self.wait_inner()?;
        }
        Ok(())
    }

    /// Everything before an exchange's first launch: earlier failures, the order after the
    /// last unpack, the new epoch, host-staged receives posted, the region tables of `key`,
    /// the fields kept. Returns the stream's id and the index of `key`'s tables.
    fn prepare(
        &mut self,
        key: &[u64],
        keep: Vec<Arc<FieldMemory<B>>>,
        stream: &B::Stream,
    ) -> Result<(u64, usize)> {
        self.check_capturing_stream(stream)?;
        // A GPU-side wait of an earlier exchange that gave up, as far as the device got.
        self.check_status()?;
        // Host-staged receives land in one pinned buffer: the previous unpack must be done
        // reading it before a peer's next message may arrive there. Without them, the streams
        // order everything and the CPU does not wait.
        if let Some(how) = self.in_flight.pending_unpack() {
            if self.staged_routes || self.last_unpack_seen_done(how)? {
                self.wait_last_unpack(how, self.deadline())?;
                self.unpack_done();
            }
        }
        let id = self.backend.stream_id(stream);
        let pending = self.in_flight.pending_unpack().is_some();
        if pending && id != self.unpack_stream && self.joined != Some(id) {
            // The pack must not overwrite what the last unpack (on another stream) still
            // reads: a local neighbour's slot, a field it unpacks into.
            self.backend.stream_wait_event(stream, &self.last_unpack)?;
        }
        self.epoch += 1;
        for j in self.staged(Side::Recv) {
            let region = self.staged_region(Side::Recv, j);
            let source = self.entries[j].peer;
            self.mpi.post_recv(j, region, source)?;
        }
        let capturing = self.capture.is_some();
        let set = match self.memory.tables.find(key) {
            Some(set) => {
                let tables = self.memory.tables.at_mut(set);
                tables.last_used = self.epoch;
                tables.pinned |= capturing;
                set
            }
            None => self.add_tables(key, capturing)?,
        };
        if self.record_times && self.memory.times.is_none() {
            let grid = self.memory.tables.at(set).max_grid();
            let bytes = grid as usize * size_of::<hp_block_times>();
            let times = self
                .backend
                .alloc_pinned(bytes.max(1), Coherence::Coherent)?;
            // SAFETY: a fresh allocation of `bytes` bytes no kernel uses yet.
            unsafe { std::ptr::write_bytes(times.host_ptr(), 0, bytes) };
            self.memory.times = Some(times);
        }
        let kept = match &mut self.capture {
            Some(capture) => &mut capture.keep,
            None => &mut self.in_use,
        };
        for share in keep {
            if !kept.iter().any(|k| Arc::ptr_eq(k, &share)) {
                kept.push(share);
            }
        }
        Ok((id, set))
    }

    /// Builds and caches the region tables of `key` (the first exchange of these fields),
    /// evicting the least recently used set where the cache is full; returns their index.
    fn add_tables(&mut self, key: &[u64], capturing: bool) -> Result<usize> {
        self.evict_tables();
        let mut tables = self.build_tables(key)?;
        if self.payload == Payload::Synthetic && self.memory.checks.is_none() {
            let bytes = tables.unpack[0].blocks as usize * size_of::<hp_block_check>();
            let checks = self
                .backend
                .alloc_pinned(bytes.max(1), Coherence::Coherent)?;
            // SAFETY: a fresh allocation of `bytes` bytes no kernel uses yet.
            unsafe { std::ptr::write_bytes(checks.host_ptr(), 0, bytes) };
            self.memory.checks = Some(checks);
        }
        tables.pinned = capturing;
        Ok(self.memory.tables.insert(key.to_vec(), tables))
    }

    /// Queues the prepared exchange's start on `stream` (id `id`, tables `set`): its one
    /// launch beside the caller's stream where it has one, else its pack, and sends its
    /// host-staged messages.
    fn queue_start(
        &mut self,
        key: Vec<u64>,
        id: u64,
        set: usize,
        stream: &B::Stream,
    ) -> Result<()> {
        let deadline = self.deadline();
        let staged = self.staged_routes;
        let capturing = self.capture.is_some();
        // The previous unpack, if pending, is seen ended by its event from here on.
        let unpack_before = self.in_flight.pending_unpack().is_some();
        if !capturing {
            self.in_flight = InFlight::Unrecorded;
        }
        let fused = self.fused_table(set);
        let beside = self.beside.as_deref().filter(|_| fused.is_some());
        if let (Some(beside), Some(fused)) = (beside, fused) {
            // The launch starts after what came before `start` on `stream` (the fields'
            // writers, the previous step's readers of the halos), and runs beside what
            // comes after it until `finish`.
            self.backend.record_event(&beside.fork, stream)?;
            self.backend
                .stream_wait_event(&beside.stream, &beside.fork)?;
            let launched = self.launch_fused(fused, &beside.stream);
            self.done_words = launched?;
            self.done_seen.set(0);
            self.backend
                .record_event(&self.last_unpack, &beside.stream)?;
            self.in_flight = InFlight::LaunchedBeside;
            let side = self.backend.stream_id(&beside.stream);
            self.pack_stream = side;
            self.unpack_stream = side;
        } else {
            self.launch(set, true, stream)?;
            if self.memory.nccl.is_some() {
                // The NCCL messages travel after the pack, on its stream; `last_pack` marks
                // their end too, so that an unpack on another stream waits for them.
                self.queue_nccl(stream)?;
            }
            if !capturing {
                self.backend.record_event(&self.last_pack, stream)?;
            }
            self.in_flight = InFlight::Packed { unpack_before };
            self.pack_stream = id;
        }
        self.joined = None;
        self.current = key;
        self.current_set = set;
        if staged {
            match self.options.strategy {
                HaloStrategy::Base => {
                    self.backend.event_synchronize(&self.last_pack, deadline)?;
                    for i in self.staged(Side::Send) {
                        self.send(i)?;
                    }
                }
                HaloStrategy::Taskqueue => self.send_each_when_packed(deadline)?,
            }
        }
        Ok(())
    }

    /// The one-launch table of tables `set` for the current epoch's slot parity, outside a
    /// capture (a graph keeps the two launches).
    fn fused_table(&self, set: usize) -> Option<&FusedTable<B>> {
        if self.capture.is_some() {
            return None;
        }
        let slot = (self.epoch & 1) as usize;
        self.memory.tables.at(set).fused[slot].as_ref()
    }

    /// Finishes the started exchange: waits for host-staged messages and queues the unpack on
    /// `stream`. Work queued on `stream` afterwards sees the halos filled. Device-direct
    /// messages are waited for on the GPU: their errors (a peer that never sent) surface at
    /// the next [`Self::wait`] or exchange.
    ///
    /// # Errors
    /// [`Error::Internal`] without a started exchange; MPI, backend and time-out errors.
    pub fn finish(&mut self, stream: &B::Stream) -> Result<()> {
        self.usable()?;
        if !self.in_flight.started() {
            return Err(Error::Usage("finish called without start".into()));
        }
        let result = self.finish_inner(stream);
        self.fail_on(result)
    }

    fn finish_inner(&mut self, stream: &B::Stream) -> Result<()> {
        let deadline = self.deadline();
        self.check_capturing_stream(stream)?;
        self.check_status()?;
        let staged = self.staged_routes;
        let taskqueue = self.options.strategy == HaloStrategy::Taskqueue;
        if staged && !taskqueue {
            self.raise_each_on_arrival(deadline)?;
        }
        let id = self.backend.stream_id(stream);
        if self.in_flight == InFlight::LaunchedBeside {
            // Packed and unpacked by the one launch `start` queued: work after `finish` waits
            // for it.
            self.backend.stream_wait_event(stream, &self.last_unpack)?;
            self.joined = Some(id);
            self.in_flight = InFlight::Finished {
                how: Ending::OneLaunch,
                pending: true,
            };
            if self.options.checked {
                self.wait_inner()?;
            }
            return Ok(());
        }
        if id != self.pack_stream {
            // The unpack reads what the pack (on another stream) wrote for local neighbours;
            // work after `finish` may overwrite what the pack reads.
            self.backend.stream_wait_event(stream, &self.last_pack)?;
        }
        let capturing = self.capture.is_some();
        if capturing {
            self.launch(self.current_set, false, stream)?;
            // Captured, not run: nothing to record or wait for (see `graph`).
            let pending = self.in_flight.pending_unpack().is_some();
            self.in_flight = InFlight::Finished {
                how: Ending::Unpack,
                pending,
            };
            return Ok(());
        }
        self.in_flight = InFlight::Unrecorded;
        self.launch(self.current_set, false, stream)?;
        self.backend.record_event(&self.last_unpack, stream)?;
        self.in_flight = InFlight::Finished {
            how: Ending::Unpack,
            pending: true,
        };
        self.unpack_stream = id;
        if staged && taskqueue {
            // The unpack is queued already: each neighbour unpacks as its flag rises.
            self.raise_each_on_arrival(deadline)?;
        }
        if staged {
            self.mpi.wait_sends(deadline)?;
        }
        if self.options.checked {
            self.wait_inner()?;
        }
        Ok(())
    }

    /// Waits until the kernels of the last exchange (on whichever streams they were queued)
    /// completed, and reports what their GPU-side waits ended in. Only events the exchange
    /// recorded itself are waited for, so no stream the caller names can make it return early.
    /// A one launch is waited for by its done words: every block's work is done when they have
    /// all risen, a few microseconds before the kernel's end would be seen.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the messages a GPU-side wait gave up on (the peer, the
    /// direction); backend and time-out errors.
    pub fn wait(&mut self) -> Result<()> {
        self.usable()?;
        let result = self.wait_inner();
        self.fail_on(result)
    }

    fn wait_inner(&mut self) -> Result<()> {
        self.kernels_done().map_err(|e| match self.memory.nccl {
            Some(_) => self.named(e),
            None => e,
        })?;
        if let InFlight::Finished { pending: true, .. } = self.in_flight {
            self.unpack_done();
        }
        self.check_status()?;
        // Fused mode's last signal, and any of its waits that gave up.
        match self.memory.fused.as_deref() {
            Some(fused) => fused.wait(self.backend),
            None => Ok(()),
        }
    }

    /// Waits (bounded) for every kernel the exchange queued: the last pack, and the last
    /// unpack (which a failed `finish` may have queued for an exchange still `Started`).
    fn kernels_done(&self) -> Result<()> {
        // The kernels' own waits may each take the time-out: allow for one more.
        let deadline = deadline_in(self.options.timeout.saturating_mul(2));
        // A finished exchange's unpack runs after its pack (same stream, or ordered after it),
        // or in the same launch: its end alone says both are done.
        match self.in_flight {
            InFlight::Unrecorded => {
                return Err(Error::Internal(
                    "a kernel was queued without the event after it (a start or finish that failed midway): it may still run".into(),
                ))
            }
            InFlight::Packed { .. } => self.backend.event_synchronize(&self.last_pack, deadline)?,
            _ => {}
        }
        if let Some(how) = self.in_flight.pending_unpack() {
            self.wait_last_unpack(how, deadline)?;
        }
        Ok(())
    }

    /// Whether the last unpack (a one launch: its every block) is done, without waiting.
    fn last_unpack_seen_done(&self, how: Ending) -> Result<bool> {
        match how {
            Ending::OneLaunch => Ok(self.one_launch_raised()),
            Ending::Unpack => self.backend.event_query(&self.last_unpack),
        }
    }

    /// Waits (until `deadline`) for the last unpack: a one launch by its done words.
    fn wait_last_unpack(&self, how: Ending, deadline: Instant) -> Result<()> {
        match how {
            Ending::OneLaunch => self.one_launch_done(deadline),
            Ending::Unpack => self.backend.event_synchronize(&self.last_unpack, deadline),
        }
    }

    /// Every grid block of the current epoch's one launch raised its done word (those seen
    /// raised before are not read again).
    fn one_launch_raised(&self) -> bool {
        let (at, blocks) = self.done_words;
        let mut seen = self.done_seen.get();
        while seen < blocks {
            // SAFETY: the last one launch's table holds `blocks` u64s at `at` (coherent pinned,
            // 8-byte aligned) and outlives its launch (`done_words`); kernels and this thread
            // touch them only atomically.
            let word = unsafe { AtomicU64::from_ptr((at as *mut u64).add(seen as usize)) };
            if word.load(Ordering::Acquire) < self.epoch {
                break;
            }
            seen += 1;
        }
        self.done_seen.set(seen);
        seen == blocks
    }

    /// Waits (until `deadline`) for the one launch of the current epoch: each grid block raises
    /// its done word once its work is done, all seen here a few microseconds before an event
    /// would say the kernel ended (a block does nothing after its word but a flag's store).
    /// Every 64th poll asks the event too, so that a failed launch ends the wait with the
    /// backend's error, and a launch that ended without raising its words is an error too.
    fn one_launch_done(&self, deadline: Instant) -> Result<()> {
        let mut polls = 0u32;
        poll_until(deadline, "the exchange's one launch", || {
            polls = polls.wrapping_add(1);
            if self.one_launch_raised() {
                return Ok(true);
            }
            if polls % 64 != 0 || !self.backend.event_query(&self.last_unpack)? {
                return Ok(false);
            }
            // The launch ended: its stores are visible now.
            if self.one_launch_raised() {
                return Ok(true);
            }
            Err(Error::Internal(format!(
                "the exchange's one launch of epoch {} ended without raising its done words",
                self.epoch
            )))
        })
    }

    /// The last unpack was seen complete: what it (and every kernel before it) used is free.
    fn unpack_done(&mut self) {
        if let InFlight::Finished { how, .. } = self.in_flight {
            self.in_flight = InFlight::Finished {
                how,
                pending: false,
            };
        }
        self.in_use.clear();
        self.replayed.clear();
        self.memory.retired.clear();
    }

    /// Moves the least recently used region tables out of the cache until a new set fits;
    /// they are freed once no queued kernel can read them.
    fn evict_tables(&mut self) {
        while self.memory.tables.len() >= TABLE_SETS {
            let oldest = self
                .memory
                .tables
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.pinned)
                .min_by_key(|(_, t)| t.last_used)
                .map(|(i, _)| i);
            let Some(oldest) = oldest else {
                break;
            };
            let tables = self.memory.tables.remove(oldest);
            self.memory.retired.push(tables);
        }
        if self.quiet() {
            self.memory.retired.clear();
        }
    }

    /// Nothing the exchange queued may still run: none started, or the last seen complete.
    fn quiet(&self) -> bool {
        matches!(
            self.in_flight,
            InFlight::Never | InFlight::Finished { pending: false, .. }
        )
    }

    /// Region-table sets cached and retired (for tests of the cache's bound).
    pub fn table_sets(&self) -> (usize, usize) {
        (self.memory.tables.len(), self.memory.retired.len())
    }

    fn deadline(&self) -> Instant {
        deadline_in(self.options.timeout)
    }

    /// [`Self::usable`], and no exchange started (`misuse` says which call came instead).
    fn usable_unstarted(&self, misuse: &str) -> Result<()> {
        self.usable()?;
        if self.in_flight.started() {
            return Err(Error::Usage(misuse.into()));
        }
        Ok(())
    }

    fn usable(&self) -> Result<()> {
        match &self.health {
            Health::Usable => Ok(()),
            Health::Failed(e) => {
                Err(e.again("this halo exchange failed earlier and must be built anew: "))
            }
            Health::Closed => Err(Error::Usage("the halo exchange was closed".into())),
        }
    }

    /// Records a failure: every GPU-side wait gives up (abort flag), later calls refuse.
    fn fail_on(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.health = Health::Failed(e.again(""));
            self.epoch_word(self.status_layout().abort())
                .store(self.epoch.max(1), Ordering::Release);
            self.raise_device_abort();
            self.abort_nccl();
        }
        result
    }
}

/// `bytes` as a `usize`, or an error naming `what` on a machine whose addresses are smaller.
fn to_usize(bytes: u64, what: &str) -> Result<usize> {
    usize::try_from(bytes)
        .map_err(|_| Error::InvalidInput(format!("{what} ({bytes} bytes) do not fit in memory")))
}

fn lock<M>(memory: &Mutex<M>) -> std::sync::MutexGuard<'_, M> {
    memory
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::{staging_extent, Link};
    use crate::domain::{DomainSpec, ElemType, HaloPlan};
    use crate::halo::layout::{Entry, Mailbox};

    #[test]
    fn staging_reaches_only_as_far_as_the_host_staged_messages() {
        let spec = DomainSpec {
            grid: [24, 20, 18],
            procs: Some([2, 2, 2]),
            periodic: [true; 3],
            halo: [1, 2, 1],
            elem: ElemType::F64,
            fields: 2,
            layout: Default::default(),
        };
        let entries = Entry::of_plan(&HaloPlan::compile(&spec, 8, 0).expect("plan"));
        let layout = Mailbox::of(&entries, &spec.cell_sizes()).expect("layout");
        let n = entries.len();
        assert!(n > 3);
        let every = |link| vec![link; n];
        assert_eq!(
            staging_extent(&layout, &every(Link::Direct), |l| l == Link::Staged),
            8
        );
        assert_eq!(
            staging_extent(&layout, &every(Link::Local), |l| l == Link::Staged),
            8
        );
        assert_eq!(
            staging_extent(&layout, &every(Link::Staged), |l| l == Link::Staged),
            layout.offsets[n - 1] + layout.message_bytes[n - 1]
        );
        assert_eq!(
            staging_extent(&layout, &every(Link::Staged), Link::device_staged),
            8
        );
        // One staged message among device-direct ones: its own end, short of the slot's; one
        // over GPU-aware MPI: the device staging reaches as far as it, the pinned none.
        let mut links = every(Link::Direct);
        links[2] = Link::Staged;
        let end = layout.offsets[2] + layout.message_bytes[2];
        assert_eq!(staging_extent(&layout, &links, |l| l == Link::Staged), end);
        assert!(end < layout.slot_bytes);
        links[2] = Link::DeviceMpi;
        assert_eq!(staging_extent(&layout, &links, Link::device_staged), end);
        assert_eq!(staging_extent(&layout, &links, |l| l == Link::Staged), 8);
    }
}
