//! The device-direct kernels of `kernels-cu/hp_kernels.cuh` (`hp_ipc_pack`, `hp_ipc_unpack`,
//! `hp_ipc_taskqueue`) for host threads, step for step: one OS thread per chunk, stores straight
//! into the destination's receive slot (memory of another process, mapped shared), a SeqCst fence
//! where the GPU fences at system scope, and flags through Acquire/Release atomics, as the CUDA
//! source uses system-scope acquire/release.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::thread;

use haloport_core::shared::{self, hp_block_check, hp_block_times, hp_ipc_args, hp_ipc_chunk};
use haloport_core::verify::{check_block, packed_value};
use haloport_core::{Kernel, Verify};

use crate::kernels::timer_ns;

/// # Safety
/// `addr` is a 4-byte aligned u32 in live memory accessed only atomically while kernels run.
unsafe fn flag<'a>(addr: u64) -> &'a AtomicU32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { AtomicU32::from_ptr(addr as *mut u32) }
}

/// The flag at `base` for epochs of `epoch`'s parity (`hp_ipc_flag`).
fn parity_flag(base: u64, parity_bytes: u64, epoch: u32) -> u64 {
    base + u64::from(epoch & 1) * parity_bytes
}

/// Waits until `flag >= target`; `Err(state)` on abort or time-out (as `hp_ipc_wait`).
fn wait_at_least(
    args: &hp_ipc_args,
    flag: &AtomicU32,
    abort: &AtomicU32,
    target: u32,
) -> Result<(), u32> {
    let since = timer_ns();
    for spins in 0_u32.. {
        if flag.load(Ordering::Acquire) >= target {
            return Ok(());
        }
        if spins % 256 == 255 {
            if abort.load(Ordering::Acquire) == args.epoch {
                return Err(shared::HP_IPC_ABORTED);
            }
            if timer_ns() - since > args.timeout_ticks {
                return Err(shared::HP_IPC_TIMED_OUT);
            }
        }
        if args.poll_backoff_ns > 0 {
            thread::sleep(std::time::Duration::from_nanos(u64::from(
                args.poll_backoff_ns,
            )));
        } else {
            // Ranks share cores with their peers here: let the sender run.
            thread::yield_now();
        }
    }
    Err(shared::HP_IPC_TIMED_OUT)
}

/// The pieces of one chunk's launch.
struct Chunk<'a> {
    args: &'a hp_ipc_args,
    index: u32,
    entry: hp_ipc_chunk,
    /// The receiving side's state (final: DONE).
    state: &'a AtomicU32,
    /// The sending side's state (final: SENT).
    send_state: &'a AtomicU32,
    abort: &'a AtomicU32,
    times: Option<&'a mut hp_block_times>,
}

impl Chunk<'_> {
    /// `hp_ipc_send_chunk`.
    ///
    /// # Safety
    /// The chunk's addresses satisfy `Backend::launch`'s contract.
    unsafe fn send(&mut self) -> Result<(), u32> {
        let (a, ch) = (self.args, &self.entry);
        if a.epoch > 2 {
            self.send_state
                .store(shared::HP_IPC_WAIT_CREDIT, Ordering::Release);
            // SAFETY: the credit flag is ours, live, aligned (contract).
            let credit = unsafe { flag(parity_flag(ch.credit, ch.flag_parity_bytes, a.epoch)) };
            wait_at_least(a, credit, self.abort, a.epoch - 2)?;
        }
        self.send_state
            .store(shared::HP_IPC_PACKING, Ordering::Release);
        let slot = ch.dest_recv + u64::from(a.epoch & 1) * ch.dest_slot_bytes;
        let dst = slot as *mut f64;
        for i in ch.begin..ch.send_end.min(ch.end) {
            // SAFETY: the destination's slot holds the block's elems values (contract); only
            // this chunk writes [begin, end) of it in this epoch.
            unsafe {
                dst.add(i as usize)
                    .write_volatile(packed_value(a.iteration, a.rank, ch.block, i))
            };
        }
        fence(Ordering::SeqCst);
        // SAFETY: the destination's arrival flag, opened peer memory (contract).
        unsafe {
            flag(parity_flag(
                ch.dest_arrival,
                ch.dest_flag_parity_bytes,
                a.epoch,
            ))
        }
        .store(a.epoch, Ordering::Release);
        Ok(())
    }

    /// `hp_ipc_receive_chunk`.
    ///
    /// # Safety
    /// The chunk's addresses satisfy `Backend::launch`'s contract.
    unsafe fn receive(&mut self, threads: u32) -> Result<(), u32> {
        let (a, ch) = (self.args, &self.entry);
        self.state
            .store(shared::HP_IPC_WAIT_DATA, Ordering::Release);
        let arrival = parity_flag(ch.arrival, ch.flag_parity_bytes, a.epoch);
        // SAFETY: our arrival flag (contract).
        wait_at_least(a, unsafe { flag(arrival) }, self.abort, a.epoch)?;
        self.state
            .store(shared::HP_IPC_UNPACKING, Ordering::Release);
        let start = timer_ns();
        let verify = if a.verify == shared::HP_VERIFY_FULL {
            Verify::Full
        } else {
            Verify::Sample
        };
        let slot = ch.recv + u64::from(a.epoch & 1) * ch.slot_bytes;
        // SAFETY: our slot holds the block's elems values; the sender finished [begin, end)
        // before raising the flag we acquired, and writes it again only after our credit.
        let recv = unsafe { std::slice::from_raw_parts(slot as *const f64, ch.elems as usize) };
        let chunk = &recv[ch.begin as usize..ch.end as usize];
        let mut record = check_block(chunk, verify, threads, |i| {
            packed_value(a.iteration, ch.source, ch.block, ch.begin + i)
        });
        record.first_index += ch.begin;
        // SAFETY: the check table holds num_chunks records; only this chunk writes its own.
        unsafe {
            (a.checks as *mut hp_block_check)
                .add(self.index as usize)
                .write(record)
        };
        if let Some(t) = self.times.as_deref_mut() {
            t.unpack_start = start;
            t.unpack_end = timer_ns();
        }
        fence(Ordering::SeqCst);
        // SAFETY: the source's credit flag, opened peer memory (contract).
        unsafe {
            flag(parity_flag(
                ch.source_credit,
                ch.source_flag_parity_bytes,
                a.epoch,
            ))
        }
        .store(a.epoch, Ordering::Release);
        Ok(())
    }
}

/// Runs one of the device-direct kernels, one thread per chunk.
///
/// # Safety
/// The addresses in `args` (and the chunk table) satisfy `Backend::launch`'s contract.
pub(crate) unsafe fn run(kernel: Kernel, args: &hp_ipc_args, threads: u32, blocks: u32) {
    let chunks = blocks.min(args.num_chunks);
    thread::scope(|scope| {
        for index in 0..chunks {
            scope.spawn(move || {
                // SAFETY: forwarded from this function's contract; each chunk touches its own
                // table entry, state, record and times, and shared flags only atomically.
                unsafe { run_chunk(kernel, args, threads, index) }
            });
        }
    });
}

/// # Safety
/// As for [`run`]; `index < args.num_chunks`.
unsafe fn run_chunk(kernel: Kernel, args: &hp_ipc_args, threads: u32, index: u32) {
    let c = index as usize;
    // SAFETY: forwarded: the tables hold num_chunks entries; only this chunk uses entry c.
    let (entry, state, send_state, abort, times) = unsafe {
        (
            *(args.chunks as *const hp_ipc_chunk).add(c),
            flag(args.states + 4 * c as u64),
            flag(args.send_states + 4 * c as u64),
            flag(args.abort_flag),
            (args.times != 0).then(|| &mut *(args.times as *mut hp_block_times).add(c)),
        )
    };
    let mut chunk = Chunk {
        args,
        index,
        entry,
        state,
        send_state,
        abort,
        times,
    };
    // As hp_ipc_pack_chunk: send with timestamps, then the sending side's final state.
    let pack = |chunk: &mut Chunk<'_>| {
        let start = timer_ns();
        // SAFETY: forwarded from this function's contract.
        let sent = unsafe { chunk.send() };
        if let Some(t) = chunk.times.as_deref_mut() {
            t.pack_start = start;
            t.pack_end = timer_ns();
        }
        send_state.store(sent.err().unwrap_or(shared::HP_IPC_SENT), Ordering::Release);
        sent
    };
    // As hp_ipc_unpack_chunk: receive, then the receiving side's final state.
    let unpack = |chunk: &mut Chunk<'_>| {
        // SAFETY: forwarded from this function's contract.
        let received = unsafe { chunk.receive(threads) };
        state.store(
            received.err().unwrap_or(shared::HP_IPC_DONE),
            Ordering::Release,
        );
    };
    match kernel {
        Kernel::IpcPack => {
            let _ = pack(&mut chunk);
        }
        Kernel::IpcUnpack => unpack(&mut chunk),
        Kernel::IpcTaskqueue => match pack(&mut chunk) {
            Ok(()) => unpack(&mut chunk),
            // The receiving half never ran: it ends in the state the sending half gave up in.
            Err(outcome) => state.store(outcome, Ordering::Release),
        },
        // Only the device-direct kernels reach here (see HostLaunch::Ipc).
        _ => {}
    }
}
