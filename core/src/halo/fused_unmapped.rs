//! Fused mode's neighbours without a mapping (another node, or a route chosen otherwise):
//! served by an ordinary exchange of their own, over those neighbours only, that
//! [`HaloExchange::fused_finish`](super::HaloExchange::fused_finish) runs once the
//! application's kernels wrote the cells they need. It has its own communicator, epochs and
//! counters, so the fused neighbours' signals and its messages never share a count.

use std::sync::Arc;

use mpi::topology::{Communicator, SimpleCommunicator};

use super::engine::{MessageExchange, Messages, Payload};
use super::field::{Field, FieldMemory};
use super::layout::Link;
use super::setup::RankSetup;
use super::HaloOptions;
use crate::backend::Backend;
use crate::collective::all_gather;
use crate::domain::HaloPlan;
use crate::error::{Error, Result};

/// Whether fused mode stores into a neighbour's halo itself.
pub(crate) fn mapped(link: Link) -> bool {
    matches!(link, Link::Direct | Link::Local)
}

/// One set's fields as the ordinary exchange takes them: addresses and memory.
type SetKey<B> = (Vec<u64>, Vec<Arc<FieldMemory<B>>>);

/// The ordinary exchange of the neighbours fused mode does not map.
pub(crate) struct Unmapped<'b, B: Backend> {
    engine: MessageExchange<'b, B>,
    sets: Vec<SetKey<B>>,
    /// This rank's first such neighbour, named (what a capture refuses); `None` where it has
    /// none.
    first: Option<String>,
}

impl<'b, B: Backend> Unmapped<'b, B> {
    /// Sets the exchange up where any rank has a neighbour that `links` (this rank's, in plan
    /// order) does not map; `None` where no rank has. Collective over `comm`.
    pub(crate) fn new(
        backend: &'b B,
        comm: &SimpleCommunicator,
        plan: &HaloPlan,
        links: &[Link],
        options: HaloOptions,
        sets: &[&[&Field<B>]],
    ) -> Result<Option<Self>> {
        let mine: Vec<i32> = plan
            .neighbours
            .iter()
            .zip(links)
            .filter(|(_, l)| !mapped(**l))
            .map(|(n, _)| n.rank)
            .collect();
        let first = plan
            .neighbours
            .iter()
            .zip(links)
            .find(|(_, l)| !mapped(**l))
            .map(|(n, l)| {
                format!(
                    "its {} halo with rank {} goes by {}",
                    super::direction_name(n.direction),
                    n.rank,
                    l.name()
                )
            });
        let every = all_gather(comm, Ok(mine), |rank, message| Error::OtherRank {
            rank,
            message,
        })?;
        if every.iter().all(Vec::is_empty) {
            return Ok(None);
        }
        let setup = RankSetup::compile(&plan.spec, comm.size(), comm.rank())?;
        let entries = setup.entries.narrowed(|r| {
            usize::try_from(r)
                .ok()
                .and_then(|r| every.get(r).cloned())
                .unwrap_or_default()
        });
        let messages = Messages {
            entries,
            cells: plan.spec.cell_sizes(),
            word: plan.spec.word_bytes()?,
            payload: Payload::Fields,
        };
        let engine = MessageExchange::new(backend, comm, &messages, options, None)?;
        let sets = sets
            .iter()
            .map(|set| {
                (
                    set.iter().map(|f| f.device_addr()).collect(),
                    set.iter().map(|f| f.share()).collect(),
                )
            })
            .collect();
        Ok(Some(Unmapped {
            engine,
            sets,
            first,
        }))
    }

    /// Exchanges set `set`'s fields with the neighbours fused mode does not map, after what
    /// is queued on `stream`: packed, sent, received, the unpack queued on `stream`.
    pub(crate) fn exchange(&mut self, set: usize, stream: &B::Stream) -> Result<()> {
        let (key, keep) = self
            .sets
            .get(set)
            .cloned()
            .ok_or_else(|| Error::Usage(format!("fused set {set} does not exist")))?;
        self.engine.start(key, keep, stream)?;
        self.engine.finish(stream)
    }

    /// This rank's first neighbour served here, named; `None` where it has none.
    pub(crate) fn first(&self) -> Option<&str> {
        self.first.as_deref()
    }

    /// [`MessageExchange::wait`].
    pub(crate) fn wait(&mut self) -> Result<()> {
        self.engine.wait()
    }

    /// [`MessageExchange::close`].
    pub(crate) fn close(&mut self) -> Result<()> {
        self.engine.close()
    }
}
