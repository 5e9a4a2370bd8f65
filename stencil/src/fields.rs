//! The stencil's field values: what a field computes on ([`FieldKind`]), every cell's starting
//! value from its global coordinates ([`initial_value`], the same in any decomposition), and
//! the final fields gathered on rank 0 ([`GlobalFields`]), compared bit for bit.

use std::time::Instant;

use mpi::topology::{Communicator, SimpleCommunicator};

use haloport_core::backend::{download_bytes_at, Backend};
use haloport_core::collective::{receive_until, send_until};
use haloport_core::domain::{Decomposition, DomainSpec, ElemType};
use haloport_core::error::{Error, Result};

/// What the stencil computes on in one field: its element type and the components of a cell,
/// each updated from the same component of the neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldKind {
    /// f32 or f64.
    pub elem: ElemType,
    /// Interleaved components per cell.
    pub components: u32,
}

impl FieldKind {
    /// Every field of `spec`: its [`DomainSpec::field_shapes`], whose elements must be f32 or
    /// f64 (what the stencil computes on).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming a field of another element size.
    pub fn of(spec: &DomainSpec) -> Result<Vec<FieldKind>> {
        spec.field_shapes()
            .iter()
            .enumerate()
            .map(|(k, shape)| {
                let elem = match shape.elem_bytes {
                    4 => ElemType::F32,
                    8 => ElemType::F64,
                    other => {
                        return Err(Error::InvalidInput(format!(
                            "field {k}: the stencil computes on f32 and f64 elements, not on elements of {other} bytes"
                        )))
                    }
                };
                Ok(FieldKind {
                    elem,
                    components: shape.components,
                })
            })
            .collect()
    }

    /// Bytes of one cell.
    pub fn cell_bytes(self) -> usize {
        self.elem.bytes() as usize * self.components as usize
    }
}

/// Every field's interior over the whole grid, x fastest (components interleaved), as raw
/// element bytes (compared bit-for-bit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalFields {
    /// Global extents.
    pub grid: [u64; 3],
    /// Each field's element type and components.
    pub kinds: Vec<FieldKind>,
    /// One byte array per field.
    pub fields: Vec<Vec<u8>>,
}

impl GlobalFields {
    /// An order-independent checksum of every field's bits: the wrapping sum over cells of a
    /// hash of (field, global index, bits). Equal fields give equal checksums whatever the
    /// decomposition that computed them.
    pub fn checksum(&self) -> u64 {
        let cells = self.grid.iter().product::<u64>();
        let mut sum = 0_u64;
        for (k, (field, kind)) in self.fields.iter().zip(&self.kinds).enumerate() {
            let eb = kind.elem.bytes() as usize;
            // Element g of field k (for one component per cell, cell g).
            for (g, bytes) in field.chunks_exact(eb).enumerate() {
                let mut word = [0_u8; 8];
                word[..eb].copy_from_slice(bytes);
                let index = k as u64 * cells + g as u64;
                sum = sum.wrapping_add(mix(u64::from_le_bytes(word) ^ mix(index)));
            }
        }
        sum
    }

    /// The first cell where `other` differs, described; `None` when every bit agrees.
    pub fn first_difference(&self, other: &GlobalFields) -> Option<String> {
        if self.grid != other.grid || self.kinds != other.kinds {
            return Some("the grids or the fields' kinds differ".into());
        }
        for (k, ((a, b), kind)) in self
            .fields
            .iter()
            .zip(&other.fields)
            .zip(&self.kinds)
            .enumerate()
        {
            let eb = kind.elem.bytes() as usize;
            if let Some(g) =
                (0..a.len() / eb).find(|&g| a[g * eb..(g + 1) * eb] != b[g * eb..(g + 1) * eb])
            {
                let [nx, ny, _] = self.grid;
                let comps = kind.components.max(1) as u64;
                let (cell, c) = (g as u64 / comps, g as u64 % comps);
                let (x, y, z) = (cell % nx, (cell / nx) % ny, cell / (nx * ny));
                return Some(format!(
                    "field {k} cell ({x}, {y}, {z}) component {c}: {} here, {} in the reference",
                    self.value(k, g),
                    other.value(k, g)
                ));
            }
        }
        (self.fields.len() != other.fields.len()).then(|| "the field counts differ".into())
    }

    /// Element `g` of field `k` as f64.
    pub fn value(&self, k: usize, g: usize) -> f64 {
        let field = &self.fields[k];
        match self.kinds[k].elem {
            ElemType::F32 => {
                let mut b = [0_u8; 4];
                b.copy_from_slice(&field[4 * g..4 * g + 4]);
                f64::from(f32::from_le_bytes(b))
            }
            ElemType::F64 => {
                let mut b = [0_u8; 8];
                b.copy_from_slice(&field[8 * g..8 * g + 8]);
                f64::from_le_bytes(b)
            }
        }
    }
}

/// SplitMix64's finaliser: a cheap, well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The starting value of the cell at global coordinates `at` (outside the grid too: fixed
/// boundary cells) of field `field`: a hash of both, in [0, 1) with 20 significant bits, exact
/// in f32 and f64.
pub fn initial_value(at: [i64; 3], field: u32) -> f64 {
    let key = (at[0] as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((at[1] as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
        .wrapping_add((at[2] as u64).wrapping_mul(0x1656_67b1_9e37_79f9))
        .wrapping_add(u64::from(field).wrapping_mul(0x27d4_eb2f_1656_67c5));
    (mix(key) >> 44) as f64 / (1_u64 << 20) as f64
}

/// The allocated local array of field `field` at its initial values, as element bytes;
/// component `c` of a cell starts from the value of field `field + 65536 * c` (component 0
/// from the field's own).
pub(super) fn local_initial(d: &Decomposition, kind: FieldKind, field: u32) -> Vec<u8> {
    let eb = kind.elem.bytes() as usize;
    let comps = kind.components.max(1) as usize;
    let mut bytes = vec![0_u8; d.alloc_elems() as usize * eb * comps];
    for z in 0..d.alloc[2] {
        for y in 0..d.alloc[1] {
            for x in 0..d.alloc[0] {
                for c in 0..comps {
                    let key = field.wrapping_add(65536 * c as u32);
                    let value = initial_value(d.global_of([x, y, z]), key);
                    let at = (d.index([x, y, z]) as usize * comps + c) * eb;
                    match kind.elem {
                        ElemType::F32 => {
                            bytes[at..at + 4].copy_from_slice(&(value as f32).to_le_bytes());
                        }
                        ElemType::F64 => bytes[at..at + 8].copy_from_slice(&value.to_le_bytes()),
                    }
                }
            }
        }
    }
    bytes
}

/// Largest message of the gather: MPI counts are ints, and rsmpi refuses longer slices.
const GATHER_CHUNK: usize = 1 << 30;

/// What [`gather`]'s messages do, for their time-outs.
const GATHERING: &str = "gathering the final fields on rank 0";

/// This rank's interior of every field, x fastest, gathered on rank 0 into global arrays (by
/// point-to-point messages of at most [`GATHER_CHUNK`] bytes, so parts of any size travel), each
/// download and message giving up at a `deadline()` of its own: a rank that stopped must not
/// leave the others waiting for ever.
pub(super) fn gather<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    spec: &DomainSpec,
    d: &Decomposition,
    fields: &[(&B::DeviceMemory, usize)],
    stream: &B::Stream,
    deadline: impl Fn() -> Instant,
) -> Result<Option<GlobalFields>> {
    let kinds = FieldKind::of(spec)?;
    let size = comm.size();
    let mut gathered = Vec::with_capacity(fields.len());
    for (field, kind) in fields.iter().zip(&kinds) {
        // Whole cells, components and all.
        let eb = kind.cell_bytes();
        let local = download_interior(backend, d, eb, *field, stream, deadline())?;
        if comm.rank() != 0 {
            for chunk in local.chunks(GATHER_CHUNK) {
                send_until(comm, 0, chunk.to_vec(), deadline(), GATHERING)?;
            }
            continue;
        }
        let mut global = vec![0_u8; spec.grid.iter().product::<u64>() as usize * eb];
        place(spec, d, &local, &mut global, eb);
        for r in 1..size {
            let part = Decomposition::new(spec, size, r)?;
            let mut bytes = vec![0_u8; part.local.iter().product::<u64>() as usize * eb];
            for chunk in bytes.chunks_mut(GATHER_CHUNK) {
                let got = receive_until(comm, r, chunk.len(), deadline(), GATHERING)?;
                chunk.copy_from_slice(&got);
            }
            place(spec, &part, &bytes, &mut global, eb);
        }
        gathered.push(global);
    }
    Ok((comm.rank() == 0).then_some(GlobalFields {
        grid: spec.grid,
        kinds,
        fields: gathered,
    }))
}

/// Copies a field (in `memory` from an offset) to the host and returns its interior, x
/// fastest.
fn download_interior<B: Backend>(
    backend: &B,
    d: &Decomposition,
    eb: usize,
    memory: (&B::DeviceMemory, usize),
    stream: &B::Stream,
    deadline: Instant,
) -> Result<Vec<u8>> {
    let all = download_bytes_at(
        backend,
        memory,
        (d.alloc_elems() as usize) * eb,
        stream,
        deadline,
    )?;
    let mut interior = Vec::with_capacity(d.local.iter().product::<u64>() as usize * eb);
    let row = d.local[0] as usize * eb;
    for z in d.halo[2]..d.halo[2] + d.local[2] {
        for y in d.halo[1]..d.halo[1] + d.local[1] {
            let at = d.index([d.halo[0], y, z]) as usize * eb;
            interior.extend_from_slice(&all[at..at + row]);
        }
    }
    Ok(interior)
}

/// Puts one rank's interior (x fastest) into the global array.
fn place(spec: &DomainSpec, p: &Decomposition, part: &[u8], global: &mut [u8], eb: usize) {
    let [nx, ny, _] = spec.grid;
    let row = p.local[0] as usize * eb;
    let mut at = 0;
    for z in 0..p.local[2] {
        for y in 0..p.local[1] {
            let g = (p.origin[0] + nx * ((p.origin[1] + y) + ny * (p.origin[2] + z))) as usize;
            global[g * eb..g * eb + row].copy_from_slice(&part[at..at + row]);
            at += row;
        }
    }
}
