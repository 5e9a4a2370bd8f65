//! The compiled halo exchange: one plan, the user's fields, any transport, ordered on the
//! user's stream (SPEC 13).
//!
//! Per exchange (epoch e = 1, 2, ...): one pack launch covers every region of every field of
//! every message, one unpack launch every received region. How a message travels is chosen per
//! neighbour ([`Link`]): to this rank itself through its own receive slot; device-direct into a
//! same-node peer's receive slot e & 1, announced by the peer's arrival flag and guarded by our
//! credit flag (the peer unpacked slot e & 1 of epoch e - 2), all on the GPU; or host-staged:
//! pack into pinned memory, MPI, unpack from pinned memory. Only host-staged messages need the
//! CPU between pack and unpack.

// Launches take raw device addresses of tables, fields and peers' memory; flags in pinned
// memory are read through atomics.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mpi::topology::{Communicator, SimpleCommunicator};

use super::field::{Field, FieldMemory};
use super::layout::{direction_name, receiving_entry, sending_entry, Link, Mailbox};
use crate::backend::{
    upload_table, Backend, Coherence, DeviceMemory, Launch, LaunchDims, PinnedMemory,
};
use crate::collective::all_gather;
use crate::domain::{DomainSpec, HaloPlan};
use crate::error::{Error, Result};
use crate::regions::{blocks_for, pair_regions};
use crate::shared::{
    hp_message_signal, hp_region, hp_regions_args, HP_MESSAGE_ABORTED, HP_MESSAGE_OK,
    HP_MESSAGE_TIMED_OUT, HP_NO_MESSAGE,
};
use crate::transport::mpi::{mpi_dims_create, MpiTransport};
use crate::transport::node::{share_with_node, NodeShare};
use crate::transport::{HostRegion, HostTransport, Transport};
use crate::variant::TransportKind;

/// When host-staged messages move, relative to the kernels (the thesis's two strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HaloStrategy {
    /// Thesis 3.3's shape: the CPU waits for the whole pack, sends everything, receives
    /// everything, then queues the unpack.
    #[default]
    Base,
    /// Thesis 3.4's idea per neighbour: each neighbour's message is sent as soon as its
    /// regions are packed (the pack kernel raises a per-message flag in pinned memory), and the
    /// unpack kernel is queued before the receives complete, unpacking each neighbour as the
    /// CPU raises its arrival flag.
    Taskqueue,
}

impl HaloStrategy {
    /// Name on the command line and in results: `base`, `tq`.
    pub fn name(self) -> &'static str {
        match self {
            HaloStrategy::Base => "base",
            HaloStrategy::Taskqueue => "tq",
        }
    }
}

impl std::str::FromStr for HaloStrategy {
    type Err = Error;

    fn from_str(s: &str) -> Result<HaloStrategy> {
        match s {
            "base" => Ok(HaloStrategy::Base),
            "tq" => Ok(HaloStrategy::Taskqueue),
            _ => Err(Error::InvalidInput(format!(
                "unknown halo exchange strategy '{s}'; known: base (pack everything, then send; receive everything, then unpack), tq (send and unpack each neighbour as soon as it is ready)"
            ))),
        }
    }
}

/// A fault injected on purpose, to show that a lost message ends every rank waiting for it
/// with a time-out naming the halo, never a hang.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloFault {
    /// Every rank never delivers its message in this direction (host-staged: never sent;
    /// device-direct: stored but never announced). A neighbour that is the rank itself is not
    /// affected.
    DropSend {
        /// The direction, each component -1, 0 or 1.
        direction: [i8; 3],
    },
}

impl std::str::FromStr for HaloFault {
    type Err = Error;

    /// `drop-send=DIR`, DIR a direction such as `+x`, `-x+y`, `+x-y+z`.
    fn from_str(s: &str) -> Result<HaloFault> {
        let bad = || {
            Error::InvalidInput(format!(
                "unknown halo fault '{s}'; known: drop-send=DIR with DIR a direction such as +x, -y+z, +x-y+z"
            ))
        };
        let dir = s.strip_prefix("drop-send=").ok_or_else(bad)?;
        let mut direction = [0_i8; 3];
        let mut rest = dir;
        while !rest.is_empty() {
            let mut chars = rest.chars();
            let sign = match chars.next() {
                Some('+') => 1,
                Some('-') => -1,
                _ => return Err(bad()),
            };
            let k = match chars.next() {
                Some('x') => 0,
                Some('y') => 1,
                Some('z') => 2,
                _ => return Err(bad()),
            };
            if direction[k] != 0 {
                return Err(bad());
            }
            direction[k] = sign;
            rest = chars.as_str();
        }
        if direction == [0; 3] {
            return Err(bad());
        }
        Ok(HaloFault::DropSend { direction })
    }
}

/// How an exchange runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HaloOptions {
    /// `mpi`: every peer host-staged. `ipc`: same-node peers device-direct, others host-staged.
    pub transport: TransportKind,
    /// When host-staged messages move (device-direct ones always signal per message).
    pub strategy: HaloStrategy,
    /// How long any single wait (MPI, stream, a GPU-side flag) may take.
    pub timeout: Duration,
    /// Threads per GPU block of the pack and unpack kernels.
    pub threads: u32,
    /// Elements each thread moves (sets the blocks per region).
    pub elems_per_thread: u32,
    /// A fault to inject, for tests.
    pub fault: Option<HaloFault>,
}

impl Default for HaloOptions {
    fn default() -> Self {
        HaloOptions {
            transport: TransportKind::Mpi,
            strategy: HaloStrategy::Base,
            timeout: Duration::from_secs(10),
            threads: 256,
            elems_per_thread: 4,
            fault: None,
        }
    }
}

/// Most GPU blocks serving one region of a signalled message (device-direct, or host-staged
/// under the taskqueue). Every block of a signalled message pays
/// a wait, a fence and a count, and on 2 x H200 those costs added up across blocks: one
/// 2 MB face exchanged device-direct took 495 us with 256 blocks, 128 us with 64 and 93 us with
/// 16 (`results/2026-11-22-h200x2-library/`); the thesis's ipc variants use few blocks too.
const SIGNALLED_MAX_BLOCKS: u32 = 16;

/// Where one neighbour's outgoing and incoming messages go, resolved at set-up.
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

/// The region tables of one set of fields, for each slot parity, in device memory.
struct Tables<B: Backend> {
    pack: [B::DeviceMemory; 2],
    unpack: [B::DeviceMemory; 2],
    regions: u32,
    pack_blocks: u32,
    unpack_blocks: u32,
}

/// The memory of an exchange that kernels use: ours (tables, counters, flags, staging, the
/// mailbox) and our peers' (their mailboxes, opened).
struct Memory<B: Backend> {
    /// Same-node peers' mailboxes, opened (device-direct only): unmapped before ours is freed.
    _share: Option<NodeShare<B>>,
    tables: HashMap<Vec<u64>, Tables<B>>,
    counters: B::DeviceMemory,
    staging: Staging<B>,
    /// Pinned u32s: pack status per message, unpack status per message, the abort flag, then
    /// (taskqueue) a packed flag and an arrived flag per message.
    status: B::PinnedMemory,
    /// Our receive slots and flags, which same-node peers store into.
    _mailbox: B::DeviceMemory,
}

/// Pinned host staging of host-staged messages.
struct Staging<B: Backend> {
    send: Arc<Mutex<B::PinnedMemory>>,
    recv: Arc<Mutex<B::PinnedMemory>>,
    send_host: *mut u8,
    recv_host: *mut u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Started,
    Finished,
}

/// A halo exchange compiled from a [`HaloPlan`] for one rank: run it with
/// [`exchange`](Self::exchange), or [`start`](Self::start) and [`finish`](Self::finish) around
/// work that does not touch the halos.
///
/// Every exchange after an error returns that error: a failed exchange leaves peers'
/// counters and flags out of step, so the exchange must be built anew.
pub struct HaloExchange<'b, B: Backend> {
    // Drop order: pending MPI requests refer to the staging, queued kernels to the tables.
    mpi: MpiTransport,
    backend: &'b B,
    plan: HaloPlan,
    /// Where this rank's messages lie in its receive slots and send staging.
    layout: Mailbox,
    options: HaloOptions,
    routes: Vec<Route>,
    /// Everything kernels (ours and peers') touch; freed in `drop` only once shown unused.
    memory: ManuallyDrop<Memory<B>>,
    epoch: u32,
    phase: Phase,
    last_unpack: B::Event,
    unpack_recorded: bool,
    /// A pack was queued with no event after it yet (between `start` and `finish`, or a
    /// `start` that failed after its launch): `drop` cannot know when it ends.
    pack_unrecorded: bool,
    /// Fields the queued kernels use, until `last_unpack` is seen complete.
    in_use: Vec<Arc<FieldMemory<B>>>,
    /// The fields (their addresses) of the started exchange.
    current: Vec<u64>,
    failed: Option<String>,
}

// SAFETY: the raw staging pointers address allocations the exchange owns (through the Arcs
// beside them); the exchange is driven by one thread at a time.
unsafe impl<B: Backend> Send for Staging<B> {}

impl<'b, B: Backend> HaloExchange<'b, B> {
    /// Compiles `spec` for this rank of `world` and sets the exchange up: buffers, flags, and
    /// (with `ipc`) the same-node peers' memory. Collective over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`], the same on every rank, when the ranks declared different
    /// domains, when the declaration does not fit the job (process grid, local extents), when
    /// the kernels' block size does not fit the device, or when a same-node peer cannot be
    /// reached device-direct; allocation and MPI errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<Self> {
        let (rank, size) = (world.rank(), world.size());
        agree_on_spec(world, spec)?;
        let spec = &resolve_procs(spec, world)?;
        crate::strategy::check_threads(backend, options.threads)?;
        if options.elems_per_thread == 0 {
            return Err(Error::InvalidInput(
                "elements per thread must be at least 1".into(),
            ));
        }
        // Every rank compiles every plan: peers' layouts give the addresses we store into.
        let plans: Vec<HaloPlan> = (0..size)
            .map(|r| HaloPlan::compile(spec, size, r))
            .collect::<Result<_>>()?;
        let plan = plans[rank as usize].clone();
        let mine = Mailbox::of(&plan);
        let wanted: Vec<i32> = plan.neighbours.iter().map(|n| n.rank).collect();
        let (mailbox, share) = if options.transport == TransportKind::Ipc {
            let (mut memories, share) = share_with_node(
                backend,
                world,
                || Ok(vec![backend.alloc_device(mine.bytes() as usize)?]),
                &wanted,
                "the device-direct halo exchange",
            )?;
            let mailbox = memories
                .pop()
                .ok_or_else(|| Error::Internal("the halo mailbox vanished".into()))?;
            (mailbox, Some(share))
        } else {
            (backend.alloc_device(mine.bytes() as usize)?, None)
        };
        let n = plan.neighbours.len();
        let counters = backend.alloc_device(8 * n.max(1))?;
        let status = backend.alloc_pinned(4 * (4 * n + 1), Coherence::Coherent)?;
        let send = backend.alloc_pinned(mine.slot_bytes as usize, Coherence::Coherent)?;
        let recv = backend.alloc_pinned(mine.slot_bytes as usize, Coherence::Coherent)?;
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
        for (i, neighbour) in plan.neighbours.iter().enumerate() {
            let peer = neighbour.rank;
            let link = if peer == rank {
                Link::Local
            } else if share.as_ref().is_some_and(|s| s.same_node(peer)) {
                Link::Direct
            } else {
                Link::Staged
            };
            let theirs = Mailbox::of(&plans[peer as usize]);
            let missing = |what: &str| {
                Error::Internal(format!(
                    "rank {peer} has no {what} entry for rank {rank}'s {} message",
                    direction_name(neighbour.direction)
                ))
            };
            // Which of the peer's entries receives what we send, and sends what we receive.
            let j = receiving_entry(&plans[peer as usize], rank, neighbour.send_tag)
                .ok_or_else(|| missing("receiving"))?;
            let k = sending_entry(&plans[peer as usize], rank, neighbour.recv_tag)
                .ok_or_else(|| missing("sending"))?;
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
        let mut mpi = MpiTransport::new(world, options.timeout)?;
        mpi.prepare_tagged(
            plan.neighbours.iter().map(|n| n.recv_tag).collect(),
            plan.neighbours.iter().map(|n| n.send_tag).collect(),
        )?;
        Ok(HaloExchange {
            mpi,
            last_unpack: backend.create_marker()?,
            backend,
            plan,
            layout: mine,
            options,
            routes,
            memory: ManuallyDrop::new(Memory {
                _share: share,
                tables: HashMap::new(),
                counters,
                staging,
                status,
                _mailbox: mailbox,
            }),
            epoch: 0,
            phase: Phase::Idle,
            unpack_recorded: false,
            pack_unrecorded: false,
            in_use: Vec::new(),
            current: Vec::new(),
            failed: None,
        })
    }

    /// The plan this exchange runs.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// How each neighbour's messages travel, in the plan's neighbour order.
    pub fn links(&self) -> Vec<Link> {
        self.routes.iter().map(|r| r.link).collect()
    }

    /// Runs one exchange of `fields` on `stream` and waits for it: when it returns `Ok`, every
    /// field's halo cells hold their neighbours' values.
    ///
    /// # Errors
    /// As [`Self::start`], [`Self::finish`] and [`Self::wait`].
    pub fn exchange(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        self.start(fields, stream)?;
        self.finish(stream)?;
        self.wait(stream)
    }

    /// Starts an exchange of `fields` on `stream`: queues the pack (after everything queued
    /// before on `stream`), and sends the host-staged messages once packed. Work queued on
    /// `stream` between `start` and [`Self::finish`] must not write the cells the exchange
    /// sends nor touch halo cells.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the fields do not fit the plan; [`Error::Internal`] when
    /// an exchange is already started; MPI, backend and time-out errors.
    pub fn start(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        self.usable()?;
        if self.phase == Phase::Started {
            return Err(Error::Internal("start called twice without finish".into()));
        }
        self.check_fields(fields)?;
        let result = self.start_inner(fields, stream);
        self.fail_on(result)
    }

    fn start_inner(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        let deadline = self.deadline();
        // Host-staged receives land in one pinned buffer: the previous unpack must be done
        // reading it before a peer's next message may arrive there. Without them, the stream
        // orders everything and the CPU does not wait.
        let staged = self.routes.iter().any(|r| r.link == Link::Staged);
        if self.unpack_recorded && (staged || self.backend.event_query(&self.last_unpack)?) {
            self.backend
                .event_synchronize(&self.last_unpack, deadline)?;
            self.unpack_recorded = false;
            self.in_use.clear();
        }
        self.epoch += 1;
        for (j, route) in self.routes.iter().enumerate() {
            if route.link == Link::Staged {
                let region =
                    self.staged_region(&self.memory.staging.recv, self.memory.staging.recv_host, j);
                let source = self.plan.neighbours[j].rank;
                self.mpi.post_recv(j, region, source)?;
            }
        }
        let key: Vec<u64> = fields.iter().map(|f| f.device_addr()).collect();
        if !self.memory.tables.contains_key(&key) {
            let tables = self.build_tables(&key)?;
            self.memory.tables.insert(key.clone(), tables);
        }
        for field in fields {
            let share = field.share();
            if !self.in_use.iter().any(|kept| Arc::ptr_eq(kept, &share)) {
                self.in_use.push(share);
            }
        }
        self.pack_unrecorded = true;
        self.launch(&key, true, stream)?;
        self.current = key;
        if staged {
            match self.options.strategy {
                HaloStrategy::Base => {
                    self.backend.stream_synchronize(stream, deadline)?;
                    for i in self.staged() {
                        self.send(i)?;
                    }
                }
                HaloStrategy::Taskqueue => self.send_each_when_packed(deadline)?,
            }
        }
        self.phase = Phase::Started;
        Ok(())
    }

    /// True when the injected fault drops outgoing message `i` (never a local one).
    fn dropped(&self, i: usize) -> bool {
        let Some(HaloFault::DropSend { direction }) = self.options.fault else {
            return false;
        };
        self.plan.neighbours[i].direction == direction && self.routes[i].link != Link::Local
    }

    /// The host-staged messages, by index.
    fn staged(&self) -> Vec<usize> {
        (0..self.routes.len())
            .filter(|&i| self.routes[i].link == Link::Staged)
            .collect()
    }

    fn send(&mut self, i: usize) -> Result<()> {
        if self.dropped(i) {
            return Ok(());
        }
        let region =
            self.staged_region(&self.memory.staging.send, self.memory.staging.send_host, i);
        let dest = self.plan.neighbours[i].rank;
        self.mpi.isend(i, region, dest)
    }

    /// Taskqueue: sends each host-staged message once the pack kernel raised its packed flag.
    fn send_each_when_packed(&mut self, deadline: Instant) -> Result<()> {
        let mut waiting = self.staged();
        let since = Instant::now();
        while !waiting.is_empty() {
            let mut still = Vec::with_capacity(waiting.len());
            for i in waiting {
                if self
                    .status_word(self.packed_flag(i))
                    .load(Ordering::Acquire)
                    == self.epoch
                {
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
                self.status_word(self.arrived_flag(j))
                    .store(self.epoch, Ordering::Release);
                continue;
            }
            if Instant::now() >= deadline {
                let pending: Vec<usize> = self
                    .staged()
                    .into_iter()
                    .filter(|&j| {
                        self.status_word(self.arrived_flag(j))
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
                let n = &self.plan.neighbours[i];
                format!("{} halo (rank {})", direction_name(n.direction), n.rank)
            })
            .collect();
        Error::Timeout {
            rank: Some(self.plan.decomposition.rank),
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
            return Err(Error::Internal("finish called without start".into()));
        }
        let result = self.finish_inner(stream);
        self.fail_on(result)
    }

    fn finish_inner(&mut self, stream: &B::Stream) -> Result<()> {
        let deadline = self.deadline();
        let staged = self.routes.iter().any(|r| r.link == Link::Staged);
        let taskqueue = self.options.strategy == HaloStrategy::Taskqueue;
        if staged && !taskqueue {
            self.raise_each_on_arrival(deadline)?;
        }
        self.launch(&self.current, false, stream)?;
        self.backend.record_event(&self.last_unpack, stream)?;
        self.unpack_recorded = true;
        self.pack_unrecorded = false;
        if staged && taskqueue {
            // The unpack is queued already: each neighbour unpacks as its flag rises.
            self.raise_each_on_arrival(deadline)?;
        }
        if staged {
            self.mpi.wait_sends(deadline)?;
        }
        self.phase = Phase::Finished;
        Ok(())
    }

    /// Waits until the last exchange's kernels completed on `stream` and reports what their
    /// GPU-side waits ended in.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the messages a GPU-side wait gave up on (the peer, the
    /// direction); backend and time-out errors.
    pub fn wait(&mut self, stream: &B::Stream) -> Result<()> {
        self.usable()?;
        let deadline = self.deadline() + self.options.timeout;
        let result = self
            .backend
            .stream_synchronize(stream, deadline)
            .and_then(|()| self.check_status());
        if result.is_ok() {
            // The stream is idle: every kernel queued so far has completed.
            self.pack_unrecorded = false;
            if self.phase == Phase::Finished {
                self.unpack_recorded = false;
                self.in_use.clear();
            }
        }
        self.fail_on(result)
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.options.timeout
    }

    fn usable(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(Error::InvalidInput(format!(
                "this halo exchange failed earlier and must be built anew: {e}"
            ))),
            None => Ok(()),
        }
    }

    /// Records a failure: every GPU-side wait gives up (abort flag), later calls refuse.
    fn fail_on(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
            self.status_word(2 * self.routes.len())
                .store(self.epoch.max(1), Ordering::Release);
        }
        result
    }

    /// Index of message `i`'s packed flag among the status words (its arrived flag follows
    /// `n` later).
    fn packed_flag(&self, i: usize) -> usize {
        2 * self.routes.len() + 1 + i
    }

    fn arrived_flag(&self, j: usize) -> usize {
        3 * self.routes.len() + 1 + j
    }

    fn status_word(&self, index: usize) -> &AtomicU32 {
        // SAFETY: index < 4 * messages + 1, inside the status allocation of that many u32s,
        // page-aligned; it lives as long as &self; kernels access it only atomically.
        unsafe { AtomicU32::from_ptr(self.memory.status.host_ptr().cast::<u32>().add(index)) }
    }

    fn check_status(&self) -> Result<()> {
        let n = self.routes.len();
        let mut stuck = Vec::new();
        for index in 0..2 * n {
            let word = self
                .status_word(index)
                .swap(HP_MESSAGE_OK, Ordering::AcqRel);
            if word == HP_MESSAGE_OK {
                continue;
            }
            let (i, side) = if index < n {
                (index, "sending to")
            } else {
                (index - n, "receiving from")
            };
            let neighbour = &self.plan.neighbours[i];
            let why = match word {
                HP_MESSAGE_TIMED_OUT => "timed out on the device",
                HP_MESSAGE_ABORTED => "aborted",
                _ => "ended in an unknown state",
            };
            stuck.push(format!(
                "{side} rank {} ({} halo) {why}",
                neighbour.rank,
                direction_name(neighbour.direction)
            ));
        }
        if stuck.is_empty() {
            return Ok(());
        }
        Err(Error::Timeout {
            rank: Some(self.plan.decomposition.rank),
            what: format!("in the halo exchange: {}", stuck.join("; ")),
            after: self.options.timeout,
        })
    }

    fn check_fields(&self, fields: &[&Field<B>]) -> Result<()> {
        let spec = &self.plan.spec;
        if fields.len() != spec.fields as usize {
            return Err(Error::InvalidInput(format!(
                "the exchange was declared with {} fields, {} were given",
                spec.fields,
                fields.len()
            )));
        }
        let needed = self.plan.decomposition.alloc_elems() * u64::from(spec.elem.bytes());
        for (k, field) in fields.iter().enumerate() {
            if field.elem() != spec.elem || (field.len_bytes() as u64) < needed {
                return Err(Error::InvalidInput(format!(
                    "field {k} ({}, {} bytes) does not fit the plan ({}, {needed} bytes)",
                    field.elem(),
                    field.len_bytes(),
                    spec.elem
                )));
            }
        }
        Ok(())
    }

    fn staged_region(
        &self,
        memory: &Arc<Mutex<B::PinnedMemory>>,
        host: *mut u8,
        i: usize,
    ) -> HostRegion {
        let owner: Arc<dyn Send + Sync> = memory.clone();
        // SAFETY: (1) message i's bytes lie inside the staging allocation (Mailbox layout, one
        // slot), 8-byte aligned (offsets are 256-aligned, sizes rounded to 8), alive as long
        // as `owner`; (2) the CPU hands it to MPI only between the kernels that touch it: a
        // send after the pack was seen complete, a receive before the pack launch and after
        // the previous unpack was seen complete.
        unsafe {
            HostRegion::new(
                host.add(self.layout.offsets[i] as usize).cast::<f64>(),
                (self.layout.message_bytes[i] / 8) as usize,
                owner,
            )
        }
    }

    /// Region tables for fields at `addrs`, for both slot parities.
    fn build_tables(&self, addrs: &[u64]) -> Result<Tables<B>> {
        let elem = u64::from(self.plan.spec.elem.bytes());
        let counters = self.memory.counters.device_addr();
        let n = self.routes.len();
        let build = |pack: bool, slot: usize| -> Result<(B::DeviceMemory, u32, u32)> {
            let mut regions = Vec::new();
            let mut signals = Vec::with_capacity(n);
            let mut first_block = 0_u32;
            for (i, (neighbour, route)) in self.plan.neighbours.iter().zip(&self.routes).enumerate()
            {
                let sub = if pack { neighbour.send } else { neighbour.recv };
                let base = if pack {
                    route.dest[slot]
                } else {
                    route.recv[slot]
                };
                let elems = sub.elems();
                let direct = route.link == Link::Direct;
                let signalled = direct
                    || (route.link == Link::Staged
                        && self.options.strategy == HaloStrategy::Taskqueue);
                let blocks = blocks_for(
                    elems,
                    self.options.threads,
                    u64::from(self.options.elems_per_thread),
                );
                let blocks = if signalled {
                    blocks.min(SIGNALLED_MAX_BLOCKS)
                } else {
                    blocks
                };
                let mut message_blocks = 0;
                for (k, &field) in addrs.iter().enumerate() {
                    regions.push(hp_region {
                        field,
                        buffer: base + k as u64 * elems * elem,
                        offset: sub.offset,
                        count: sub.count,
                        stride: sub.stride,
                        first_block,
                        blocks,
                        message: if signalled { i as u32 } else { HP_NO_MESSAGE },
                        partner: 0,
                    });
                    first_block = first_block.checked_add(blocks).ok_or_else(|| {
                        Error::InvalidInput(
                            "the exchange needs more GPU blocks than a launch has".into(),
                        )
                    })?;
                    message_blocks += blocks;
                }
                let status = self.memory.status.device_addr();
                signals.push(if !signalled {
                    hp_message_signal::default()
                } else if !direct && pack {
                    // Host-staged, taskqueue: tell the CPU this message is packed.
                    hp_message_signal {
                        counter: counters + 8 * i as u64,
                        flag: status + 4 * self.packed_flag(i) as u64,
                        wait: 0,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                } else if !direct {
                    // Host-staged, taskqueue: unpack once the CPU says it arrived.
                    hp_message_signal {
                        counter: counters + 8 * i as u64 + 4,
                        flag: 0,
                        wait: status + 4 * self.arrived_flag(i) as u64,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                } else if pack {
                    // Wait until the peer unpacked this slot two epochs ago; announce arrival
                    // (unless a fault drops it).
                    hp_message_signal {
                        counter: counters + 8 * i as u64,
                        flag: if self.dropped(i) {
                            0
                        } else {
                            route.dest_arrival
                        },
                        wait: route.credit,
                        wait_lag: 2,
                        blocks: message_blocks,
                    }
                } else {
                    // Wait for the arrival of this epoch; give the sender its credit.
                    hp_message_signal {
                        counter: counters + 8 * i as u64 + 4,
                        flag: route.source_credit,
                        wait: route.arrival,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                });
            }
            // Unsignalled x faces share lines pairwise (the regions' module docs).
            let grid = pair_regions(
                &mut regions,
                self.plan.spec.elem.bytes(),
                self.options.threads,
                u64::from(self.options.elems_per_thread),
            )?;
            let table = upload_table(self.backend, &regions, &signals)?;
            Ok((table, regions.len() as u32, grid))
        };
        let (pack0, regions, pack_blocks) = build(true, 0)?;
        let (pack1, _, _) = build(true, 1)?;
        let (unpack0, _, unpack_blocks) = build(false, 0)?;
        let (unpack1, _, _) = build(false, 1)?;
        Ok(Tables {
            pack: [pack0, pack1],
            unpack: [unpack0, unpack1],
            regions,
            pack_blocks,
            unpack_blocks,
        })
    }

    /// Queues the pack (or unpack) of the fields at `key` for the current epoch.
    fn launch(&self, key: &[u64], pack: bool, stream: &B::Stream) -> Result<()> {
        let tables = self
            .memory
            .tables
            .get(key)
            .ok_or_else(|| Error::Internal("no region tables for these fields".into()))?;
        if tables.regions == 0 {
            return Ok(());
        }
        let slot = (self.epoch & 1) as usize;
        let (table, blocks) = if pack {
            (&tables.pack[slot], tables.pack_blocks)
        } else {
            (&tables.unpack[slot], tables.unpack_blocks)
        };
        let n = self.routes.len() as u64;
        let status = self.memory.status.device_addr();
        let args = hp_regions_args {
            regions: table.device_addr(),
            messages: table.device_addr()
                + u64::from(tables.regions) * std::mem::size_of::<hp_region>() as u64,
            status: status + if pack { 0 } else { 4 * n },
            abort_flag: status + 8 * n,
            timeout_ticks: (self.options.timeout.as_secs_f64()
                * self.backend.device_info().timer_hz as f64) as u64,
            num_regions: tables.regions,
            elem_bytes: self.plan.spec.elem.bytes(),
            epoch: self.epoch,
            reserved: 0,
        };
        let dims = LaunchDims {
            blocks,
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
        // `drop`; host staging lives in `self`. (2) The tables were built from the plan's
        // layouts, every range inside its allocation. (3) The CPU touches staging only between
        // kernels (see `staged_region`) and flags only atomically.
        unsafe { self.backend.launch(launch, dims, stream) }
    }
}

impl<B: Backend> Drop for HaloExchange<'_, B> {
    /// Waits (bounded) for the last unpack, then, with device-direct peers, for every rank at a
    /// barrier: a peer may still store a credit into our mailbox. What cannot be shown unused
    /// (the memory kernels touch, the fields they used) is leaked rather than freed.
    fn drop(&mut self) {
        let deadline = self.deadline();
        if self.pack_unrecorded {
            tracing::error!(
                "a halo exchange dropped between start and finish (or after a failed start): its memory and fields are leaked, since its pack may still run"
            );
            std::mem::forget(std::mem::take(&mut self.in_use));
            return;
        }
        if self.unpack_recorded {
            if let Err(e) = self.backend.event_synchronize(&self.last_unpack, deadline) {
                tracing::error!(
                    "closing a halo exchange: {e}; its memory and fields are leaked so no kernel can use freed memory"
                );
                std::mem::forget(std::mem::take(&mut self.in_use));
                return;
            }
        }
        if self.routes.iter().any(|r| r.link == Link::Direct) {
            if let Err(e) = self.mpi.barrier(deadline) {
                tracing::error!(
                    "closing a device-direct halo exchange: {e}; its memory is leaked so peers can never store into freed memory"
                );
                return;
            }
        }
        // SAFETY: dropped once, here; no kernel of ours uses it (last unpack complete, or none
        // queued since the last `wait`) and no peer stores into it any more (every rank passed
        // the barrier after its last exchange). Peers' mappings go first (field order).
        unsafe { ManuallyDrop::drop(&mut self.memory) };
    }
}

fn lock<M>(memory: &Mutex<M>) -> std::sync::MutexGuard<'_, M> {
    memory
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `spec` with its process grid chosen by the MPI library (`MPI_Dims_create`) over `comm`'s
/// ranks when it names none: what every plan of an exchange over `comm` is compiled from.
///
/// # Errors
/// MPI errors.
pub fn resolve_procs(spec: &DomainSpec, comm: &SimpleCommunicator) -> Result<DomainSpec> {
    let mut spec = spec.clone();
    if spec.procs.is_none() && comm.size() > 0 {
        spec.procs = Some(mpi_dims_create(comm.size())?);
    }
    Ok(spec)
}

/// Every rank must declare the same domain: compared collectively, so all fail alike.
fn agree_on_spec(world: &SimpleCommunicator, spec: &DomainSpec) -> Result<()> {
    let all = all_gather(world, Ok(spec.clone()), |r, msg| {
        Error::InvalidInput(format!("rank {r}: {msg}"))
    })?;
    if let Some((r, other)) = all.iter().enumerate().find(|(_, s)| *s != &all[0]) {
        return Err(Error::InvalidInput(format!(
            "the ranks declared different domains: rank 0 has {}, rank {r} has {}",
            describe(&all[0]),
            describe(other)
        )));
    }
    Ok(())
}

fn describe(spec: &DomainSpec) -> String {
    let procs = spec.procs.map_or_else(
        || "chosen".to_owned(),
        |p| format!("{}x{}x{}", p[0], p[1], p[2]),
    );
    format!(
        "grid {}x{}x{}, procs {procs}, halo {:?}, periodic {:?}, {} fields of {}",
        spec.grid[0], spec.grid[1], spec.grid[2], spec.halo, spec.periodic, spec.fields, spec.elem
    )
}
