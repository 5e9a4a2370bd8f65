//! The library's kernels of `kernels-cu/hp_regions.cuh` (`hp_pack_regions`,
//! `hp_unpack_regions`, `hp_stencil27`) for host threads, with the same semantics.
//!
//! ## Regions
//! Grid blocks are taken in turn by a few worker threads (as many as the machine has hardware
//! threads, at most one per block): the region kernels' blocks never wait for blocks of their
//! own launch, only for other kernels' flags, so they need not all run at once (as on a GPU,
//! where blocks wait for a free multiprocessor). A grid block finds its region as the kernel
//! does ([`regions::region_of`]) and moves exactly the elements the GPU block's threads move:
//! `e = local_block * threads + t`, then `+ blocks * threads`, ... (units of a pair, interleaving
//! the region's and its partner's elements, by [`regions::paired_unit`]). Words are moved as
//! `u32` or `u64` bits, never as floats. Message signalling is the kernel's step for step: wait (Acquire
//! loads of the flag, the abort flag every 64th poll from the first), the counter through an
//! acquire-release atomic add, then by the block that completes the message a SeqCst fence
//! where the GPU fences at system scope and a Release store of the flag (a message of one
//! block counts nothing: its block fences and stores the flag). With `hp_regions_args.times`, a
//! grid block stamps its start and end on [`timer_ns`] where the kernel's thread 0 does.
//!
//! ## Stencil
//! Points are split into contiguous ranges, one per worker; each point's terms are added in
//! the kernels' order (`hp_stencil_sum`: per row its x terms, per plane its row sums, then the
//! plane sums, each partial sum from its first term and from -1) and the sum multiplied by
//! `1 / count` rounded to the element type: the same IEEE operations in the same order as the
//! GPU, so the same bits (Rust never contracts `a * b + c` into a fused multiply-add, and the
//! kernel has no such pattern either).

use std::ops::{Add, Mul};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::thread;

use haloport_core::regions::{self, elems, field_index};
use haloport_core::shared::{
    self, hp_block_check, hp_block_times, hp_message_signal, hp_region, hp_regions_args,
    hp_stencil_args, HP_REGIONS_FULL, HP_SHELL_COUNT, HP_SHELL_HALOS_IN, HP_SHELL_LIST,
    HP_SHELL_READY,
};
use haloport_core::verify::{check_block, note_check, packed_value, Verify};
use haloport_core::{Kernel, LaunchDims};

use crate::kernels::timer_ns;

/// Worker threads for a launch of `blocks` independent pieces of work.
fn workers(blocks: u64) -> usize {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    usize::try_from(blocks).map_or(cores, |b| b.clamp(1, cores))
}

/// # Safety
/// `addr` is a 4-byte aligned u32 in live memory accessed only atomically while kernels run.
unsafe fn flag<'a>(addr: u64) -> &'a AtomicU32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { AtomicU32::from_ptr(addr as *mut u32) }
}

/// # Safety
/// `addr` is an 8-byte aligned u64 in live memory accessed only atomically while kernels run.
unsafe fn flag64<'a>(addr: u64) -> &'a AtomicU64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

/// Runs [`Kernel::PackRegions`] or [`Kernel::UnpackRegions`] (or their plain forms) over
/// `dims.blocks` grid blocks.
///
/// # Safety
/// The addresses in `args` (and in its region and message tables) satisfy `Backend::launch`'s
/// contract; the regions of one unpack do not overlap in their fields.
pub(crate) unsafe fn run_regions(
    kernel: Kernel,
    args: &hp_regions_args,
    dims: LaunchDims,
) -> Result<(), String> {
    if kernel.is_one_launch() {
        // `hp_exchange_regions`: on a GPU each block packs, then unpacks. Here blocks share a
        // few workers, so a block waiting for an arrival could hold a worker that the pack it
        // waits for needs: every pack block first, then every unpack block, the same result.
        let (pack, unpack) = fused_sides(args);
        // Only `hp_exchange_regions_copies` packs a copy into its halo; the others would store
        // it at the buffer's first elements.
        // SAFETY: forwarded from this function's contract.
        let copies = unsafe { table_of(&pack) }
            .iter()
            .any(|r| r.payload == shared::HP_PAYLOAD_COPY);
        if copies && kernel != Kernel::ExchangeRegionsCopies {
            return Err(format!(
                "{kernel:?} over a table that copies regions into halos (form HP_REGIONS_FUSED_COPIES runs those)"
            ));
        }
        // SAFETY: forwarded from this function's contract: each view is one side's table.
        unsafe {
            run_regions(Kernel::PackRegions, &pack, dims)?;
            run_regions(Kernel::UnpackRegions, &unpack, dims)?;
        }
        // SAFETY: forwarded from this function's contract (`done` and its counter are live,
        // aligned u64s accessed atomically).
        unsafe { launch_done(args, dims.blocks) };
        return Ok(());
    }
    // SAFETY: forwarded from this function's contract.
    let table = unsafe { table_of(args) };
    // Memory the program freed while this launch was queued: refuse it, rather than touch
    // it, so that a use after free shows as the stream's error (see `memory`'s docs).
    for region in table {
        for (what, addr) in [("field", region.field), ("buffer", region.buffer)] {
            if crate::memory::freed_at(addr) {
                return Err(format!(
                    "a region kernel's {what} at {addr:#x} lies in device memory that was freed while the kernel was queued (use after free); nothing was touched"
                ));
            }
        }
    }
    // `hp_epoch`: the launch's epoch moved on by its graph's replays (read once here).
    let moved;
    let args = if args.epoch_base == 0 {
        args
    } else {
        // SAFETY: epoch_base is a live, aligned u64 of device memory (contract); only
        // stream-ordered launches write it.
        let base = unsafe { *(args.epoch_base as *const u64) };
        moved = hp_regions_args {
            epoch: args.epoch + base,
            epoch_base: 0,
            ..*args
        };
        &moved
    };
    // The plain forms (`HP_REGIONS_PLAIN`) move the same elements: one twin serves all.
    let pack = matches!(
        kernel,
        Kernel::PackRegions | Kernel::PackRegionsW4 | Kernel::PackRegionsW8
    );
    let next = AtomicU32::new(0);
    // On a GPU every waiting block waits at once; here a few workers run the blocks in turn,
    // so every wait counts from the launch's start (else blocks would add up their time-outs).
    let launch_start = timer_ns();
    thread::scope(|scope| {
        for _ in 0..workers(u64::from(dims.blocks)) {
            scope.spawn(|| loop {
                let g = next.fetch_add(1, Ordering::Relaxed);
                if g >= dims.blocks {
                    break;
                }
                // SAFETY: forwarded from this function's contract; each grid block moves its
                // own elements and touches shared flags and counters only atomically.
                unsafe { region_block(args, table, g, dims.threads, pack, launch_start) };
            });
        }
    });
    Ok(())
}

/// `hp_launch_done` for a launch of `blocks` grid blocks, every one of which is done: each
/// raises its done word (`done[block]`) to the epoch.
///
/// # Safety
/// With `args.done` set, it holds `blocks` live, aligned u64s accessed only atomically.
unsafe fn launch_done(args: &hp_regions_args, blocks: u32) {
    if args.done == 0 {
        return;
    }
    for block in 0..u64::from(blocks) {
        // SAFETY: forwarded from this function's contract; the release orders the blocks'
        // stores (every worker joined) before the word.
        unsafe { flag64(args.done + 8 * block) }.store(args.epoch, Ordering::Release);
    }
}

/// The pack and the unpack launch a one-launch exchange (`HP_REGIONS_FUSED`) stands for:
/// each side's part of its table, in the full form.
fn fused_sides(args: &hp_regions_args) -> (hp_regions_args, hp_regions_args) {
    let (np, nu) = (args.num_regions as usize, args.num_unpack_regions as usize);
    let pack = hp_regions_args {
        form: HP_REGIONS_FULL,
        num_unpack_regions: 0,
        ..*args
    };
    let mut unpack = hp_regions_args {
        form: HP_REGIONS_FULL,
        num_regions: args.num_unpack_regions,
        num_unpack_regions: 0,
        ..*args
    };
    if args.table_inline != 0 {
        // Within HP_INLINE_REGIONS together (Launch::check).
        unpack.inline_regions.copy_within(np..np + nu, 0);
    } else if args.regions != 0 {
        unpack.regions = args.regions + (np * size_of::<hp_region>()) as u64;
    }
    (pack, unpack)
}

/// The launch's region table: in its parameters, or in device memory.
///
/// # Safety
/// As for [`run_regions`].
unsafe fn table_of(args: &hp_regions_args) -> &[hp_region] {
    if args.table_inline != 0 {
        // The kernels' choice: the copy in the launch's parameters (at most HP_INLINE_REGIONS,
        // checked by Launch::check).
        &args.inline_regions[..args.num_regions as usize]
    } else if args.num_regions == 0 || args.regions == 0 {
        &[]
    } else {
        // SAFETY: the table holds num_regions entries (launch contract) that nothing writes
        // while the kernel runs.
        unsafe {
            std::slice::from_raw_parts(args.regions as *const hp_region, args.num_regions as usize)
        }
    }
}

/// One grid block of `hp_regions_block`.
///
/// # Safety
/// As for [`run_regions`].
unsafe fn region_block(
    args: &hp_regions_args,
    table: &[hp_region],
    g: u32,
    threads: u32,
    pack: bool,
    launch_start: u64,
) {
    let Some(r) = regions::region_of(table, g) else {
        return;
    };
    let region = &table[r];
    let partner = (region.partner as usize)
        .checked_sub(1)
        .and_then(|p| table.get(p));
    let local_block = g - region.first_block;
    // What the kernel's hp_region_payload does for this block.
    let payload = || {
        if region.payload == shared::HP_PAYLOAD_SYNTHETIC {
            // SAFETY: forwarded from this function's contract.
            unsafe { synthetic_block(args, region, g, local_block, threads, pack) };
        } else {
            // SAFETY: forwarded from this function's contract.
            unsafe { move_block(args.elem_bytes, region, partner, local_block, threads, pack) };
        }
    };
    let stamp_now = |end: bool| {
        // SAFETY: the timestamps, when given, hold a record per grid block (contract); only
        // block g writes its own record's fields of this launch's side.
        unsafe { stamp(args, g, pack, end) }
    };
    if region.message == shared::HP_NO_MESSAGE || args.messages == 0 {
        stamp_now(false);
        payload();
        stamp_now(true);
        return;
    }
    // SAFETY: the message table holds an entry for every message a region names (contract).
    let m = unsafe { *(args.messages as *const hp_message_signal).add(region.message as usize) };
    // Pack's start includes its wait for the slot; unpack's starts when its data came.
    if pack {
        stamp_now(false);
    }
    // SAFETY: the wait and abort flags are live, aligned u64s accessed atomically (contract).
    let outcome = unsafe { wait(args, &m, launch_start) };
    if outcome == shared::HP_MESSAGE_OK && !pack {
        stamp_now(false);
    }
    if outcome != shared::HP_MESSAGE_OK {
        if args.status != 0 {
            // SAFETY: the status table holds a u32 per message (contract).
            unsafe { flag(args.status + 4 * u64::from(region.message)) }
                .store(outcome, Ordering::Release);
        }
        return;
    }
    payload();
    // A message of one block counts nothing; others count their blocks, acquire-release (a
    // u32 count compared modulo 2^32: it gains exactly m.blocks per epoch): each count releases
    // its block's stores to the block that counts last, which acquires them all.
    // SAFETY: the counter is a live, aligned u32 in this process's device memory (contract).
    let last = m.blocks == 1
        || unsafe { flag(m.counter) }
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1)
            == args.epoch.wrapping_mul(u64::from(m.blocks)) as u32;
    if last && m.flag != 0 {
        // As the kernel's one fence at system scope before the flag: every block's stores,
        // this one's and those acquired above, are ordered before it.
        fence(Ordering::SeqCst);
        // SAFETY: the flag is a live, aligned u64 (own or a peer's memory), accessed atomically.
        unsafe { flag64(m.flag) }.store(args.epoch, Ordering::Release);
    }
    stamp_now(true);
}

/// `hp_regions_stamp`: grid block `g` stamps the start (or the `end`) of this launch's side,
/// `pack_*` or `unpack_*`, when the launch records timestamps (`args.times`).
///
/// # Safety
/// `args.times`, when not 0, holds an `hp_block_times` per grid block of the launch, which
/// nothing else touches while the launch runs but grid block `g` its own (a launch of the
/// other side may share the records: it writes the other fields).
unsafe fn stamp(args: &hp_regions_args, g: u32, pack: bool, end: bool) {
    if args.times == 0 {
        return;
    }
    let record = (args.times as *mut hp_block_times).wrapping_add(g as usize);
    // SAFETY: the record lies in the allocation (contract); only its own field is written,
    // through a raw pointer, so no reference covers the other side's fields.
    unsafe {
        let field = match (pack, end) {
            (true, false) => std::ptr::addr_of_mut!((*record).pack_start),
            (true, true) => std::ptr::addr_of_mut!((*record).pack_end),
            (false, false) => std::ptr::addr_of_mut!((*record).unpack_start),
            (false, true) => std::ptr::addr_of_mut!((*record).unpack_end),
        };
        field.write(timer_ns());
    }
}

/// `hp_message_wait`: waits until `*m.wait + m.wait_lag >= epoch`, giving up `timeout_ticks`
/// after `since`; the outcome (`HP_MESSAGE_*`).
///
/// # Safety
/// `m.wait` (when not 0) and `args.abort_flag` (when not 0) are live, aligned u64s accessed
/// only atomically.
unsafe fn wait(args: &hp_regions_args, m: &hp_message_signal, since: u64) -> u32 {
    let lag = u64::from(m.wait_lag);
    if m.wait == 0 || lag >= args.epoch {
        return shared::HP_MESSAGE_OK;
    }
    let wait_min = args.epoch - lag;
    // SAFETY: forwarded from this function's contract.
    let (awaited, abort) = unsafe {
        (
            flag64(m.wait),
            (args.abort_flag != 0).then(|| flag64(args.abort_flag)),
        )
    };
    let mut spins: u32 = 0;
    loop {
        if awaited.load(Ordering::Acquire) >= wait_min {
            return shared::HP_MESSAGE_OK;
        }
        if spins % 64 == 0 {
            if abort.is_some_and(|a| a.load(Ordering::Acquire) >= args.epoch) {
                return shared::HP_MESSAGE_ABORTED;
            }
            if timer_ns().saturating_sub(since) > args.timeout_ticks {
                return shared::HP_MESSAGE_TIMED_OUT;
            }
        }
        spins = spins.wrapping_add(1);
        // The peer (another process or stream) may share this core: let it run.
        thread::yield_now();
    }
}

/// `hp_synthetic_region`: the elements grid block `g` (the `local_block`th of `region`) serves
/// of a synthetic block, its run ([`regions::synthetic_run`]): pack stores the thesis's values; unpack checks each (or, sampling, the first grid block checks the thesis's
/// sample of the whole block) and writes the block's record at `checks + g`.
///
/// # Safety
/// As for [`run_regions`]; the region's buffer holds its f64 elements, and `args.checks`
/// (when not 0) a record per grid block of the launch.
unsafe fn synthetic_block(
    args: &hp_regions_args,
    region: &hp_region,
    g: u32,
    local_block: u32,
    threads: u32,
    pack: bool,
) {
    if args.elem_bytes != 8 {
        return;
    }
    let n = elems(region);
    let rank = (region.offset >> 32) as u32 as i32;
    let block = region.offset as u32;
    let buffer = region.buffer as *mut f64;
    let value = |e: u64| packed_value(args.iteration, rank, block, e);
    if pack {
        for e in regions::synthetic_run(n, region.blocks, local_block) {
            // SAFETY: element e lies in the region's buffer (contract); only this grid block
            // touches it.
            unsafe { buffer.wrapping_add(e as usize).write_unaligned(value(e)) };
        }
        return;
    }
    let record = if args.verify != shared::HP_VERIFY_FULL {
        // The thesis's sample of the whole block, by the first grid block; none by the rest.
        if local_block == 0 {
            // SAFETY: the buffer holds the region's n elements, which nothing writes meanwhile.
            let recv = unsafe { std::slice::from_raw_parts(buffer.cast_const(), n as usize) };
            check_block(recv, Verify::Sample, threads, value)
        } else {
            hp_block_check::default()
        }
    } else {
        let mut record = hp_block_check::default();
        for e in regions::synthetic_run(n, region.blocks, local_block) {
            // SAFETY: element e lies in the region's buffer (contract); nothing writes it
            // meanwhile.
            let found = unsafe { buffer.wrapping_add(e as usize).read_unaligned() };
            note_check(&mut record, e, value(e), found);
        }
        record
    };
    if args.checks != 0 {
        // SAFETY: the records hold one per grid block (contract); only block g writes its own.
        unsafe {
            (args.checks as *mut hp_block_check)
                .add(g as usize)
                .write(record)
        };
    }
}

/// The units (elements, or a pair's interleaved elements) grid block `local_block` of a region
/// of `units` units and `blocks` grid blocks serves, in the GPU block's threads' order:
/// `local_block * threads + t`, then `+ blocks * threads`, ...
fn block_units(
    units: u64,
    blocks: u32,
    local_block: u32,
    threads: u32,
) -> impl Iterator<Item = u64> {
    let t = u64::from(threads);
    let step = u64::from(blocks).saturating_mul(t).max(1);
    (u64::from(local_block) * t..units)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .flat_map(move |base| base..(base + t).min(units))
}

/// Moves the elements grid block `local_block` of `region` (and of its partner) serves, as
/// words of `elem_bytes`.
///
/// # Safety
/// As for [`run_regions`]; `elem_bytes` is 1, 2, 4 or 8 (others move nothing, as on the GPU).
unsafe fn move_block(
    elem_bytes: u32,
    region: &hp_region,
    partner: Option<&hp_region>,
    local_block: u32,
    threads: u32,
    pack: bool,
) {
    match elem_bytes {
        // SAFETY: forwarded from this function's contract.
        8 => unsafe { move_words::<u64>(region, partner, local_block, threads, pack) },
        // SAFETY: forwarded from this function's contract.
        4 => unsafe { move_words::<u32>(region, partner, local_block, threads, pack) },
        // SAFETY: forwarded from this function's contract.
        2 => unsafe { move_words::<u16>(region, partner, local_block, threads, pack) },
        // SAFETY: forwarded from this function's contract.
        1 => unsafe { move_words::<u8>(region, partner, local_block, threads, pack) },
        _ => {}
    }
}

/// # Safety
/// As for [`run_regions`]; `W` is the element's word type.
unsafe fn move_words<W: Copy>(
    region: &hp_region,
    partner: Option<&hp_region>,
    local_block: u32,
    threads: u32,
    pack: bool,
) {
    let n = elems(region);
    let units = if partner.is_some() { 2 * n } else { n };
    let size = std::mem::size_of::<W>() as u64;
    for u in block_units(units, region.blocks, local_block, threads) {
        let (of, e) = match partner {
            Some(p) => match regions::paired_unit(u, n) {
                (false, e) => (region, e),
                (true, e) => (p, e),
            },
            None => (region, u),
        };
        let index = field_index(of, e);
        let f = of.field.wrapping_add(index.wrapping_mul(size)) as *mut W;
        // A copy's element lies in its destination as in its source, from the region's start.
        let at = if pack && of.payload == shared::HP_PAYLOAD_COPY {
            index.wrapping_sub(of.offset)
        } else {
            e
        };
        let b = of.buffer.wrapping_add(at.wrapping_mul(size)) as *mut W;
        // SAFETY: element e lies in its region's buffer (a copy's at `at`) and its field index
        // in the field (launch contract); only this grid block moves element e. Unaligned
        // accesses keep a misaligned address (a fault on a GPU) from being undefined behaviour
        // here.
        unsafe {
            if pack {
                b.write_unaligned(f.read_unaligned());
            } else {
                f.write_unaligned(b.read_unaligned());
            }
        }
    }
}

/// The element types of the stencil, with `1 / 27` rounded to each.
trait Element: Copy + Add<Output = Self> + Mul<Output = Self> + Send + Sync {
    const ZERO: Self;
    /// `T(1) / T(count)`, the kernel's scale for a stencil reading `count` points.
    fn reciprocal(count: u32) -> Self;
}

impl Element for f32 {
    const ZERO: f32 = 0.0;
    fn reciprocal(count: u32) -> f32 {
        1.0 / count as f32
    }
}

impl Element for f64 {
    const ZERO: f64 = 0.0;
    fn reciprocal(count: u32) -> f64 {
        1.0 / f64::from(count)
    }
}

/// Runs [`Kernel::Stencil27`].
///
/// # Safety
/// The addresses in `args` satisfy `Backend::launch`'s contract: `in` and `out` hold the
/// allocation's elements, every point of the box has its neighbours inside it, `out` does not
/// overlap `in`.
pub(crate) unsafe fn run_stencil(args: &hp_stencil_args) {
    match args.elem_bytes {
        // SAFETY: forwarded from this function's contract.
        8 => unsafe { stencil::<f64>(args) },
        // SAFETY: forwarded from this function's contract.
        4 => unsafe { stencil::<f32>(args) },
        _ => {}
    }
}

/// # Safety
/// As for [`run_stencil`]; `T` is the element type.
unsafe fn stencil<T: Element>(args: &hp_stencil_args) {
    let n = regions::stencil_points(args);
    if n == 0 {
        return;
    }
    let parts = workers(n) as u64;
    let per = n.div_ceil(parts);
    thread::scope(|scope| {
        for part in 0..parts {
            let (lo, hi) = (part * per, ((part + 1) * per).min(n));
            // SAFETY: forwarded from this function's contract; the parts write disjoint points.
            scope.spawn(move || unsafe { stencil_range::<T>(args, lo, hi) });
        }
    });
}

/// The control words of a shell launch (`HP_SHELL_*`): ready and list length per set, then
/// each set's list.
///
/// # Safety
/// `args.shell` addresses `4 + 2 * shell_capacity` live, aligned u32 accessed only atomically
/// while kernels run.
unsafe fn shell_words<'a>(args: &hp_stencil_args) -> &'a [AtomicU32] {
    let len = HP_SHELL_LIST as usize + 2 * args.shell_capacity as usize;
    // SAFETY: forwarded from this function's contract.
    unsafe { std::slice::from_raw_parts(args.shell as *const AtomicU32, len) }
}

/// Tile `t`'s slab points (the point form), with the halo copy beside each x slab's point, as
/// the kernel's slab lanes make them.
///
/// # Safety
/// As for [`run_stencil`], for 8-byte elements; the tiling came from `args`.
unsafe fn shell_tile(args: &hp_stencil_args, tiles: &regions::ShellTiles, t: u64) {
    let (input, out) = (args.in_ as *const u64, args.out as *mut u64);
    for (cells, halo) in tiles.slab_boxes(t) {
        let slab = hp_stencil_args {
            begin: cells.map(|[b, _]| b),
            end: cells.map(|[_, e]| e),
            ..*args
        };
        let points = regions::stencil_points(&slab);
        // SAFETY: forwarded from this function's contract; the slab lies in the allocation.
        unsafe { stencil_range::<f64>(&slab, 0, points) };
        let Some(x) = halo else { continue };
        for z in cells[2][0]..cells[2][1] {
            for y in cells[1][0]..cells[1][1] {
                let at = (x + args.alloc[0] * (y + args.alloc[1] * z)) as usize;
                // SAFETY: the halo column lies in the allocation (ShellTiles::of checked two
                // columns beside the box); only this launch writes it in `out`.
                unsafe { out.add(at).write(input.add(at).read()) };
            }
        }
    }
}

/// Runs [`Kernel::StencilMarch64Shell`]: the box, and then the slab points of every tile if
/// the step's ready word was raised when the launch began or the step has no exchange
/// (`HP_SHELL_HALOS_IN`), else the list of those tiles.
///
/// # Safety
/// As for [`run_stencil`], and for [`shell_words`] unless the parity is `HP_SHELL_HALOS_IN`.
pub(crate) unsafe fn run_shell_box(args: &hp_stencil_args, threads: u32) {
    let Some(tiles) = regions::ShellTiles::of(args, threads) else {
        return;
    };
    let halos_in = args.parity == HP_SHELL_HALOS_IN;
    let words = if halos_in {
        &[]
    } else {
        // SAFETY: forwarded from this function's contract (a step with a set has words).
        unsafe { shell_words(args) }
    };
    let set = args.parity as usize;
    let ready = halos_in || words[HP_SHELL_READY as usize + set].load(Ordering::Acquire) != 0;
    // SAFETY: forwarded from this function's contract.
    unsafe { run_stencil(args) };
    let capacity = args.shell_capacity as usize;
    for t in (0..tiles.tiles()).filter(|&t| tiles.holds_slab(t)) {
        if ready {
            // SAFETY: forwarded from this function's contract.
            unsafe { shell_tile(args, &tiles, t) };
        } else {
            let k = words[HP_SHELL_COUNT as usize + set].fetch_add(1, Ordering::Relaxed) as usize;
            if k < capacity {
                words[HP_SHELL_LIST as usize + set * capacity + k]
                    .store(t as u32, Ordering::Relaxed);
            }
        }
    }
}

/// Runs [`Kernel::StencilShellReady`].
///
/// # Safety
/// As for [`shell_words`].
pub(crate) unsafe fn run_shell_ready(args: &hp_stencil_args) {
    // SAFETY: forwarded from this function's contract.
    let words = unsafe { shell_words(args) };
    words[HP_SHELL_READY as usize + args.parity as usize].store(1, Ordering::Release);
}

/// Runs [`Kernel::StencilShellFixup`]: the listed tiles' slab points, then the other set
/// cleared.
///
/// # Safety
/// As for [`run_shell_box`].
pub(crate) unsafe fn run_shell_fixup(args: &hp_stencil_args, threads: u32) {
    let Some(tiles) = regions::ShellTiles::of(args, threads) else {
        return;
    };
    // SAFETY: forwarded from this function's contract.
    let words = unsafe { shell_words(args) };
    let (set, other) = (args.parity as usize, (args.parity ^ 1) as usize);
    words[HP_SHELL_READY as usize + other].store(0, Ordering::Relaxed);
    words[HP_SHELL_COUNT as usize + other].store(0, Ordering::Relaxed);
    let capacity = args.shell_capacity as usize;
    let listed =
        (words[HP_SHELL_COUNT as usize + set].load(Ordering::Relaxed) as usize).min(capacity);
    for k in 0..listed {
        let t = words[HP_SHELL_LIST as usize + set * capacity + k].load(Ordering::Relaxed);
        // SAFETY: forwarded from this function's contract.
        unsafe { shell_tile(args, &tiles, u64::from(t)) };
    }
}

/// A partial sum of the stencil's order: its terms left to right from the first (0 when there
/// is none), as the kernels' `hp_sum_in` adds them.
fn sum_from_first<T: Element>(terms: impl Iterator<Item = T>) -> T {
    terms.reduce(|s, v| s + v).unwrap_or(T::ZERO)
}

/// Points `[lo, hi)` of the box, numbered x fastest as the kernel numbers them.
///
/// # Safety
/// As for [`run_stencil`].
unsafe fn stencil_range<T: Element>(a: &hp_stencil_args, lo: u64, hi: u64) {
    let input = a.in_ as *const T;
    let out = a.out as *mut T;
    let (ax, ay) = (a.alloc[0], a.alloc[1]);
    let bx = a.end[0] - a.begin[0];
    let by = a.end[1] - a.begin[1];
    let scale = T::reciprocal(regions::stencil_count(a.shape));
    // The offsets the shape reads, grouped as the kernels add them (`hp_stencil_sum`): planes
    // dz, in each its rows dy, in each its points dx, every level from -1; a row or plane
    // without a point read is left out.
    let planes: Vec<Vec<Vec<[i64; 3]>>> = (-1_i64..=1)
        .map(|dz| {
            (-1_i64..=1)
                .map(|dy| {
                    (-1_i64..=1)
                        .map(|dx| [dx, dy, dz])
                        .filter(|&d| regions::stencil_reads_point(a.shape, d))
                        .collect::<Vec<_>>()
                })
                .filter(|row| !row.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|plane| !plane.is_empty())
        .collect();
    // Component c of cell i is element i * comps + c; neighbours are whole cells away.
    let comps = u64::from(regions::stencil_components(a));
    for p in lo..hi {
        let (cell, comp) = (p / comps, p % comps);
        let x = a.begin[0] + cell % bx;
        let y = a.begin[1] + (cell / bx) % by;
        let z = a.begin[2] + cell / (bx * by);
        let centre = (x + ax * (y + ay * z)) * comps + comp;
        let point = |[dx, dy, dz]: [i64; 3]| {
            let cells = dx + ax as i64 * (dy + ay as i64 * dz);
            let at = centre.wrapping_add((cells * comps as i64) as u64);
            // SAFETY: the neighbour lies inside the allocation (contract); nothing writes
            // `in` while the kernel runs.
            unsafe { input.add(at as usize).read() }
        };
        let sum = sum_from_first(planes.iter().map(|rows| {
            sum_from_first(
                rows.iter()
                    .map(|row| sum_from_first(row.iter().map(|&d| point(d)))),
            )
        }));
        // SAFETY: the point lies inside the allocation; only this part writes it.
        unsafe { out.add(centre as usize).write(sum * scale) };
    }
}
