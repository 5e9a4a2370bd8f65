//! Host-staged MPI: block buffers in pinned host memory handed to MPI point-to-point calls.
//!
//! The transport works on its own duplicate of the job's communicator with `MPI_ERRORS_RETURN`,
//! so every call's return code reaches us and is turned into [`Error::Mpi`] naming the call and
//! the block; the job's own communicator keeps MPI's default (fatal) handler. Requests live in
//! two arrays indexed by block (receives, sends), as the thesis's `HaloLayer` keeps them.
//!
//! Calls that block inside MPI (`MPI_Send`, `MPI_Waitall`, `MPI_Barrier`) run under the
//! [`Watchdog`]; `MPI_Testany` loops are polled by the strategy against its deadline.
//!
//! Not thread-safe: one thread drives a transport (the MPI library is initialized
//! `MPI_THREAD_SINGLE` or better).

// The MPI bridge: raw MPI calls on raw buffers, each with its SAFETY argument.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::time::Instant;

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::{HostRegion, Transport};
use crate::error::{Error, Result};
use crate::watchdog::Watchdog;

/// Host-staged MPI point-to-point transport.
pub struct MpiTransport {
    comm: SimpleCommunicator,
    rank: i32,
    size: i32,
    recvs: Vec<ffi::MPI_Request>,
    sends: Vec<ffi::MPI_Request>,
    pending_recvs: usize,
    watchdog: Watchdog,
}

impl MpiTransport {
    /// Creates a transport over a duplicate of `comm`, returning errors instead of aborting.
    ///
    /// # Errors
    /// [`Error::Mpi`] if the error handler cannot be set.
    pub fn new(comm: &SimpleCommunicator) -> Result<MpiTransport> {
        let comm = comm.duplicate();
        // SAFETY: comm is a valid communicator we own; RSMPI_ERRORS_RETURN is a predefined handler.
        let code = unsafe { ffi::MPI_Comm_set_errhandler(comm.as_raw(), ffi::RSMPI_ERRORS_RETURN) };
        check("MPI_Comm_set_errhandler", code, || {
            "making the transport's communicator return errors".into()
        })?;
        let rank = comm.rank();
        Ok(MpiTransport {
            rank,
            size: comm.size(),
            comm,
            recvs: Vec::new(),
            sends: Vec::new(),
            pending_recvs: 0,
            watchdog: Watchdog::start(rank),
        })
    }

    fn count(region: &HostRegion, block: usize) -> Result<c_int> {
        c_int::try_from(region.elems()).map_err(|_| {
            Error::InvalidInput(format!(
                "block {block} has {} elements, more than one MPI message can carry",
                region.elems()
            ))
        })
    }

    fn slot(requests: &[ffi::MPI_Request], block: usize, what: &str) -> Result<()> {
        match requests.get(block) {
            // SAFETY: reading a predefined MPI constant.
            Some(r) if *r == unsafe { ffi::RSMPI_REQUEST_NULL } => Ok(()),
            Some(_) => Err(Error::Internal(format!(
                "block {block}: a {what} is already pending"
            ))),
            None => Err(Error::Internal(format!(
                "block {block} is beyond the {} blocks the transport was prepared for",
                requests.len()
            ))),
        }
    }

    fn wait_all(&mut self, sends: bool, deadline: Instant) -> Result<()> {
        let rank = self.rank;
        let what = if sends { "sends" } else { "receives" };
        let requests = if sends {
            &mut self.sends
        } else {
            &mut self.recvs
        };
        let pending = requests
            .iter()
            // SAFETY: reading a predefined MPI constant.
            .filter(|r| **r != unsafe { ffi::RSMPI_REQUEST_NULL })
            .count();
        let _armed = self
            .watchdog
            .arm(deadline, || format!("in MPI_Waitall for {pending} {what}"));
        let n = c_int::try_from(requests.len()).map_err(|_| too_many(requests.len()))?;
        // SAFETY: requests holds `n` valid or null requests; statuses are ignored. Buffers of
        // pending requests are alive (HostRegion's contract).
        let code =
            unsafe { ffi::MPI_Waitall(n, requests.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE) };
        check("MPI_Waitall", code, || {
            format!("rank {rank} waiting for {what}")
        })?;
        if !sends {
            self.pending_recvs = 0;
        }
        Ok(())
    }
}

fn too_many(n: usize) -> Error {
    Error::InvalidInput(format!("{n} blocks are more than MPI can count"))
}

impl Transport for MpiTransport {
    fn rank(&self) -> i32 {
        self.rank
    }

    fn size(&self) -> i32 {
        self.size
    }

    fn prepare(&mut self, blocks: usize) -> Result<()> {
        if self.pending_recvs > 0 {
            return Err(Error::Internal(
                "prepare called with receives pending".into(),
            ));
        }
        c_int::try_from(blocks).map_err(|_| too_many(blocks))?;
        // SAFETY: reading a predefined MPI constant.
        let null = unsafe { ffi::RSMPI_REQUEST_NULL };
        self.recvs = vec![null; blocks];
        self.sends = vec![null; blocks];
        Ok(())
    }

    fn post_recv(&mut self, block: usize, region: HostRegion, source: i32) -> Result<()> {
        Self::slot(&self.recvs, block, "receive")?;
        let count = Self::count(&region, block)?;
        let tag = block as c_int;
        // SAFETY: region is valid for `count` f64 writes until the request completes (HostRegion's
        // contract); the request slot is ours and null.
        let code = unsafe {
            ffi::MPI_Irecv(
                region.as_ptr().cast::<c_void>(),
                count,
                ffi::RSMPI_DOUBLE,
                source,
                tag,
                self.comm.as_raw(),
                &mut self.recvs[block],
            )
        };
        check("MPI_Irecv", code, || {
            format!("posting the receive of block {block} from rank {source}")
        })?;
        self.pending_recvs += 1;
        Ok(())
    }

    fn send(
        &mut self,
        block: usize,
        region: HostRegion,
        dest: i32,
        deadline: Instant,
    ) -> Result<()> {
        let count = Self::count(&region, block)?;
        let _armed = self.watchdog.arm(deadline, || {
            format!("in MPI_Send of block {block} to rank {dest}")
        });
        // SAFETY: region is valid for `count` f64 reads for the duration of this call.
        let code = unsafe {
            ffi::MPI_Send(
                region.as_ptr().cast::<c_void>(),
                count,
                ffi::RSMPI_DOUBLE,
                dest,
                block as c_int,
                self.comm.as_raw(),
            )
        };
        check("MPI_Send", code, || {
            format!("sending block {block} to rank {dest}")
        })
    }

    fn isend(&mut self, block: usize, region: HostRegion, dest: i32) -> Result<()> {
        Self::slot(&self.sends, block, "send")?;
        let count = Self::count(&region, block)?;
        // SAFETY: region is valid for `count` f64 reads until the request completes (HostRegion's
        // contract); the request slot is ours and null.
        let code = unsafe {
            ffi::MPI_Isend(
                region.as_ptr().cast::<c_void>(),
                count,
                ffi::RSMPI_DOUBLE,
                dest,
                block as c_int,
                self.comm.as_raw(),
                &mut self.sends[block],
            )
        };
        check("MPI_Isend", code, || {
            format!("starting the send of block {block} to rank {dest}")
        })
    }

    fn wait_recvs(&mut self, deadline: Instant) -> Result<()> {
        self.wait_all(false, deadline)
    }

    fn test_any_recv(&mut self) -> Result<Option<usize>> {
        if self.pending_recvs == 0 {
            return Ok(None);
        }
        let n = c_int::try_from(self.recvs.len()).map_err(|_| too_many(self.recvs.len()))?;
        let mut index: c_int = 0;
        let mut flag: c_int = 0;
        // SAFETY: recvs holds `n` valid or null requests; index and flag are valid out-pointers.
        let code = unsafe {
            ffi::MPI_Testany(
                n,
                self.recvs.as_mut_ptr(),
                &mut index,
                &mut flag,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        let rank = self.rank;
        check("MPI_Testany", code, || {
            format!("rank {rank} testing receives")
        })?;
        // SAFETY: reading a predefined MPI constant.
        if flag != 0 && index != unsafe { ffi::RSMPI_UNDEFINED } {
            self.pending_recvs -= 1;
            return Ok(Some(index as usize));
        }
        Ok(None)
    }

    fn pending_recvs(&self) -> usize {
        self.pending_recvs
    }

    fn wait_sends(&mut self, deadline: Instant) -> Result<()> {
        self.wait_all(true, deadline)
    }

    fn barrier(&mut self, deadline: Instant) -> Result<()> {
        let _armed = self.watchdog.arm(deadline, || "in MPI_Barrier".to_owned());
        // SAFETY: comm is a valid communicator.
        let code = unsafe { ffi::MPI_Barrier(self.comm.as_raw()) };
        let rank = self.rank;
        check("MPI_Barrier", code, || {
            format!("rank {rank} at the end of an iteration")
        })
    }
}

impl Drop for MpiTransport {
    /// Requests still pending here belong to an exchange that failed. Their buffers are freed
    /// after the transport (field order in the strategies), so cancel and free them first rather
    /// than let MPI write into freed memory.
    fn drop(&mut self) {
        // SAFETY: reading a predefined MPI constant.
        let null = unsafe { ffi::RSMPI_REQUEST_NULL };
        let mut left = 0;
        for request in self.recvs.iter_mut().chain(self.sends.iter_mut()) {
            if *request != null {
                left += 1;
                // SAFETY: request is a valid pending request we own; cancel then free it.
                unsafe {
                    ffi::MPI_Cancel(request);
                    ffi::MPI_Request_free(request);
                }
            }
        }
        if left > 0 {
            tracing::warn!(
                "rank {}: {left} MPI requests were still pending when the transport was dropped; cancelled",
                self.rank
            );
        }
    }
}

/// Turns an MPI return code into a [`Result`], naming the call and what was being done.
///
/// # Errors
/// [`Error::Mpi`] for any code other than `MPI_SUCCESS`.
pub fn check(call: &'static str, code: c_int, context: impl FnOnce() -> String) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(Error::Mpi {
        call,
        code,
        message: error_string(code),
        context: context(),
    })
}

fn error_string(code: c_int) -> String {
    let mut buf = vec![0_u8; 512];
    let mut len: c_int = 0;
    // SAFETY: buf has room for MPI_MAX_ERROR_STRING (256 in OpenMPI and MPICH) characters.
    let ok = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    if ok != ffi::MPI_SUCCESS as c_int || len <= 0 {
        return "unknown MPI error".into();
    }
    buf.truncate(len as usize);
    String::from_utf8_lossy(&buf).into_owned()
}
