//! Setting an exchange up: the links and routes agreed with the neighbours, the memory every
//! kernel and peer touches (receive slots, staging, status words), IPC handles shared within the
//! node, and the first region tables. Collective: a step that fails on one rank fails every
//! rank before any further collective.

use super::*;
use crate::collective::all_gather;
use crate::transport::gpu_aware::{self, GpuAwareMpi};

impl<'b, B: Backend> MessageExchange<'b, B> {
    /// Sets the exchange of `messages` up for this rank of `world`: buffers, flags, and (with
    /// `ipc`) the same-node peers' memory. `dropped` names the entry whose outgoing message an
    /// injected fault drops (`options.fault` is the caller's to resolve into it). Collective
    /// over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the kernels' block size does not fit the device or a
    /// same-node peer cannot be reached device-direct; allocation and MPI errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        messages: &Messages,
        options: HaloOptions,
        dropped: Option<usize>,
    ) -> Result<Self> {
        let Messages {
            entries,
            cells,
            word,
            payload,
        } = messages;
        let (word, payload) = (*word, *payload);
        let rank = world.rank();
        let known = |r: i32| {
            Error::Internal(format!(
                "rank {rank} set up without the entries of rank {r}"
            ))
        };
        // Everything checked and computed locally (a device may allow fewer threads than its
        // peers' do), then agreed before the first collective.
        let local = (|| {
            if ![1, 2, 4, 8].contains(&word)
                || cells.iter().any(|&c| c == 0 || c % u64::from(word) != 0)
            {
                return Err(Error::InvalidInput(format!(
                    "cells of {cells:?} bytes cannot be moved in words of {word} bytes"
                )));
            }
            crate::backend::check_threads(backend, options.threads)?;
            if options.elems_per_thread == 0 {
                return Err(Error::InvalidInput(
                    "elements per thread must be at least 1".into(),
                ));
            }
            let layouts: BTreeMap<i32, Mailbox> = entries
                .iter()
                .map(|(r, e)| Ok((r, Mailbox::of(e.iter(), cells)?)))
                .collect::<Result<_>>()?;
            let ours = entries.get(rank).ok_or_else(|| known(rank))?.to_vec();
            let mine = layouts.get(&rank).ok_or_else(|| known(rank))?.clone();
            let mailbox_bytes = to_usize(mine.bytes(), "the exchange's receive slots")?;
            Ok((layouts, ours, mine, mailbox_bytes))
        })();
        let (layouts, ours, mine, mailbox_bytes) =
            agree(world, "checking the halo exchange", local)?;
        let wanted: Vec<i32> = ours.iter().map(|n| n.peer).collect();
        let (mailbox, share) = if options.transport.within_node() {
            let access = PeerAccess {
                required: options.transport == TransportKind::Ipc,
                denied_here: options.fault == Some(HaloFault::NoPeerAccess { rank }),
            };
            // Allocates, exports and opens, agreeing on the outcome.
            let (mut memories, share) = share_within_node(
                backend,
                world,
                access,
                || Ok(vec![backend.alloc_device(mailbox_bytes)?]),
                &wanted,
                "the device-direct halo exchange",
            )?;
            let mailbox = memories
                .pop()
                .ok_or_else(|| Error::Internal("the halo mailbox vanished".into()))?;
            (Some(mailbox), Some(share))
        } else {
            (None, None)
        };
        let n = ours.len();
        let status_layout = StatusLayout { messages: n };
        let device_mpi = device_mpi_ranks(backend, world, options.gpu_aware_mpi)?;
        let nccl_loads = nccl_loads_everywhere(backend, world, &options)?;
        let choices: Vec<RouteChoice> = ours
            .iter()
            .map(|entry| {
                let peer = entry.peer;
                let same_node = share.as_ref().is_some_and(|s| s.same_node(peer));
                let facts = LinkFacts {
                    locality: if peer == rank {
                        Locality::Itself
                    } else if share.is_none() {
                        Locality::NotAsked
                    } else if same_node {
                        Locality::SameNode
                    } else {
                        Locality::OtherNode
                    },
                    peer_access: share.as_ref().is_some_and(|s| s.reachable(peer)),
                    nccl: nccl_loads,
                    device_mpi: device_mpi[rank as usize] && device_mpi[peer as usize],
                };
                routes::choose(options.transport, options.routes.as_ref(), facts)
            })
            .collect();
        let links: Vec<Link> = choices.iter().map(|c| c.link).collect();
        let staging_end = staging_extent(&mine, &links, |l| l == Link::Staged);
        let device_staging_end = staging_extent(&mine, &links, Link::device_staged);
        // Every rank builds the communicator where any rank has a link through NCCL
        // (collective), whatever links it got itself.
        let mine_nccl = links.contains(&Link::Nccl);
        let any_nccl = all_gather(world, Ok(mine_nccl), |rank, message| Error::OtherRank {
            rank,
            message,
        })?
        .contains(&true);
        let nccl = if any_nccl {
            Some(nccl::open(backend, world, options.timeout)?)
        } else {
            None
        };
        // Everything else this rank allocates, then agreement: a rank that failed here must
        // not leave the others in the next collective (the transport's duplicate).
        let local = (|| {
            if options.fault == Some(HaloFault::SetupFails { rank }) {
                return Err(Error::OutOfMemory {
                    backend: backend.name(),
                    bytes: mailbox_bytes,
                    kind: "device memory (an injected set-up failure)",
                });
            }
            let mailbox = match mailbox {
                Some(m) => m,
                None => backend.alloc_device(mailbox_bytes)?,
            };
            let counters = backend.alloc_device(8 * n.max(1))?;
            let abort = Box::new(DeviceAbort {
                word: backend.alloc_device(8)?,
                stream: backend.create_stream()?,
            });
            let status = backend.alloc_pinned(status_layout.bytes(), Coherence::Coherent)?;
            let staging_bytes = to_usize(staging_end, "the exchange's staging")?;
            let send = backend.alloc_pinned(staging_bytes, Coherence::Coherent)?;
            let recv = backend.alloc_pinned(staging_bytes, Coherence::Coherent)?;
            let device_bytes = to_usize(device_staging_end, "the exchange's device staging")?;
            let device_send = backend.alloc_device(device_bytes)?;
            let device_recv = backend.alloc_device(device_bytes)?;
            let events = (backend.create_marker()?, backend.create_marker()?);
            let beside = Beside {
                stream: backend.create_urgent_stream()?,
                fork: backend.create_marker()?,
            };
            let device = (device_send, device_recv);
            Ok((
                mailbox,
                counters,
                abort,
                status,
                (send, recv, device),
                events,
                beside,
            ))
        })();
        let (mailbox, counters, abort, status, buffers, (last_pack, last_unpack), beside) =
            agree(world, "allocating the halo exchange's buffers", local)?;
        let (send, recv, (device_send, device_recv)) = buffers;
        let staging = Staging {
            send_host: send.host_ptr(),
            recv_host: recv.host_ptr(),
            send: Arc::new(Mutex::new(send)),
            recv: Arc::new(Mutex::new(recv)),
            device_send: Arc::new(Mutex::new(device_send)),
            device_recv: Arc::new(Mutex::new(device_recv)),
        };
        let own_base = mailbox.device_addr();
        let (send_base, recv_base) = (
            lock::<B::PinnedMemory>(&staging.send).device_addr(),
            lock::<B::PinnedMemory>(&staging.recv).device_addr(),
        );
        let (device_send_base, device_recv_base) = (
            lock::<B::DeviceMemory>(&staging.device_send).device_addr(),
            lock::<B::DeviceMemory>(&staging.device_recv).device_addr(),
        );
        let mut routes = Vec::with_capacity(n);
        for (i, (entry, &link)) in ours.iter().zip(&links).enumerate() {
            let peer = entry.peer;
            let theirs = layouts.get(&peer).ok_or_else(|| known(peer))?;
            let their_entries = entries.get(peer).ok_or_else(|| known(peer))?;
            let missing = |what: &str| {
                Error::Internal(format!(
                    "rank {peer} has no {what} entry for rank {rank}'s {} message",
                    entry.name
                ))
            };
            // Which of the peer's entries receives what we send, and sends what we receive
            // (0 where we send or receive nothing: such an address is never used).
            let j = match entry.send {
                Some(_) => receiving_entry(their_entries.iter(), rank, entry.send_tag)
                    .ok_or_else(|| missing("receiving"))?,
                None => 0,
            };
            let k = match entry.recv {
                Some(_) => sending_entry(their_entries.iter(), rank, entry.recv_tag)
                    .ok_or_else(|| missing("sending"))?,
                None => 0,
            };
            let route = match link {
                Link::Local => Route {
                    link,
                    dest: [mine.recv_addr(own_base, 0, j); 2],
                    dest_arrival: 0,
                    credit: 0,
                    recv: [mine.recv_addr(own_base, 0, i); 2],
                    arrival: 0,
                    source_credit: 0,
                },
                Link::Staged => Route {
                    link,
                    dest: [send_base + mine.offsets[i]; 2],
                    dest_arrival: 0,
                    credit: 0,
                    recv: [recv_base + mine.offsets[i]; 2],
                    arrival: 0,
                    source_credit: 0,
                },
                Link::DeviceMpi | Link::Nccl => Route {
                    link,
                    dest: [device_send_base + mine.offsets[i]; 2],
                    dest_arrival: 0,
                    credit: 0,
                    recv: [device_recv_base + mine.offsets[i]; 2],
                    arrival: 0,
                    source_credit: 0,
                },
                Link::Direct => {
                    let peer_base = share
                        .as_ref()
                        .ok_or_else(|| Error::Internal("device-direct without peers".into()))?
                        .peer_addr(peer, 0)?;
                    Route {
                        link,
                        dest: [
                            theirs.recv_addr(peer_base, 0, j),
                            theirs.recv_addr(peer_base, 1, j),
                        ],
                        dest_arrival: theirs.arrival_flag(peer_base, j),
                        credit: mine.credit_flag(own_base, i),
                        recv: [
                            mine.recv_addr(own_base, 0, i),
                            mine.recv_addr(own_base, 1, i),
                        ],
                        arrival: mine.arrival_flag(own_base, i),
                        source_credit: theirs.credit_flag(peer_base, k),
                    }
                }
            };
            routes.push(route);
        }
        // Beside the caller's stream only where a message is device-direct and none is
        // host-staged (which needs the CPU before its unpack). A local message copied straight
        // into its halo joins the one launch; one through a slot (its pack must end before its
        // unpack starts) keeps the two launches (`fuse`).
        let may_run_beside = routes.iter().any(|r| r.link == Link::Direct)
            && routes
                .iter()
                .all(|r| matches!(r.link, Link::Direct | Link::Local));
        let staged_routes = routes.iter().any(|r| r.link.through_mpi());
        let ranks_on_device = share.as_ref().map_or(1, NodeShare::ranks_on_device);
        let mut mpi = MpiTransport::new(world, options.timeout)?;
        mpi.prepare_tagged(
            ours.iter().map(|n| n.recv_tag).collect(),
            ours.iter().map(|n| n.send_tag).collect(),
        )?;
        Ok(MessageExchange {
            mpi,
            last_pack,
            pack_stream: 0,
            last_unpack,
            unpack_stream: 0,
            beside: may_run_beside.then(|| Box::new(beside)),
            ranks_on_device,
            done_words: (0, 0),
            done_seen: std::cell::Cell::new(0),
            joined: None,
            backend,
            rank,
            entries: ours,
            cells: cells.clone(),
            word,
            dropped,
            payload,
            iteration: 0,
            verify: Verify::Full,
            record_times: false,
            layout: mine,
            options,
            routes,
            choices,
            staged_routes,
            memory: ManuallyDrop::new(Memory {
                fused: None,
                nccl,
                _share: share,
                tables: TableSets::default(),
                retired: Vec::new(),
                counters,
                abort,
                staging,
                status,
                _mailbox: mailbox,
                checks: None,
                times: None,
            }),
            epoch: 0,
            in_flight: InFlight::Never,
            in_use: Vec::new(),
            current: Vec::new(),
            current_set: 0,
            health: Health::Usable,
            id: graph::next_exchange_id(),
            capture: None,
            replayed: Vec::new(),
        })
    }
}

/// Per rank of `world`, whether it gives MPI device memory (GPU-aware MPI) under `setting`:
/// asked of the MPI library on every rank ([`gpu_aware::query`]) and gathered, so that both
/// ends of a link see the same two answers. `Auto` never on the host backend (its device
/// memory is host memory either way). Collective over `world`.
fn device_mpi_ranks<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    setting: GpuAwareMpi,
) -> Result<Vec<bool>> {
    let mine = match setting {
        GpuAwareMpi::Off => false,
        GpuAwareMpi::On => true,
        GpuAwareMpi::Auto => {
            backend.name() != "host" && gpu_aware::query(backend.name(), world).available
        }
    };
    all_gather(world, Ok(mine), |rank, message| Error::OtherRank {
        rank,
        message,
    })
}

/// Whether every rank of `world` loads NCCL (RCCL) for `options`' routes: asked only where
/// they may take NCCL (the `nccl` transport, or `auto`: by capability on a GPU backend, or a
/// routes file naming it, which the host backend's stand-in serves too), and gathered with
/// every rank's route order, which must be the same everywhere. Collective over `world`.
fn nccl_loads_everywhere<B: Backend>(
    backend: &B,
    world: &SimpleCommunicator,
    options: &HaloOptions,
) -> Result<bool> {
    let asks = routes::asks_for_nccl(options.transport, options.routes.as_ref(), backend.name());
    let loads = asks && crate::transport::nccl::probe(backend.name()).is_ok();
    let all = all_gather(world, Ok((loads, options.routes)), |rank, message| {
        Error::OtherRank { rank, message }
    })?;
    if let Some((r, _)) = all
        .iter()
        .enumerate()
        .find(|(_, (_, order))| *order != options.routes)
    {
        return Err(Error::InvalidInput(format!(
            "rank {} was given routes {} and rank {r} routes {}: every rank must be given the same routes file",
            world.rank(),
            describe_order(options.routes.as_ref()),
            describe_order(all[r].1.as_ref()),
        )));
    }
    Ok(all.iter().all(|(l, _)| *l))
}

/// A route order in words, for messages.
fn describe_order(order: Option<&RouteOrder>) -> String {
    order.map_or_else(
        || "by capability".to_owned(),
        |o| {
            format!(
                "{} within a node, {} between nodes",
                o.within_node, o.between_nodes
            )
        },
    )
}
