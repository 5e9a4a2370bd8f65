//! Messages over NCCL (RCCL on AMD, loaded at run time by `haloport-nccl`): the pack stores each
//! such message into the exchange's device staging, one group of `ncclSend`/`ncclRecv` queued
//! on the exchange's stream after it carries every message, and the unpack follows on the
//! stream. Nothing waits on the CPU between pack and unpack, so `start` and `finish` stay
//! stream-ordered. On the host backend (no vendor stream) the group is queued once the pack has
//! completed, as a stand-in library over MPI on host memory needs.
//!
//! Failures: NCCL's errors and time-outs end the exchange (every later call returns them) and
//! abort the communicator, so that no NCCL kernel is left waiting for a peer that is gone.

use std::sync::Arc;
use std::time::Duration;

use haloport_nccl::{Communicator as NcclCommunicator, Nccl};

use super::*;

/// The NCCL communicator of an exchange: one per exchange, built from its MPI communicator at
/// set-up and destroyed with its memory.
pub(super) struct NcclLinks {
    pub(super) comm: NcclCommunicator,
}

/// An NCCL error as haloport's, keeping time-outs time-outs.
pub(super) fn nccl_error(rank: i32, e: haloport_nccl::Error) -> Error {
    match e {
        haloport_nccl::Error::Timeout { waited_for, after } => Error::Timeout {
            rank: Some(rank),
            what: format!("waiting for {waited_for} (NCCL; the communicator was aborted)"),
            after,
        },
        haloport_nccl::Error::LibraryNotFound { .. }
        | haloport_nccl::Error::MissingSymbol { .. } => Error::Unsupported {
            backend: "nccl",
            what: e.to_string(),
        },
        haloport_nccl::Error::Call {
            call,
            code,
            name,
            last,
            context,
        } => Error::Backend {
            backend: "nccl",
            call,
            code: i64::from(code),
            name: if last.is_empty() {
                name
            } else {
                format!("{name}: {last}")
            },
            context,
        },
        haloport_nccl::Error::PeerFailed { ref ranks, .. } => Error::OtherRank {
            rank: ranks.first().copied().unwrap_or(-1),
            message: e.to_string(),
        },
        e => Error::Internal(format!("NCCL: {e}")),
    }
}

/// Loads the library and builds the exchange's communicator over `world`. Collective: a rank
/// that cannot load the library fails every rank before the communicator's own collectives.
pub(super) fn open<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    timeout: Duration,
) -> Result<NcclLinks> {
    let rank = world.rank();
    let loaded = Nccl::load(crate::transport::nccl::flavour(backend.name()))
        .map_err(|e| nccl_error(rank, e));
    let nccl: Arc<Nccl> = agree(world, "loading NCCL", loaded)?;
    let comm =
        NcclCommunicator::from_mpi(&nccl, world, timeout).map_err(|e| nccl_error(rank, e))?;
    Ok(NcclLinks { comm })
}

impl<B: Backend> MessageExchange<'_, B> {
    /// Queues one group of every NCCL message's send and receive on `stream`, after the pack
    /// queued there. An injected fault that drops an NCCL message drops every send of the
    /// rank's group (NCCL matches a peer's messages in order: one missing send would shift the
    /// others onto the wrong receives), so its peers wait for it until their time-out.
    pub(super) fn queue_nccl(&mut self, stream: &B::Stream) -> Result<()> {
        let silent = self
            .dropped
            .is_some_and(|i| self.routes[i].link == Link::Nccl);
        let raw = match self.backend.vendor_stream(stream) {
            Some(raw) => raw,
            None => {
                // No vendor stream: the library runs the group now, so the pack must be done.
                self.backend.stream_synchronize(stream, self.deadline())?;
                std::ptr::null_mut()
            }
        };
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        for (i, route) in self.routes.iter().enumerate() {
            if route.link != Link::Nccl {
                continue;
            }
            let entry = &self.entries[i];
            let peer = usize::try_from(entry.peer)
                .map_err(|_| Error::Internal(format!("rank {} is negative", entry.peer)))?;
            let send = self.layout.side_bytes(entry, Side::Send) as usize;
            if entry.has(Side::Send) && !silent {
                sends.push((peer, entry.send_tag, route.dest[0], send));
            }
            let recv = self.layout.side_bytes(entry, Side::Recv) as usize;
            if entry.has(Side::Recv) {
                recvs.push((peer, entry.recv_tag, route.recv[0], recv));
            }
        }
        // NCCL matches the sends to a peer with its receives from us in the order each side
        // queues them: both sides order them by the tag MPI would match them by (a message's
        // send tag is its receiver's receive tag).
        sends.sort_unstable();
        recvs.sort_unstable();
        let rank = self.rank;
        let links = self
            .memory
            .nccl
            .as_mut()
            .ok_or_else(|| Error::Internal("NCCL messages without a communicator".into()))?;
        let queued = links.comm.group(|g| {
            for &(peer, _, at, bytes) in &sends {
                // SAFETY: (1) `at` is this message's place in the exchange's device
                // staging, `bytes` long (Mailbox layout), alive until the communicator is
                // destroyed (both in `Memory`, the communicator first); (2) the pack that
                // writes it is queued before on `raw` (or done), and the next pack is
                // queued after this group on a stream ordered after it.
                unsafe { g.send(at as usize as *const _, bytes, peer, raw)? };
            }
            for &(peer, _, at, bytes) in &recvs {
                // SAFETY: as above; the unpack that reads it is queued after this group.
                unsafe { g.recv(at as usize as *mut _, bytes, peer, raw)? };
            }
            Ok(())
        });
        queued.map_err(|e| self.named(nccl_error(rank, e)))
    }

    /// `e`, a time-out naming the NCCL messages it held up (NCCL does not say which of a
    /// group's messages never came).
    pub(super) fn named(&self, e: Error) -> Error {
        let Error::Timeout { rank, what, after } = e else {
            return e;
        };
        let messages: Vec<String> = (0..self.routes.len())
            .filter(|&i| self.routes[i].link == Link::Nccl && self.entries[i].has(Side::Recv))
            .map(|i| format!("{} (rank {})", self.entries[i].name, self.entries[i].peer))
            .collect();
        Error::Timeout {
            rank,
            what: format!(
                "{what}: the NCCL messages of this exchange, one of them not received: {}",
                messages.join(", ")
            ),
            after,
        }
    }

    /// Aborts the NCCL communicator after a failure, so that no NCCL kernel keeps waiting for
    /// a peer (the communicator takes no more work).
    pub(super) fn abort_nccl(&mut self) {
        if let Some(links) = self.memory.nccl.take() {
            if let Err(e) = links.comm.abort() {
                tracing::error!("rank {}: aborting NCCL: {e}", self.rank);
            }
        }
    }
}
