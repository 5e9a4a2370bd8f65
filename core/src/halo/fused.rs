//! Fused mode's descriptors: where each boundary cell of a field goes in the neighbours'
//! halos, for the application's kernels (`kernels-cu/haloport_device.h`), and the same logic
//! on the host (the host backend's twin of the header's functions).
//!
//! A descriptor ([`haloport_fused`]) holds, per neighbour message, the box of this rank's
//! cells the neighbour needs (its send box, [`Decomposition::halo_boxes`]) and where the
//! box's first cell lands in the neighbour's array (the neighbour's receive box in the
//! opposite direction) with the neighbour's strides: a cell `c` of the box goes to element
//! `dest_offset + sum_k (c_k - lo_k) * dest_stride_k` of the neighbour's field. Both boxes have
//! the same extents and order, as the ordinary exchange's pack and unpack regions have.

// The host twins store through raw addresses, as the host backend's kernels do.
#![allow(unsafe_code)]

use crate::domain::Decomposition;
use crate::error::{Error, Result};
use crate::shared::{haloport_fused, haloport_fused_message, HALOPORT_FUSED_MESSAGES};

/// One neighbour's message of one field, for [`descriptor`].
#[derive(Debug, Clone, Copy)]
pub struct FusedTarget<'a> {
    /// The direction of the neighbour, each component -1, 0 or 1.
    pub direction: [i8; 3],
    /// The neighbour's part of the grid (its array's extents and halos).
    pub peer: &'a Decomposition,
    /// Address of the neighbour's field element 0 as this process reaches it.
    pub dest: u64,
    /// Address of the neighbour's count of this message's cells arrived.
    pub counter: u64,
}

/// The start and extents of the box of this rank's cells that the neighbour in direction `d`
/// needs, in this rank's array (as [`Decomposition::halo_boxes`] lays it out); `None` where
/// it is empty.
fn send_box(me: &Decomposition, d: [i8; 3]) -> Option<([u64; 3], [u64; 3])> {
    let (n, lo, hi) = (me.local, me.halo, me.halo_hi);
    let mut start = [0; 3];
    let mut count = [0; 3];
    for k in 0..3 {
        (start[k], count[k]) = match d[k] {
            -1 => (lo[k], hi[k]),
            0 => (lo[k], n[k]),
            _ => (n[k], lo[k]),
        };
    }
    count.iter().all(|&c| c > 0).then_some((start, count))
}

fn to_u32(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| {
        Error::InvalidInput(format!(
            "fused mode indexes cells with 32 bits: {what} {v} does not fit"
        ))
    })
}

/// The descriptor of one field of `me` (elements of `elem_bytes` bytes) for the messages
/// `targets`, in their order; those whose send box is empty (a halo of width 0) are left out.
///
/// # Errors
/// [`Error::InvalidInput`] for more than [`HALOPORT_FUSED_MESSAGES`] messages, a neighbour
/// whose receive box does not match the send box, or indices beyond 32 bits.
pub fn descriptor(
    me: &Decomposition,
    elem_bytes: u32,
    targets: &[FusedTarget<'_>],
) -> Result<haloport_fused> {
    let mut out = haloport_fused {
        elem_bytes,
        ..haloport_fused::default()
    };
    let mut low_side = [false; 3];
    let mut high_side = [false; 3];
    for t in targets {
        let Some((start, count)) = send_box(me, t.direction) else {
            continue;
        };
        let opposite = t.direction.map(|c| -c);
        let recv = t.peer.halo_boxes(opposite).1.ok_or_else(|| {
            Error::InvalidInput(format!(
                "rank {}'s halo in direction {opposite:?} is empty where rank {} sends",
                t.peer.rank, me.rank
            ))
        })?;
        if recv.count != count {
            return Err(Error::InvalidInput(format!(
                "rank {}'s halo {:?} in direction {opposite:?} does not match rank {}'s cells {count:?}",
                t.peer.rank, recv.count, me.rank
            )));
        }
        let m = out.messages as usize;
        if m >= HALOPORT_FUSED_MESSAGES as usize {
            return Err(Error::InvalidInput(format!(
                "fused mode takes at most {HALOPORT_FUSED_MESSAGES} messages per field"
            )));
        }
        let mut lo = [0; 3];
        let mut hi = [0; 3];
        for k in 0..3 {
            lo[k] = to_u32(start[k], "a cell index")?;
            hi[k] = to_u32(start[k] + count[k], "a cell index")?;
            low_side[k] |= t.direction[k] == -1;
            high_side[k] |= t.direction[k] == 1;
        }
        out.message[m] = haloport_fused_message {
            dest: t.dest,
            dest_offset: recv.offset,
            dest_stride: recv.stride,
            counter: t.counter,
            lo,
            hi,
        };
        out.messages += 1;
    }
    // Cells no message takes: the interior less the boundary on each side that sends.
    for k in 0..3 {
        let first = me.halo[k] + if low_side[k] { me.halo_hi[k] } else { 0 };
        let end =
            (me.halo[k] + me.local[k]).saturating_sub(if high_side[k] { me.halo[k] } else { 0 });
        out.quiet_lo[k] = to_u32(first, "a cell index")?;
        out.quiet_hi[k] = to_u32(end.max(first), "a cell index")?;
    }
    Ok(out)
}

/// Whether `cell` lies in `[lo, hi)`.
fn in_box(lo: &[u32; 3], hi: &[u32; 3], cell: [u32; 3]) -> bool {
    (0..3).all(|k| cell[k] >= lo[k] && cell[k] < hi[k])
}

/// The byte address message `e` (of elements of `elem_bytes`) sends `cell` to, if it takes
/// it, as `haloport_message_target` answers on the device.
fn message_target(e: &haloport_fused_message, elem_bytes: u32, cell: [u32; 3]) -> Option<u64> {
    in_box(&e.lo, &e.hi, cell).then(|| {
        let at = e.dest_offset
            + (0..3)
                .map(|k| u64::from(cell[k] - e.lo[k]) * e.dest_stride[k])
                .sum::<u64>();
        e.dest + at * u64::from(elem_bytes)
    })
}

/// Where `cell` goes: `(message, byte address)` for each message that takes it, as
/// `haloport_quiet` and `haloport_target` answer on the device.
pub fn targets(d: &haloport_fused, cell: [u32; 3]) -> impl Iterator<Item = (usize, u64)> + '_ {
    let quiet = in_box(&d.quiet_lo, &d.quiet_hi, cell);
    d.message[..if quiet { 0 } else { d.messages as usize }]
        .iter()
        .enumerate()
        .filter_map(move |(m, e)| Some((m, message_target(e, d.elem_bytes, cell)?)))
}

/// The messages the box `[lo, hi)` feeds, each with the box's cells in it, as
/// `haloport_box_begin` gathers them (in message order; the device's order may differ).
pub fn box_targets(d: &haloport_fused, lo: [u32; 3], hi: [u32; 3]) -> Vec<(usize, u64)> {
    (0..d.messages as usize)
        .map(|m| (m, box_cells(d, m, lo, hi)))
        .filter(|&(_, cells)| cells != 0)
        .collect()
}

/// Whether no message takes any cell of the box `[lo, hi)` (it lies in the quiet cells), as
/// `haloport_box_quiet` answers: a block with such a box stores and reports nothing.
pub fn box_quiet(d: &haloport_fused, lo: [u32; 3], hi: [u32; 3]) -> bool {
    (0..3).all(|k| lo[k] >= d.quiet_lo[k] && hi[k] <= d.quiet_hi[k])
}

/// Where `cell` of a box goes among the box's `targets` ([`box_targets`]), as
/// `haloport_box_store_f64` answers: the byte addresses.
pub fn box_cell_targets<'a>(
    d: &'a haloport_fused,
    targets: &'a [(usize, u64)],
    cell: [u32; 3],
) -> impl Iterator<Item = u64> + 'a {
    targets
        .iter()
        .filter_map(move |&(m, _)| message_target(&d.message[m], d.elem_bytes, cell))
}

/// Cells of `[lo, hi)` that message `m` carries, as `haloport_box_cells` answers.
pub fn box_cells(d: &haloport_fused, m: usize, lo: [u32; 3], hi: [u32; 3]) -> u64 {
    let e = &d.message[m];
    (0..3)
        .map(|k| {
            let (a, b) = (lo[k].max(e.lo[k]), hi[k].min(e.hi[k]));
            u64::from(b.saturating_sub(a))
        })
        .product()
}

/// The host twin of `haloport_store_f64`: stores `value` wherever `cell` goes.
///
/// # Safety
/// Every address the descriptor leads to is live memory of this process (the host backend's
/// device memory, or a neighbour's opened through it) that nothing else writes meanwhile.
pub unsafe fn store_f64(d: &haloport_fused, cell: [u32; 3], value: f64) {
    for (_, addr) in targets(d, cell) {
        // SAFETY: forwarded from this function's contract.
        unsafe { (addr as *mut f64).write_volatile(value) };
    }
}

/// The host twin of `haloport_store_f32`.
///
/// # Safety
/// As for [`store_f64`].
pub unsafe fn store_f32(d: &haloport_fused, cell: [u32; 3], value: f32) {
    for (_, addr) in targets(d, cell) {
        // SAFETY: forwarded from this function's contract.
        unsafe { (addr as *mut f32).write_volatile(value) };
    }
}

/// The host twin of `haloport_block_done`: after the stores of the cells of `[lo, hi)`, adds
/// each message's share of them to the neighbour's count (release: the stores before it are
/// seen by whoever sees the count).
///
/// # Safety
/// Each message's counter is a live, 8-byte aligned u64 of this process's memory, accessed
/// only atomically meanwhile.
pub unsafe fn block_done(d: &haloport_fused, lo: [u32; 3], hi: [u32; 3]) {
    // SAFETY: forwarded from this function's contract.
    unsafe { box_done(d, &box_targets(d, lo, hi)) };
}

/// The host twin of `haloport_box_done`: adds each of a box's `targets` ([`box_targets`]) to
/// the neighbour's count, as [`block_done`] does.
///
/// # Safety
/// As for [`block_done`].
pub unsafe fn box_done(d: &haloport_fused, targets: &[(usize, u64)]) {
    for &(m, cells) in targets {
        // SAFETY: forwarded from this function's contract.
        let counter =
            unsafe { std::sync::atomic::AtomicU64::from_ptr(d.message[m].counter as *mut u64) };
        counter.fetch_add(cells, std::sync::atomic::Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::domain::{DomainSpec, HaloPlan};

    /// Distinct fake addresses: rank r's field at `(r + 1) << 32`, elements of 8 bytes.
    fn field_of(rank: i32) -> u64 {
        (u64::try_from(rank).expect("a rank") + 1) << 32
    }

    /// Every rank's descriptor of a declaration of `ranks` ranks.
    fn descriptors(spec: &DomainSpec, ranks: i32) -> Vec<(HaloPlan, haloport_fused)> {
        let plans: Vec<HaloPlan> = (0..ranks)
            .map(|r| HaloPlan::compile(spec, ranks, r).expect("a plan"))
            .collect();
        plans
            .iter()
            .map(|plan| {
                let targets: Vec<FusedTarget<'_>> = plan
                    .neighbours
                    .iter()
                    .map(|n| FusedTarget {
                        direction: n.direction,
                        peer: &plans[n.rank as usize].decomposition,
                        dest: field_of(n.rank),
                        counter: 0,
                    })
                    .collect();
                let d = descriptor(&plan.decomposition, 8, &targets).expect("a descriptor");
                (plan.clone(), d)
            })
            .collect()
    }

    /// The global cell an array index of `d` stands for (halo cells wrapped where periodic).
    fn global(d: &Decomposition, index: [u64; 3]) -> [i64; 3] {
        let mut g = [0; 3];
        for k in 0..3 {
            let n = d.grid[k] as i64;
            let c = d.origin[k] as i64 + index[k] as i64 - d.halo[k] as i64;
            g[k] = if d.periodic[k] { c.rem_euclid(n) } else { c };
        }
        g
    }

    fn index_of(d: &Decomposition, element: u64) -> [u64; 3] {
        let [ax, ay, _] = d.alloc;
        [element % ax, element / ax % ay, element / (ax * ay)]
    }

    /// Every halo cell a rank's plan receives is written exactly once, by the rank owning the
    /// same global cell, and nothing else is written.
    fn check(spec: &DomainSpec, ranks: i32) {
        let all = descriptors(spec, ranks);
        let mut written: BTreeMap<(i32, u64), [i64; 3]> = BTreeMap::new();
        for (plan, d) in &all {
            let me = &plan.decomposition;
            let alloc = me.alloc.map(|a| u32::try_from(a).expect("small"));
            for_each_cell([0; 3], alloc, |cell| {
                for (_, addr) in targets(d, cell) {
                    let rank = i32::try_from((addr >> 32) - 1).expect("a rank");
                    let element = (addr & 0xffff_ffff) / 8;
                    let source = global(me, cell.map(u64::from));
                    let twice = written.insert((rank, element), source);
                    assert!(twice.is_none(), "rank {rank} element {element} twice");
                }
            });
        }
        // What the ordinary exchange receives, cell by cell, is what was written.
        let mut expected = 0;
        for (plan, _) in &all {
            let me = &plan.decomposition;
            for n in &plan.neighbours {
                let Some(recv) = me.halo_boxes(n.direction).1 else {
                    continue;
                };
                for z in 0..recv.count[2] {
                    for y in 0..recv.count[1] {
                        for x in 0..recv.count[0] {
                            let e = recv.offset
                                + x * recv.stride[0]
                                + y * recv.stride[1]
                                + z * recv.stride[2];
                            let got = written.get(&(me.rank, e)).copied();
                            assert_eq!(got, Some(global(me, index_of(me, e))), "rank {}", me.rank);
                            expected += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(
            written.len(),
            expected,
            "cells written that no halo receives"
        );
    }

    fn spec(grid: [u64; 3], halo: ([u32; 3], [u32; 3]), periodic: [bool; 3]) -> DomainSpec {
        DomainSpec {
            grid,
            procs: None,
            periodic,
            halo: [1; 3],
            elem: crate::domain::ElemType::F64,
            fields: 1,
            layout: crate::domain::Layout {
                halo_lo: Some(halo.0),
                halo_hi: Some(halo.1),
                pad: [1, 0, 2],
                ..crate::domain::Layout::default()
            },
        }
    }

    #[test]
    fn every_halo_cell_is_written_once_by_the_owner_of_its_global_cell() {
        for ranks in [1, 2, 3, 4, 8] {
            check(&spec([10, 9, 8], ([1, 1, 1], [1, 1, 1]), [true; 3]), ranks);
            check(
                &spec([12, 7, 9], ([2, 1, 0], [1, 2, 1]), [true, false, true]),
                ranks,
            );
        }
        check(&spec([16, 6, 6], ([3, 1, 2], [2, 3, 1]), [true; 3]), 4);
    }

    /// Rank 0's descriptor and allocated extents among 4 ranks of a periodic 10x9x8 grid with
    /// uneven halos.
    fn uneven_rank_of_four() -> (haloport_fused, [u32; 3]) {
        let all = descriptors(&spec([10, 9, 8], ([1, 2, 1], [2, 1, 1]), [true; 3]), 4);
        let (plan, d) = &all[0];
        let alloc = plan
            .decomposition
            .alloc
            .map(|a| u32::try_from(a).expect("small"));
        (*d, alloc)
    }

    /// A box's targets send each of its cells where the whole descriptor does, and count per
    /// message the cells of the box that message takes.
    #[test]
    fn a_box_targets_its_cells_as_the_whole_descriptor_does() {
        let (descriptor, alloc) = uneven_rank_of_four();
        let d = &descriptor;
        let mut fed = 0;
        for tile in [[4, 1, 1], [2, 4, 1], [1, 8, 2], [3, 3, 3]] {
            for_each_tile(alloc, tile, |lo, hi| {
                let box_targets = box_targets(d, lo, hi);
                let mut counted = vec![0; d.messages as usize];
                for_each_cell(lo, hi, |cell| {
                    let whole: Vec<u64> = targets(d, cell).map(|(_, a)| a).collect();
                    let from_box: Vec<u64> = box_cell_targets(d, &box_targets, cell).collect();
                    assert_eq!(from_box, whole, "cell {cell:?} of box {lo:?}..{hi:?}");
                    for (m, _) in targets(d, cell) {
                        counted[m] += 1;
                    }
                });
                for (m, &cells) in counted.iter().enumerate() {
                    let listed = box_targets.iter().find(|&&(t, _)| t == m).map(|&(_, c)| c);
                    assert_eq!(listed.unwrap_or(0), cells, "message {m} of {lo:?}..{hi:?}");
                }
                fed += usize::from(!box_targets.is_empty());
            });
        }
        assert!(fed > 0, "no box fed a message");
    }

    /// A quiet box feeds no message (the kernels skip it without a barrier), on both ranks of
    /// a grid periodic in y only; tiles of either kind occur.
    #[test]
    fn a_quiet_box_feeds_no_message() {
        let all = descriptors(
            &spec([40, 12, 10], ([1; 3], [1; 3]), [false, true, false]),
            2,
        );
        for (plan, d) in &all {
            let alloc = plan
                .decomposition
                .alloc
                .map(|a| u32::try_from(a).expect("small"));
            let (mut quiet, mut fed) = (0, 0);
            for tile in [[4, 2, 2], [8, 1, 3]] {
                for_each_tile(alloc, tile, |lo, hi| {
                    let feeds = !box_targets(d, lo, hi).is_empty();
                    if box_quiet(d, lo, hi) {
                        assert!(!feeds, "quiet box {lo:?}..{hi:?} feeds");
                        quiet += 1;
                    }
                    fed += usize::from(feeds);
                });
            }
            assert!(quiet > 0 && fed > 0, "quiet {quiet}, fed {fed}");
        }
    }

    fn for_each_tile(alloc: [u32; 3], tile: [u32; 3], mut f: impl FnMut([u32; 3], [u32; 3])) {
        for z in (0..alloc[2]).step_by(tile[2] as usize) {
            for y in (0..alloc[1]).step_by(tile[1] as usize) {
                for x in (0..alloc[0]).step_by(tile[0] as usize) {
                    let lo = [x, y, z];
                    f(lo, std::array::from_fn(|k| (lo[k] + tile[k]).min(alloc[k])));
                }
            }
        }
    }

    fn for_each_cell(lo: [u32; 3], hi: [u32; 3], mut f: impl FnMut([u32; 3])) {
        for z in lo[2]..hi[2] {
            for y in lo[1]..hi[1] {
                for x in lo[0]..hi[0] {
                    f([x, y, z]);
                }
            }
        }
    }

    #[test]
    fn boxes_count_the_cells_each_message_carries() {
        let (descriptor, alloc) = uneven_rank_of_four();
        let d = &descriptor;
        for m in 0..d.messages as usize {
            let e = &d.message[m];
            let whole: u64 = (0..3).map(|k| u64::from(e.hi[k] - e.lo[k])).product();
            assert_eq!(box_cells(d, m, [0; 3], alloc), whole);
            // Split into slabs along z, the parts add up.
            let parts: u64 = (0..alloc[2])
                .map(|z| box_cells(d, m, [0, 0, z], [alloc[0], alloc[1], z + 1]))
                .sum();
            assert_eq!(parts, whole);
        }
    }
}
