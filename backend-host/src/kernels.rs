//! The shared kernels of `kernels-cu/`, written again for host threads with the same semantics
//! and, for the taskqueue, the same flag layout and protocol.
//!
//! A launch runs its grid blocks concurrently, one OS thread per block (so a taskqueue block
//! can wait for the CPU while others run); inside a block, the `threads` logical threads are the
//! iterations of a loop (pack fills the block's buffer, unpack makes one check per logical
//! thread at the index `checked_index` gives, plus the first and last element, or every
//! element: `haloport_core::verify`). Timestamps come from [`timer_ns`], this backend's
//! device timer. Flags are accessed with the atomics and orderings the CUDA source uses.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

use haloport_core::shared::{
    self, hp_block, hp_block_check, hp_block_times, hp_clock_sample, hp_epoch_args,
    hp_exchange_args, hp_ipc_args, hp_pingpong_args, hp_regions_args, hp_signal_args,
    hp_stencil_args, hp_taskqueue_args,
};
use haloport_core::verify::{check_block, packed_value};
use haloport_core::{Kernel, LaunchDims, Verify};

/// Nanoseconds on a monotonic clock since this process first asked: the host backend's
/// device timer (1 GHz).
pub fn timer_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A launch as the stream worker receives it: the kernel and its argument, by value (the
/// region kernels' boxed: it carries a table of regions).
pub(crate) enum HostLaunch {
    Exchange(Kernel, hp_exchange_args),
    ClockPingPong(hp_pingpong_args),
    Taskqueue(hp_taskqueue_args),
    Ipc(Kernel, hp_ipc_args),
    Regions(Kernel, Box<hp_regions_args>),
    Stencil(hp_stencil_args),
    /// The stencil's box with the shell's x and y slabs, its ready word and its fix-up
    /// (with the launch's threads, which set the tiles' rows).
    ShellBox(hp_stencil_args, u32),
    ShellReady(hp_stencil_args),
    ShellFixup(hp_stencil_args, u32),
    EpochStep(hp_epoch_args),
    FusedSignal(hp_signal_args),
    StencilFused(hp_stencil_args),
}

/// Runs a launch to completion.
///
/// # Safety
/// The addresses in the argument satisfy `Backend::launch`'s contract.
pub(crate) unsafe fn run(launch: HostLaunch, dims: LaunchDims) -> Result<(), String> {
    match launch {
        HostLaunch::Exchange(kernel, args) => {
            let blocks = dims.blocks.min(args.num_blocks);
            grid(blocks, |block| {
                // SAFETY: forwarded from this function's contract; each grid block touches only
                // its own table entry, buffers, check record and timestamps.
                unsafe { exchange_block(kernel, dims.threads, &args, block) }
            });
        }
        // SAFETY: forwarded from this function's contract.
        HostLaunch::ClockPingPong(args) => unsafe { clock_pingpong(&args) },
        HostLaunch::Taskqueue(args) => {
            let blocks = dims.blocks.min(args.exchange.num_blocks);
            grid(blocks, |block| {
                // SAFETY: forwarded from this function's contract; each grid block touches its
                // own entries and flags, and the shared queue only through atomics.
                unsafe { taskqueue_block(&args, dims.threads, block) }
            });
        }
        // SAFETY: forwarded from this function's contract.
        HostLaunch::Ipc(kernel, args) => unsafe {
            crate::ipc_kernels::run(kernel, &args, dims.threads, dims.blocks)
        },
        HostLaunch::Regions(kernel, args) => {
            // SAFETY: forwarded from this function's contract.
            return unsafe { crate::region_kernels::run_regions(kernel, &args, dims) };
        }
        // SAFETY: forwarded from this function's contract.
        HostLaunch::Stencil(args) => unsafe { crate::region_kernels::run_stencil(&args) },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::ShellBox(args, threads) => unsafe {
            crate::region_kernels::run_shell_box(&args, threads)
        },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::ShellReady(args) => unsafe { crate::region_kernels::run_shell_ready(&args) },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::ShellFixup(args, threads) => unsafe {
            crate::region_kernels::run_shell_fixup(&args, threads)
        },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::FusedSignal(args) => unsafe { crate::fused_kernels::run(&args) },
        // SAFETY: forwarded from this function's contract.
        HostLaunch::StencilFused(args) => unsafe { crate::fused_kernels::run_stencil(&args) },
        HostLaunch::EpochStep(args) => {
            // SAFETY: `word` is a live, aligned u64 of device memory (forwarded contract).
            let word = unsafe { &mut *(args.word as *mut u64) };
            *word = if args.set != 0 {
                args.value
            } else {
                *word + args.value
            };
        }
    }
    Ok(())
}

/// Runs `body(block)` for every block on its own thread; returns when all finished.
fn grid(blocks: u32, body: impl Fn(u32) + Sync) {
    thread::scope(|scope| {
        for block in 0..blocks {
            let body = &body;
            scope.spawn(move || body(block));
        }
    });
}

/// # Safety
/// The table, checks and times of `args` hold num_blocks records; `block < num_blocks`; the
/// times record lives for `'t` and only this block touches it meanwhile.
unsafe fn entry_and_times<'t>(
    args: &hp_exchange_args,
    block: u32,
) -> (hp_block, Option<&'t mut hp_block_times>) {
    let b = block as usize;
    // SAFETY: forwarded from this function's contract.
    let entry = unsafe { *(args.blocks as *const hp_block).add(b) };
    // SAFETY: forwarded; only this block writes record b.
    let times =
        (args.times != 0).then(|| unsafe { &mut *(args.times as *mut hp_block_times).add(b) });
    (entry, times)
}

/// Pack: element i of the buffer at `dest` := the packed value of element i.
///
/// # Safety
/// `dest` holds the block's `elems` f64 values; only this block writes it meanwhile.
unsafe fn pack_into(args: &hp_exchange_args, entry: &hp_block, block: u32, dest: u64) {
    // SAFETY: forwarded from this function's contract.
    let send = unsafe { std::slice::from_raw_parts_mut(dest as *mut f64, entry.elems as usize) };
    for (i, v) in send.iter_mut().enumerate() {
        *v = packed_value(args.iteration, args.rank, block, i as u64);
    }
}

/// Unpack: the checks of `haloport_core::verify` with `threads` logical threads; writes the
/// block's check record.
///
/// # Safety
/// The receive buffer holds `elems` values, which nothing writes meanwhile; the check table
/// holds num_blocks records.
unsafe fn unpack(args: &hp_exchange_args, entry: &hp_block, block: u32, threads: u32) {
    let verify = if args.verify == shared::HP_VERIFY_FULL {
        Verify::Full
    } else {
        Verify::Sample
    };
    // SAFETY: forwarded from this function's contract.
    let recv =
        unsafe { std::slice::from_raw_parts(entry.recv as *const f64, entry.elems as usize) };
    let record = check_block(recv, verify, threads, |i| {
        packed_value(args.iteration, entry.source, block, i)
    });
    // SAFETY: the check table holds num_blocks records; only this block writes record b.
    unsafe {
        (args.checks as *mut hp_block_check)
            .add(block as usize)
            .write(record)
    };
}

/// The pack and unpack kernels for one grid block.
///
/// # Safety
/// As for [`run`]; `block < args.num_blocks`.
unsafe fn exchange_block(kernel: Kernel, threads: u32, args: &hp_exchange_args, block: u32) {
    // SAFETY: forwarded from this function's contract.
    let (entry, times) = unsafe { entry_and_times(args, block) };
    let start = timer_ns();
    match kernel {
        Kernel::Pack => {
            // SAFETY: the send buffer holds elems values (launch contract).
            unsafe { pack_into(args, &entry, block, entry.send) };
            if let Some(t) = times {
                t.pack_start = start;
                t.pack_end = timer_ns();
            }
        }
        Kernel::Unpack => {
            // SAFETY: forwarded from the launch contract.
            unsafe { unpack(args, &entry, block, threads) };
            if let Some(t) = times {
                t.unpack_start = start;
                t.unpack_end = timer_ns();
            }
        }
        // Only pack and unpack reach here (see HostLaunch).
        _ => {}
    }
}

/// # Safety
/// `addr` is a 4-byte aligned u32 in live memory accessed only atomically while kernels run.
unsafe fn flag_u32<'a>(addr: u64) -> &'a AtomicU32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { AtomicU32::from_ptr(addr as *mut u32) }
}

/// Waits until `flag == epoch`; `Err(state)` on abort or time-out (as `hp_tq_wait`).
fn wait_for(args: &hp_taskqueue_args, flag: &AtomicU32, abort: &AtomicU32) -> Result<(), u32> {
    let since = timer_ns();
    for spins in 0_u32.. {
        if flag.load(Ordering::Acquire) == args.epoch {
            return Ok(());
        }
        if spins % 16 == 15 {
            if abort.load(Ordering::Acquire) == args.epoch {
                return Err(shared::HP_TQ_ABORTED);
            }
            if timer_ns() - since > args.timeout_ticks {
                return Err(shared::HP_TQ_TIMED_OUT);
            }
        }
        if args.poll_backoff_ns > 0 {
            thread::sleep(std::time::Duration::from_nanos(u64::from(
                args.poll_backoff_ns,
            )));
        } else {
            // The CPU side may share this core (ranks bound to cores): let it run.
            thread::yield_now();
        }
    }
    Err(shared::HP_TQ_TIMED_OUT)
}

/// One grid block of the taskqueue kernel: the state machine of `hp_taskqueue` in
/// `kernels-cu/hp_kernels.cuh`, step for step.
///
/// # Safety
/// As for [`run`]; `block < args.exchange.num_blocks`.
unsafe fn taskqueue_block(args: &hp_taskqueue_args, threads: u32, block: u32) {
    let x = &args.exchange;
    let at = |base: u64| base + u64::from(args.stride) * u64::from(block);
    // SAFETY: every flag address lies in the live control block, aligned to its stride (a
    // multiple of 8), and is accessed only atomically by both sides (launch contract).
    let (state, pack_go, unpack_go, abort) = unsafe {
        (
            flag_u32(at(args.states)),
            flag_u32(at(args.pack_go)),
            flag_u32(at(args.unpack_go)),
            flag_u32(args.abort_flag),
        )
    };
    // SAFETY: forwarded from this function's contract.
    let (entry, mut times) = unsafe { entry_and_times(x, block) };
    let give_up = |outcome: u32| state.store(outcome, Ordering::Release);
    let memcpy = args.mode & shared::HP_TQ_MODE_MEMCPY != 0;

    if memcpy {
        state.store(shared::HP_TQ_WAIT_COPY, Ordering::Release);
        if let Err(outcome) = wait_for(args, pack_go, abort) {
            return give_up(outcome);
        }
    }
    state.store(shared::HP_TQ_PACKING, Ordering::Release);
    let pack_start = timer_ns();
    let dest = if memcpy {
        entry.send_device
    } else {
        entry.send
    };
    // SAFETY: dest holds elems values (launch contract); only this block writes it.
    unsafe { pack_into(x, &entry, block, dest) };
    fence(Ordering::SeqCst);
    if let Some(t) = times.as_deref_mut() {
        t.pack_start = pack_start;
        t.pack_end = timer_ns();
    }

    if args.mode & shared::HP_TQ_MODE_QUEUE != 0 {
        // SAFETY: forwarded from this function's contract.
        if let Err(outcome) = unsafe { post_to_queue(args, block) } {
            return give_up(outcome);
        }
    } else {
        // SAFETY: the task channel of this block, as the other flags.
        unsafe { flag_u32(at(args.tasks)) }.store(args.epoch, Ordering::Release);
    }
    state.store(shared::HP_TQ_WAIT_RECV, Ordering::Release);
    if let Err(outcome) = wait_for(args, unpack_go, abort) {
        return give_up(outcome);
    }
    state.store(shared::HP_TQ_UNPACKING, Ordering::Release);
    let unpack_start = timer_ns();
    // SAFETY: forwarded from the launch contract.
    unsafe { unpack(x, &entry, block, threads) };
    if let Some(t) = times {
        t.unpack_start = unpack_start;
        t.unpack_end = timer_ns();
    }
    fence(Ordering::SeqCst);
    state.store(shared::HP_TQ_DONE, Ordering::Release);
}

/// Appends `block` to the task queue under the lock (thesis listing 3.12), as `hp_tq_post_queue`.
///
/// # Safety
/// `queue_lock` and `queue_tail` are u32s and `tasks` holds num_blocks u64 entries at `stride`,
/// all live and accessed only atomically.
unsafe fn post_to_queue(args: &hp_taskqueue_args, block: u32) -> Result<(), u32> {
    // SAFETY: forwarded from this function's contract.
    let (lock, tail) = unsafe { (flag_u32(args.queue_lock), flag_u32(args.queue_tail)) };
    let since = timer_ns();
    while lock
        .compare_exchange(0, block + 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if timer_ns() - since > args.timeout_ticks {
            return Err(shared::HP_TQ_TIMED_OUT);
        }
        thread::yield_now();
    }
    let index = tail.load(Ordering::Relaxed);
    let slot = u64::from(index % args.exchange.num_blocks);
    let entry = args.tasks + u64::from(args.stride) * slot;
    // SAFETY: the slot is one of num_blocks 8-byte aligned u64 entries (contract).
    let entry = unsafe { AtomicU64::from_ptr(entry as *mut u64) };
    entry.store(
        (u64::from(args.epoch) << 32) | u64::from(block + 1),
        Ordering::Release,
    );
    tail.fetch_add(1, Ordering::Relaxed);
    lock.store(0, Ordering::Release);
    Ok(())
}

/// The ping-pong kernel of `kernels-cu/hp_kernels.cuh`, on this backend's timer.
///
/// # Safety
/// The addresses in `args` satisfy `Backend::launch`'s contract.
unsafe fn clock_pingpong(args: &hp_pingpong_args) {
    let samples = args.samples as *mut hp_clock_sample;
    // SAFETY: both flags are 4-byte aligned u32s in live pinned memory (launch contract),
    // accessed only atomically while this kernel runs.
    let (gpu_seq, cpu_seq) = unsafe { (flag_u32(args.gpu_seq), flag_u32(args.cpu_seq)) };
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
