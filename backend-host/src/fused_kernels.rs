//! Fused mode's kernels for host threads: the signal kernel (`hp_fused_signal` in
//! `kernels-cu/hp_regions.cuh`: the same words, orderings and time-out rule,
//! [`hp_signal_args`]) and the fused step's boundary (`hp_stencil_fused` in
//! `kernels-cu/hp_stencil.cuh`).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use haloport_core::halo::fused;
use haloport_core::shared::{haloport_fused, hp_signal_args, hp_stencil_args, hp_word_op};

use crate::kernels::timer_ns;

/// # Safety
/// `addr` is an 8-byte aligned u64 in live memory accessed only atomically while kernels run.
unsafe fn word<'a>(addr: u64) -> &'a AtomicU64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

/// Runs one launch: stores, bounded waits, then the epoch moved on where asked and every wait
/// was met; a wait that times out records `1 + its index` in the status word.
///
/// # Safety
/// `args.ops` holds `stores + waits` entries; every address in them, the epoch and the status
/// word are live and aligned, and touched by others only atomically meanwhile.
pub(crate) unsafe fn run(args: &hp_signal_args) {
    // SAFETY: forwarded from this function's contract.
    let epoch = unsafe { word(args.epoch) };
    let e = epoch.load(Ordering::Acquire) + 1;
    let count = (args.stores + args.waits) as usize;
    // SAFETY: the table holds stores + waits entries (contract).
    let ops = unsafe { std::slice::from_raw_parts(args.ops as *const hp_word_op, count) };
    let (stores, waits) = ops.split_at(args.stores as usize);
    for op in stores {
        // SAFETY: forwarded from this function's contract.
        unsafe { word(op.addr) }.store(e * op.per_epoch, Ordering::Release);
    }
    // SAFETY: forwarded from this function's contract.
    let status = unsafe { AtomicU32::from_ptr(args.status as *mut u32) };
    let since = timer_ns();
    let mut met = true;
    for (i, op) in waits.iter().enumerate() {
        // SAFETY: forwarded from this function's contract.
        let w = unsafe { word(op.addr) };
        while w.load(Ordering::Acquire) < e * op.per_epoch {
            if timer_ns() - since > args.timeout_ticks {
                let _ =
                    status.compare_exchange(0, i as u32 + 1, Ordering::AcqRel, Ordering::Acquire);
                met = false;
                break;
            }
            std::thread::yield_now();
        }
    }
    if args.advance != 0 && met && status.load(Ordering::Acquire) == 0 {
        epoch.store(e, Ordering::Release);
    }
}

/// Runs `hp_stencil_fused`: the stencil over the box (the same bits as its point form), then
/// each updated cell stored wherever the box's messages send it, then the box's cells added to
/// the neighbours' counts (one block: the whole box, in the header's box form).
///
/// # Safety
/// As for [`crate::region_kernels::run_stencil`]; `args.fused` addresses a live descriptor
/// whose targets and counters are live memory of this process that nothing else writes
/// meanwhile, the counters accessed only atomically ([`fused::box_done`]).
pub(crate) unsafe fn run_stencil(args: &hp_stencil_args) {
    // SAFETY: forwarded from this function's contract.
    unsafe { crate::region_kernels::run_stencil(args) };
    // SAFETY: the descriptor is live (contract).
    let d = unsafe { &*(args.fused as *const haloport_fused) };
    let narrow = |v: [u64; 3]| -> Option<[u32; 3]> {
        Some([
            u32::try_from(v[0]).ok()?,
            u32::try_from(v[1]).ok()?,
            u32::try_from(v[2]).ok()?,
        ])
    };
    // The descriptor's boxes are 32-bit (fused mode refuses larger arrays).
    let (Some(lo), Some(hi)) = (narrow(args.begin), narrow(args.end)) else {
        return;
    };
    // As the device skips a quiet tile: nothing to store or report.
    if fused::box_quiet(d, lo, hi) {
        return;
    }
    let [ax, ay, _] = args.alloc;
    let targets = fused::box_targets(d, lo, hi);
    let bytes = args.elem_bytes as usize;
    for z in lo[2]..hi[2] {
        for y in lo[1]..hi[1] {
            for x in lo[0]..hi[0] {
                let at = (u64::from(x) + ax * (u64::from(y) + ay * u64::from(z))) as usize;
                for addr in fused::box_cell_targets(d, &targets, [x, y, z]) {
                    // SAFETY: the cell lies in the field (contract), written by the stencil
                    // above; the target is live memory nothing else writes (contract).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (args.out as *const u8).add(at * bytes),
                            addr as *mut u8,
                            bytes,
                        );
                    }
                }
            }
        }
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { fused::box_done(d, &targets) };
}
