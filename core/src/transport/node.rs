//! Memory shared between the ranks of a node (SPEC 12): the collective set-up every
//! device-direct path shares.
//!
//! Each rank allocates what its peers will store into, exports it, and tells every rank its
//! node, its device and its handles (over MPI, once). Each rank then opens the memory of the
//! peers it wants that are on its node, after checking that its device can reach theirs. Every
//! verdict is shared, so all ranks fail alike, with the same message, before any exchange.
//! Peers on other nodes are left to host-staged MPI; [`NodeShare::same_node`] says which.

use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, DeviceIdentity, DeviceMemory, IpcHandle};
use crate::collective::all_gather;
use crate::error::{Error, Result};

/// What one rank tells the others at set-up.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Exported {
    /// The lowest world rank on this rank's node: equal for ranks of one node.
    node: i32,
    identity: DeviceIdentity,
    handles: Vec<IpcHandle>,
}

/// The outcome of [`share_with_node`]: which node every rank is on, and the memory of the
/// wanted same-node peers, opened.
pub struct NodeShare<B: Backend> {
    nodes: Vec<i32>,
    rank: i32,
    /// Per opened peer: its rank and its allocations, in the order it exported them.
    peers: Vec<(i32, Vec<B::PeerMemory>)>,
}

impl<B: Backend> NodeShare<B> {
    /// True when rank `peer` is on this rank's node.
    pub fn same_node(&self, peer: i32) -> bool {
        self.nodes.get(peer as usize) == self.nodes.get(self.rank as usize)
    }

    /// The node (its lowest world rank) of every rank.
    pub fn nodes(&self) -> &[i32] {
        &self.nodes
    }

    /// Device address, as this process addresses it, of allocation `index` of rank `peer`.
    ///
    /// # Errors
    /// [`Error::Internal`] when that peer's memory was not opened (not wanted, or on another
    /// node).
    pub fn peer_addr(&self, peer: i32, index: usize) -> Result<u64> {
        self.peers
            .iter()
            .find(|(r, _)| *r == peer)
            .and_then(|(_, memories)| memories.get(index))
            .map(DeviceMemory::device_addr)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "rank {peer}'s allocation {index} was not opened by rank {}",
                    self.rank
                ))
            })
    }
}

/// Allocates this rank's shared memory with `allocate`, exports it, and opens the memory of
/// every rank in `wanted` that is on this node. Collective over `world`; `what` names the path
/// in errors ("the ipc transport").
///
/// # Errors
/// [`Error::InvalidInput`], the same on every rank, when a rank cannot allocate or export (a
/// backend without IPC), or when a device cannot reach a wanted same-node peer's device; MPI
/// errors.
pub fn share_with_node<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    allocate: impl FnOnce() -> Result<Vec<B::DeviceMemory>>,
    wanted: &[i32],
    what: &str,
) -> Result<(Vec<B::DeviceMemory>, NodeShare<B>)> {
    let rank = world.rank();
    let collective = |r: i32, msg: String| Error::InvalidInput(format!("rank {r}: {msg}"));
    // Allocate and export; a backend without IPC fails here on every rank alike.
    let allocated = (|| {
        let memories = allocate()?;
        let exported = Exported {
            node: node_leader(world),
            identity: backend.device_identity()?,
            handles: memories
                .iter()
                .map(|m| backend.export_ipc(m))
                .collect::<Result<_>>()?,
        };
        Ok::<_, Error>((memories, exported))
    })();
    let (mine, memories) = match allocated {
        Ok((memories, exported)) => (Ok(exported), Some(memories)),
        Err(e) => (Err(format!("setting up {what}: {e}")), None),
    };
    let all = all_gather(world, mine, collective)?;
    let memories =
        memories.ok_or_else(|| Error::Internal(format!("{what}: allocation vanished")))?;
    let opened = open_peers(backend, rank, wanted, &all);
    let (verdict, peers) = match opened {
        Ok(peers) => (Ok(()), peers),
        Err(e) => (Err(e.to_string()), Vec::new()),
    };
    all_gather(world, verdict, collective)?;
    let share = NodeShare {
        nodes: all.iter().map(|e| e.node).collect(),
        rank,
        peers,
    };
    Ok((memories, share))
}

/// Opens the memory of every wanted rank on this node, after checking peer access.
fn open_peers<B: Backend>(
    backend: &B,
    rank: i32,
    wanted: &[i32],
    all: &[Exported],
) -> Result<Vec<(i32, Vec<B::PeerMemory>)>> {
    let me = &all[rank as usize];
    let mut wanted: Vec<i32> = wanted.iter().copied().filter(|&p| p != rank).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut peers = Vec::with_capacity(wanted.len());
    for p in wanted {
        let them = all.get(p as usize).ok_or_else(|| {
            Error::Internal(format!("rank {p} is not in a job of {} ranks", all.len()))
        })?;
        if them.node != me.node {
            continue;
        }
        if !backend.can_access_peer(&them.identity)? {
            return Err(Error::InvalidInput(format!(
                "rank {rank} (device {}) cannot store into rank {p}'s device ({}): no peer access between them; use --transport mpi",
                me.identity.id, them.identity.id
            )));
        }
        let memories = them
            .handles
            .iter()
            .map(|h| backend.open_ipc(h))
            .collect::<Result<_>>()?;
        peers.push((p, memories));
    }
    Ok(peers)
}

/// The node of every rank of `world` (its lowest world rank), as [`share_with_node`] sees it.
/// Collective over `world`.
///
/// # Errors
/// MPI errors.
pub fn nodes_of_every_rank(world: &SimpleCommunicator) -> Result<Vec<i32>> {
    all_gather(world, Ok(node_leader(world)), |r, msg| {
        Error::InvalidInput(format!("rank {r} could not tell its node: {msg}"))
    })
}

/// How one block of one rank travels, each way (the result's record of the per-peer choice).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLink {
    /// The pattern block.
    pub block: usize,
    /// Where it is sent, and how: "ipc" (device-direct) or "mpi" (host-staged).
    pub to: i32,
    /// See `to`.
    pub send: String,
    /// Where it comes from, and how.
    pub from: i32,
    /// See `from`.
    pub recv: String,
}

/// Every rank's blocks with the transport each direction takes: with `ipc`, blocks between
/// ranks of one node (`nodes`, from [`nodes_of_every_rank`]) go device-direct and the others
/// host-staged; with `mpi`, all are host-staged.
pub fn block_links(
    patterns: &[crate::pattern::RankPattern],
    nodes: &[i32],
    transport: crate::variant::TransportKind,
) -> Vec<Vec<BlockLink>> {
    let how = |a: i32, b: i32| {
        let same =
            nodes.get(a as usize).is_some() && nodes.get(a as usize) == nodes.get(b as usize);
        if transport == crate::variant::TransportKind::Ipc && same {
            "ipc".to_owned()
        } else {
            "mpi".to_owned()
        }
    };
    patterns
        .iter()
        .map(|p| {
            p.blocks
                .iter()
                .enumerate()
                .map(|(b, block)| BlockLink {
                    block: b,
                    to: block.dest,
                    send: how(p.rank, block.dest),
                    from: block.source,
                    recv: how(p.rank, block.source),
                })
                .collect()
        })
        .collect()
}

/// The lowest world rank among the ranks of this node (`MPI_Comm_split_type(SHARED)`). For
/// tests on one machine, `HALOPORT_IPC_RANKS_PER_NODE=N` makes ranks count as nodes of N
/// consecutive ranks.
pub(crate) fn node_leader(world: &SimpleCommunicator) -> i32 {
    use mpi::collective::CommunicatorCollectives;
    if let Some(n) = std::env::var("HALOPORT_IPC_RANKS_PER_NODE")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|&n| n > 0)
    {
        return world.rank() - world.rank() % n;
    }
    let node = world.split_shared(0);
    let mut ranks = vec![0_i32; node.size() as usize];
    node.all_gather_into(&world.rank(), &mut ranks[..]);
    ranks.into_iter().min().unwrap_or(0)
}
