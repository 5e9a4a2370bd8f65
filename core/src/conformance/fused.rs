//! Fused mode's signal kernel (`hp_fused_signal`): stores, bounded waits, the epoch moved on
//! only where asked and every wait was met, a time-out recorded by the index of its wait.

use super::{deadline, e, ensure, Check};
use crate::backend::{Backend, Coherence, Launch, LaunchDims, PinnedMemory};
use crate::shared::{hp_signal_args, hp_word_op};

/// The words of the check, u64 each, in one pinned allocation the host reads and writes
/// between launches (and the kernel reads and writes at system scope).
const EPOCH: usize = 0;
const STORED: usize = 1;
const WAITED: usize = 2;
const ALSO_WAITED: usize = 3;
const STATUS: usize = 4;

/// Stores then waits, epoch by epoch: a launch whose waits are met stores `e * per_epoch`,
/// moves the epoch on where asked and leaves the status at 0; one whose first wait is not met
/// still stores, records 1 (its wait's index + 1) and leaves the epoch where it was.
pub fn fused_signal_stores_waits_and_times_out<B: Backend>(backend: &B) -> Check {
    let words = backend.alloc_pinned(64, Coherence::Coherent).map_err(e)?;
    let at = |i: usize| words.device_addr() + 8 * i as u64;
    let set = |i: usize, v: u64| {
        // SAFETY: word i lies inside the 64-byte allocation; no launch is running.
        unsafe { words.host_ptr().cast::<u64>().add(i).write_volatile(v) }
    };
    let get = |i: usize| {
        // SAFETY: as for `set`; the stream was synchronized.
        unsafe { words.host_ptr().cast::<u64>().add(i).read_volatile() }
    };
    for i in 0..8 {
        set(i, 0);
    }
    let ops = [
        hp_word_op {
            addr: at(STORED),
            per_epoch: 1,
        },
        hp_word_op {
            addr: at(WAITED),
            per_epoch: 3,
        },
        hp_word_op {
            addr: at(ALSO_WAITED),
            per_epoch: 1,
        },
    ];
    let table = backend
        .alloc_pinned(std::mem::size_of_val(&ops), Coherence::Coherent)
        .map_err(e)?;
    // SAFETY: the table holds the three entries; no launch is running.
    unsafe { std::ptr::copy_nonoverlapping(ops.as_ptr(), table.host_ptr().cast(), ops.len()) };
    let hz = backend.device_info().timer_hz;
    // Created after the memory its work touches, so dropped (waiting for it) before it.
    let stream = backend.create_stream().map_err(e)?;
    let dims = LaunchDims {
        blocks: 1,
        threads: 32,
    };
    // (case, advance, preset of the waited words, time-out, then: stored, epoch, status)
    let cases = [
        ("met, no advance", 0, (3, 1), hz * 10, (1, 0, 0)),
        ("met", 1, (3, 1), hz * 10, (1, 1, 0)),
        ("first wait short", 1, (3, 2), hz / 50, (2, 1, 1)),
        ("met again", 1, (6, 2), hz * 10, (2, 2, 0)),
    ];
    for (case, advance, (waited, also), timeout_ticks, (stored, epoch, status)) in cases {
        set(WAITED, waited);
        set(ALSO_WAITED, also);
        set(STATUS, 0);
        let args = hp_signal_args {
            ops: table.device_addr(),
            epoch: at(EPOCH),
            status: at(STATUS),
            timeout_ticks,
            stores: 1,
            waits: 2,
            advance,
            reserved: 0,
        };
        // SAFETY: the table and the words live until the stream is synchronized (or leaked).
        unsafe { backend.launch(Launch::FusedSignal(&args), dims, &stream) }.map_err(e)?;
        if let Err(err) = backend.stream_synchronize(&stream, deadline()) {
            std::mem::forget((table, words));
            return Err(format!("{case}: {err}"));
        }
        let got = (get(STORED), get(EPOCH), get(STATUS) & 0xffff_ffff);
        ensure(got == (stored, epoch, status), || {
            format!(
                "{case}: stored, epoch, status {got:?}, expected {:?}",
                (stored, epoch, status)
            )
        })?;
    }
    Ok(())
}
