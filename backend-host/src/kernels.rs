//! The shared kernels of `kernels-cu/`, written again for host threads with the same semantics.
//!
//! A launch runs its grid blocks concurrently, one OS thread per block; inside a block, the
//! `threads` logical threads are the iterations of a loop (pack fills the block's buffer, unpack
//! makes one check per logical thread at the index `checked_index` gives). Timestamps come from
//! [`timer_ns`], this backend's device timer.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

use haloport_core::shared::{
    hp_block, hp_block_check, hp_block_times, hp_clock_sample, hp_exchange_args, hp_pingpong_args,
};
use haloport_core::workload::{checked_index, packed_value};
use haloport_core::{Kernel, LaunchDims};

/// Nanoseconds on a monotonic clock since this process first asked: the host backend's
/// device timer (1 GHz).
pub fn timer_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A launch as the stream worker receives it: the kernel and its argument, by value.
#[derive(Clone, Copy)]
pub(crate) enum HostLaunch {
    Exchange(Kernel, hp_exchange_args),
    ClockPingPong(hp_pingpong_args),
}

/// Runs a launch to completion.
///
/// # Safety
/// The addresses in the argument satisfy `Backend::launch`'s contract.
pub(crate) unsafe fn run(launch: HostLaunch, dims: LaunchDims) {
    match launch {
        // SAFETY: forwarded from this function's contract.
        HostLaunch::Exchange(kernel, args) => unsafe { run_exchange(kernel, dims, args) },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::ClockPingPong(args) => unsafe { clock_pingpong(&args) },
    }
}

/// Runs a pack or unpack grid, blocks on concurrent threads, and returns when all finished.
///
/// # Safety
/// The addresses in `args` and the block table satisfy `Backend::launch`'s contract.
unsafe fn run_exchange(kernel: Kernel, dims: LaunchDims, args: hp_exchange_args) {
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
            let recv = entry.recv as *const f64;
            let mut record = hp_block_check {
                checked: threads,
                ..hp_block_check::default()
            };
            for thread in 0..threads {
                let index = checked_index(thread, threads, entry.elems);
                // SAFETY: index < elems, inside the receive buffer (launch contract).
                let found = unsafe { recv.add(index as usize).read_volatile() };
                if found.to_bits() != expected.to_bits() {
                    if record.wrong == 0 {
                        record.first_index = index;
                        record.first_expected = expected;
                        record.first_found = found;
                    }
                    record.wrong += 1;
                }
            }
            // SAFETY: the check table holds num_blocks records; only this block writes record b.
            unsafe { (args.checks as *mut hp_block_check).add(b).write(record) };
            if let Some(t) = times {
                t.unpack_start = start;
                t.unpack_end = timer_ns();
            }
        }
        // Only pack and unpack reach here (see HostLaunch).
        _ => {}
    }
}

/// The ping-pong kernel of `kernels-cu/hp_kernels.cuh`, on this backend's timer.
///
/// # Safety
/// The addresses in `args` satisfy `Backend::launch`'s contract.
unsafe fn clock_pingpong(args: &hp_pingpong_args) {
    let samples = args.samples as *mut hp_clock_sample;
    // SAFETY: both flags are 4-byte aligned u32s in live pinned memory (launch contract), accessed
    // only atomically while this kernel runs.
    let (gpu_seq, cpu_seq) = unsafe {
        (
            AtomicU32::from_ptr(args.gpu_seq as *mut u32),
            AtomicU32::from_ptr(args.cpu_seq as *mut u32),
        )
    };
    for i in 0..args.count {
        // SAFETY: sample i is in bounds (launch contract); the CPU writes only its `cpu` field.
        let sample = unsafe { samples.add(i as usize) };
        // SAFETY: as above.
        unsafe { std::ptr::addr_of_mut!((*sample).gpu_before).write_volatile(timer_ns()) };
        gpu_seq.store(i + 1, Ordering::Release);
        let waiting_since = timer_ns();
        while cpu_seq.load(Ordering::Acquire) != i + 1 {
            if timer_ns() - waiting_since > args.timeout_ticks {
                // SAFETY: as above.
                unsafe { std::ptr::addr_of_mut!((*sample).gpu_after).write_volatile(0) };
                fence(Ordering::SeqCst);
                return;
            }
            // Ranks may share cores with their CPU side: let it run.
            thread::yield_now();
        }
        // SAFETY: as above.
        unsafe { std::ptr::addr_of_mut!((*sample).gpu_after).write_volatile(timer_ns()) };
    }
    fence(Ordering::SeqCst);
}
