//! Helpers over any backend: deadlines and polling, tables and bytes moved between host and
//! device memory, and the checks made before a launch or a copy.

#![allow(unsafe_code)]

use std::time::Instant;

use crate::error::Result;

use super::{Backend, Coherence, PinnedMemory};

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
                after: deadline.saturating_duration_since(since),
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
