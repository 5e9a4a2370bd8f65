//! What one rank computes, without communication, to set its halo exchange up: its own plan,
//! the plans of its neighbours (each distinct neighbour once, at most 26), and the layout of
//! its messages. Nothing here depends on the number of ranks beyond the arithmetic of a
//! rank's place in the process grid: set-up never compiles more than 27 plans, however large
//! the job (fewer where the 26 directions reach fewer distinct ranks, as in small periodic
//! jobs). `haloport plan` shows it for any rank of any job, without MPI.

use std::collections::btree_map::Entry as Slot;
use std::collections::BTreeMap;

use super::layout::{Entry, Mailbox, Side};
use crate::domain::{neighbours_of, Decomposition, DomainSpec, HaloPlan};
use crate::error::Result;

/// One rank's set-up, compiled: [`RankSetup::compile`].
#[derive(Debug, Clone)]
pub struct RankSetup {
    /// This rank's plan.
    pub plan: HaloPlan,
    /// The entries of this rank and of each of its distinct neighbours, by rank.
    pub(crate) entries: BTreeMap<i32, Vec<Entry>>,
    /// Bytes of this rank's receive slots and flags (device memory).
    pub mailbox_bytes: u64,
    /// Bytes of one side of its host staging (pinned memory; one for sends, one for receives).
    pub staging_bytes: u64,
    /// Bytes of each neighbour's message (the larger of the two ways), in plan order.
    pub message_bytes: Vec<u64>,
}

impl RankSetup {
    /// Compiles `spec` for `rank` of a job of `ranks` ranks, and the plans of its neighbours.
    ///
    /// # Errors
    /// Those of [`HaloPlan::compile`] ([`crate::Error::InvalidInput`], the same on every
    /// rank), and sizes that overflow.
    pub fn compile(spec: &DomainSpec, ranks: i32, rank: i32) -> Result<RankSetup> {
        let plan = HaloPlan::compile(spec, ranks, rank)?;
        let mut entries = BTreeMap::new();
        entries.insert(rank, Entry::of_plan(&plan));
        // The declaration and its process grid were checked and chosen above, for the whole
        // job: a neighbour's part and messages are arithmetic on them, with no check or
        // choice of the process grid repeated.
        let procs = plan.decomposition.procs;
        for n in &plan.neighbours {
            if let Slot::Vacant(slot) = entries.entry(n.rank) {
                let theirs = Decomposition::checked(spec, procs, n.rank);
                slot.insert(Entry::of_neighbours(&neighbours_of(spec, &theirs)));
            }
        }
        let ours = &entries[&rank];
        let layout = Mailbox::of(ours, &spec.cell_sizes())?;
        let message_bytes = ours
            .iter()
            .map(|e| {
                layout
                    .side_bytes(e, Side::Send)
                    .max(layout.side_bytes(e, Side::Recv))
            })
            .collect();
        Ok(RankSetup {
            mailbox_bytes: layout.bytes(),
            staging_bytes: layout.slot_bytes,
            message_bytes,
            plan,
            entries,
        })
    }

    /// How many distinct ranks this rank exchanges with (itself included when a periodic
    /// dimension has one process).
    pub fn peers(&self) -> usize {
        let mut peers: Vec<i32> = self.plan.neighbours.iter().map(|n| n.rank).collect();
        peers.sort_unstable();
        peers.dedup();
        peers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ElemType;

    #[test]
    fn a_rank_knows_itself_and_each_distinct_neighbour_exactly_as_the_whole_job_would() {
        for (procs, periodic) in [
            ([2, 2, 2], [true, true, true]),
            ([3, 1, 2], [true, false, true]),
            ([4, 3, 2], [false, true, false]),
        ] {
            let spec = DomainSpec {
                grid: [12, 9, 8],
                procs: Some(procs),
                periodic,
                halo: [1, 1, 1],
                elem: ElemType::F64,
                fields: 2,
                layout: Default::default(),
            };
            let ranks = (procs[0] * procs[1] * procs[2]) as i32;
            // What every rank used to compile: every plan of the job.
            let all: Vec<Vec<Entry>> = (0..ranks)
                .map(|r| Entry::of_plan(&HaloPlan::compile(&spec, ranks, r).expect("plan")))
                .collect();
            for rank in 0..ranks {
                let setup = RankSetup::compile(&spec, ranks, rank).expect("setup");
                let mut known: Vec<i32> = setup.entries.keys().copied().collect();
                let mut wanted: Vec<i32> = setup.plan.neighbours.iter().map(|n| n.rank).collect();
                wanted.push(rank);
                wanted.sort_unstable();
                wanted.dedup();
                known.sort_unstable();
                assert_eq!(known, wanted, "{procs:?} rank {rank}");
                for (r, entries) in &setup.entries {
                    assert_eq!(entries, &all[*r as usize], "{procs:?} rank {rank} peer {r}");
                }
                assert_eq!(
                    setup.peers(),
                    wanted.len()
                        - usize::from(!setup.plan.neighbours.iter().any(|n| n.rank == rank))
                );
            }
        }
    }
}
