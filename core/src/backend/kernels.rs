//! The kernel catalogue: every entry point of the shared kernels ([`Kernel`]), a launch's
//! arguments in the form each kernel takes ([`Launch`]) and its grid ([`LaunchDims`]). The
//! GPU backends look the entry points up by these names; the host backend runs their twins.

use crate::error::Result;
use crate::shared::{
    hp_epoch_args, hp_exchange_args, hp_ipc_args, hp_pingpong_args, hp_regions_args,
    hp_signal_args, hp_stencil_args, hp_taskqueue_args, HP_INLINE_REGIONS, HP_INLINE_REGIONS_FEW,
    HP_NO_MESSAGE, HP_PAYLOAD_COPY, HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FULL, HP_REGIONS_FUSED,
    HP_REGIONS_FUSED_COPIES, HP_REGIONS_FUSED_SYNTHETIC, HP_REGIONS_PLAIN,
};

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
    /// Fused mode's credits and arrivals ([`hp_signal_args`]): stores words, then waits for
    /// words, bounded; one block.
    FusedSignal,
    /// The fused step's boundary: the stencil's point form over a box, each updated cell also
    /// stored into the neighbours' halos through the out field's descriptor
    /// (`hp_stencil_args::fused`), counted per message and block.
    StencilFused,
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
            Kernel::FusedSignal => "hp_fused_signal",
            Kernel::StencilFused => "hp_stencil_fused",
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

    /// The compilation unit (and so the image) the kernel's entry point is built in.
    pub fn unit(self) -> KernelUnit {
        match self {
            Kernel::Stencil27
            | Kernel::StencilCells
            | Kernel::StencilMarching
            | Kernel::StencilMarch64
            | Kernel::StencilMarch32
            | Kernel::StencilMarch64Shell
            | Kernel::StencilShellReady
            | Kernel::StencilShellFixup
            | Kernel::StencilMarch7
            | Kernel::StencilFused => KernelUnit::Stencil,
            _ => KernelUnit::Exchange,
        }
    }

    /// Every kernel, for loading modules and checking they are all present.
    pub const ALL: [Kernel; 34] = [
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
        Kernel::FusedSignal,
        Kernel::StencilFused,
    ];
}

/// The compilation units of the shared kernels, each compiled (side by side) into an image of its
/// own that a GPU backend embeds and loads as a module: the exchange's kernels (the thesis's
/// and the library's, `kernels-cu/haloport.cu`) and the stencil application's
/// (`kernels-cu/haloport_stencil.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelUnit {
    /// `haloport.cu` / `haloport.hip`: hp_kernels.cuh and hp_regions.cuh.
    Exchange,
    /// `haloport_stencil.cu` / `haloport_stencil.hip`: hp_stencil.cuh.
    Stencil,
}

impl KernelUnit {
    /// Every unit, in the order images are listed.
    pub const ALL: [KernelUnit; 2] = [KernelUnit::Exchange, KernelUnit::Stencil];

    /// The entry file's name without its extension (`.cu` or `.hip`), which names the image too.
    pub fn entry(self) -> &'static str {
        match self {
            KernelUnit::Exchange => "haloport",
            KernelUnit::Stencil => "haloport_stencil",
        }
    }

    /// The unit's place in [`Self::ALL`].
    pub fn index(self) -> usize {
        match self {
            KernelUnit::Exchange => 0,
            KernelUnit::Stencil => 1,
        }
    }
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
    /// [`Kernel::FusedSignal`]: one block. Its waits depend on other processes' launches.
    FusedSignal(&'a hp_signal_args),
    /// [`Kernel::StencilFused`]: one component per cell, a descriptor in `fused`; any grid
    /// covers the box. Its stores reach other processes' memory.
    StencilFused(&'a hp_stencil_args),
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
            | Launch::StencilShellFixup(a)
            | Launch::StencilFused(a) => std::ptr::from_ref(*a).cast(),
            Launch::EpochStep(a) => std::ptr::from_ref(*a).cast(),
            Launch::FusedSignal(a) => std::ptr::from_ref(*a).cast(),
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
            Launch::StencilFused(a) if a.fused == 0 || a.components > 1 => invalid(format!(
                "the fused stencil needs a descriptor and one component per cell (descriptor {:#x}, {} components)",
                a.fused, a.components
            )),
            Launch::Stencil27(a)
            | Launch::StencilMarching(a)
            | Launch::StencilMarch64(a)
            | Launch::StencilMarch7(a)
            | Launch::StencilMarch32(a)
            | Launch::StencilMarch64Shell(a)
            | Launch::StencilShellFixup(a)
            | Launch::StencilFused(a) => {
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
            Launch::FusedSignal(_) => Kernel::FusedSignal,
            Launch::StencilFused(_) => Kernel::StencilFused,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU backends' build scripts compile the units by these names (the toolchain's list)
    /// and the backends load them in this order.
    #[test]
    fn the_units_are_the_ones_the_build_scripts_compile() {
        assert_eq!(
            KernelUnit::ALL.map(KernelUnit::entry),
            haloport_toolchain::KERNEL_UNITS
        );
        for (i, unit) in KernelUnit::ALL.into_iter().enumerate() {
            assert_eq!(unit.index(), i);
        }
        assert_eq!(Kernel::Stencil27.unit(), KernelUnit::Stencil);
        assert_eq!(Kernel::ExchangeRegions.unit(), KernelUnit::Exchange);
    }
}
