//! Messages and collectives that give up: after a run, a rank that stopped (or died) must not
//! leave the others waiting in MPI for ever. Each operation is a nonblocking MPI call completed
//! by `MPI_Test` polled until a deadline. On time-out the request stays pending (MPI 3.1 section
//! 5.12 makes freeing a pending collective erroneous) and the buffers it names are leaked with
//! it, so MPI never writes freed memory; the caller ends with the error.

// Raw MPI calls on buffers this module owns until their requests complete.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{decode_contributions, displacements, encode_contribution};
use crate::error::{Error, Result};
use crate::transport::mpi::{check, ibarrier_until, null_request, test_until};

/// The tag of [`send_until`] and [`receive_until`]'s messages.
const TAG: i32 = 0x6870;

/// Sends `bytes` (at most 2 GiB) to rank `dest`, giving up at `deadline`.
///
/// # Errors
/// [`Error::Timeout`] (`bytes` is then leaked), [`Error::InvalidInput`] over 2 GiB; MPI errors.
pub fn send_until(
    comm: &SimpleCommunicator,
    dest: i32,
    bytes: Vec<u8>,
    deadline: Instant,
    what: &str,
) -> Result<()> {
    let count = i32::try_from(bytes.len())
        .map_err(|_| Error::InvalidInput(format!("{what}: a message over 2 GiB")))?;
    let mut request = null_request();
    // SAFETY: bytes lives until the request completes, or is leaked with it.
    let code = unsafe {
        ffi::MPI_Isend(
            bytes.as_ptr().cast::<c_void>(),
            count,
            ffi::RSMPI_UINT8_T,
            dest,
            TAG,
            comm.as_raw(),
            &mut request,
        )
    };
    check("MPI_Isend", code, || what.to_owned())?;
    let done = test_until(comm.rank(), &mut request, deadline, what);
    if done.is_err() {
        std::mem::forget(bytes);
    }
    done
}

/// Receives `len` bytes (at most 2 GiB) from rank `source`, giving up at `deadline`.
///
/// # Errors
/// [`Error::Timeout`] (the buffer is then leaked), [`Error::InvalidInput`] over 2 GiB; MPI
/// errors.
pub fn receive_until(
    comm: &SimpleCommunicator,
    source: i32,
    len: usize,
    deadline: Instant,
    what: &str,
) -> Result<Vec<u8>> {
    let count = i32::try_from(len)
        .map_err(|_| Error::InvalidInput(format!("{what}: a message over 2 GiB")))?;
    let mut bytes = vec![0_u8; len];
    let mut request = null_request();
    // SAFETY: bytes lives until the request completes, or is leaked with it.
    let code = unsafe {
        ffi::MPI_Irecv(
            bytes.as_mut_ptr().cast::<c_void>(),
            count,
            ffi::RSMPI_UINT8_T,
            source,
            TAG,
            comm.as_raw(),
            &mut request,
        )
    };
    check("MPI_Irecv", code, || what.to_owned())?;
    match test_until(comm.rank(), &mut request, deadline, what) {
        Ok(()) => Ok(bytes),
        Err(e) => {
            std::mem::forget(bytes);
            Err(e)
        }
    }
}

/// How long [`barrier_until`] sleeps between its tests: it waits for ranks still working (rank
/// 0 verifying a run alone, say), so it leaves them the CPU.
const BARRIER_PAUSE: Duration = Duration::from_millis(1);

/// A barrier over `comm` that gives up at `deadline` where a rank does not arrive (it stopped
/// or died), sleeping between its tests. Before `MPI_Finalize`, which would wait for such a
/// rank for ever.
///
/// # Errors
/// [`Error::Timeout`] naming `what` (the request is then left pending); MPI errors.
pub fn barrier_until(comm: &SimpleCommunicator, deadline: Instant, what: &str) -> Result<()> {
    ibarrier_until(comm, comm.rank(), deadline, what, BARRIER_PAUSE)
}

/// [`barrier_until`] without its pauses: every rank leaves within microseconds of the last
/// one's arrival, so that the timed work each then starts runs side by side (ranks sharing a
/// device measure their work together, as the steps they are compared with run it).
///
/// # Errors
/// As [`barrier_until`].
pub fn lockstep_until(comm: &SimpleCommunicator, deadline: Instant, what: &str) -> Result<()> {
    ibarrier_until(comm, comm.rank(), deadline, what, Duration::ZERO)
}

/// [`all_gather`](super::all_gather), giving up at `deadline` where a rank does not take part.
///
/// # Errors
/// As `all_gather`; [`Error::Timeout`] naming `what`; MPI errors.
pub fn all_gather_until<T>(
    comm: &SimpleCommunicator,
    mine: std::result::Result<T, String>,
    on_error: impl Fn(i32, String) -> Error,
    deadline: Instant,
    what: &str,
) -> Result<Vec<T>>
where
    T: Serialize + DeserializeOwned,
{
    let bytes = encode_contribution(mine)?;
    let len = Box::new(
        i32::try_from(bytes.len())
            .map_err(|_| Error::InvalidInput(format!("{what}: a message over 2 GiB")))?,
    );
    let mut lens = vec![0_i32; comm.size() as usize];
    let mut request = null_request();
    // SAFETY: len and lens live until the request completes, or are leaked with it.
    let code = unsafe {
        ffi::MPI_Iallgather(
            std::ptr::from_ref::<i32>(&len).cast::<c_void>(),
            1,
            ffi::RSMPI_INT32_T,
            lens.as_mut_ptr().cast::<c_void>(),
            1,
            ffi::RSMPI_INT32_T,
            comm.as_raw(),
            &mut request,
        )
    };
    check("MPI_Iallgather", code, || what.to_owned())?;
    if let Err(e) = test_until(comm.rank(), &mut request, deadline, what) {
        std::mem::forget((len, lens, bytes));
        return Err(e);
    }
    let (displs, total) = displacements(&lens);
    let mut all = vec![0_u8; total];
    // SAFETY: every buffer lives until the request completes, or is leaked with it; lens and
    // displs describe `all` (their sum is its length).
    let code = unsafe {
        ffi::MPI_Iallgatherv(
            bytes.as_ptr().cast::<c_void>(),
            *len,
            ffi::RSMPI_UINT8_T,
            all.as_mut_ptr().cast::<c_void>(),
            lens.as_ptr(),
            displs.as_ptr(),
            ffi::RSMPI_UINT8_T,
            comm.as_raw(),
            &mut request,
        )
    };
    check("MPI_Iallgatherv", code, || what.to_owned())?;
    if let Err(e) = test_until(comm.rank(), &mut request, deadline, what) {
        std::mem::forget((len, lens, bytes, displs, all));
        return Err(e);
    }
    decode_contributions(&all, &lens, &displs, on_error)
}
