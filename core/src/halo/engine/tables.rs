//! The region tables of an exchange (SPEC 12, 13): for a set of fields, each slot parity's pack
//! and unpack regions with their messages' signalling, the grid blocks each region gets, and
//! where every message allows, the one launch's table ([`FusedTable`]).
//!
//! A region of a signalled message gets blocks in proportion to its memory traffic
//! ([`region_cost`]) where the exchange may run as one launch, so that the launch's blocks end
//! together (ipc-tq's balanced chunks), as many as let every rank's one-launch grid be resident
//! at once ([`largest_fitting_blocks`]): a block waiting for a peer's pack must never hold an SM
//! that pack needs.

// Tables hold raw device addresses of fields, slots and flags.
#![allow(unsafe_code)]

use std::cell::RefCell;

use super::{FusedTable, MessageExchange, Payload, SideTable, Tables};
use crate::backend::{upload_table, Backend, Coherence, DeviceMemory, Kernel, PinnedMemory};
use crate::domain::Subarray;
use crate::error::{Error, Result};
use crate::halo::exchange::HaloStrategy;
use crate::halo::layout::{receiving_entry, Link};
use crate::regions::{blocks_for, kernel_form, pair_regions};
use crate::shared::{
    hp_message_signal, hp_region, hp_regions_args, HP_NO_MESSAGE, HP_PAYLOAD_COPY,
    HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FULL, HP_REGIONS_FUSED, HP_REGIONS_FUSED_COPIES,
    HP_REGIONS_FUSED_SYNTHETIC,
};

impl<B: Backend> MessageExchange<'_, B> {
    /// Region tables for fields at `addrs`, for both slot parities. Where a rank's local copies
    /// do not join a one launch after all (its grid would not fit, or x faces pair), the tables
    /// are built again with the blocks of two launches: with a one launch's budget, a 1x1x2
    /// periodic exchange took 104 us rather than 92 (results/HISTORY.md: h200-one-launch-copies).
    pub(super) fn build_tables(&self, addrs: &[u64]) -> Result<Tables<B>> {
        let tables = self.build_tables_balanced(addrs, true)?;
        let copies = tables.pack[0]
            .regions
            .iter()
            .any(|r| r.payload == HP_PAYLOAD_COPY);
        if self.beside.is_some() && tables.fused[0].is_none() && copies {
            // Not yet used by any kernel: dropped here.
            return self.build_tables_balanced(addrs, false);
        }
        Ok(tables)
    }

    /// [`Self::build_tables`]; `balanced`: local copies and signalled messages get blocks in
    /// proportion to their traffic where the exchange may run as one launch.
    fn build_tables_balanced(&self, addrs: &[u64], balanced: bool) -> Result<Tables<B>> {
        let word = u64::from(self.word);
        let counters = self.memory.counters.device_addr();
        let n = self.routes.len();
        let synthetic = self.payload == Payload::Synthetic;
        // A synthetic message is one region, whatever the key.
        let fields: &[u64] = if synthetic { &[0] } else { addrs };
        let copies = if synthetic {
            vec![None; n]
        } else {
            self.local_copies(fields.len())?
        };
        let per_region = if balanced {
            self.signalled_blocks(fields.len(), &copies)?
        } else {
            RegionBlocks::uniform(self.options.signalled_blocks.max(1))
        };
        type Built<M> = (SideTable<M>, Vec<Option<(u32, u32)>>);
        let build = |pack: bool, slot: usize| -> Result<Built<B::DeviceMemory>> {
            let mut regions = Vec::new();
            let mut signals = Vec::with_capacity(n);
            let mut ranges = Vec::with_capacity(n);
            let mut first_block = 0_u32;
            for (i, (entry, route)) in self.entries.iter().zip(&self.routes).enumerate() {
                // A local message copied straight into its halo is not unpacked.
                let copied_in = !pack && copies.contains(&Some(i));
                let sub = if pack { entry.send } else { entry.recv };
                let Some(sub) = sub.filter(|_| !copied_in) else {
                    // Nothing goes this way: no regions, and a signal no region names.
                    signals.push(hp_message_signal::default());
                    ranges.push(None);
                    continue;
                };
                let copy_to = if pack { copies[i] } else { None };
                let base = if pack {
                    route.dest[slot]
                } else {
                    route.recv[slot]
                };
                let elems = sub.elems();
                let direct = route.link == Link::Direct;
                let signalled = direct
                    || (route.link.through_mpi()
                        && self.options.strategy == HaloStrategy::Taskqueue);
                let mut message_blocks = 0;
                let message_first = first_block;
                // Each field's region, in words, after the previous fields' in the message.
                let mut at = base;
                for (k, &field) in fields.iter().enumerate() {
                    let cell = self.cell_bytes(k);
                    let words = in_words(sub, cell / word)?;
                    let blocks = blocks_for(
                        words.elems(),
                        self.options.threads,
                        u64::from(self.options.elems_per_thread),
                    );
                    // A signalled message's region, and a local copy that may join the one
                    // launch, get their blocks from `per_region`.
                    let budgeted =
                        signalled || (balanced && copy_to.is_some() && self.beside.is_some());
                    let blocks = if budgeted {
                        per_region.of(blocks, region_cost(&words, word))
                    } else {
                        blocks
                    };
                    let region = hp_region {
                        field,
                        buffer: at,
                        offset: words.offset,
                        count: words.count,
                        stride: words.stride,
                        first_block,
                        blocks,
                        message: if signalled { i as u32 } else { HP_NO_MESSAGE },
                        ..hp_region::default()
                    };
                    let region = match copy_to {
                        // Into the halo entry j receives, in the same field.
                        Some(j) => {
                            let halo = self.entries[j].recv.ok_or_else(|| {
                                Error::Internal(format!("entry {j} receives nothing"))
                            })?;
                            hp_region {
                                buffer: field + in_words(halo, cell / word)?.offset * word,
                                payload: HP_PAYLOAD_COPY,
                                ..region
                            }
                        }
                        None => region,
                    };
                    regions.push(if synthetic {
                        // Our block `send_tag`, or the peer's block `recv_tag`.
                        let (rank, block) = if pack {
                            (self.rank, entry.send_tag)
                        } else {
                            (entry.peer, entry.recv_tag)
                        };
                        hp_region {
                            field: 0,
                            offset: synthetic_key(rank, block),
                            count: [elems, 1, 1],
                            stride: [1, elems, elems],
                            payload: HP_PAYLOAD_SYNTHETIC,
                            ..region
                        }
                    } else {
                        region
                    });
                    at += elems * cell;
                    first_block = first_block.checked_add(blocks).ok_or_else(|| {
                        Error::InvalidInput(
                            "the exchange needs more GPU blocks than a launch has".into(),
                        )
                    })?;
                    message_blocks += blocks;
                }
                let status = self.memory.status.device_addr();
                signals.push(if !signalled {
                    hp_message_signal::default()
                } else if !direct && pack {
                    // Host-staged, taskqueue: tell the CPU this message is packed.
                    hp_message_signal {
                        counter: counters + 8 * i as u64,
                        flag: status + self.packed_flag(i) as u64,
                        wait: 0,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                } else if !direct {
                    // Host-staged, taskqueue: unpack once the CPU says it arrived.
                    hp_message_signal {
                        counter: counters + 8 * i as u64 + 4,
                        flag: 0,
                        wait: status + self.arrived_flag(i) as u64,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                } else if pack {
                    // Wait until the peer unpacked this slot two epochs ago; announce arrival
                    // (unless a fault drops it).
                    hp_message_signal {
                        counter: counters + 8 * i as u64,
                        flag: if self.dropped(i) {
                            0
                        } else {
                            route.dest_arrival
                        },
                        wait: route.credit,
                        wait_lag: 2,
                        blocks: message_blocks,
                    }
                } else {
                    // Wait for the arrival of this epoch; give the sender its credit.
                    hp_message_signal {
                        counter: counters + 8 * i as u64 + 4,
                        flag: route.source_credit,
                        wait: route.arrival,
                        wait_lag: 0,
                        blocks: message_blocks,
                    }
                });
                ranges.push(Some((message_first, message_blocks)));
            }
            // Unsignalled x faces share lines pairwise (the regions' module docs); synthetic
            // blocks are contiguous, never paired, and keep the blocks `ranges` name.
            let grid = if synthetic {
                first_block
            } else {
                pair_regions(
                    &mut regions,
                    self.word,
                    self.options.threads,
                    u64::from(self.options.elems_per_thread),
                )?
            };
            let form = kernel_form(&regions, self.options.threads, self.word);
            let memory = upload_table(self.backend, &regions, &signals)?;
            let table = SideTable {
                memory,
                regions,
                signals,
                blocks: grid,
                form,
            };
            Ok((table, ranges))
        };
        let (pack0, pack_ranges) = build(true, 0)?;
        let (pack1, _) = build(true, 1)?;
        let (unpack0, unpack_ranges) = build(false, 0)?;
        let (unpack1, _) = build(false, 1)?;
        let fused = [self.fuse(&pack0, &unpack0)?, self.fuse(&pack1, &unpack1)?];
        Ok(Tables {
            last_used: self.epoch,
            pinned: false,
            pack: [pack0, pack1],
            unpack: [unpack0, unpack1],
            fused,
            pack_ranges,
            unpack_ranges,
        })
    }

    /// For each entry, the entry whose halo its message fills where the pack copies it there
    /// straight (`HP_PAYLOAD_COPY`: no slot, no unpack): a local message whose halo, in every
    /// one of the `fields` fields' words, has the counts and strides of what it sends (a
    /// periodic rank's own faces, edges and corners). Else `None`: through the slot.
    fn local_copies(&self, fields: usize) -> Result<Vec<Option<usize>>> {
        let mut copies = Vec::with_capacity(self.entries.len());
        for (entry, route) in self.entries.iter().zip(&self.routes) {
            let target = (route.link == Link::Local)
                .then(|| receiving_entry(self.entries.iter(), self.rank, entry.send_tag))
                .flatten();
            let copy = match (entry.send, target.and_then(|j| self.entries[j].recv)) {
                (Some(send), Some(halo)) => {
                    let mut same = true;
                    for k in 0..fields {
                        let (from, to) = (self.field_words(send, k)?, self.field_words(halo, k)?);
                        same &= from.count == to.count && from.stride == to.stride;
                    }
                    same
                }
                _ => false,
            };
            copies.push(target.filter(|_| copy));
        }
        Ok(copies)
    }

    /// How many grid blocks a region of a signalled message (or a local copy that may join the
    /// one launch) gets, for `fields` fields: at most the option's. Where the exchange may run
    /// as one launch, in proportion to the region's memory traffic ([`region_cost`]; ipc-tq's
    /// balanced chunks: the exchange's one launch ends with its slowest block), the costliest
    /// region getting the most for which every rank's one-launch grid fits on the device at
    /// once (taken as this rank's times their number, as [`Self::fuse`] does). Otherwise
    /// waiting unpack blocks could fill the device and starve the peers' packs they wait for,
    /// whichever launches serve them. `copies`: [`Self::local_copies`] (halos filled by a
    /// copy are not unpacked).
    fn signalled_blocks(&self, fields: usize, copies: &[Option<usize>]) -> Result<RegionBlocks> {
        let most = self.options.signalled_blocks.max(1);
        if self.beside.is_none() {
            return Ok(RegionBlocks::uniform(most));
        }
        let word = u64::from(self.word);
        // Each side's regions: their uncapped blocks and their costs.
        let mut sides: [Vec<(u32, u64)>; 2] = [Vec::new(), Vec::new()];
        for (i, entry) in self.entries.iter().enumerate() {
            let recv = entry.recv.filter(|_| !copies.contains(&Some(i)));
            for (side, sub) in sides.iter_mut().zip([entry.send, recv]) {
                let Some(sub) = sub else { continue };
                for k in 0..fields {
                    let words = self.field_words(sub, k)?;
                    let need = blocks_for(
                        words.elems(),
                        self.options.threads,
                        u64::from(self.options.elems_per_thread),
                    );
                    side.push((need, region_cost(&words, word)));
                }
            }
        }
        let kernel = one_launch_kernel(copies.iter().any(Option::is_some));
        let resident = self
            .backend
            .max_resident_blocks(kernel, self.options.threads)?;
        let budget = u64::from(resident) / u64::from(self.ranks_on_device.max(1));
        Ok(largest_fitting_blocks(&sides, most, budget))
    }

    /// The one-launch table of a slot parity, or `None` where a message is neither
    /// device-direct nor a local copy into its halo (a host-staged one needs the CPU between
    /// its pack and its unpack, a local one through a slot the kernel boundary), a side runs
    /// the plain form or pairs regions, or the grids of every rank on the device (taken as this
    /// rank's times their number: exact for symmetric decompositions) cannot be resident at
    /// once: a block waiting for a peer's pack must not hold an SM that pack needs. With local
    /// copies, form `HP_REGIONS_FUSED_COPIES`.
    fn fuse(
        &self,
        pack: &SideTable<B::DeviceMemory>,
        unpack: &SideTable<B::DeviceMemory>,
    ) -> Result<Option<FusedTable<B>>> {
        let sides = [pack, unpack];
        let full = sides.iter().all(|t| t.form == HP_REGIONS_FULL);
        let paired = sides
            .iter()
            .any(|t| t.regions.iter().any(|r| r.partner != 0));
        let copies = pack.regions.iter().any(|r| r.payload == HP_PAYLOAD_COPY);
        // Every unpack waits for its message and every pack signals one or copies into a halo:
        // nothing needs the kernel boundary.
        let bounded = unpack.regions.iter().any(|r| r.message == HP_NO_MESSAGE)
            || pack
                .regions
                .iter()
                .any(|r| r.message == HP_NO_MESSAGE && r.payload != HP_PAYLOAD_COPY);
        let blocks = pack.blocks.max(unpack.blocks);
        if self.beside.is_none() || !full || paired || bounded || blocks == 0 {
            return Ok(None);
        }
        let resident = self
            .backend
            .max_resident_blocks(one_launch_kernel(copies), self.options.threads)?;
        if u64::from(blocks) * u64::from(self.ranks_on_device) > u64::from(resident) {
            return Ok(None);
        }
        let n = self.routes.len() as u32;
        let mut regions = pack.regions.clone();
        regions.extend(unpack.regions.iter().map(|r| hp_region {
            message: if r.message == HP_NO_MESSAGE {
                r.message
            } else {
                r.message + n
            },
            ..*r
        }));
        let mut signals = pack.signals.clone();
        signals.extend_from_slice(&unpack.signals);
        tracing::debug!(
            "one launch: {blocks} grid blocks for {} pack and {} unpack regions",
            pack.regions.len(),
            unpack.regions.len()
        );
        let done = self
            .backend
            .alloc_pinned(8 * blocks as usize, Coherence::Coherent)?;
        // SAFETY: a fresh allocation of 8 * blocks bytes no kernel uses yet.
        unsafe { std::ptr::write_bytes(done.host_ptr(), 0, 8 * blocks as usize) };
        let memory = upload_table(self.backend, &regions, &signals)?;
        let at = memory.device_addr();
        let args = hp_regions_args {
            messages: at + std::mem::size_of_val(regions.as_slice()) as u64,
            status: self.memory.status.device_addr(),
            num_regions: pack.regions.len() as u32,
            num_unpack_regions: unpack.regions.len() as u32,
            form: if copies {
                HP_REGIONS_FUSED_COPIES
            } else if regions.iter().all(|r| r.payload == HP_PAYLOAD_SYNTHETIC) {
                HP_REGIONS_FUSED_SYNTHETIC
            } else {
                HP_REGIONS_FUSED
            },
            done: done.device_addr(),
            // Never in a graph, though a capture may build the table (`fused_table`).
            epoch_base: 0,
            ..self.region_args(at, blocks, true, true)
        }
        .with_inline_table(&regions);
        Ok(Some(FusedTable {
            _memory: memory,
            done,
            args: RefCell::new(Box::new(args)),
            blocks,
        }))
    }

    /// `sub`, a subarray of cells, in the words of field `k` ([`Self::cell_bytes`] in words of
    /// `hp_regions_args.elem_bytes`).
    fn field_words(&self, sub: Subarray, k: usize) -> Result<Subarray> {
        in_words(sub, self.cell_bytes(k) / u64::from(self.word))
    }

    /// Bytes of a cell of field `k` (the synthetic payload's one field: one word).
    fn cell_bytes(&self, k: usize) -> u64 {
        self.cells.get(k).copied().unwrap_or(u64::from(self.word))
    }
}

/// The 32-byte sectors a pack or an unpack of `words` (words of `word` bytes) touches: the
/// field's, a sector or more per contiguous run, and the buffer's. A face whose runs are one
/// element (an x face) costs about four times one of long rows with as many elements.
fn region_cost(words: &Subarray, word: u64) -> u64 {
    const SECTOR: u64 = 32;
    let elems = words.elems();
    let run = if words.stride[0] == 1 {
        words.count[0].max(1)
    } else {
        1
    };
    (elems / run) * (run * word).div_ceil(SECTOR) + (elems * word).div_ceil(SECTOR)
}

/// The kernel of the one launch, with local copies or without.
fn one_launch_kernel(copies: bool) -> Kernel {
    if copies {
        Kernel::ExchangeRegionsCopies
    } else {
        Kernel::ExchangeRegions
    }
}

/// The grid blocks of each region of a signalled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RegionBlocks {
    /// The most a region gets.
    cap: u32,
    /// Balanced: a block's share of the cost ([`region_cost`]), so that a region gets blocks in
    /// proportion to its cost (at least one); `None`: every region up to `cap`.
    share: Option<u64>,
}

impl RegionBlocks {
    fn uniform(cap: u32) -> Self {
        RegionBlocks { cap, share: None }
    }

    /// Balanced, the costliest region (cost `largest`) getting `cap` blocks.
    fn balanced(cap: u32, largest: u64) -> Self {
        RegionBlocks {
            cap,
            share: Some(largest.div_ceil(u64::from(cap.max(1))).max(1)),
        }
    }

    /// The blocks of a region of cost `cost` that would take `need` uncapped.
    fn of(self, need: u32, cost: u64) -> u32 {
        let blocks = need.min(self.cap);
        match self.share {
            Some(share) => {
                blocks.min(u32::try_from(cost.div_ceil(share).max(1)).unwrap_or(u32::MAX))
            }
            None => blocks,
        }
    }
}

/// The most memory traffic ([`region_cost`], 32-byte sectors) a grid block of the one launch is
/// given before the costliest region gets more blocks than the option's cap: 512 KiB touched, a
/// contiguous run of 256 KiB packed. Blocks that each stream megabytes leave the device part
/// idle and their pace to where they land: on one H200 under MPS, large's packs (10 MB regions,
/// 650 KB a block at the cap of 16) ended 40 us apart in some processes and the exchange took
/// 103-134 us, against 87 us every time with the device's budget of blocks
/// (`results/HISTORY.md: h200-large-mode`); thesis-27's regions (1 MB, 65 KB a block) were
/// fastest at the cap.
const BLOCK_COST_MOST: u64 = 16_384;

/// Balanced blocks per region (`RegionBlocks::balanced`) with the largest cap at which the
/// larger side's grid (its regions' `(need, cost)` in `sides`) holds at most `budget` blocks:
/// at most `most`, or where the costliest region would then give a block more than
/// [`BLOCK_COST_MOST`], at most the cap that keeps each of its blocks within it. `most` where no
/// cap fits (more regions than the budget: the exchange then takes two launches).
fn largest_fitting_blocks(sides: &[Vec<(u32, u64)>; 2], most: u32, budget: u64) -> RegionBlocks {
    let largest = sides
        .iter()
        .flatten()
        .map(|&(_, cost)| cost)
        .max()
        .unwrap_or(0);
    let grid = |blocks: RegionBlocks| {
        sides
            .iter()
            .map(|side| {
                side.iter()
                    .map(|&(need, cost)| u64::from(blocks.of(need, cost)))
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    };
    // No cap above the budget fits: the costliest region alone would exceed it.
    let top = largest
        .div_ceil(BLOCK_COST_MOST)
        .min(budget)
        .max(u64::from(most));
    let top = u32::try_from(top).unwrap_or(u32::MAX);
    (1..=top)
        .rev()
        .map(|cap| RegionBlocks::balanced(cap, largest))
        .find(|&blocks| grid(blocks) <= budget)
        .unwrap_or(RegionBlocks::balanced(most, largest))
}

/// `sub`, a subarray of cells (merged), as a subarray of words, `per_cell` words a cell: each
/// cell's words lie contiguous, so a dimension of contiguous cells scales, and a subarray whose
/// innermost cells are apart gains an innermost dimension of the cell's words (a merged box
/// whose cells are apart in x uses at most two dimensions, so it fits).
///
/// # Errors
/// [`Error::Internal`] for a subarray with three strided dimensions (no box merges to one).
fn in_words(sub: Subarray, per_cell: u64) -> Result<Subarray> {
    if per_cell == 1 {
        return Ok(sub);
    }
    let [c0, c1, c2] = sub.count;
    let [s0, s1, s2] = sub.stride.map(|s| s * per_cell);
    let offset = sub.offset * per_cell;
    if sub.stride[0] == 1 {
        return Ok(Subarray {
            offset,
            count: [c0 * per_cell, c1, c2],
            stride: [1, s1, s2],
        });
    }
    if c2 != 1 {
        return Err(Error::Internal(format!(
            "a region of {:?} cells strided {:?} has no room for its cells' words",
            sub.count, sub.stride
        )));
    }
    Ok(Subarray {
        offset,
        count: [per_cell, c0, c1],
        stride: [1, s0, s1],
    }
    .merged())
}

/// A synthetic region's key (`hp_region.offset` under `HP_PAYLOAD_SYNTHETIC`): the packing
/// rank's bits high, the block id low.
fn synthetic_key(rank: i32, block: i32) -> u64 {
    (u64::from(rank as u32) << 32) | u64::from(block as u32)
}

#[cfg(test)]
mod tests {
    use super::{largest_fitting_blocks, region_cost, RegionBlocks};
    use crate::domain::Subarray;

    #[test]
    fn a_face_of_one_element_runs_costs_more_than_one_of_rows() {
        // Faces of 512 x 512 f64 cells of a 514^3 allocation: x (runs of one), z (rows).
        let x = Subarray {
            offset: 0,
            count: [1, 512, 512],
            stride: [1, 514, 514 * 514],
        };
        let z = Subarray {
            offset: 0,
            count: [512, 512, 1],
            stride: [1, 514, 514 * 514],
        };
        // A sector a cell and the buffer's, against the rows' and the buffer's.
        assert_eq!(region_cost(&x, 8), 512 * 512 + 512 * 512 / 4);
        assert_eq!(region_cost(&z, 8), 512 * 128 + 512 * 512 / 4);
    }

    /// A side's regions `(need, cost)` for elements `sizes`, blocks of 128 threads moving 4
    /// elements each (as the thesis workloads), the cost standing for the elements.
    fn regions(sizes: &[u64]) -> Vec<(u32, u64)> {
        sizes
            .iter()
            .map(|&e| (u32::try_from(e.div_ceil(512)).unwrap_or(u32::MAX), e))
            .collect()
    }

    fn grid(sides: &[Vec<(u32, u64)>; 2], blocks: RegionBlocks) -> u64 {
        sides
            .iter()
            .map(|s| s.iter().map(|&(n, e)| u64::from(blocks.of(n, e))).sum())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn regions_get_blocks_in_proportion_to_their_size() {
        let blocks = RegionBlocks::balanced(16, 130_000);
        // The largest gets the cap, one of 10 % a tenth of it (rounded up), a tiny one one.
        assert_eq!(blocks.of(254, 130_000), 16);
        assert_eq!(blocks.of(26, 13_000), 2);
        assert_eq!(blocks.of(1, 3), 1);
        // Never more than a region needs uncapped.
        assert_eq!(blocks.of(1, 100_000), 1);
        // Uniform: every region up to the cap.
        assert_eq!(RegionBlocks::uniform(16).of(26, 13_000), 16);
    }

    #[test]
    fn the_largest_region_gets_the_most_blocks_for_which_every_rank_fits() {
        // thesis-27's 27 blocks, the largest 130000 elements.
        let sizes: Vec<u64> = (0..27).map(|i| 1 + i * 5000).collect();
        let sides = [regions(&sizes), regions(&sizes)];
        // Room for 64 blocks for the largest: the option's cap stays.
        let roomy = largest_fitting_blocks(&sides, 64, 100_000);
        assert_eq!(roomy, RegionBlocks::balanced(64, 130_001));
        // Two ranks sharing 528 resident blocks: 264 each.
        let tight = largest_fitting_blocks(&sides, 64, 264);
        let bigger = RegionBlocks::balanced(tight.cap + 1, 130_001);
        assert!(
            grid(&sides, tight) <= 264 && grid(&sides, bigger) > 264,
            "cap {}: {} blocks",
            tight.cap,
            grid(&sides, tight)
        );
        // Fewer blocks than regions: nothing fits, the option's cap (two launches).
        assert_eq!(largest_fitting_blocks(&sides, 16, 20).cap, 16);
        // An empty side (a rank that only receives) takes the other's grid.
        let one_way = [vec![], regions(&[5120, 5120])];
        assert_eq!(largest_fitting_blocks(&one_way, 16, 12).cap, 6);
    }

    #[test]
    fn regions_whose_blocks_would_stream_too_much_get_more_blocks_than_the_cap() {
        use super::BLOCK_COST_MOST;
        // large: thesis-27's blocks x 10, the largest 1300000 elements (cost in elements here).
        let sizes: Vec<u64> = (0..27).map(|i| 10 + i * 50_000).collect();
        let sides = [regions(&sizes), regions(&sizes)];
        let largest = *sizes.last().unwrap_or(&0);
        // Room for all: the largest region's blocks each take at most BLOCK_COST_MOST.
        let roomy = largest_fitting_blocks(&sides, 16, 1_000_000);
        assert!(roomy.cap > 16, "cap {}", roomy.cap);
        assert!(largest.div_ceil(u64::from(roomy.cap)) <= BLOCK_COST_MOST);
        assert!(largest.div_ceil(u64::from(roomy.cap - 1)) > BLOCK_COST_MOST);
        // Two ranks sharing 1056 resident blocks: the most that fit in 528.
        let tight = largest_fitting_blocks(&sides, 16, 528);
        let bigger = RegionBlocks::balanced(tight.cap + 1, largest);
        assert!(tight.cap > 16 && tight.cap < roomy.cap, "cap {}", tight.cap);
        assert!(grid(&sides, tight) <= 528 && grid(&sides, bigger) > 528);
        // Regions of thesis-27's size stay at the cap.
        let small: Vec<u64> = sizes.iter().map(|&e| e / 10).collect();
        let thesis = [regions(&small), regions(&small)];
        assert_eq!(largest_fitting_blocks(&thesis, 16, 1_000_000).cap, 16);
    }
}
