//! The compiled halo exchange: one plan, the user's fields, any transport, ordered on the
//! user's stream (SPEC 13). The plan's neighbours become the entries of a
//! [`MessageExchange`], whose messages are the fields' halo
//! regions.

// Adopting a raw MPI_Comm of a foreign caller is an unsafe promise of that caller.
#![allow(unsafe_code)]

use std::time::Duration;

use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use super::engine::{ExchangeGraph, MessageExchange, Messages, Payload};
use super::field::Field;
use super::fused_unmapped::Unmapped;
use super::layout::Link;
use super::setup::RankSetup;
use crate::backend::Backend;
use crate::collective::{agree, broadcast_string, first_with};
use crate::domain::{Decomposition, DomainSpec, HaloPlan};
use crate::error::{Error, Result};
use crate::transport::mpi::{cartesian_topology, duplicate_raw, mpi_dims_create};
use crate::transport::GpuAwareMpi;
use crate::transport::TransportKind;

use super::routes::{RouteChoice, RouteOrder};

/// When host-staged messages move, relative to the kernels (the thesis's two strategies).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum HaloStrategy {
    /// Thesis 3.3's shape: the CPU waits for the whole pack, sends everything, receives
    /// everything, then queues the unpack.
    #[default]
    #[serde(rename = "base")]
    Base,
    /// Thesis 3.4's idea per neighbour: each neighbour's message is sent as soon as its
    /// regions are packed (the pack kernel raises a per-message flag in pinned memory), and the
    /// unpack kernel is queued before the receives complete, unpacking each neighbour as the
    /// CPU raises its arrival flag.
    #[serde(rename = "tq")]
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
    /// Rank `rank`'s allocation of the exchange's buffers fails at set-up (as if its device
    /// were out of memory): every rank must return an error, none may wait for it.
    SetupFails {
        /// The rank that fails.
        rank: i32,
    },
    /// Rank `rank`'s device reaches no other device (as GPUs without peer access): under
    /// `ipc` every rank must refuse the set-up; under `auto` the rank's same-node links take
    /// another route at both ends.
    NoPeerAccess {
        /// The rank without peer access.
        rank: i32,
    },
}

impl std::str::FromStr for HaloFault {
    type Err = Error;

    /// `drop-send=DIR`, DIR a direction such as `+x`, `-x+y`, `+x-y+z`; `setup-fails=RANK`;
    /// `no-peer-access=RANK`.
    fn from_str(s: &str) -> Result<HaloFault> {
        let bad = || {
            Error::InvalidInput(format!(
                "unknown halo fault '{s}'; known: drop-send=DIR with DIR a direction such as +x, -y+z, +x-y+z; setup-fails=RANK; no-peer-access=RANK"
            ))
        };
        let rank_of = |r: &str| r.parse::<i32>().ok().filter(|&r| r >= 0).ok_or_else(bad);
        if let Some(rank) = s.strip_prefix("setup-fails=") {
            return Ok(HaloFault::SetupFails {
                rank: rank_of(rank)?,
            });
        }
        if let Some(rank) = s.strip_prefix("no-peer-access=") {
            return Ok(HaloFault::NoPeerAccess {
                rank: rank_of(rank)?,
            });
        }
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
    /// Most GPU blocks serving one region of a signalled message (device-direct, or
    /// host-staged under the taskqueue): each such block pays a wait, a fence at system scope
    /// and a count, and on 2 x H200 those costs added up across blocks
    /// (`results/HISTORY.md: h200x2-library`). Where every message is device-direct, the
    /// region of the most memory traffic gets this many (more where each would carry over
    /// 512 KiB of traffic, `results/HISTORY.md: h200-large-mode`; fewer if needed for every
    /// rank's one-launch grid to fit on the device at once,
    /// `results/HISTORY.md: h200-one-launch`) and every other region blocks in proportion to
    /// its traffic, as ipc-tq balances its chunks (`results/HISTORY.md: h200-balanced`).
    pub signalled_blocks: u32,
    /// A fault to inject, for tests.
    pub fault: Option<HaloFault>,
    /// Checked mode: [`HaloExchange::finish`] waits for the unpack it queued and reports any
    /// GPU-side failure itself, so the halos are known good (or an error returned) when it
    /// returns. It costs the overlap of the unpack with later work; off by default.
    pub checked: bool,
    /// Whether messages that travel by MPI go from device memory (GPU-aware MPI) instead of
    /// pinned host memory: where MPI says it takes device memory, by default.
    pub gpu_aware_mpi: GpuAwareMpi,
    /// With the `auto` transport, the routes preferred per kind of link (a routes file's,
    /// [`RoutesFile::apply`](super::RoutesFile::apply)); `None`: by capability. Every rank
    /// must be given the same.
    pub routes: Option<RouteOrder>,
}

impl Default for HaloOptions {
    fn default() -> Self {
        HaloOptions {
            transport: TransportKind::Mpi,
            strategy: HaloStrategy::Base,
            timeout: Duration::from_secs(10),
            threads: 256,
            elems_per_thread: 4,
            signalled_blocks: 16,
            fault: None,
            checked: false,
            gpu_aware_mpi: GpuAwareMpi::Auto,
            routes: None,
        }
    }
}

/// A halo exchange compiled from a [`HaloPlan`] for one rank: run it with
/// [`exchange`](Self::exchange), or [`start`](Self::start) and [`finish`](Self::finish) around
/// work that does not touch the halos.
///
/// # Streams
/// `start` and `finish` queue their kernels on the stream each is given, which may be the
/// application's own ([`CudaStream::from_raw`](https://docs.rs/haloport-cuda)) or two
/// different ones: the exchange records an event after each of its launches and orders its
/// next launch after it on whatever stream that launch goes to, and [`wait`](Self::wait) and
/// dropping the exchange wait on those events, never on a stream named by the caller. So no
/// combination of streams lets a kernel of the exchange run after the fields it uses were
/// released.
///
/// # Failures on the device
/// A GPU-side wait that gives up (a peer that never sent, an aborted peer) leaves that
/// exchange's halos stale and writes its outcome to pinned memory. Every `start`, `finish` and
/// `wait` reads those outcomes first (no device synchronization) and returns the failure as
/// [`Error::Timeout`]. So when the exchange of step k fails on the device, the halos of step k
/// and of every exchange started before the kernel gave up (up to `timeout` after its wait
/// began) are stale, and the first `start`, `finish` or `wait` after that reports it. With
/// [`HaloOptions::checked`], `finish` itself waits for its unpack and reports, at the cost of
/// the overlap.
///
/// Every exchange after an error returns that error again, of the same kind: a failed
/// exchange leaves peers' counters and flags out of step, so the exchange must be built anew.
pub struct HaloExchange<'b, B: Backend> {
    engine: MessageExchange<'b, B>,
    plan: HaloPlan,
    /// Fields' memory the backend has shown usable (address and length), newest last: each
    /// new address is asked once.
    checked: Vec<(u64, usize)>,
    /// In fused mode, the ordinary exchange of the neighbours it does not map.
    unmapped: Option<Box<Unmapped<'b, B>>>,
}

/// How many field addresses [`HaloExchange`] remembers as checked: the fields of a few table
/// sets (a Jacobi alternates two).
const CHECKED_FIELDS: usize = 64;

impl<'b, B: Backend> HaloExchange<'b, B> {
    /// Compiles `spec` for this rank of `comm` and sets the exchange up: buffers, flags, and
    /// (with `ipc`) the same-node peers' memory. Collective over `comm`, which may be any
    /// communicator: the world, a split, a Cartesian one. haloport works on its own duplicate
    /// of it (so its messages never match the application's) and never frees the original.
    ///
    /// With a Cartesian communicator (`MPI_Cart_create`, `reorder` true or false) the
    /// decomposition follows its topology: its dimensions are the process grid (dimension 0 is
    /// x), its periodicity must equal the declaration's, and each rank owns the part at its
    /// Cartesian coordinates.
    ///
    /// # Errors
    /// [`Error::InvalidInput`], the same on every rank, when the ranks declared different
    /// domains or options that must agree (transport, strategy, threads, elements per thread,
    /// signalled blocks, checked mode), when the declaration does not fit the job or the
    /// communicator's topology, when the kernels' block size does not fit the device, or when a
    /// same-node peer cannot be reached device-direct. A set-up step that fails on some ranks
    /// only returns that rank's own error there and [`Error::OtherRank`] on the others, before
    /// any further collective. MPI errors.
    pub fn new<C: Communicator>(
        backend: &'b B,
        comm: &C,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<Self> {
        Self::on_duplicate(backend, &comm.duplicate(), spec, options)
    }

    /// As [`Self::new`], for a raw `MPI_Comm` handed over by a foreign caller (C, Fortran
    /// through `MPI_Comm_f2c`, mpi4py): borrowed, duplicated, never freed.
    ///
    /// # Errors
    /// As [`Self::new`]; [`Error::InvalidInput`] for `MPI_COMM_NULL`.
    ///
    /// # Safety
    /// 1. `comm` is a valid intra-communicator of the running MPI library, alive during this
    ///    call (haloport keeps only its own duplicate afterwards).
    /// 2. Every rank of `comm` makes this call (it is collective).
    pub unsafe fn with_raw_comm(
        backend: &'b B,
        comm: mpi::ffi::MPI_Comm,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<Self> {
        // SAFETY: forwarded from this function's contract.
        let dup = unsafe { duplicate_raw(comm)? };
        Self::on_duplicate(backend, &dup, spec, options)
    }

    fn on_duplicate(
        backend: &'b B,
        comm: &SimpleCommunicator,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<Self> {
        let (rank, size) = (comm.rank(), comm.size());
        agree_on_declaration(comm, spec, &options)?;
        // Local, then agreed: a topology that contradicts the declaration fails every rank.
        let spec = &agree(
            comm,
            "following the communicator's topology",
            follow_topology(spec, comm),
        )?;
        // This rank's plan and its neighbours' (whose layouts give the addresses we store
        // into); never every rank's.
        let RankSetup { plan, entries, .. } = agree(
            comm,
            "compiling the halo plan",
            RankSetup::compile(spec, size, rank),
        )?;
        let dropped = match options.fault {
            Some(HaloFault::DropSend { direction }) => plan
                .neighbours
                .iter()
                .position(|n| n.direction == direction),
            _ => None,
        };
        let messages = Messages {
            entries,
            cells: spec.cell_sizes(),
            word: spec.word_bytes()?,
            payload: Payload::Fields,
        };
        let _current = agree(
            comm,
            "making the exchange's device current",
            backend.enter(),
        )?;
        let engine = MessageExchange::new(backend, comm, &messages, options, dropped)?;
        Ok(HaloExchange {
            engine,
            plan,
            checked: Vec::new(),
            unmapped: None,
        })
    }

    /// The plan this exchange runs.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// How each neighbour's messages travel, in the plan's neighbour order.
    pub fn links(&self) -> Vec<Link> {
        self.engine.links()
    }

    /// Each neighbour's route and why it was chosen, in the plan's neighbour order.
    pub fn route_choices(&self) -> &[RouteChoice] {
        self.engine.route_choices()
    }

    /// Whether the last exchange packed and unpacked in one launch, with no kernel boundary
    /// between them (every neighbour device-direct or this rank itself, outside a graph).
    pub fn ran_in_one_launch(&self) -> bool {
        self.engine.ran_in_one_launch()
    }

    /// Runs one exchange of `fields` on `stream` and waits for it: when it returns `Ok`, every
    /// field's halo cells hold their neighbours' values. Where every neighbour is
    /// device-direct or this rank itself (and one is device-direct), its pack and unpack are
    /// one launch.
    ///
    /// # Errors
    /// As [`Self::start`], [`Self::finish`] and [`Self::wait`].
    pub fn exchange(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        self.check_fields(fields)?;
        let key = fields.iter().map(|f| f.device_addr()).collect();
        let keep = fields.iter().map(|f| f.share()).collect();
        self.engine.exchange(key, keep, stream)?;
        self.wait()
    }

    /// Starts an exchange of `fields` on `stream`: queues the pack (after everything queued
    /// before on `stream`, and after the previous exchange's unpack wherever it ran), and
    /// sends the host-staged messages once packed. Where every neighbour is device-direct or
    /// this rank itself (and one is device-direct), one launch packs and unpacks (see
    /// [`Self::ran_in_one_launch`]), on a stream of the exchange's own that starts after what
    /// came before on `stream` and runs beside what follows it until `finish`. Work
    /// queued on `stream` between `start` and [`Self::finish`] must not write the cells the
    /// exchange sends nor touch halo cells (the pack fills the halos of a neighbour that is
    /// this rank itself).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the fields do not fit the plan; [`Error::Usage`] when an
    /// exchange is already started; an earlier exchange's failure on the device
    /// ([`Error::Timeout`]); MPI, backend and time-out errors.
    pub fn start(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        self.check_fields(fields)?;
        let key = fields.iter().map(|f| f.device_addr()).collect();
        let keep = fields.iter().map(|f| f.share()).collect();
        self.engine.start(key, keep, stream)
    }

    /// Fused mode (`kernels-cu/haloport_device.h`): registers `sets` of fields that the
    /// application's kernels write (a Jacobi code: its two fields, `&[&[&u], &[&v]]`), maps
    /// every field into the neighbours and builds one descriptor per field and set. Afterwards
    /// a step that writes set `s` calls [`Self::fused_start`] before its kernels store into the
    /// neighbours' halos and [`Self::fused_finish`] after; no pack or unpack runs for the
    /// neighbours that are device-direct or this rank. The others (another node, or a route
    /// chosen otherwise) are served by an ordinary exchange of their own inside
    /// [`Self::fused_finish`], once the kernels wrote their cells. Every field must be
    /// allocated by the library ([`Field::alloc`]) with cells of one 4- or 8-byte element.
    /// Collective over the exchange's ranks.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (the same on every rank) for fields that do not fit the
    /// declaration or were not allocated by the library, sets of different sizes, or ranks
    /// that gave different numbers of sets; [`Error::Usage`] when already fused; backend and
    /// MPI errors.
    pub fn fuse(&mut self, sets: &[&[&Field<B>]]) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        let checked: Result<()> = sets.iter().try_for_each(|set| self.check_fields(set));
        let checked =
            crate::collective::agree(self.engine.comm(), "checking fused mode's fields", checked);
        checked?;
        self.engine.fuse_fields(&self.plan, sets)?;
        match Unmapped::new(
            self.engine.backend(),
            self.engine.comm(),
            &self.plan,
            &self.engine.links(),
            self.engine.options(),
            sets,
        ) {
            Ok(unmapped) => {
                self.unmapped = unmapped.map(Box::new);
                Ok(())
            }
            Err(e) => {
                // Not fused after all: the caller may try again.
                self.engine.unfuse();
                Err(e)
            }
        }
    }

    /// [`Self::fuse`] on fields the library allocates: `sets` sets of the declaration's fields
    /// (each [`Field::alloc_field`], zeroed), allocated on every rank and agreed on before
    /// fused mode is set up with them. Returns them set by set, each in the declaration's
    /// order: the application computes in them, and they must outlive the exchange (the
    /// neighbours store into them until [`Self::close`]). What the C ABI and the Python package
    /// call, whose callers cannot hand over memory the library allocated otherwise. Collective
    /// over the exchange's ranks.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for 0 sets; an allocation that fails on some rank (its error
    /// there, [`Error::OtherRank`] on the others); as [`Self::fuse`].
    pub fn fuse_alloc(&mut self, sets: usize) -> Result<Vec<Vec<Field<B>>>> {
        let _current = self.engine.backend().enter()?;
        let backend = self.engine.backend();
        let plan = &self.plan;
        let allocated = if sets == 0 {
            Err(Error::InvalidInput(
                "fused mode takes one or more sets of fields: 0 sets were asked".into(),
            ))
        } else {
            (0..sets)
                .map(|_| {
                    (0..plan.spec.fields as usize)
                        .map(|k| Field::alloc_field(backend, plan, k))
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()
        };
        let fields = agree(
            self.engine.comm(),
            "allocating fused mode's fields",
            allocated,
        )?;
        {
            let refs: Vec<Vec<&Field<B>>> = fields.iter().map(|s| s.iter().collect()).collect();
            let sets: Vec<&[&Field<B>]> = refs.iter().map(Vec::as_slice).collect();
            self.fuse(&sets)?;
        }
        Ok(fields)
    }

    /// Before a step's kernels store set `set`'s boundary cells into the neighbours' halos:
    /// queues on `stream` this rank's word that it is done reading the halos of that set
    /// (everything queued before on `stream`) and a wait, on the device, until every neighbour
    /// said the same. Returns the device addresses of the set's descriptors
    /// (`haloport_fused`), one per field, for the kernels. Reports a wait of an earlier step
    /// that gave up.
    ///
    /// # Errors
    /// [`Error::Usage`] when not fused or for a set that does not exist;
    /// [`Error::Timeout`] naming the neighbour and halo of an earlier wait that gave up;
    /// backend errors.
    pub fn fused_start(&mut self, set: usize, stream: &B::Stream) -> Result<Vec<u64>> {
        let _current = self.engine.backend().enter()?;
        self.engine.fused_start(set, stream)
    }

    /// After a step's kernels stored set `set`'s cells: queues on `stream` a wait, on the
    /// device, until every cell of every incoming message arrived. Work queued on `stream`
    /// afterwards sees this rank's halos of the set filled.
    ///
    /// # Errors
    /// As [`Self::fused_start`].
    pub fn fused_finish(&mut self, set: usize, stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        if let Some(unmapped) = self.unmapped.as_deref_mut() {
            unmapped.exchange(set, stream)?;
        }
        self.engine.fused_finish(set, stream)
    }

    /// Set `set`'s descriptors in host memory, one per field (what the host backend's kernels
    /// and the host twin of the header read: [`fused::targets`](super::fused::targets)).
    ///
    /// # Errors
    /// [`Error::Usage`] when not fused or for a set that does not exist.
    pub fn fused_descriptors(&self, set: usize) -> Result<&[crate::shared::haloport_fused]> {
        self.engine.fused_descriptors(set)
    }

    /// Finishes the started exchange: waits for host-staged messages and queues the unpack on
    /// `stream` (after the pack, whichever stream `start` used), or makes `stream` wait for
    /// the one launch `start` queued. Work queued on `stream`
    /// afterwards sees the halos filled. Device-direct messages are waited for on the GPU:
    /// their failures surface at the next call (see the type's docs), or here in checked mode.
    ///
    /// # Errors
    /// [`Error::Usage`] without a started exchange; an earlier exchange's failure on the
    /// device; MPI, backend and time-out errors.
    pub fn finish(&mut self, stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        self.engine.finish(stream)
    }

    /// Waits until the kernels of the last exchange completed, on whichever streams they ran,
    /// and reports what their GPU-side waits ended in (in fused mode, the last
    /// [`Self::fused_start`] or [`Self::fused_finish`] too). Afterwards the fields it used may be
    /// freed (the contract of [`Field::adopt`]).
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the messages a GPU-side wait gave up on (the peer, the
    /// direction); backend and time-out errors.
    pub fn wait(&mut self) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        self.engine.wait()?;
        match self.unmapped.as_deref_mut() {
            Some(unmapped) => unmapped.wait(),
            None => Ok(()),
        }
    }

    /// Starts capturing `stream` into a graph (a CUDA or HIP graph): until
    /// [`Self::end_capture`], everything queued on `stream` (the caller's kernels, and the
    /// exchange's `start` and `finish`, which must use this stream) is captured instead of
    /// run. Capture whole exchanges, an even number of them (the receive slots alternate from
    /// one exchange to the next): a Jacobi code captures two steps, which also swaps its
    /// fields back. Waits first for every kernel of earlier exchanges.
    ///
    /// Only device-direct, NCCL and local neighbours can be captured: a message through MPI
    /// needs the CPU between pack and unpack.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the first neighbour through MPI; [`Error::Usage`] while
    /// capturing or between `start` and `finish`; [`Error::Unsupported`] on a backend without
    /// graphs (host); backend and time-out errors.
    pub fn begin_capture(&mut self, stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        if let Some(first) = self.unmapped.as_deref().and_then(Unmapped::first) {
            return Err(Error::InvalidInput(format!(
                "the fused exchange cannot be captured into a graph: {first}, served by an ordinary exchange that needs the CPU inside fused_finish"
            )));
        }
        self.engine.begin_capture(stream)
    }

    /// Ends the capture begun by [`Self::begin_capture`] (call it also after an error inside
    /// the capture: it ends the stream's capture whatever happened) and returns the graph.
    /// Nothing captured has run.
    ///
    /// # Errors
    /// [`Error::Usage`] without a capture, when it ended between `start` and `finish`, or held
    /// an odd number of exchanges; the error of a call inside the capture; backend errors for
    /// work that cannot be captured.
    pub fn end_capture(&mut self, stream: &B::Stream) -> Result<ExchangeGraph<B>> {
        let _current = self.engine.backend().enter()?;
        self.engine.end_capture(stream)
    }

    /// Queues one replay of `graph` on `stream`: everything captured, its exchanges each with
    /// a new epoch, in one launch of the graph (and, after exchanges outside the graph, one
    /// small kernel first). [`Self::wait`] waits for it and reports its exchanges' failures.
    /// The graph's fields must stay allocated while it may run (it keeps the ones haloport
    /// allocated; adopted ones are the caller's, as for `start`).
    ///
    /// # Errors
    /// [`Error::Usage`] for a graph of another exchange, while capturing, between `start` and
    /// `finish`, or after an odd number of exchanges outside the graph since its capture; an
    /// earlier exchange's failure on the device; backend errors.
    pub fn replay(&mut self, graph: &mut ExchangeGraph<B>, stream: &B::Stream) -> Result<()> {
        let _current = self.engine.backend().enter()?;
        self.engine.replay(graph, stream)
    }

    /// Ends the exchange, returning what dropping it can only log: waits (bounded) for its
    /// last kernels, then, when it was set up with `ipc`, meets every rank at a barrier (every
    /// rank of an `ipc` exchange does, whatever links it got), and frees its memory. What
    /// cannot be shown unused is leaked rather than freed. Collective over the exchange's
    /// ranks with `ipc`.
    ///
    /// # Errors
    /// Time-out and backend errors of the waits, MPI errors of the barrier.
    pub fn close(mut self) -> Result<()> {
        let unmapped = match self.unmapped.as_deref_mut() {
            Some(unmapped) => unmapped.close(),
            None => Ok(()),
        };
        self.engine.close().and(unmapped)
    }

    /// Sets of fields whose region tables are cached, and tables waiting to be freed once no
    /// queued kernel can read them: at most [`Self::TABLE_SETS`] and a few, however many
    /// different fields are exchanged.
    pub fn table_sets(&self) -> (usize, usize) {
        self.engine.table_sets()
    }

    /// How many sets of fields keep their region tables cached.
    pub const TABLE_SETS: usize = super::engine::TABLE_SETS;

    fn check_fields(&mut self, fields: &[&Field<B>]) -> Result<()> {
        let spec = &self.plan.spec;
        if fields.len() != spec.fields as usize {
            return Err(Error::InvalidInput(format!(
                "the exchange was declared with {} fields, {} were given",
                spec.fields,
                fields.len()
            )));
        }
        // Fields of one element type are checked for it; fields of declared shapes by size.
        let shapes = spec.field_shapes();
        let typed = spec.layout.fields.is_none();
        for (k, (field, shape)) in fields.iter().zip(&shapes).enumerate() {
            let needed = self.plan.decomposition.alloc_elems() * shape.cell_bytes();
            if (typed && field.elem() != spec.elem) || (field.len_bytes() as u64) < needed {
                // The field's own type: the declaration's shape, not field 0's element type.
                let declared = if typed && field.elem() != spec.elem {
                    format!("{}, declared {}", field.elem(), spec.elem)
                } else {
                    super::field::describe_field(&self.plan, *shape)
                };
                return Err(Error::InvalidInput(format!(
                    "field {k} ({declared}; {} bytes) does not fit the plan ({} cells of {} bytes, {needed} bytes)",
                    field.len_bytes(),
                    self.plan.decomposition.alloc_elems(),
                    shape.cell_bytes()
                )));
            }
            let memory = (field.device_addr(), field.len_bytes());
            if !self.checked.contains(&memory) {
                let what = format!(
                    "field {k} ({})",
                    super::field::describe_field(&self.plan, *shape)
                );
                let backend = self.engine.backend();
                backend.check_device_range(memory.0, memory.1 as u64, &what)?;
                if self.checked.len() == CHECKED_FIELDS {
                    self.checked.remove(0);
                }
                self.checked.push(memory);
            }
        }
        Ok(())
    }
}

/// `spec` with its process grid chosen by the MPI library (`MPI_Dims_create`) over `comm`'s
/// ranks when it names none (or the application's decomposition's, when it gives one): what
/// every plan of an exchange over `comm` is compiled from.
///
/// # Errors
/// MPI errors.
pub fn resolve_procs(spec: &DomainSpec, comm: &SimpleCommunicator) -> Result<DomainSpec> {
    let mut spec = spec.clone();
    if spec.procs.is_none() && comm.size() > 0 {
        spec.procs = Some(match &spec.layout.splits {
            Some(splits) => splits.procs(),
            None => mpi_dims_create(comm.size())?,
        });
    }
    Ok(spec)
}

/// What every rank must declare alike: the domain, and the options whose difference would
/// send ranks into different collectives or different message protocols (the time-out may
/// differ).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Declaration {
    spec: DomainSpec,
    transport: String,
    strategy: String,
    threads: u32,
    elems_per_thread: u32,
    signalled_blocks: u32,
    checked: bool,
    gpu_aware_mpi: String,
}

/// Every rank must declare the same domain and options: compared collectively, so all fail
/// alike, before any rank takes a step the others would not.
fn agree_on_declaration(
    comm: &SimpleCommunicator,
    spec: &DomainSpec,
    options: &HaloOptions,
) -> Result<()> {
    let mine = Declaration {
        spec: spec.clone(),
        transport: options.transport.name().to_owned(),
        strategy: options.strategy.name().to_owned(),
        threads: options.threads,
        elems_per_thread: options.elems_per_thread,
        signalled_blocks: options.signalled_blocks,
        checked: options.checked,
        gpu_aware_mpi: options.gpu_aware_mpi.name().to_owned(),
    };
    // Rank 0's declaration to every rank; the lowest rank that differs sends its own.
    let encode = |d: &Declaration| {
        serde_json::to_string(d)
            .map_err(|e| Error::Internal(format!("encoding the declaration: {e}")))
    };
    let decode = |text: &str| {
        serde_json::from_str::<Declaration>(text)
            .map_err(|e| Error::Internal(format!("decoding a declaration: {e}")))
    };
    let text = encode(&mine)?;
    let root_text = if comm.rank() == 0 {
        text.clone()
    } else {
        String::new()
    };
    let first = decode(&broadcast_string(comm, 0, root_text)?)?;
    let differs = (first != mine).then_some(text);
    let Some((r, other)) = first_with(comm, differs)? else {
        return Ok(());
    };
    let (first, other) = (&first, &decode(&other)?);
    if other.spec != first.spec {
        return Err(Error::InvalidInput(format!(
            "the ranks declared different domains: rank 0 has {}, rank {r} has {}",
            describe(&first.spec),
            describe(&other.spec)
        )));
    }
    let options = |d: &Declaration| {
        format!(
            "--transport {} --variant {} --gpu-aware-mpi {} (threads {}, {} elements per thread, {} signalled blocks, checked {})",
            d.transport, d.strategy, d.gpu_aware_mpi, d.threads, d.elems_per_thread, d.signalled_blocks, d.checked
        )
    };
    Err(Error::InvalidInput(format!(
        "the ranks chose different exchange options: rank 0 has {}, rank {r} has {}; every rank must choose the same",
        options(first),
        options(other)
    )))
}

/// `spec` as it runs on `comm`: with a Cartesian communicator, its topology's process grid
/// (checked against the declaration's) and periodicity (which must equal the declaration's);
/// otherwise the declaration's process grid, or the MPI library's choice.
fn follow_topology(spec: &DomainSpec, comm: &SimpleCommunicator) -> Result<DomainSpec> {
    let Some(cart) = cartesian_topology(comm)? else {
        return resolve_procs(spec, comm);
    };
    if cart.dims.len() != 3 {
        return Err(Error::InvalidInput(format!(
            "the Cartesian communicator has {} dimensions; haloport's domains have 3 (give 1 process in a dimension that is not split)",
            cart.dims.len()
        )));
    }
    let dims = [0, 1, 2].map(|k| cart.dims[k].max(0) as u32);
    let periods = [0, 1, 2].map(|k| cart.periods[k]);
    if let Some(p) = spec.procs.filter(|&p| p != dims) {
        return Err(Error::InvalidInput(format!(
            "the declaration's process grid {}x{}x{} differs from the Cartesian communicator's {}x{}x{}",
            p[0], p[1], p[2], dims[0], dims[1], dims[2]
        )));
    }
    if periods != spec.periodic {
        return Err(Error::InvalidInput(format!(
            "the declaration's periodicity {:?} differs from the Cartesian communicator's {periods:?}",
            spec.periodic
        )));
    }
    // MPI numbers Cartesian ranks row-major (MPI 4.0 section 8.5.1), as haloport's plans do:
    // this rank's coordinates must be the ones its plan gives it.
    let coords = Decomposition::coords_of(dims, comm.rank());
    if coords.map(|c| c as i32).as_slice() != cart.coords.as_slice() {
        return Err(Error::Internal(format!(
            "rank {} has Cartesian coordinates {:?}, its plan {coords:?}",
            comm.rank(),
            cart.coords
        )));
    }
    let mut spec = spec.clone();
    spec.procs = Some(dims);
    Ok(spec)
}

fn describe(spec: &DomainSpec) -> String {
    let procs = spec.procs.map_or_else(
        || "chosen".to_owned(),
        |p| format!("{}x{}x{}", p[0], p[1], p[2]),
    );
    format!(
        "grid {}x{}x{}, procs {procs}, halo {:?}, periodic {:?}, {} fields of {}, padding {:?}, neighbourhood {}",
        spec.grid[0],
        spec.grid[1],
        spec.grid[2],
        spec.halo,
        spec.periodic,
        spec.fields,
        spec.elem,
        spec.layout.pad,
        spec.layout.neighbourhood.name()
    )
}
