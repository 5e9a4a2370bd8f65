//! The Backend trait: everything haloport needs from one GPU, with the vendor hidden (SPEC 2).
//!
//! Strategies are generic over `B: Backend` and never see vendor types. A backend owns memory
//! (device and pinned host), streams and events, copies, and launches the shared kernels of
//! `kernels-cu/` (on the host backend: their Rust twins with the same semantics). Handles are
//! associated types with RAII: dropping one frees it, and `Drop` never panics.
//!
//! Threading: a backend value is used from the thread that created it; its handles may be
//! moved between threads (`Send`) but are not used concurrently.

// `Backend::launch` is an unsafe method: kernels dereference raw device addresses.
#![allow(unsafe_code)]

use std::fmt;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::regions::Copy3d;
use crate::shared::{
    hp_epoch_args, hp_exchange_args, hp_ipc_args, hp_pingpong_args, hp_regions_args,
    hp_stencil_args, hp_taskqueue_args, HP_INLINE_REGIONS, HP_INLINE_REGIONS_FEW, HP_NO_MESSAGE,
    HP_PAYLOAD_COPY, HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FULL, HP_REGIONS_FUSED,
    HP_REGIONS_FUSED_COPIES, HP_REGIONS_FUSED_SYNTHETIC, HP_REGIONS_PLAIN,
};

/// Which kind of pinned host memory to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Coherence {
    /// Writes become visible to the other side while kernels run (flags, polling).
    /// CUDA: cuMemHostAlloc(PORTABLE | DEVICEMAP). HIP: hipHostMallocCoherent | hipHostMallocMapped.
    Coherent,
    /// Contents are defined only at stream/event synchronization points: the CPU may read what a
    /// kernel wrote only after the kernel is known complete, and a kernel sees CPU writes made
    /// before its launch. HIP: hipHostMallocNonCoherent. CUDA has no such kind and serves it as
    /// Coherent, and says so in [`PinnedMemory::coherence_served`].
    NonCoherent,
}

impl fmt::Display for Coherence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Coherence::Coherent => "coherent",
            Coherence::NonCoherent => "non-coherent",
        })
    }
}

/// What a device is and offers.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// "NVIDIA", "AMD", or "host".
    pub vendor: String,
    /// The device's name as the driver reports it.
    pub name: String,
    /// Index of the device this rank uses (SPEC 2: `local_rank % device_count`).
    pub ordinal: usize,
    /// Devices of this backend visible to this process.
    pub device_count: usize,
    /// Streaming multiprocessors / compute units (host: hardware threads).
    pub multiprocessors: u32,
    /// Warp / wavefront width in threads (host: 1).
    pub warp_width: u32,
    /// Most threads one block may have.
    pub max_threads_per_block: u32,
    /// Rate of the device timer that kernels read for timestamps, in Hz.
    pub timer_hz: u64,
    /// Pinned-memory coherence kinds the device really offers (not those it serves as another).
    pub coherence_kinds: Vec<Coherence>,
    /// Driver and runtime versions, free text.
    pub driver: String,
}

/// Grid and block dimensions of a launch (1-D: haloport's kernels work per block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

impl LaunchDims {
    /// Checks that the grid is not empty and blocks have 1 to `max_threads` threads.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the backend and the dimensions.
    pub fn check(&self, backend: &str, max_threads: u32) -> Result<()> {
        if self.blocks == 0 || self.threads == 0 || self.threads > max_threads {
            return Err(crate::Error::InvalidInput(format!(
                "{backend}: launch of {} blocks x {} threads (1 to {max_threads} threads per block)",
                self.blocks, self.threads
            )));
        }
        Ok(())
    }
}

/// The shared kernels every backend has. Their semantics are defined by `kernels-cu/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kernel {
    /// Fill every element of each block's send buffer with the packed value (SPEC 5),
    /// stamping pack start and end per block.
    Pack,
    /// Check `threads` evenly spaced elements of each block's receive buffer against the value
    /// its source rank packed, writing the block's check record, stamping unpack start and end.
    Unpack,
    /// Play clock ping-pong with the CPU through pinned flags (SPEC 6), one thread.
    ClockPingPong,
    /// The taskqueue's persistent kernel (thesis 3.4-3.5): per block, pack, post a task, wait for
    /// the go flag, unpack. Its blocks wait for the CPU, so all must be resident at once.
    Taskqueue,
    /// Device-direct (SPEC 12): per chunk, wait for the destination's credit, store the chunk
    /// into the destination's receive slot, fence at system scope, raise its arrival flag.
    IpcPack,
    /// Device-direct: per chunk, wait for its arrival flag, check it, raise the source's credit.
    IpcUnpack,
    /// The GPU-only taskqueue: [`Kernel::IpcPack`] then [`Kernel::IpcUnpack`] in one persistent
    /// kernel. Its blocks wait for the peer's blocks, so all must be resident at once.
    IpcTaskqueue,
    /// The library's exchange (SPEC 13): copy many regions of fields into their packed buffers
    /// in one launch, each region served by its own grid blocks; regions that belong to a
    /// device-direct message wait for its credit first and raise its arrival flag after
    /// (`hp_region`, `hp_message_signal` in `kernels-cu/haloport_shared.h`).
    PackRegions,
    /// The reverse of [`Kernel::PackRegions`]: packed buffers into the fields' regions, waiting
    /// for a message's arrival flag first and raising the sender's credit after.
    UnpackRegions,
    /// The plain form of [`Kernel::PackRegions`] for 4-byte elements: tables without messages
    /// or synthetic regions, within the 32-bit index rule
    /// ([`regions::kernel_form`](crate::regions::kernel_form)), at half the registers.
    PackRegionsW4,
    /// [`Kernel::PackRegionsW4`] for 8-byte elements.
    PackRegionsW8,
    /// The plain form of [`Kernel::UnpackRegions`] for 4-byte elements.
    UnpackRegionsW4,
    /// [`Kernel::UnpackRegionsW4`] for 8-byte elements.
    UnpackRegionsW8,
    /// An exchange whose every message is device-direct in one launch (`HP_REGIONS_FUSED`):
    /// each grid block packs its pack block, then unpacks its unpack block (ipc-tq's shape).
    /// This kernel moves 1- and 2-byte words; [`Kernel::ExchangeRegionsW4`] and
    /// [`Kernel::ExchangeRegionsW8`] the others.
    ExchangeRegions,
    /// [`Kernel::ExchangeRegions`] for a table of at most `HP_INLINE_REGIONS_FEW` regions in
    /// the launch's parameters: the same code over the first 880 bytes of its argument, without
    /// the path of a table in device memory, so the launch costs less (a small exchange is
    /// mostly launch).
    ExchangeRegionsFew,
    /// [`Kernel::ExchangeRegions`] whose pack side also copies a rank's own messages straight
    /// into its halos (`HP_REGIONS_FUSED_COPIES`: a periodic rank with device-direct
    /// neighbours): a kernel of its own, so that the one launch without copies keeps its
    /// registers.
    ExchangeRegionsCopies,
    /// [`Kernel::ExchangeRegions`] for 4-byte elements: a kernel of one word size holds a third
    /// of the code of one of any size, so a small exchange's blocks spend less fetching
    /// instructions (`HP_WORDS_ANY` in `kernels-cu/hp_regions.cuh`).
    ExchangeRegionsW4,
    /// [`Kernel::ExchangeRegionsW4`] for 8-byte elements.
    ExchangeRegionsW8,
    /// [`Kernel::ExchangeRegionsFew`] for 4-byte elements.
    ExchangeRegionsFewW4,
    /// [`Kernel::ExchangeRegionsFew`] for 8-byte elements.
    ExchangeRegionsFewW8,
    /// [`Kernel::ExchangeRegions`] for a table of synthetic regions only, each with its message
    /// (`HP_REGIONS_FUSED_SYNTHETIC`: the thesis's workload as the library's messages): no
    /// moves, no unsignalled path, a twentieth of the code.
    ExchangeSynthetic,
    /// [`Kernel::ExchangeSynthetic`] with the short parameter of [`Kernel::ExchangeRegionsFew`].
    ExchangeSyntheticFew,
    /// One Jacobi sweep of the 27-point stencil over a box of a field (SPEC 13's application).
    Stencil27,
    /// [`Kernel::Stencil27`] over cells of several components: a kernel of its own, so that
    /// the one-component kernel keeps its registers (32 against 40 on sm_90 when one kernel
    /// held both).
    StencilCells,
    /// Moves a replayed graph's epochs on ([`hp_epoch_args`]): one thread.
    EpochStep,
    /// [`Kernel::Stencil27`]'s march form as a kernel of its own
    /// (`HP_MARCHING_MAX_THREADS`): fewer registers; f32 tiles, and columns for thin boxes.
    StencilMarching,
    /// The march form's f64 tiles, alone in their kernel with a floor of resident blocks
    /// (`HP_MARCH64_MIN_BLOCKS`): its own registers (results/HISTORY.md: h200-tiles).
    StencilMarch64,
    /// The march form's f32 tiles in lanes of 4 points, one aligned 16-byte load a row, x
    /// neighbours from the lanes beside (`HP_LANES_POINTS`): rows of a multiple of 4 elements
    /// and 16-byte aligned fields only (results/HISTORY.md: h200-lane-rows).
    StencilMarch32,
    /// [`Kernel::StencilMarch64`] over a step's inner box taking the shell's x and y slabs
    /// into its tiles once the step's ready word is raised (`HP_SHELL_READY`).
    StencilMarch64Shell,
    /// Raises a step's ready word for [`Kernel::StencilMarch64Shell`]: one thread.
    StencilShellReady,
    /// The 7-point stencil's f64 march form, alone in its kernel with a floor of resident
    /// blocks (`HP_MARCH7_MIN_BLOCKS`): blocks of at most `HP_MARCHING_MAX_THREADS` threads;
    /// larger ones, and f32, march in [`Kernel::Stencil27`].
    StencilMarch7,
    /// The slab points of the tiles [`Kernel::StencilMarch64Shell`] listed before the ready
    /// word (`HP_SHELL_FIXUP_BLOCKS` blocks).
    StencilShellFixup,
}

impl Kernel {
    /// The kernel's entry-point name in the compiled module.
    pub fn symbol(self) -> &'static str {
        match self {
            Kernel::Pack => "hp_pack",
            Kernel::Unpack => "hp_unpack",
            Kernel::ClockPingPong => "hp_clock_pingpong",
            Kernel::Taskqueue => "hp_taskqueue",
            Kernel::IpcPack => "hp_ipc_pack",
            Kernel::IpcUnpack => "hp_ipc_unpack",
            Kernel::IpcTaskqueue => "hp_ipc_taskqueue",
            Kernel::PackRegions => "hp_pack_regions",
            Kernel::UnpackRegions => "hp_unpack_regions",
            Kernel::PackRegionsW4 => "hp_pack_regions_w4",
            Kernel::PackRegionsW8 => "hp_pack_regions_w8",
            Kernel::UnpackRegionsW4 => "hp_unpack_regions_w4",
            Kernel::UnpackRegionsW8 => "hp_unpack_regions_w8",
            Kernel::ExchangeRegions => "hp_exchange_regions",
            Kernel::ExchangeRegionsFew => "hp_exchange_regions_few",
            Kernel::ExchangeRegionsCopies => "hp_exchange_regions_copies",
            Kernel::ExchangeRegionsW4 => "hp_exchange_regions_w4",
            Kernel::ExchangeRegionsW8 => "hp_exchange_regions_w8",
            Kernel::ExchangeRegionsFewW4 => "hp_exchange_regions_few_w4",
            Kernel::ExchangeRegionsFewW8 => "hp_exchange_regions_few_w8",
            Kernel::ExchangeSynthetic => "hp_exchange_synthetic",
            Kernel::ExchangeSyntheticFew => "hp_exchange_synthetic_few",
            Kernel::Stencil27 => "hp_stencil27",
            Kernel::StencilCells => "hp_stencil_cells",
            Kernel::EpochStep => "hp_epoch_step",
            Kernel::StencilMarching => "hp_stencil27_marching",
            Kernel::StencilMarch64 => "hp_stencil27_march64",
            Kernel::StencilMarch32 => "hp_stencil27_march32",
            Kernel::StencilMarch64Shell => "hp_stencil27_march64_shell",
            Kernel::StencilShellReady => "hp_stencil27_shell_ready",
            Kernel::StencilShellFixup => "hp_stencil27_shell_fixup",
            Kernel::StencilMarch7 => "hp_stencil7_marching",
        }
    }

    /// True for kernels whose blocks wait for each other (through the CPU or flags), so all
    /// of them must be resident at once. The region kernels' blocks wait only for other
    /// processes' (or other streams') kernels, never for blocks of their own launch, so they
    /// need no co-residency. Backends launch these cooperatively
    /// (cuLaunchCooperativeKernel / hipModuleLaunchCooperativeKernel), which the driver refuses
    /// when the grid cannot be co-resident, instead of trusting an occupancy estimate.
    pub fn needs_coresidency(self) -> bool {
        matches!(self, Kernel::Taskqueue | Kernel::IpcTaskqueue)
    }

    /// True for the one-launch exchange's kernels ([`Launch::ExchangeRegions`] picks one).
    pub fn is_one_launch(self) -> bool {
        matches!(
            self,
            Kernel::ExchangeRegions
                | Kernel::ExchangeRegionsFew
                | Kernel::ExchangeRegionsCopies
                | Kernel::ExchangeRegionsW4
                | Kernel::ExchangeRegionsW8
                | Kernel::ExchangeRegionsFewW4
                | Kernel::ExchangeRegionsFewW8
                | Kernel::ExchangeSynthetic
                | Kernel::ExchangeSyntheticFew
        )
    }

    /// Every kernel, for loading modules and checking they are all present.
    pub const ALL: [Kernel; 32] = [
        Kernel::Pack,
        Kernel::Unpack,
        Kernel::ClockPingPong,
        Kernel::Taskqueue,
        Kernel::IpcPack,
        Kernel::IpcUnpack,
        Kernel::IpcTaskqueue,
        Kernel::PackRegions,
        Kernel::UnpackRegions,
        Kernel::PackRegionsW4,
        Kernel::PackRegionsW8,
        Kernel::UnpackRegionsW4,
        Kernel::UnpackRegionsW8,
        Kernel::ExchangeRegions,
        Kernel::ExchangeRegionsFew,
        Kernel::ExchangeRegionsCopies,
        Kernel::ExchangeRegionsW4,
        Kernel::ExchangeRegionsW8,
        Kernel::ExchangeRegionsFewW4,
        Kernel::ExchangeRegionsFewW8,
        Kernel::ExchangeSynthetic,
        Kernel::ExchangeSyntheticFew,
        Kernel::Stencil27,
        Kernel::StencilCells,
        Kernel::EpochStep,
        Kernel::StencilMarching,
        Kernel::StencilMarch64,
        Kernel::StencilMarch32,
        Kernel::StencilMarch64Shell,
        Kernel::StencilShellReady,
        Kernel::StencilShellFixup,
        Kernel::StencilMarch7,
    ];
}

/// A kernel launch with its argument, passed to the kernel by value.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Launch<'a> {
    /// [`Kernel::Pack`].
    Pack(&'a hp_exchange_args),
    /// [`Kernel::Unpack`].
    Unpack(&'a hp_exchange_args),
    /// [`Kernel::ClockPingPong`].
    ClockPingPong(&'a hp_pingpong_args),
    /// [`Kernel::Taskqueue`].
    Taskqueue(&'a hp_taskqueue_args),
    /// [`Kernel::IpcPack`].
    IpcPack(&'a hp_ipc_args),
    /// [`Kernel::IpcUnpack`].
    IpcUnpack(&'a hp_ipc_args),
    /// [`Kernel::IpcTaskqueue`].
    IpcTaskqueue(&'a hp_ipc_args),
    /// [`Kernel::PackRegions`], or its plain form ([`Kernel::PackRegionsW8`], ...) when
    /// `form` is `HP_REGIONS_PLAIN`. Grid: [`regions::assign_blocks`](crate::regions::assign_blocks)
    /// numbers each region's blocks; launch at least that many (extra blocks return at once).
    PackRegions(&'a hp_regions_args),
    /// [`Kernel::UnpackRegions`] (or its plain form), with the same grid as the pack of the
    /// same regions.
    UnpackRegions(&'a hp_regions_args),
    /// [`Kernel::ExchangeRegions`]: form `HP_REGIONS_FUSED` (or `HP_REGIONS_FUSED_COPIES`:
    /// [`Kernel::ExchangeRegionsCopies`]; `HP_REGIONS_FUSED_SYNTHETIC`:
    /// [`Kernel::ExchangeSynthetic`]; the kernel for the word size where it has one, with the
    /// short parameter where the table fits it), a grid of the larger side's blocks. Its waits
    /// depend on other processes' blocks: launch it only where every rank's grid on the device
    /// can be resident at once.
    ExchangeRegions(&'a hp_regions_args),
    /// [`Kernel::Stencil27`]. Any grid covers the box (threads stride over its points);
    /// [`regions::stencil_blocks`](crate::regions::stencil_blocks) suggests one.
    Stencil27(&'a hp_stencil_args),
    /// [`Kernel::EpochStep`]: one block of one thread.
    EpochStep(&'a hp_epoch_args),
    /// [`Kernel::StencilMarching`]: only where
    /// [`regions::stencil_marching`](crate::regions::stencil_marching) says so (the full stencil,
    /// one component, a box of at least `HP_MARCH_MIN_Z` planes, blocks of whole warps, at most
    /// `HP_MARCHING_MAX_THREADS`); [`regions::stencil_launch`](crate::regions::stencil_launch)
    /// picks it and its grid.
    StencilMarching(&'a hp_stencil_args),
    /// [`Kernel::StencilMarch64`]: only for 8-byte elements where
    /// [`regions::stencil_marches`](crate::regions::stencil_marches) says so (a box thick enough
    /// for tiles); [`regions::stencil_launch`](crate::regions::stencil_launch) picks it and its
    /// grid, a block per tile.
    StencilMarch64(&'a hp_stencil_args),
    /// [`Kernel::StencilMarch7`]: only where
    /// [`regions::stencil7_marching`](crate::regions::stencil7_marching) says so;
    /// [`regions::stencil_launch`](crate::regions::stencil_launch) picks it and its grid.
    StencilMarch7(&'a hp_stencil_args),
    /// [`Kernel::StencilMarch32`]: only where
    /// [`regions::stencil_lanes`](crate::regions::stencil_lanes) says so (f32 tiles, rows of a
    /// multiple of 4 elements, 16-byte aligned fields);
    /// [`regions::stencil_launch`](crate::regions::stencil_launch) picks it and its grid, a
    /// block per tile.
    StencilMarch32(&'a hp_stencil_args),
    /// [`Kernel::StencilMarch64Shell`]: only where
    /// [`regions::ShellTiles::of`](crate::regions::ShellTiles::of) takes the box, with its
    /// grid (a block per tile) and threads.
    StencilMarch64Shell(&'a hp_stencil_args),
    /// [`Kernel::StencilShellReady`]: one block of one thread.
    StencilShellReady(&'a hp_stencil_args),
    /// [`Kernel::StencilShellFixup`]: the same argument and threads as the
    /// [`Launch::StencilMarch64Shell`] it follows, `HP_SHELL_FIXUP_BLOCKS` blocks.
    StencilShellFixup(&'a hp_stencil_args),
}

impl Launch<'_> {
    /// The address of the launch's argument: every shared kernel takes exactly one struct by
    /// value, so a backend hands the driver this one pointer as the kernel's parameter list.
    pub fn arg_ptr(&self) -> *const std::ffi::c_void {
        match self {
            Launch::Pack(a) | Launch::Unpack(a) => std::ptr::from_ref(*a).cast(),
            Launch::ClockPingPong(a) => std::ptr::from_ref(*a).cast(),
            Launch::Taskqueue(a) => std::ptr::from_ref(*a).cast(),
            Launch::IpcPack(a) | Launch::IpcUnpack(a) | Launch::IpcTaskqueue(a) => {
                std::ptr::from_ref(*a).cast()
            }
            Launch::PackRegions(a) | Launch::UnpackRegions(a) | Launch::ExchangeRegions(a) => {
                std::ptr::from_ref(*a).cast()
            }
            Launch::Stencil27(a)
            | Launch::StencilMarching(a)
            | Launch::StencilMarch64(a)
            | Launch::StencilMarch7(a)
            | Launch::StencilMarch32(a)
            | Launch::StencilMarch64Shell(a)
            | Launch::StencilShellReady(a)
            | Launch::StencilShellFixup(a) => std::ptr::from_ref(*a).cast(),
            Launch::EpochStep(a) => std::ptr::from_ref(*a).cast(),
        }
    }

    /// Checks what can be checked of the argument without reading device memory: for the
    /// region kernels, the element size and that tables are present where their counts say so;
    /// for the stencil, the element size, the box against the allocation and both fields (and
    /// for its march-only kernel, that the box, shape and `dims` suit it). Other launches pass. Backends call it before queueing a launch, so a mistake is an error on
    /// every backend instead of a kernel that silently moves nothing (the kernels ignore
    /// element sizes other than 4 and 8).
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming `backend` and the problem.
    pub fn check(&self, backend: &str, dims: LaunchDims) -> Result<()> {
        let invalid = |what: String| Err(crate::Error::InvalidInput(format!("{backend}: {what}")));
        // What the f64 march kernels take, and what the launch brought.
        let f64_march_refused = |kernel: &str, a: &hp_stencil_args| {
            format!(
                "{kernel} over one component of 8-byte elements, a box of at least {}x{}x{} points and blocks of whole warps up to {} threads (box {:?}..{:?}, {}-byte elements, shape {}, {} components, {} threads)",
                crate::shared::HP_MARCH_X,
                crate::shared::HP_MARCH_ROWS,
                crate::shared::HP_MARCH_MIN_Z,
                crate::shared::HP_MARCHING_MAX_THREADS,
                a.begin,
                a.end,
                a.elem_bytes,
                a.shape,
                a.components,
                dims.threads
            )
        };
        match self {
            Launch::PackRegions(a) | Launch::UnpackRegions(a) | Launch::ExchangeRegions(a) => {
                // The kernel's name formatted only for the error: every launch passes here.
                if crate::regions::check_word_bytes(a.elem_bytes, "").is_err() {
                    let kernel = format!("{:?}", self.kernel());
                    crate::regions::check_word_bytes(a.elem_bytes, &kernel)
                        .or_else(|e| invalid(e.to_string()))?;
                }
                let fused = matches!(self, Launch::ExchangeRegions(_));
                if fused
                    != matches!(
                        a.form,
                        HP_REGIONS_FUSED | HP_REGIONS_FUSED_COPIES | HP_REGIONS_FUSED_SYNTHETIC
                    )
                {
                    return invalid(format!(
                        "region kernel form {} for {:?} (forms {HP_REGIONS_FUSED}, {HP_REGIONS_FUSED_COPIES} and {HP_REGIONS_FUSED_SYNTHETIC} are the one-launch exchange's alone)",
                        a.form,
                        self.kernel()
                    ));
                }
                // The synthetic form's kernels move nothing, and have no path for a region
                // without a message: refused where the table is at hand (inline) and holds
                // another payload or an unsignalled region.
                let both = (a.num_regions + a.num_unpack_regions) as usize;
                if a.form == HP_REGIONS_FUSED_SYNTHETIC
                    && a.table_inline == 1
                    && a.inline_regions[..both.min(HP_INLINE_REGIONS as usize)]
                        .iter()
                        .any(|r| r.payload != HP_PAYLOAD_SYNTHETIC || r.message == HP_NO_MESSAGE)
                {
                    return invalid(format!(
                        "a one-launch exchange of form {HP_REGIONS_FUSED_SYNTHETIC} (synthetic regions only, each with its message) with a region of another payload or without a message"
                    ));
                }
                // Without its copies form the one launch would pack a copy into the buffer's
                // first elements: refused where the table is at hand (inline).
                let inline = (a.num_regions as usize).min(HP_INLINE_REGIONS as usize);
                let packs = &a.inline_regions[..inline];
                if a.form == HP_REGIONS_FUSED
                    && a.table_inline == 1
                    && packs.iter().any(|r| r.payload == HP_PAYLOAD_COPY)
                {
                    return invalid(format!(
                        "a one-launch exchange that copies regions into halos needs form {HP_REGIONS_FUSED_COPIES}"
                    ));
                }
                if fused && a.messages == 0 {
                    return invalid("a one-launch exchange without its message table".into());
                }
                if a.done != 0 && (!fused || a.epoch_base != 0) {
                    return invalid(
                        "done words are for a one-launch exchange outside a graph".into(),
                    );
                }
                let regions = a.num_regions + if fused { a.num_unpack_regions } else { 0 };
                match a.table_inline {
                    0 if regions > 0 && a.regions == 0 => {
                        return invalid(format!("{regions} regions but no region table"));
                    }
                    0 => {}
                    1 if regions > HP_INLINE_REGIONS => {
                        return invalid(format!(
                            "{regions} regions carried in the launch's parameters (at most {HP_INLINE_REGIONS})"
                        ));
                    }
                    1 => {}
                    other => return invalid(format!("table_inline {other} (0 or 1)")),
                }
                if a.messages != 0 && a.epoch == 0 {
                    return invalid("messages need an epoch of at least 1".into());
                }
                match a.form {
                    HP_REGIONS_FULL
                    | HP_REGIONS_FUSED
                    | HP_REGIONS_FUSED_COPIES
                    | HP_REGIONS_FUSED_SYNTHETIC => Ok(()),
                    HP_REGIONS_PLAIN if a.messages == 0 && a.checks == 0 && a.times == 0 => {
                        Ok(())
                    }
                    HP_REGIONS_PLAIN => invalid(
                        "the plain form of the region kernels has no message, check or timestamp table"
                            .into(),
                    ),
                    other => invalid(format!("region kernel form {other} (0 to 4)")),
                }
            }
            Launch::StencilMarching(a) if !crate::regions::stencil_marching(a, dims.threads) => {
                invalid(format!(
                    "the march-only stencil kernel takes the full stencil over one component, a box of at least {} planes and blocks of whole warps up to {} threads (box {:?}..{:?}, shape {}, {} components, {} threads)",
                    crate::shared::HP_MARCH_MIN_Z,
                    crate::shared::HP_MARCHING_MAX_THREADS,
                    a.begin,
                    a.end,
                    a.shape,
                    a.components,
                    dims.threads
                ))
            }
            Launch::StencilMarch7(a) if !crate::regions::stencil7_marching(a, dims.threads) => {
                invalid(f64_march_refused("the 7-point march kernel takes the 7-point stencil", a))
            }
            Launch::StencilMarch64(a)
                if a.elem_bytes != 8
                    || !crate::regions::stencil_marching(a, dims.threads)
                    || !crate::regions::stencil_marches(a, dims.threads) =>
            {
                invalid(f64_march_refused("the f64 march kernel takes the full stencil", a))
            }
            Launch::StencilMarch32(a) if !crate::regions::stencil_lanes(a, dims.threads) => {
                invalid(format!(
                    "the f32 lanes kernel takes the full stencil over one component of 4-byte elements, a box of at least {}x{}x{} points, rows of a multiple of {} elements (or of 2 mod 4 in planes of a multiple of 4, with a box from x >= 2 and y or z >= 2), both fields 16-byte aligned and blocks of whole warps up to {} threads (box {:?}..{:?}, allocation {:?}, {}-byte elements, shape {}, {} components, fields at {:#x} and {:#x}, {} threads)",
                    crate::shared::HP_MARCH_X,
                    crate::shared::HP_MARCH_ROWS,
                    crate::shared::HP_MARCH_MIN_Z,
                    crate::shared::HP_LANES_POINTS,
                    crate::shared::HP_MARCHING_MAX_THREADS,
                    a.begin,
                    a.end,
                    a.alloc,
                    a.elem_bytes,
                    a.shape,
                    a.components,
                    a.in_,
                    a.out,
                    dims.threads
                ))
            }
            Launch::StencilMarch64Shell(a) | Launch::StencilShellFixup(a)
                if crate::regions::ShellTiles::of(a, dims.threads).is_none()
                    || !self.shell_words_fit(a) =>
            {
                invalid(format!(
                    "{:?} takes the full stencil over one component of 8-byte elements, a box whose width leaves 1 to {} columns in its last tile of {}, with 2 columns of allocation beside it in x and y, control words, parity 0 or 1 (or, the box alone, parity {} for a step without an exchange), a list of the box's shell tiles, and blocks of whole warps up to {} threads (box {:?}..{:?}, allocation {:?}, {}-byte elements, shape {}, {} components, control words {:#x}, parity {}, list of {}, {} threads)",
                    self.kernel(),
                    crate::shared::HP_MARCH_X - 2,
                    crate::shared::HP_MARCH_X,
                    crate::shared::HP_SHELL_HALOS_IN,
                    crate::shared::HP_MARCHING_MAX_THREADS,
                    a.begin,
                    a.end,
                    a.alloc,
                    a.elem_bytes,
                    a.shape,
                    a.components,
                    a.shell,
                    a.parity,
                    a.shell_capacity,
                    dims.threads
                ))
            }
            Launch::StencilShellReady(a) if a.shell == 0 || a.parity > 1 => invalid(format!(
                "the shell's ready launch needs control words and parity 0 or 1 (words {:#x}, parity {})",
                a.shell, a.parity
            )),
            Launch::StencilShellReady(_) => Ok(()),
            Launch::Stencil27(a)
            | Launch::StencilMarching(a)
            | Launch::StencilMarch64(a)
            | Launch::StencilMarch7(a)
            | Launch::StencilMarch32(a)
            | Launch::StencilMarch64Shell(a)
            | Launch::StencilShellFixup(a) => {
                crate::regions::check_stencil(a).or_else(|e| invalid(e.to_string()))?;
                if a.in_ == 0 || a.out == 0 || a.in_ == a.out {
                    return invalid(format!(
                        "stencil fields at {:#x} (in) and {:#x} (out): both needed, distinct",
                        a.in_, a.out
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Which kernel this launches.
    pub fn kernel(&self) -> Kernel {
        match self {
            Launch::Pack(_) => Kernel::Pack,
            Launch::Unpack(_) => Kernel::Unpack,
            Launch::ClockPingPong(_) => Kernel::ClockPingPong,
            Launch::Taskqueue(_) => Kernel::Taskqueue,
            Launch::IpcPack(_) => Kernel::IpcPack,
            Launch::IpcUnpack(_) => Kernel::IpcUnpack,
            Launch::IpcTaskqueue(_) => Kernel::IpcTaskqueue,
            Launch::PackRegions(a) => match (a.form, a.elem_bytes) {
                (HP_REGIONS_PLAIN, 4) => Kernel::PackRegionsW4,
                (HP_REGIONS_PLAIN, 8) => Kernel::PackRegionsW8,
                _ => Kernel::PackRegions,
            },
            Launch::UnpackRegions(a) => match (a.form, a.elem_bytes) {
                (HP_REGIONS_PLAIN, 4) => Kernel::UnpackRegionsW4,
                (HP_REGIONS_PLAIN, 8) => Kernel::UnpackRegionsW8,
                _ => Kernel::UnpackRegions,
            },
            Launch::ExchangeRegions(a) if a.form == HP_REGIONS_FUSED_COPIES => {
                Kernel::ExchangeRegionsCopies
            }
            Launch::ExchangeRegions(a) => {
                // The short parameter where it holds the table (HP_INLINE_REGIONS_FEW).
                let few = a.table_inline == 1
                    && a.num_regions + a.num_unpack_regions <= HP_INLINE_REGIONS_FEW;
                match (a.form == HP_REGIONS_FUSED_SYNTHETIC, a.elem_bytes, few) {
                    (true, _, false) => Kernel::ExchangeSynthetic,
                    (true, _, true) => Kernel::ExchangeSyntheticFew,
                    (false, 4, false) => Kernel::ExchangeRegionsW4,
                    (false, 4, true) => Kernel::ExchangeRegionsFewW4,
                    (false, 8, false) => Kernel::ExchangeRegionsW8,
                    (false, 8, true) => Kernel::ExchangeRegionsFewW8,
                    (false, _, false) => Kernel::ExchangeRegions,
                    (false, _, true) => Kernel::ExchangeRegionsFew,
                }
            }
            Launch::Stencil27(a) if a.components > 1 => Kernel::StencilCells,
            Launch::Stencil27(_) => Kernel::Stencil27,
            Launch::EpochStep(_) => Kernel::EpochStep,
            Launch::StencilMarching(_) => Kernel::StencilMarching,
            Launch::StencilMarch64(_) => Kernel::StencilMarch64,
            Launch::StencilMarch7(_) => Kernel::StencilMarch7,
            Launch::StencilMarch32(_) => Kernel::StencilMarch32,
            Launch::StencilMarch64Shell(_) => Kernel::StencilMarch64Shell,
            Launch::StencilShellReady(_) => Kernel::StencilShellReady,
            Launch::StencilShellFixup(_) => Kernel::StencilShellFixup,
        }
    }

    /// Whether a shell launch's argument names what the kernel reads: control words and a set
    /// (0 or 1), or for the box alone, a step without an exchange (`HP_SHELL_HALOS_IN`).
    fn shell_words_fit(&self, a: &hp_stencil_args) -> bool {
        let set = a.shell != 0 && a.parity <= 1;
        match self {
            Launch::StencilMarch64Shell(_) => set || a.parity == crate::shared::HP_SHELL_HALOS_IN,
            _ => set,
        }
    }
}

/// Device memory of one process in a form another process of the same node can open
/// ([`Backend::export_ipc`], [`Backend::open_ipc`]): it travels between ranks over MPI once,
/// at set-up (SPEC 12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpcHandle {
    /// The backend that made it ("cuda", "hip", "host"); only the same backend opens it.
    pub backend: String,
    /// The vendor's opaque handle (CUDA and HIP: the 64-byte `cu/hipIpcMemHandle_t`; host: the
    /// exporting process's id and the descriptor of its shared mapping).
    pub bytes: Vec<u8>,
    /// Size of the exported allocation in bytes.
    pub len: usize,
}

/// Which physical device a rank works on, as other ranks of its node see it: two ranks with the
/// same identity share one device; [`Backend::can_access_peer`] says whether kernels on one can
/// store into memory of the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceIdentity {
    /// The backend ("cuda", "hip", "host").
    pub backend: String,
    /// A name unique to the physical device on its node: the PCI bus id for GPUs (e.g.
    /// `0000:1B:00.0`); the host backend's one "device" is the node's memory (`host`).
    pub id: String,
}

/// A PCI address: domain, bus, device, function.
pub type PciBusId = (u32, u32, u32, u32);

impl DeviceIdentity {
    /// Parses a PCI bus id, `domain:bus:device.function` in hex (`0000:1B:00.0`), into numbers,
    /// so that ids differing only in case or domain width compare equal; `None` when `id` is
    /// not one.
    pub fn parse_pci_bus_id(id: &str) -> Option<PciBusId> {
        fn hex(s: &str, max_digits: usize) -> Option<u32> {
            let digits =
                (1..=max_digits).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
            digits.then(|| u32::from_str_radix(s, 16).ok()).flatten()
        }
        let (domain, rest) = id.split_once(':')?;
        let (bus, rest) = rest.split_once(':')?;
        let (device, function) = rest.split_once('.')?;
        Some((
            hex(domain, 8)?,
            hex(bus, 2)?,
            hex(device, 2)?,
            hex(function, 1)?,
        ))
    }

    /// This identity's PCI bus id, once it is shown to be a device of `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for another backend's identity or an
    /// id that is no PCI bus id.
    pub fn pci_bus_id_for(&self, backend: &str) -> Result<PciBusId> {
        if self.backend != backend {
            return Err(crate::Error::InvalidInput(format!(
                "{backend}: cannot ask about peer access to a device of the {:?} backend ({})",
                self.backend, self.id
            )));
        }
        Self::parse_pci_bus_id(&self.id).ok_or_else(|| {
            crate::Error::InvalidInput(format!(
                "{backend}: peer device id {:?} is not a PCI bus id (domain:bus:device.function)",
                self.id
            ))
        })
    }
}

impl IpcHandle {
    /// The handle's bytes as the `N`-byte vendor handle (`vendor_type`, e.g. `CUipcMemHandle`)
    /// of `backend`, once it is shown to be one.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the backend that made it, or
    /// its length.
    pub fn vendor_bytes<const N: usize>(
        &self,
        backend: &str,
        vendor_type: &str,
    ) -> Result<[u8; N]> {
        if self.backend != backend {
            return Err(crate::Error::InvalidInput(format!(
                "{backend}: cannot open an IPC handle made by the {:?} backend (only the {backend} backend's)",
                self.backend
            )));
        }
        self.bytes.as_slice().try_into().map_err(|_| {
            crate::Error::InvalidInput(format!(
                "{backend}: an IPC handle ({vendor_type}) has {N} bytes, this one {}",
                self.bytes.len()
            ))
        })
    }
}

/// The IPC handles one process exported, each with the address of the allocation it names,
/// while that allocation lives: CUDA and HIP refuse to open a handle in the process that made
/// it, so backends recognise their own handles here and say so clearly.
pub struct ExportedHandles<const N: usize>(std::sync::Mutex<Vec<(u64, [u8; N])>>);

impl<const N: usize> ExportedHandles<N> {
    /// An empty list (usable in a `static`).
    pub const fn new() -> Self {
        ExportedHandles(std::sync::Mutex::new(Vec::new()))
    }

    /// The list; a panic elsewhere while it was held cannot leave it inconsistent (each change
    /// is one push or retain), so a poisoned lock is used as it is, and `Drop` never panics.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, [u8; N])>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that the allocation at `addr` was exported as `handle`.
    pub fn record(&self, addr: u64, handle: [u8; N]) {
        let mut list = self.lock();
        if !list.contains(&(addr, handle)) {
            list.push((addr, handle));
        }
    }

    /// Forgets the handles of the allocation at `addr` (it is being freed).
    pub fn forget(&self, addr: u64) {
        self.lock().retain(|(a, _)| *a != addr);
    }

    /// True when this process exported `handle` and its allocation still lives.
    pub fn contains(&self, handle: &[u8; N]) -> bool {
        self.lock().iter().any(|(_, h)| h == handle)
    }
}

impl<const N: usize> Default for ExportedHandles<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Device memory: only kernels and copies touch it.
pub trait DeviceMemory: Send {
    /// Size in bytes.
    fn len_bytes(&self) -> usize;
    /// The address kernels dereference.
    fn device_addr(&self) -> u64;
}

/// Pinned (page-locked, device-mapped) host memory, reachable from the CPU and from kernels.
pub trait PinnedMemory: Send + 'static {
    /// Size in bytes.
    fn len_bytes(&self) -> usize;
    /// The address the CPU dereferences. Valid for `len_bytes()` bytes while `self` lives.
    fn host_ptr(&self) -> *mut u8;
    /// The address kernels dereference (Vendor: cuMemHostGetDevicePointer /
    /// hipHostGetDevicePointer; host backend: the host address).
    fn device_addr(&self) -> u64;
    /// The coherence kind that was asked for.
    fn coherence_requested(&self) -> Coherence;
    /// The coherence kind the backend actually allocated.
    fn coherence_served(&self) -> Coherence;
}

/// A device: memory, streams, events, copies and kernel launches.
///
/// Every method that can fail returns a [`Result`] whose error names the vendor
/// call and what haloport was doing.
pub trait Backend: Sized {
    /// An in-order queue of work on the device.
    type Stream: Send;
    /// A marker recorded on a stream; completes when the stream reaches it.
    type Event: Send;
    /// Memory on the device.
    type DeviceMemory: DeviceMemory;
    /// Pinned host memory.
    type PinnedMemory: PinnedMemory;
    /// Another process's device memory, opened from an [`IpcHandle`]: kernels of this process
    /// store into it; dropping it unmaps it (the owner frees the memory).
    type PeerMemory: DeviceMemory;
    /// Captured stream work, instantiated for replay ([`Backend::begin_capture`]).
    type Graph: Send;

    /// Short backend name used in outputs: "host", "cuda", "hip".
    fn name(&self) -> &'static str;

    /// What the device is and offers.
    fn device_info(&self) -> &DeviceInfo;

    /// Allocates `bytes` of device memory, zeroed.
    ///
    /// Vendor: cuMemAlloc / hipMalloc.
    fn alloc_device(&self, bytes: usize) -> Result<Self::DeviceMemory>;

    /// Allocates `bytes` of pinned host memory of the given coherence, zeroed, mapped into the
    /// device, never write-combined (the CPU reads it).
    ///
    /// Vendor: cuMemHostAlloc(PORTABLE | DEVICEMAP) / hipHostMalloc(Mapped | Coherent or NonCoherent).
    fn alloc_pinned(&self, bytes: usize, coherence: Coherence) -> Result<Self::PinnedMemory>;

    /// Creates a stream.
    ///
    /// Vendor: cuStreamCreate / hipStreamCreate.
    fn create_stream(&self) -> Result<Self::Stream>;

    /// Creates a stream of the device's highest priority: its kernels' blocks are dispatched
    /// before those of streams made by [`Self::create_stream`] whenever both wait for room, so
    /// a short urgent launch (a halo exchange, the cells next to the halos) need not wait for
    /// a long one (the interior's update) to drain. A backend without priorities gives a
    /// plain stream.
    ///
    /// Vendor: cuCtxGetStreamPriorityRange + cuStreamCreateWithPriority /
    /// hipDeviceGetStreamPriorityRange + hipStreamCreateWithPriority.
    fn create_urgent_stream(&self) -> Result<Self::Stream> {
        self.create_stream()
    }

    /// True when all work queued on `stream` has completed.
    ///
    /// Vendor: cuStreamQuery / hipStreamQuery.
    fn stream_query(&self, stream: &Self::Stream) -> Result<bool>;

    /// Waits until all work queued on `stream` has completed, or `deadline` passes.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when the deadline passes first.
    ///
    /// Vendor: cuStreamSynchronize / hipStreamSynchronize (polled, so that it can time out).
    fn stream_synchronize(&self, stream: &Self::Stream, deadline: Instant) -> Result<()>;

    /// Creates an event.
    ///
    /// Vendor: cuEventCreate / hipEventCreate.
    fn create_event(&self) -> Result<Self::Event>;

    /// Creates an event that only marks completion (no timestamp, so
    /// [`Backend::event_elapsed_ms`] cannot use it): cheaper to record on every exchange.
    ///
    /// Vendor: cuEventCreate(CU_EVENT_DISABLE_TIMING); elsewhere [`Backend::create_event`].
    fn create_marker(&self) -> Result<Self::Event> {
        self.create_event()
    }

    /// Records `event` on `stream`: it completes when the stream reaches this point.
    ///
    /// Vendor: cuEventRecord / hipEventRecord.
    fn record_event(&self, event: &Self::Event, stream: &Self::Stream) -> Result<()>;

    /// True when the work before the event's last record has completed.
    ///
    /// Vendor: cuEventQuery / hipEventQuery.
    fn event_query(&self, event: &Self::Event) -> Result<bool>;

    /// Waits until `event` completes, or `deadline` passes.
    ///
    /// Vendor: cuEventSynchronize / hipEventSynchronize (polled, so that it can time out).
    fn event_synchronize(&self, event: &Self::Event, deadline: Instant) -> Result<()>;

    /// Makes work queued on `stream` after this call wait until `event` completes (its record
    /// at the time of this call), without blocking the CPU: how work on one stream is ordered
    /// after work on another. An event never recorded imposes no wait.
    ///
    /// Vendor: cuStreamWaitEvent / hipStreamWaitEvent; host: a queued item that waits for the
    /// event's marker.
    fn stream_wait_event(&self, stream: &Self::Stream, event: &Self::Event) -> Result<()>;

    /// Identifies the device stream `stream` queues work on: two handles of one stream (an
    /// application stream adopted twice) have the same id. An id may be reused once its stream
    /// was destroyed, which happens only after its work completed.
    fn stream_id(&self, stream: &Self::Stream) -> u64;

    /// Milliseconds between two completed events.
    ///
    /// Vendor: cuEventElapsedTime / hipEventElapsedTime.
    fn event_elapsed_ms(&self, start: &Self::Event, end: &Self::Event) -> Result<f32>;

    /// Queues a copy of `bytes` from pinned host memory to device memory on `stream`.
    ///
    /// Freeing the source while the copy is queued cannot be written in safe code: the call is
    /// `unsafe`, and its contract forbids it.
    ///
    /// ```compile_fail,E0133
    /// use haloport_core::{Backend, Coherence};
    /// fn queue_then_free<B: Backend>(b: &B, dst: &B::DeviceMemory, s: &B::Stream) {
    ///     let src = b.alloc_pinned(64, Coherence::Coherent).unwrap();
    ///     b.copy_to_device_async(dst, 0, &src, 0, 64, s).unwrap();
    ///     drop(src); // the queued copy would read freed memory
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if a range lies outside its allocation.
    ///
    /// # Safety
    /// 1. `src` and `dst` stay allocated until the copy has completed: until `stream` was
    ///    synchronized, or an event recorded on it after this call completed. Dropping the
    ///    memory earlier lets the queued copy touch freed memory (the host backend's worker
    ///    thread, the GPU's copy engine).
    /// 2. No other work (CPU, kernel, copy) writes the destination range, or writes the source
    ///    range, until the copy has completed.
    ///
    /// Vendor: cuMemcpyHtoDAsync / hipMemcpyHtoDAsync.
    unsafe fn copy_to_device_async(
        &self,
        dst: &Self::DeviceMemory,
        dst_offset: usize,
        src: &Self::PinnedMemory,
        src_offset: usize,
        bytes: usize,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Queues a copy of `bytes` from device memory to pinned host memory on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if a range lies outside its allocation.
    ///
    /// # Safety
    /// 1. `src` and `dst` stay allocated until the copy has completed: until `stream` was
    ///    synchronized, or an event recorded on it after this call completed. Dropping the
    ///    memory earlier lets the queued copy touch freed memory (the host backend's worker
    ///    thread, the GPU's copy engine).
    /// 2. No other work (CPU, kernel, copy) writes the destination range, or writes the source
    ///    range, until the copy has completed.
    ///
    /// Vendor: cuMemcpyDtoHAsync / hipMemcpyDtoHAsync.
    unsafe fn copy_to_host_async(
        &self,
        dst: &Self::PinnedMemory,
        dst_offset: usize,
        src: &Self::DeviceMemory,
        src_offset: usize,
        bytes: usize,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Queues a 3-D strided copy between device addresses on `stream`, by the copy engine: the
    /// copy-engine form of packing or unpacking a region ([`Copy3d::pack_region`]), which
    /// SPEC 13 compares with the pack kernels in the same run. Only the `width` bytes of each
    /// row are touched, not the gaps between rows.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a shape [`Copy3d::check`]
    /// refuses; [`Error::Unsupported`](crate::Error::Unsupported) where the device cannot copy
    /// between unified addresses; the vendor's error otherwise.
    ///
    /// # Safety
    /// 1. `copy.src` and `copy.dst` are device addresses of memory of this backend (device
    ///    memory, the device address of pinned memory, or opened peer memory), valid for the
    ///    rows the copy reads ([`Copy3d::src_span`] bytes from `src`) and writes
    ///    ([`Copy3d::dst_span`] bytes from `dst`), and stay allocated until the copy has
    ///    completed: until `stream` was synchronized, or an event recorded on it after this call
    ///    completed.
    /// 2. No other work (CPU, kernel, copy) writes the rows the copy reads, or touches the rows
    ///    it writes, until the copy has completed; the two sets of rows do not overlap.
    ///
    /// Vendor: cuMemcpy3DAsync (CU_MEMORYTYPE_UNIFIED) / hipMemcpy3DAsync (hipMemcpyDefault).
    unsafe fn copy_3d_async(&self, copy: &Copy3d, stream: &Self::Stream) -> Result<()>;

    /// Queues one of the shared kernels on `stream`.
    ///
    /// # Safety
    /// 1. Every address in the launch's argument (and in the tables it points to) is a device
    ///    address of memory allocated by this backend that stays allocated until the kernel
    ///    completes.
    /// 2. Each such range is as large as the argument and its tables say.
    /// 3. The CPU does not write the memory the kernel writes until the kernel has completed,
    ///    except flags designed for concurrent access, which both sides access atomically.
    ///
    /// Vendor: cuLaunchKernel / hipModuleLaunchKernel.
    unsafe fn launch(
        &self,
        launch: Launch<'_>,
        dims: LaunchDims,
        stream: &Self::Stream,
    ) -> Result<()>;

    /// Starts capturing the work queued on `stream` into a graph, which it then holds instead
    /// of running, until [`Backend::end_capture`] (which must follow, also after an error).
    /// Relaxed: other streams may allocate and synchronize meanwhile.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) on a backend without graphs (host);
    /// the vendor's error, e.g. for a stream already capturing.
    ///
    /// Vendor: cuStreamBeginCapture / hipStreamBeginCapture (relaxed mode).
    fn begin_capture(&self, stream: &Self::Stream) -> Result<()>;

    /// Ends the capture on `stream` and instantiates what it captured.
    ///
    /// # Errors
    /// The vendor's error, e.g. a capture invalidated by a call that cannot be captured.
    ///
    /// Vendor: cuStreamEndCapture + cuGraphInstantiate / hipStreamEndCapture +
    /// hipGraphInstantiate.
    fn end_capture(&self, stream: &Self::Stream) -> Result<Self::Graph>;

    /// Queues one replay of `graph` on `stream`, after the work queued there before.
    ///
    /// # Safety
    /// As [`Backend::launch`], for every kernel the graph holds: the memory its arguments name
    /// stays allocated until the replay completes.
    ///
    /// Vendor: cuGraphLaunch / hipGraphLaunch.
    unsafe fn launch_graph(&self, graph: &Self::Graph, stream: &Self::Stream) -> Result<()>;

    /// How many blocks of `kernel` with `threads` threads each can be resident on the device at
    /// once (occupancy per multiprocessor times multiprocessors). A kernel whose blocks wait for
    /// each other must not be launched with more.
    ///
    /// Vendor: cuOccupancyMaxActiveBlocksPerMultiprocessor / hipOccupancyMaxActiveBlocksPerMultiprocessor.
    fn max_resident_blocks(&self, kernel: Kernel, threads: u32) -> Result<u32>;

    /// Exports device memory this backend allocated, as a whole allocation (SPEC 11: an IPC
    /// handle names a whole allocation), so that other processes of the node can open it.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) where the backend has no IPC; the
    /// vendor's error otherwise.
    ///
    /// Vendor: cuIpcGetMemHandle / hipIpcGetMemHandle; host: a shared mapping other processes
    /// open through `/proc/PID/fd`.
    fn export_ipc(&self, memory: &Self::DeviceMemory) -> Result<IpcHandle>;

    /// Opens memory another process of this node exported. Kernels of this process may then
    /// store into it (over NVLink/xGMI or PCIe between GPUs, or within one GPU), ordered for
    /// the owner by system-scope fences and flags.
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a handle of another backend;
    /// the vendor's error (e.g. a handle of another node) otherwise.
    ///
    /// Vendor: cuIpcOpenMemHandle(LAZY_ENABLE_PEER_ACCESS) / hipIpcOpenMemHandle.
    fn open_ipc(&self, handle: &IpcHandle) -> Result<Self::PeerMemory>;

    /// The physical device this backend works on, as other ranks of the node name it.
    ///
    /// Vendor: cuDeviceGetPCIBusId / hipDeviceGetPCIBusId.
    fn device_identity(&self) -> Result<DeviceIdentity>;

    /// Whether kernels on this device can store into memory on `peer`'s device (the same
    /// device: yes). A device this process cannot see is not reachable.
    ///
    /// Vendor: cuDeviceGetByPCIBusId + cuDeviceCanAccessPeer / the hip equivalents.
    fn can_access_peer(&self, peer: &DeviceIdentity) -> Result<bool>;
}

/// The instant `timeout` from now; a time-out too long to represent (`Duration::MAX`) waits
/// for a century instead of overflowing.
pub fn deadline_in(timeout: std::time::Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(std::time::Duration::from_secs(100 * 365 * 86_400)))
        .unwrap_or(now)
}

/// Polls `done` until it says true or `deadline` passes: how GPU backends wait for streams and
/// events without blocking inside the driver, so that every wait can time out (SPEC 8).
///
/// # Errors
/// `done`'s errors; [`Error::Timeout`](crate::Error::Timeout) naming `what` when the deadline
/// passes first.
pub fn poll_until(
    deadline: Instant,
    what: &str,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let since = Instant::now();
    loop {
        if done()? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(crate::Error::Timeout {
                rank: None,
                what: format!("waiting for {what}"),
                after: since.elapsed(),
            });
        }
        std::hint::spin_loop();
    }
}

/// Copies two tables, `head` then `tail` right after it, into new device memory (kernels read
/// such tables often; device memory keeps them close) and waits for the copy.
///
/// # Errors
/// [`Error::Internal`](crate::Error::Internal) when `tail` would be misaligned after `head`;
/// allocation, copy and time-out errors.
pub fn upload_table<B: Backend, T: Copy, U: Copy>(
    backend: &B,
    head: &[T],
    tail: &[U],
) -> Result<B::DeviceMemory> {
    let head_bytes = std::mem::size_of_val(head);
    if head_bytes % std::mem::align_of::<U>() != 0 {
        return Err(crate::Error::Internal(
            "a table's tail would be misaligned".into(),
        ));
    }
    let bytes = (head_bytes + std::mem::size_of_val(tail)).max(1);
    let staging = backend.alloc_pinned(bytes, Coherence::Coherent)?;
    let table = backend.alloc_device(bytes)?;
    // SAFETY: staging holds `bytes` bytes, page-aligned (so aligned for T), and nothing else
    // uses it yet; head fills its first head_bytes, tail the rest, aligned for U (checked).
    // Copied as T and U, not as bytes: their padding (if any) is never read as data.
    unsafe {
        let at = staging.host_ptr();
        std::ptr::copy_nonoverlapping(head.as_ptr(), at.cast::<T>(), head.len());
        std::ptr::copy_nonoverlapping(tail.as_ptr(), at.add(head_bytes).cast::<U>(), tail.len());
    }
    let stream = backend.create_stream()?;
    // SAFETY: (1) staging and table live until the stream is synchronized below (and the
    // stream, declared after them, is dropped first), or are leaked; (2) nothing else touches
    // them meanwhile.
    unsafe { backend.copy_to_device_async(&table, 0, &staging, 0, bytes, &stream)? };
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    if let Err(e) = backend.stream_synchronize(&stream, deadline) {
        // The copy may still read `staging` and write `table`: leak both (and the stream,
        // whose drop would wait for the copy without a bound) rather than free them under it.
        std::mem::forget((staging, table, stream));
        return Err(e);
    }
    Ok(table)
}

/// Copies `bytes` to the start of `memory` through pinned memory, on `stream`, and waits.
///
/// # Errors
/// [`Error::InvalidInput`](crate::Error::InvalidInput) when `memory` is shorter than `bytes`;
/// allocation, copy and time-out errors.
pub fn upload_bytes<B: Backend>(
    backend: &B,
    memory: &B::DeviceMemory,
    bytes: &[u8],
    stream: &B::Stream,
    deadline: Instant,
) -> Result<()> {
    upload_bytes_at(backend, (memory, 0), bytes, stream, deadline)
}

/// Copies `bytes` into `memory` from `offset` on, as [`upload_bytes`].
///
/// # Errors
/// As [`upload_bytes`], for the range from `offset`.
pub fn upload_bytes_at<B: Backend>(
    backend: &B,
    (memory, offset): (&B::DeviceMemory, usize),
    bytes: &[u8],
    stream: &B::Stream,
    deadline: Instant,
) -> Result<()> {
    let staging = backend.alloc_pinned(bytes.len().max(1), Coherence::NonCoherent)?;
    // SAFETY: staging holds at least bytes.len() bytes and nothing else uses it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), staging.host_ptr(), bytes.len()) };
    // SAFETY: (1) staging lives until the copy is seen complete below, or is leaked; memory
    // is the caller's, alive until its stream drained; (2) nothing else touches them meanwhile.
    unsafe { backend.copy_to_device_async(memory, offset, &staging, 0, bytes.len(), stream)? };
    settle(backend, stream, deadline, staging).map(drop)
}

/// Waits for `stream`, then gives `staging` back; if the wait fails, the copy may still read or
/// write `staging`, so it is leaked rather than freed.
fn settle<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    deadline: Instant,
    staging: B::PinnedMemory,
) -> Result<B::PinnedMemory> {
    match backend.stream_synchronize(stream, deadline) {
        Ok(()) => Ok(staging),
        Err(e) => {
            std::mem::forget(staging);
            Err(e)
        }
    }
}

/// The first `len` bytes of `memory`, copied through pinned memory on `stream` (after the work
/// queued there), waiting for the copy.
///
/// # Errors
/// [`Error::InvalidInput`](crate::Error::InvalidInput) when `memory` is shorter than `len`;
/// allocation, copy and time-out errors.
pub fn download_bytes<B: Backend>(
    backend: &B,
    memory: &B::DeviceMemory,
    len: usize,
    stream: &B::Stream,
    deadline: Instant,
) -> Result<Vec<u8>> {
    download_bytes_at(backend, (memory, 0), len, stream, deadline)
}

/// The `len` bytes of `memory` from `offset` on, as [`download_bytes`].
///
/// # Errors
/// As [`download_bytes`], for the range from `offset`.
pub fn download_bytes_at<B: Backend>(
    backend: &B,
    (memory, offset): (&B::DeviceMemory, usize),
    len: usize,
    stream: &B::Stream,
    deadline: Instant,
) -> Result<Vec<u8>> {
    let staging = backend.alloc_pinned(len.max(1), Coherence::NonCoherent)?;
    // SAFETY: (1) staging lives until the copy is seen complete below, or is leaked; memory
    // is the caller's; (2) nothing writes them meanwhile (work queued before on `stream`
    // completes before the copy starts).
    unsafe { backend.copy_to_host_async(&staging, 0, memory, offset, len, stream)? };
    let staging = settle(backend, stream, deadline, staging)?;
    // SAFETY: the copy completed; staging holds at least `len` bytes nothing else writes.
    Ok(unsafe { std::slice::from_raw_parts(staging.host_ptr(), len) }.to_vec())
}

/// Checks that `[offset, offset + bytes)` lies inside an allocation of `len` bytes, for copies.
///
/// # Errors
/// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the backend, the copy and the range.
pub fn check_range(
    backend: &str,
    what: &str,
    offset: usize,
    bytes: usize,
    len: usize,
) -> Result<()> {
    match offset.checked_add(bytes) {
        Some(end) if end <= len => Ok(()),
        _ => Err(crate::Error::InvalidInput(format!(
            "{backend}: {what}: range {offset}..{} is outside an allocation of {len} bytes",
            offset.saturating_add(bytes)
        ))),
    }
}

/// Checks that `backend` can run GPU blocks of `threads` threads, before anything is allocated.
///
/// # Errors
/// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the backend and its limit.
pub fn check_threads<B: Backend>(backend: &B, threads: u32) -> crate::Result<()> {
    let max = backend.device_info().max_threads_per_block;
    if threads == 0 || threads > max {
        return Err(crate::Error::InvalidInput(format!(
            "{threads} threads per block: the {} backend runs 1 to {max}",
            backend.name()
        )));
    }
    Ok(())
}
