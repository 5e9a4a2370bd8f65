//! Where the stencil's fields live in their allocations ([`FieldPlacement`]): at the start, or
//! placed so that the cell a box's rows start from sits on a 32-byte sector ([`PLACEMENT`]),
//! and the padding of rows that would let a placed field's update write whole sectors
//! ([`RowsPadding`]).

use super::{interior_box, CellBox, HalosIn};
use haloport_core::domain::Decomposition;
use haloport_core::shared::hp_stencil_args;

/// Where the stencil's fields live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldPlacement {
    /// The default: each field placed for the box its steps run most:
    /// [`FieldPlacement::Interior`] where the steps do not overlap
    /// ([`Overlap`](super::Overlap)) and the field's update then runs its f32 lanes over the
    /// whole interior, whose rows the placement puts on sectors; [`FieldPlacement::Tiles`]
    /// elsewhere. At 512^3 on one rank of one H200 (no overlap), f32 rows of 520: steps
    /// 357-358 us (`--graph` 348) against 392-395 (384-389) with `Tiles`, compute alone 83-86 %
    /// of the copy speed against 76-77 % (`docs/results.md#weak-and-strong-scaling`). f64
    /// keeps `Tiles`: 656-672 us against 725-738 with `Interior`
    /// (`docs/results.md#stencil-step-on-one-h200`).
    #[default]
    Auto,
    /// [`Field::alloc`](haloport_core::halo::Field::alloc): the library's allocations, each field at
    /// the start of its own.
    Library,
    /// The application's allocations, each field at the start of its own, handed to the
    /// library with [`Field::adopt`](haloport_core::halo::Field::adopt), as code with its own
    /// allocator would.
    Adopted,
    /// The application's allocations, each field placed so that the inner box's first cell
    /// (where the step's tiles start) sits on a [`PLACEMENT`] boundary ([`placement`]),
    /// adopted. Where every row starts at one phase, every row's tiles then
    /// start on a sector: at 512^3 f64 with rows of 516 on one H200 the step took 682-688 us
    /// against 761-762 us with [`FieldPlacement::Library`] (where x = 2 sat 16 bytes past a
    /// sector in every row), compute alone 629-630 us (83 % of the copy speed) against 701-704
    /// us; in the other layouts measured (f32 rows of 520 and 516, f64 rows of 514) the step
    /// was the library's, within 5 us (results/HISTORY.md: h200-placed-fields).
    Tiles,
    /// The application's allocations, each field placed so that its interior's first cell
    /// sits on a [`PLACEMENT`] boundary, adopted. A box whose rows start and end on such
    /// boundaries writes whole sectors: at 512^3 f32 (rows of 520) on one H200 the whole
    /// interior in one launch of the lanes, the compute alone, took 322-327 us (84 % of the
    /// copy speed) against 357 us with fields at their start. But the step's inner box, a
    /// cell short of the interior at both ends, then leaves a sector partly written at both
    /// ends of every row (at its start only, with fields at their start): alone under ncu it
    /// took 354-356 us against 342-345, and the step 421-427 us against 412
    /// (results/HISTORY.md: h200-placed-fields).
    Interior,
}

impl FieldPlacement {
    /// `auto`, `library`, `adopted`, `tiles` or `interior` (the command line's `--placement`).
    pub fn name(self) -> &'static str {
        match self {
            FieldPlacement::Auto => "auto",
            FieldPlacement::Library => "library",
            FieldPlacement::Adopted => "adopted",
            FieldPlacement::Tiles => "tiles",
            FieldPlacement::Interior => "interior",
        }
    }

    /// The cell a placement puts on a [`PLACEMENT`] boundary in a field of `d`: the inner
    /// box's first or the interior's first; `None` at the allocation's start.
    pub(super) fn cell(self, d: &Decomposition) -> Option<[u64; 3]> {
        match self {
            FieldPlacement::Auto | FieldPlacement::Library | FieldPlacement::Adopted => None,
            FieldPlacement::Tiles => Some(d.halo.map(|h| h + 1)),
            FieldPlacement::Interior => Some(d.halo),
        }
    }

    /// The placement of a field whose update launches as `kind` (its element type and
    /// shape) in steps of `d` with the inner box `inner` that do or do not `overlap`: `self`,
    /// or what [`FieldPlacement::Auto`] picks. That is [`FieldPlacement::Interior`] where the
    /// steps do not overlap, the rows' length lets a field be placed ([`placement`]), and the
    /// update so placed runs its lanes over a box wider than the inner one ([`HalosIn`]);
    /// [`FieldPlacement::Tiles`] elsewhere.
    pub(crate) fn resolve(
        self,
        kind: &hp_stencil_args,
        d: &Decomposition,
        inner: &CellBox,
        overlap: bool,
    ) -> FieldPlacement {
        if self != FieldPlacement::Auto {
            return self;
        }
        let cell_bytes = u64::from(kind.elem_bytes) * u64::from(kind.components);
        let interior = FieldPlacement::Interior.cell(d);
        // Where a field placed for its interior starts in an allocation at address 0.
        let at = interior.map_or(0, |cell| placement(d, cell_bytes, cell, 0));
        if !overlap
            && placeable(d, cell_bytes)
            && HalosIn::of(kind, [at, at], &interior_box(d), inner).is_some()
        {
            FieldPlacement::Interior
        } else {
            FieldPlacement::Tiles
        }
    }
}

/// The boundary a placed field's cell sits on ([`FieldPlacement::Tiles`],
/// [`FieldPlacement::Interior`]): a sector of device memory, 32 bytes.
pub const PLACEMENT: u64 = 32;

/// Bytes into an allocation at `addr` where a field of `d` with cells of `cell_bytes` bytes
/// starts so that `cell` sits on a [`PLACEMENT`] boundary. 0 where the rows' length is not a
/// multiple of 16 bytes: rows then start at several phases, and f32 rows of 2 mod 4 elements
/// take the lanes' off form only in 16-byte aligned fields
/// ([`haloport_core::regions::stencil_lanes_off`]).
pub fn placement(d: &Decomposition, cell_bytes: u64, cell: [u64; 3], addr: u64) -> u64 {
    if !placeable(d, cell_bytes) {
        return 0;
    }
    let at = addr + d.index(cell) * cell_bytes;
    (PLACEMENT - at % PLACEMENT) % PLACEMENT
}

/// Whether [`placement`] places a field of `d` with cells of `cell_bytes` bytes: its rows'
/// length is a multiple of 16 bytes, so every row starts at one phase.
fn placeable(d: &Decomposition, cell_bytes: u64) -> bool {
    d.alloc[0] * cell_bytes % 16 == 0
}

/// Padding after each row of a field that would give its update a faster form
/// ([`JacobiRun::inner_rows_padding`](super::JacobiRun::inner_rows_padding)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsPadding {
    /// Cells of padding.
    pub cells: u64,
    /// What the padded rows' length is a multiple of, in elements: 4 for the f32 lanes, 8 (f32)
    /// for rows of whole sectors with the interior placed on one.
    pub multiple: u64,
}

/// The cells of padding after each row that would make a field whose update launches as
/// `kind` rows of whole [`PLACEMENT`] sectors, where `placement` would then place it for its
/// interior ([`FieldPlacement::resolve`]); `None` where its rows are whole sectors already or
/// it would not be so placed. Placed so, rows of 4 f32 elements past a sector start at two
/// phases: at 512^3 on one H200 compute alone took 363-370 us with rows of 516 against 317-325
/// us with rows of 520, at 256^3 77 us (260) against 66 us (264)
/// (`docs/results.md#weak-and-strong-scaling`).
pub(super) fn sector_rows_padding(
    placement: FieldPlacement,
    kind: &hp_stencil_args,
    d: &Decomposition,
    inner: &CellBox,
    overlap: bool,
) -> Option<RowsPadding> {
    let cell_bytes = u64::from(kind.elem_bytes) * u64::from(kind.components);
    let per_sector = PLACEMENT / cell_bytes;
    if per_sector == 0 || PLACEMENT % cell_bytes != 0 {
        return None;
    }
    let short = (per_sector - d.alloc[0] % per_sector) % per_sector;
    let mut padded = d.clone();
    padded.alloc[0] += short;
    let padded_kind = hp_stencil_args {
        alloc: padded.alloc,
        ..*kind
    };
    (short > 0
        && placement.resolve(&padded_kind, &padded, inner, overlap) == FieldPlacement::Interior)
        .then_some(RowsPadding {
            cells: short,
            multiple: per_sector,
        })
}
