//! Host-staged MPI: block buffers in pinned host memory handed to MPI point-to-point calls.
//!
//! The transport works on its own duplicate of the job's communicator with `MPI_ERRORS_RETURN`,
//! so every call's return code reaches us and is turned into [`Error::Mpi`] naming the call and
//! the block; the job's own communicator keeps MPI's default (fatal) handler. Requests live in
//! two arrays indexed by block (receives, sends), as the thesis's `HaloLayer` keeps them, each
//! beside the region it uses, whose share of the allocation keeps the memory alive until the
//! request completed.
//!
//! Nothing blocks inside MPI: a blocking send is `MPI_Isend` completed by a polled `MPI_Test`
//! loop (MPI 3.1 section 3.7.3: "a blocking send ... is equivalent to a nonblocking send
//! followed by a wait"), waits for all are polled `MPI_Testall`, the barrier is `MPI_Ibarrier`
//! and `MPI_Test`. So every wait can give up at its deadline with [`Error::Timeout`] naming the
//! blocks still pending, and the caller decides what to do; the library never ends the process.
//!
//! Not thread-safe: one thread drives a transport (the MPI library is initialized
//! `MPI_THREAD_SINGLE` or better).

// The MPI bridge: raw MPI calls on raw buffers, each with its SAFETY argument.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::{AsRaw, FromRaw};
use mpi::topology::{Communicator, SimpleCommunicator};

use super::{Capabilities, HostRegion, HostTransport, Transport};
use crate::backend::{Backend, Coherence};
use crate::error::{Error, Result};
use crate::exchange::ExchangeBuffers;
use crate::pattern::RankPattern;
use crate::transport::TransportKind;

/// One direction's requests, one slot per block, each with the region it uses while pending.
struct Requests {
    raw: Vec<ffi::MPI_Request>,
    regions: Vec<Option<HostRegion>>,
    /// The peer rank of each pending request, for time-out messages.
    peers: Vec<i32>,
    /// The MPI tag of each slot: the block itself, unless prepared with other tags.
    tags: Vec<c_int>,
}

impl Requests {
    fn new(tags: Vec<c_int>) -> Requests {
        let blocks = tags.len();
        Requests {
            raw: vec![null_request(); blocks],
            regions: vec![None; blocks],
            peers: vec![-1; blocks],
            tags,
        }
    }

    fn pending(&self) -> Vec<usize> {
        (0..self.raw.len())
            .filter(|&b| self.raw[b] != null_request())
            .collect()
    }

    /// Checks that block `block`'s slot exists and is free.
    fn free_slot(&self, block: usize, what: &str) -> Result<()> {
        match self.raw.get(block) {
            Some(r) if *r == null_request() => Ok(()),
            Some(_) => Err(Error::Internal(format!(
                "block {block}: a {what} is already pending"
            ))),
            None => Err(Error::Internal(format!(
                "block {block} is beyond the {} blocks the transport was prepared for",
                self.raw.len()
            ))),
        }
    }

    /// Forgets the regions of requests MPI completed (their handles are null again).
    fn release_completed(&mut self) {
        for (raw, region) in self.raw.iter().zip(self.regions.iter_mut()) {
            if *raw == null_request() {
                *region = None;
            }
        }
    }

    fn describe(&self, blocks: &[usize], what: &str, peer: &str) -> String {
        let list: Vec<String> = blocks
            .iter()
            .map(|&b| format!("{b} ({peer} rank {})", self.peers[b]))
            .collect();
        format!("the {what} of blocks [{}]", list.join(", "))
    }
}

pub(crate) fn null_request() -> ffi::MPI_Request {
    // SAFETY: reading a predefined MPI constant.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// Host-staged MPI point-to-point transport.
pub struct MpiTransport {
    /// Freed on drop, unless a collective on it timed out and is still pending (then leaked:
    /// MPI would progress the pending request on a freed communicator).
    comm: ManuallyDrop<SimpleCommunicator>,
    /// A barrier timed out and its request is still pending.
    collective_pending: bool,
    rank: i32,
    size: i32,
    recvs: Requests,
    sends: Requests,
    /// How long dropping the transport may wait for cancelled requests to complete.
    drain_timeout: Duration,
}

impl MpiTransport {
    /// Creates a transport over a duplicate of `comm`, returning errors instead of aborting.
    /// `drain_timeout` bounds how long dropping it waits for requests it had to cancel.
    ///
    /// # Errors
    /// [`Error::Mpi`] if the error handler cannot be set.
    pub fn new(comm: &SimpleCommunicator, drain_timeout: Duration) -> Result<MpiTransport> {
        let comm = comm.duplicate();
        // SAFETY: comm is a valid communicator we own; RSMPI_ERRORS_RETURN is a predefined handler.
        let code = unsafe { ffi::MPI_Comm_set_errhandler(comm.as_raw(), ffi::RSMPI_ERRORS_RETURN) };
        check("MPI_Comm_set_errhandler", code, || {
            "making the transport's communicator return errors".into()
        })?;
        Ok(MpiTransport {
            rank: comm.rank(),
            size: comm.size(),
            comm: ManuallyDrop::new(comm),
            collective_pending: false,
            recvs: Requests::new(Vec::new()),
            sends: Requests::new(Vec::new()),
            drain_timeout,
        })
    }

    /// The transport's communicator (its own duplicate), for the exchange's other collectives.
    pub(crate) fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Prepares request slots for `blocks` blocks, each message tagged with its block.
    ///
    /// # Errors
    /// [`Error::Internal`] while requests are pending; [`Error::InvalidInput`] for more
    /// blocks than MPI can count.
    pub fn prepare(&mut self, blocks: usize) -> Result<()> {
        if !self.recvs.pending().is_empty() || !self.sends.pending().is_empty() {
            return Err(Error::Internal(
                "prepare called with requests pending".into(),
            ));
        }
        let blocks = c_int::try_from(blocks).map_err(|_| too_many(blocks))?;
        self.prepare_tagged((0..blocks).collect(), (0..blocks).collect())
    }

    /// Prepares one receive slot per entry of `recv_tags` and one send slot per entry of
    /// `send_tags`, each message carrying its slot's tag (the library's halo exchange: slots
    /// are messages, tags say which side of the domain a message is for).
    ///
    /// # Errors
    /// [`Error::Internal`] while requests are pending.
    pub fn prepare_tagged(&mut self, recv_tags: Vec<c_int>, send_tags: Vec<c_int>) -> Result<()> {
        if !self.recvs.pending().is_empty() || !self.sends.pending().is_empty() {
            return Err(Error::Internal(
                "prepare called with requests pending".into(),
            ));
        }
        self.recvs = Requests::new(recv_tags);
        self.sends = Requests::new(send_tags);
        Ok(())
    }

    fn count(region: &HostRegion, block: usize) -> Result<c_int> {
        c_int::try_from(region.elems()).map_err(|_| {
            Error::InvalidInput(format!(
                "block {block} has {} elements, more than one MPI message can carry",
                region.elems()
            ))
        })
    }

    /// `MPI_Isend` of block `block` into its send slot.
    fn start_send(&mut self, block: usize, region: HostRegion, dest: i32) -> Result<()> {
        self.sends.free_slot(block, "send")?;
        let count = Self::count(&region, block)?;
        // SAFETY: region is valid for `count` f64 reads until the request completes: the slot
        // keeps the region (and its allocation) until then; the request slot is ours and null.
        let code = unsafe {
            ffi::MPI_Isend(
                region.as_ptr().cast::<c_void>(),
                count,
                ffi::RSMPI_DOUBLE,
                dest,
                self.sends.tags[block],
                self.comm.as_raw(),
                &mut self.sends.raw[block],
            )
        };
        check("MPI_Isend", code, || {
            format!("starting the send of block {block} to rank {dest}")
        })?;
        self.sends.regions[block] = Some(region);
        self.sends.peers[block] = dest;
        Ok(())
    }

    /// Polls `MPI_Testsome` over one direction's requests until all completed or `deadline`
    /// (`MPI_Waitall` that can give up). Testsome rather than Testall: requests complete one by
    /// one, so a time-out names exactly the blocks that never arrived.
    fn test_all_until(&mut self, sends: bool, deadline: Instant) -> Result<()> {
        let rank = self.rank;
        let since = Instant::now();
        let requests = if sends {
            &mut self.sends
        } else {
            &mut self.recvs
        };
        let n = c_int::try_from(requests.raw.len()).map_err(|_| too_many(requests.raw.len()))?;
        let mut indices: Vec<c_int> = vec![0; requests.raw.len()];
        let what = if sends { "sends" } else { "receives" };
        while !requests.pending().is_empty() {
            let mut completed: c_int = 0;
            // SAFETY: raw holds `n` valid or null requests; indices has room for n entries;
            // statuses are ignored. Buffers of pending requests are alive: their regions are
            // kept beside them until they complete.
            let code = unsafe {
                ffi::MPI_Testsome(
                    n,
                    requests.raw.as_mut_ptr(),
                    &mut completed,
                    indices.as_mut_ptr(),
                    ffi::RSMPI_STATUSES_IGNORE,
                )
            };
            check("MPI_Testsome", code, || {
                format!("rank {rank} waiting for {what}")
            })?;
            requests.release_completed();
            if completed > 0 {
                continue;
            }
            if Instant::now() >= deadline {
                let pending = requests.pending();
                let described = if sends {
                    requests.describe(&pending, "sends", "to")
                } else {
                    requests.describe(&pending, "receives", "from")
                };
                return Err(Error::Timeout {
                    rank: Some(rank),
                    what: format!("in MPI_Waitall (polled) for {described}"),
                    after: deadline.saturating_duration_since(since),
                });
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// Cancels every pending request and completes it (MPI 3.1 section 3.8.4: a cancelled
    /// request must still be completed), within `deadline`. Returns what could not be
    /// completed or failed; the regions of uncompleted requests are leaked, never freed, so
    /// that a receive MPI matched after all can never write into freed memory.
    fn cancel_and_complete(&mut self, deadline: Instant) -> Vec<String> {
        let mut problems = Vec::new();
        for (requests, what) in [(&mut self.recvs, "receive"), (&mut self.sends, "send")] {
            for block in requests.pending() {
                // SAFETY: the request is valid and pending.
                let code = unsafe { ffi::MPI_Cancel(&mut requests.raw[block]) };
                if let Err(e) = check("MPI_Cancel", code, || {
                    format!("cancelling the {what} of block {block}")
                }) {
                    problems.push(e.to_string());
                }
            }
            for block in requests.pending() {
                let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
                let completed = loop {
                    let mut flag: c_int = 0;
                    // SAFETY: the request is valid; status is a valid out-pointer.
                    let code = unsafe {
                        ffi::MPI_Test(&mut requests.raw[block], &mut flag, status.as_mut_ptr())
                    };
                    if let Err(e) = check("MPI_Test", code, || {
                        format!("completing the cancelled {what} of block {block}")
                    }) {
                        problems.push(e.to_string());
                        break false;
                    }
                    if flag != 0 {
                        break true;
                    }
                    if Instant::now() >= deadline {
                        break false;
                    }
                    std::thread::yield_now();
                };
                if completed {
                    requests.regions[block] = None;
                } else {
                    problems.push(format!(
                        "the {what} of block {block} did not complete after MPI_Cancel; its buffer is leaked so MPI can never write into freed memory"
                    ));
                    // Keep the allocation alive for the rest of the process.
                    std::mem::forget(requests.regions[block].take());
                }
            }
        }
        problems
    }
}

/// `MPI_Dims_create(ranks, 3, {0, 0, 0})`: the balanced process grid the MPI library chooses,
/// as `[px, py, pz]` (SPEC 13; [`dims_create`](crate::domain::dims_create) is Open MPI's
/// algorithm in Rust, for plans compiled without MPI).
///
/// # Errors
/// [`Error::Mpi`] with the call's code.
pub fn mpi_dims_create(ranks: c_int) -> Result<[u32; 3]> {
    let mut dims: [c_int; 3] = [0; 3];
    // SAFETY: dims holds the 3 ints MPI_Dims_create reads and writes, all 0 (free to choose);
    // it is called only with MPI initialized (a communicator exists).
    let code = unsafe { ffi::MPI_Dims_create(ranks, 3, dims.as_mut_ptr()) };
    check("MPI_Dims_create", code, || {
        format!("choosing a process grid for {ranks} ranks")
    })?;
    Ok(dims.map(|d| d.max(0) as u32))
}

/// A communicator of the caller's, duplicated (`MPI_Comm_dup`, collective over it): haloport's
/// messages then never match the caller's, and the caller's handle is never freed by
/// haloport. The duplicate keeps the original's topology.
///
/// # Errors
/// [`Error::Mpi`] with the call's code; [`Error::InvalidInput`] for `MPI_COMM_NULL`.
///
/// # Safety
/// 1. `raw` is a valid intra-communicator handle (`MPI_COMM_NULL` is refused), alive for the
///    duration of this call.
/// 2. Every rank of `raw` makes this call (it is collective).
///
/// MPI standard 4.0 section 7.4.2 (`MPI_Comm_dup`).
pub unsafe fn duplicate_raw(raw: ffi::MPI_Comm) -> Result<SimpleCommunicator> {
    // SAFETY: reading a predefined handle.
    if raw == unsafe { ffi::RSMPI_COMM_NULL } {
        return Err(Error::InvalidInput(
            "the communicator is MPI_COMM_NULL; pass a communicator this rank belongs to".into(),
        ));
    }
    let mut dup = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    // SAFETY: raw is valid and every rank calls (contract); dup is an out-parameter.
    let code = unsafe { ffi::MPI_Comm_dup(raw, dup.as_mut_ptr()) };
    check("MPI_Comm_dup", code, || {
        "duplicating the caller's communicator".into()
    })?;
    // SAFETY: MPI_Comm_dup succeeded, so dup holds a new intra-communicator that we own (not
    // the world or self handle), freed when the SimpleCommunicator drops.
    Ok(unsafe { SimpleCommunicator::from_raw(dup.assume_init()) })
}

/// A communicator's Cartesian topology: its dimensions, periodicity and this rank's
/// coordinates, as `MPI_Cart_get` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CartesianTopology {
    /// Processes per dimension.
    pub dims: Vec<i32>,
    /// Periodicity per dimension.
    pub periods: Vec<bool>,
    /// This rank's coordinates.
    pub coords: Vec<i32>,
}

/// The Cartesian topology of `comm`, or `None` for a communicator without one.
///
/// # Errors
/// [`Error::InvalidInput`] for a graph topology (haloport follows Cartesian ones only);
/// [`Error::Mpi`] with the call's code.
///
/// MPI standard 4.0 sections 8.5.5 (`MPI_Topo_test`) and 8.5.6 (`MPI_Cartdim_get`,
/// `MPI_Cart_get`).
pub fn cartesian_topology(comm: &SimpleCommunicator) -> Result<Option<CartesianTopology>> {
    let mut kind: c_int = 0;
    // SAFETY: comm is a live communicator; kind is an out-parameter.
    let code = unsafe { ffi::MPI_Topo_test(comm.as_raw(), &mut kind) };
    check("MPI_Topo_test", code, || {
        "reading the communicator's topology".into()
    })?;
    // SAFETY: reading predefined constants.
    let (cart, undefined) = unsafe { (ffi::RSMPI_CART, ffi::RSMPI_UNDEFINED) };
    if kind == undefined {
        return Ok(None);
    }
    if kind != cart {
        return Err(Error::InvalidInput(
            "the communicator has a graph topology; haloport follows Cartesian topologies (MPI_Cart_create) or none".into(),
        ));
    }
    let mut ndims: c_int = 0;
    // SAFETY: as above.
    let code = unsafe { ffi::MPI_Cartdim_get(comm.as_raw(), &mut ndims) };
    check("MPI_Cartdim_get", code, || {
        "reading the Cartesian communicator's dimensions".into()
    })?;
    let n = usize::try_from(ndims).unwrap_or(0);
    let (mut dims, mut periods, mut coords) = (vec![0; n], vec![0; n], vec![0; n]);
    // SAFETY: each array holds ndims ints, as MPI_Cart_get writes.
    let code = unsafe {
        ffi::MPI_Cart_get(
            comm.as_raw(),
            ndims,
            dims.as_mut_ptr(),
            periods.as_mut_ptr(),
            coords.as_mut_ptr(),
        )
    };
    check("MPI_Cart_get", code, || {
        "reading the Cartesian communicator's topology".into()
    })?;
    Ok(Some(CartesianTopology {
        dims,
        periods: periods.into_iter().map(|p| p != 0).collect(),
        coords,
    }))
}

fn too_many(n: usize) -> Error {
    Error::InvalidInput(format!("{n} blocks are more than MPI can count"))
}

impl Transport for MpiTransport {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn capabilities(&self) -> Capabilities {
        TransportKind::Mpi.capabilities()
    }

    fn rank(&self) -> i32 {
        self.rank
    }

    fn size(&self) -> i32 {
        self.size
    }

    fn barrier(&mut self, deadline: Instant) -> Result<()> {
        let waited = ibarrier_until(
            &self.comm,
            self.rank,
            deadline,
            "in MPI_Barrier (polled) at the end of an iteration",
            Duration::ZERO,
        );
        if let Err(Error::Timeout { .. }) = waited {
            // The request stays pending: MPI 3.1 section 5.12 makes freeing or cancelling a
            // nonblocking collective erroneous, and it holds no buffer of ours; its
            // communicator must then outlive it (see `drop`).
            self.collective_pending = true;
        }
        waited
    }
}

/// Polls `request` with `MPI_Test` until it completes or `deadline` passes; a request that
/// times out stays pending, so whatever it names must outlive it.
///
/// # Errors
/// [`Error::Timeout`] of rank `rank` naming `what` (another rank did not arrive); MPI errors.
pub(crate) fn test_until(
    rank: i32,
    request: &mut ffi::MPI_Request,
    deadline: Instant,
    what: &str,
) -> Result<()> {
    test_until_pausing(rank, request, deadline, what, Duration::ZERO)
}

/// A barrier over `comm` (`MPI_Ibarrier`, then [`test_until_pausing`] with `pause`) that gives
/// up at `deadline`; its request is then left pending, so `comm` must outlive it. `rank` is
/// this process's rank in `comm`, for messages.
///
/// # Errors
/// [`Error::Timeout`] naming `what`; MPI errors.
pub(crate) fn ibarrier_until(
    comm: &SimpleCommunicator,
    rank: i32,
    deadline: Instant,
    what: &str,
    pause: Duration,
) -> Result<()> {
    let mut request = null_request();
    // SAFETY: comm is a valid communicator; request is a valid out-pointer; a nonblocking
    // barrier names no buffer.
    let code = unsafe { ffi::MPI_Ibarrier(comm.as_raw(), &mut request) };
    check("MPI_Ibarrier", code, || format!("rank {rank} {what}"))?;
    test_until_pausing(rank, &mut request, deadline, what, pause)
}

/// [`test_until`], sleeping `pause` between tests (a long wait that need not answer within
/// microseconds leaves the CPU to the ranks still working).
///
/// # Errors
/// As [`test_until`].
pub(crate) fn test_until_pausing(
    rank: i32,
    request: &mut ffi::MPI_Request,
    deadline: Instant,
    what: &str,
    pause: Duration,
) -> Result<()> {
    let since = Instant::now();
    loop {
        let mut flag: c_int = 0;
        // SAFETY: request is a valid request of this process, or MPI_REQUEST_NULL.
        let code = unsafe { ffi::MPI_Test(request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        check("MPI_Test", code, || format!("rank {rank} waiting {what}"))?;
        if flag != 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                rank: Some(rank),
                what: format!("{what}: another rank did not arrive"),
                after: deadline.saturating_duration_since(since),
            });
        }
        if pause.is_zero() {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(pause);
        }
    }
}

impl HostTransport for MpiTransport {
    /// Host-staged: the block buffers are pinned host memory, which MPI reads and writes.
    fn register<B: Backend>(
        &mut self,
        backend: &B,
        pattern: &RankPattern,
        coherence: Coherence,
    ) -> Result<ExchangeBuffers<B>> {
        self.prepare(pattern.blocks.len())?;
        ExchangeBuffers::new(backend, pattern, coherence)
    }

    fn post_recv(&mut self, block: usize, region: HostRegion, source: i32) -> Result<()> {
        self.recvs.free_slot(block, "receive")?;
        let count = Self::count(&region, block)?;
        let tag = self.recvs.tags[block];
        // SAFETY: region is valid for `count` f64 writes until the request completes: the slot
        // keeps the region (and its allocation) until then; the request slot is ours and null.
        let code = unsafe {
            ffi::MPI_Irecv(
                region.as_ptr().cast::<c_void>(),
                count,
                ffi::RSMPI_DOUBLE,
                source,
                tag,
                self.comm.as_raw(),
                &mut self.recvs.raw[block],
            )
        };
        check("MPI_Irecv", code, || {
            format!("posting the receive of block {block} from rank {source}")
        })?;
        self.recvs.regions[block] = Some(region);
        self.recvs.peers[block] = source;
        Ok(())
    }

    fn send(
        &mut self,
        block: usize,
        region: HostRegion,
        dest: i32,
        deadline: Instant,
    ) -> Result<()> {
        let since = Instant::now();
        self.start_send(block, region, dest)?;
        let rank = self.rank;
        loop {
            let mut flag: c_int = 0;
            // SAFETY: the request is valid or null; the region is kept beside it.
            let code = unsafe {
                ffi::MPI_Test(
                    &mut self.sends.raw[block],
                    &mut flag,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            check("MPI_Test", code, || {
                format!("sending block {block} to rank {dest}")
            })?;
            if flag != 0 {
                self.sends.regions[block] = None;
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    rank: Some(rank),
                    what: format!("in MPI_Send (polled) of block {block} to rank {dest}"),
                    after: deadline.saturating_duration_since(since),
                });
            }
            std::hint::spin_loop();
        }
    }

    fn isend(&mut self, block: usize, region: HostRegion, dest: i32) -> Result<()> {
        self.start_send(block, region, dest)
    }

    fn wait_recvs(&mut self, deadline: Instant) -> Result<()> {
        self.test_all_until(false, deadline)
    }

    fn test_any_recv(&mut self) -> Result<Option<usize>> {
        if self.pending_recvs() == 0 {
            return Ok(None);
        }
        let n =
            c_int::try_from(self.recvs.raw.len()).map_err(|_| too_many(self.recvs.raw.len()))?;
        let mut index: c_int = 0;
        let mut flag: c_int = 0;
        // SAFETY: raw holds `n` valid or null requests; index and flag are valid out-pointers.
        let code = unsafe {
            ffi::MPI_Testany(
                n,
                self.recvs.raw.as_mut_ptr(),
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
            let block = index as usize;
            self.recvs.regions[block] = None;
            return Ok(Some(block));
        }
        Ok(None)
    }

    fn pending_recvs(&self) -> usize {
        self.recvs.pending().len()
    }

    fn wait_sends(&mut self, deadline: Instant) -> Result<()> {
        self.test_all_until(true, deadline)
    }
}

impl Drop for MpiTransport {
    /// Requests still pending here belong to an exchange that failed. They are cancelled and
    /// completed within the drain time-out; what fails is reported (a transport cannot return
    /// an error from `drop`), and buffers of requests that cannot be completed are leaked.
    fn drop(&mut self) {
        self.drain();
        if self.collective_pending {
            tracing::error!(
                "rank {}: a barrier that timed out is still pending: its communicator is leaked, not freed under it",
                self.rank
            );
        } else {
            // SAFETY: dropped once, here; no request on it is pending any more.
            unsafe { ManuallyDrop::drop(&mut self.comm) };
        }
    }
}

impl MpiTransport {
    /// Cancels and completes the point-to-point requests still pending.
    fn drain(&mut self) {
        let pending = self.recvs.pending().len() + self.sends.pending().len();
        if pending == 0 {
            return;
        }
        let problems = self.cancel_and_complete(crate::backend::deadline_in(self.drain_timeout));
        if problems.is_empty() {
            tracing::warn!(
                "rank {}: {pending} MPI requests were still pending when the transport was dropped; cancelled and completed",
                self.rank
            );
        }
        for problem in problems {
            tracing::error!("rank {}: {problem}", self.rank);
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
