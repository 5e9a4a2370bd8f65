//! Fused mode on an exchange ([`HaloExchange::fuse`](super::HaloExchange::fuse)): the
//! application's kernels store boundary cells straight into the neighbours' halos through the
//! descriptors of `kernels-cu/haloport_device.h` ([`super::fused`]); the exchange only signals.
//!
//! Set-up (collective, once): each rank exports the memory of every field of every set and a
//! control block (its fused epoch, a count of cells arrived per incoming message, a credit per
//! set and outgoing message) and tells every rank, with its part of the grid and its
//! neighbours; each rank opens its neighbours' memory and builds one descriptor per field and
//! set, and the signal tables of `hp_fused_signal`. Per step, on the caller's stream:
//! [`FusedExchange::start`] tells the neighbours this rank is done reading the halos of the set
//! about to be written (credits into their control blocks) and waits for theirs;
//! [`FusedExchange::finish`] waits until every incoming message's count reached its whole,
//! then moves the epoch on. A wait that gives up is reported by the next call, naming the
//! neighbour and halo.

// Launches take raw device addresses; the tables are written through pinned memory.
#![allow(unsafe_code)]

use mpi::topology::{Communicator, SimpleCommunicator};
use serde::{Deserialize, Serialize};

use super::field::Field;
use super::fused::{descriptor, FusedTarget};
use super::fused_unmapped::mapped;
use super::layout::Link;
use crate::backend::{
    deadline_in, upload_bytes, Backend, Coherence, DeviceMemory, IpcHandle, Launch, LaunchDims,
    PinnedMemory,
};
use crate::collective::{agree, all_gather, barrier_until};
use crate::domain::{Decomposition, HaloPlan};
use crate::error::{Error, Result};
use crate::shared::{haloport_fused, hp_signal_args, hp_word_op};

/// What each rank tells the others at set-up.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Told {
    rank: i32,
    decomposition: Decomposition,
    /// Per neighbour, in plan order: its rank, direction, send tag and receive tag.
    neighbours: Vec<(i32, [i8; 3], i32, i32)>,
    /// The control block, then every field of set 0, set 1, ...
    handles: Vec<IpcHandle>,
}

/// The control block's words (u64): the epoch, a count per neighbour (incoming), a credit per
/// set and neighbour (outgoing).
fn counter_word(i: usize) -> u64 {
    8 * (1 + i as u64)
}

fn credit_word(n: usize, set: usize, i: usize) -> u64 {
    8 * (1 + n as u64 + (set * n + i) as u64)
}

/// One set's signal launches and what their waits stand for.
struct SetSignals<B: Backend> {
    /// Per field, the device address of its descriptor (for the application's kernels).
    descriptors: Vec<u64>,
    /// The same descriptors, in host memory (the host backend's twin reads them).
    host: Vec<haloport_fused>,
    start: hp_signal_args,
    finish: hp_signal_args,
    /// The neighbour (plan index) of each start wait, and of each finish wait.
    start_waits: Vec<usize>,
    finish_waits: Vec<usize>,
    _ops: B::PinnedMemory,
}

/// Fused mode's memory and tables, held by the exchange.
pub(crate) struct FusedExchange<B: Backend> {
    sets: Vec<SetSignals<B>>,
    /// u32 status per set: start, then finish.
    status: B::PinnedMemory,
    names: Vec<String>,
    rank: i32,
    timeout: std::time::Duration,
    /// Marks the last signal launch, waited for before the memory goes.
    last: B::Event,
    _descriptors: B::DeviceMemory,
    /// Opened neighbours' control blocks and fields: unmapped before ours go.
    _peers: Vec<B::PeerMemory>,
    _control: B::DeviceMemory,
}

impl<B: Backend> FusedExchange<B> {
    /// Sets fused mode up for `sets` of fields on `plan`'s neighbours that `links` maps
    /// (device-direct or this rank; the others are `fused_unmapped`'s). Collective over
    /// `comm`.
    pub(crate) fn new(
        backend: &B,
        comm: &SimpleCommunicator,
        plan: &HaloPlan,
        links: &[Link],
        sets: &[&[&Field<B>]],
        timeout: std::time::Duration,
    ) -> Result<FusedExchange<B>> {
        let rank = comm.rank();
        let n = plan.neighbours.len();
        let local = (|| {
            if sets.is_empty()
                || sets
                    .iter()
                    .any(|s| s.len() != sets[0].len() || s.is_empty())
            {
                return Err(Error::InvalidInput(
                    "fused mode takes one or more sets of the same number of fields".into(),
                ));
            }
            let control = backend.alloc_device(8 * (1 + n + sets.len() * n))?;
            let mut handles = vec![backend.export_ipc(&control)?];
            for field in sets.iter().flat_map(|s| s.iter()) {
                let memory = field.device_memory().ok_or_else(|| {
                    Error::InvalidInput(
                        "fused mode maps fields into the neighbours: give fields the library allocated (Field::alloc)".into(),
                    )
                })?;
                if field.device_addr() != memory.device_addr() {
                    return Err(Error::Internal(
                        "a field not at its allocation's start".into(),
                    ));
                }
                handles.push(backend.export_ipc(memory)?);
            }
            Ok((control, handles))
        })();
        let (control, handles) = agree(comm, "setting fused mode up", local)?;
        let told = Told {
            rank,
            decomposition: plan.decomposition.clone(),
            neighbours: plan
                .neighbours
                .iter()
                .map(|nb| (nb.rank, nb.direction, nb.send_tag, nb.recv_tag))
                .collect(),
            handles,
        };
        let all = all_gather(comm, Ok(told), |r, msg| {
            Error::InvalidInput(format!("rank {r} could not set fused mode up: {msg}"))
        })?;
        // Every rank computes the same verdict from the same handles: no rank opens memory
        // that a neighbour with fewer sets never exported.
        let fields = sets[0].len();
        if let Some(other) = all.iter().find(|t| t.handles.len() != all[0].handles.len()) {
            let sets_of = |t: &Told| (t.handles.len() - 1) / fields;
            return Err(Error::InvalidInput(format!(
                "the ranks fused different numbers of sets: rank {} gave {}, rank {} gave {}; every rank must give the same",
                all[0].rank,
                sets_of(&all[0]),
                other.rank,
                sets_of(other)
            )));
        }
        let built = Self::build(backend, rank, plan, links, sets, &all, control, timeout);
        let fused = agree(comm, "building fused mode's tables", built)?;
        // Every rank's control block zeroed before any rank signals into it.
        barrier_until(comm, deadline_in(timeout), "after fused mode's set-up")?;
        Ok(fused)
    }

    /// Opens the neighbours' memory and builds the descriptors and signal tables, on this
    /// rank alone (`new` agrees on the outcome).
    #[allow(clippy::too_many_arguments)]
    fn build(
        backend: &B,
        rank: i32,
        plan: &HaloPlan,
        links: &[Link],
        sets: &[&[&Field<B>]],
        all: &[Told],
        control: B::DeviceMemory,
        timeout: std::time::Duration,
    ) -> Result<FusedExchange<B>> {
        let n = plan.neighbours.len();
        let fields = sets[0].len();
        let stream = backend.create_stream()?;
        upload_bytes(
            backend,
            &control,
            &vec![0; control.len_bytes()],
            &stream,
            deadline_in(timeout),
        )?;
        // Each distinct neighbour's memory, opened once: (rank, control, fields by set).
        let mut opened: Vec<(i32, u64, Vec<u64>)> = Vec::new();
        let mut peers = Vec::new();
        // The neighbours fused mode stores into; the others are served by an ordinary exchange
        // of their own (`fused_unmapped`).
        let fused: Vec<bool> = links.iter().map(|&l| mapped(l)).collect();
        for (nb, _) in plan.neighbours.iter().zip(&fused).filter(|(_, f)| **f) {
            if opened.iter().any(|(r, _, _)| *r == nb.rank) {
                continue;
            }
            let addrs: Vec<u64> = if nb.rank == rank {
                std::iter::once(control.device_addr())
                    .chain(sets.iter().flat_map(|s| s.iter().map(|f| f.device_addr())))
                    .collect()
            } else {
                let told = &all[nb.rank as usize];
                let mut addrs = Vec::new();
                for h in &told.handles {
                    let m = backend.open_ipc(h)?;
                    addrs.push(m.device_addr());
                    peers.push(m);
                }
                addrs
            };
            opened.push((nb.rank, addrs[0], addrs[1..].to_vec()));
        }
        let of = |r: i32| {
            opened
                .iter()
                .find(|(p, _, _)| *p == r)
                .ok_or_else(|| Error::Internal(format!("rank {r}'s memory was not opened")))
        };
        // Which of rank p's neighbours receives what we send with `tag`, and which sends what
        // we receive with `tag`.
        let theirs = |p: i32, tag: i32, receiving: bool| -> Result<usize> {
            all[p as usize]
                .neighbours
                .iter()
                .position(|&(r, _, send, recv)| {
                    r == rank && if receiving { recv == tag } else { send == tag }
                })
                .ok_or_else(|| {
                    Error::Internal(format!("rank {p} has no neighbour entry for rank {rank}"))
                })
        };
        let hz = backend.device_info().timer_hz;
        let timeout_ticks =
            u64::try_from(timeout.as_nanos().saturating_mul(u128::from(hz)) / 1_000_000_000)
                .unwrap_or(u64::MAX);
        let status = backend.alloc_pinned(8 * sets.len(), Coherence::Coherent)?;
        // SAFETY: the status words lie in the allocation; no launch uses them yet.
        unsafe { std::ptr::write_bytes(status.host_ptr(), 0, 8 * sets.len()) };
        let descriptor_bytes = std::mem::size_of::<haloport_fused>();
        let descriptors = backend.alloc_device(descriptor_bytes * sets.len() * fields)?;
        let mut all_host = Vec::new();
        let mut out = Vec::new();
        for (s, set) in sets.iter().enumerate() {
            let mut host = Vec::with_capacity(fields);
            for (f, field) in set.iter().enumerate() {
                let mut targets = Vec::with_capacity(n);
                for (nb, _) in plan.neighbours.iter().zip(&fused).filter(|(_, f)| **f) {
                    let (_, peer_control, peer_fields) = of(nb.rank)?;
                    let j = theirs(nb.rank, nb.send_tag, true)?;
                    targets.push(FusedTarget {
                        direction: nb.direction,
                        peer: &all[nb.rank as usize].decomposition,
                        dest: peer_fields[s * fields + f],
                        counter: peer_control + counter_word(j),
                    });
                }
                let elem_bytes = field.len_bytes() / cells(&plan.decomposition)?;
                if elem_bytes != 4 && elem_bytes != 8 {
                    return Err(Error::InvalidInput(format!(
                        "fused mode stores cells of one 4- or 8-byte element: field {f} has cells of {elem_bytes} bytes"
                    )));
                }
                let elem_bytes = elem_bytes as u32;
                host.push(descriptor(&plan.decomposition, elem_bytes, &targets)?);
            }
            // Start: a credit into each neighbour we receive from; wait for ours.
            let mut ops = Vec::new();
            let mut start_waits = Vec::new();
            for (nb, _) in plan
                .neighbours
                .iter()
                .zip(&fused)
                .filter(|(nb, f)| **f && nb.recv.is_some())
            {
                let (_, peer_control, _) = of(nb.rank)?;
                let k = theirs(nb.rank, nb.recv_tag, false)?;
                let peer_n = all[nb.rank as usize].neighbours.len();
                ops.push(hp_word_op {
                    addr: peer_control + credit_word(peer_n, s, k),
                    per_epoch: 1,
                });
            }
            let stores = ops.len();
            for (i, nb) in plan.neighbours.iter().enumerate() {
                if fused[i] && nb.send.is_some() {
                    ops.push(hp_word_op {
                        addr: control.device_addr() + credit_word(n, s, i),
                        per_epoch: 1,
                    });
                    start_waits.push(i);
                }
            }
            // Finish: every incoming message's cells, of every field.
            let finish_at = ops.len();
            let mut finish_waits = Vec::new();
            for (i, nb) in plan
                .neighbours
                .iter()
                .enumerate()
                .filter(|(i, _)| fused[*i])
            {
                if let Some(recv) = nb.recv {
                    ops.push(hp_word_op {
                        addr: control.device_addr() + counter_word(i),
                        per_epoch: recv.elems() * fields as u64,
                    });
                    finish_waits.push(i);
                }
            }
            let table = backend.alloc_pinned(
                (std::mem::size_of::<hp_word_op>() * ops.len()).max(16),
                Coherence::Coherent,
            )?;
            // SAFETY: the table holds ops.len() entries; no launch uses it yet.
            unsafe {
                std::ptr::copy_nonoverlapping(ops.as_ptr(), table.host_ptr().cast(), ops.len());
            }
            let op_bytes = std::mem::size_of::<hp_word_op>() as u64;
            let args =
                |first: usize, stores: usize, waits: usize, status: u64, advance| hp_signal_args {
                    ops: table.device_addr() + op_bytes * first as u64,
                    epoch: control.device_addr(),
                    status,
                    timeout_ticks,
                    stores: stores as u32,
                    waits: waits as u32,
                    advance,
                    reserved: 0,
                };
            let status_at = status.device_addr() + 8 * s as u64;
            out.push(SetSignals {
                descriptors: (0..fields)
                    .map(|f| {
                        descriptors.device_addr() + ((s * fields + f) * descriptor_bytes) as u64
                    })
                    .collect(),
                start: args(0, stores, start_waits.len(), status_at, 0),
                finish: args(finish_at, 0, finish_waits.len(), status_at + 4, 1),
                start_waits,
                finish_waits,
                host: host.clone(),
                _ops: table,
            });
            all_host.extend(host);
        }
        // SAFETY: haloport_fused is plain old data (bindgen, fixed-width fields).
        let bytes = unsafe {
            std::slice::from_raw_parts(
                all_host.as_ptr().cast::<u8>(),
                all_host.len() * descriptor_bytes,
            )
        };
        upload_bytes(backend, &descriptors, bytes, &stream, deadline_in(timeout))?;
        let names = plan
            .neighbours
            .iter()
            .map(|nb| {
                format!(
                    "{} halo with rank {}",
                    super::direction_name(nb.direction),
                    nb.rank
                )
            })
            .collect();
        Ok(FusedExchange {
            sets: out,
            status,
            names,
            rank,
            timeout,
            last: backend.create_marker()?,
            _descriptors: descriptors,
            _peers: peers,
            _control: control,
        })
    }

    /// The device addresses of set `set`'s descriptors, one per field, and their host copies.
    pub(crate) fn descriptors(&self, set: usize) -> Result<(&[u64], &[haloport_fused])> {
        let s = self.set(set)?;
        Ok((&s.descriptors, &s.host))
    }

    fn set(&self, set: usize) -> Result<&SetSignals<B>> {
        self.sets.get(set).ok_or_else(|| {
            Error::Usage(format!(
                "fused set {set} does not exist: fuse registered {}",
                self.sets.len()
            ))
        })
    }

    /// Any wait that gave up, as an error naming the neighbour and halo.
    pub(crate) fn check(&self) -> Result<()> {
        for (s, set) in self.sets.iter().enumerate() {
            for (side, waits, what) in [
                (
                    0,
                    &set.start_waits,
                    "the neighbour done reading its halo, for",
                ),
                (1, &set.finish_waits, "the cells of"),
            ] {
                // SAFETY: the status words lie in the allocation; read as the kernel wrote them.
                let word = unsafe {
                    self.status
                        .host_ptr()
                        .cast::<u32>()
                        .add(2 * s + side)
                        .read_volatile()
                };
                if word != 0 {
                    let i = waits.get(word as usize - 1).copied().unwrap_or(0);
                    return Err(Error::Timeout {
                        rank: Some(self.rank),
                        what: format!("fused set {s}: {what} the {}", self.names[i]),
                        after: self.timeout,
                    });
                }
            }
        }
        Ok(())
    }

    /// Queues one signal launch; `capturing`: into a graph, so no marker is recorded (a
    /// replay records it, [`Self::mark`]).
    fn signal(
        &self,
        backend: &B,
        args: &hp_signal_args,
        stream: &B::Stream,
        capturing: bool,
    ) -> Result<()> {
        self.check()?;
        let dims = LaunchDims {
            blocks: 1,
            threads: 32,
        };
        // SAFETY: the tables, the control blocks and the status words live until `last` is
        // seen complete (Drop waits for it).
        unsafe { backend.launch(Launch::FusedSignal(args), dims, stream)? };
        if capturing {
            return Ok(());
        }
        self.mark(backend, stream)
    }

    /// Marks everything queued on `stream` so far as what closing waits for (after a replay
    /// of captured signal launches).
    pub(crate) fn mark(&self, backend: &B, stream: &B::Stream) -> Result<()> {
        backend.record_event(&self.last, stream)
    }

    /// Queues set `set`'s credits and the wait for the neighbours' on `stream`.
    pub(crate) fn start(
        &self,
        backend: &B,
        set: usize,
        stream: &B::Stream,
        capturing: bool,
    ) -> Result<()> {
        let s = self.set(set)?;
        self.signal(backend, &s.start, stream, capturing)
    }

    /// Queues the wait for set `set`'s incoming cells on `stream`, and the epoch's step.
    pub(crate) fn finish(
        &self,
        backend: &B,
        set: usize,
        stream: &B::Stream,
        capturing: bool,
    ) -> Result<()> {
        let s = self.set(set)?;
        self.signal(backend, &s.finish, stream, capturing)
    }

    /// Waits for the last signal launch (before the memory goes), bounded.
    pub(crate) fn wait(&self, backend: &B) -> Result<()> {
        backend.event_synchronize(&self.last, deadline_in(self.timeout))?;
        self.check()
    }
}

/// Cells of a rank's allocated array.
fn cells(d: &Decomposition) -> Result<usize> {
    usize::try_from(d.alloc.iter().product::<u64>())
        .map_err(|_| Error::InvalidInput("an array too large to address".into()))
}
