//! Memory shared between the ranks of a node (SPEC 12): the collective set-up every
//! device-direct path shares.
//!
//! Each rank allocates what its peers will store into, exports it, and tells the others its
//! node, its device and its handles (over MPI, once): every rank of the job
//! ([`share_with_node`], for the thesis's transports, whose patterns are global), or only the
//! ranks of its own node ([`share_within_node`], for the halo exchange: what a rank sends and
//! keeps then depends on its node, not on the job's size). Each rank then opens the memory of
//! the peers it wants that are on its node, after checking that its device can reach theirs.
//! Every verdict is agreed over the whole job (a reduction, [`crate::collective::agree`]), so
//! all ranks fail alike before any exchange. Peers on other nodes are left to host-staged MPI;
//! [`NodeShare::same_node`] says which.

use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, DeviceIdentity, DeviceMemory, IpcHandle};
use crate::collective::{agree, all_gather};
use crate::error::{Error, Result};

/// What one rank tells the others at set-up.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Exported {
    /// Its rank in the job's communicator.
    rank: i32,
    /// The lowest world rank on this rank's node: equal for ranks of one node.
    node: i32,
    identity: DeviceIdentity,
    handles: Vec<IpcHandle>,
}

/// Which ranks tell each other their memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every rank of the job (the thesis's transports, whose patterns are global anyway):
    /// [`NodeShare::nodes`] then knows every rank's node.
    World,
    /// Only the ranks of each node, among themselves: set-up independent of the job's size.
    Node,
}

/// What [`share_within_node`] does with a same-node peer that this rank's device cannot
/// reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAccess {
    /// Required: an error on every rank (the `ipc` transport: device-direct or nothing).
    /// Otherwise the peer is left unopened, at both ends, and served by another route (`auto`).
    pub required: bool,
    /// This rank's device answers that it reaches no other device (an injected fault, for
    /// tests of both outcomes).
    pub denied_here: bool,
}

/// The outcome of [`share_with_node`] or [`share_within_node`]: which ranks are on this
/// rank's node, and the memory of the wanted same-node peers, opened.
pub struct NodeShare<B: Backend> {
    /// The node (lowest world rank) of every rank; empty when shared within the node only.
    nodes: Vec<i32>,
    /// The ranks on this rank's node, ascending.
    members: Vec<i32>,
    rank: i32,
    /// Per opened peer: its rank and its allocations, in the order it exported them.
    peers: Vec<(i32, Vec<B::PeerMemory>)>,
    /// How many ranks of this node run on this rank's device, itself included.
    ranks_on_device: u32,
}

impl<B: Backend> NodeShare<B> {
    /// How many ranks of this node run on this rank's device, itself included (more than one
    /// where ranks share a GPU: a kernel of one that waits for another's may hold the SMs the
    /// other needs).
    pub fn ranks_on_device(&self) -> u32 {
        self.ranks_on_device
    }

    /// True when rank `peer` is on this rank's node.
    pub fn same_node(&self, peer: i32) -> bool {
        self.members.binary_search(&peer).is_ok()
    }

    /// True when rank `peer`'s memory was opened (same node, peer access both ways, wanted by
    /// both): device-direct stores may reach it, and it may reach ours.
    pub fn reachable(&self, peer: i32) -> bool {
        self.peers.iter().any(|(r, _)| *r == peer)
    }

    /// The node (its lowest world rank) of every rank, when shared over the whole job
    /// ([`share_with_node`]); empty after [`share_within_node`].
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

/// Allocates this rank's shared memory with `allocate`, exports it, tells every rank of the
/// job, and opens the memory of every rank in `wanted` that is on this node. Collective over
/// `world`; `what` names the path in errors ("the ipc transport"). Each rank receives every
/// rank's handles: for the thesis's transports; the halo exchange uses
/// [`share_within_node`].
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
    let access = PeerAccess {
        required: true,
        denied_here: false,
    };
    share(backend, world, Scope::World, access, allocate, wanted, what)
}

/// As [`share_with_node`], but handles travel only between the ranks of one node (an
/// `MPI_Comm_split_type(SHARED)` communicator): what each rank sends, keeps and opens depends
/// on its node, never on the number of ranks in the job. Every failure is still agreed over
/// `world`, so all ranks fail alike. Unless `access` requires peer access, a peer is opened
/// only where both ends reach each other and want each other, so both ends of
/// a link agree on whether it is device-direct ([`NodeShare::reachable`]). Collective over
/// `world`.
///
/// # Errors
/// As [`share_with_node`]: [`Error::OtherRank`] on the ranks that did not fail themselves.
pub fn share_within_node<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    access: PeerAccess,
    allocate: impl FnOnce() -> Result<Vec<B::DeviceMemory>>,
    wanted: &[i32],
    what: &str,
) -> Result<(Vec<B::DeviceMemory>, NodeShare<B>)> {
    share(backend, world, Scope::Node, access, allocate, wanted, what)
}

fn share<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    scope: Scope,
    access: PeerAccess,
    allocate: impl FnOnce() -> Result<Vec<B::DeviceMemory>>,
    wanted: &[i32],
    what: &str,
) -> Result<(Vec<B::DeviceMemory>, NodeShare<B>)> {
    let rank = world.rank();
    let node = node_communicator(world);
    let leader = node_leader(world, &node)?;
    // Allocate and export; a backend without IPC fails here on every rank alike.
    let allocated = (|| {
        let memories = allocate()?;
        let exported = Exported {
            rank,
            node: leader,
            identity: backend.device_identity()?,
            handles: memories
                .iter()
                .map(|m| backend.export_ipc(m))
                .collect::<Result<_>>()?,
        };
        Ok::<_, Error>((memories, exported))
    })();
    let (memories, mine) = agree(world, &format!("setting up {what}"), allocated)?;
    let collective = |r: i32, msg: String| Error::InvalidInput(format!("rank {r}: {msg}"));
    let all = match scope {
        Scope::World => all_gather(world, Ok(mine), collective)?,
        Scope::Node => all_gather(&node, Ok(mine), collective)?,
    };
    let opened = open_peers(backend, rank, wanted, &all, access);
    let mut peers = agree(world, &format!("setting up {what}"), opened)?;
    if !access.required {
        // Keep a peer only where it opened this rank too: a device-direct link needs both.
        let mine: Vec<i32> = peers.iter().map(|(r, _)| *r).collect();
        let theirs = all_gather(&node, Ok((rank, mine)), collective)?;
        peers.retain(|(p, _)| {
            theirs
                .iter()
                .any(|(r, opened)| r == p && opened.contains(&rank))
        });
    }
    let mut members: Vec<i32> = all
        .iter()
        .filter(|e| e.node == leader)
        .map(|e| e.rank)
        .collect();
    members.sort_unstable();
    let nodes = match scope {
        Scope::World => all.iter().map(|e| e.node).collect(),
        Scope::Node => Vec::new(),
    };
    let me = all.iter().find(|e| e.rank == rank);
    let on_device = all
        .iter()
        .filter(|e| e.node == leader && me.is_some_and(|m| m.identity == e.identity))
        .count();
    let ranks_on_device = u32::try_from(on_device.max(1)).unwrap_or(u32::MAX);
    let share = NodeShare {
        nodes,
        members,
        rank,
        peers,
        ranks_on_device,
    };
    Ok((memories, share))
}

/// Opens the memory of every wanted rank on this node, after checking peer access: a peer
/// without it is an error where `access` requires it, else left unopened.
fn open_peers<B: Backend>(
    backend: &B,
    rank: i32,
    wanted: &[i32],
    all: &[Exported],
    access: PeerAccess,
) -> Result<Vec<(i32, Vec<B::PeerMemory>)>> {
    let me = all
        .iter()
        .find(|e| e.rank == rank)
        .ok_or_else(|| Error::Internal(format!("rank {rank} is missing from its own node")))?;
    let mut wanted: Vec<i32> = wanted.iter().copied().filter(|&p| p != rank).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut peers = Vec::with_capacity(wanted.len());
    for p in wanted {
        // A rank not among those that shared with us is on another node.
        let Some(them) = all.iter().find(|e| e.rank == p) else {
            continue;
        };
        if them.node != me.node {
            continue;
        }
        let reaches = !access.denied_here && backend.can_access_peer(&them.identity)?;
        if !reaches && !access.required {
            continue;
        }
        if !reaches {
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
    let leader = node_leader(world, &node_communicator(world))?;
    all_gather(world, Ok(leader), |r, msg| {
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
/// host-staged; with `mpi`, all are host-staged; with `nccl`, all go through NCCL.
pub fn block_links(
    patterns: &[crate::pattern::RankPattern],
    nodes: &[i32],
    transport: crate::transport::TransportKind,
) -> Vec<Vec<BlockLink>> {
    let how = |a: i32, b: i32| {
        let same =
            nodes.get(a as usize).is_some() && nodes.get(a as usize) == nodes.get(b as usize);
        match transport {
            crate::transport::TransportKind::Ipc if same => "ipc".to_owned(),
            crate::transport::TransportKind::Nccl => "nccl".to_owned(),
            _ => "mpi".to_owned(),
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

/// The ranks of this rank's node (`MPI_Comm_split_type(SHARED)`). For tests on one machine,
/// `HALOPORT_IPC_RANKS_PER_NODE=N` makes ranks count as nodes of N consecutive ranks.
/// Collective over `world`.
fn node_communicator(world: &SimpleCommunicator) -> SimpleCommunicator {
    use mpi::topology::Color;
    match ranks_per_node() {
        Some(n) => world
            .split_by_color(Color::with_value(world.rank() / n))
            .unwrap_or_else(|| world.split_shared(0)),
        None => world.split_shared(0),
    }
}

fn ranks_per_node() -> Option<i32> {
    std::env::var("HALOPORT_IPC_RANKS_PER_NODE")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|&n| n > 0)
}

/// The lowest world rank among the ranks of `node` (this rank's node). Collective over
/// `node`.
fn node_leader(world: &SimpleCommunicator, node: &SimpleCommunicator) -> Result<i32> {
    use mpi::collective::SystemOperation;
    use mpi::traits::CommunicatorCollectives;
    if let Some(n) = ranks_per_node() {
        return Ok(world.rank() - world.rank() % n);
    }
    let mut lowest = 0_i32;
    node.all_reduce_into(&world.rank(), &mut lowest, SystemOperation::min());
    Ok(lowest)
}
