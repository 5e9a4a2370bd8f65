//! Conformance of the library's kernels (SPEC 13): region pack and unpack against the index
//! rule, message signalling across two epochs, time-out and abort, the 27-point stencil bit for
//! bit against a CPU sum in the kernel's order, and the copy engine's 3-D copy against the
//! kernel's pack.
//!
//! Fields live in device memory (filled and read back through pinned staging copies), packed
//! buffers and tables in pinned memory, as the library uses them. Values are moved as bits, so
//! every comparison is of bits.

use std::time::{Duration, Instant};

use crate::backend::{
    upload_bytes, Backend, Coherence, DeviceMemory, Kernel, Launch, LaunchDims, PinnedMemory,
};
use crate::regions::{self, Copy3d};
use crate::shared::{
    hp_block_check, hp_block_times, hp_message_signal, hp_region, hp_regions_args, hp_stencil_args,
    HP_INLINE_REGIONS, HP_MESSAGE_ABORTED, HP_MESSAGE_OK, HP_MESSAGE_TIMED_OUT, HP_NO_MESSAGE,
    HP_PAYLOAD_COPY, HP_PAYLOAD_SYNTHETIC, HP_REGIONS_FULL, HP_REGIONS_FUSED,
    HP_REGIONS_FUSED_COPIES, HP_REGIONS_PLAIN, HP_VERIFY_FULL, HP_VERIFY_SAMPLE,
};
use crate::verify::{merge_checks, packed_value};

use super::{deadline, e, ensure, Check};

/// Threads per block in these tests: small, so that regions spread over several blocks.
const THREADS: u32 = 32;

/// A field's allocated extents (halo included), x fastest.
#[derive(Clone, Copy)]
struct Dims([u64; 3]);

impl Dims {
    fn len(self) -> u64 {
        self.0.iter().product()
    }

    fn at(self, x: u64, y: u64, z: u64) -> u64 {
        x + self.0[0] * (y + self.0[1] * z)
    }

    fn strides(self) -> [u64; 3] {
        [1, self.0[0], self.0[0] * self.0[1]]
    }

    /// The 26 neighbour regions of a field with a halo of 1: the interior's boundary layers
    /// (what is sent; faces, edges and corners overlap) or the halo's (what is received;
    /// disjoint).
    fn neighbours(self, halo: bool) -> Vec<hp_region> {
        let span = |k: usize, d: i32| -> (u64, u64) {
            let n = self.0[k];
            match (d, halo) {
                (-1, true) => (0, 1),
                (-1, false) => (1, 1),
                (1, true) => (n - 1, 1),
                (1, false) => (n - 2, 1),
                _ => (1, n - 2),
            }
        };
        let mut out = Vec::new();
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    if (dx, dy, dz) == (0, 0, 0) {
                        continue;
                    }
                    let (sx, cx) = span(0, dx);
                    let (sy, cy) = span(1, dy);
                    let (sz, cz) = span(2, dz);
                    out.push(self.region(self.at(sx, sy, sz), [cx, cy, cz], self.strides()));
                }
            }
        }
        out
    }

    fn region(self, offset: u64, count: [u64; 3], stride: [u64; 3]) -> hp_region {
        hp_region {
            offset,
            count,
            stride,
            message: HP_NO_MESSAGE,
            ..Default::default()
        }
    }
}

/// The bytes of shared structs or words: `T` is one of the types of `haloport_shared.h` or a
/// plain integer, made only of fixed-width integers without padding (the header's rule), so
/// every byte is initialized.
fn bytes_of<T: Copy>(items: &[T]) -> Vec<u8> {
    // SAFETY: items is a live slice of size_of_val(items) bytes, all initialized (above).
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), size_of_val(items)) }.to_vec()
}

/// Words (little-endian, as on every device haloport targets) of `eb` bytes each.
fn encode(words: &[u64], eb: usize) -> Vec<u8> {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes()[..eb].to_vec())
        .collect()
}

fn decode(bytes: &[u8], eb: usize) -> Vec<u64> {
    bytes
        .chunks_exact(eb)
        .map(|c| {
            let mut w = [0_u8; 8];
            w[..eb].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

/// The bits of `v` as an element of `eb` bytes: f32 or f64; for 1 and 2 bytes, a hash of its
/// bits (words the kernels move as they are, so any distinct-looking value serves).
fn bits(v: f64, eb: usize) -> u64 {
    match eb {
        4 => u64::from((v as f32).to_bits()),
        8 => v.to_bits(),
        _ => {
            let h = v.to_bits().wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (h >> 40) & ((1 << (8 * eb)) - 1)
        }
    }
}

/// Pinned memory holding `bytes`: tables for kernels, buffers the CPU fills.
fn pinned_with<B: Backend>(backend: &B, bytes: &[u8]) -> Result<B::PinnedMemory, String> {
    let p = backend
        .alloc_pinned(bytes.len().max(1), Coherence::Coherent)
        .map_err(e)?;
    // SAFETY: p holds at least bytes.len() bytes; no kernel or copy uses it yet.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.host_ptr(), bytes.len()) };
    Ok(p)
}

/// What the CPU sees in pinned memory once the work on it has completed.
fn pinned_bytes<P: PinnedMemory>(p: &P, offset: usize, len: usize) -> Vec<u8> {
    assert!(offset + len <= p.len_bytes());
    // SAFETY: the range lies inside the allocation (asserted); the callers synchronized every
    // stream that wrote it.
    unsafe { std::slice::from_raw_parts(p.host_ptr().add(offset), len) }.to_vec()
}

/// Waits for `stream` and hands `keep` back; on a time-out leaks it (memory queued work may
/// still touch).
fn settle<B: Backend, T>(backend: &B, stream: &B::Stream, keep: T) -> Result<T, String> {
    match backend.stream_synchronize(stream, deadline()) {
        Ok(()) => Ok(keep),
        Err(err) => {
            std::mem::forget(keep);
            Err(e(err))
        }
    }
}

/// Device memory holding `bytes`, copied from pinned memory.
fn device_with<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    bytes: &[u8],
) -> Result<B::DeviceMemory, String> {
    let staging = pinned_with(backend, bytes)?;
    let dev = backend.alloc_device(bytes.len().max(1)).map_err(e)?;
    // SAFETY: (1) staging and dev live until the stream is synchronized below (or are leaked);
    // (2) nothing else touches them.
    unsafe { backend.copy_to_device_async(&dev, 0, &staging, 0, bytes.len(), stream) }
        .map_err(e)?;
    settle(backend, stream, staging)?;
    Ok(dev)
}

/// The first `len` bytes of device memory, through a pinned staging copy.
fn device_bytes<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    dev: &B::DeviceMemory,
    len: usize,
) -> Result<Vec<u8>, String> {
    let staging = backend.alloc_pinned(len, Coherence::Coherent).map_err(e)?;
    // SAFETY: as for device_with.
    unsafe { backend.copy_to_host_async(&staging, 0, dev, 0, len, stream) }.map_err(e)?;
    let staging = settle(backend, stream, staging)?;
    Ok(pinned_bytes(&staging, 0, len))
}

/// A CPU reference of packing `region` of `field`: the index rule as nested loops, innermost
/// dimension first (not [`regions::field_index`], which the host backend uses).
fn reference_pack(field: &[u64], r: &hp_region) -> Vec<u64> {
    let mut out = Vec::new();
    for i2 in 0..r.count[2] {
        for i1 in 0..r.count[1] {
            for i0 in 0..r.count[0] {
                let f = r.offset + i0 * r.stride[0] + i1 * r.stride[1] + i2 * r.stride[2];
                out.push(field[f as usize]);
            }
        }
    }
    out
}

/// Places each region's buffer in one allocation starting at `base`; returns the byte offset
/// of each and the total.
fn lay_out(regions: &mut [hp_region], base: u64, eb: u64) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut at = 0_u64;
    for r in regions.iter_mut() {
        r.buffer = base + at;
        offsets.push(at as usize);
        at += regions::elems(r) * eb;
    }
    (offsets, at as usize)
}

/// What synthetic regions of a launch need: where unpack's check records go, and the
/// iteration the values are made of.
#[derive(Clone, Copy)]
struct Synthetic {
    checks: u64,
    iteration: u32,
    verify: u32,
}

impl Synthetic {
    const NONE: Synthetic = Synthetic {
        checks: 0,
        iteration: 0,
        verify: HP_VERIFY_FULL,
    };
}

/// How a launch runs the region kernels: which form, and where they read the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct How {
    /// The full form whatever the table, else the one [`regions::kernel_form`] chooses (the
    /// plain one wherever it serves).
    full_form: bool,
    /// The table in memory, else in the launch's parameters where it fits
    /// ([`hp_regions_args::with_inline_table`]).
    table_in_memory: bool,
}

impl How {
    /// As the library launches.
    const LIBRARY: How = How {
        full_form: false,
        table_in_memory: false,
    };
    /// Every form with every place of the table (the library runs each of them: the full form
    /// for device-direct messages, the table in memory for more than `HP_INLINE_REGIONS`).
    const ALL: [How; 4] = [
        How::LIBRARY,
        How {
            full_form: true,
            table_in_memory: false,
        },
        How {
            full_form: false,
            table_in_memory: true,
        },
        How {
            full_form: true,
            table_in_memory: true,
        },
    ];
}

/// A launch of a region kernel over a table of field regions (no message table, epoch 1), as
/// [`run_regions`] queues it.
#[derive(Clone, Copy)]
struct RegionLaunch {
    pack: bool,
    /// Element bytes.
    eb: u32,
    /// Grid blocks past the last region's (they must return at once).
    extra: u32,
    synthetic: Synthetic,
    how: How,
}

impl RegionLaunch {
    /// The pack (or unpack) of `eb`-byte elements as the library launches it, with no grid
    /// block to spare.
    fn new(pack: bool, eb: u32) -> RegionLaunch {
        RegionLaunch {
            pack,
            eb,
            extra: 0,
            synthetic: Synthetic::NONE,
            how: How::LIBRARY,
        }
    }
}

/// Launches a region kernel over `regions` (table in pinned memory) and waits for it.
fn run_regions<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    regions: &[hp_region],
    launch: RegionLaunch,
) -> Result<(), String> {
    let RegionLaunch {
        pack,
        eb,
        extra,
        synthetic,
        how,
    } = launch;
    let grid = regions::grid_blocks(regions).map_err(e)?;
    let table = pinned_with(backend, &bytes_of(regions))?;
    let args = hp_regions_args {
        regions: table.device_addr(),
        timeout_ticks: backend.device_info().timer_hz * 10,
        num_regions: regions.len() as u32,
        elem_bytes: eb,
        epoch: 1,
        checks: synthetic.checks,
        iteration: synthetic.iteration,
        verify: synthetic.verify,
        form: if how.full_form {
            HP_REGIONS_FULL
        } else {
            regions::kernel_form(regions, THREADS, eb)
        },
        ..Default::default()
    };
    let args = if how.table_in_memory {
        args
    } else {
        args.with_inline_table(regions)
    };
    let launch = if pack {
        Launch::PackRegions(&args)
    } else {
        Launch::UnpackRegions(&args)
    };
    let dims = LaunchDims {
        blocks: grid + extra,
        threads: THREADS,
    };
    // SAFETY: every address in args and the tables points into memory the caller keeps alive
    // until this function has synchronized the stream (or leaked the table).
    unsafe { backend.launch(launch, dims, stream) }.map_err(e)?;
    settle(backend, stream, table).map(drop)
}

/// The neighbour regions described with the fewest dimensions (as plans describe them): the x
/// faces are then walked one element per row, and pair.
fn merged(all: Vec<hp_region>) -> Vec<hp_region> {
    all.iter().map(regions::merged).collect()
}

/// Numbers the blocks of `regions` (`ept` elements per thread) and, with `pair`, pairs them:
/// the x faces (walked one element per row, `x_face` counts) must pair, or the check fails.
fn number(regions: &mut Vec<hp_region>, eb: u32, ept: u64, pair: bool, x_face: [u64; 3]) -> Check {
    regions::assign_blocks(regions, THREADS, ept).map_err(e)?;
    if pair {
        regions::pair_regions(regions, eb, THREADS, ept).map_err(e)?;
        let x_faces_paired = regions.iter().any(|r| r.partner != 0 && r.count == x_face);
        ensure(x_faces_paired, || "the x faces did not pair".into())?;
    }
    Ok(())
}

/// Pack of many regions (faces, edges, corners, a strided one, a transposed walk of the whole
/// field) and unpack of disjoint ones, for one element size; with `pair`, the neighbour regions
/// merged and the x faces paired.
fn pack_and_unpack_regions<B: Backend>(backend: &B, eb: u32, pair: bool, how: How) -> Check {
    let ebu = eb as usize;
    let dims = Dims([11, 9, 7]);
    let n = dims.len();
    let field: Vec<u64> = (0..n).map(|i| bits(i as f64 * 1.5 + 0.25, ebu)).collect();
    let stream = backend.create_stream().map_err(e)?;
    let src = device_with(backend, &stream, &encode(&field, ebu))?;
    let [s0, s1, s2] = dims.strides();
    // Interior only, stride 2 innermost: x 1,3,5,7; y 1,3,5; z 1,4.
    let strided = dims.region(dims.at(1, 1, 1), [4, 3, 2], [2 * s0, 2 * s1, 3 * s2]);
    // Every element, z fastest: the index rule with its strides in reverse order.
    let transposed = dims.region(0, [7, 9, 11], [s2, s1, s0]);

    let x_face = [dims.0[1] - 2, dims.0[2] - 2, 1];
    let neighbours = |halo: bool| {
        let all = dims.neighbours(halo);
        if pair {
            merged(all)
        } else {
            all
        }
    };
    // Pack: 26 sending regions, then the strided and the transposed one.
    let mut send = neighbours(false);
    send.push(strided);
    send.push(transposed);
    // Three elements per thread: threads stride over their region (the transposed one spreads
    // over 8 blocks).
    number(&mut send, eb, 3, pair, x_face)?;
    for r in &mut send {
        r.field = src.device_addr();
    }
    ensure(
        eb < 4 || regions::kernel_form(&send, THREADS, eb) == HP_REGIONS_PLAIN,
        || "these regions should run the plain form of the kernels".into(),
    )?;
    let total: u64 = send.iter().map(regions::elems).sum();
    let packed = backend
        .alloc_pinned((total * u64::from(eb)) as usize, Coherence::Coherent)
        .map_err(e)?;
    let (offsets, len) = lay_out(&mut send, packed.device_addr(), u64::from(eb));
    let launch = RegionLaunch {
        extra: 3,
        how,
        ..RegionLaunch::new(true, eb)
    };
    run_regions(backend, &stream, &send, launch)?;
    let got = decode(&pinned_bytes(&packed, 0, len), ebu);
    for (i, r) in send.iter().enumerate() {
        let want = reference_pack(&field, r);
        let at = offsets[i] / ebu;
        let have = &got[at..at + want.len()];
        if let Some(k) = (0..want.len()).find(|&k| have[k] != want[k]) {
            return Err(format!(
                "f{}: pack of region {i} ({} blocks, counts {:?}, strides {:?}): element {k} is \
                 {:#x}, expected {:#x}",
                8 * eb,
                r.blocks,
                r.count,
                r.stride,
                have[k],
                want[k]
            ));
        }
    }

    // Unpack: the 26 halo regions and the strided one (all disjoint) from buffers the CPU
    // filled, into a zeroed field; everything else must stay 0.
    let mut recv = neighbours(true);
    recv.push(strided);
    number(&mut recv, eb, 1, pair, x_face)?;
    let total: u64 = recv.iter().map(regions::elems).sum();
    let values: Vec<u64> = (0..total).map(|i| bits(-(i as f64) - 0.5, ebu)).collect();
    let incoming = pinned_with(backend, &encode(&values, ebu))?;
    let dst = backend
        .alloc_device((n * u64::from(eb)) as usize)
        .map_err(e)?;
    let (offsets, _) = lay_out(&mut recv, incoming.device_addr(), u64::from(eb));
    for r in &mut recv {
        r.field = dst.device_addr();
    }
    let launch = RegionLaunch {
        extra: 2,
        how,
        ..RegionLaunch::new(false, eb)
    };
    run_regions(backend, &stream, &recv, launch)?;
    let mut want = vec![0_u64; n as usize];
    for (i, r) in recv.iter().enumerate() {
        let mut e = offsets[i] / ebu;
        for i2 in 0..r.count[2] {
            for i1 in 0..r.count[1] {
                for i0 in 0..r.count[0] {
                    let f = r.offset + i0 * r.stride[0] + i1 * r.stride[1] + i2 * r.stride[2];
                    want[f as usize] = values[e];
                    e += 1;
                }
            }
        }
    }
    let have = decode(
        &device_bytes(backend, &stream, &dst, (n * u64::from(eb)) as usize)?,
        ebu,
    );
    match (0..n as usize).find(|&i| have[i] != want[i]) {
        Some(i) => Err(format!(
            "f{}: after unpack, field element {i} is {:#x}, expected {:#x}",
            8 * eb,
            have[i],
            want[i]
        )),
        None => Ok(()),
    }
}

/// Pack and unpack of many regions in one launch (26 neighbour regions, a region with
/// innermost stride 2, a transposed walk of a whole field; regions of one to 22 blocks, threads
/// striding over their region, and grid blocks past the last region) move exactly the elements the index rule names, in words
/// of 8, 4, 2 and 1 bytes (the last two in the full form only).
pub fn region_pack_and_unpack_follow_the_index_rule<B: Backend>(backend: &B) -> Check {
    for how in How::ALL {
        for eb in [8, 4, 2, 1] {
            pack_and_unpack_regions(backend, eb, false, how)?;
        }
    }
    Ok(())
}

/// The same with the regions merged (as plans give them) and the -x and +x faces paired: one
/// region moves both, interleaved, and every element lands where the index rule says.
pub fn paired_regions_move_the_same_elements<B: Backend>(backend: &B) -> Check {
    for how in How::ALL {
        for eb in [8, 4, 2, 1] {
            pack_and_unpack_regions(backend, eb, true, how)?;
        }
    }
    Ok(())
}

/// A periodic rank's own messages copied straight into its halos (`HP_PAYLOAD_COPY`): the
/// pack of the 26 sending regions, each into the halo on the opposite side, fills every halo
/// element with the interior element it mirrors and leaves the interior as it was, in words of
/// 8, 4, 2 and 1 bytes, the regions as they are and merged with the x faces paired, in every
/// form and place of the table.
pub fn local_copies_fill_the_halos_they_mirror<B: Backend>(backend: &B) -> Check {
    for how in How::ALL {
        for eb in [8, 4, 2, 1] {
            for pair in [false, true] {
                local_copies_case(backend, eb, pair, how)
                    .map_err(|m| format!("f{} {how:?}, paired {pair}: {m}", 8 * eb))?;
            }
        }
    }
    Ok(())
}

fn local_copies_case<B: Backend>(backend: &B, eb: u32, pair: bool, how: How) -> Check {
    let ebu = eb as usize;
    let dims = Dims([11, 9, 7]);
    let n = dims.len();
    let field: Vec<u64> = (0..n).map(|i| bits(i as f64 * 1.5 + 0.25, ebu)).collect();
    let stream = backend.create_stream().map_err(e)?;
    let memory = device_with(backend, &stream, &encode(&field, ebu))?;
    let base = memory.device_addr();
    let shape = |all: Vec<hp_region>| if pair { merged(all) } else { all };
    let (sends, halos) = (shape(dims.neighbours(false)), shape(dims.neighbours(true)));
    // What goes towards direction d fills the halo on the side of -d: neighbours lists the
    // directions symmetrically, so that halo is the mirror image's, 25 - i.
    let mut copies: Vec<hp_region> = sends
        .iter()
        .enumerate()
        .map(|(i, r)| hp_region {
            field: base,
            buffer: base + halos[25 - i].offset * u64::from(eb),
            payload: HP_PAYLOAD_COPY,
            ..*r
        })
        .collect();
    number(&mut copies, eb, 1, pair, [dims.0[1] - 2, dims.0[2] - 2, 1])?;
    ensure(
        eb < 4 || regions::kernel_form(&copies, THREADS, eb) == HP_REGIONS_PLAIN,
        || "local copies should run the plain form of the kernels".into(),
    )?;
    let launch = RegionLaunch {
        extra: 2,
        how,
        ..RegionLaunch::new(true, eb)
    };
    run_regions(backend, &stream, &copies, launch)?;
    let mut want = field.clone();
    for (i, r) in sends.iter().enumerate() {
        let halo = &halos[25 - i];
        ensure(halo.count == r.count && halo.stride == r.stride, || {
            format!("region {i}'s halo has another shape")
        })?;
        for (e, value) in reference_pack(&field, r).into_iter().enumerate() {
            want[regions::field_index(halo, e as u64) as usize] = value;
        }
    }
    let have = decode(
        &device_bytes(backend, &stream, &memory, (n * u64::from(eb)) as usize)?,
        ebu,
    );
    match (0..n as usize).find(|&i| have[i] != want[i]) {
        Some(i) => Err(format!(
            "field element {i} is {:#x}, expected {:#x}",
            have[i], want[i]
        )),
        None => Ok(()),
    }
}

/// Synthetic regions (the thesis's blocks as a payload of the region kernels): pack stores
/// `packed_value(iteration, rank, block, e)` at every element; unpack checks every element and
/// each grid block writes its record at `checks + blockIdx.x`; a wrong element is found with
/// its index and values.
pub fn synthetic_regions_pack_and_check_the_thesis_values<B: Backend>(backend: &B) -> Check {
    let (rank, iteration) = (5_i32, 42_u32);
    let blocks_and_elems: [(u32, u64); 3] = [(0, 1000), (3, 77), (8, 4096)];
    let mut regions: Vec<hp_region> = blocks_and_elems
        .iter()
        .map(|&(block, n)| hp_region {
            offset: (u64::from(rank as u32) << 32) | u64::from(block),
            count: [n, 1, 1],
            stride: [1, n, n],
            message: HP_NO_MESSAGE,
            payload: HP_PAYLOAD_SYNTHETIC,
            ..Default::default()
        })
        .collect();
    regions::assign_blocks(&mut regions, THREADS, 3).map_err(e)?;
    let total: u64 = blocks_and_elems.iter().map(|&(_, n)| n).sum();
    let buffer = backend
        .alloc_pinned((8 * total) as usize, Coherence::Coherent)
        .map_err(e)?;
    let (offsets, _) = lay_out(&mut regions, buffer.device_addr(), 8);
    let grid = regions::grid_blocks(&regions).map_err(e)?;
    let records = pinned_with(
        backend,
        &bytes_of(&vec![hp_block_check::default(); grid as usize]),
    )?;
    let synthetic = Synthetic {
        checks: records.device_addr(),
        iteration,
        verify: HP_VERIFY_FULL,
    };
    let stream = backend.create_stream().map_err(e)?;
    // Every launch of this check: the synthetic regions, f64.
    let run = |pack: bool, synthetic: Synthetic| {
        let launch = RegionLaunch {
            synthetic,
            ..RegionLaunch::new(pack, 8)
        };
        run_regions(backend, &stream, &regions, launch)
    };
    run(true, synthetic)?;
    let packed = decode(&pinned_bytes(&buffer, 0, (8 * total) as usize), 8);
    for (r, &(block, n)) in blocks_and_elems.iter().enumerate() {
        let at = offsets[r] / 8;
        if let Some(i) = (0..n)
            .find(|&i| packed[at + i as usize] != packed_value(iteration, rank, block, i).to_bits())
        {
            return Err(format!(
                "pack of block {block}: element {i} is not the thesis's value"
            ));
        }
    }
    // Unpack checks what pack stored (every element right), then with one element wrong.
    let folded = |records: &B::PinnedMemory| -> Vec<hp_block_check> {
        let bytes = pinned_bytes(records, 0, grid as usize * size_of::<hp_block_check>());
        let all: Vec<hp_block_check> = bytes
            .chunks_exact(size_of::<hp_block_check>())
            // SAFETY: each chunk holds the bytes of one hp_block_check, a plain C struct.
            .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<hp_block_check>()) })
            .collect();
        regions
            .iter()
            .map(|r| {
                let mut f = hp_block_check::default();
                for c in &all[r.first_block as usize..(r.first_block + r.blocks) as usize] {
                    merge_checks(&mut f, c);
                }
                f
            })
            .collect()
    };
    run(false, synthetic)?;
    for (r, c) in folded(&records).iter().enumerate() {
        let n = blocks_and_elems[r].1;
        ensure(u64::from(c.checked) == n && c.wrong == 0, || {
            format!(
                "unpack of block {r}: {} checks, {} wrong, expected {n} and 0",
                c.checked, c.wrong
            )
        })?;
    }
    let bad = 500_usize;
    // SAFETY: element 500 of block 0 lies in the buffer; no kernel runs now.
    unsafe {
        buffer
            .host_ptr()
            .cast::<f64>()
            .add(offsets[0] / 8 + bad)
            .write(-1.0)
    };
    run(false, synthetic)?;
    let c = folded(&records)[0];
    ensure(
        c.wrong == 1 && c.first_index == bad as u64 && c.first_found == -1.0,
        || format!("a wrong element 500 came out as {c:?}"),
    )?;
    // Sampling: the thesis's threads + 2 checks per block, whatever its grid blocks.
    let sample = Synthetic {
        verify: HP_VERIFY_SAMPLE,
        ..synthetic
    };
    run(false, sample)?;
    for (r, c) in folded(&records).iter().enumerate() {
        let n = blocks_and_elems[r].1;
        let want = crate::verify::planned_checks(crate::verify::Verify::Sample, THREADS, n);
        ensure(u64::from(c.checked) == want, || {
            format!(
                "sampled unpack of block {r}: {} checks, expected {want}",
                c.checked
            )
        })?;
    }
    Ok(())
}

/// u64 words of a control block in device memory (a u32 counter reads as the low half of its
/// word; the high half stays zero).
fn control_words<B: Backend>(
    backend: &B,
    stream: &B::Stream,
    ctl: &B::DeviceMemory,
) -> Result<Vec<u64>, String> {
    let bytes = device_bytes(backend, stream, ctl, ctl.len_bytes())?;
    Ok(decode(&bytes, 8))
}

/// The pack side of the message cases: the x-low and x-high sending faces of `dims` as message
/// 0 (disjoint, so that one unpack may write both) and the y-low sending face without a
/// message, read from the field at `field`, packed one after another into `buffer`.
struct FaceMessage<P> {
    send: Vec<hp_region>,
    /// Grid blocks of message 0.
    message_blocks: u32,
    buffer: P,
    /// Each region's first byte in `buffer`.
    offsets: Vec<usize>,
    /// Elements of all three regions.
    total: u64,
}

impl<P: PinnedMemory> FaceMessage<P> {
    fn new<B: Backend<PinnedMemory = P>>(
        backend: &B,
        dims: &Dims,
        field: u64,
    ) -> Result<Self, String> {
        let all = dims.neighbours(false);
        let mut send = vec![all[12], all[13], all[10]];
        regions::assign_blocks(&mut send, THREADS, 1).map_err(e)?;
        send[0].message = 0;
        send[1].message = 0;
        let message_blocks = send[0].blocks + send[1].blocks;
        let total: u64 = send.iter().map(regions::elems).sum();
        let buffer = backend
            .alloc_pinned((total * 8) as usize, Coherence::Coherent)
            .map_err(e)?;
        let (offsets, _) = lay_out(&mut send, buffer.device_addr(), 8);
        for r in &mut send {
            r.field = field;
        }
        Ok(FaceMessage {
            send,
            message_blocks,
            buffer,
            offsets,
            total,
        })
    }

    /// Checks that `buffer` holds every region packed from `field`; `what` names the case.
    fn packed_from(&self, field: &[u64], what: &str) -> Check {
        let got = decode(&pinned_bytes(&self.buffer, 0, (self.total * 8) as usize), 8);
        for (i, r) in self.send.iter().enumerate() {
            let want = reference_pack(field, r);
            let at = self.offsets[i] / 8;
            ensure(got[at..at + want.len()] == want[..], || {
                format!("{what}: packed region {i} holds wrong values")
            })?;
        }
        Ok(())
    }
}

/// Counters and flags of [`region_messages_signal_each_epoch`], u64 word indices into the
/// control block (flags are u64 epochs, counters u32s).
const PACK_COUNTER: usize = 0;
const UNPACK_COUNTER: usize = 1;
const ARRIVAL: usize = 2;
const CREDIT: usize = 3;

/// A message's signalling across two epochs: unpack (on its own stream, launched first) waits
/// for the pack's arrival flag in device memory; pack waits for the credit of the previous
/// epoch. After each epoch the flags hold the epoch, the counters epoch * blocks (modulo
/// 2^32), the statuses OK, and the destination the epoch's values; a region without a message
/// in the same pack launch moves its elements too. Epochs are 64-bit: after epochs 1 and 2, the
/// flags and counters are set as epoch 2^32 - 2 left them, and epochs 2^32 - 1 to 2^32 + 1
/// must signal alike (a 32-bit epoch would wrap to 0 there). Both launches share one array of
/// timestamps (`hp_regions_args.times`), the unpack's grid as large as the pack's: every pack
/// block stamps its pack phase and every unpack block serving a region its unpack phase, each
/// nonzero and in order; the unpack's blocks past its last region stamp nothing.
pub fn region_messages_signal_each_epoch<B: Backend>(backend: &B) -> Check {
    let eb = 8_u32;
    let dims = Dims([8, 7, 6]);
    let n = dims.len();
    let ctl = backend.alloc_device(64).map_err(e)?;
    let word = |i: usize| ctl.device_addr() + 8 * i as u64;
    let src = backend.alloc_device((n * 8) as usize).map_err(e)?;
    let dst = backend.alloc_device((n * 8) as usize).map_err(e)?;

    // Message 0 of two faces, and a plain region that only pack moves.
    let message = FaceMessage::new(backend, &dims, src.device_addr())?;
    let (send, message_blocks) = (&message.send, message.message_blocks);
    // Unpack the two message regions from the same buffer into the same places of dst.
    let mut recv = send[..2].to_vec();
    for r in &mut recv {
        r.field = dst.device_addr();
    }
    let status = pinned_with(backend, &[0_u8; 8])?;
    let pack_grid = regions::grid_blocks(send).map_err(e)?;
    let unpack_grid = regions::grid_blocks(&recv).map_err(e)?;
    let times_bytes = pack_grid as usize * size_of::<hp_block_times>();
    let times = pinned_with(backend, &vec![0_u8; times_bytes])?;
    // Created after the memory their work touches, so dropped (waiting for it) before it.
    let (pack_stream, unpack_stream) = (
        backend.create_stream().map_err(e)?,
        backend.create_stream().map_err(e)?,
    );

    const WRAP: u64 = 1 << 32;
    for epoch in [1, 2, WRAP - 1, WRAP, WRAP + 1] {
        if epoch == WRAP - 1 {
            // As epoch WRAP - 2 leaves them: flags at it, counters at it times the blocks.
            let before = epoch - 1;
            let count = (before * u64::from(message_blocks)) & 0xffff_ffff;
            let mut words = [0_u64; 8];
            words[PACK_COUNTER] = count;
            words[UNPACK_COUNTER] = count;
            words[ARRIVAL] = before;
            words[CREDIT] = before;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            upload_bytes(backend, &ctl, &bytes, &pack_stream, deadline()).map_err(e)?;
        }
        let field: Vec<u64> = (0..n)
            .map(|i| ((epoch % 1_000_000 * 1000) as f64 + i as f64).to_bits())
            .collect();
        let staging = pinned_with(backend, &encode(&field, 8))?;
        let pack_message = [hp_message_signal {
            counter: word(PACK_COUNTER),
            flag: word(ARRIVAL),
            wait: word(CREDIT),
            wait_lag: 1,
            blocks: message_blocks,
        }];
        let unpack_message = [hp_message_signal {
            counter: word(UNPACK_COUNTER),
            flag: word(CREDIT),
            wait: word(ARRIVAL),
            wait_lag: 0,
            blocks: message_blocks,
        }];
        let tables = (
            pinned_with(backend, &bytes_of(send))?,
            pinned_with(backend, &bytes_of(&pack_message))?,
            pinned_with(backend, &bytes_of(&recv))?,
            pinned_with(backend, &bytes_of(&unpack_message))?,
        );
        let args = |pack: bool| hp_regions_args {
            regions: if pack { &tables.0 } else { &tables.2 }.device_addr(),
            messages: if pack { &tables.1 } else { &tables.3 }.device_addr(),
            status: status.device_addr() + if pack { 0 } else { 4 },
            abort_flag: 0,
            timeout_ticks: backend.device_info().timer_hz * 20,
            num_regions: if pack { 3 } else { 2 },
            elem_bytes: eb,
            epoch,
            times: times.device_addr(),
            ..hp_regions_args::default()
        };
        let (pack_args, unpack_args) = (args(true), args(false));
        // One grid for both: the unpack's extra blocks return at once.
        let (pack_dims, unpack_dims) = (
            LaunchDims {
                blocks: pack_grid,
                threads: THREADS,
            },
            LaunchDims {
                blocks: pack_grid,
                threads: THREADS,
            },
        );
        // SAFETY: the streams were synchronized after the last epoch's launches (or none ran).
        unsafe { std::ptr::write_bytes(times.host_ptr(), 0, times_bytes) };
        // SAFETY: every address in the arguments and tables points into memory that lives
        // until both streams are synchronized below (or is leaked with the tables); the
        // source copy is ordered before the pack on its stream.
        let queued = unsafe {
            backend
                .launch(
                    Launch::UnpackRegions(&unpack_args),
                    unpack_dims,
                    &unpack_stream,
                )
                .and_then(|()| {
                    backend.copy_to_device_async(
                        &src,
                        0,
                        &staging,
                        0,
                        (n * 8) as usize,
                        &pack_stream,
                    )
                })
                .and_then(|()| {
                    backend.launch(Launch::PackRegions(&pack_args), pack_dims, &pack_stream)
                })
        };
        let synced = queued
            .and_then(|()| backend.stream_synchronize(&pack_stream, deadline()))
            .and_then(|()| backend.stream_synchronize(&unpack_stream, deadline()));
        if let Err(err) = synced {
            std::mem::forget((tables, staging));
            return Err(format!("epoch {epoch}: {err}"));
        }
        let words = control_words(backend, &pack_stream, &ctl)?;
        let statuses = decode(&pinned_bytes(&status, 0, 8), 4);
        let want_count = (epoch * u64::from(message_blocks)) & 0xffff_ffff;
        ensure(
            words[ARRIVAL] == epoch
                && words[CREDIT] == epoch
                && words[PACK_COUNTER] == want_count
                && words[UNPACK_COUNTER] == want_count
                && statuses == [0, 0],
            || {
                format!(
                    "epoch {epoch}: arrival {}, credit {} (expected {epoch}), counters {} and \
                     {} (expected {want_count}), statuses {statuses:?} (expected OK)",
                    words[ARRIVAL], words[CREDIT], words[PACK_COUNTER], words[UNPACK_COUNTER]
                )
            },
        )?;
        message.packed_from(&field, &format!("epoch {epoch}"))?;
        let moved = decode(
            &device_bytes(backend, &pack_stream, &dst, (n * 8) as usize)?,
            8,
        );
        for (i, r) in recv.iter().enumerate() {
            ensure(
                reference_pack(&moved, r) == reference_pack(&field, r),
                || format!("epoch {epoch}: unpacked region {i} holds wrong values"),
            )?;
        }
        let stamps = pinned_bytes(&times, 0, times_bytes);
        for (g, t) in decode(&stamps, 8).chunks_exact(4).enumerate() {
            let (pack, unpack) = ([t[0], t[1]], [t[2], t[3]]);
            let stamped = |p: [u64; 2]| p[0] > 0 && p[0] <= p[1];
            let unpacks = (g as u32) < unpack_grid;
            ensure(
                stamped(pack)
                    && (if unpacks {
                        stamped(unpack)
                    } else {
                        unpack == [0, 0]
                    }),
                || {
                    format!(
                        "epoch {epoch}: grid block {g}: pack stamps {pack:?}, unpack stamps \
                         {unpack:?} (expected nonzero and in order{})",
                        if unpacks {
                            ""
                        } else {
                            "; unpack none: past its last region"
                        }
                    )
                },
            )?;
        }
    }
    Ok(())
}

/// A wait that times out writes HP_MESSAGE_TIMED_OUT and skips its region's work and count; a
/// raised abort flag ends a long wait at once with HP_MESSAGE_ABORTED; a region without a
/// message in the same launch is moved either way.
pub fn region_waits_time_out_and_abort<B: Backend>(backend: &B) -> Check {
    let dims = Dims([6, 6, 6]);
    let n = dims.len();
    let ctl = backend.alloc_device(64).map_err(e)?;
    let word = |i: usize| ctl.device_addr() + 8 * i as u64;
    let dst = backend.alloc_device((n * 8) as usize).map_err(e)?;
    let all = dims.neighbours(true);
    let mut recv = vec![all[12], all[13]];
    regions::assign_blocks(&mut recv, THREADS, 1).map_err(e)?;
    recv[0].message = 0;
    let total: u64 = recv.iter().map(regions::elems).sum();
    let values: Vec<u64> = (0..total).map(|i| (i as f64 + 7.0).to_bits()).collect();
    let incoming = pinned_with(backend, &encode(&values, 8))?;
    lay_out(&mut recv, incoming.device_addr(), 8);
    for r in &mut recv {
        r.field = dst.device_addr();
    }
    let message = [hp_message_signal {
        counter: word(UNPACK_COUNTER),
        flag: word(CREDIT),
        wait: word(ARRIVAL),
        wait_lag: 0,
        blocks: recv[0].blocks,
    }];
    let tables = (
        pinned_with(backend, &bytes_of(&recv))?,
        pinned_with(backend, &bytes_of(&message))?,
    );
    let status = pinned_with(backend, &[0_u8; 4])?;
    let abort = pinned_with(backend, &[0_u8; 8])?;
    let hz = backend.device_info().timer_hz;
    let dims_of = LaunchDims {
        blocks: regions::grid_blocks(&recv).map_err(e)?,
        threads: THREADS,
    };
    // Created after the memory its work touches, so dropped (waiting for it) before it.
    let stream = backend.create_stream().map_err(e)?;

    for (case, abort_value, timeout_ticks, want) in [
        ("time-out", 0_u64, hz / 50, HP_MESSAGE_TIMED_OUT),
        ("abort", 1, hz * 20, HP_MESSAGE_ABORTED),
    ] {
        // SAFETY: no kernel runs; a u32 status and a u64 abort flag in live pinned memory.
        unsafe {
            status
                .host_ptr()
                .cast::<u32>()
                .write_volatile(HP_MESSAGE_OK);
            abort.host_ptr().cast::<u64>().write_volatile(abort_value);
        }
        let args = hp_regions_args {
            regions: tables.0.device_addr(),
            messages: tables.1.device_addr(),
            status: status.device_addr(),
            abort_flag: abort.device_addr(),
            timeout_ticks,
            num_regions: 2,
            elem_bytes: 8,
            epoch: 1,
            ..hp_regions_args::default()
        };
        let started = Instant::now();
        // SAFETY: every address points into memory that lives until the stream is
        // synchronized (or the tables are leaked).
        unsafe { backend.launch(Launch::UnpackRegions(&args), dims_of, &stream) }.map_err(e)?;
        if let Err(err) = backend.stream_synchronize(&stream, deadline()) {
            std::mem::forget((tables, status, abort, incoming));
            return Err(format!("{case}: {err}"));
        }
        let took = started.elapsed();
        let got = decode(&pinned_bytes(&status, 0, 4), 4)[0];
        ensure(got == u64::from(want), || {
            format!("{case}: status {got}, expected {want}")
        })?;
        ensure(case != "abort" || took < Duration::from_secs(10), || {
            format!("abort: the wait ended only after {took:?}")
        })?;
        let words = control_words(backend, &stream, &ctl)?;
        ensure(words[UNPACK_COUNTER] == 0 && words[CREDIT] == 0, || {
            format!(
                "{case}: a block that gave up counted ({}) or raised the flag ({})",
                words[UNPACK_COUNTER], words[CREDIT]
            )
        })?;
        let have = decode(&device_bytes(backend, &stream, &dst, (n * 8) as usize)?, 8);
        ensure(
            reference_pack(&have, &recv[0]).iter().all(|&w| w == 0),
            || format!("{case}: the region whose wait gave up was unpacked"),
        )?;
        let plain_at = regions::elems(&recv[0]) as usize;
        ensure(
            reference_pack(&have, &recv[1]) == values[plain_at..],
            || format!("{case}: the region without a message was not unpacked"),
        )?;
    }
    Ok(())
}

/// The one-launch exchange (`HP_REGIONS_FUSED`): one table of the pack regions (a message of
/// two faces and a plain face), then the unpack regions (a message of the same two faces from
/// another buffer, naming message 1: the pack's count is 1). Its unpack waits for the arrival
/// flag its own pack raises. Every region moves; the flags and counters hold epoch 1 and
/// the blocks; both status words stay OK. Then the unpack waits for a flag nobody raises:
/// its status word (the second, after the pack's) says timed out, its regions stay
/// untouched, and the pack still moves. Both cases with the table in device memory
/// (`hp_exchange_regions`) and in the launch's parameters (5 regions: the short parameter of
/// `hp_exchange_regions_few`). Then the arrival case with a local copy among the pack regions
/// (`HP_REGIONS_FUSED_COPIES`, `hp_exchange_regions_copies`, both places of the table): the
/// source's z-low face lands in its z-high halo, which the other cases leave as it was.
pub fn one_launch_exchange_packs_then_unpacks<B: Backend>(backend: &B) -> Check {
    let dims = Dims([8, 7, 6]);
    let n = dims.len();
    let ctl = backend.alloc_device(64).map_err(e)?;
    let word = |i: usize| ctl.device_addr() + 8 * i as u64;
    let src = backend.alloc_device((n * 8) as usize).map_err(e)?;
    let dst = backend.alloc_device((n * 8) as usize).map_err(e)?;
    let message = FaceMessage::new(backend, &dims, src.device_addr())?;
    let (send, message_blocks) = (&message.send, message.message_blocks);
    let all = dims.neighbours(false);
    let mut recv = vec![all[12], all[13]];
    regions::assign_blocks(&mut recv, THREADS, 1).map_err(e)?;
    let incoming_total: u64 = recv.iter().map(regions::elems).sum();
    let incoming: Vec<u64> = (0..incoming_total)
        .map(|i| (i as f64 * 0.5 - 3.0).to_bits())
        .collect();
    let incoming_buffer = pinned_with(backend, &encode(&incoming, 8))?;
    lay_out(&mut recv, incoming_buffer.device_addr(), 8);
    for r in &mut recv {
        r.field = dst.device_addr();
        r.message = 1;
    }
    let field: Vec<u64> = (0..n).map(|i| (i as f64 + 0.25).to_bits()).collect();
    // The z-low face copied into the z-high halo of the same field (the mirror image's: 25 - 4).
    let (face, halo) = (all[4], dims.neighbours(true)[21]);
    let mut with_copy = send.clone();
    with_copy.push(hp_region {
        field: src.device_addr(),
        buffer: src.device_addr() + 8 * halo.offset,
        payload: HP_PAYLOAD_COPY,
        first_block: regions::grid_blocks(send).map_err(e)?,
        blocks: 2,
        ..face
    });
    let grid_of = |pack: &[hp_region]| -> Result<u32, String> {
        Ok(regions::grid_blocks(pack)
            .map_err(e)?
            .max(regions::grid_blocks(&recv).map_err(e)?))
    };
    let grid_most = grid_of(&with_copy)?;
    let status = pinned_with(backend, &[0_u8; 8])?;
    // The done words each grid block raises.
    let done = pinned_with(backend, &vec![0_u8; 8 * grid_most as usize])?;
    // Created after the memory its work touches, so dropped (waiting for it) before it.
    let stream = backend.create_stream().map_err(e)?;
    let hz = backend.device_info().timer_hz;
    for (case, wait, timeout_ticks, inline, copy) in [
        ("arrival", word(ARRIVAL), hz * 20, false, false),
        ("time-out", word(5), hz / 50, false, false),
        ("arrival, table inline", word(ARRIVAL), hz * 20, true, false),
        ("time-out, table inline", word(5), hz / 50, true, false),
        ("arrival, a local copy", word(ARRIVAL), hz * 20, false, true),
        (
            "arrival, a local copy, table inline",
            word(ARRIVAL),
            hz * 20,
            true,
            true,
        ),
    ] {
        let pack: &[hp_region] = if copy { &with_copy } else { send };
        let grid = grid_of(pack)?;
        let zeroes = vec![0_u8; (n * 8) as usize];
        let (staging, clean) = (
            pinned_with(backend, &encode(&field, 8))?,
            pinned_with(backend, &zeroes)?,
        );
        let signals = [
            hp_message_signal {
                counter: word(PACK_COUNTER),
                flag: word(ARRIVAL),
                wait: 0,
                wait_lag: 0,
                blocks: message_blocks,
            },
            hp_message_signal {
                counter: word(UNPACK_COUNTER),
                flag: word(CREDIT),
                wait,
                wait_lag: 0,
                blocks: message_blocks,
            },
        ];
        let table: Vec<hp_region> = pack.iter().chain(&recv).copied().collect();
        let tables = (
            pinned_with(backend, &bytes_of(&table))?,
            pinned_with(backend, &bytes_of(&signals))?,
        );
        let args = hp_regions_args {
            regions: tables.0.device_addr(),
            messages: tables.1.device_addr(),
            status: status.device_addr(),
            timeout_ticks,
            num_regions: pack.len() as u32,
            num_unpack_regions: recv.len() as u32,
            elem_bytes: 8,
            epoch: 1,
            form: if copy {
                HP_REGIONS_FUSED_COPIES
            } else {
                HP_REGIONS_FUSED
            },
            done: done.device_addr(),
            ..hp_regions_args::default()
        };
        let args = if inline {
            args.with_inline_table(&table)
        } else {
            args
        };
        let kernel = Launch::ExchangeRegions(&args).kernel();
        // 8-byte words: the one launch's kernels of that size.
        let want_kernel = match (copy, inline) {
            (true, _) => Kernel::ExchangeRegionsCopies,
            (false, true) => Kernel::ExchangeRegionsFewW8,
            (false, false) => Kernel::ExchangeRegionsW8,
        };
        ensure(kernel == want_kernel, || {
            format!("{case}: {} regions launch {kernel:?}", table.len())
        })?;
        // SAFETY: no kernel runs (the stream was synchronized after the last case).
        unsafe {
            std::ptr::write_bytes(status.host_ptr(), 0, 8);
            std::ptr::write_bytes(done.host_ptr(), 0, 8 * grid as usize);
        }
        let launch = LaunchDims {
            blocks: grid,
            threads: THREADS,
        };
        // SAFETY: every address points into memory that lives until the stream is
        // synchronized (or is leaked with the tables); the copies are ordered before the
        // launch on its stream.
        let queued = unsafe {
            upload_bytes(backend, &ctl, &[0_u8; 64], &stream, deadline())
                .and_then(|()| {
                    backend.copy_to_device_async(&src, 0, &staging, 0, zeroes.len(), &stream)
                })
                .and_then(|()| {
                    backend.copy_to_device_async(&dst, 0, &clean, 0, zeroes.len(), &stream)
                })
                .and_then(|()| backend.launch(Launch::ExchangeRegions(&args), launch, &stream))
        };
        if let Err(err) = queued.and_then(|()| backend.stream_synchronize(&stream, deadline())) {
            std::mem::forget((tables, staging, clean));
            return Err(format!("{case}: {err}"));
        }
        let statuses = decode(&pinned_bytes(&status, 0, 8), 4);
        let words = control_words(backend, &stream, &ctl)?;
        // Every grid block raises its word, whatever its waits ended in.
        let done_words = decode(&pinned_bytes(&done, 0, 8 * grid as usize), 8);
        ensure(done_words.iter().all(|&w| w == 1), || {
            format!("{case}: done words {done_words:?} (expected the epoch, 1, from each of {grid} blocks)")
        })?;
        let timed_out = case.starts_with("time-out");
        let want_status = [
            u64::from(HP_MESSAGE_OK),
            u64::from(if timed_out {
                HP_MESSAGE_TIMED_OUT
            } else {
                HP_MESSAGE_OK
            }),
        ];
        let want_unpacked = if timed_out { 0 } else { 1 };
        ensure(
            statuses == want_status
                && words[ARRIVAL] == 1
                && words[PACK_COUNTER] == u64::from(message_blocks)
                && words[CREDIT] == want_unpacked
                && words[UNPACK_COUNTER] == want_unpacked * u64::from(message_blocks),
            || {
                format!(
                    "{case}: statuses {statuses:?} (expected {want_status:?}), arrival {}, \
                     credit {}, counters {} and {} (blocks {message_blocks})",
                    words[ARRIVAL], words[CREDIT], words[PACK_COUNTER], words[UNPACK_COUNTER]
                )
            },
        )?;
        message.packed_from(&field, case)?;
        let source = decode(&device_bytes(backend, &stream, &src, (n * 8) as usize)?, 8);
        let want_halo = reference_pack(&field, if copy { &face } else { &halo });
        ensure(reference_pack(&source, &halo) == want_halo, || {
            let what = if copy {
                "the face it copies"
            } else {
                "as it was"
            };
            format!("{case}: the z-high halo does not hold {what}")
        })?;
        let moved = decode(&device_bytes(backend, &stream, &dst, (n * 8) as usize)?, 8);
        let mut at = 0;
        for (i, r) in recv.iter().enumerate() {
            let len = regions::elems(r) as usize;
            let want = if timed_out {
                vec![0; len]
            } else {
                incoming[at..at + len].to_vec()
            };
            ensure(reference_pack(&moved, r) == want, || {
                format!("{case}: unpacked region {i} holds wrong values")
            })?;
            at += len;
        }
    }
    Ok(())
}

/// Values with mixed signs and magnitudes whose sums round: a hash of the index.
fn stencil_input(n: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (h as f64 / 3.0) * if i % 3 == 0 { -1.0 } else { 1.0 } + 1.0 / 7.0
        })
        .collect()
}

/// The CPU reference of one stencil point of `shape`, generic over the element type by
/// closures: per row (dz, dy) the points it reads from dx = -1, per plane dz its row sums from
/// dy = -1, then the plane sums from dz = -1, each partial sum starting from its first term
/// (`hp_stencil_sum`'s order, written out again here rather than shared with the host twin).
fn reference_stencil<T: Copy>(
    input: &[T],
    dims: Dims,
    (x, y, z): (u64, u64, u64),
    shape: u32,
    add: impl Fn(T, T) -> T,
) -> T {
    let join = |sum: Option<T>, v: T| Some(sum.map_or(v, |s| add(s, v)));
    let mut total = None;
    for dz in 0..3 {
        let mut plane = None;
        for dy in 0..3 {
            let mut row = None;
            for dx in 0..3 {
                if regions::stencil_reads_point(
                    shape,
                    [dx as i64 - 1, dy as i64 - 1, dz as i64 - 1],
                ) {
                    let v = input[dims.at(x + dx - 1, y + dy - 1, z + dz - 1) as usize];
                    row = join(row, v);
                }
            }
            if let Some(r) = row {
                plane = join(plane, r);
            }
        }
        if let Some(p) = plane {
            total = join(total, p);
        }
    }
    total.expect("every shape reads the centre")
}

/// One stencil launch (of `shape`, over cells of `comps` components) against the CPU.
#[allow(clippy::too_many_arguments)] // the launch's every parameter, each a case's variable
fn stencil_case<B: Backend>(
    backend: &B,
    eb: u32,
    shape: u32,
    comps: u32,
    begin: [u64; 3],
    end: [u64; 3],
    blocks: Option<u32>,
) -> Check {
    stencil_launch(
        backend,
        eb,
        shape,
        comps,
        [13, 11, 9],
        (begin, end),
        blocks,
        64,
        0,
    )
}

/// One stencil launch over `bounds` of an allocation of `alloc`, `threads` per block, in the
/// given form, against the CPU.
#[allow(clippy::too_many_arguments)]
fn stencil_launch<B: Backend>(
    backend: &B,
    eb: u32,
    shape: u32,
    comps: u32,
    alloc: [u64; 3],
    bounds: ([u64; 3], [u64; 3]),
    blocks: Option<u32>,
    threads: u32,
    form: u32,
) -> Check {
    let sweep = Sweep {
        eb,
        shape,
        comps,
        alloc,
        blocks,
        threads,
        form,
        lead: 0,
    };
    stencil_boxes(backend, &sweep, &[bounds])
}

/// What a stencil case launches, but its boxes.
struct Sweep {
    eb: u32,
    shape: u32,
    comps: u32,
    alloc: [u64; 3],
    /// The grid where it is not the launch's own.
    blocks: Option<u32>,
    threads: u32,
    form: u32,
    /// Elements of the allocations before both fields (their lanes' phase: the allocations are
    /// 16-byte aligned), and as many after.
    lead: u64,
}

/// One stencil launch per box (`regions::stencil_launch`'s kernel and grid) into one output,
/// against the CPU: every point of a box updated, every other point untouched.
fn stencil_boxes<B: Backend>(backend: &B, sweep: &Sweep, boxes: &[([u64; 3], [u64; 3])]) -> Check {
    let Sweep {
        eb,
        shape,
        comps,
        alloc,
        blocks,
        threads,
        form,
        lead,
    } = *sweep;
    let ebu = eb as usize;
    let dims = Dims(alloc);
    let c = u64::from(comps.max(1));
    let n = dims.len() * c;
    let input = stencil_input(n);
    let sentinel = bits(-1234.5, ebu);
    // The input between sentinels, which the lanes may read but not the CPU.
    let around = vec![sentinel; lead as usize];
    let in_words: Vec<u64> = [
        &around[..],
        &input.iter().map(|&v| bits(v, ebu)).collect::<Vec<_>>(),
        &around[..],
    ]
    .concat();
    let stream = backend.create_stream().map_err(e)?;
    let din = device_with(backend, &stream, &encode(&in_words, ebu))?;
    let dout = device_with(
        backend,
        &stream,
        &encode(&vec![sentinel; (n + 2 * lead) as usize], ebu),
    )?;
    let at = |m: &B::DeviceMemory| m.device_addr() + lead * u64::from(eb);
    for &(begin, end) in boxes {
        let args = hp_stencil_args {
            in_: at(&din),
            out: at(&dout),
            alloc: dims.0,
            begin,
            end,
            elem_bytes: eb,
            shape,
            components: comps,
            form,
            ..Default::default()
        };
        // The fields' phase is the lead's (the cases' expectations assume it).
        ensure(regions::lanes_phase(&args) == lead % 4 || eb != 4, || {
            format!("fields at {:#x}: not 16-byte aligned allocations", args.in_)
        })?;
        // The march-only kernel where it applies (blocks of at most 256 threads), else
        // hp_stencil27 (whose march form serves larger blocks).
        let (launch, mut grid) = regions::stencil_launch(&args, threads);
        if let Some(blocks) = blocks {
            grid.blocks = blocks;
        }
        // SAFETY: din and dout live until the stream is synchronized below.
        unsafe { backend.launch(launch, grid, &stream) }.map_err(e)?;
    }
    let (_din, dout) = settle(backend, &stream, (din, dout))?;
    let all = decode(
        &device_bytes(backend, &stream, &dout, (n + 2 * lead) as usize * ebu)?,
        ebu,
    );
    let (before, rest) = all.split_at(lead as usize);
    let (have, after) = rest.split_at(n as usize);
    ensure(before.iter().chain(after).all(|&w| w == sentinel), || {
        format!("f{}: boxes {boxes:?}: a store outside the field", 8 * eb)
    })?;
    let count = regions::stencil_count(shape);
    for comp in 0..c {
        // This component of every cell: the CPU's stencil runs on it alone.
        let input: Vec<f64> = (0..dims.len())
            .map(|i| input[(i * c + comp) as usize])
            .collect();
        let input_f32: Vec<f32> = input.iter().map(|&v| v as f32).collect();
        for z in 0..dims.0[2] {
            for y in 0..dims.0[1] {
                for x in 0..dims.0[0] {
                    let inside = boxes.iter().any(|(begin, end)| {
                        (0..3).all(|k| (begin[k]..end[k]).contains(&[x, y, z][k]))
                    });
                    let want = match (inside, eb) {
                        (false, _) => sentinel,
                        (true, 4) => {
                            let sum =
                                reference_stencil(&input_f32, dims, (x, y, z), shape, |a, b| a + b);
                            u64::from((sum * (1.0_f32 / count as f32)).to_bits())
                        }
                        (true, _) => {
                            let sum =
                                reference_stencil(&input, dims, (x, y, z), shape, |a, b| a + b);
                            (sum * (1.0_f64 / f64::from(count))).to_bits()
                        }
                    };
                    let got = have[(dims.at(x, y, z) * c + comp) as usize];
                    ensure(got == want, || {
                        format!(
                            "f{}, shape {shape:#x}, component {comp} of {c}: boxes {boxes:?}: \
                         point ({x}, {y}, {z}) holds {got:#x}, expected {want:#x}{}",
                            8 * eb,
                            if inside {
                                ""
                            } else {
                                " (outside the boxes: untouched)"
                            }
                        )
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// A step without the exchange where an f32 box runs in the lanes (`HalosIn` in
/// `core/src/regions/stencil.rs`): its wider box and the slabs it leaves update the whole
/// interior once, bit for bit as the CPU does. Rows of a multiple of 4 elements: the box from
/// the interior's first cell, its last tile ending a cell before the interior's end (one
/// slab), or after it (none); rows of 2 mod 4 (the off form, whose reads keep it from the
/// first row): from the inner box's first cell and row (a slab at each end of x, one at y's
/// start). Fields whose vectors start 3 elements before them (interiors from a 16-byte
/// boundary): the box ends where its last lane's vector stays in the field, 1 or 3 cells before
/// the interior's end; 1 element before them: the box from the inner box's first row (the first
/// row's first vector would start before the field). An f64 box takes no such update.
pub fn stencil_halos_in_boxes_update_the_interior<B: Backend>(backend: &B) -> Check {
    const THREADS: u32 = 256;
    // Allocation (halo 1 on every side, rows padded past the interior's cells), the
    // interior's cells in x, the fields' phase, the wider box's x range and first row, and its
    // slabs.
    for (alloc, local_x, phase, x, y, slabs) in [
        ([132, 12, 36], 128, 0, [1, 128], 1, 1),
        ([130, 12, 36], 128, 0, [2, 128], 2, 3),
        ([136, 10, 40], 134, 0, [1, 135], 1, 0),
        ([132, 12, 36], 128, 3, [1, 128], 1, 1),
        ([136, 10, 40], 134, 3, [1, 132], 1, 1),
        ([132, 12, 36], 128, 1, [2, 129], 2, 2),
    ] {
        let interior: crate::regions::CellBox =
            std::array::from_fn(|k| [1, if k == 0 { 1 + local_x } else { alloc[k] - 1 }]);
        let inner = interior.map(|[lo, hi]| [lo + 1, hi - 1]);
        let kind = hp_stencil_args {
            alloc,
            elem_bytes: 4,
            components: 1,
            ..Default::default()
        };
        let placed = [(1 << 12) + 4 * phase, (1 << 13) + 4 * phase];
        let wide = crate::regions::HalosIn::of(&kind, placed, &interior, &inner)
            .ok_or_else(|| format!("rows of {}: no update in the lanes", alloc[0]))?;
        let mut want = interior;
        want[0] = x;
        want[1][0] = y;
        ensure(wide.inner == want && wide.slabs.len() == slabs, || {
            format!(
                "rows of {}, phase {phase}: the box {:?} and slabs {:?}, expected {want:?} and \
                 {slabs} slabs",
                alloc[0], wide.inner, wide.slabs
            )
        })?;
        let boxes: Vec<_> = std::iter::once(&wide.inner)
            .chain(&wide.slabs)
            .map(|b| (b.map(|[lo, _]| lo), b.map(|[_, hi]| hi)))
            .collect();
        let sweep = Sweep {
            eb: 4,
            shape: 0,
            comps: 1,
            alloc,
            blocks: None,
            threads: THREADS,
            form: crate::shared::HP_STENCIL_FORM_MARCH,
            lead: phase,
        };
        stencil_boxes(backend, &sweep, &boxes)?;
        let f64_kind = hp_stencil_args {
            elem_bytes: 8,
            ..kind
        };
        ensure(
            crate::regions::HalosIn::of(&f64_kind, placed, &interior, &inner).is_none(),
            || "an f64 box took an update in the lanes".to_owned(),
        )?;
    }
    Ok(())
}

/// The inner box taking the shell's x and y slabs into its tiles
/// ([`Launch::StencilMarch64Shell`]), with its ready word and fix-up, and the z slabs beside,
/// updates the whole interior bit for bit as the CPU does, whether the ready word is raised
/// before the box (the tiles take the slabs, and list nothing) or after it (every slab tile
/// listed, the fix-up takes them), or the step has no exchange (`HP_SHELL_HALOS_IN`: no ready
/// word or fix-up, the words untouched); its slab lanes copy the x halo beside them, and each
/// step's fix-up clears the other parity's words. Two boxes: one whose tiles all hold slab
/// points, and one with tiles between its slab rows and more chunks of planes.
pub fn stencil_shell_in_tiles_matches_the_cpu<B: Backend>(backend: &B) -> Check {
    for dims in [[72, 42, 14], [72, 106, 36]] {
        for mode in [
            ShellMode::ReadyAfter,
            ShellMode::ReadyBefore,
            ShellMode::HalosIn,
        ] {
            shell_in_tiles_case(backend, Dims(dims), mode)?;
        }
    }
    Ok(())
}

/// When a shell case's halos are in: the ready word raised after the box (set 0), before it
/// (set 1), or a step without an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellMode {
    ReadyAfter,
    ReadyBefore,
    HalosIn,
}

fn shell_in_tiles_case<B: Backend>(backend: &B, dims: Dims, mode: ShellMode) -> Check {
    const THREADS: u32 = 256;
    let [ax, ay, az] = dims.0;
    let n = dims.len();
    let input = stencil_input(n);
    let in_words: Vec<u64> = input.iter().map(|&v| v.to_bits()).collect();
    let sentinel = (-1234.5_f64).to_bits();
    let stream = backend.create_stream().map_err(e)?;
    let din = device_with(backend, &stream, &encode(&in_words, 8))?;
    let dout = device_with(backend, &stream, &encode(&vec![sentinel; n as usize], 8))?;
    let parity = match mode {
        ShellMode::ReadyAfter => 0,
        ShellMode::ReadyBefore => 1,
        ShellMode::HalosIn => crate::shared::HP_SHELL_HALOS_IN,
    };
    let mut args = hp_stencil_args {
        in_: din.device_addr(),
        out: dout.device_addr(),
        alloc: dims.0,
        begin: [2, 2, 2],
        end: [ax - 2, ay - 2, az - 2],
        elem_bytes: 8,
        components: 1,
        parity,
        ..Default::default()
    };
    let tiles = regions::ShellTiles::of(&args, THREADS)
        .ok_or("the case's box should take its shell's slabs")?;
    let capacity = u32::try_from(tiles.capacity()).map_err(|_| "capacity")?;
    let words_len = (crate::shared::HP_SHELL_LIST + 2 * capacity) as usize;
    // Words a step before left: its set (the other one) raised with one tile listed, this
    // step's set clear.
    let earlier = if parity <= 1 { parity ^ 1 } else { 0 };
    let mut before = vec![0_u32; words_len];
    before[(crate::shared::HP_SHELL_READY + earlier) as usize] = 1;
    before[(crate::shared::HP_SHELL_COUNT + earlier) as usize] = 1;
    let before_bytes: Vec<u8> = before.iter().flat_map(|w| w.to_le_bytes()).collect();
    let words = device_with(backend, &stream, &before_bytes)?;
    args.shell = words.device_addr();
    args.shell_capacity = capacity;
    let box_dims = LaunchDims {
        blocks: u32::try_from(tiles.tiles()).map_err(|_| "tiles")?,
        threads: THREADS,
    };
    let mut launches = vec![(Launch::StencilMarch64Shell(&args), box_dims)];
    if mode != ShellMode::HalosIn {
        let ready = (
            Launch::StencilShellReady(&args),
            LaunchDims {
                blocks: 1,
                threads: 32,
            },
        );
        launches.insert(usize::from(mode == ShellMode::ReadyAfter), ready);
        let fixup_dims = LaunchDims {
            blocks: crate::shared::HP_SHELL_FIXUP_BLOCKS,
            threads: THREADS,
        };
        launches.push((Launch::StencilShellFixup(&args), fixup_dims));
    }
    // The z slabs over the interior's x and y, as the step launches them.
    let slabs: Vec<hp_stencil_args> = [[1, 2], [az - 2, az - 1]]
        .iter()
        .map(|&[lo, hi]| hp_stencil_args {
            begin: [1, 1, lo],
            end: [ax - 1, ay - 1, hi],
            shell: 0,
            parity: 0,
            ..args
        })
        .collect();
    launches.extend(slabs.iter().map(|a| regions::stencil_launch(a, THREADS)));
    for (launch, grid) in launches {
        // SAFETY: din, dout and the words live until the stream is synchronized below.
        unsafe { backend.launch(launch, grid, &stream) }.map_err(e)?;
    }
    let dout = settle(backend, &stream, dout)?;
    let have = decode(&device_bytes(backend, &stream, &dout, n as usize * 8)?, 8);
    let bytes = device_bytes(backend, &stream, &words, 4 * words_len)?;
    let w: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let case = format!("{:?}, {mode:?}", dims.0);
    if mode == ShellMode::HalosIn {
        ensure(w == before, || {
            format!("{case}: the box touched the control words: {:?}", &w[..4])
        })?;
    } else {
        let listed = w[(crate::shared::HP_SHELL_COUNT + parity) as usize];
        let expected = if mode == ShellMode::ReadyBefore {
            0
        } else {
            capacity
        };
        ensure(listed == expected, || {
            format!("{case}: {listed} tiles listed, expected {expected}")
        })?;
        let other = earlier as usize;
        ensure(
            w[crate::shared::HP_SHELL_READY as usize + other] == 0
                && w[crate::shared::HP_SHELL_COUNT as usize + other] == 0,
            || {
                format!(
                    "{case}: the fix-up left the other set's words {:?}",
                    &w[..4]
                )
            },
        )?;
    }
    for z in 1..az - 1 {
        for y in 1..ay - 1 {
            for x in 0..ax {
                let halo_column = x == 0 || x == ax - 1;
                let halo_copy = halo_column && (2..az - 2).contains(&z);
                let want = if halo_copy {
                    in_words[dims.at(x, y, z) as usize]
                } else if halo_column {
                    sentinel
                } else {
                    let sum = reference_stencil(&input, dims, (x, y, z), 0, |a, b| a + b);
                    (sum * (1.0_f64 / 27.0)).to_bits()
                };
                let got = have[dims.at(x, y, z) as usize];
                ensure(got == want, || {
                    format!(
                        "{case}: point ({x}, {y}, {z}) holds {got:#x}, expected {want:#x}{}",
                        if halo_copy {
                            " (the halo copied from the input)"
                        } else {
                            ""
                        }
                    )
                })?;
            }
        }
    }
    settle(backend, &stream, (din, words)).map(drop)
}

/// The 27-point stencil over the whole interior and over a sub-box (with a grid smaller than
/// the box, so threads stride) gives, bit for bit, the CPU's sum in the kernel's order times
/// 1/27, in f64 and f32, and leaves points outside the box untouched; so do the 7-point
/// stencil, one-sided means (1/count of the points read) and cells of several components.
pub fn stencil27_matches_the_cpu_bit_for_bit<B: Backend>(backend: &B) -> Check {
    use crate::shared::{
        HP_STENCIL_FACES, HP_STENCIL_FORM_MARCH, HP_STENCIL_FORM_POINTS, HP_STENCIL_FULL,
        HP_STENCIL_HI, HP_STENCIL_LO,
    };
    for eb in [8, 4] {
        stencil_case(backend, eb, 0, 1, [1, 1, 1], [12, 10, 8], None)?;
        stencil_case(backend, eb, 0, 1, [2, 3, 1], [7, 9, 4], Some(2))?;
        // Cells of 3 interleaved components, each updated from its own neighbours.
        stencil_case(backend, eb, 0, 3, [1, 1, 1], [12, 10, 8], None)?;
        // The 7-point stencil; one-sided means (x reads its low side only, z its high side
        // only), as a zero-width halo side asks; both at once.
        let one_sided = HP_STENCIL_FULL & !(HP_STENCIL_HI | (HP_STENCIL_LO << 2));
        for shape in [
            HP_STENCIL_FACES | HP_STENCIL_FULL,
            one_sided,
            HP_STENCIL_FACES | one_sided,
        ] {
            stencil_case(backend, eb, shape, 1, [1, 1, 1], [12, 10, 8], None)?;
            stencil_case(backend, eb, shape, 2, [2, 3, 1], [7, 9, 4], Some(2))?;
        }
        // A side the shape does not read may reach the allocation's edge.
        stencil_case(backend, eb, one_sided, 1, [1, 1, 0], [13, 10, 8], None)?;
        // Boxes of several march tiles, partial in every dimension (100 x 21..23 x 40 points:
        // tiles of 32 or 64 columns, 8 or 32 rows, 8 to 32 planes), whose last rows leave a
        // thread 1, 2 or 3 of its rows, in blocks of 2 and 8 warps (the march-only kernels,
        // tiles per element type) and 16 warps (hp_stencil27's march form), with a grid of
        // every tile and of 3 blocks striding; and the point form over the same boxes. The
        // 7-point stencil marches in hp_stencil27 at every block size.
        let alloc = [102, 26, 42];
        for y_end in [23, 24, 25] {
            let bounds = ([1, 2, 1], [101, y_end, 41]);
            for shape in [0, HP_STENCIL_FACES | HP_STENCIL_FULL] {
                for threads in [64, 256, 512] {
                    for blocks in [None, Some(3)] {
                        let form = HP_STENCIL_FORM_MARCH;
                        stencil_launch(
                            backend, eb, shape, 1, alloc, bounds, blocks, threads, form,
                        )?;
                    }
                }
                let points = HP_STENCIL_FORM_POINTS;
                stencil_launch(backend, eb, shape, 1, alloc, bounds, None, 256, points)?;
            }
        }
        // Slabs thinner than a march tile asks (a shell's), in the march form, with the grid
        // regions::stencil_launch gives them and with 3 blocks: ones 3 planes and 1 plane deep
        // (at either end) march in tiles of that depth; the others (3 or 1 rows, 30 or 1
        // columns, at either end) march in columns of HP_SLAB_Z planes in the march-only
        // kernel, 40 planes: 10 columns deep. The 7-point stencil over the same slabs marches
        // in tiles where they are thick enough in x and y, and takes the point form elsewhere.
        for bounds in [
            ([1, 2, 1], [71, 25, 4]),
            ([1, 2, 1], [71, 25, 2]),
            ([1, 2, 40], [71, 25, 41]),
            ([1, 2, 1], [71, 5, 41]),
            ([1, 2, 1], [31, 25, 41]),
            ([1, 2, 1], [101, 3, 41]),
            ([1, 24, 1], [101, 25, 41]),
            ([1, 2, 1], [2, 25, 41]),
            ([100, 2, 2], [101, 25, 40]),
        ] {
            for shape in [0, HP_STENCIL_FACES | HP_STENCIL_FULL] {
                for blocks in [None, Some(3)] {
                    let form = HP_STENCIL_FORM_MARCH;
                    stencil_launch(backend, eb, shape, 1, alloc, bounds, blocks, 256, form)?;
                }
            }
        }
        // Slabs one point wide in x over many rows (a shell's x slabs, a thread a column of
        // HP_SLAB_Z planes): 68 and 66 rows, 38 and 39 planes (the last column partial), at the
        // allocation's first and last x, with the grid regions::stencil_launch gives and with 3
        // blocks striding, in blocks of 2 and 8 warps.
        let alloc = [6, 70, 42];
        for bounds in [([1, 1, 1], [2, 69, 39]), ([4, 2, 1], [5, 68, 40])] {
            for (blocks, threads) in [(None, 64), (Some(3), 64), (None, 256), (Some(3), 256)] {
                let form = HP_STENCIL_FORM_MARCH;
                stencil_launch(backend, eb, 0, 1, alloc, bounds, blocks, threads, form)?;
            }
        }
        // f32 rows of a multiple of 4 elements take the lanes of 4 points (StencilMarch32):
        // boxes starting at x = 1, 3 (the first lane group from x = 0) and 4, ending in the
        // middle or at the end of a lane's 4 points and of a 128-point tile (101, 103: lanes
        // past the end, and lane 31 reading x + 4 or not), rows 21 to 24 (blocks of 2 and 8
        // warps), a grid of every tile and of 3 blocks striding, and a z slab one plane deep.
        if eb == 4 {
            let alloc = [104, 26, 42];
            for (x_begin, x_end) in [(1, 101), (3, 103), (4, 100)] {
                for y_end in [23, 25] {
                    for threads in [64, 256] {
                        for blocks in [None, Some(3)] {
                            let bounds = ([x_begin, 2, 1], [x_end, y_end, 41]);
                            let form = HP_STENCIL_FORM_MARCH;
                            stencil_launch(
                                backend, eb, 0, 1, alloc, bounds, blocks, threads, form,
                            )?;
                        }
                    }
                }
            }
            let slab = ([1, 1, 40], [103, 25, 41]);
            stencil_launch(
                backend,
                eb,
                0,
                1,
                alloc,
                slab,
                None,
                256,
                HP_STENCIL_FORM_MARCH,
            )?;
            // Rows of 2 mod 4 elements in planes of an even number of rows take the lanes' off
            // form (odd rows' lanes 2 points after even rows', the rows beside read 2 points
            // off): boxes from x = 2, 3, 5 and 6 (tiles from x = 0 or 4), ending at the row's
            // last interior point (lane 31 reading up to it) or inside a lane's points (lanes
            // past the end whose points the lane before still takes), rows from y = 2, or from
            // y = 1 with planes from z = 2.
            let alloc = [102, 26, 42];
            for (x_begin, x_end) in [(2, 101), (3, 99), (5, 100), (6, 98)] {
                for (y_begin, z_begin, y_end) in [(2, 1, 23), (2, 1, 25), (1, 2, 24)] {
                    // Blocks of 8 warps a tile each, and of 2 warps, 3 blocks striding.
                    for (threads, blocks) in [(256, None), (64, Some(3))] {
                        let bounds = ([x_begin, y_begin, z_begin], [x_end, y_end, 41]);
                        let probe = hp_stencil_args {
                            alloc,
                            begin: bounds.0,
                            end: bounds.1,
                            elem_bytes: 4,
                            components: 1,
                            ..Default::default()
                        };
                        ensure(regions::stencil_lanes_off(&probe), || {
                            format!("{bounds:?} in {alloc:?} should take the lanes' off form")
                        })?;
                        let form = HP_STENCIL_FORM_MARCH;
                        stencil_launch(backend, eb, 0, 1, alloc, bounds, blocks, threads, form)?;
                    }
                }
            }
        }
        // Fields 1 to 3 elements past a 16-byte boundary (rows of a multiple of 4) take the
        // lanes from where their vectors start: from the first row read (y = z = 0) where the
        // first vector starts in the field (phase 3 from x = 1, phase 2 from x = 3), else from
        // y = 2; to where the last lane's vector ends in the field, or in a row before the last
        // read; two tiles in rows of 136. One that would read past the field's end takes
        // another kernel, as correct.
        if eb == 4 {
            for (phase, alloc, bounds, lanes) in [
                (1, [104, 26, 42], ([1, 2, 1], [101, 25, 41]), true),
                (2, [104, 26, 42], ([3, 1, 1], [103, 23, 41]), true),
                (3, [104, 26, 42], ([1, 1, 1], [100, 25, 41]), true),
                (3, [136, 10, 40], ([1, 1, 1], [132, 9, 39]), true),
                (3, [104, 26, 42], ([1, 1, 1], [101, 25, 41]), false),
            ] {
                let probe = hp_stencil_args {
                    in_: (1 << 12) + 4 * phase,
                    out: (1 << 13) + 4 * phase,
                    alloc,
                    begin: bounds.0,
                    end: bounds.1,
                    elem_bytes: 4,
                    components: 1,
                    form: HP_STENCIL_FORM_MARCH,
                    ..Default::default()
                };
                for (threads, blocks) in [(256, None), (64, Some(3))] {
                    ensure(regions::stencil_lanes(&probe, threads) == lanes, || {
                        format!("{bounds:?} in {alloc:?} at phase {phase}: lanes should be {lanes}")
                    })?;
                    let sweep = Sweep {
                        eb,
                        shape: 0,
                        comps: 1,
                        alloc,
                        blocks,
                        threads,
                        form: HP_STENCIL_FORM_MARCH,
                        lead: phase,
                    };
                    stencil_boxes(backend, &sweep, &[bounds])?;
                }
            }
        }
        // Boxes one point wide in x (a shell's x slabs), 68 rows and 10 planes (columns of
        // HP_SLAB_Z = 4 planes, the last of 2), at the low and the high side, with their grid,
        // 1 block striding and blocks of 2 warps.
        let alloc = [4, 70, 12];
        for bounds in [([1, 1, 1], [2, 69, 11]), ([2, 1, 1], [3, 69, 11])] {
            for (blocks, threads) in [(None, 256), (Some(1), 256), (None, 64)] {
                let form = HP_STENCIL_FORM_MARCH;
                stencil_launch(backend, eb, 0, 1, alloc, bounds, blocks, threads, form)?;
            }
        }
    }
    Ok(())
}

/// Copy-engine packing and unpacking of every neighbour region of one field, against the
/// kernels' results over the same regions.
fn copy_3d_case<B: Backend>(backend: &B, eb: u32) -> Check {
    let ebu = eb as usize;
    let ebl = u64::from(eb);
    let dims = Dims([10, 9, 8]);
    let n = dims.len();
    let field: Vec<u64> = (0..n).map(|i| bits(i as f64 * 0.75 - 3.0, ebu)).collect();
    let stream = backend.create_stream().map_err(e)?;
    let src = device_with(backend, &stream, &encode(&field, ebu))?;

    let mut send = dims.neighbours(false);
    regions::assign_blocks(&mut send, THREADS, 4).map_err(e)?;
    for r in &mut send {
        r.field = src.device_addr();
    }
    let total: u64 = send.iter().map(regions::elems).sum();
    let bytes = (total * ebl) as usize;
    let by_kernel = backend
        .alloc_pinned(bytes, Coherence::Coherent)
        .map_err(e)?;
    let by_copy = backend
        .alloc_pinned(bytes, Coherence::Coherent)
        .map_err(e)?;
    lay_out(&mut send, by_kernel.device_addr(), ebl);
    run_regions(backend, &stream, &send, RegionLaunch::new(true, eb))?;
    let mut copied = send.clone();
    lay_out(&mut copied, by_copy.device_addr(), ebl);
    for (i, r) in copied.iter().enumerate() {
        let copy = Copy3d::pack_region(r, eb)
            .ok_or_else(|| format!("region {i} ({:?}) has no 3-D copy form", r.count))?;
        // SAFETY: (1) src and by_copy hold the rows and live until the stream is synchronized
        // below; (2) nothing else touches them meanwhile.
        unsafe { backend.copy_3d_async(&copy, &stream) }.map_err(e)?;
    }
    let (_src, by_copy) = settle(backend, &stream, (src, by_copy))?;
    let (kernel, engine) = (
        pinned_bytes(&by_kernel, 0, bytes),
        pinned_bytes(&by_copy, 0, bytes),
    );
    if let Some(k) = (0..bytes).find(|&k| kernel[k] != engine[k]) {
        return Err(format!(
            "f{}: copy-engine pack differs from the pack kernel at byte {k} of {bytes}",
            8 * eb
        ));
    }

    // Unpack: the halo regions from the same buffer, by the kernel and by the copy engine.
    let mut recv = dims.neighbours(true);
    regions::assign_blocks(&mut recv, THREADS, 4).map_err(e)?;
    lay_out(&mut recv, by_kernel.device_addr(), ebl);
    let field_bytes = (n * ebl) as usize;
    let (dst_kernel, dst_copy) = (
        backend.alloc_device(field_bytes).map_err(e)?,
        backend.alloc_device(field_bytes).map_err(e)?,
    );
    for r in &mut recv {
        r.field = dst_kernel.device_addr();
    }
    run_regions(backend, &stream, &recv, RegionLaunch::new(false, eb))?;
    for (i, r) in recv.iter().enumerate() {
        let r = hp_region {
            field: dst_copy.device_addr(),
            ..*r
        };
        let copy = Copy3d::unpack_region(&r, eb)
            .ok_or_else(|| format!("halo region {i} ({:?}) has no 3-D copy form", r.count))?;
        // SAFETY: as above, for by_kernel and dst_copy.
        unsafe { backend.copy_3d_async(&copy, &stream) }.map_err(e)?;
    }
    let (_by_kernel, dst_copy) = settle(backend, &stream, (by_kernel, dst_copy))?;
    let kernel = device_bytes(backend, &stream, &dst_kernel, field_bytes)?;
    let engine = device_bytes(backend, &stream, &dst_copy, field_bytes)?;
    ensure(kernel.iter().any(|&b| b != 0), || {
        format!("f{}: the unpack kernel wrote nothing", 8 * eb)
    })?;
    match (0..field_bytes).find(|&k| kernel[k] != engine[k]) {
        Some(k) => Err(format!(
            "f{}: copy-engine unpack differs from the unpack kernel at field byte {k}",
            8 * eb
        )),
        None => Ok(()),
    }
}

/// The copy engine's 3-D copies of the 26 neighbour regions (faces, edges, corners) give the
/// same packed bytes as the pack kernel, and the same field as the unpack kernel, in f64 and
/// f32; a malformed 3-D copy is refused before anything is queued.
pub fn copy_3d_matches_the_region_kernels<B: Backend>(backend: &B) -> Check {
    copy_3d_case(backend, 8)?;
    copy_3d_case(backend, 4)?;
    let stream = backend.create_stream().map_err(e)?;
    let bad = Copy3d {
        src: 0,
        src_pitch: 8,
        src_rows: 1,
        dst: 0,
        dst_pitch: 8,
        dst_rows: 1,
        width: 16,
        height: 1,
        depth: 1,
    };
    // SAFETY: the copy is refused before anything is queued (its rows are wider than their
    // pitch), so no memory is touched.
    let queued = unsafe { backend.copy_3d_async(&bad, &stream) };
    ensure(queued.is_err(), || {
        "a 3-D copy with rows wider than their pitch was accepted".into()
    })
}

/// Region and stencil launches with arguments the kernels cannot serve (an element size other
/// than 4 or 8, a region count without a table, a stencil box whose neighbours leave the
/// allocation, the same field in and out) are refused before anything is queued.
pub fn region_and_stencil_launches_check_their_arguments<B: Backend>(backend: &B) -> Check {
    let dims = LaunchDims {
        blocks: 1,
        threads: THREADS,
    };
    // Real memory behind every address, with room to spare, so that a launch a backend
    // wrongly accepted would still stay inside allocations.
    let field_bytes = 2 * 8 * 8 * 8 * 8;
    let (a, b) = (
        backend.alloc_device(field_bytes).map_err(e)?,
        backend.alloc_device(field_bytes).map_err(e)?,
    );
    let table = pinned_with(
        backend,
        &bytes_of(&[hp_region {
            field: a.device_addr(),
            buffer: b.device_addr(),
            count: [1, 1, 1],
            stride: [1, 1, 1],
            blocks: 1,
            message: HP_NO_MESSAGE,
            ..Default::default()
        }]),
    )?;
    // Declared after the memory, so dropped (waiting for its work) before it.
    let stream = backend.create_stream().map_err(e)?;
    let regions = hp_regions_args {
        num_regions: 1,
        elem_bytes: 3,
        regions: table.device_addr(),
        epoch: 1,
        ..Default::default()
    };
    let stencil = hp_stencil_args {
        in_: a.device_addr(),
        out: b.device_addr(),
        alloc: [8, 8, 8],
        begin: [1, 1, 1],
        end: [7, 7, 7],
        elem_bytes: 8,
        shape: 0,
        components: 1,
        form: 0,
        ..Default::default()
    };
    let cases = [
        ("elements of 3 bytes", Launch::PackRegions(&regions)),
        (
            "a region without a table",
            Launch::UnpackRegions(&hp_regions_args {
                elem_bytes: 8,
                regions: 0,
                ..regions
            }),
        ),
        (
            "the plain form and a message table",
            Launch::PackRegions(&hp_regions_args {
                elem_bytes: 8,
                form: HP_REGIONS_PLAIN,
                messages: table.device_addr(),
                ..regions
            }),
        ),
        (
            "the plain form and timestamps",
            Launch::UnpackRegions(&hp_regions_args {
                elem_bytes: 8,
                form: HP_REGIONS_PLAIN,
                times: table.device_addr(),
                ..regions
            }),
        ),
        (
            "a table said to be in the parameters, of more regions than they hold",
            Launch::PackRegions(&hp_regions_args {
                elem_bytes: 8,
                num_regions: HP_INLINE_REGIONS + 1,
                table_inline: 1,
                ..regions
            }),
        ),
        (
            "a table neither in the parameters nor in memory",
            Launch::PackRegions(&hp_regions_args {
                elem_bytes: 8,
                table_inline: 2,
                ..regions
            }),
        ),
        (
            "a form that is neither full nor plain",
            Launch::UnpackRegions(&hp_regions_args {
                elem_bytes: 8,
                form: 2,
                ..regions
            }),
        ),
        (
            "a box touching the allocation's edge",
            Launch::Stencil27(&hp_stencil_args {
                end: [8, 7, 7],
                ..stencil
            }),
        ),
        (
            "the same field in and out",
            Launch::Stencil27(&hp_stencil_args {
                out: a.device_addr(),
                ..stencil
            }),
        ),
        (
            "f16 elements",
            Launch::Stencil27(&hp_stencil_args {
                elem_bytes: 2,
                ..stencil
            }),
        ),
        (
            "a shape with unknown bits",
            Launch::Stencil27(&hp_stencil_args {
                shape: 128,
                ..stencil
            }),
        ),
    ];
    for (what, launch) in cases {
        // SAFETY: every address points into a, b or table, which outlive the stream (declared
        // before it; dropping a stream waits for its work); each case's reads and writes stay inside them
        // (the allocations are twice the field's size).
        let queued = unsafe { backend.launch(launch, dims, &stream) };
        ensure(queued.is_err(), || {
            format!("a launch with {what} was accepted")
        })?;
    }
    backend.stream_synchronize(&stream, deadline()).map_err(e)
}
