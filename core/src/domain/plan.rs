//! Compiling a declaration into one rank's halo-exchange plan (SPEC 13; seed 003: declare,
//! compile once, execute many times).
//!
//! A plan lists this rank's neighbours in up to 26 directions (6 faces, 12 edges, 8 corners),
//! in increasing [`direction_tag`]. For each it holds the region this rank sends (the interior
//! cells next to that side, as wide as the halo) and the region it receives into (the halo
//! cells on that side), both as merged [`Subarray`]s of one field's allocated array; every
//! field uses the same regions. Data sent in direction `d` travels with tag
//! `direction_tag(d)` and lands in the peer's halo on side `-d`, which the peer receives with
//! the same tag; so messages stay apart when one peer sits in several directions, or is this
//! rank itself.
//!
//! A direction is present only when its neighbour exists (none past a non-periodic boundary)
//! and every dimension it crosses has a halo. Along a dimension it does not cross, a region
//! spans the interior only: edges and corners carry the cells that faces leave out, so one
//! exchange fills every halo cell that has a neighbour, corners included, without a second
//! pass.
//!
//! Plans are immutable data, computed without communication; every rank compiles its own
//! from the same declaration.

use serde::Serialize;

use super::{Decomposition, DomainSpec, Subarray};
use crate::error::Result;

/// Tag of data travelling in direction `d`: `(dx + 1) + 3 * (dy + 1) + 9 * (dz + 1)`, in
/// `0..=26`; 13 (`[0, 0, 0]`) is never used by a message. Data arriving from direction `d`
/// travels in `-d` and carries `26 - direction_tag(d)`.
pub fn direction_tag(d: [i8; 3]) -> i32 {
    let [dx, dy, dz] = d.map(i32::from);
    (dx + 1) + 3 * (dy + 1) + 9 * (dz + 1)
}

/// The 26 directions to a neighbour (each component -1, 0 or 1, not all 0), in increasing
/// [`direction_tag`]: the order of [`HaloPlan::neighbours`].
pub fn directions() -> [[i8; 3]; 26] {
    let mut out = [[0i8; 3]; 26];
    let mut i = 0;
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                if [dx, dy, dz] != [0, 0, 0] {
                    out[i] = [dx, dy, dz];
                    i += 1;
                }
            }
        }
    }
    out
}

/// What a neighbour shares with this rank's box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeighbourKind {
    /// Across one dimension: a face.
    Face,
    /// Across two dimensions: an edge.
    Edge,
    /// Across all three: a corner.
    Corner,
}

/// One message pair of a plan: what this rank sends in one direction and where it receives
/// what comes from that direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// The direction, each component -1, 0 or 1.
    pub direction: [i8; 3],
    /// The neighbour in that direction (may be this rank, and may appear in several
    /// directions).
    pub rank: i32,
    /// Interior cells next to side `direction`, as wide as the neighbour's halo on the
    /// opposite side (merged); `None` when that halo has width 0.
    pub send: Option<Subarray>,
    /// Halo cells on side `direction` (merged); `None` when this side's halo has width 0. Same
    /// number of elements as the peer's `send` in the opposite direction, in the same order.
    pub recv: Option<Subarray>,
    /// Tag of the data sent: `direction_tag(direction)`.
    pub send_tag: i32,
    /// Tag of the data received: it travels in `-direction`, so
    /// `direction_tag(-direction)`.
    pub recv_tag: i32,
}

impl Neighbour {
    /// Face, edge or corner, by how many dimensions the direction crosses.
    pub fn kind(&self) -> NeighbourKind {
        match self.direction.iter().filter(|&&c| c != 0).count() {
            1 => NeighbourKind::Face,
            2 => NeighbourKind::Edge,
            _ => NeighbourKind::Corner,
        }
    }
}

/// One rank's compiled halo exchange: the declaration, this rank's decomposition and its
/// neighbours in increasing [`direction_tag`].
#[derive(Debug, Clone, Serialize)]
pub struct HaloPlan {
    /// The declaration compiled.
    pub spec: DomainSpec,
    /// This rank's part of the grid and its array layout.
    pub decomposition: Decomposition,
    /// The messages of one exchange, one per present direction, in increasing
    /// [`direction_tag`].
    pub neighbours: Vec<Neighbour>,
}

impl HaloPlan {
    /// Compiles `spec` for `rank` of a job of `ranks` ranks. The process grid is
    /// `spec.procs`, or [`dims_create`](super::dims_create)`(ranks)` where not given.
    ///
    /// The regions of each direction are [`Decomposition::halo_boxes`], merged.
    ///
    /// # Errors
    /// Those of [`Decomposition::new`]: [`crate::Error::InvalidInput`], the same on every
    /// rank.
    pub fn compile(spec: &DomainSpec, ranks: i32, rank: i32) -> Result<HaloPlan> {
        HaloPlan::compile_with_regions(spec, ranks, rank).map(|(plan, _)| plan)
    }

    /// [`HaloPlan::compile`], and the regions of this rank's extents, which the neighbours
    /// of the same extents share (set-up: [`crate::halo::RankSetup`]).
    pub(crate) fn compile_with_regions(
        spec: &DomainSpec,
        ranks: i32,
        rank: i32,
    ) -> Result<(HaloPlan, Regions)> {
        let decomposition = Decomposition::new(spec, ranks, rank)?;
        let regions = Regions::of(spec, &decomposition);
        let neighbours = regions.neighbours(&decomposition);
        let plan = HaloPlan {
            spec: spec.clone(),
            decomposition,
            neighbours,
        };
        Ok((plan, regions))
    }

    /// How many faces, edges and corners the plan exchanges.
    pub fn kind_counts(&self) -> (usize, usize, usize) {
        let count = |kind| self.neighbours.iter().filter(|n| n.kind() == kind).count();
        (
            count(NeighbourKind::Face),
            count(NeighbourKind::Edge),
            count(NeighbourKind::Corner),
        )
    }

    /// Elements this rank sends per field in one exchange (and receives: the same).
    pub fn send_elems(&self) -> u64 {
        self.neighbours
            .iter()
            .map(|n| n.send.map_or(0, |s| s.elems()))
            .sum()
    }
}

/// The messages of one part's extents, before their peers are known: per direction of the
/// declared neighbourhood with a halo on either side, in increasing [`direction_tag`], the
/// merged send and receive regions of [`Decomposition::halo_boxes`]. They depend on the part's
/// local extents and the declaration's halos and padding, not on where the part lies, so parts
/// of equal extents share them: a rank's set-up computes them once per distinct extents among
/// itself and its neighbours (one in an evenly split grid, at most 8), and of each neighbour
/// records only which of these messages it has and with which peers ([`Regions::peers`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Regions {
    /// What they were computed for: the part's `local`, `halo`, `halo_hi` and `alloc`.
    extents: [[u64; 3]; 4],
    /// The messages, each with rank -1 (no peer yet).
    unpeered: Vec<Neighbour>,
}

impl Regions {
    /// The regions of `decomposition`'s part under `spec`'s neighbourhood.
    pub(crate) fn of(spec: &DomainSpec, decomposition: &Decomposition) -> Regions {
        let reach = spec.layout.neighbourhood.reach();
        let mut unpeered = Vec::with_capacity(26);
        for d in directions() {
            if d.iter().filter(|&&c| c != 0).count() > reach {
                continue;
            }
            let (send, recv) = decomposition.halo_boxes(d);
            if send.is_none() && recv.is_none() {
                continue;
            }
            unpeered.push(Neighbour {
                direction: d,
                rank: -1,
                send: send.map(Subarray::merged),
                recv: recv.map(Subarray::merged),
                send_tag: direction_tag(d),
                recv_tag: direction_tag(d.map(|c| -c)),
            });
        }
        Regions {
            extents: Regions::extents_of(decomposition),
            unpeered,
        }
    }

    /// True when these are the regions of `decomposition`'s part (of the same declaration).
    pub(crate) fn fit(&self, decomposition: &Decomposition) -> bool {
        // Local extents first: within one declaration, the only ones that differ.
        let theirs = Regions::extents_of(decomposition);
        (0..4).all(|i| self.extents[i] == theirs[i])
    }

    fn extents_of(d: &Decomposition) -> [[u64; 3]; 4] {
        [d.local, d.halo, d.halo_hi, d.alloc]
    }

    /// The messages, each with rank -1: what [`Regions::peers`] completes.
    pub(crate) fn unpeered(&self) -> &[Neighbour] {
        &self.unpeered
    }

    /// The messages of the part `decomposition` (of these extents: [`Regions::fit`]): one per
    /// direction of the declared neighbourhood that has a neighbour and a halo on either
    /// side, in increasing [`direction_tag`].
    pub(crate) fn neighbours(&self, decomposition: &Decomposition) -> Vec<Neighbour> {
        self.peers(decomposition)
            .map(|(i, rank)| Neighbour {
                rank,
                ..self.unpeered[i].clone()
            })
            .collect()
    }

    /// The messages of the part `decomposition` (of these extents), as the index of each in
    /// [`Regions::unpeered`] and its peer there, in order: every message but those whose
    /// direction has no neighbour (past a non-periodic boundary).
    pub(crate) fn peers<'a>(
        &'a self,
        decomposition: &Decomposition,
    ) -> impl Iterator<Item = (usize, i32)> + 'a {
        debug_assert!(self.fit(decomposition), "regions of another part's extents");
        let ranks = decomposition.neighbour_ranks();
        self.unpeered
            .iter()
            .enumerate()
            .filter_map(move |(i, n)| ranks.get(n.direction).map(|rank| (i, rank)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::ElemType;
    use super::*;

    fn spec(grid: [u64; 3], procs: [u32; 3], periodic: [bool; 3], halo: [u32; 3]) -> DomainSpec {
        DomainSpec {
            grid,
            procs: Some(procs),
            periodic,
            halo,
            elem: ElemType::F64,
            fields: 1,
            layout: Default::default(),
        }
    }

    fn ranks_of(spec: &DomainSpec) -> i32 {
        spec.procs.map_or(1, |p| p.iter().product::<u32>() as i32)
    }

    fn plans(spec: &DomainSpec) -> Vec<HaloPlan> {
        let ranks = ranks_of(spec);
        (0..ranks)
            .map(|r| HaloPlan::compile(spec, ranks, r).expect("valid declaration"))
            .collect()
    }

    /// The value of global cell `g` (wrapped into the grid): its global index + 1, so that 0
    /// marks a halo cell nothing was written to.
    fn value_of(grid: [u64; 3], g: [u64; 3]) -> u64 {
        1 + g[0] + grid[0] * (g[1] + grid[1] * g[2])
    }

    /// The global cell mirrored by allocated coordinates `at`, wrapped in periodic
    /// dimensions; `None` past a non-periodic boundary.
    fn mirrored(d: &Decomposition, at: [u64; 3]) -> Option<[u64; 3]> {
        let g = d.global_of(at);
        let mut out = [0; 3];
        for k in 0..3 {
            let n = d.grid[k] as i64;
            if !(0..n).contains(&g[k]) && !d.periodic[k] {
                return None;
            }
            out[k] = g[k].rem_euclid(n) as u64;
        }
        Some(out)
    }

    fn is_interior(d: &Decomposition, at: [u64; 3]) -> bool {
        (0..3).all(|k| at[k] >= d.halo[k] && at[k] < d.halo[k] + d.local[k])
    }

    fn cells(d: &Decomposition) -> impl Iterator<Item = [u64; 3]> + '_ {
        let [ax, ay, az] = d.alloc;
        (0..az).flat_map(move |z| (0..ay).flat_map(move |y| (0..ax).map(move |x| [x, y, z])))
    }

    /// Runs one exchange of every rank's plan on the host: each rank's array starts with its
    /// interior holding the values of its global cells and its halos 0; every send region is
    /// read element by element with `index_of` into a message keyed (source, destination,
    /// tag), and every receive region is written from the message it matches. Then every
    /// halo cell with a neighbour must hold the value of the global cell it mirrors, every
    /// other halo cell 0, and the interior must be unchanged.
    fn simulate_exchange(spec: &DomainSpec) {
        let plans = plans(spec);
        let mut arrays: Vec<Vec<u64>> = plans
            .iter()
            .map(|p| {
                let d = &p.decomposition;
                let mut a = vec![0; d.alloc_elems() as usize];
                for at in cells(d).filter(|&at| is_interior(d, at)) {
                    let g = d.global_of(at).map(|c| c as u64);
                    a[d.index(at) as usize] = value_of(d.grid, g);
                }
                a
            })
            .collect();

        let mut mailbox: HashMap<(i32, i32, i32), Vec<u64>> = HashMap::new();
        for p in &plans {
            let d = &p.decomposition;
            for n in &p.neighbours {
                let Some(send) = n.send else { continue };
                let packed: Vec<u64> = (0..send.elems())
                    .map(|e| {
                        let i = send.index_of(e);
                        assert!(i < d.alloc_elems(), "rank {}: {n:?}", d.rank);
                        let at = [
                            i % d.alloc[0],
                            (i / d.alloc[0]) % d.alloc[1],
                            i / (d.alloc[0] * d.alloc[1]),
                        ];
                        assert!(is_interior(d, at), "rank {} sends halo cell {at:?}", d.rank);
                        arrays[d.rank as usize][i as usize]
                    })
                    .collect();
                let key = (d.rank, n.rank, n.send_tag);
                assert!(
                    mailbox.insert(key, packed).is_none(),
                    "two messages {key:?} in {spec:?}"
                );
            }
        }

        for p in &plans {
            let d = &p.decomposition;
            let mut written = vec![0u32; d.alloc_elems() as usize];
            for n in &p.neighbours {
                let Some(recv) = n.recv else { continue };
                let key = (n.rank, d.rank, n.recv_tag);
                let message = mailbox
                    .remove(&key)
                    .unwrap_or_else(|| panic!("no message {key:?} for {n:?} in {spec:?}"));
                assert_eq!(message.len() as u64, recv.elems(), "{key:?} in {spec:?}");
                for (e, v) in message.into_iter().enumerate() {
                    let i = recv.index_of(e as u64) as usize;
                    arrays[d.rank as usize][i] = v;
                    written[i] += 1;
                }
            }
            for at in cells(d) {
                let i = d.index(at) as usize;
                let got = arrays[d.rank as usize][i];
                if is_interior(d, at) {
                    assert_eq!(written[i], 0, "rank {}: interior {at:?} received", d.rank);
                    let g = d.global_of(at).map(|c| c as u64);
                    assert_eq!(got, value_of(d.grid, g));
                    continue;
                }
                assert!(
                    written[i] <= 1,
                    "rank {}: halo {at:?} received twice",
                    d.rank
                );
                // Padding (past the high halo) is never written.
                let padding = (0..3).any(|k| at[k] >= d.halo[k] + d.local[k] + d.halo_hi[k]);
                let want = if padding {
                    0
                } else {
                    mirrored(d, at).map_or(0, |g| value_of(d.grid, g))
                };
                assert_eq!(
                    got, want,
                    "rank {} (coords {:?}) halo cell {at:?} in {spec:?}",
                    d.rank, d.coords
                );
            }
        }
        assert!(mailbox.is_empty(), "messages never received: {mailbox:?}");
    }

    #[test]
    fn each_neighbourhood_keeps_the_directions_it_reaches_and_padding_widens_only_the_allocation() {
        use super::super::{Layout, Neighbourhood};
        let mut s = spec([9, 9, 9], [3, 3, 3], [true; 3], [1, 1, 1]);
        for (neighbourhood, count) in [
            (Neighbourhood::Faces, 6),
            (Neighbourhood::FacesEdges, 18),
            (Neighbourhood::All, 26),
        ] {
            s.layout = Layout {
                pad: [2, 0, 5],
                neighbourhood,
                ..Layout::default()
            };
            let plan = HaloPlan::compile(&s, 27, 13).expect("plan");
            assert_eq!(plan.neighbours.len(), count, "{neighbourhood:?}");
            assert!(plan.neighbours.iter().all(|n| n
                .direction
                .iter()
                .filter(|&&c| c != 0)
                .count()
                <= neighbourhood.reach()));
            let d = &plan.decomposition;
            assert_eq!(d.alloc, [3 + 2 + 2, 3 + 2, 3 + 2 + 5]);
            // Regions stay where they were in the (now wider) allocation: the -x face sends
            // the cells at x = 1 (right after the halo).
            let minus_x = plan
                .neighbours
                .iter()
                .find(|n| n.direction == [-1, 0, 0])
                .expect("-x face");
            assert_eq!(minus_x.send.expect("a send").offset, d.index([1, 1, 1]));
        }
        assert_eq!(
            "18".parse::<Neighbourhood>().ok(),
            Some(Neighbourhood::FacesEdges)
        );
        assert!("7".parse::<Neighbourhood>().is_err());
    }

    #[test]
    fn exchange_fills_every_halo_with_one_process_periodic_everywhere() {
        // Every neighbour is the rank itself, in all 26 directions.
        simulate_exchange(&spec([6, 5, 4], [1, 1, 1], [true; 3], [1; 3]));
        simulate_exchange(&spec([6, 5, 4], [1, 1, 1], [true; 3], [2, 2, 2]));
    }

    #[test]
    fn exchange_with_two_processes_periodic_reaches_the_same_rank_on_both_sides() {
        simulate_exchange(&spec([8, 6, 5], [2, 1, 1], [true; 3], [1; 3]));
        simulate_exchange(&spec([4, 4, 4], [2, 2, 2], [true; 3], [2; 3]));
    }

    #[test]
    fn exchange_with_uneven_splits() {
        simulate_exchange(&spec([10, 7, 5], [3, 2, 1], [false; 3], [1; 3]));
        simulate_exchange(&spec([10, 7, 5], [3, 2, 1], [true; 3], [1; 3]));
        simulate_exchange(&spec([10, 7, 5], [3, 2, 1], [true, false, true], [1; 3]));
        // y split 3, 2, 2, 2 with halo 2.
        simulate_exchange(&spec([5, 9, 3], [1, 4, 1], [true, true, false], [2, 2, 1]));
    }

    #[test]
    fn exchange_on_non_cubic_grids_with_halo_two() {
        simulate_exchange(&spec([12, 5, 9], [2, 2, 2], [true, false, true], [2; 3]));
        simulate_exchange(&spec([13, 4, 6], [3, 1, 2], [false, true, true], [2, 1, 2]));
        // Local extents equal to the halo width.
        simulate_exchange(&spec([3, 4, 4], [3, 1, 1], [true; 3], [1; 3]));
    }

    #[test]
    fn exchange_with_halo_widths_that_differ_by_side_and_padding() {
        use super::super::Layout;
        let with = |mut s: DomainSpec, lo: [u32; 3], hi: [u32; 3], pad: [u32; 3]| {
            s.layout = Layout {
                halo_lo: Some(lo),
                halo_hi: Some(hi),
                pad,
                ..Layout::default()
            };
            s
        };
        // An upwind scheme: halos on the low sides only; the reverse; a 2-D code with z
        // unsplit; mixed widths with padding; over periodic and bounded grids.
        for (procs, periodic, lo, hi, pad) in [
            ([2, 2, 2], [true; 3], [1, 1, 1], [0, 0, 0], [0, 0, 0]),
            ([2, 2, 2], [true; 3], [0, 0, 0], [2, 1, 1], [1, 0, 0]),
            (
                [3, 2, 1],
                [true, false, true],
                [1, 2, 0],
                [1, 1, 0],
                [0, 0, 0],
            ),
            (
                [3, 1, 2],
                [false, true, true],
                [2, 0, 1],
                [1, 2, 0],
                [3, 1, 2],
            ),
            ([1, 1, 1], [true; 3], [0, 1, 2], [2, 0, 1], [1, 1, 1]),
        ] {
            let base = spec([12, 9, 8], procs, periodic, [1; 3]);
            simulate_exchange(&with(base, lo, hi, pad));
        }
    }

    #[test]
    fn a_side_without_halo_sends_and_receives_nothing_that_way() {
        use super::super::Layout;
        let mut s = spec([12, 9, 8], [3, 1, 1], [true, false, false], [1; 3]);
        s.layout = Layout {
            halo_lo: Some([1, 0, 0]),
            halo_hi: Some([0, 0, 0]),
            ..Layout::default()
        };
        let plan = HaloPlan::compile(&s, 3, 1).expect("plan");
        // x only: -x receives (its low halo) but sends nothing (the neighbour has no high
        // halo); +x sends (into the neighbour's low halo) and receives nothing.
        let dirs: Vec<[i8; 3]> = plan.neighbours.iter().map(|n| n.direction).collect();
        assert_eq!(dirs, vec![[-1, 0, 0], [1, 0, 0]]);
        assert!(plan.neighbours[0].send.is_none() && plan.neighbours[0].recv.is_some());
        assert!(plan.neighbours[1].send.is_some() && plan.neighbours[1].recv.is_none());
        assert_eq!(plan.decomposition.alloc, [4 + 1, 9, 8]);
    }

    #[test]
    fn exchange_with_no_halo_in_one_dimension() {
        simulate_exchange(&spec([9, 8, 7], [2, 2, 2], [true; 3], [1, 0, 2]));
        simulate_exchange(&spec([9, 8, 7], [1, 1, 1], [true; 3], [0, 1, 1]));
        simulate_exchange(&spec([9, 8, 7], [2, 1, 3], [false; 3], [2, 2, 0]));
    }

    #[test]
    fn direction_tags_are_distinct_and_opposite_directions_sum_to_26() {
        let dirs = directions();
        let tags: Vec<i32> = dirs.iter().map(|&d| direction_tag(d)).collect();
        let mut expected: Vec<i32> = (0..27).filter(|&t| t != 13).collect();
        assert_eq!(tags, expected);
        expected.dedup();
        assert_eq!(expected.len(), 26);
        assert_eq!(direction_tag([-1, -1, -1]), 0);
        assert_eq!(direction_tag([0, 0, 0]), 13);
        assert_eq!(direction_tag([1, 1, 1]), 26);
        for d in dirs {
            assert_eq!(direction_tag(d) + direction_tag(d.map(|c| -c)), 26);
        }
    }

    #[test]
    fn neighbours_are_in_tag_order_with_matching_tags() {
        let plan = HaloPlan::compile(&spec([9, 9, 9], [3, 3, 3], [false; 3], [1; 3]), 27, 13)
            .expect("valid declaration");
        assert_eq!(plan.neighbours.len(), 26);
        for (n, d) in plan.neighbours.iter().zip(directions()) {
            assert_eq!(n.direction, d);
            assert_eq!(n.send_tag, direction_tag(d));
            assert_eq!(n.recv_tag, 26 - n.send_tag);
            assert_eq!(n.send.map(|s| s.elems()), n.recv.map(|s| s.elems()));
        }
    }

    #[test]
    fn kind_counts_follow_boundaries_and_halo_widths() {
        let inner = HaloPlan::compile(&spec([9, 9, 9], [3, 3, 3], [false; 3], [1; 3]), 27, 13)
            .expect("valid declaration");
        assert_eq!(inner.kind_counts(), (6, 12, 8));
        let corner = HaloPlan::compile(&spec([8, 8, 8], [2, 2, 2], [false; 3], [1; 3]), 8, 0)
            .expect("valid declaration");
        assert_eq!(corner.kind_counts(), (3, 3, 1));
        assert!(corner
            .neighbours
            .iter()
            .all(|n| n.direction.iter().all(|&c| c >= 0)));
        let flat = HaloPlan::compile(&spec([8, 8, 8], [1, 1, 1], [true; 3], [1, 1, 0]), 1, 0)
            .expect("valid declaration");
        assert_eq!(flat.kind_counts(), (4, 4, 0));
        let none = HaloPlan::compile(&spec([8, 8, 8], [1, 1, 1], [false; 3], [1; 3]), 1, 0)
            .expect("valid declaration");
        assert_eq!(none.kind_counts(), (0, 0, 0));
        assert_eq!(none.send_elems(), 0);
    }

    #[test]
    fn regions_of_one_rank_are_where_the_semantics_put_them() {
        // Rank 0 of 10x7x5 over 3x2x1: local 4x4x5, alloc 6x6x7.
        let plan = HaloPlan::compile(&spec([10, 7, 5], [3, 2, 1], [false; 3], [1; 3]), 6, 0)
            .expect("valid declaration");
        let d = &plan.decomposition;
        assert_eq!(d.alloc, [6, 6, 7]);
        // +x face: send x = 4 (last interior column), receive x = 5; y in [1, 5), z in [1, 6).
        let face = plan
            .neighbours
            .iter()
            .find(|n| n.direction == [1, 0, 0])
            .expect("+x neighbour");
        assert_eq!(face.rank, 2);
        assert_eq!(face.send.expect("send").offset, d.index([4, 1, 1]));
        assert_eq!(face.recv.expect("recv").offset, d.index([5, 1, 1]));
        assert_eq!(face.send.expect("send").count, [4, 5, 1]);
        assert_eq!(face.send.expect("send").stride, [6, 36, 180]);
        assert_eq!(face.send.expect("send").contiguous_run(), 1);
        // +y face: rows of x, contiguous.
        let face = plan
            .neighbours
            .iter()
            .find(|n| n.direction == [0, 1, 0])
            .expect("+y neighbour");
        assert_eq!(face.rank, 1);
        assert_eq!(face.send.expect("send").offset, d.index([1, 4, 1]));
        assert_eq!(face.recv.expect("recv").offset, d.index([1, 5, 1]));
        assert_eq!(face.send.expect("send").count, [4, 5, 1]);
        assert_eq!(face.send.expect("send").contiguous_run(), 4);
        // +x+y edge: one column along z.
        let edge = plan
            .neighbours
            .iter()
            .find(|n| n.direction == [1, 1, 0])
            .expect("+x+y neighbour");
        assert_eq!(edge.rank, 3);
        assert_eq!(edge.send.expect("send").offset, d.index([4, 4, 1]));
        assert_eq!(edge.recv.expect("recv").offset, d.index([5, 5, 1]));
        assert_eq!(edge.send.expect("send").count, [5, 1, 1]);
        assert_eq!(edge.send.expect("send").stride, [36, 180, 180]);
        assert_eq!(plan.kind_counts(), (2, 1, 0));
    }

    #[test]
    fn compile_reports_declaration_errors() {
        let err = HaloPlan::compile(&spec([8, 8, 8], [2, 2, 1], [true; 3], [1; 3]), 3, 0)
            .expect_err("wrong process grid");
        assert_eq!(
            err.to_string(),
            "process grid 2x2x1 has 4 ranks; the job has 3"
        );
        assert!(err.is_collective());
    }

    #[test]
    fn plans_serialize_to_json() {
        let plan = HaloPlan::compile(&spec([8, 6, 4], [2, 1, 1], [true; 3], [1; 3]), 2, 1)
            .expect("valid declaration");
        let json = serde_json::to_value(&plan).expect("serializes");
        assert_eq!(json["spec"]["elem"], "f64");
        assert_eq!(json["decomposition"]["coords"][0], 1);
        assert_eq!(
            json["neighbours"].as_array().map(Vec::len),
            Some(plan.neighbours.len())
        );
        assert_eq!(json["neighbours"][0]["send_tag"], 0);
    }
}
