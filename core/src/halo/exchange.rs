//! The compiled halo exchange: one plan, the user's fields, any transport, ordered on the
//! user's stream (SPEC 13). The plan's neighbours become the entries of a
//! [`MessageExchange`](super::engine::MessageExchange), whose messages are the fields' halo
//! regions.

use std::time::Duration;

use mpi::topology::{Communicator, SimpleCommunicator};

use super::engine::{MessageExchange, Messages, Payload};
use super::field::Field;
use super::layout::{Entry, Link};
use crate::backend::Backend;
use crate::collective::all_gather;
use crate::domain::{DomainSpec, HaloPlan};
use crate::error::{Error, Result};
use crate::transport::mpi::mpi_dims_create;
use crate::variant::TransportKind;

/// When host-staged messages move, relative to the kernels (the thesis's two strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HaloStrategy {
    /// Thesis 3.3's shape: the CPU waits for the whole pack, sends everything, receives
    /// everything, then queues the unpack.
    #[default]
    Base,
    /// Thesis 3.4's idea per neighbour: each neighbour's message is sent as soon as its
    /// regions are packed (the pack kernel raises a per-message flag in pinned memory), and the
    /// unpack kernel is queued before the receives complete, unpacking each neighbour as the
    /// CPU raises its arrival flag.
    Taskqueue,
}

impl HaloStrategy {
    /// Name on the command line and in results: `base`, `tq`.
    pub fn name(self) -> &'static str {
        match self {
            HaloStrategy::Base => "base",
            HaloStrategy::Taskqueue => "tq",
        }
    }
}

impl std::str::FromStr for HaloStrategy {
    type Err = Error;

    fn from_str(s: &str) -> Result<HaloStrategy> {
        match s {
            "base" => Ok(HaloStrategy::Base),
            "tq" => Ok(HaloStrategy::Taskqueue),
            _ => Err(Error::InvalidInput(format!(
                "unknown halo exchange strategy '{s}'; known: base (pack everything, then send; receive everything, then unpack), tq (send and unpack each neighbour as soon as it is ready)"
            ))),
        }
    }
}

/// A fault injected on purpose, to show that a lost message ends every rank waiting for it
/// with a time-out naming the halo, never a hang.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloFault {
    /// Every rank never delivers its message in this direction (host-staged: never sent;
    /// device-direct: stored but never announced). A neighbour that is the rank itself is not
    /// affected.
    DropSend {
        /// The direction, each component -1, 0 or 1.
        direction: [i8; 3],
    },
}

impl std::str::FromStr for HaloFault {
    type Err = Error;

    /// `drop-send=DIR`, DIR a direction such as `+x`, `-x+y`, `+x-y+z`.
    fn from_str(s: &str) -> Result<HaloFault> {
        let bad = || {
            Error::InvalidInput(format!(
                "unknown halo fault '{s}'; known: drop-send=DIR with DIR a direction such as +x, -y+z, +x-y+z"
            ))
        };
        let dir = s.strip_prefix("drop-send=").ok_or_else(bad)?;
        let mut direction = [0_i8; 3];
        let mut rest = dir;
        while !rest.is_empty() {
            let mut chars = rest.chars();
            let sign = match chars.next() {
                Some('+') => 1,
                Some('-') => -1,
                _ => return Err(bad()),
            };
            let k = match chars.next() {
                Some('x') => 0,
                Some('y') => 1,
                Some('z') => 2,
                _ => return Err(bad()),
            };
            if direction[k] != 0 {
                return Err(bad());
            }
            direction[k] = sign;
            rest = chars.as_str();
        }
        if direction == [0; 3] {
            return Err(bad());
        }
        Ok(HaloFault::DropSend { direction })
    }
}

/// How an exchange runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HaloOptions {
    /// `mpi`: every peer host-staged. `ipc`: same-node peers device-direct, others host-staged.
    pub transport: TransportKind,
    /// When host-staged messages move (device-direct ones always signal per message).
    pub strategy: HaloStrategy,
    /// How long any single wait (MPI, stream, a GPU-side flag) may take.
    pub timeout: Duration,
    /// Threads per GPU block of the pack and unpack kernels.
    pub threads: u32,
    /// Elements each thread moves (sets the blocks per region).
    pub elems_per_thread: u32,
    /// Most GPU blocks serving one region of a signalled message (device-direct, or
    /// host-staged under the taskqueue): each such block pays a wait, a fence at system scope
    /// and a count, and on 2 x H200 those costs added up across blocks
    /// (`results/2026-11-22-h200x2-library/`).
    pub signalled_blocks: u32,
    /// A fault to inject, for tests.
    pub fault: Option<HaloFault>,
}

impl Default for HaloOptions {
    fn default() -> Self {
        HaloOptions {
            transport: TransportKind::Mpi,
            strategy: HaloStrategy::Base,
            timeout: Duration::from_secs(10),
            threads: 256,
            elems_per_thread: 4,
            signalled_blocks: 16,
            fault: None,
        }
    }
}

/// A halo exchange compiled from a [`HaloPlan`] for one rank: run it with
/// [`exchange`](Self::exchange), or [`start`](Self::start) and [`finish`](Self::finish) around
/// work that does not touch the halos.
///
/// Every exchange after an error returns that error: a failed exchange leaves peers'
/// counters and flags out of step, so the exchange must be built anew.
pub struct HaloExchange<'b, B: Backend> {
    engine: MessageExchange<'b, B>,
    plan: HaloPlan,
}

impl<'b, B: Backend> HaloExchange<'b, B> {
    /// Compiles `spec` for this rank of `world` and sets the exchange up: buffers, flags, and
    /// (with `ipc`) the same-node peers' memory. Collective over `world`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`], the same on every rank, when the ranks declared different
    /// domains, when the declaration does not fit the job (process grid, local extents), when
    /// the kernels' block size does not fit the device, or when a same-node peer cannot be
    /// reached device-direct; allocation and MPI errors.
    pub fn new(
        backend: &'b B,
        world: &SimpleCommunicator,
        spec: &DomainSpec,
        options: HaloOptions,
    ) -> Result<Self> {
        let (rank, size) = (world.rank(), world.size());
        agree_on_spec(world, spec)?;
        let spec = &resolve_procs(spec, world)?;
        // Every rank compiles every plan: peers' layouts give the addresses we store into.
        let plans: Vec<HaloPlan> = (0..size)
            .map(|r| HaloPlan::compile(spec, size, r))
            .collect::<Result<_>>()?;
        let entries: Vec<Vec<Entry>> = plans.iter().map(Entry::of_plan).collect();
        let plan = plans[rank as usize].clone();
        let dropped = options.fault.and_then(|HaloFault::DropSend { direction }| {
            plan.neighbours
                .iter()
                .position(|n| n.direction == direction)
        });
        let messages = Messages {
            entries,
            elem: spec.elem,
            fields: spec.fields,
            payload: Payload::Fields,
        };
        let engine = MessageExchange::new(backend, world, &messages, options, dropped)?;
        Ok(HaloExchange { engine, plan })
    }

    /// The plan this exchange runs.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// How each neighbour's messages travel, in the plan's neighbour order.
    pub fn links(&self) -> Vec<Link> {
        self.engine.links()
    }

    /// Runs one exchange of `fields` on `stream` and waits for it: when it returns `Ok`, every
    /// field's halo cells hold their neighbours' values.
    ///
    /// # Errors
    /// As [`Self::start`], [`Self::finish`] and [`Self::wait`].
    pub fn exchange(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        self.start(fields, stream)?;
        self.finish(stream)?;
        self.wait(stream)
    }

    /// Starts an exchange of `fields` on `stream`: queues the pack (after everything queued
    /// before on `stream`), and sends the host-staged messages once packed. Work queued on
    /// `stream` between `start` and [`Self::finish`] must not write the cells the exchange
    /// sends nor touch halo cells.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the fields do not fit the plan; [`Error::Internal`] when
    /// an exchange is already started; MPI, backend and time-out errors.
    pub fn start(&mut self, fields: &[&Field<B>], stream: &B::Stream) -> Result<()> {
        self.check_fields(fields)?;
        let key = fields.iter().map(|f| f.device_addr()).collect();
        let keep = fields.iter().map(|f| f.share()).collect();
        self.engine.start(key, keep, stream)
    }

    /// Finishes the started exchange: waits for host-staged messages and queues the unpack on
    /// `stream`. Work queued on `stream` afterwards sees the halos filled. Device-direct
    /// messages are waited for on the GPU: their errors (a peer that never sent) surface at
    /// the next [`Self::wait`] or exchange.
    ///
    /// # Errors
    /// [`Error::Internal`] without a started exchange; MPI, backend and time-out errors.
    pub fn finish(&mut self, stream: &B::Stream) -> Result<()> {
        self.engine.finish(stream)
    }

    /// Waits until the last exchange's kernels completed on `stream` and reports what their
    /// GPU-side waits ended in.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the messages a GPU-side wait gave up on (the peer, the
    /// direction); backend and time-out errors.
    pub fn wait(&mut self, stream: &B::Stream) -> Result<()> {
        self.engine.wait(stream)
    }

    fn check_fields(&self, fields: &[&Field<B>]) -> Result<()> {
        let spec = &self.plan.spec;
        if fields.len() != spec.fields as usize {
            return Err(Error::InvalidInput(format!(
                "the exchange was declared with {} fields, {} were given",
                spec.fields,
                fields.len()
            )));
        }
        let needed = self.plan.decomposition.alloc_elems() * u64::from(spec.elem.bytes());
        for (k, field) in fields.iter().enumerate() {
            if field.elem() != spec.elem || (field.len_bytes() as u64) < needed {
                return Err(Error::InvalidInput(format!(
                    "field {k} ({}, {} bytes) does not fit the plan ({}, {needed} bytes)",
                    field.elem(),
                    field.len_bytes(),
                    spec.elem
                )));
            }
        }
        Ok(())
    }
}

/// `spec` with its process grid chosen by the MPI library (`MPI_Dims_create`) over `comm`'s
/// ranks when it names none: what every plan of an exchange over `comm` is compiled from.
///
/// # Errors
/// MPI errors.
pub fn resolve_procs(spec: &DomainSpec, comm: &SimpleCommunicator) -> Result<DomainSpec> {
    let mut spec = spec.clone();
    if spec.procs.is_none() && comm.size() > 0 {
        spec.procs = Some(mpi_dims_create(comm.size())?);
    }
    Ok(spec)
}

/// Every rank must declare the same domain: compared collectively, so all fail alike.
fn agree_on_spec(world: &SimpleCommunicator, spec: &DomainSpec) -> Result<()> {
    let all = all_gather(world, Ok(spec.clone()), |r, msg| {
        Error::InvalidInput(format!("rank {r}: {msg}"))
    })?;
    if let Some((r, other)) = all.iter().enumerate().find(|(_, s)| *s != &all[0]) {
        return Err(Error::InvalidInput(format!(
            "the ranks declared different domains: rank 0 has {}, rank {r} has {}",
            describe(&all[0]),
            describe(other)
        )));
    }
    Ok(())
}

fn describe(spec: &DomainSpec) -> String {
    let procs = spec.procs.map_or_else(
        || "chosen".to_owned(),
        |p| format!("{}x{}x{}", p[0], p[1], p[2]),
    );
    format!(
        "grid {}x{}x{}, procs {procs}, halo {:?}, periodic {:?}, {} fields of {}",
        spec.grid[0], spec.grid[1], spec.grid[2], spec.halo, spec.periodic, spec.fields, spec.elem
    )
}
