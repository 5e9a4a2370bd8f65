//! What one rank computes, without communication, to set its halo exchange up: its own plan,
//! the entries of its neighbours (each distinct neighbour once, at most 26), and the layout of
//! its messages. Nothing here depends on the number of ranks beyond the arithmetic of a
//! rank's place in the process grid: set-up never looks at more than 27 parts, however large
//! the job (fewer where the 26 directions reach fewer distinct ranks, as in small periodic
//! jobs). A neighbour costs little more than finding its peers: the regions of its messages
//! depend only on its part's extents, so they are computed once per distinct extents (one in
//! an evenly split grid, at most 8) and kept once in the [`EntryTable`], which records of
//! each neighbour only which of them it has and with which peers.
//! `haloport plan` shows it for any rank of any job, without MPI.

use super::layout::{Entry, EntryTable, Mailbox, Side};
use crate::domain::{Decomposition, DomainSpec, HaloPlan, Regions};
use crate::error::Result;

/// One rank's set-up, compiled: [`RankSetup::compile`].
#[derive(Debug, Clone)]
pub struct RankSetup {
    /// This rank's plan.
    pub plan: HaloPlan,
    /// The entries of this rank and of each of its distinct neighbours, by rank.
    pub(crate) entries: EntryTable,
    /// Bytes of this rank's receive slots and flags (device memory).
    pub mailbox_bytes: u64,
    /// Bytes of one side of its host staging where every message is host-staged (pinned
    /// memory; one for sends, one for receives). The exchange pins only as far as its
    /// host-staged messages reach: 8 bytes where every neighbour is device-direct or local.
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
        let (plan, ours) = HaloPlan::compile_with_regions(spec, ranks, rank)?;
        // This rank and its distinct neighbours, in the table's order.
        let mut known: Vec<i32> = plan.neighbours.iter().map(|n| n.rank).collect();
        known.push(rank);
        known.sort_unstable();
        known.dedup();
        let messages = ours.unpeered().len();
        let mut entries = EntryTable::with_capacity(messages, known.len(), known.len() * messages);
        // The declaration and its process grid were checked and chosen above, for the whole
        // job: a neighbour's part and messages are arithmetic on them, with no check or
        // choice of the process grid repeated. Its messages are those of the first part of
        // the same extents (this rank's, in an evenly split grid): only its peers are its own.
        let procs = plan.decomposition.procs;
        let first = entries.add_form(ours.unpeered().iter().map(Entry::of_neighbour));
        let mut shapes = vec![(ours, first)];
        for &r in &known {
            let theirs = Decomposition::checked(spec, procs, r);
            let (regions, first) = match shapes.iter().position(|(s, _)| s.fit(&theirs)) {
                Some(i) => &shapes[i],
                None => {
                    let regions = Regions::of(spec, &theirs);
                    let first =
                        entries.add_form(regions.unpeered().iter().map(Entry::of_neighbour));
                    shapes.push((regions, first));
                    &shapes[shapes.len() - 1]
                }
            };
            let peers = regions.peers(&theirs).map(|(i, peer)| (first + i, peer));
            entries.push(r, peers);
        }
        let ours = entries
            .get(rank)
            .ok_or_else(|| crate::Error::Internal(format!("rank {rank} set up without itself")))?;
        let layout = Mailbox::of(ours.iter(), &spec.cell_sizes())?;
        let message_bytes = ours
            .iter()
            .map(|e| {
                layout
                    .side_bytes(&e, Side::Send)
                    .max(layout.side_bytes(&e, Side::Recv))
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
    use crate::domain::{
        direction_tag, directions, ElemType, FieldShape, Layout, Neighbourhood, Splits, Subarray,
    };

    /// A rank's entries computed direction by direction, as set-up first did: its neighbour
    /// in each direction the neighbourhood reaches, and that direction's boxes, merged.
    fn straightforward(spec: &DomainSpec, ranks: i32, rank: i32) -> Vec<Entry> {
        let d = Decomposition::new(spec, ranks, rank).expect("valid declaration");
        let reach = spec.layout.neighbourhood.reach();
        let mut entries = Vec::new();
        for dir in directions() {
            if dir.iter().filter(|&&c| c != 0).count() > reach {
                continue;
            }
            let Some(peer) = d.neighbour(dir) else {
                continue;
            };
            let (send, recv) = d.halo_boxes(dir);
            if send.is_none() && recv.is_none() {
                continue;
            }
            entries.push(Entry {
                peer,
                send_tag: direction_tag(dir),
                recv_tag: direction_tag(dir.map(|c| -c)),
                send: send.map(Subarray::merged),
                recv: recv.map(Subarray::merged),
                name: super::super::layout::EntryName::Halo(dir),
            });
        }
        entries
    }

    #[test]
    fn shared_regions_give_every_rank_and_neighbour_the_entries_of_each_direction() {
        let base = DomainSpec {
            grid: [13, 10, 9],
            procs: None,
            periodic: [true, false, true],
            halo: [1, 2, 1],
            elem: ElemType::F32,
            fields: 2,
            layout: Layout::default(),
        };
        let with = |procs: [u32; 3], periodic: [bool; 3], layout: Layout| DomainSpec {
            procs: Some(procs),
            periodic,
            layout,
            ..base.clone()
        };
        let specs = [
            // Uneven splits (parts of up to 8 extents), bounded and periodic.
            with([3, 2, 2], [true, false, true], Layout::default()),
            with([3, 3, 2], [false; 3], Layout::default()),
            with([4, 3, 2], [true; 3], Layout::default()),
            // Halos that differ by side (one side none), and padding.
            with(
                [3, 2, 2],
                [true; 3],
                Layout {
                    halo_lo: Some([1, 0, 2]),
                    halo_hi: Some([2, 1, 0]),
                    pad: [3, 0, 1],
                    ..Layout::default()
                },
            ),
            // Faces only; faces and edges, with cells of several components.
            with(
                [3, 3, 3],
                [true, true, false],
                Layout {
                    neighbourhood: Neighbourhood::Faces,
                    ..Layout::default()
                },
            ),
            with(
                [2, 3, 2],
                [true; 3],
                Layout {
                    neighbourhood: Neighbourhood::FacesEdges,
                    fields: Some(vec![
                        FieldShape {
                            elem_bytes: 8,
                            components: 3,
                        },
                        FieldShape {
                            elem_bytes: 4,
                            components: 1,
                        },
                    ]),
                    ..Layout::default()
                },
            ),
            // The application's own decomposition, and one process along periodic x.
            DomainSpec {
                layout: Layout {
                    splits: Some(Splits {
                        x: vec![0, 2, 9],
                        y: vec![0, 5],
                        z: vec![0, 3, 4, 8],
                    }),
                    ..Layout::default()
                },
                ..base.clone()
            },
            with([1, 2, 3], [true; 3], Layout::default()),
        ];
        for spec in &specs {
            let ranks = spec
                .process_grid(1)
                .expect("a process grid")
                .iter()
                .product::<u32>();
            let ranks = ranks as i32;
            let all: Vec<Vec<Entry>> = (0..ranks)
                .map(|r| straightforward(spec, ranks, r))
                .collect();
            for rank in 0..ranks {
                let plan = HaloPlan::compile(spec, ranks, rank).expect("plan");
                assert_eq!(
                    Entry::of_plan(&plan),
                    all[rank as usize],
                    "{spec:?} rank {rank}"
                );
                let setup = RankSetup::compile(spec, ranks, rank).expect("setup");
                for (r, entries) in setup.entries.iter() {
                    assert_eq!(
                        entries.to_vec(),
                        all[r as usize],
                        "{spec:?} rank {rank} peer {r}"
                    );
                }
                let peers = plan.neighbours.iter().map(|n| n.rank);
                assert!(peers.chain([rank]).all(|r| setup.entries.get(r).is_some()));
            }
        }
    }

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
                let mut known: Vec<i32> = setup.entries.iter().map(|(r, _)| r).collect();
                let mut wanted: Vec<i32> = setup.plan.neighbours.iter().map(|n| n.rank).collect();
                wanted.push(rank);
                wanted.sort_unstable();
                wanted.dedup();
                known.sort_unstable();
                assert_eq!(known, wanted, "{procs:?} rank {rank}");
                for (r, entries) in setup.entries.iter() {
                    assert_eq!(
                        entries.to_vec(),
                        all[r as usize],
                        "{procs:?} rank {rank} peer {r}"
                    );
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
