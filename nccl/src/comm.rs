//! The safe layer: [`UniqueId`] (128 bytes, broadcast over MPI), [`Communicator`] (one rank
//! of an NCCL communicator, created non-blocking and bounded by a time-out) and [`Group`]
//! (the send and receive calls between `ncclGroupStart` and `ncclGroupEnd`).
//!
//! ## Non-blocking, bounded
//! Every communicator is created with `config.blocking = 0`, so no NCCL call blocks the
//! calling thread: `ncclCommInitRankConfig` and `ncclGroupEnd` may return `ncclInProgress`,
//! and this layer polls `ncclCommGetAsyncError` until it says `ncclSuccess`, reports an error,
//! or the communicator's time-out passes. On an error or a time-out the communicator is
//! aborted (`ncclCommAbort`) at once, which cancels what it was waiting for, and every later
//! call returns [`Error::Aborted`] naming the first error. A peer that never arrives is
//! therefore a [`Error::Timeout`] within the time-out (plus one poll), never a hang.
//!
//! ## Completion
//! A group that returned `Ok` has *issued* its operations on their streams; their completion
//! is stream-ordered, as any NCCL operation's, and the caller waits on the stream. While it
//! waits it should poll [`Communicator::wait_for`] (or [`Communicator::poll_async_error`]), so
//! that a peer failing mid-transfer is reported and the stream released by the abort.
//!
//! ## Threads
//! A [`Communicator`] is `Send`, not `Sync`: NCCL allows one thread at a time per communicator,
//! and groups are per thread (`ncclGroupStart`/`End` nest on the calling thread).
//!
//! ## Teardown
//! `Drop` destroys a healthy communicator (`ncclCommDestroy`, which waits for its work) and
//! never panics: an error is logged through `tracing`. [`Communicator::close`] does the same
//! and returns the error. A failed communicator was already aborted.

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::traits::{Communicator as MpiCommunicator, CommunicatorCollectives, Root};

use crate::error::{Error, Result};
use crate::library::Nccl;
use crate::result::{self, Progress};
use crate::sys;

/// The 128 bytes that name a communicator (`ncclUniqueId`): made by one rank, handed to every
/// other rank (over MPI: [`UniqueId::broadcast`]) before [`Communicator::init`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId([u8; 128]);

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An address and a magic number: show only the start.
        write!(f, "UniqueId({:02x?}..)", &self.0[..8])
    }
}

/// What the root broadcasts: a flag (1: the id follows), the id, and when the flag is 0 the
/// root's error text, NUL-padded.
const BROADCAST_BYTES: usize = 1 + 128 + 512;

impl UniqueId {
    /// A new id from `ncclGetUniqueId`.
    ///
    /// # Errors
    /// [`Error::Call`].
    ///
    /// Vendor: ncclGetUniqueId.
    pub fn new(nccl: &Nccl) -> Result<UniqueId> {
        let id = result::unique_id(nccl.sys())?;
        Ok(UniqueId(id.internal.map(|c| c as u8)))
    }

    /// An id received from another rank.
    pub fn from_bytes(bytes: [u8; 128]) -> UniqueId {
        UniqueId(bytes)
    }

    /// The id's bytes, to hand to other ranks.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }

    fn to_sys(self) -> sys::ncclUniqueId {
        sys::ncclUniqueId {
            internal: self.0.map(|b| b as std::ffi::c_char),
        }
    }

    /// Makes an id on `root` and broadcasts it over `comm` (collective: every rank of `comm`
    /// calls it with the same `root`). When the root cannot make one, every rank returns an
    /// error (the root its own, the others [`Error::PeerFailed`] with the root's text): no rank
    /// is left waiting.
    ///
    /// # Errors
    /// [`Error::Call`] on the root, [`Error::PeerFailed`] elsewhere, as above;
    /// [`Error::InvalidArgument`] on every rank when `root` is not a rank of `comm`.
    ///
    /// Vendor: ncclGetUniqueId. MPI standard 6.4 (MPI_Bcast).
    pub fn broadcast<C: MpiCommunicator>(nccl: &Nccl, comm: &C, root: i32) -> Result<UniqueId> {
        if root < 0 || root >= comm.size() {
            return Err(Error::InvalidArgument(format!(
                "root {root} is not a rank of a communicator of {} ranks",
                comm.size()
            )));
        }
        let mut message = [0u8; BROADCAST_BYTES];
        let mut local = None;
        if comm.rank() == root {
            match UniqueId::new(nccl) {
                Ok(id) => {
                    message[0] = 1;
                    message[1..129].copy_from_slice(id.as_bytes());
                }
                Err(e) => {
                    let text = e.to_string();
                    let n = text.len().min(BROADCAST_BYTES - 129);
                    message[129..129 + n].copy_from_slice(&text.as_bytes()[..n]);
                    local = Some(e);
                }
            }
        }
        comm.process_at_rank(root).broadcast_into(&mut message[..]);
        if let Some(e) = local {
            return Err(e);
        }
        if message[0] != 1 {
            let text = &message[129..];
            let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            return Err(Error::PeerFailed {
                step: "ncclGetUniqueId",
                ranks: vec![root],
                detail: String::from_utf8_lossy(&text[..end]).into_owned(),
                local: None,
            });
        }
        let mut bytes = [0u8; 128];
        bytes.copy_from_slice(&message[1..129]);
        Ok(UniqueId(bytes))
    }
}

/// Whether a communicator may still take work.
#[derive(Debug)]
enum State {
    /// Created and not failed.
    Healthy,
    /// Aborted after this error (the handle is gone).
    Failed(String),
}

/// What [`Communicator::poll_async_error`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncState {
    /// No operation in progress, no error.
    Idle,
    /// A non-blocking operation (creation, a group) is still being issued.
    InProgress,
}

/// One rank of an NCCL (or RCCL) communicator.
#[derive(Debug)]
pub struct Communicator {
    nccl: Arc<Nccl>,
    comm: sys::ncclComm_t,
    rank: i32,
    nranks: i32,
    timeout: Duration,
    state: State,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time (NCCL: "Thread
// Safety"); `Communicator` is not `Sync` and every call takes `&mut self` or `&self` behind that
// single owner.
unsafe impl Send for Communicator {}

impl Communicator {
    /// Creates rank `rank` of `nranks` of the communicator `id` names: collective over the
    /// `nranks` processes that call it with the same id. Non-blocking creation
    /// (`ncclCommInitRankConfig`, `blocking = 0`), polled until connected; `timeout` bounds it
    /// and every later wait of this communicator ([`Communicator::set_timeout`] changes it).
    ///
    /// Every rank should call it on its own device (the current CUDA/HIP device of the calling
    /// thread is the communicator's).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a rank out of range; [`Error::Call`] when the library
    /// refuses or reports an error while connecting; [`Error::Timeout`] when the other ranks
    /// have not connected within `timeout` (a rank that failed or never came). On any error the
    /// half-made communicator has been aborted.
    ///
    /// Vendor: ncclCommInitRankConfig, ncclCommGetAsyncError, ncclCommAbort.
    pub fn init(
        nccl: &Arc<Nccl>,
        nranks: usize,
        rank: usize,
        id: &UniqueId,
        timeout: Duration,
    ) -> Result<Communicator> {
        let (Ok(n), Ok(r)) = (c_int::try_from(nranks), c_int::try_from(rank)) else {
            return Err(Error::InvalidArgument(format!(
                "rank {rank} of {nranks}: too large for NCCL"
            )));
        };
        if r >= n {
            return Err(Error::InvalidArgument(format!(
                "rank {rank} is not below the number of ranks, {nranks}"
            )));
        }
        let mut config = sys::config_initializer();
        config.blocking = 0;
        let lib = nccl.sys();
        let started = Instant::now();
        let (comm, progress) =
            match result::comm::init_rank_config(lib, n, id.to_sys(), r, &mut config) {
                Ok(made) => made,
                Err((e, comm)) => {
                    if !comm.is_null() {
                        // SAFETY: `comm` is the handle NCCL returned with the error, used no more.
                        if let Err(abort) = unsafe { result::comm::abort(lib, comm) } {
                            tracing::warn!(%abort, "aborting a communicator whose creation failed");
                        }
                    }
                    return Err(e);
                }
            };
        let mut made = Communicator {
            nccl: Arc::clone(nccl),
            comm,
            rank: r,
            nranks: n,
            timeout,
            state: State::Healthy,
        };
        if progress == Progress::InProgress {
            let what = format!("ncclCommInitRankConfig (rank {r} of {n}) to connect");
            made.wait_since(started, &what, "ncclCommInitRankConfig", || true)?;
        }
        Ok(made)
    }

    /// [`UniqueId::broadcast`] from rank 0 of `comm`, [`Communicator::init`] with `comm`'s rank
    /// and size, then an agreement (MPI_Allgather of each rank's outcome), so that every rank
    /// returns an error when any rank failed, and the communicator exists on all ranks or on
    /// none. Collective over `comm`.
    ///
    /// # Errors
    /// As [`UniqueId::broadcast`] and [`Communicator::init`] on the rank where it happened;
    /// [`Error::PeerFailed`] on every rank when any rank failed (naming them all, with this
    /// rank's own error inside where it failed too).
    ///
    /// MPI standard 6.4 (MPI_Bcast), 6.7 (MPI_Allgather).
    pub fn from_mpi<C: MpiCommunicator>(
        nccl: &Arc<Nccl>,
        comm: &C,
        timeout: Duration,
    ) -> Result<Communicator> {
        let id = UniqueId::broadcast(nccl, comm, 0)?;
        let local = Communicator::init(
            nccl,
            comm.size() as usize,
            comm.rank() as usize,
            &id,
            timeout,
        );
        let mine = u8::from(local.is_err());
        let mut all = vec![0u8; comm.size() as usize];
        comm.all_gather_into(&mine, &mut all[..]);
        let failed: Vec<i32> = (0..comm.size()).filter(|&r| all[r as usize] != 0).collect();
        if failed.is_empty() {
            return local;
        }
        let local = match local {
            Ok(healthy) => {
                if let Err(e) = healthy.abort() {
                    tracing::warn!(%e, "aborting this rank's communicator after a peer failed");
                }
                None
            }
            Err(e) => Some(Box::new(e)),
        };
        Err(Error::PeerFailed {
            step: "communicator set-up",
            ranks: failed,
            detail: String::new(),
            local,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.nranks as usize
    }

    /// The library it runs on.
    pub fn nccl(&self) -> &Arc<Nccl> {
        &self.nccl
    }

    /// The bound on each wait (creation, a group's issue, [`Communicator::wait_for`]).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes the bound on later waits.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The raw handle, for calls this crate does not wrap; null once the communicator failed.
    /// The handle stays owned by `self`: never destroy or abort it.
    pub fn as_raw(&self) -> sys::ncclComm_t {
        self.comm
    }

    /// `Err(Aborted)` once the communicator has failed.
    fn usable(&self) -> Result<()> {
        match &self.state {
            State::Healthy => Ok(()),
            State::Failed(first) => Err(Error::Aborted(first.clone())),
        }
    }

    /// Aborts the communicator after `error` and remembers it; returns it.
    fn fail(&mut self, error: Error) -> Error {
        if matches!(self.state, State::Healthy) {
            let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
            // SAFETY: `comm` is this communicator's live handle, taken out so it is used no more.
            if let Err(e) = unsafe { result::comm::abort(self.nccl.sys(), comm) } {
                tracing::warn!(%e, rank = self.rank, "aborting after: {error}");
            }
            self.state = State::Failed(error.to_string());
        }
        error
    }

    /// One `ncclCommGetAsyncError`: whether an operation is still being issued, or an error.
    ///
    /// # Errors
    /// [`Error::Call`] for an asynchronous error (the communicator is then aborted);
    /// [`Error::Aborted`] when it already was.
    ///
    /// Vendor: ncclCommGetAsyncError.
    pub fn poll_async_error(&mut self) -> Result<AsyncState> {
        self.usable()?;
        // SAFETY: `self.comm` is live while the state is Healthy (checked above).
        match unsafe { result::comm::async_error(self.nccl.sys(), self.comm, "asynchronous error") }
        {
            Ok(Progress::Done) => Ok(AsyncState::Idle),
            Ok(Progress::InProgress) => Ok(AsyncState::InProgress),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Polls `done` (e.g. a stream query) and the communicator's asynchronous error until
    /// `done` returns true with the communicator idle, an error, or the time-out.
    ///
    /// # Errors
    /// [`Error::Call`] for an asynchronous error; [`Error::Timeout`] naming `what` when the
    /// time-out passes (the communicator is aborted in both cases, which releases work it had
    /// queued on streams); [`Error::Aborted`] when it already was.
    ///
    /// Vendor: ncclCommGetAsyncError, ncclCommAbort.
    pub fn wait_for(&mut self, what: &str, done: impl FnMut() -> bool) -> Result<()> {
        self.usable()?;
        self.wait_since(Instant::now(), what, "asynchronous error", done)
    }

    fn wait_since(
        &mut self,
        since: Instant,
        what: &str,
        call: &'static str,
        mut done: impl FnMut() -> bool,
    ) -> Result<()> {
        let deadline = since + self.timeout;
        let mut polls = 0u32;
        loop {
            // SAFETY: `self.comm` is live: callers checked `usable`, and `fail` (which nulls it)
            // ends the loop.
            match unsafe { result::comm::async_error(self.nccl.sys(), self.comm, call) } {
                Ok(Progress::Done) if done() => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(self.fail(e)),
            }
            if Instant::now() >= deadline {
                let e = Error::Timeout {
                    waited_for: what.to_string(),
                    after: self.timeout,
                };
                return Err(self.fail(e));
            }
            // Spin briefly (a group's issue usually takes microseconds), then sleep so that a
            // long wait does not take a core from the ranks it waits for.
            polls += 1;
            if polls < 200 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// Runs `f` between `ncclGroupStart` and `ncclGroupEnd`, so that its sends and receives
    /// are issued together (and cannot deadlock on each other's order), then waits (bounded)
    /// until `ncclGroupEnd` has issued them. The operations complete on their streams later
    /// (see the module's documentation).
    ///
    /// When `f` fails, the group is still ended (groups must balance) and the communicator is
    /// aborted: part of a group may have been issued, which its peers cannot match.
    ///
    /// # Errors
    /// `f`'s error; [`Error::Call`] from `ncclGroupEnd` or an asynchronous error;
    /// [`Error::Timeout`] when issuing takes longer than the time-out; [`Error::Aborted`] when
    /// the communicator already failed. The communicator is aborted on each.
    ///
    /// Vendor: ncclGroupStart, ncclGroupEnd, ncclCommGetAsyncError.
    pub fn group<R>(&mut self, f: impl FnOnce(&mut Group<'_>) -> Result<R>) -> Result<R> {
        self.usable()?;
        let lib = self.nccl.sys();
        let started = Instant::now();
        if let Err(e) = result::group::start(lib) {
            return Err(self.fail(e));
        }
        let out = f(&mut Group {
            nccl: &self.nccl,
            comm: self.comm,
            nranks: self.nranks,
        });
        let end = result::group::end(lib);
        match (out, end) {
            (Ok(r), Ok(Progress::Done)) => Ok(r),
            (Ok(r), Ok(Progress::InProgress)) => {
                let what = format!(
                    "ncclGroupEnd (rank {} of {}) to issue the group's operations",
                    self.rank, self.nranks
                );
                self.wait_since(started, &what, "ncclGroupEnd", || true)?;
                Ok(r)
            }
            (Err(e), _) | (Ok(_), Err(e)) => Err(self.fail(e)),
        }
    }

    /// Aborts the communicator (`ncclCommAbort`): cancels its work without waiting for peers.
    ///
    /// # Errors
    /// [`Error::Call`] when the abort itself fails (the handle is gone either way).
    ///
    /// Vendor: ncclCommAbort.
    pub fn abort(mut self) -> Result<()> {
        let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
        if comm.is_null() {
            return Ok(());
        }
        // SAFETY: `comm` is this communicator's live handle, taken out so Drop does not use it.
        unsafe { result::comm::abort(self.nccl.sys(), comm) }
    }

    /// Destroys the communicator (`ncclCommDestroy`: waits for its work, then frees it),
    /// returning what `Drop` would only log.
    ///
    /// # Errors
    /// [`Error::Call`]; [`Error::Aborted`] when it had failed (and was aborted then).
    ///
    /// Vendor: ncclCommDestroy.
    pub fn close(mut self) -> Result<()> {
        self.usable()?;
        let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
        // SAFETY: `comm` is live (usable), taken out so Drop does not use it.
        unsafe { result::comm::destroy(self.nccl.sys(), comm) }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
        if comm.is_null() {
            return;
        }
        // SAFETY: a non-null handle is live (failures null it after aborting) and is used no
        // more.
        if let Err(e) = unsafe { result::comm::destroy(self.nccl.sys(), comm) } {
            tracing::warn!(%e, rank = self.rank, "destroying an NCCL communicator");
        }
    }
}

/// The operations of one group, issued together when [`Communicator::group`]'s closure
/// returns. Sizes are in bytes (`ncclUint8`); the peer must post the matching call with the
/// same size, and operations between one pair of ranks match in the order they are posted.
#[derive(Debug)]
pub struct Group<'c> {
    nccl: &'c Nccl,
    comm: sys::ncclComm_t,
    nranks: c_int,
}

impl Group<'_> {
    fn peer(&self, peer: usize) -> Result<c_int> {
        match c_int::try_from(peer) {
            Ok(p) if p < self.nranks => Ok(p),
            _ => Err(Error::InvalidArgument(format!(
                "peer {peer} is not a rank of a communicator of {} ranks",
                self.nranks
            ))),
        }
    }

    /// Queues a send of `bytes` bytes at `buf` to `peer`, on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a peer out of range; [`Error::Call`].
    ///
    /// # Safety
    /// 1. `buf` points to `bytes` bytes that the communicator's device can read (device memory
    ///    of its GPU; host memory only for a stand-in library that says so);
    /// 2. they stay valid and unchanged until the send has completed on `stream` (the caller
    ///    waits on the stream, or on an event recorded on it after the group);
    /// 3. `stream` is a stream (`cudaStream_t`, or `hipStream_t` with RCCL) of the
    ///    communicator's device, alive until then; null is the legacy default stream.
    ///
    /// Vendor: ncclSend.
    pub unsafe fn send(
        &mut self,
        buf: *const c_void,
        bytes: usize,
        peer: usize,
        stream: *mut c_void,
    ) -> Result<()> {
        let peer = self.peer(peer)?;
        // SAFETY: the communicator is live for the group's borrow; contracts 1 to 3 are the
        // caller's.
        unsafe { result::p2p::send(self.nccl.sys(), self.comm, buf, bytes, peer, stream) }
            .map(|_| ())
    }

    /// Queues a receive of `bytes` bytes into `buf` from `peer`, on `stream`.
    ///
    /// # Errors
    /// As [`Group::send`].
    ///
    /// # Safety
    /// As [`Group::send`], with `buf` writable and neither read nor written by anyone else until
    /// the receive has completed on `stream`.
    ///
    /// Vendor: ncclRecv.
    pub unsafe fn recv(
        &mut self,
        buf: *mut c_void,
        bytes: usize,
        peer: usize,
        stream: *mut c_void,
    ) -> Result<()> {
        let peer = self.peer(peer)?;
        // SAFETY: as in `send`; `buf` writable (the caller's contract).
        unsafe { result::p2p::recv(self.nccl.sys(), self.comm, buf, bytes, peer, stream) }
            .map(|_| ())
    }
}
