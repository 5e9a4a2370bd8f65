//! Fused mode's signal kernel (`hp_fused_signal` in `kernels-cu/hp_regions.cuh`) for host
//! threads: the same words, orderings and time-out rule ([`hp_signal_args`]).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use haloport_core::shared::{hp_signal_args, hp_word_op};

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
