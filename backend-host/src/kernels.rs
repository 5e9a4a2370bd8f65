//! The shared kernels of `kernels-cu/`, written again for host threads with the same semantics.
//!
//! A launch runs its grid blocks concurrently, one OS thread per block; inside a block, the
//! `threads` logical threads are the iterations of a loop (pack fills the block's buffer, unpack
//! makes one check per logical thread at the index `checked_index` gives). Timestamps come from
//! [`timer_ns`], this backend's device timer.

use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

use haloport_core::shared::{hp_block, hp_block_check, hp_block_times, hp_exchange_args};
use haloport_core::workload::{checked_index, packed_value};
use haloport_core::{Kernel, LaunchDims};

/// Nanoseconds on a monotonic clock since this process first asked: the host backend's
/// device timer (1 GHz).
pub fn timer_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Runs `kernel` over the grid, blocks on concurrent threads, and returns when all finished.
///
/// # Safety
/// The addresses in `args` and the block table satisfy `Backend::launch`'s contract.
pub(crate) unsafe fn run(kernel: Kernel, dims: LaunchDims, args: hp_exchange_args) {
    let blocks = dims.blocks.min(args.num_blocks);
    thread::scope(|scope| {
        for block in 0..blocks {
            scope.spawn(move || {
                // SAFETY: forwarded from this function's contract; each grid block touches only
                // its own table entry, buffers, check record and timestamps.
                unsafe { run_block(kernel, dims.threads, &args, block) }
            });
        }
    });
}

/// # Safety
/// As for [`run`]; `block < args.num_blocks`.
unsafe fn run_block(kernel: Kernel, threads: u32, args: &hp_exchange_args, block: u32) {
    let b = block as usize;
    // SAFETY: the table holds num_blocks entries (launch contract) and block < num_blocks.
    let entry: hp_block = unsafe { *(args.blocks as *const hp_block).add(b) };
    let times = (args.times != 0).then(|| {
        // SAFETY: the times table holds num_blocks records; only this block writes record b.
        unsafe { &mut *(args.times as *mut hp_block_times).add(b) }
    });
    match kernel {
        Kernel::Pack => {
            let start = timer_ns();
            let value = packed_value(args.iteration, args.rank, block);
            // SAFETY: the send buffer holds `elems` f64 values (launch contract); only this
            // grid block writes it while the kernel runs.
            let send = unsafe {
                std::slice::from_raw_parts_mut(entry.send as *mut f64, entry.elems as usize)
            };
            send.fill(value);
            if let Some(t) = times {
                t.pack_start = start;
                t.pack_end = timer_ns();
            }
        }
        Kernel::Unpack => {
            let start = timer_ns();
            let expected = packed_value(args.iteration, entry.source, block);
            // SAFETY: the check table holds num_blocks records; only this block writes record b.
            let check = unsafe { &mut *(args.checks as *mut hp_block_check).add(b) };
            let recv = entry.recv as *const f64;
            for thread in 0..threads {
                let index = checked_index(thread, threads, entry.elems);
                // SAFETY: index < elems, inside the receive buffer (launch contract).
                let found = unsafe { recv.add(index as usize).read_volatile() };
                check.checked += 1;
                if found.to_bits() != expected.to_bits() {
                    if check.wrong == 0 {
                        check.first_index = index;
                        check.first_expected = expected;
                        check.first_found = found;
                    }
                    check.wrong += 1;
                }
            }
            if let Some(t) = times {
                t.unpack_start = start;
                t.unpack_end = timer_ns();
            }
        }
        // Kernel is non_exhaustive: kernels this backend does not know are refused at launch.
        _ => {}
    }
}
