//! Regions of fields as the region kernels see them: the index rule and how a launch's grid
//! blocks are shared out between regions (here), the stencil's launch geometry ([`stencil`]'s
//! items, re-exported here), and the copy-engine form of a region ([`Copy3d`]).
//!
//! The rules are those of `kernels-cu/haloport_shared.h` (`hp_region`, `hp_regions_args`,
//! `hp_stencil_args`) and `kernels-cu/hp_regions.cuh`; the host backend's twins use these
//! functions, callers use them to build the tables the kernels read. Pure logic: no memory is
//! touched.
//!
//! ## Launch convention
//! A region of `n` elements gets `ceil(n / (threads * elems_per_thread))` grid blocks (at least
//! one; [`blocks_for`]); [`assign_blocks`] numbers them region after region, and the launch
//! needs at least the total ([`grid_blocks`]). [`ELEMS_PER_THREAD`] is the suggested
//! elements per thread: enough to amortize the block's region look-up, few enough that small
//! regions still spread over several blocks. Each thread moves one element per step and strides
//! by `blocks * threads`, so any `elems_per_thread` is correct; only speed depends on it.
//!
//! ## Pairs
//! A region walked one element per row (the x faces of a halo-1 field: every element in a
//! sector of its own) may move a partner's elements too, interleaved with its own
//! ([`paired_unit`]), when the partner's element of the previous row lies within a line of its
//! own ([`pair_regions`]): one warp instruction then touches one line for both. On one H200 this
//! took the 6-face unpack of a 512^3 f64 field from 29.9 to 23.5 us
//! (`results/HISTORY.md: h200-pack-probe`).

use crate::error::{Error, Result};
use crate::shared::{hp_region, hp_regions_args};

mod copy3d;
pub mod stencil;

pub use copy3d::Copy3d;
pub use stencil::*;

/// Suggested elements per thread for [`assign_blocks`] (see the module docs).
pub const ELEMS_PER_THREAD: u64 = 4;

/// `region` described with the fewest dimensions ([`Subarray::merged`](crate::domain::Subarray::merged)):
/// the same elements in the same order; every other field kept.
pub fn merged(region: &hp_region) -> hp_region {
    let sub = crate::domain::Subarray {
        offset: region.offset,
        count: region.count,
        stride: region.stride,
    }
    .merged();
    hp_region {
        offset: sub.offset,
        count: sub.count,
        stride: sub.stride,
        ..*region
    }
}

/// Suggested threads per block for the region kernels and the stencil.
pub const THREADS: u32 = 256;

/// The run `begin..end` of a synthetic region's `n` elements that its block `local_block` of
/// `blocks` serves (`HP_PAYLOAD_SYNTHETIC` in `haloport_shared.h`, `hp_synthetic_run`): runs of
/// `ceil(n / blocks)` elements rounded up to `HP_SYNTHETIC_RUN_ALIGN`, one after another.
pub fn synthetic_run(n: u64, blocks: u32, local_block: u32) -> std::ops::Range<u64> {
    let align = u64::from(crate::shared::HP_SYNTHETIC_RUN_ALIGN);
    let per = n.div_ceil(u64::from(blocks.max(1))).div_ceil(align) * align;
    let begin = n.min(u64::from(local_block).saturating_mul(per));
    begin..n.min(begin.saturating_add(per))
}

/// Elements of a region: the product of its counts (saturating, so a nonsense region cannot
/// wrap to a small number).
pub fn elems(region: &hp_region) -> u64 {
    region.count.iter().fold(1_u64, |n, &c| n.saturating_mul(c))
}

/// The field index (elements from the field's element 0) of element `e` of `region`:
/// `offset + i0 * stride[0] + i1 * stride[1] + i2 * stride[2]` with
/// `i0 = e % count[0]`, `i1 = (e / count[0]) % count[1]`, `i2 = e / (count[0] * count[1])`,
/// in wrapping 64-bit arithmetic as the kernels compute it.
///
/// # Panics
/// When `count[0]` or `count[1]` is 0 (such a region has no element `e`).
pub fn field_index(region: &hp_region, e: u64) -> u64 {
    index_in(region.offset, region.count, region.stride, e)
}

/// The index rule itself, for any flattened subarray (the plan's
/// [`Subarray`](crate::domain::Subarray) and the kernels' `hp_region` share it).
///
/// # Panics
/// When `count[0]` or `count[1]` is 0.
pub fn index_in(offset: u64, count: [u64; 3], stride: [u64; 3], e: u64) -> u64 {
    let [c0, c1, _] = count;
    let [s0, s1, s2] = stride;
    let (i0, rest) = (e % c0, e / c0);
    let (i1, i2) = (rest % c1, rest / c1);
    offset
        .wrapping_add(i0.wrapping_mul(s0))
        .wrapping_add(i1.wrapping_mul(s1))
        .wrapping_add(i2.wrapping_mul(s2))
}

/// Grid blocks for a region of `elems` elements with `threads` threads per block and about
/// `elems_per_thread` elements per thread: `ceil(elems / (threads * elems_per_thread))`, at
/// least 1, at most `u32::MAX`.
pub fn blocks_for(elems: u64, threads: u32, elems_per_thread: u64) -> u32 {
    let per_block = u64::from(threads.max(1)).saturating_mul(elems_per_thread.max(1));
    u32::try_from(elems.div_ceil(per_block).max(1)).unwrap_or(u32::MAX)
}

/// Numbers the grid blocks of `regions` in order ([`blocks_for`] each, the first from 0), sets
/// their `first_block` and `blocks`, and returns the grid size the launch needs.
///
/// # Errors
/// [`Error::InvalidInput`] when a region has a count of 0 or the grid would exceed `u32::MAX`
/// blocks.
pub fn assign_blocks(
    regions: &mut [hp_region],
    threads: u32,
    elems_per_thread: u64,
) -> Result<u32> {
    let mut next: u32 = 0;
    for (r, region) in regions.iter_mut().enumerate() {
        if region.count.contains(&0) {
            return Err(Error::InvalidInput(format!(
                "region {r}: counts {:?} (each must be at least 1)",
                region.count
            )));
        }
        let blocks = blocks_for(elems(region), threads, elems_per_thread);
        region.first_block = next;
        region.blocks = blocks;
        next = next.checked_add(blocks).ok_or_else(|| {
            Error::InvalidInput(format!(
                "the first {} regions need more than {} grid blocks",
                r + 1,
                u32::MAX
            ))
        })?;
    }
    Ok(next)
}

/// Bytes within which two words share a 128-byte line (at best): how close a pair's elements
/// must lie.
const PAIR_REACH_BYTES: u64 = 128;

/// Unit `u` of a region paired with a partner, both of `n` elements: `(false, u / 2)` (the
/// region's own element) for even `u`, `(true, (u / 2 + n - 1) % n)` (the partner's) for odd.
pub fn paired_unit(u: u64, n: u64) -> (bool, u64) {
    let i = u / 2;
    if u % 2 == 0 {
        (false, i)
    } else {
        (true, if i == 0 { n - 1 } else { i - 1 })
    }
}

/// True when `b` may be `a`'s partner: neither signals, both are walked one element per row
/// with the same counts and strides in the same field, and `b`'s element of the previous row
/// lies within [`PAIR_REACH_BYTES`] of `a`'s.
fn pairable(a: &hp_region, b: &hp_region, elem_bytes: u32) -> bool {
    let plain = |r: &hp_region| r.message == crate::shared::HP_NO_MESSAGE && r.partner == 0;
    let reach = i128::from(PAIR_REACH_BYTES / u64::from(elem_bytes.max(1)));
    let gap = i128::from(b.offset) - i128::from(b.stride[0]) - i128::from(a.offset);
    plain(a)
        && plain(b)
        && a.payload == b.payload
        && a.stride[0] > 1
        && a.field == b.field
        && a.count == b.count
        && a.stride == b.stride
        && gap.abs() < reach
}

/// Pairs the regions of a table that `pairable` allows (each region in at most one pair; the
/// first of a pair moves both), keeps each unpaired region's blocks, gives a pair
/// [`blocks_for`] its `2n` units, renumbers the blocks in order and lists the partners last
/// (no blocks, `first_block` the grid size). Returns the grid size.
///
/// # Errors
/// As [`grid_blocks`], for the table that results.
pub fn pair_regions(
    regions: &mut Vec<hp_region>,
    elem_bytes: u32,
    threads: u32,
    elems_per_thread: u64,
) -> Result<u32> {
    let n = regions.len();
    let mut partner_of: Vec<Option<usize>> = vec![None; n];
    let mut taken = vec![false; n];
    for a in 0..n {
        if taken[a] {
            continue;
        }
        let found =
            (0..n).find(|&b| b != a && !taken[b] && pairable(&regions[a], &regions[b], elem_bytes));
        if let Some(b) = found {
            partner_of[a] = Some(b);
            taken[a] = true;
            taken[b] = true;
        }
    }
    let is_partner: Vec<bool> = (0..n).map(|r| partner_of.contains(&Some(r))).collect();
    let order: Vec<usize> = (0..n)
        .filter(|&r| !is_partner[r])
        .chain((0..n).filter(|&r| is_partner[r]))
        .collect();
    let mut new_index = vec![0; n];
    for (at, &r) in order.iter().enumerate() {
        new_index[r] = at;
    }
    let mut paired: Vec<hp_region> = order.iter().map(|&r| regions[r]).collect();
    let mut next: u32 = 0;
    for (at, &r) in order.iter().enumerate() {
        let region = &mut paired[at];
        if is_partner[r] {
            continue;
        }
        if let Some(b) = partner_of[r] {
            region.partner = new_index[b] as u32 + 1;
            region.blocks = blocks_for(2 * elems(region), threads, elems_per_thread);
        }
        region.first_block = next;
        next = next.checked_add(region.blocks).ok_or_else(|| {
            Error::InvalidInput(format!(
                "the regions need more than {} grid blocks",
                u32::MAX
            ))
        })?;
    }
    for (at, &r) in order.iter().enumerate() {
        if is_partner[r] {
            paired[at].first_block = next;
            paired[at].blocks = 0;
        }
    }
    *regions = paired;
    grid_blocks(regions)
}

/// The grid size a launch over `regions` needs: the end of the last region's blocks; checks
/// the table's rules (blocks numbered in order without gaps, from 0, counts at least 1;
/// partners last, without blocks, each moved by one region of the same shape).
///
/// # Errors
/// [`Error::InvalidInput`] naming the first region that breaks a rule.
pub fn grid_blocks(regions: &[hp_region]) -> Result<u32> {
    let served = regions.iter().take_while(|r| r.blocks > 0).count();
    let mut moved_by = vec![0_u32; regions.len()];
    for (r, region) in regions.iter().enumerate() {
        if region.partner == 0 {
            continue;
        }
        let p = region.partner as usize - 1;
        let ok = r < served
            && (served..regions.len()).contains(&p)
            && regions[p].count == region.count
            && regions[p].stride == region.stride
            && region.message == crate::shared::HP_NO_MESSAGE
            && regions[p].message == crate::shared::HP_NO_MESSAGE;
        if !ok {
            return Err(Error::InvalidInput(format!(
                "region {r}: partner {} is not a region without blocks, listed last, of the \
                 same shape, both without a message",
                region.partner
            )));
        }
        moved_by[p] += 1;
    }
    let mut next: u64 = 0;
    for (r, region) in regions.iter().enumerate() {
        if r >= served {
            if region.count.contains(&0)
                || region.blocks != 0
                || region.partner != 0
                || moved_by[r] != 1
                || u64::from(region.first_block) != next
            {
                return Err(Error::InvalidInput(format!(
                    "region {r}: after the regions with blocks come only partners (no blocks, \
                     first block {next}, moved by exactly one region)"
                )));
            }
            continue;
        }
        if region.count.contains(&0) || region.blocks == 0 {
            return Err(Error::InvalidInput(format!(
                "region {r}: counts {:?}, {} blocks (each at least 1)",
                region.count, region.blocks
            )));
        }
        if u64::from(region.first_block) != next {
            return Err(Error::InvalidInput(format!(
                "region {r}: first block {} where {next} was expected (regions are numbered in \
                 order, without gaps)",
                region.first_block
            )));
        }
        next += u64::from(region.blocks);
    }
    u32::try_from(next).map_err(|_| Error::InvalidInput(format!("regions need {next} grid blocks")))
}

/// The region grid block `block` serves, as the kernels find it: the last region whose
/// `first_block <= block`, if `block` lies inside its blocks (binary search; regions sorted by
/// `first_block`).
pub fn region_of(regions: &[hp_region], block: u32) -> Option<usize> {
    let r = regions
        .partition_point(|region| region.first_block <= block)
        .checked_sub(1)?;
    (block - regions[r].first_block < regions[r].blocks).then_some(r)
}

/// The form of the region kernels a launch over `regions` with `threads` per block may run
/// (`HP_REGIONS_*` in `kernels-cu/haloport_shared.h`): plain when no region has a message or a
/// synthetic payload and every region fits the kernels' 32-bit index rule, else full.
pub fn kernel_form(regions: &[hp_region], threads: u32, elem_bytes: u32) -> u32 {
    use crate::shared::{
        HP_PAYLOAD_COPY, HP_PAYLOAD_FIELD, HP_REGIONS_FULL, HP_REGIONS_PLAIN, HP_UNROLL,
    };
    let fits = |r: &hp_region| {
        let units = if r.partner != 0 { 2 } else { 1 } * elems(r);
        let steps = u64::from(HP_UNROLL) * u64::from(r.blocks) * u64::from(threads);
        units.saturating_add(steps) < 1 << 31 && r.stride.iter().all(|&s| s >> 32 == 0)
    };
    // The plain forms move 4- and 8-byte words only.
    let plain = elem_bytes >= 4
        && regions.iter().all(|r| {
            r.message == crate::shared::HP_NO_MESSAGE
                && matches!(r.payload, HP_PAYLOAD_FIELD | HP_PAYLOAD_COPY)
                && fits(r)
        });
    if plain {
        HP_REGIONS_PLAIN
    } else {
        HP_REGIONS_FULL
    }
}

impl hp_regions_args {
    /// The launch with `table` (its `num_regions` regions) carried in its parameters where it
    /// fits (`HP_INLINE_REGIONS`): every grid block then reads its region from the constant
    /// bank instead of searching device memory. `regions` stays the table in device memory,
    /// which the kernels read otherwise.
    #[must_use]
    pub fn with_inline_table(mut self, table: &[hp_region]) -> Self {
        use crate::shared::HP_INLINE_REGIONS;
        let regions = self.num_regions + self.num_unpack_regions;
        if table.len() <= HP_INLINE_REGIONS as usize && table.len() == regions as usize {
            self.inline_regions[..table.len()].copy_from_slice(table);
            self.table_inline = 1;
        }
        self
    }
}

/// Checks the word a region launch moves: 1, 2, 4 or 8 bytes.
///
/// # Errors
/// [`Error::InvalidInput`] naming `what` for any other size.
pub fn check_word_bytes(word_bytes: u32, what: &str) -> Result<()> {
    match word_bytes {
        1 | 2 | 4 | 8 => Ok(()),
        other => Err(Error::InvalidInput(format!(
            "{what}: words of {other} bytes (the region kernels move 1, 2, 4 or 8)"
        ))),
    }
}

/// Checks an element size: 4 (f32) or 8 (f64).
///
/// # Errors
/// [`Error::InvalidInput`] naming `what` for any other size.
pub fn check_elem_bytes(elem_bytes: u32, what: &str) -> Result<()> {
    match elem_bytes {
        4 | 8 => Ok(()),
        other => Err(Error::InvalidInput(format!(
            "{what}: elements of {other} bytes (4 for f32, 8 for f64)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Launch, LaunchDims};
    use crate::shared::{self, hp_stencil_args};

    #[test]
    fn synthetic_runs_cover_every_element_once_in_aligned_runs() {
        for (n, blocks) in [(0, 3), (1, 1), (1, 16), (45, 4), (1000, 7), (1_300_000, 16)] {
            let runs: Vec<_> = (0..blocks).map(|b| synthetic_run(n, blocks, b)).collect();
            let mut next = 0;
            for run in &runs {
                assert_eq!(run.start, next.min(n), "{n} over {blocks}: {runs:?}");
                assert!(run.start % 32 == 0 || run.is_empty(), "{runs:?}");
                next = run.end.max(next);
            }
            assert_eq!(next, n, "{n} over {blocks}: {runs:?}");
            let largest = runs.iter().map(|r| r.end - r.start).max().unwrap_or(0);
            assert!(largest <= n.div_ceil(u64::from(blocks)) + 31, "{runs:?}");
        }
    }

    use crate::Kernel;

    fn region(offset: u64, count: [u64; 3], stride: [u64; 3]) -> hp_region {
        hp_region {
            offset,
            count,
            stride,
            ..Default::default()
        }
    }

    #[test]
    fn the_index_rule_walks_innermost_first() {
        let r = region(5, [2, 3, 2], [1, 10, 100]);
        let got: Vec<u64> = (0..elems(&r)).map(|e| field_index(&r, e)).collect();
        let mut want = Vec::new();
        for i2 in 0..2 {
            for i1 in 0..3 {
                for i0 in 0..2 {
                    want.push(5 + i0 + 10 * i1 + 100 * i2);
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn blocks_are_numbered_in_order_and_found_again() {
        let mut regions = vec![
            region(0, [1, 1, 1], [1, 1, 1]),
            region(0, [100, 1, 1], [1, 1, 1]),
            region(0, [10, 10, 10], [1, 10, 100]),
        ];
        let total = assign_blocks(&mut regions, 32, 1).expect("valid regions");
        assert_eq!(
            regions
                .iter()
                .map(|r| (r.first_block, r.blocks))
                .collect::<Vec<_>>(),
            [(0, 1), (1, 4), (5, 32)]
        );
        assert_eq!(total, 37);
        assert_eq!(grid_blocks(&regions).expect("valid"), 37);
        let found: Vec<Option<usize>> = (0..39).map(|g| region_of(&regions, g)).collect();
        assert_eq!(found[0], Some(0));
        assert!(found[1..5].iter().all(|&r| r == Some(1)));
        assert!(found[5..37].iter().all(|&r| r == Some(2)));
        assert_eq!(found[37..], [None, None]);
        assert_eq!(region_of(&[], 0), None);
    }

    /// The x faces (halo 1) of a 514 x 514 x 514 allocation, merged: one element per row.
    fn x_faces(halo: bool) -> [hp_region; 2] {
        let (a, s) = (514, [514, 514 * 514, 514 * 514 * 514]);
        let (lo, hi) = if halo { (0, 513) } else { (1, 512) };
        [lo, hi].map(|x| hp_region {
            message: crate::shared::HP_NO_MESSAGE,
            ..region(x + a + a * a, [512, 512, 1], s)
        })
    }

    #[test]
    fn the_plain_form_serves_only_plain_tables_within_32_bits() {
        use crate::shared::{
            HP_NO_MESSAGE, HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FULL, HP_REGIONS_PLAIN,
        };
        let plain = |count: [u64; 3], stride: [u64; 3], blocks: u32| hp_region {
            message: HP_NO_MESSAGE,
            blocks,
            ..region(0, count, stride)
        };
        let face = plain([512, 512, 1], [1, 514, 514 * 514], 256);
        assert_eq!(kernel_form(&[face], 256, 8), HP_REGIONS_PLAIN);
        assert_eq!(kernel_form(&[], 256, 8), HP_REGIONS_PLAIN);
        // A message, or the thesis's synthetic blocks: the full form.
        let signalled = hp_region { message: 0, ..face };
        assert_eq!(kernel_form(&[face, signalled], 256, 8), HP_REGIONS_FULL);
        let synthetic = hp_region {
            payload: HP_PAYLOAD_SYNTHETIC,
            ..face
        };
        assert_eq!(kernel_form(&[synthetic], 256, 8), HP_REGIONS_FULL);
        // 2^31 units with the threads' last steps: the kernels' 32-bit rule ends there.
        let edge = (1_u64 << 31) - 4 * 256;
        assert_eq!(
            kernel_form(&[plain([edge - 1, 1, 1], [1, 1, 1], 1)], 256, 8),
            HP_REGIONS_PLAIN
        );
        assert_eq!(
            kernel_form(&[plain([edge, 1, 1], [1, 1, 1], 1)], 256, 8),
            HP_REGIONS_FULL
        );
        // A partner doubles the units; a stride of 2^32 elements needs 64 bits.
        let half = hp_region {
            partner: 2,
            ..plain([edge / 2, 1, 1], [1, 1, 1], 1)
        };
        assert_eq!(kernel_form(&[half], 256, 8), HP_REGIONS_FULL);
        let far = plain([2, 1, 1], [1 << 32, 1, 1], 1);
        assert_eq!(kernel_form(&[far], 256, 8), HP_REGIONS_FULL);
    }

    #[test]
    fn a_launch_carries_its_table_only_where_it_fits_whole() {
        use crate::shared::HP_INLINE_REGIONS;
        // CUDA before 12.1 and HIP accept 4 KiB of kernel parameters.
        assert!(std::mem::size_of::<hp_regions_args>() <= 4096);
        let table: Vec<hp_region> = (0..=u64::from(HP_INLINE_REGIONS))
            .map(|i| region(i, [i + 1, 1, 1], [1, 1, 1]))
            .collect();
        let args = |n: usize| hp_regions_args {
            regions: 0x1000,
            num_regions: n as u32,
            ..Default::default()
        };
        let full = HP_INLINE_REGIONS as usize;
        let carried = args(full).with_inline_table(&table[..full]);
        assert_eq!(carried.table_inline, 1);
        assert_eq!(
            carried.inline_regions.map(|r| r.offset),
            table[..full].iter().map(|r| r.offset).collect::<Vec<_>>()[..]
        );
        assert_eq!(carried.regions, 0x1000, "the table in memory stays named");
        let few = args(3).with_inline_table(&table[..3]);
        assert_eq!((few.table_inline, few.inline_regions[2].count[0]), (1, 3));
        assert_eq!(
            few.inline_regions[3].count, [0; 3],
            "past the table: untouched"
        );
        // One region too many, or a table that is not the launch's: left in memory.
        assert_eq!(args(full + 1).with_inline_table(&table).table_inline, 0);
        assert_eq!(args(4).with_inline_table(&table[..3]).table_inline, 0);
    }

    #[test]
    fn a_one_launch_takes_the_short_parameter_where_it_holds_the_inline_table() {
        use crate::shared::{HP_INLINE_REGIONS, HP_INLINE_REGIONS_FEW, HP_REGIONS_FUSED};
        // The kernels' parameters (hp_regions_args_upto): the header, then n regions.
        let header = std::mem::offset_of!(hp_regions_args, inline_regions);
        let upto = |n: u32| header + n as usize * size_of::<hp_region>();
        assert_eq!(upto(HP_INLINE_REGIONS), size_of::<hp_regions_args>());
        assert_eq!(upto(HP_INLINE_REGIONS_FEW), 880);
        let table: Vec<hp_region> = (0..u64::from(HP_INLINE_REGIONS))
            .map(|i| region(i, [i + 1, 1, 1], [1, 1, 1]))
            .collect();
        let kernel = |pack: u32, unpack: u32, inline: bool| {
            let args = hp_regions_args {
                regions: 0x1000,
                num_regions: pack,
                num_unpack_regions: unpack,
                form: HP_REGIONS_FUSED,
                ..Default::default()
            };
            let table = &table[..(pack + unpack) as usize];
            let args = if inline {
                args.with_inline_table(table)
            } else {
                args
            };
            Launch::ExchangeRegions(&args).kernel()
        };
        let few = HP_INLINE_REGIONS_FEW;
        assert_eq!(kernel(few / 2, few / 2, true), Kernel::ExchangeRegionsFew);
        assert_eq!(kernel(few, 0, true), Kernel::ExchangeRegionsFew);
        assert_eq!(kernel(few / 2 + 1, few / 2, true), Kernel::ExchangeRegions);
        assert_eq!(
            kernel(2, 2, false),
            Kernel::ExchangeRegions,
            "a table in memory"
        );
    }

    #[test]
    fn a_one_launch_that_copies_into_halos_takes_its_own_kernel() {
        use crate::backend::LaunchDims;
        use crate::shared::{
            HP_PAYLOAD_COPY, HP_REGIONS_FUSED, HP_REGIONS_FUSED_COPIES, HP_REGIONS_PLAIN,
        };
        let copy = hp_region {
            payload: HP_PAYLOAD_COPY,
            ..region(0, [4, 1, 1], [1, 4, 4])
        };
        let args = |form: u32| {
            hp_regions_args {
                messages: 0x2000,
                epoch: 1,
                elem_bytes: 8,
                num_regions: 1,
                form,
                ..Default::default()
            }
            .with_inline_table(&[copy])
        };
        let dims = LaunchDims {
            blocks: 1,
            threads: 32,
        };
        let with_copies = args(HP_REGIONS_FUSED_COPIES);
        let launch = Launch::ExchangeRegions(&with_copies);
        assert_eq!(launch.kernel(), Kernel::ExchangeRegionsCopies);
        launch
            .check("test", dims)
            .expect("the copies form takes copies");
        // Without its copies form the one launch would store the copy in the wrong place.
        let without = args(HP_REGIONS_FUSED);
        let e = Launch::ExchangeRegions(&without)
            .check("test", dims)
            .expect_err("a copy in the plain one launch");
        assert!(e.to_string().contains("needs form 3"), "{e}");
        // The copies form is the one launch's alone.
        let e = Launch::PackRegions(&args(HP_REGIONS_FUSED_COPIES))
            .check("test", dims)
            .expect_err("a pack launch of the one launch's form");
        assert!(e.to_string().contains("one-launch exchange's alone"), "{e}");
        let e = Launch::ExchangeRegions(&args(HP_REGIONS_PLAIN))
            .check("test", dims)
            .expect_err("a one launch of the plain form");
        assert!(e.to_string().contains("one-launch exchange's alone"), "{e}");
    }

    #[test]
    fn a_one_launch_takes_the_kernel_of_its_word_size_or_of_synthetic_regions() {
        use crate::backend::LaunchDims;
        use crate::shared::{
            HP_INLINE_REGIONS_FEW, HP_NO_MESSAGE, HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FUSED,
            HP_REGIONS_FUSED_SYNTHETIC,
        };
        let synthetic = hp_region {
            payload: HP_PAYLOAD_SYNTHETIC,
            ..region(0, [4, 1, 1], [1, 4, 4])
        };
        let args = |form: u32, elem_bytes: u32, regions: usize, table: hp_region| {
            let base = hp_regions_args {
                regions: 0x1000,
                messages: 0x2000,
                epoch: 1,
                elem_bytes,
                num_regions: regions as u32,
                form,
                ..Default::default()
            };
            base.with_inline_table(&vec![table; regions])
        };
        let kernel = |form, elem_bytes, regions| {
            Launch::ExchangeRegions(&args(form, elem_bytes, regions, synthetic)).kernel()
        };
        let few = HP_INLINE_REGIONS_FEW as usize;
        let cases = [
            (HP_REGIONS_FUSED, 4, few, Kernel::ExchangeRegionsFewW4),
            (HP_REGIONS_FUSED, 4, few + 1, Kernel::ExchangeRegionsW4),
            (HP_REGIONS_FUSED, 8, few, Kernel::ExchangeRegionsFewW8),
            (HP_REGIONS_FUSED, 8, few + 1, Kernel::ExchangeRegionsW8),
            (HP_REGIONS_FUSED, 2, few, Kernel::ExchangeRegionsFew),
            (HP_REGIONS_FUSED, 1, few + 1, Kernel::ExchangeRegions),
            (
                HP_REGIONS_FUSED_SYNTHETIC,
                8,
                few,
                Kernel::ExchangeSyntheticFew,
            ),
            (
                HP_REGIONS_FUSED_SYNTHETIC,
                8,
                few + 1,
                Kernel::ExchangeSynthetic,
            ),
        ];
        for (form, elem_bytes, regions, want) in cases {
            let got = kernel(form, elem_bytes, regions);
            assert_eq!(
                got, want,
                "form {form}, {elem_bytes}-byte words, {regions} regions"
            );
            assert!(got.is_one_launch() && Kernel::ALL.contains(&got));
        }
        let dims = LaunchDims {
            blocks: 1,
            threads: 32,
        };
        Launch::ExchangeRegions(&args(HP_REGIONS_FUSED_SYNTHETIC, 8, 2, synthetic))
            .check("test", dims)
            .expect("the synthetic form takes synthetic regions");
        // Its kernels move nothing: a region of fields is refused, not silently skipped.
        let fields = region(0, [4, 1, 1], [1, 4, 4]);
        let e = Launch::ExchangeRegions(&args(HP_REGIONS_FUSED_SYNTHETIC, 8, 2, fields))
            .check("test", dims)
            .expect_err("a field region in the synthetic form");
        assert!(e.to_string().contains("synthetic regions only"), "{e}");
        // Nor do they have a path for a region without its message.
        let unsignalled = hp_region {
            message: HP_NO_MESSAGE,
            ..synthetic
        };
        let e = Launch::ExchangeRegions(&args(HP_REGIONS_FUSED_SYNTHETIC, 8, 2, unsignalled))
            .check("test", dims)
            .expect_err("an unsignalled region in the synthetic form");
        assert!(e.to_string().contains("without a message"), "{e}");
        let e = Launch::PackRegions(&args(HP_REGIONS_FUSED_SYNTHETIC, 8, 2, synthetic))
            .check("test", dims)
            .expect_err("a pack launch of the one launch's form");
        assert!(e.to_string().contains("one-launch exchange's alone"), "{e}");
    }

    #[test]
    fn x_faces_pair_and_every_element_is_moved_once() {
        for halo in [false, true] {
            let [minus, plus] = x_faces(halo);
            let other = region(0, [512, 1, 1], [1, 512, 512]);
            let mut table = vec![minus, other, plus];
            assign_blocks(&mut table, 256, 4).expect("valid");
            let grid = pair_regions(&mut table, 8, 256, 4).expect("valid");
            // The -x face moves both (2 x 512^2 units), the +x face comes last, without blocks.
            assert_eq!(table[0].partner, 3);
            assert_eq!(table[0].offset, minus.offset);
            assert_eq!(table[2].offset, plus.offset);
            assert_eq!((table[2].blocks, table[2].first_block), (0, grid));
            assert_eq!(table[0].blocks, blocks_for(2 * 512 * 512, 256, 4));
            assert_eq!(grid, table[0].blocks + table[1].blocks);
            assert_eq!(grid_blocks(&table).expect("valid"), grid);
            assert!((0..grid).all(|g| region_of(&table, g) != Some(2)));
            // Each unit pairs element e of -x with element e - 1 of +x, a few words apart
            // (but where e starts a new plane); together they cover both faces once.
            let n = 512 * 512;
            let mut seen = vec![[false; 2]; n as usize];
            for u in 0..2 * n {
                let (theirs, e) = paired_unit(u, n);
                let slot = &mut seen[e as usize][usize::from(theirs)];
                assert!(!*slot, "unit {u} moves element {e} again");
                *slot = true;
                if theirs && (u / 2) % 512 != 0 {
                    let mine = field_index(&minus, u / 2);
                    let partner = field_index(&plus, e);
                    assert!(
                        mine.abs_diff(partner) < 16,
                        "unit {u}: {mine} and {partner}"
                    );
                }
            }
            assert!(seen.iter().all(|s| s[0] && s[1]));
        }
    }

    #[test]
    fn only_plain_regions_of_one_shape_in_one_line_pair() {
        let [minus, plus] = x_faces(false);
        let signalled = hp_region { message: 0, ..plus };
        let far = hp_region {
            offset: plus.offset + 64,
            ..plus
        };
        let other_field = hp_region { field: 8, ..plus };
        let contiguous = hp_region {
            count: [512, 512, 1],
            stride: [1, 514, 514 * 514],
            ..plus
        };
        // A local copy pairs only with another: a pair's regions share one payload.
        let copy = hp_region {
            payload: crate::shared::HP_PAYLOAD_COPY,
            ..plus
        };
        for partner in [signalled, far, other_field, contiguous, copy] {
            let mut table = vec![minus, partner];
            assign_blocks(&mut table, 256, 4).expect("valid");
            let before = format!("{table:?}");
            pair_regions(&mut table, 8, 256, 4).expect("valid");
            assert_eq!(format!("{table:?}"), before);
        }
        let mut copies = vec![
            hp_region {
                payload: copy.payload,
                ..minus
            },
            copy,
        ];
        assign_blocks(&mut copies, 256, 4).expect("valid");
        pair_regions(&mut copies, 8, 256, 4).expect("valid");
        assert_eq!(copies[0].partner, 2);
        // A partner must come last, without blocks; one with blocks is refused.
        let mut table = vec![minus, plus];
        assign_blocks(&mut table, 256, 4).expect("valid");
        table[0].partner = 2;
        assert!(grid_blocks(&table).is_err());
    }

    #[test]
    fn bad_tables_are_refused() {
        let mut empty = vec![region(0, [1, 0, 1], [1, 1, 1])];
        assert!(assign_blocks(&mut empty, 32, 4).is_err());
        let mut gap = vec![region(0, [4, 1, 1], [1, 1, 1]); 2];
        assign_blocks(&mut gap, 32, 4).expect("valid");
        gap[1].first_block += 1;
        assert!(grid_blocks(&gap).is_err());
        assert!(check_elem_bytes(2, "pack").is_err());
        assert!(check_elem_bytes(8, "pack").is_ok());
    }

    #[test]
    fn the_stencil_box_needs_its_neighbours() {
        let mut a = hp_stencil_args {
            alloc: [6, 6, 6],
            begin: [1, 1, 1],
            end: [5, 5, 5],
            elem_bytes: 8,
            ..Default::default()
        };
        assert!(check_stencil(&a).is_ok());
        assert_eq!(stencil_points(&a), 64);
        // A box narrower than a warp takes the point form, though the march form is asked
        // for: a thread per point, 64 in 2 blocks of 32.
        assert!(!stencil_marches(&a, 32));
        assert_eq!(stencil_blocks(&a, 32), 2);
        // The march form: tiles of 32 x 32 x 32 (8 warps, 4 rows a thread) over a box of
        // 70 x 20 x 40: 3 x 1 x 2; of 32 x 8 x 32 (2 warps): 3 x 3 x 2.
        let big = hp_stencil_args {
            alloc: [72, 22, 42],
            begin: [1, 1, 1],
            end: [71, 21, 41],
            ..a
        };
        assert!(stencil_marches(&big, 256));
        assert_eq!(stencil_blocks(&big, 256), 6);
        assert_eq!(stencil_blocks(&big, 64), 18);
        // A slab one plane deep (a shell's z slab) marches in tiles one plane deep; one
        // thinner than HP_MARCH_ROWS rows cannot.
        let slab_z = hp_stencil_args {
            end: [71, 21, 2],
            ..big
        };
        assert!(stencil_marches(&slab_z, 256));
        assert_eq!(stencil_blocks(&slab_z, 256), 3);
        let slab_y = hp_stencil_args {
            end: [71, 4, 41],
            ..big
        };
        assert!(!stencil_marches(&slab_y, 256));
        // The march form's own kernels: blocks of at most 256 threads, tiles per element type
        // (f64, in a kernel of its own: 32 columns, 8 warps x 4 rows, 8 planes over 70 x 20 x
        // 40: 3 x 1 x 5; f32: 64 columns, 8 warps x 2 rows, 16 planes: 2 x 2 x 3); larger
        // blocks take hp_stencil27.
        let (launch, dims) = stencil_launch(&big, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarch64, 15));
        let with_fields = hp_stencil_args {
            in_: 0x1000,
            out: 0x2000,
            ..big
        };
        assert!(Launch::StencilMarch64(&with_fields)
            .check("host", dims)
            .is_ok());
        assert!(Launch::StencilMarching(&with_fields)
            .check("host", dims)
            .is_ok());
        // The f64 kernel takes only 8-byte elements in a box thick enough for tiles.
        let four = hp_stencil_args {
            elem_bytes: 4,
            ..with_fields
        };
        assert!(Launch::StencilMarch64(&four).check("host", dims).is_err());
        let flat = hp_stencil_args {
            end: [71, 4, 41],
            ..with_fields
        };
        assert!(Launch::StencilMarch64(&flat).check("host", dims).is_err());
        // f32 rows of a multiple of 4 elements in 16-byte aligned fields take the lanes of 4
        // points: tiles of 128 columns from x = 0, a row a warp, 32 planes: 1 x 3 x 2.
        let big32 = hp_stencil_args {
            elem_bytes: 4,
            ..with_fields
        };
        assert!(stencil_lanes(&big32, 256));
        let (launch, dims) = stencil_launch(&big32, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarch32, 6));
        assert!(Launch::StencilMarch32(&big32).check("host", dims).is_ok());
        // Otherwise (one field 4 bytes off 16, the other not; rows of 70; f64) they take the march
        // kernel's f32 tiles (64 columns, 8 warps x 2 rows, 16 planes: 2 x 2 x 3), and a lanes
        // launch by hand is refused.
        let off = hp_stencil_args {
            out: 0x2004,
            ..big32
        };
        let rows70 = hp_stencil_args {
            alloc: [70, 22, 42],
            end: [69, 21, 41],
            ..big32
        };
        for other in [off, rows70, with_fields] {
            assert!(!stencil_lanes(&other, 256));
            assert!(Launch::StencilMarch32(&other).check("host", dims).is_err());
        }
        // Fields 4, 8 or 12 bytes past a 16-byte boundary (both alike) take the lanes from
        // where their vectors start, where the lanes read only the field; not where lane 0's
        // first vector would start before it (phase 1 from x = 1 in the first row read), nor
        // where the last lane's vector would end after it (phase 3 to x = 71 in rows of 72, the
        // last row read the field's last), nor with fields at two phases.
        let phased = |phase: u64, begin: [u64; 3], end: [u64; 3]| hp_stencil_args {
            in_: 0x1000 + 4 * phase,
            out: 0x2000 + 4 * phase,
            begin,
            end,
            ..big32
        };
        for taken in [
            phased(3, [1, 1, 1], [68, 21, 41]),
            phased(1, [1, 2, 1], [71, 20, 41]),
            phased(2, [3, 1, 1], [71, 20, 41]),
        ] {
            assert!(stencil_lanes(&taken, 256), "{:?}", taken.begin);
            let (launch, dims) = stencil_launch(&taken, 256);
            assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarch32, 6));
            assert!(Launch::StencilMarch32(&taken).check("host", dims).is_ok());
        }
        for refused in [
            phased(3, [1, 1, 1], [71, 21, 41]),
            phased(1, [1, 1, 1], [68, 20, 41]),
            hp_stencil_args {
                out: 0x2008,
                ..phased(3, [1, 1, 1], [68, 21, 41])
            },
        ] {
            assert!(!stencil_lanes(&refused, 256), "{:?}", refused.end);
            assert!(Launch::StencilMarch32(&refused)
                .check("host", dims)
                .is_err());
        }
        // Rows of 70 would take them with 2 cells of padding; the others not for padding.
        assert_eq!(lanes_padding(&rows70, 256), Some(2));
        // Rows of 70 in planes of 22 rows take the lanes' off form from x >= 2 and y or z >= 2
        // (tiles from x = 0: 1 x 3 x 2); not from x = 1, nor in planes of 21 rows or with a box
        // from y = 1 and z = 1, nor rows of 69.
        let off70 = hp_stencil_args {
            begin: [2, 1, 2],
            ..rows70
        };
        assert!(stencil_lanes_off(&off70) && stencil_lanes(&off70, 256));
        let (launch, dims70) = stencil_launch(&off70, 256);
        assert_eq!(
            (launch.kernel(), dims70.blocks),
            (Kernel::StencilMarch32, 6)
        );
        assert!(Launch::StencilMarch32(&off70).check("host", dims70).is_ok());
        assert_eq!(lanes_padding(&off70, 256), None);
        let at6 = hp_stencil_args {
            begin: [6, 2, 1],
            ..off70
        };
        assert!(stencil_lanes(&at6, 256));
        // From x = 6 the tiles start at 4 (the off form's 2 columns before the box): 1 x 3 x 2.
        assert_eq!(stencil_launch(&at6, 256).1.blocks, 6);
        for other in [
            hp_stencil_args {
                begin: [1, 2, 2],
                ..off70
            },
            hp_stencil_args {
                begin: [2, 1, 1],
                ..off70
            },
            hp_stencil_args {
                alloc: [70, 21, 42],
                ..off70
            },
            hp_stencil_args {
                alloc: [69, 22, 42],
                end: [68, 21, 41],
                ..off70
            },
        ] {
            assert!(
                !stencil_lanes(&other, 256),
                "{:?} {:?}",
                other.alloc,
                other.begin
            );
            assert!(Launch::StencilMarch32(&other)
                .check("host", dims70)
                .is_err());
        }
        for other in [off, with_fields, big32] {
            assert_eq!(lanes_padding(&other, 256), None);
        }
        let thin70 = hp_stencil_args {
            end: [69, 4, 41],
            ..rows70
        };
        assert_eq!(lanes_padding(&thin70, 256), None);
        let (launch, dims) = stencil_launch(&off, 256);
        assert_eq!(
            (launch.kernel(), dims.blocks),
            (Kernel::StencilMarching, 12)
        );
        let (launch, dims) = stencil_launch(&big, 512);
        assert_eq!(launch.kernel(), Kernel::Stencil27);
        assert_eq!(dims.blocks, stencil_blocks(&big, 512));
        let (launch, dims) = stencil_launch(&slab_z, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarch64, 3));
        // The 7-point stencil (f64) marches in its own kernel in blocks of up to 256 threads,
        // in hp_stencil27 in larger ones, in the same tiles (3 x 1 x 2); a one-sided one takes
        // the point form.
        let faces = hp_stencil_args {
            shape: shared::HP_STENCIL_FACES | shared::HP_STENCIL_FULL,
            ..big
        };
        assert!(stencil_marches(&faces, 256));
        let (launch, dims) = stencil_launch(&faces, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarch7, 6));
        let fields = hp_stencil_args {
            in_: 0x1000,
            out: 0x2000,
            ..faces
        };
        assert!(Launch::StencilMarch7(&fields).check("host", dims).is_ok());
        let (launch, dims512) = stencil_launch(&faces, 512);
        assert_eq!(launch.kernel(), Kernel::Stencil27);
        assert_eq!(dims512.blocks, stencil_blocks(&faces, 512));
        let e = Launch::StencilMarch7(&fields)
            .check("host", dims512)
            .expect_err("blocks past the kernel's bound");
        assert!(e.to_string().contains("7-point march kernel"), "{e}");
        let full = hp_stencil_args {
            shape: shared::HP_STENCIL_FULL,
            ..fields
        };
        assert!(Launch::StencilMarch7(&full).check("host", dims).is_err());
        // f32 marches in hp_stencil27.
        let faces32 = hp_stencil_args {
            elem_bytes: 4,
            ..fields
        };
        assert_eq!(stencil_launch(&faces32, 256).0.kernel(), Kernel::Stencil27);
        assert!(Launch::StencilMarch7(&faces32).check("host", dims).is_err());
        let one_sided = hp_stencil_args {
            shape: shared::HP_STENCIL_FACES | (shared::HP_STENCIL_FULL & !shared::HP_STENCIL_HI),
            ..big
        };
        assert!(!stencil_marches(&one_sided, 256));
        // A slab too thin for tiles marches in columns of HP_SLAB_Z = 4 planes, a thread
        // each: 70 x 3 x 10 columns in 9 blocks, and a slab one point wide, 1 x 20 x 10, in 1.
        let (launch, dims) = stencil_launch(&slab_y, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarching, 9));
        let slab_x = hp_stencil_args {
            begin: [70, 1, 1],
            ..big
        };
        let (launch, dims) = stencil_launch(&slab_x, 256);
        assert_eq!((launch.kernel(), dims.blocks), (Kernel::StencilMarching, 1));
        let slab_x = hp_stencil_args {
            in_: 0x1000,
            out: 0x2000,
            ..slab_x
        };
        assert!(Launch::StencilMarching(&slab_x).check("host", dims).is_ok());
        // Launched by hand where it does not apply, it is refused.
        let dims = LaunchDims {
            blocks: 8,
            threads: 512,
        };
        assert!(Launch::StencilMarching(&with_fields)
            .check("host", dims)
            .is_err());
        let thin = hp_stencil_args {
            shape: shared::HP_STENCIL_FACES | shared::HP_STENCIL_FULL,
            ..with_fields
        };
        assert!(Launch::StencilMarching(&thin)
            .check(
                "host",
                LaunchDims {
                    threads: 256,
                    ..dims
                }
            )
            .is_err());
        // The point form: a thread per point.
        let points = hp_stencil_args {
            form: shared::HP_STENCIL_FORM_POINTS,
            ..a
        };
        assert_eq!(stencil_blocks(&points, 32), 2);
        a.end[1] = 6;
        assert!(check_stencil(&a).is_err());
        a.end[1] = 5;
        a.begin[2] = 0;
        assert!(check_stencil(&a).is_err());
        a.begin[2] = 1;
        a.elem_bytes = 2;
        assert!(check_stencil(&a).is_err());
    }

    #[test]
    fn faces_of_every_orientation_become_3d_copies() {
        // A 10 x 9 x 8 array of f64, halo 1: the x, y and z faces of the interior.
        let (ax, ay) = (10_u64, 9_u64);
        let strides = [1, ax, ax * ay];
        let x_face = hp_region {
            field: 0x1000,
            buffer: 0x9000,
            ..region(1 + ax + ax * ay, [1, 7, 6], strides)
        };
        let c = Copy3d::pack_region(&x_face, 8).expect("an x face is a 2-D copy of 8-byte rows");
        assert_eq!(
            (c.width, c.height, c.depth, c.src_pitch, c.src_rows),
            (8, 7, 6, 80, 9)
        );
        assert_eq!(c.src, 0x1000 + 8 * (1 + ax + ax * ay));
        assert_eq!((c.dst, c.dst_pitch, c.dst_rows), (0x9000, 8, 7));
        let y_face = region(1 + ax * ay, [8, 1, 6], strides);
        let c = Copy3d::pack_region(&y_face, 4).expect("a y face drops its unit dimension");
        assert_eq!((c.width, c.height, c.depth, c.src_pitch), (32, 6, 1, 360));
        let z_face = region(1 + ax, [8, 7, 1], strides);
        let c = Copy3d::pack_region(&z_face, 8).expect("a z face");
        assert_eq!((c.width, c.height, c.depth, c.src_pitch), (64, 7, 1, 80));
        let strided = region(0, [4, 2, 1], [2, ax, ax * ay]);
        assert_eq!(Copy3d::pack_region(&strided, 8), None);
        let odd_slices = region(0, [2, 2, 2], [1, 3, 7]);
        assert_eq!(Copy3d::pack_region(&odd_slices, 8), None);
        let u = Copy3d::unpack_region(&x_face, 8).expect("the reverse");
        assert_eq!((u.src, u.dst_pitch, u.src_pitch), (0x9000, 80, 8));
    }

    #[test]
    fn copy_shapes_are_checked() {
        let ok = Copy3d {
            src: 0,
            src_pitch: 16,
            src_rows: 4,
            dst: 0,
            dst_pitch: 8,
            dst_rows: 2,
            width: 8,
            height: 2,
            depth: 3,
        };
        assert!(ok.check("host").is_ok());
        assert_eq!(ok.src_span(), Some(16 * 4 * 2 + 16 + 8));
        assert_eq!(ok.dst_span(), Some(8 * 2 * 3));
        assert!(Copy3d { width: 17, ..ok }.check("host").is_err());
        assert!(Copy3d { height: 5, ..ok }.check("host").is_err());
        assert!(Copy3d { depth: 0, ..ok }.check("host").is_err());
        assert!(Copy3d {
            src_pitch: usize::MAX,
            ..ok
        }
        .check("host")
        .is_err());
    }

    /// A fused launch's tiles: powers of two within the block, as wide as the box or the
    /// threads left allow, innermost first, and enough of them to cover the box.
    #[test]
    fn fused_tiles_cover_the_box_innermost_first() {
        let slab = |begin: [u64; 3], end: [u64; 3]| hp_stencil_args {
            begin,
            end,
            ..hp_stencil_args::default()
        };
        // A 512 x 256 x 256 part's z slab and x slab, and a box narrower than a block.
        assert_eq!(
            fused_tiles(&slab([1, 1, 1], [511, 255, 2]), 256),
            ([256, 1, 1], 508)
        );
        assert_eq!(
            fused_tiles(&slab([1, 1, 1], [2, 255, 255]), 256),
            ([1, 256, 1], 254)
        );
        assert_eq!(
            fused_tiles(&slab([0, 0, 0], [3, 5, 40]), 256),
            ([4, 8, 8], 5)
        );
        assert_eq!(fused_tiles(&slab([4, 4, 4], [4, 9, 9]), 256).1, 0);
        for (end, threads) in [([7, 3, 100], 64), ([33, 17, 2], 256), ([1000, 1, 1], 128)] {
            let args = slab([0; 3], end);
            let (tile, tiles) = fused_tiles(&args, threads);
            assert!(tile.iter().all(|t| t.is_power_of_two()), "{tile:?}");
            assert!(
                tile.iter().product::<u64>() <= u64::from(threads),
                "{tile:?}"
            );
            let covered: u64 = (0..3).map(|k| end[k].div_ceil(tile[k])).product();
            assert_eq!(tiles, covered, "{end:?}");
            // A dimension stops short of its extent only where doubling it would not fit.
            let mut left = u64::from(threads);
            for k in 0..3 {
                assert!(tile[k] >= end[k] || 2 * tile[k] > left, "{end:?}: {tile:?}");
                left /= tile[k];
            }
        }
    }

    #[test]
    fn shell_tiles_cover_the_x_and_y_slabs_once() {
        let args = hp_stencil_args {
            alloc: [72, 42, 14],
            begin: [2, 2, 2],
            end: [70, 40, 12],
            elem_bytes: 8,
            components: 1,
            ..hp_stencil_args::default()
        };
        let tiles = ShellTiles::of(&args, 256).expect("the box takes its slabs");
        // 68 columns in 3 tiles, rows 1 .. 41 in 2 tiles of 32, 10 planes in 2 chunks of 8.
        assert_eq!((tiles.tiles(), tiles.capacity()), (12, 2 * (2 + 2 * 2)));
        let holding: Vec<u64> = (0..tiles.tiles())
            .filter(|&t| tiles.holds_slab(t))
            .collect();
        assert_eq!(holding.len() as u64, tiles.capacity());
        let mut hits = std::collections::HashMap::new();
        for t in holding {
            for (cells, halo) in tiles.slab_boxes(t) {
                assert_eq!(
                    halo.is_some(),
                    cells[0][1] - cells[0][0] == 1 && cells[0][0] != 1
                        || cells[0][0] == 1 && halo == Some(0)
                );
                for z in cells[2][0]..cells[2][1] {
                    for y in cells[1][0]..cells[1][1] {
                        for x in cells[0][0]..cells[0][1] {
                            *hits.entry([x, y, z]).or_insert(0) += 1;
                        }
                    }
                }
            }
        }
        // The x slabs (x 1 and 70, y 1 .. 41) and the y slabs (y 1 and 40, x 2 .. 70), z 2 .. 12.
        let mut want = 0;
        for z in 2..12 {
            for y in 1..41 {
                for x in 1..71 {
                    let slab = x == 1 || x == 70 || y == 1 || y == 40;
                    want += u64::from(slab);
                    assert_eq!(
                        hits.get(&[x, y, z]).copied(),
                        slab.then_some(1),
                        "({x}, {y}, {z})"
                    );
                }
            }
        }
        assert_eq!(hits.len() as u64, want);
        // A width that leaves the last tile full, or 31 columns, has no lanes for the x slabs;
        // nor do other element sizes, or a list shorter than the slab tiles.
        for end0 in [66, 65] {
            assert!(ShellTiles::of(
                &hp_stencil_args {
                    end: [end0, 40, 12],
                    ..args
                },
                256
            )
            .is_none());
        }
        assert!(ShellTiles::of(
            &hp_stencil_args {
                elem_bytes: 4,
                ..args
            },
            256
        )
        .is_none());
        let listed = hp_stencil_args {
            shell: 64,
            shell_capacity: 11,
            ..args
        };
        assert!(ShellTiles::of(&listed, 256).is_none());
        assert!(ShellTiles::of(
            &hp_stencil_args {
                shell_capacity: 12,
                ..listed
            },
            256
        )
        .is_some());
        assert!(Launch::StencilMarch64Shell(&hp_stencil_args {
            in_: 8,
            out: 16,
            ..listed
        })
        .check(
            "host",
            LaunchDims {
                blocks: 12,
                threads: 256
            }
        )
        .is_err());
        // Without control words only a step without an exchange may run the box, and never
        // the fix-up.
        let dims = LaunchDims {
            blocks: 12,
            threads: 256,
        };
        let fields = hp_stencil_args {
            in_: 8,
            out: 1 << 20,
            ..args
        };
        let halos_in = hp_stencil_args {
            parity: shared::HP_SHELL_HALOS_IN,
            ..fields
        };
        assert!(Launch::StencilMarch64Shell(&fields)
            .check("host", dims)
            .is_err());
        assert!(Launch::StencilMarch64Shell(&halos_in)
            .check("host", dims)
            .is_ok());
        let err = Launch::StencilShellFixup(&hp_stencil_args {
            shell: 64,
            shell_capacity: 12,
            ..halos_in
        })
        .check("host", dims)
        .expect_err("a fix-up without a set is refused")
        .to_string();
        assert!(err.contains("parity 2"), "{err}");
    }
}
