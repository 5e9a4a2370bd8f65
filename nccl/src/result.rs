//! The checked layer: one function per NCCL call, each turning its `ncclResult_t` into a
//! [`Result`] that names the call and carries `ncclGetErrorString` and `ncclGetLastError` text
//! (STYLE: one checking function, [`check`]). Grouped by object, as cudarc's `result` is:
//! [`comm`] for communicators, [`group`] for group calls, [`p2p`] for send and receive.
//!
//! `ncclInProgress` is not an error here: calls that can return it on a non-blocking
//! communicator return [`Progress`], and the safe layer polls.
//!
//! Vendor: <https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html>

use std::ffi::{c_int, CStr};

use crate::error::{Error, Result};
use crate::sys::{self, ncclComm_t, ncclResult_t, NcclLibrary};

/// Whether a non-blocking call finished or is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// `ncclSuccess`.
    Done,
    /// `ncclInProgress`: poll `ncclCommGetAsyncError`.
    InProgress,
}

/// `ncclGetErrorString(code)`, or a placeholder when the library returns NULL.
pub fn error_string(lib: &NcclLibrary, code: ncclResult_t) -> String {
    // SAFETY: ncclGetErrorString takes any code and returns a static string or NULL.
    let p = unsafe { (lib.ncclGetErrorString)(code) };
    c_text(p).unwrap_or_else(|| format!("unknown ncclResult_t {}", code.0))
}

/// `ncclGetLastError(NULL)`: the library's last error message (may be about an earlier call).
/// NCCL documents the communicator argument as unused and accepts null.
pub fn last_error(lib: &NcclLibrary) -> String {
    // SAFETY: ncclGetLastError with a null communicator reads the library's last-error string.
    let p = unsafe { (lib.ncclGetLastError)(std::ptr::null_mut()) };
    c_text(p).unwrap_or_default()
}

fn c_text(p: *const std::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: NCCL returns NUL-terminated strings it owns and keeps valid at least until the
    // next NCCL call on this thread; the text is copied out at once.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Turns a code into `Ok` or an [`Error::Call`] naming `call`, with the library's texts.
///
/// # Errors
/// [`Error::Call`] for anything but `ncclSuccess`.
pub fn check(
    lib: &NcclLibrary,
    call: &'static str,
    code: ncclResult_t,
    context: impl FnOnce() -> String,
) -> Result<()> {
    match check_progress(lib, call, code, context)? {
        Progress::Done => Ok(()),
        Progress::InProgress => Err(Error::Call {
            call,
            code: code.0,
            name: error_string(lib, code),
            last: "ncclInProgress where the call is blocking".into(),
            context: String::new(),
        }),
    }
}

/// As [`check`], with `ncclInProgress` as [`Progress::InProgress`].
///
/// # Errors
/// [`Error::Call`] for anything but `ncclSuccess` and `ncclInProgress`.
pub fn check_progress(
    lib: &NcclLibrary,
    call: &'static str,
    code: ncclResult_t,
    context: impl FnOnce() -> String,
) -> Result<Progress> {
    match code {
        ncclResult_t::ncclSuccess => Ok(Progress::Done),
        ncclResult_t::ncclInProgress => Ok(Progress::InProgress),
        _ => Err(Error::Call {
            call,
            code: code.0,
            name: error_string(lib, code),
            last: last_error(lib),
            context: context(),
        }),
    }
}

/// `ncclGetVersion`: the library's version code.
///
/// # Errors
/// [`Error::Call`].
pub fn version(lib: &NcclLibrary) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid, writable int for the call's duration.
    let code = unsafe { (lib.ncclGetVersion)(&mut v) };
    check(lib, "ncclGetVersion", code, String::new)?;
    Ok(v)
}

/// `ncclGetUniqueId`: 128 bytes naming a new communicator (NCCL's bootstrap address).
///
/// # Errors
/// [`Error::Call`].
pub fn unique_id(lib: &NcclLibrary) -> Result<sys::ncclUniqueId> {
    let mut id = sys::ncclUniqueId { internal: [0; 128] };
    // SAFETY: `id` is a valid, writable ncclUniqueId for the call's duration.
    let code = unsafe { (lib.ncclGetUniqueId)(&mut id) };
    check(lib, "ncclGetUniqueId", code, String::new)?;
    Ok(id)
}

/// Communicator calls.
pub mod comm {
    use super::*;

    /// `ncclCommInitRankConfig`: starts creating rank `rank` of `nranks` of the communicator
    /// `id` names. With `config.blocking == 0` it may return [`Progress::InProgress`]: poll
    /// [`async_error`] on the returned handle until done.
    ///
    /// # Errors
    /// [`Error::Call`]; the handle NCCL may have returned alongside an error is given back too,
    /// so that the caller can abort it (`Err((error, comm))`, `comm` possibly null).
    pub fn init_rank_config(
        lib: &NcclLibrary,
        nranks: c_int,
        id: sys::ncclUniqueId,
        rank: c_int,
        config: &mut sys::ncclConfig_t,
    ) -> std::result::Result<(ncclComm_t, Progress), (Error, ncclComm_t)> {
        let mut comm: ncclComm_t = std::ptr::null_mut();
        // SAFETY: `comm` and `config` are valid and writable for the call; `config` was made by
        // `sys::config_initializer` (size, magic and version set) and NCCL copies it.
        let code = unsafe { (lib.ncclCommInitRankConfig)(&mut comm, nranks, id, rank, config) };
        check_progress(lib, "ncclCommInitRankConfig", code, || {
            format!("rank {rank} of {nranks}")
        })
        .map(|p| (comm, p))
        .map_err(|e| (e, comm))
    }

    /// `ncclCommGetAsyncError`: the communicator's state. `Ok(Done)` when idle and healthy,
    /// `Ok(InProgress)` while a non-blocking operation runs.
    ///
    /// # Errors
    /// [`Error::Call`] naming `ncclCommGetAsyncError` when the call itself fails, and naming
    /// `what` when it reports an asynchronous error.
    ///
    /// # Safety
    /// 1. `comm` was returned by `ncclCommInitRankConfig`/`ncclCommInitRank` of `lib` and has
    ///    not been destroyed or aborted.
    pub unsafe fn async_error(
        lib: &NcclLibrary,
        comm: ncclComm_t,
        what: &'static str,
    ) -> Result<Progress> {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: `comm` is live (contract 1); `state` is writable for the call.
        let code = unsafe { (lib.ncclCommGetAsyncError)(comm, &mut state) };
        check(lib, "ncclCommGetAsyncError", code, String::new)?;
        check_progress(lib, what, state, || {
            "reported by ncclCommGetAsyncError".into()
        })
    }

    /// `ncclCommAbort`: frees the communicator, cancelling whatever it runs.
    ///
    /// # Errors
    /// [`Error::Call`] (the handle is unusable either way).
    ///
    /// # Safety
    /// 1. `comm` is live as in [`async_error`], or null (NCCL accepts null);
    /// 2. it is not used again.
    pub unsafe fn abort(lib: &NcclLibrary, comm: ncclComm_t) -> Result<()> {
        // SAFETY: contract 1 and 2.
        let code = unsafe { (lib.ncclCommAbort)(comm) };
        teardown(lib, "ncclCommAbort", code)
    }

    /// `ncclCommDestroy`: waits for the communicator's work, then frees it.
    ///
    /// # Errors
    /// [`Error::Call`] (the handle is unusable either way).
    ///
    /// # Safety
    /// As [`abort`].
    pub unsafe fn destroy(lib: &NcclLibrary, comm: ncclComm_t) -> Result<()> {
        // SAFETY: contract 1 and 2 of `abort`.
        let code = unsafe { (lib.ncclCommDestroy)(comm) };
        teardown(lib, "ncclCommDestroy", code)
    }

    /// A teardown call's code: `ncclInProgress` (which a non-blocking communicator may return)
    /// counts as done, as the handle can no longer be polled and the library finishes the
    /// teardown itself.
    fn teardown(lib: &NcclLibrary, call: &'static str, code: ncclResult_t) -> Result<()> {
        if check_progress(lib, call, code, String::new)? == Progress::InProgress {
            tracing::debug!(call, "returned ncclInProgress");
        }
        Ok(())
    }
}

/// Group calls.
pub mod group {
    use super::*;

    /// `ncclGroupStart`.
    ///
    /// # Errors
    /// [`Error::Call`].
    pub fn start(lib: &NcclLibrary) -> Result<()> {
        // SAFETY: takes no arguments; only opens a (thread-local) group.
        let code = unsafe { (lib.ncclGroupStart)() };
        check(lib, "ncclGroupStart", code, String::new)
    }

    /// `ncclGroupEnd`: issues the group's operations. On a non-blocking communicator it may
    /// return [`Progress::InProgress`].
    ///
    /// # Errors
    /// [`Error::Call`].
    pub fn end(lib: &NcclLibrary) -> Result<Progress> {
        // SAFETY: takes no arguments; closes the group `start` opened (the safe layer pairs them).
        let code = unsafe { (lib.ncclGroupEnd)() };
        check_progress(lib, "ncclGroupEnd", code, String::new)
    }
}

/// Point-to-point calls, in bytes (`ncclUint8`).
pub mod p2p {
    use super::*;
    use std::ffi::c_void;

    /// `ncclSend` of `bytes` bytes at `buf` to `peer`, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::Call`].
    ///
    /// # Safety
    /// 1. `comm` is live as in [`comm::async_error`];
    /// 2. `buf` points to `bytes` bytes the communicator's device can read (device memory of its
    ///    GPU, or memory NCCL accepts as such), valid and unchanged until the operation completes
    ///    on `stream`;
    /// 3. `stream` is a stream of the communicator's device and context (null: the legacy
    ///    default stream), alive until the operation completes.
    pub unsafe fn send(
        lib: &NcclLibrary,
        comm: ncclComm_t,
        buf: *const c_void,
        bytes: usize,
        peer: c_int,
        stream: sys::cudaStream_t,
    ) -> Result<Progress> {
        // SAFETY: contracts 1 to 3.
        let code = unsafe {
            (lib.ncclSend)(
                buf,
                bytes,
                sys::ncclDataType_t::ncclUint8,
                peer,
                comm,
                stream,
            )
        };
        check_progress(lib, "ncclSend", code, || {
            format!("{bytes} bytes to rank {peer}")
        })
    }

    /// `ncclRecv` of `bytes` bytes into `buf` from `peer`, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::Call`].
    ///
    /// # Safety
    /// As [`send`], with `buf` writable and not read or written by anyone else until the
    /// operation completes on `stream`.
    pub unsafe fn recv(
        lib: &NcclLibrary,
        comm: ncclComm_t,
        buf: *mut c_void,
        bytes: usize,
        peer: c_int,
        stream: sys::cudaStream_t,
    ) -> Result<Progress> {
        // SAFETY: contracts 1 to 3 of `send`, `buf` writable.
        let code = unsafe {
            (lib.ncclRecv)(
                buf,
                bytes,
                sys::ncclDataType_t::ncclUint8,
                peer,
                comm,
                stream,
            )
        };
        check_progress(lib, "ncclRecv", code, || {
            format!("{bytes} bytes from rank {peer}")
        })
    }
}
