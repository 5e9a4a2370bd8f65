//! The machinery under every exchange of messages between ranks (SPEC 12, 13): each rank's
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
use crate::transport::node::{share_within_node, NodeShare};
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

mod graph;
mod table_sets;
mod tables;

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

/// Pinned host staging of host-staged messages.
struct Staging<B: Backend> {
    send: Arc<Mutex<B::PinnedMemory>>,
    recv: Arc<Mutex<B::PinnedMemory>>,
    send_host: *mut u8,
    recv_host: *mut u8,
}

/// Bytes of pinned staging an exchange needs: as far as its host-staged messages reach in the
/// slot layout, a token 8 where every message is device-direct or local (large's slots are
/// 141 MB, which a device-direct exchange would pin for nothing).
fn staging_extent(layout: &Mailbox, links: &[Link]) -> u64 {
    links
        .iter()
        .enumerate()
        .filter(|(_, &link)| link == Link::Staged)
        .map(|(i, _)| layout.offsets[i] + layout.message_bytes[i])
        .max()
        .unwrap_or(8)
}

/// Where the words of the pinned status block lie, in bytes: u32 pack outcomes and u32
/// unpack outcomes (one per message each), then the u64 abort flag (the source of the device's
/// copy, [`DeviceAbort`]), then u64 packed and u64 arrived flags (one per message each).
/// `8 * messages` keeps the u64s 8-byte aligned.
#[derive(Debug, Clone, Copy)]
struct StatusLayout {
    messages: usize,
}

impl StatusLayout {
    fn abort(self) -> usize {
        8 * self.messages
    }

    fn packed(self, i: usize) -> usize {
        self.abort() + 8 + 8 * i
    }

    fn arrived(self, j: usize) -> usize {
        self.packed(self.messages + j)
    }

    fn bytes(self) -> usize {
        self.arrived(self.messages)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Started,
    Finished,
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
    /// Some message is host-staged (the CPU moves it between pack and unpack).
    staged_routes: bool,
    /// Everything kernels (ours and peers') touch; freed in `drop` only once shown unused.
    memory: ManuallyDrop<Memory<B>>,
    /// 64-bit: flags carry it, and it never wraps.
    epoch: u64,
    phase: Phase,
    /// Recorded after each pack, on `start`'s stream.
    last_pack: B::Event,
    /// The stream of the last pack ([`Backend::stream_id`]).
    pack_stream: u64,
    last_unpack: B::Event,
    /// The stream of the last unpack.
    unpack_stream: u64,
    unpack_recorded: bool,
    /// Where a started exchange runs as one launch when every message is device-direct or a
    /// local copy ([`MessageExchange::fuse`]): its blocks wait on the device for each message
    /// and unpack it as it comes, as ipc-tq's do, beside whatever the caller queues between
    /// `start` and `finish` (`None`: some message is host-staged, or none is device-direct, and
    /// the unpack follows the pack on the caller's stream).
    beside: Option<Box<Beside<B>>>,
    /// Ranks of this node on this rank's device, itself included: each may queue its own
    /// one launch, whose blocks wait for the others' ([`MessageExchange::fuse`]).
    ranks_on_device: u32,
    /// The last exchange was one launch: `last_unpack` alone marks its end (`last_pack` is
    /// not recorded).
    one_launch: bool,
    /// The started exchange's one launch was queued by `start` on `beside`'s stream.
    launched_beside: bool,
    /// The last one launch's done words (`FusedTable::done`): their host address and count,
    /// and how many of them, from the first, were seen raised to its epoch. The table outlives
    /// the launch (an evicted one is retired until an unpack after it is seen complete).
    done_words: (usize, u32),
    done_seen: std::cell::Cell<u32>,
    /// The stream the last `finish` made wait for an unpack queued beside.
    joined: Option<u64>,
    /// A pack was queued with no event after it yet (between `start` and `finish`, or a
    /// `start` that failed after its launch): `drop` cannot know when it ends.
    unrecorded: bool,
    /// Fields the queued kernels use, until `last_unpack` is seen complete.
    in_use: Vec<Arc<FieldMemory<B>>>,
    /// The fields (their addresses) of the started exchange, and the index of their tables.
    current: Vec<u64>,
    current_set: usize,
    /// The error this exchange failed with: every later call returns it again.
    failed: Option<Error>,
    /// Closed (by [`Self::close`] or a failed close): `drop` has nothing left to do.
    closed: bool,
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
    /// Sets the exchange of `messages` up for this rank of `world`: buffers, flags, and (with
    /// `ipc`) the same-node peers' memory. `dropped` names the entry whose outgoing message an
    /// injected fault drops (`options.fault` is the caller's to resolve into it). Collective
    /// over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the kernels' block size does not fit the device or a
    /// same-node peer cannot be reached device-direct; allocation and MPI errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        messages: &Messages,
        options: HaloOptions,
        dropped: Option<usize>,
    ) -> Result<Self> {
        let Messages {
            entries,
            cells,
            word,
            payload,
        } = messages;
        let (word, payload) = (*word, *payload);
        let rank = world.rank();
        let known = |r: i32| {
            Error::Internal(format!(
                "rank {rank} set up without the entries of rank {r}"
            ))
        };
        // Everything checked and computed locally (a device may allow fewer threads than its
        // peers' do), then agreed before the first collective.
        let local = (|| {
            if ![1, 2, 4, 8].contains(&word)
                || cells.iter().any(|&c| c == 0 || c % u64::from(word) != 0)
            {
                return Err(Error::InvalidInput(format!(
                    "cells of {cells:?} bytes cannot be moved in words of {word} bytes"
                )));
            }
            crate::backend::check_threads(backend, options.threads)?;
            if options.elems_per_thread == 0 {
                return Err(Error::InvalidInput(
                    "elements per thread must be at least 1".into(),
                ));
            }
            let layouts: BTreeMap<i32, Mailbox> = entries
                .iter()
                .map(|(r, e)| Ok((r, Mailbox::of(e.iter(), cells)?)))
                .collect::<Result<_>>()?;
            let ours = entries.get(rank).ok_or_else(|| known(rank))?.to_vec();
            let mine = layouts.get(&rank).ok_or_else(|| known(rank))?.clone();
            let mailbox_bytes = to_usize(mine.bytes(), "the exchange's receive slots")?;
            Ok((layouts, ours, mine, mailbox_bytes))
        })();
        let (layouts, ours, mine, mailbox_bytes) =
            agree(world, "checking the halo exchange", local)?;
        let wanted: Vec<i32> = ours.iter().map(|n| n.peer).collect();
        let (mailbox, share) = if options.transport == TransportKind::Ipc {
            // Allocates, exports and opens, agreeing on the outcome.
            let (mut memories, share) = share_within_node(
                backend,
                world,
                || Ok(vec![backend.alloc_device(mailbox_bytes)?]),
                &wanted,
                "the device-direct halo exchange",
            )?;
            let mailbox = memories
                .pop()
                .ok_or_else(|| Error::Internal("the halo mailbox vanished".into()))?;
            (Some(mailbox), Some(share))
        } else {
            (None, None)
        };
        let n = ours.len();
        let status_layout = StatusLayout { messages: n };
        let links: Vec<Link> = ours
            .iter()
            .map(|entry| {
                if entry.peer == rank {
                    Link::Local
                } else if share.as_ref().is_some_and(|s| s.same_node(entry.peer)) {
                    Link::Direct
                } else {
                    Link::Staged
                }
            })
            .collect();
        let staging_end = staging_extent(&mine, &links);
        // Everything else this rank allocates, then agreement: a rank that failed here must
        // not leave the others in the next collective (the transport's duplicate).
        let local = (|| {
            if options.fault == Some(HaloFault::SetupFails { rank }) {
                return Err(Error::OutOfMemory {
                    backend: backend.name(),
                    bytes: mailbox_bytes,
                    kind: "device memory (an injected set-up failure)",
                });
            }
            let mailbox = match mailbox {
                Some(m) => m,
                None => backend.alloc_device(mailbox_bytes)?,
            };
            let counters = backend.alloc_device(8 * n.max(1))?;
            let abort = Box::new(DeviceAbort {
                word: backend.alloc_device(8)?,
                stream: backend.create_stream()?,
            });
            let status = backend.alloc_pinned(status_layout.bytes(), Coherence::Coherent)?;
            let staging_bytes = to_usize(staging_end, "the exchange's staging")?;
            let send = backend.alloc_pinned(staging_bytes, Coherence::Coherent)?;
            let recv = backend.alloc_pinned(staging_bytes, Coherence::Coherent)?;
            let events = (backend.create_marker()?, backend.create_marker()?);
            let beside = Beside {
                stream: backend.create_urgent_stream()?,
                fork: backend.create_marker()?,
            };
            Ok((mailbox, counters, abort, status, send, recv, events, beside))
        })();
        let (mailbox, counters, abort, status, send, recv, (last_pack, last_unpack), beside) =
            agree(world, "allocating the halo exchange's buffers", local)?;
        let staging = Staging {
            send_host: send.host_ptr(),
            recv_host: recv.host_ptr(),
            send: Arc::new(Mutex::new(send)),
            recv: Arc::new(Mutex::new(recv)),
        };
        let own_base = mailbox.device_addr();
        let (send_base, recv_base) = (
            lock::<B::PinnedMemory>(&staging.send).device_addr(),
            lock::<B::PinnedMemory>(&staging.recv).device_addr(),
        );
        let mut routes = Vec::with_capacity(n);
        for (i, (entry, &link)) in ours.iter().zip(&links).enumerate() {
            let peer = entry.peer;
            let theirs = layouts.get(&peer).ok_or_else(|| known(peer))?;
            let their_entries = entries.get(peer).ok_or_else(|| known(peer))?;
            let missing = |what: &str| {
                Error::Internal(format!(
                    "rank {peer} has no {what} entry for rank {rank}'s {} message",
                    entry.name
                ))
            };
            // Which of the peer's entries receives what we send, and sends what we receive
            // (0 where we send or receive nothing: such an address is never used).
            let j = match entry.send {
                Some(_) => receiving_entry(their_entries.iter(), rank, entry.send_tag)
                    .ok_or_else(|| missing("receiving"))?,
                None => 0,
            };
            let k = match entry.recv {
                Some(_) => sending_entry(their_entries.iter(), rank, entry.recv_tag)
                    .ok_or_else(|| missing("sending"))?,
                None => 0,
            };
            let route = match link {
                Link::Local => Route {
                    link,
                    dest: [mine.recv_addr(own_base, 0, j); 2],
                    dest_arrival: 0,
                    credit: 0,
                    recv: [mine.recv_addr(own_base, 0, i); 2],
                    arrival: 0,
                    source_credit: 0,
                },
                Link::Staged => Route {
                    link,
                    dest: [send_base + mine.offsets[i]; 2],
                    dest_arrival: 0,
                    credit: 0,
                    recv: [recv_base + mine.offsets[i]; 2],
                    arrival: 0,
                    source_credit: 0,
                },
                Link::Direct => {
                    let peer_base = share
                        .as_ref()
                        .ok_or_else(|| Error::Internal("device-direct without peers".into()))?
                        .peer_addr(peer, 0)?;
                    Route {
                        link,
                        dest: [
                            theirs.recv_addr(peer_base, 0, j),
                            theirs.recv_addr(peer_base, 1, j),
                        ],
                        dest_arrival: theirs.arrival_flag(peer_base, j),
                        credit: mine.credit_flag(own_base, i),
                        recv: [
                            mine.recv_addr(own_base, 0, i),
                            mine.recv_addr(own_base, 1, i),
                        ],
                        arrival: mine.arrival_flag(own_base, i),
                        source_credit: theirs.credit_flag(peer_base, k),
                    }
                }
            };
            routes.push(route);
        }
        // Beside the caller's stream only where a message is device-direct and none is
        // host-staged (which needs the CPU before its unpack). A local message copied straight
        // into its halo joins the one launch; one through a slot (its pack must end before its
        // unpack starts) keeps the two launches (`fuse`).
        let may_run_beside = routes.iter().any(|r| r.link == Link::Direct)
            && routes
                .iter()
                .all(|r| matches!(r.link, Link::Direct | Link::Local));
        let staged_routes = routes.iter().any(|r| r.link == Link::Staged);
        let ranks_on_device = share.as_ref().map_or(1, NodeShare::ranks_on_device);
        let mut mpi = MpiTransport::new(world, options.timeout)?;
        mpi.prepare_tagged(
            ours.iter().map(|n| n.recv_tag).collect(),
            ours.iter().map(|n| n.send_tag).collect(),
        )?;
        Ok(MessageExchange {
            mpi,
            last_pack,
            pack_stream: 0,
            last_unpack,
            unpack_stream: 0,
            beside: may_run_beside.then(|| Box::new(beside)),
            ranks_on_device,
            one_launch: false,
            launched_beside: false,
            done_words: (0, 0),
            done_seen: std::cell::Cell::new(0),
            joined: None,
            backend,
            rank,
            entries: ours,
            cells: cells.clone(),
            word,
            dropped,
            payload,
            iteration: 0,
            verify: Verify::Full,
            record_times: false,
            layout: mine,
            options,
            routes,
            staged_routes,
            memory: ManuallyDrop::new(Memory {
                _share: share,
                tables: TableSets::default(),
                retired: Vec::new(),
                counters,
                abort,
                staging,
                status,
                _mailbox: mailbox,
                checks: None,
                times: None,
            }),
            epoch: 0,
            phase: Phase::Idle,
            unpack_recorded: false,
            unrecorded: false,
            in_use: Vec::new(),
            current: Vec::new(),
            current_set: 0,
            failed: None,
            closed: false,
            id: graph::next_exchange_id(),
            capture: None,
            replayed: Vec::new(),
        })
    }

    /// How each entry's messages travel, in entry order.
    pub fn links(&self) -> Vec<Link> {
        self.routes.iter().map(|r| r.link).collect()
    }

    /// Whether the last exchange packed and unpacked in one launch (no kernel boundary).
    pub fn ran_in_one_launch(&self) -> bool {
        self.one_launch
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
        self.unrecorded = true;
        self.done_words = launched?;
        self.done_seen.set(0);
        self.backend.record_event(&self.last_unpack, stream)?;
        self.joined = None;
        self.current = key;
        self.current_set = set;
        self.finished_on(id, true)
    }

    /// The exchange's kernels were queued on the stream of id `id`, `last_unpack` recorded
    /// after them (`one_launch`: they are one launch): it is finished, and in checked mode
    /// waited for.
    pub(super) fn finished_on(&mut self, id: u64, one_launch: bool) -> Result<()> {
        self.unrecorded = false;
        self.unpack_recorded = true;
        self.pack_stream = id;
        self.unpack_stream = id;
        self.one_launch = one_launch;
        self.launched_beside = false;
        self.phase = Phase::Finished;
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
        if self.unpack_recorded && (self.staged_routes || self.last_unpack_seen_done()?) {
            self.wait_last_unpack(self.deadline())?;
            self.unpack_done();
        }
        let id = self.backend.stream_id(stream);
        if self.unpack_recorded && id != self.unpack_stream && self.joined != Some(id) {
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
        self.unrecorded = !capturing;
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
            self.unpack_recorded = true;
            let side = self.backend.stream_id(&beside.stream);
            self.pack_stream = side;
            self.unpack_stream = side;
        } else {
            self.launch(set, true, stream)?;
            if !capturing {
                self.backend.record_event(&self.last_pack, stream)?;
            }
            self.pack_stream = id;
        }
        self.one_launch = beside.is_some();
        self.launched_beside = beside.is_some();
        self.joined = None;
        self.unrecorded = false;
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
        self.phase = Phase::Started;
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

    /// True when the injected fault drops outgoing message `i` (never a local one).
    fn dropped(&self, i: usize) -> bool {
        self.dropped == Some(i) && self.routes[i].link != Link::Local
    }

    /// The host-staged messages that go (`Send`) or come (`Recv`), by entry.
    fn staged(&self, side: Side) -> Vec<usize> {
        (0..self.routes.len())
            .filter(|&i| self.routes[i].link == Link::Staged && self.entries[i].has(side))
            .collect()
    }

    fn send(&mut self, i: usize) -> Result<()> {
        if self.dropped(i) {
            return Ok(());
        }
        let region = self.staged_region(Side::Send, i);
        let dest = self.entries[i].peer;
        self.mpi.isend(i, region, dest)
    }

    /// Taskqueue: sends each host-staged message once the pack kernel raised its packed flag.
    fn send_each_when_packed(&mut self, deadline: Instant) -> Result<()> {
        let mut waiting = self.staged(Side::Send);
        let since = Instant::now();
        while !waiting.is_empty() {
            let mut still = Vec::with_capacity(waiting.len());
            for i in waiting {
                if self.epoch_word(self.packed_flag(i)).load(Ordering::Acquire) == self.epoch {
                    self.send(i)?;
                } else {
                    still.push(i);
                }
            }
            waiting = still;
            if !waiting.is_empty() && Instant::now() >= deadline {
                return Err(self.stuck("packed on the device", &waiting, since));
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// Waits for every host-staged message, raising each one's arrived flag as MPI delivers it:
    /// the taskqueue's unpack waits for these flags; under the baseline they only tell a
    /// time-out which messages never came.
    fn raise_each_on_arrival(&mut self, deadline: Instant) -> Result<()> {
        let since = Instant::now();
        while self.mpi.pending_recvs() > 0 {
            if let Some(j) = self.mpi.test_any_recv()? {
                self.epoch_word(self.arrived_flag(j))
                    .store(self.epoch, Ordering::Release);
                continue;
            }
            if Instant::now() >= deadline {
                let pending: Vec<usize> = self
                    .staged(Side::Recv)
                    .into_iter()
                    .filter(|&j| {
                        self.epoch_word(self.arrived_flag(j))
                            .load(Ordering::Acquire)
                            != self.epoch
                    })
                    .collect();
                return Err(self.stuck("received", &pending, since));
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// A time-out naming the messages that were not `what` in time.
    fn stuck(&self, what: &str, messages: &[usize], since: Instant) -> Error {
        let named: Vec<String> = messages
            .iter()
            .map(|&i| {
                let n = &self.entries[i];
                format!("{} (rank {})", n.name, n.peer)
            })
            .collect();
        Error::Timeout {
            rank: Some(self.rank),
            what: format!(
                "in the halo exchange: host-staged messages not {what}: {}",
                named.join(", ")
            ),
            after: since.elapsed(),
        }
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
        if self.phase != Phase::Started {
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
        if self.launched_beside {
            // Packed and unpacked by the one launch `start` queued: work after `finish` waits
            // for it.
            self.backend.stream_wait_event(stream, &self.last_unpack)?;
            self.joined = Some(id);
            self.phase = Phase::Finished;
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
        self.unrecorded = !capturing;
        self.launch(self.current_set, false, stream)?;
        if capturing {
            // Captured, not run: nothing to record or wait for (see `graph`).
            self.phase = Phase::Finished;
            return Ok(());
        }
        self.backend.record_event(&self.last_unpack, stream)?;
        self.unrecorded = false;
        self.unpack_recorded = true;
        self.unpack_stream = id;
        if staged && taskqueue {
            // The unpack is queued already: each neighbour unpacks as its flag rises.
            self.raise_each_on_arrival(deadline)?;
        }
        if staged {
            self.mpi.wait_sends(deadline)?;
        }
        self.phase = Phase::Finished;
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
        self.kernels_done()?;
        if self.phase != Phase::Started && self.unpack_recorded {
            self.unpack_done();
        }
        self.check_status()
    }

    /// Waits (bounded) for every kernel the exchange queued: the last pack, and the last
    /// unpack (which a failed `finish` may have queued for an exchange still `Started`).
    fn kernels_done(&self) -> Result<()> {
        // The kernels' own waits may each take the time-out: allow for one more.
        let deadline = deadline_in(self.options.timeout.saturating_mul(2));
        // A finished exchange's unpack runs after its pack (same stream, or ordered after it),
        // or in the same launch: its event alone says both are done.
        if !self.one_launch && (self.phase == Phase::Started || !self.unpack_recorded) {
            self.backend.event_synchronize(&self.last_pack, deadline)?;
        }
        if self.unpack_recorded {
            self.wait_last_unpack(deadline)?;
        }
        Ok(())
    }

    /// Whether the last unpack (a one launch: its every block) is done, without waiting.
    fn last_unpack_seen_done(&self) -> Result<bool> {
        if self.one_launch {
            Ok(self.one_launch_raised())
        } else {
            self.backend.event_query(&self.last_unpack)
        }
    }

    /// Waits (until `deadline`) for the last unpack: a one launch by its done word.
    fn wait_last_unpack(&self, deadline: Instant) -> Result<()> {
        if self.one_launch {
            self.one_launch_done(deadline)
        } else {
            self.backend.event_synchronize(&self.last_unpack, deadline)
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
        self.unpack_recorded = false;
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
        if !self.unpack_recorded && !self.unrecorded && self.phase != Phase::Started {
            self.memory.retired.clear();
        }
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
        if self.phase == Phase::Started {
            return Err(Error::Usage(misuse.into()));
        }
        Ok(())
    }

    fn usable(&self) -> Result<()> {
        if self.closed {
            return Err(Error::Usage("the halo exchange was closed".into()));
        }
        match &self.failed {
            Some(e) => Err(e.again("this halo exchange failed earlier and must be built anew: ")),
            None => Ok(()),
        }
    }

    /// Records a failure: every GPU-side wait gives up (abort flag), later calls refuse.
    fn fail_on(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.failed = Some(e.again(""));
            self.epoch_word(self.status_layout().abort())
                .store(self.epoch.max(1), Ordering::Release);
            self.raise_device_abort();
        }
        result
    }

    /// Copies the status block's abort word to the device's, where the waits poll it, and waits
    /// for the copy (bounded). A copy that fails or is late is only logged: the failure it
    /// follows is the error the caller gets, and every device wait ends by its own time-out.
    fn raise_device_abort(&self) {
        let memory = &self.memory;
        let offset = self.status_layout().abort();
        // SAFETY: (1) the status block and the abort word live in `memory`, freed only in
        // `close` after every kernel and this copy completed (or leaked when that is not seen);
        // (2) kernels only read the abort word, and the CPU writes the source word only here,
        // once the exchange failed.
        let copied = unsafe {
            self.backend.copy_to_device_async(
                &memory.abort.word,
                0,
                &memory.status,
                offset,
                8,
                &memory.abort.stream,
            )
        }
        .and_then(|()| {
            let wait = self.options.timeout.min(std::time::Duration::from_secs(1));
            self.backend
                .stream_synchronize(&memory.abort.stream, deadline_in(wait))
        });
        if let Err(e) = copied {
            tracing::warn!(
                rank = self.rank,
                "raising the device's abort flag failed: {e}"
            );
        }
    }

    fn status_layout(&self) -> StatusLayout {
        StatusLayout {
            messages: self.routes.len(),
        }
    }

    /// Byte offset of message `i`'s packed flag in the status block.
    fn packed_flag(&self, i: usize) -> usize {
        self.status_layout().packed(i)
    }

    /// Byte offset of message `j`'s arrived flag in the status block.
    fn arrived_flag(&self, j: usize) -> usize {
        self.status_layout().arrived(j)
    }

    /// Outcome word `index` (pack outcomes, then unpack outcomes) of the status block.
    fn outcome_word(&self, index: usize) -> &AtomicU32 {
        // SAFETY: index < 2 * messages: inside the status allocation (StatusLayout), 4-byte
        // aligned (page-aligned base); it lives as long as &self; kernels access it only
        // atomically.
        unsafe { AtomicU32::from_ptr(self.memory.status.host_ptr().cast::<u32>().add(index)) }
    }

    /// The u64 flag at byte `offset` of the status block (from [`StatusLayout`]).
    fn epoch_word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offsets from StatusLayout lie inside the allocation, 8-byte aligned
        // (page-aligned base); it lives as long as &self; kernels access it only atomically.
        unsafe { AtomicU64::from_ptr(self.memory.status.host_ptr().add(offset).cast::<u64>()) }
    }

    fn check_status(&self) -> Result<()> {
        let n = self.routes.len();
        let mut stuck = Vec::new();
        for index in 0..2 * n {
            // A plain load first: on every call of every exchange, and almost always OK (a
            // locked swap of each word would cost a microsecond per call).
            let word = self.outcome_word(index);
            if word.load(Ordering::Acquire) == HP_MESSAGE_OK {
                continue;
            }
            let word = word.swap(HP_MESSAGE_OK, Ordering::AcqRel);
            if word == HP_MESSAGE_OK {
                continue;
            }
            let (i, side) = if index < n {
                (index, "sending to")
            } else {
                (index - n, "receiving from")
            };
            let entry = &self.entries[i];
            let why = match word {
                HP_MESSAGE_TIMED_OUT => "timed out on the device",
                HP_MESSAGE_ABORTED => "aborted",
                _ => "ended in an unknown state",
            };
            stuck.push(format!("{side} rank {} ({}) {why}", entry.peer, entry.name));
        }
        if stuck.is_empty() {
            return Ok(());
        }
        Err(Error::Timeout {
            rank: Some(self.rank),
            what: format!("in the halo exchange: {}", stuck.join("; ")),
            after: self.options.timeout,
        })
    }

    /// Entry `i`'s outgoing (`Send`) or incoming (`Recv`) message in the pinned staging.
    fn staged_region(&self, side: Side, i: usize) -> HostRegion {
        let staging = &self.memory.staging;
        let (memory, host) = match side {
            Side::Send => (&staging.send, staging.send_host),
            Side::Recv => (&staging.recv, staging.recv_host),
        };
        let owner: Arc<dyn Send + Sync> = memory.clone();
        let bytes = self.layout.side_bytes(&self.entries[i], side);
        // SAFETY: (1) message i's bytes lie inside the staging allocation (Mailbox layout, one
        // slot), 8-byte aligned (offsets are 256-aligned, sizes rounded to 8), alive as long
        // as `owner`; (2) the CPU hands it to MPI only between the kernels that touch it: a
        // send after the pack was seen complete, a receive before the pack launch and after
        // the previous unpack was seen complete.
        unsafe {
            HostRegion::new(
                host.add(self.layout.offsets[i] as usize).cast::<f64>(),
                (bytes / 8) as usize,
                owner,
            )
        }
    }

    /// Queues the pack (or unpack) of tables `set` for the current epoch.
    fn launch(&self, set: usize, pack: bool, stream: &B::Stream) -> Result<()> {
        let tables = self.memory.tables.at(set);
        let slot = (self.epoch & 1) as usize;
        let table = if pack {
            &tables.pack[slot]
        } else {
            &tables.unpack[slot]
        };
        if table.regions.is_empty() {
            return Ok(());
        }
        // The plain form has no message or check table (no region signals or is synthetic).
        let plain = table.form == HP_REGIONS_PLAIN;
        let memory = table.memory.device_addr();
        let args = hp_regions_args {
            messages: if plain {
                0
            } else {
                memory + std::mem::size_of_val(table.regions.as_slice()) as u64
            },
            status: self.memory.status.device_addr()
                + if pack {
                    0
                } else {
                    4 * self.routes.len() as u64
                },
            num_regions: table.regions.len() as u32,
            form: table.form,
            ..self.region_args(memory, table.blocks, !pack && !plain, !plain)
        }
        .with_inline_table(&table.regions);
        let dims = LaunchDims {
            blocks: table.blocks,
            threads: self.options.threads,
        };
        let launch = if pack {
            Launch::PackRegions(&args)
        } else {
            Launch::UnpackRegions(&args)
        };
        // SAFETY: (1) the tables, counters, status words and own mailbox live in `self`; the
        // fields are kept alive by `in_use` until the unpack is seen complete; peers' mailboxes
        // stay mapped (`_share`) and allocated until every rank passed the closing barrier of
        // `drop`; host staging, check records and timestamps live in `self`. (2) The tables
        // were built from the entries' layouts, every range inside its allocation; the check
        // records hold one per unpack grid block, the timestamps one per grid block (checked
        // in `region_args`). (3) The CPU touches staging only between kernels (see
        // `staged_region`), check records and timestamps only once the last unpack was seen
        // complete, and flags only atomically.
        unsafe { self.backend.launch(launch, dims, stream) }
    }

    /// Queues the one launch of `fused`, the table [`Self::fused_table`] found for the current
    /// epoch, on `stream`; returns its done words ([`MessageExchange::done_words`]'s address and
    /// count). The callers look the table up once: a look-up costs about 0.1 us on the launch's
    /// path (results/HISTORY.md: h200-small-floor).
    fn launch_fused(&self, fused: &FusedTable<B>, stream: &B::Stream) -> Result<(usize, u32)> {
        // What changes between exchanges (as `region_args` sets it, outside a capture); the rest
        // was set with the table.
        let mut args = fused.args.borrow_mut();
        args.epoch = self.epoch;
        args.iteration = self.iteration;
        args.verify = self.verify.code();
        args.checks = self.checks_addr(true);
        args.times = self.times_addr(fused.blocks, true);
        let dims = LaunchDims {
            blocks: fused.blocks,
            threads: self.options.threads,
        };
        // SAFETY: as for `launch`: the pack's and the unpack's tables in one, the unpack
        // messages' status words after the pack ones (as an unpack launch's `status` is), a
        // grid of the larger side's blocks (each side's blocks number from 0, so check records
        // and timestamps index as in two launches), a done word per grid block in the table.
        unsafe {
            self.backend
                .launch(Launch::ExchangeRegions(&args), dims, stream)?;
        }
        Ok((fused.done.host_ptr() as usize, fused.blocks))
    }

    /// What every region launch of the current epoch carries over a table at `memory` of
    /// `blocks` grid blocks: the abort flag, time-out, epoch and payload, the check records
    /// where `checks` (an unpack of the full form) and the timestamps where `stamps` (the full
    /// form) and they are on.
    fn region_args(&self, memory: u64, blocks: u32, checks: bool, stamps: bool) -> hp_regions_args {
        hp_regions_args {
            regions: memory,
            abort_flag: self.memory.abort.word.device_addr(),
            timeout_ticks: (self.options.timeout.as_secs_f64()
                * self.backend.device_info().timer_hz as f64) as u64,
            checks: self.checks_addr(checks),
            times: self.times_addr(blocks, stamps),
            elem_bytes: self.word,
            epoch: self.epoch,
            epoch_base: self.capture.as_ref().map_or(0, |c| c.base.device_addr()),
            iteration: self.iteration,
            verify: self.verify.code(),
            ..hp_regions_args::default()
        }
    }

    /// `hp_regions_args.checks` of a launch: the check records where `checks` (an unpack of
    /// the full form) and they are allocated.
    fn checks_addr(&self, checks: bool) -> u64 {
        match &self.memory.checks {
            Some(records) if checks => records.device_addr(),
            _ => 0,
        }
    }

    /// `hp_regions_args.times` of a launch of `blocks` grid blocks: the timestamps where
    /// `stamps` (the full form) and they are on. A graph's launches stamp nothing (its replays
    /// would all write one exchange's records); nor does a grid larger than the records (a set
    /// of fields whose tables came after they were allocated).
    fn times_addr(&self, blocks: u32, stamps: bool) -> u64 {
        match &self.memory.times {
            Some(times)
                if self.record_times
                    && stamps
                    && self.capture.is_none()
                    && blocks as usize * size_of::<hp_block_times>() <= times.len_bytes() =>
            {
                times.device_addr()
            }
            _ => 0,
        }
    }
}

impl<B: Backend> MessageExchange<'_, B> {
    /// Sets the global iteration the next exchange's synthetic values are made of.
    pub fn set_iteration(&mut self, iteration: u32) {
        self.iteration = iteration;
    }

    /// Sets which elements a synthetic unpack checks (every one unless told).
    pub fn set_verify(&mut self, verify: Verify) {
        self.verify = verify;
    }

    /// Whether the region kernels of later exchanges stamp each grid block's start and end
    /// (`hp_regions_args.times`). Off unless told; off, a stamp costs the kernels one branch
    /// on a parameter. The records are allocated at the next [`Self::start`], for its tables;
    /// launches captured into a graph, and those of the plain form, stamp nothing.
    pub fn record_device_times(&mut self, on: bool) {
        self.record_times = on;
    }

    /// True once an exchange was started.
    pub fn has_run(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// An MPI barrier over the exchange's ranks, bounded by `deadline`.
    ///
    /// # Errors
    /// MPI and time-out errors.
    pub fn barrier(&mut self, deadline: Instant) -> Result<()> {
        self.mpi.barrier(deadline)
    }

    /// Synthetic payload: per entry, what the last exchange's unpack found in the incoming
    /// message (folded over its grid blocks; all zero for an entry that receives nothing), and
    /// zeroes the records so a later exchange's missing unpack shows as no checks.
    ///
    /// # Errors
    /// [`Error::Internal`] while kernels may still run (call after [`Self::wait`]) or without
    /// a synthetic exchange run.
    pub fn take_checks(&mut self) -> Result<Vec<hp_block_check>> {
        if self.unpack_recorded || self.unrecorded || self.phase != Phase::Finished {
            return Err(Error::Internal(
                "check records read while the exchange's kernels may still run".into(),
            ));
        }
        let (Some(checks), Some(tables)) =
            (&self.memory.checks, self.memory.tables.get(&self.current))
        else {
            return Err(Error::Internal("no synthetic exchange has run".into()));
        };
        let ptr = checks.host_ptr().cast::<hp_block_check>();
        let grid = tables.unpack[0].blocks as usize;
        // SAFETY: the records hold `grid` entries (allocated for this table's grid); no kernel
        // writes them: the last unpack was seen complete (checked above).
        let records = unsafe {
            let taken = std::slice::from_raw_parts(ptr, grid).to_vec();
            std::ptr::write_bytes(ptr, 0, grid);
            taken
        };
        Ok(tables
            .unpack_ranges
            .iter()
            .map(|range| {
                let mut folded = hp_block_check::default();
                let Some((first, count)) = *range else {
                    return folded;
                };
                for c in &records[first as usize..(first + count) as usize] {
                    merge_checks(&mut folded, c);
                }
                folded
            })
            .collect())
    }

    /// Synthetic payload, device times recorded ([`Self::record_device_times`]): per entry,
    /// the last exchange's stamps folded over the grid blocks of its outgoing message
    /// (`pack_*`) and of its incoming one (`unpack_*`): the earliest start and the latest end
    /// of each, zero for a direction the entry does not travel or a block that never stamped.
    /// Zeroes the records, so that a later exchange's block that never ran shows as zero.
    ///
    /// # Errors
    /// [`Error::Internal`] while kernels may still run (call after [`Self::wait`]), or
    /// without a synthetic exchange run with device times recorded (fields' regions may be
    /// paired across entries: their grid blocks are not per entry).
    pub fn take_device_times(&mut self) -> Result<Vec<hp_block_times>> {
        if self.unpack_recorded || self.unrecorded || self.phase != Phase::Finished {
            return Err(Error::Internal(
                "timestamps read while the exchange's kernels may still run".into(),
            ));
        }
        let (Payload::Synthetic, Some(times), Some(tables)) = (
            self.payload,
            &self.memory.times,
            self.memory.tables.get(&self.current),
        ) else {
            return Err(Error::Internal(
                "no synthetic exchange has run with device times recorded".into(),
            ));
        };
        let ptr = times.host_ptr().cast::<hp_block_times>();
        let grid = times.len_bytes() / size_of::<hp_block_times>();
        // SAFETY: the allocation holds `grid` records; no kernel writes them: the last unpack
        // was seen complete (checked above), and its pack before it.
        let records = unsafe {
            let taken = std::slice::from_raw_parts(ptr, grid).to_vec();
            std::ptr::write_bytes(ptr, 0, grid);
            taken
        };
        // The earliest start and the latest end over a message's grid blocks, (0, 0) without
        // one; a block that never stamped its start keeps the start at zero.
        let fold = |range: Option<(u32, u32)>, stamps: fn(&hp_block_times) -> (u64, u64)| {
            let Some((first, count)) = range else {
                return (0, 0);
            };
            records
                .get(first as usize..(first + count) as usize)
                .unwrap_or_default()
                .iter()
                .map(stamps)
                .reduce(|(s, e), (t, f)| (s.min(t), e.max(f)))
                .unwrap_or_default()
        };
        Ok(tables
            .pack_ranges
            .iter()
            .zip(&tables.unpack_ranges)
            .map(|(&pack, &unpack)| {
                let (pack_start, pack_end) = fold(pack, |t| (t.pack_start, t.pack_end));
                let (unpack_start, unpack_end) = fold(unpack, |t| (t.unpack_start, t.unpack_end));
                hp_block_times {
                    pack_start,
                    pack_end,
                    unpack_start,
                    unpack_end,
                }
            })
            .collect())
    }
}

impl<B: Backend> MessageExchange<'_, B> {
    /// Ends the exchange: waits (bounded) for its last kernels, then, when it was set up with
    /// `ipc`, for every rank at a barrier (a peer may still store a credit into our mailbox;
    /// every rank of an `ipc` exchange enters it, whatever links it got), and frees its
    /// memory. What cannot be shown unused (the memory kernels touch, the fields they used) is
    /// leaked rather than freed. Collective over the exchange's ranks with `ipc`.
    ///
    /// # Errors
    /// Time-out and backend errors of the waits, MPI errors of the barrier; the memory is
    /// leaked then.
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let leak = |this: &mut Self, e: Error| {
            std::mem::forget(std::mem::take(&mut this.in_use));
            Err(e.again("closing a halo exchange (its memory is leaked, so no kernel or peer can use freed memory): "))
        };
        if self.unrecorded {
            let e = Error::Internal(
                "a kernel was queued without the event after it (a start or finish that failed midway): it may still run".into(),
            );
            return leak(self, e);
        }
        if let Err(e) = self.kernels_done() {
            return leak(self, e);
        }
        // A one launch's blocks raise their done words before their last flag's store has landed
        // in a peer's memory (`hp_regions_block`): the launch's end, not its words, says it has.
        let deadline = deadline_in(self.options.timeout);
        if let Err(e) = self.backend.event_synchronize(&self.last_unpack, deadline) {
            return leak(self, e);
        }
        // A copy raising the device's abort word that was not seen complete.
        let abort_stream = &self.memory.abort.stream;
        let deadline = deadline_in(self.options.timeout);
        if let Err(e) = self.backend.stream_synchronize(abort_stream, deadline) {
            return leak(self, e);
        }
        if self.options.transport == TransportKind::Ipc {
            // Ranks arrive after their own kernels' waits (each up to twice the time-out).
            let deadline = deadline_in(self.options.timeout.saturating_mul(3));
            if let Err(e) = self.mpi.barrier(deadline) {
                return leak(self, e);
            }
        }
        self.in_use.clear();
        // SAFETY: dropped once (`closed` is set above); no kernel of ours uses it (the last
        // one queued is complete) and no peer stores into it any more (every rank passed the
        // barrier after its last exchange). Peers' mappings go first (field order).
        unsafe { ManuallyDrop::drop(&mut self.memory) };
        Ok(())
    }
}

impl<B: Backend> Drop for MessageExchange<'_, B> {
    /// [`MessageExchange::close`], logging what it could not do.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("{e}");
        }
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
        assert_eq!(staging_extent(&layout, &every(Link::Direct)), 8);
        assert_eq!(staging_extent(&layout, &every(Link::Local)), 8);
        assert_eq!(
            staging_extent(&layout, &every(Link::Staged)),
            layout.offsets[n - 1] + layout.message_bytes[n - 1]
        );
        // One staged message among device-direct ones: its own end, short of the slot's.
        let mut links = every(Link::Direct);
        links[2] = Link::Staged;
        let end = layout.offsets[2] + layout.message_bytes[2];
        assert_eq!(staging_extent(&layout, &links), end);
        assert!(end < layout.slot_bytes);
    }
}
