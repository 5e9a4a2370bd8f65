//! The application that shows the library end to end (SPEC 13): Jacobi sweeps of a 27-point
//! stencil over a 3-D grid decomposed over the job, its halos exchanged by [`HaloExchange`],
//! the exchange overlapped with the interior update, and the result verified bit-for-bit
//! against one rank computing the whole grid with the same kernels.
//!
//! Every cell, halos included, starts from [`initial_value`] of its global coordinates and its
//! field (never from the rank), so every decomposition starts from the same global state. Cells
//! outside a non-periodic boundary keep their initial value (fixed boundary). Each step:
//! `start` the exchange of the current fields, update the inner box (cells whose neighbours
//! are all interior), `finish`, update the shell next to the halos, swap. The exchange runs on
//! the step's stream, which is urgent (the device's highest priority), so its kernels take SMs
//! as the box's blocks free them; the inner box and each slab of the shell run on streams of
//! their own, of ordinary priority, beside it (results/HISTORY.md: h100-step-overlap: faster
//! than the shell urgent too, or everything on one stream). An f64 field's inner box takes the
//! shell's x and y slabs into its own tiles once a ready word raised after `finish` says the
//! halos are in, and a fix-up after the box updates the slab points of the tiles that ran
//! before it (results/HISTORY.md: h200-shell-in-tiles; `JacobiConfig::shell_launches` keeps
//! them as launches).

// Launches of the stencil kernel and copies take raw device addresses of the fields.
#![allow(unsafe_code)]

use std::time::Instant;

use mpi::topology::{Communicator, SimpleCommunicator};

use haloport_core::backend::{
    download_bytes, upload_bytes, upload_bytes_at, Backend, DeviceMemory, Kernel, Launch,
    LaunchDims,
};
use haloport_core::collective::{agree, barrier_until, lockstep_until};
use haloport_core::domain::Neighbourhood;
use haloport_core::domain::{Decomposition, DomainSpec, HaloPlan};
use haloport_core::error::{Error, Result};
use haloport_core::halo::{
    resolve_procs, ExchangeGraph, Field, HaloExchange, HaloOptions, RouteChoice,
};
use haloport_core::regions::{fused_dims, fused_marches};
use haloport_core::regions::{lanes_padding, stencil_launch, stencil_reads, Copy3d, ShellTiles};
use haloport_core::regions::{shell_around, CellBox, HalosIn, STENCIL_THREADS};
use haloport_core::shared::{
    haloport_fused, hp_stencil_args, HP_SHELL_COUNT, HP_SHELL_FIXUP_BLOCKS, HP_SHELL_HALOS_IN,
    HP_SHELL_LIST,
};

mod fields;
mod fused;
mod placement;
mod run;

use fields::{gather, local_initial};
pub use fields::{initial_value, FieldKind, GlobalFields};
use fused::FusedSteps;
use placement::sector_rows_padding;
pub use placement::{placement, FieldPlacement, RowsPadding, PLACEMENT};
pub use run::run_jacobi;

/// Which neighbours the Jacobi update averages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stencil {
    /// The cell and its 6 face neighbours: needs faces only
    /// ([`Neighbourhood::Faces`] suffices).
    Point7,
    /// The cell and all 26 neighbours: needs every neighbour
    /// ([`Neighbourhood::All`]).
    #[default]
    Point27,
}

impl Stencil {
    /// The kernels' shape (`HP_STENCIL_*`) for a domain whose halo widths are `lo` and `hi`:
    /// a side with no halo is not read (a one-sided mean there).
    pub fn shape(self, lo: [u32; 3], hi: [u32; 3]) -> u32 {
        let mut shape = 0;
        for k in 0..3 {
            if lo[k] > 0 {
                shape |= haloport_core::shared::HP_STENCIL_LO << k;
            }
            if hi[k] > 0 {
                shape |= haloport_core::shared::HP_STENCIL_HI << k;
            }
        }
        match self {
            // With no halo anywhere both read the cell alone; 0 would mean "all 27".
            Stencil::Point7 => shape | haloport_core::shared::HP_STENCIL_FACES,
            Stencil::Point27 if shape == 0 => haloport_core::shared::HP_STENCIL_FACES,
            Stencil::Point27 => shape,
        }
    }

    /// `7` or `27`.
    pub fn points(self) -> u32 {
        match self {
            Stencil::Point7 => 7,
            Stencil::Point27 => 27,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct JacobiConfig {
    /// The domain: grid, process grid, halo, periodicity, element type, fields.
    pub spec: DomainSpec,
    /// Which neighbours the update averages.
    pub stencil: Stencil,
    /// Jacobi steps.
    pub steps: u32,
    /// The exchange's transport and limits.
    pub options: HaloOptions,
    /// Blocking exchanges timed after the steps, for the exchange's share of a step.
    pub exchange_reps: u32,
    /// Steps timed without the exchange (the same updates, on the same streams, without the
    /// ready word and fix-up that only the exchange's halos need), after the result was
    /// gathered, every rank starting each together (ranks sharing a device compute side by
    /// side, as in a step): the compute a step cannot go below, so that the exchange's exposed
    /// cost (step minus compute) is measured, not inferred.
    pub compute_steps: u32,
    /// How the update kernel walks its box ([`haloport_core::shared::HP_STENCIL_FORM_MARCH`], the
    /// default, or `_POINTS`): every form gives the same bits; a benchmark compares them.
    pub form: u32,
    /// Where the fields live: the library's allocations, or the application's, adopted at
    /// their start or placed so that the step's tiles start on sectors.
    pub fields: FieldPlacement,
    /// Two steps (interior update, `start`, `finish`, shell update, twice: the fields swap
    /// back) captured once into a graph ([`HaloExchange::begin_capture`]) before the first
    /// step, then replayed for every pair of steps after the first two (which run
    /// uncaptured, so that graph and plain exchanges mix in every run); an odd last step runs
    /// uncaptured. Each of a replay's steps is timed as half of it. Every neighbour must be
    /// device-direct or the rank itself. The steps without the exchange
    /// ([`Self::compute_steps`]) are then replayed two to a graph as well.
    pub graph: bool,
    /// The shell's x and y slabs as launches of their own beside the inner box, as every
    /// field's z slabs are, instead of in the inner box's tiles where the kernel takes them
    /// (f64, the full stencil, one component: `HP_SHELL_READY` in the shared header): for
    /// comparing the two.
    pub shell_launches: bool,
    /// Whether each step updates its inner box beside the exchange.
    pub overlap: Overlap,
    /// Fused mode ([`HaloExchange::fuse`]): each step's boundary update stores the cells the
    /// neighbours need straight into their halos, beside the inner box's update; no pack or
    /// unpack runs for the neighbours that are device-direct or the rank itself; the others
    /// get an ordinary exchange once the boundary is written. One ordinary exchange fills the
    /// first step's halos. The fields must be the library's allocations
    /// ([`FieldPlacement::Library`]; [`FieldPlacement::Auto`] resolves to it); the step always
    /// runs the boundary beside the inner box ([`Overlap::Off`] is refused).
    pub fused: bool,
}

/// Whether each step updates its inner box beside the exchange and then the shell
/// ([`Overlap::On`]), or runs the exchange first and then updates the whole interior as a step
/// without the exchange does ([`Overlap::Off`]: one wide box, and no shell where the kernel
/// allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// On, unless every neighbour of the rank is the rank itself (or it has none): its
    /// exchange is then copies within the device, shorter than the shell's slabs cost beside
    /// the box (512^3 on one H200: f64 steps 657-671 us against 677-691, f32 349-394 against
    /// 403-427; `docs/results.md#stencil-step-on-one-h200`).
    #[default]
    Auto,
    /// The inner box beside the exchange, the shell after it.
    On,
    /// The exchange, then the whole interior. Where ranks share a GPU, a rank's exchange then
    /// waits (on the device) beside the other's update: 2 ranks of 512^3 f64 sharing one H200
    /// took 2030 us a step against 1395 us with overlap.
    Off,
}

/// How a fused step updates the interior ([`JacobiConfig::fused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FusedUpdate {
    /// One launch over the whole interior per field, in the march form's f64 tiles, the
    /// boundary tiles storing into the neighbours' halos.
    Interior,
    /// The inner box on a stream of its own, and the boundary's slabs beside it in the point
    /// form, storing into the neighbours' halos.
    Slabs,
}

impl FusedUpdate {
    /// Its name in results: `interior` or `slabs`.
    pub fn name(self) -> &'static str {
        match self {
            FusedUpdate::Interior => "interior",
            FusedUpdate::Slabs => "slabs",
        }
    }
}

impl Overlap {
    /// Whether a rank overlaps its steps; `alone`: every neighbour of the rank is the rank
    /// itself, or it has none ([`alone`]).
    pub fn overlaps(self, alone: bool) -> bool {
        match self {
            Overlap::On => true,
            Overlap::Off => false,
            Overlap::Auto => !alone,
        }
    }
}

/// Whether every neighbour in `plan` is its own rank (or it has none): its exchange is then
/// copies within the device ([`Link::Local`](haloport_core::halo::Link::Local)).
pub fn alone(plan: &HaloPlan) -> bool {
    plan.neighbours
        .iter()
        .all(|n| n.rank == plan.decomposition.rank)
}

/// Where the inner box took the shell's x and y slabs into its tiles (the first such field):
/// how many of its slab tiles ran before the halos were in and were left to the fix-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellTilesListed {
    /// Tiles holding slab points.
    pub capacity: u32,
    /// Of them, left to the fix-up in the last step.
    pub last_step: u32,
}

/// What one run measured, and (on rank 0) the gathered final fields.
pub struct JacobiRun {
    /// Where the inner box took the shell's x and y slabs into its tiles (the first such
    /// field), how many tiles it left to the fix-up; `None` where no field's box did.
    pub shell_tiles: Option<ShellTilesListed>,
    /// The kernel that updates this rank's inner box of the first field (`None` where the
    /// box is empty): which tiles the step's bulk runs in.
    pub inner_kernel: Option<Kernel>,
    /// How this rank's fused steps updated the interior; `None` outside fused mode.
    pub fused_update: Option<FusedUpdate>,
    /// The padding after each row that would give that box its faster form: rows of whole
    /// sectors where the field would then be placed for its interior
    /// ([`FieldPlacement::Auto`]), else the f32 lanes of 4 points
    /// ([`haloport_core::regions::lanes_padding`]); `None` where it has it or cannot.
    pub inner_rows_padding: Option<RowsPadding>,
    /// This rank's plan.
    pub plan: HaloPlan,
    /// How each neighbour's messages travelled and why, in the plan's order.
    pub routes: Vec<RouteChoice>,
    /// Whether the last blocking exchange after the steps packed and unpacked in one launch;
    /// `None` where none ran.
    pub one_launch: Option<bool>,
    /// Wall time of each step (exchange overlapped with the inner update), seconds.
    pub step_seconds: Vec<f64>,
    /// Wall time of each blocking exchange of all fields after the steps, seconds.
    pub exchange_seconds: Vec<f64>,
    /// Wall time of each step without the exchange ([`JacobiConfig::compute_steps`]), seconds.
    pub compute_seconds: Vec<f64>,
    /// How many of those were replayed from a graph, two a replay ([`JacobiConfig::graph`]).
    pub compute_replayed: u32,
    /// Whether each step updated its inner box beside the exchange ([`Overlap`]).
    pub overlapped: bool,
    /// Where each field lived ([`JacobiConfig::fields`], resolved: never
    /// [`FieldPlacement::Auto`]).
    pub placements: Vec<FieldPlacement>,
    /// Wall time of copying every field to the other by the copy engine, as often: a step
    /// reads one field and writes the other, so this is the time a step's traffic takes at the
    /// device's copy speed, measured in the same run.
    pub copy_seconds: Vec<f64>,
    /// Wall time of [`HaloExchange::new`] on this rank (plan, buffers, IPC handles, agreement),
    /// seconds: the set-up `haloport plan` predicts the compiling part of.
    pub setup_seconds: f64,
    /// The final fields gathered on rank 0; `None` on other ranks.
    pub gathered: Option<GlobalFields>,
}

/// The memory behind `field` and where in it the field starts: its own allocation, or the
/// application's (`own`) it adopted.
fn storage<'a, B: Backend>(
    field: &'a Field<B>,
    own: &'a [B::DeviceMemory],
) -> Result<(&'a B::DeviceMemory, usize)> {
    let at = field.device_addr();
    field
        .device_memory()
        .map(|m| (m, 0))
        .or_else(|| {
            own.iter().find_map(|m| {
                let offset = usize::try_from(at.checked_sub(m.device_addr())?).ok()?;
                (offset + field.len_bytes() <= m.len_bytes()).then_some((m, offset))
            })
        })
        .ok_or_else(|| Error::Internal("a field without memory".into()))
}

/// Runs `config` on this rank alone over the whole grid (process grid 1x1x1): the reference
/// every decomposition must match bit for bit.
///
/// # Errors
/// As [`run_jacobi`].
pub fn run_reference<B: Backend>(backend: &B, config: &JacobiConfig) -> Result<GlobalFields> {
    let alone = SimpleCommunicator::self_comm();
    let mut config = config.clone();
    config.spec.procs = Some([1, 1, 1]);
    config.spec.layout.splits = None;
    config.exchange_reps = 0;
    config.compute_steps = 0;
    config.options.transport = haloport_core::transport::TransportKind::Mpi;
    config.options.fault = None;
    // The library's own fields: a run that places or adopts its fields is checked against
    // fields it did not place.
    config.fields = FieldPlacement::Library;
    config.overlap = Overlap::On;
    run_jacobi(backend, &alone, &config)?
        .gathered
        .ok_or_else(|| Error::Internal("the reference run gathered nothing".into()))
}

/// The interior of `d`, in allocated coordinates.
fn interior_box(d: &Decomposition) -> CellBox {
    std::array::from_fn(|k| [d.halo[k], d.halo[k] + d.local[k]])
}

/// The inner box (cells whose neighbours the stencil of `shape` reads are all interior) and
/// the shell around it, in allocated coordinates, as [begin, end) per dimension, each slab
/// with the dimension it closes (z slabs first); empty boxes left out.
fn boxes(d: &Decomposition, shape: u32) -> (CellBox, Vec<(usize, CellBox)>) {
    let interior = interior_box(d);
    let inner: [[u64; 2]; 3] = std::array::from_fn(|k| {
        let [b, e] = interior[k];
        let low = u64::from(stencil_reads(shape, k, -1));
        let high = u64::from(stencil_reads(shape, k, 1));
        [b + low, e.saturating_sub(high).max(b + low)]
    });
    let inner_empty = inner.iter().any(|[lo, hi]| lo >= hi);
    (
        if inner_empty { [[0, 0]; 3] } else { inner },
        shell_around(&interior, &inner),
    )
}

/// What queues one Jacobi step: the update's launches, its boxes and stream.
struct Step<'a, B: Backend> {
    backend: &'a B,
    launches: &'a [hp_stencil_args],
    inner: [[u64; 2]; 3],
    /// The shell's slabs, each with the dimension it closes.
    shell: &'a [(usize, CellBox)],
    /// Per field, where its inner box takes the shell's x and y slabs into its tiles: the
    /// control words' device address and list capacity (`HP_SHELL_READY`).
    in_tiles: &'a [Option<(u64, u32)>],
    /// Steps queued so far: a step's parity picks its set of control words.
    queued: std::cell::Cell<u64>,
    stream: &'a B::Stream,
    /// The inner box's stream, of ordinary priority.
    inner_stream: &'a B::Stream,
    /// Orders the inner box after everything queued on the step's stream before it.
    inner_fork: &'a B::Event,
    /// The step's stream waits for it: the inner box is done.
    inner_join: &'a B::Event,
    /// A stream for each of the shell's slabs.
    side: &'a [B::Stream],
    /// Orders the side streams after everything queued on the step's stream.
    fork: &'a B::Event,
    /// One per side stream: the step's stream waits for each.
    joins: &'a [B::Event],
    /// Per field, its update in a step without the exchange where its box runs in the lanes.
    halos_in: &'a [Option<HalosIn>],
    /// The streams of those updates' slabs (the j-th slab of each on the j-th), and their
    /// markers.
    halos_in_side: &'a [B::Stream],
    halos_in_joins: &'a [B::Event],
    /// The inner box beside the exchange ([`Overlap`]).
    overlap: bool,
    /// Fused mode's boxes and sets ([`JacobiConfig::fused`]).
    fused: Option<&'a FusedSteps>,
}

/// The fields a step reads and writes.
type StepFields<'a, B> = (&'a Vec<Field<B>>, &'a Vec<Field<B>>);

impl<B: Backend> Step<'_, B> {
    /// Queues one step from `cur` into `next`: `start`, the inner update (on its own stream,
    /// beside the exchange), `finish`, the shell ([`Self::close`]). The inner box reads no
    /// halo until the ready word raised after `finish` (where it takes the x and y slabs), and
    /// the shell writes none of its cells, so the exchange and the shell may run while it
    /// does. Without overlap ([`Overlap`]): the exchange, then [`Self::compute`].
    fn queue(
        &self,
        exchange: &mut HaloExchange<'_, B>,
        (cur, next): StepFields<'_, B>,
    ) -> Result<()> {
        if let Some(fused) = self.fused {
            return self.queue_fused(exchange, (cur, next), fused);
        }
        let cur_refs: Vec<&Field<B>> = cur.iter().collect();
        if !self.overlap {
            // The halos first, then the update with them in.
            exchange.start(&cur_refs, self.stream)?;
            exchange.finish(self.stream)?;
            return self.compute((cur, next));
        }
        let parity = self.next_parity();
        // Before the pack: the inner box waits for the step before, not for the pack.
        self.fork_inner()?;
        exchange.start(&cur_refs, self.stream)?;
        self.update_inner((cur, next), parity)?;
        exchange.finish(self.stream)?;
        self.raise_ready((cur, next), parity)?;
        self.close((cur, next), parity)
    }

    /// Queues one step without the exchange: the update's launches of [`Self::queue`], on
    /// the same streams. With no exchange the halos are in from the start, so a box that
    /// takes its slabs does so in every tile (`HP_SHELL_HALOS_IN`), a box in the f32 lanes
    /// takes all it can of its shell ([`HalosIn`]), and no ready word or fix-up is queued:
    /// those serve the exchange, and count in its exposed cost.
    fn compute(&self, fields: StepFields<'_, B>) -> Result<()> {
        self.fork_inner()?;
        self.update_inner(fields, HP_SHELL_HALOS_IN)?;
        self.update_shell(fields, true)?;
        self.join_inner()
    }

    /// Captures two steps without the exchange ([`Self::compute`]) into a graph, on every rank
    /// or on none.
    fn capture_compute(
        &self,
        comm: &SimpleCommunicator,
        steps: [StepFields<'_, B>; 2],
    ) -> Result<B::Graph> {
        const WHAT: &str = "capturing two steps without the exchange into a graph";
        let began = self.backend.begin_capture(self.stream);
        let capturing = began.is_ok();
        if let Err(e) = agree(comm, WHAT, began) {
            if capturing {
                // Ends the capture this rank began; its graph is of no use.
                let _ = self.backend.end_capture(self.stream);
            }
            return Err(e);
        }
        let queued = steps
            .into_iter()
            .try_for_each(|fields| self.compute(fields));
        let graph = self.backend.end_capture(self.stream);
        agree(comm, WHAT, queued.and(graph))
    }

    /// The parity of the step about to be queued (steps with the exchange alternate between
    /// the two sets of shell control words, plain or captured).
    fn next_parity(&self) -> u32 {
        let n = self.queued.get();
        self.queued.set(n + 1);
        (n % 2) as u32
    }

    /// Raises the ready words of the fields whose box takes the shell's x and y slabs: the
    /// halos are in.
    fn raise_ready(&self, fields: StepFields<'_, B>, parity: u32) -> Result<()> {
        self.for_tiles(fields, parity, |args| {
            // SAFETY: the control words live as long as the step's fields (run_jacobi).
            unsafe {
                self.backend.launch(
                    Launch::StencilShellReady(args),
                    LaunchDims {
                        blocks: 1,
                        threads: 32,
                    },
                    self.stream,
                )
            }
        })
    }

    /// After the halos are in: queues the shell's slabs the box does not take, makes the
    /// step's stream wait for the inner box, and then updates the slab points the box left
    /// (in tiles it ran before the ready word) on the step's stream.
    fn close(&self, fields: StepFields<'_, B>, parity: u32) -> Result<()> {
        self.update_shell(fields, false)?;
        self.join_inner()?;
        self.for_tiles(fields, parity, |args| {
            // SAFETY: as in `sweep`, and the control words live as long as the fields.
            unsafe {
                self.backend.launch(
                    Launch::StencilShellFixup(args),
                    LaunchDims {
                        blocks: HP_SHELL_FIXUP_BLOCKS,
                        threads: STENCIL_THREADS,
                    },
                    self.stream,
                )
            }
        })
    }

    /// Runs `queue` with the inner box's launch argument of each field whose box takes the
    /// shell's x and y slabs.
    fn for_tiles(
        &self,
        (cur, next): StepFields<'_, B>,
        parity: u32,
        mut queue: impl FnMut(&hp_stencil_args) -> Result<()>,
    ) -> Result<()> {
        for (((a, b), kind), words) in cur.iter().zip(next).zip(self.launches).zip(self.in_tiles) {
            if let Some((shell, shell_capacity)) = *words {
                queue(&hp_stencil_args {
                    in_: a.device_addr(),
                    out: b.device_addr(),
                    begin: self.inner.map(|[lo, _]| lo),
                    end: self.inner.map(|[_, hi]| hi),
                    shell,
                    parity,
                    shell_capacity,
                    ..*kind
                })?;
            }
        }
        Ok(())
    }

    /// Orders the inner stream after everything queued on the step's stream so far.
    fn fork_inner(&self) -> Result<()> {
        self.backend.record_event(self.inner_fork, self.stream)?;
        self.backend
            .stream_wait_event(self.inner_stream, self.inner_fork)
    }

    /// Queues the inner box's update on the inner stream (after [`Self::fork_inner`]): where
    /// a field's box takes the shell's x and y slabs, in the kernel that does; in a step
    /// without the exchange (`HP_SHELL_HALOS_IN`), a box in the lanes over [`HalosIn`]'s box.
    fn update_inner(&self, fields: StepFields<'_, B>, parity: u32) -> Result<()> {
        let (cur, next) = fields;
        for (((a, b), (kind, words)), halos_in) in cur
            .iter()
            .zip(next)
            .zip(self.launches.iter().zip(self.in_tiles))
            .zip(self.halos_in)
        {
            let inner = match halos_in {
                Some(wide) if parity == HP_SHELL_HALOS_IN => &wide.inner,
                _ => &self.inner,
            };
            if words.is_none() {
                sweep(self.backend, kind, a, b, inner, self.inner_stream)?;
            }
        }
        self.for_tiles(fields, parity, |args| {
            let tiles = ShellTiles::of(args, STENCIL_THREADS).ok_or_else(|| {
                Error::Internal("a field's box no longer takes its shell's slabs".into())
            })?;
            let dims = LaunchDims {
                blocks: u32::try_from(tiles.tiles()).unwrap_or(u32::MAX),
                threads: STENCIL_THREADS,
            };
            // SAFETY: as in `sweep`, and the control words live as long as the fields.
            unsafe {
                self.backend
                    .launch(Launch::StencilMarch64Shell(args), dims, self.inner_stream)
            }
        })
    }

    /// Makes the step's stream wait for the inner update.
    fn join_inner(&self) -> Result<()> {
        self.backend
            .record_event(self.inner_join, self.inner_stream)?;
        self.backend.stream_wait_event(self.stream, self.inner_join)
    }

    /// Queues the shell's update: each slab on a side stream of ordinary priority that starts
    /// after everything queued on the step's stream so far (the exchange's `finish`) and that
    /// the step's stream waits for, so the slabs run side by side and beside the inner box
    /// (also inside a captured graph, where the markers become its edges). The x and y slabs
    /// of a field whose box takes them are left out, and a slab no field needs takes no
    /// stream. `halos_in` (a step without the exchange): a field with a [`HalosIn`] update
    /// takes its slabs, on streams of their own, in place of the step's shell.
    fn update_shell(&self, (cur, next): StepFields<'_, B>, halos_in: bool) -> Result<()> {
        let fields = || {
            cur.iter()
                .zip(next)
                .zip(self.launches.iter().zip(self.in_tiles))
                .zip(self.halos_in)
        };
        // Per stream, its marker and the sweeps it runs (a field, a box).
        let mut queues = Vec::new();
        for ((k, slab), (side, join)) in self.shell.iter().zip(self.side.iter().zip(self.joins)) {
            let sweeps: Vec<_> = fields()
                .filter(|((_, (_, words)), wide)| {
                    (*k == 2 || words.is_none()) && !(halos_in && wide.is_some())
                })
                .map(|(((a, b), (kind, _)), _)| (a, b, kind, slab))
                .collect();
            queues.push((side, join, sweeps));
        }
        if halos_in {
            // The j-th slab of each such field on the j-th of their streams.
            for (j, (side, join)) in self
                .halos_in_side
                .iter()
                .zip(self.halos_in_joins)
                .enumerate()
            {
                let sweeps: Vec<_> = fields()
                    .filter_map(|(((a, b), (kind, _)), wide)| {
                        let slab = wide.as_ref()?.slabs.get(j)?;
                        Some((a, b, kind, slab))
                    })
                    .collect();
                queues.push((side, join, sweeps));
            }
        }
        queues.retain(|(_, _, sweeps)| !sweeps.is_empty());
        let lanes = queues.iter().map(|(side, join, _)| (*side, *join));
        self.fan_out(lanes, |i, side| {
            for (a, b, kind, slab) in &queues[i].2 {
                sweep(self.backend, kind, a, b, slab, side)?;
            }
            Ok(())
        })
    }

    /// Runs `queue(i, side)` for the i-th of `lanes` (a side stream and its marker) on that
    /// stream, after everything queued on the step's stream so far; the step's stream then
    /// waits for every lane, so the lanes run side by side (also inside a captured graph,
    /// where the markers become its edges). No lanes: nothing is queued.
    fn fan_out<'s>(
        &self,
        lanes: impl IntoIterator<Item = (&'s B::Stream, &'s B::Event)>,
        mut queue: impl FnMut(usize, &B::Stream) -> Result<()>,
    ) -> Result<()>
    where
        B: 's,
    {
        let lanes: Vec<_> = lanes.into_iter().collect();
        if lanes.is_empty() {
            return Ok(());
        }
        self.backend.record_event(self.fork, self.stream)?;
        for (i, (side, join)) in lanes.iter().enumerate() {
            self.backend.stream_wait_event(side, self.fork)?;
            queue(i, side)?;
            self.backend.record_event(join, side)?;
        }
        for (_, join) in &lanes {
            self.backend.stream_wait_event(self.stream, join)?;
        }
        Ok(())
    }

    /// Captures `steps` into a graph, every rank agreeing on the outcome (a rank with a
    /// host-staged neighbour refuses, and no rank may then wait for it in a replay).
    fn capture(
        &self,
        comm: &SimpleCommunicator,
        exchange: &mut HaloExchange<'_, B>,
        steps: [StepFields<'_, B>; 2],
    ) -> Result<ExchangeGraph<B>> {
        let began = exchange.begin_capture(self.stream);
        let capturing = began.is_ok();
        if let Err(e) = agree_collectively(comm, "capturing two steps into a graph", began) {
            if capturing {
                // Ends the capture this rank began; its (empty) graph is of no use.
                let _ = exchange.end_capture(self.stream);
            }
            return Err(e);
        }
        let queued = steps
            .into_iter()
            .try_for_each(|fields| self.queue(exchange, fields));
        let graph = exchange.end_capture(self.stream);
        agree(comm, "capturing two steps into a graph", queued.and(graph))
    }
}

/// [`agree`], with the failing rank's message as an [`Error::InvalidInput`] on the others, so
/// that every rank reports the same refusal (a host-staged neighbour is a declaration that
/// does not fit graphs, as bad input).
fn agree_collectively<T>(comm: &SimpleCommunicator, step: &str, mine: Result<T>) -> Result<T> {
    agree(comm, step, mine).map_err(|e| match e {
        Error::OtherRank { rank, message } => {
            Error::InvalidInput(format!("rank {rank}: {message}"))
        }
        e => e,
    })
}

/// The list length of the first field's shell words after `steps` steps (set `(steps - 1) %
/// 2`, where steps alternate from set 0); `None` without such a field or step.
fn shell_listed<B: Backend>(
    backend: &B,
    words: &[Option<(B::DeviceMemory, u32)>],
    steps: u32,
    stream: &B::Stream,
    deadline: Instant,
) -> Result<Option<u32>> {
    let (Some((memory, _)), Some(last)) = (words.iter().flatten().next(), steps.checked_sub(1))
    else {
        return Ok(None);
    };
    let bytes = download_bytes(
        backend,
        memory,
        4 * HP_SHELL_LIST as usize,
        stream,
        deadline,
    )?;
    let at = 4 * (HP_SHELL_COUNT + last % 2) as usize;
    Ok(Some(u32::from_le_bytes([
        bytes[at],
        bytes[at + 1],
        bytes[at + 2],
        bytes[at + 3],
    ])))
}

/// Queues one Jacobi sweep from `from` into `to` over the box `b` (nothing when it is empty),
/// with the layout, element size and shape of `kind` (its addresses and box are set here).
fn sweep<B: Backend>(
    backend: &B,
    kind: &hp_stencil_args,
    from: &Field<B>,
    to: &Field<B>,
    b: &[[u64; 2]; 3],
    stream: &B::Stream,
) -> Result<()> {
    let points: u64 = b.iter().map(|[lo, hi]| hi.saturating_sub(*lo)).product();
    if points == 0 {
        return Ok(());
    }
    let args = hp_stencil_args {
        in_: from.device_addr(),
        out: to.device_addr(),
        begin: [b[0][0], b[1][0], b[2][0]],
        end: [b[0][1], b[1][1], b[2][1]],
        ..*kind
    };
    let (launch, dims) = stencil_launch(&args, STENCIL_THREADS);
    // SAFETY: (1) both fields are allocated for the plan's local array and live until the
    // caller synchronized the stream (they outlive every step); (2) every box lies inside the
    // interior, so every point's neighbours lie inside the allocation; (3) the CPU does not
    // touch the fields while kernels run.
    unsafe { backend.launch(launch, dims, stream) }
}

/// The kernel [`sweep`] (or, where the box takes its shell's slabs, the step) launches over the
/// inner box `b` of a field of `kind` from `from` into `to`, and the padding of its rows that
/// would give it the f32 lanes; `None` for an empty box.
fn inner_kernel<B: Backend>(
    kind: &hp_stencil_args,
    (from, to): (&Field<B>, &Field<B>),
    b: &CellBox,
    in_tiles: bool,
) -> (Option<Kernel>, Option<u64>) {
    if b.iter().any(|[lo, hi]| hi <= lo) {
        return (None, None);
    }
    if in_tiles {
        return (Some(Kernel::StencilMarch64Shell), None);
    }
    let args = hp_stencil_args {
        in_: from.device_addr(),
        out: to.device_addr(),
        begin: b.map(|[lo, _]| lo),
        end: b.map(|[_, hi]| hi),
        ..*kind
    };
    (
        Some(stencil_launch(&args, STENCIL_THREADS).0.kernel()),
        lanes_padding(&args, STENCIL_THREADS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use haloport_core::domain::ElemType;

    /// A 27-point f32 or f64 field of `grid` on `procs`, rank `rank`, periodic everywhere,
    /// rows padded by `pad`.
    fn periodic(elem: ElemType, grid: [u64; 3], procs: [u32; 3], rank: i32, pad: u32) -> HaloPlan {
        let spec = DomainSpec {
            grid,
            procs: Some(procs),
            periodic: [true, true, true],
            halo: [1, 1, 1],
            elem,
            fields: 1,
            layout: haloport_core::domain::Layout {
                pad: [pad, 0, 0],
                ..Default::default()
            },
        };
        let ranks = procs.iter().product::<u32>() as i32;
        HaloPlan::compile(&spec, ranks, rank).expect("plan")
    }

    #[test]
    fn auto_overlaps_only_a_rank_with_another_rank_for_a_neighbour() {
        let one = periodic(ElemType::F64, [16, 8, 8], [1, 1, 1], 0, 0);
        let two = periodic(ElemType::F64, [16, 8, 8], [2, 1, 1], 1, 0);
        // One rank of two along y only: its x and z neighbours are itself, not its y ones.
        let beside = periodic(ElemType::F64, [16, 8, 8], [1, 2, 1], 0, 0);
        for (plan, by_itself) in [(&one, true), (&two, false), (&beside, false)] {
            assert_eq!(alone(plan), by_itself);
            assert_eq!(Overlap::Auto.overlaps(alone(plan)), !by_itself);
            assert!(Overlap::On.overlaps(alone(plan)));
            assert!(!Overlap::Off.overlaps(alone(plan)));
        }
    }

    #[test]
    fn auto_places_for_the_interior_only_lanes_without_overlap() {
        // f32 rows of 520 take the lanes over the interior once it sits on a sector; rows of
        // 514 cannot be placed; f64 marches in tiles, which want the inner box placed.
        for (elem, pad, overlap, placed) in [
            (ElemType::F32, 6, false, FieldPlacement::Interior),
            (ElemType::F32, 6, true, FieldPlacement::Tiles),
            (ElemType::F32, 0, false, FieldPlacement::Tiles),
            (ElemType::F64, 2, false, FieldPlacement::Tiles),
        ] {
            let plan = periodic(elem, [512, 8, 8], [1, 1, 1], 0, pad);
            let d = &plan.decomposition;
            let (inner, _) = boxes(d, Stencil::Point27.shape([1; 3], [1; 3]));
            let kind = hp_stencil_args {
                alloc: d.alloc,
                elem_bytes: elem.bytes(),
                shape: Stencil::Point27.shape([1; 3], [1; 3]),
                components: 1,
                form: haloport_core::shared::HP_STENCIL_FORM_MARCH,
                ..hp_stencil_args::default()
            };
            let auto = FieldPlacement::Auto.resolve(&kind, d, &inner, overlap);
            assert_eq!(auto, placed, "{elem} pad {pad} overlap {overlap}");
            // A placement named is kept.
            for named in [FieldPlacement::Library, FieldPlacement::Interior] {
                assert_eq!(named.resolve(&kind, d, &inner, overlap), named);
            }
        }
    }

    #[test]
    fn placed_fields_start_their_cell_on_a_sector() {
        // Rows of 520 f32 (2080 bytes) and 516 f64: the inner box's or the interior's first
        // cell on a 32-byte boundary from any 16-byte aligned allocation; rows of 514 f32
        // (2056 bytes, rows at two phases) stay at the allocation's start.
        for (elem, pad, placed) in [
            (ElemType::F32, 6, true),
            (ElemType::F64, 2, true),
            (ElemType::F32, 0, false),
        ] {
            let plan = periodic(elem, [512, 6, 5], [1, 1, 1], 0, pad);
            let d = plan.decomposition;
            let cell = u64::from(elem.bytes());
            assert_eq!(FieldPlacement::Library.cell(&d), None);
            assert_eq!(FieldPlacement::Adopted.cell(&d), None);
            for (how, at) in [
                (FieldPlacement::Tiles, [2, 2, 2]),
                (FieldPlacement::Interior, [1, 1, 1]),
            ] {
                let target = how.cell(&d).expect("a placed cell");
                assert_eq!(target, at);
                for base in [0x1000_u64, 0x1010, 0x1100] {
                    let offset = placement(&d, cell, target, base);
                    assert!(offset < PLACEMENT && offset % cell == 0, "{elem} {base:#x}");
                    if placed {
                        let first = base + offset + d.index(at) * cell;
                        assert_eq!(first % PLACEMENT, 0, "{elem} {how:?} {base:#x}");
                    } else {
                        assert_eq!(offset, 0, "{elem} {base:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn boxes_cover_the_interior_once() {
        for (grid, procs, halo) in [
            ([8_u64, 6, 5], [1_u32, 1, 1], [1_u32, 1, 1]),
            ([9, 4, 3], [2, 1, 1], [2, 1, 1]),
            ([4, 2, 1], [1, 1, 1], [1, 1, 0]),
        ] {
            let spec = DomainSpec {
                grid,
                procs: Some(procs),
                periodic: [true, false, true],
                halo,
                elem: ElemType::F64,
                fields: 1,
                layout: Default::default(),
            };
            let d = Decomposition::new(&spec, (procs[0] * procs[1] * procs[2]) as i32, 0)
                .expect("decomposition");
            let (inner, shell) = boxes(&d, 0);
            let mut hits = vec![0_u32; d.alloc_elems() as usize];
            for b in std::iter::once(&inner).chain(shell.iter().map(|(_, b)| b)) {
                for z in b[2][0]..b[2][1] {
                    for y in b[1][0]..b[1][1] {
                        for x in b[0][0]..b[0][1] {
                            hits[d.index([x, y, z]) as usize] += 1;
                        }
                    }
                }
            }
            for z in 0..d.alloc[2] {
                for y in 0..d.alloc[1] {
                    for x in 0..d.alloc[0] {
                        let inside = (0..3).all(|k| {
                            let c = [x, y, z][k];
                            c >= d.halo[k] && c < d.halo[k] + d.local[k]
                        });
                        assert_eq!(
                            hits[d.index([x, y, z]) as usize],
                            u32::from(inside),
                            "{grid:?} cell ({x},{y},{z})"
                        );
                    }
                }
            }
            // The inner box reads no halo cell.
            for (k, [lo, hi]) in inner.iter().enumerate() {
                if lo < hi {
                    assert!(*lo > d.halo[k] && *hi < d.halo[k] + d.local[k]);
                }
            }
        }
    }

    #[test]
    fn checksum_depends_on_values_and_positions() {
        let a = GlobalFields {
            grid: [2, 1, 1],
            kinds: vec![FieldKind {
                elem: ElemType::F64,
                components: 1,
            }],
            fields: vec![[1.0_f64.to_le_bytes(), 2.0_f64.to_le_bytes()].concat()],
        };
        let mut swapped = a.clone();
        swapped.fields[0] = [2.0_f64.to_le_bytes(), 1.0_f64.to_le_bytes()].concat();
        assert_ne!(a.checksum(), swapped.checksum());
        assert_eq!(a.checksum(), a.clone().checksum());
        let found = a.first_difference(&swapped).unwrap_or_default();
        assert!(
            found.contains("field 0 cell (0, 0, 0) component 0: 1 here, 2 in the reference"),
            "{found}"
        );
        assert!(a.first_difference(&a.clone()).is_none());
        let v = initial_value([-1, 5, 7], 2);
        assert!((0.0..1.0).contains(&v) && f64::from(v as f32) == v);
    }
}
