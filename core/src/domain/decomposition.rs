//! Splitting the global grid over a Cartesian process grid: which box of cells each rank owns,
//! where its neighbours are, and how its allocated array (interior plus halos) is indexed.
//!
//! Everything here mirrors MPI's Cartesian topology functions without calling MPI, so a plan
//! can be compiled (and tested) on one process: [`dims_create`] is Open MPI's `MPI_Dims_create`
//! (an exchange over a communicator asks the MPI library itself, through
//! [`resolve_procs`](crate::halo::resolve_procs)),
//! [`Decomposition::rank_of`] and [`Decomposition::coords_of`] are `MPI_Cart_rank` and
//! `MPI_Cart_coords` of a communicator made by `MPI_Cart_create(.., reorder = false)`, and
//! [`Decomposition::neighbour`] generalises `MPI_Cart_shift` to diagonal directions.
//! Validation is written so that every rank of a job reports the same error for the same
//! declaration (an error never depends on the calling rank). All of it is pure computation on
//! plain data: no communication, no shared state.

use serde::{Deserialize, Serialize};

use super::{extents, DomainSpec, Subarray, DIM_NAMES};
use crate::error::{Error, Result};

/// A balanced process grid for `ranks` processes in 3 dimensions, `[px, py, pz]` with
/// `px >= py >= pz` and `px * py * pz == ranks`.
///
/// The algorithm is Open MPI's `MPI_Dims_create(ranks, 3, {0, 0, 0})`: factor `ranks` into
/// primes and, largest prime first, multiply each into the currently smallest dimension
/// (the first on ties), then sort the dimensions non-increasing. The result equals Open MPI's
/// (checked against Open MPI 4.1.4 for every count from 1 to 2000) and MPICH's for the common
/// counts tested below. The MPI standard only asks for dimensions "as close to each other as
/// possible", and MPICH (3.2 and later) searches for the most balanced grid, so it may choose
/// differently where greedy assignment is not the most balanced: the smallest such count is
/// 360 (here 10x6x6; 9x8x5 has a smaller spread). Give [`DomainSpec::procs`] explicitly when
/// the grid must match another program's.
///
/// MPI standard 3.1, 7.5.2 (MPI_DIMS_CREATE).
///
/// # Panics
/// When `ranks` is 0 (`MPI_Dims_create` rejects it too); [`DomainSpec::process_grid`]
/// returns an error instead.
pub fn dims_create(ranks: u32) -> [u32; 3] {
    assert!(
        ranks > 0,
        "dims_create: a process grid needs at least 1 rank"
    );
    let mut dims = [1u32; 3];
    for factor in prime_factors(ranks).into_iter().rev() {
        let mut smallest = 0;
        for k in 1..3 {
            if dims[k] < dims[smallest] {
                smallest = k;
            }
        }
        dims[smallest] *= factor;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// Prime factors of `n`, with multiplicity, in increasing order (none for 1).
fn prime_factors(mut n: u32) -> Vec<u32> {
    let mut factors = Vec::new();
    let mut p = 2u32;
    while u64::from(p) * u64::from(p) <= u64::from(n) {
        while n % p == 0 {
            factors.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        factors.push(n);
    }
    factors
}

/// Origin and length of part `i` when `n` cells are split over `p` parts: the first `n % p`
/// parts get one extra cell (`n / p + 1`), the others `n / p`. Parts are consecutive: part
/// `i + 1` starts where part `i` ends, and the last ends at `n`.
///
/// # Panics
/// When `p` is 0 or `i >= p`.
pub fn split_extent(n: u64, p: u32, i: u32) -> (u64, u64) {
    assert!(i < p, "split_extent: part {i} of {p} parts");
    let (p, i) = (u64::from(p), u64::from(i));
    let (base, extra) = (n / p, n % p);
    let origin = i * base + i.min(extra);
    let len = base + u64::from(i < extra);
    (origin, len)
}

/// `MPI_Cart_rank` for a row-major process grid (z fastest).
fn cart_rank(procs: [u32; 3], coords: [u32; 3]) -> i32 {
    let [_, py, pz] = procs.map(u64::from);
    let [cx, cy, cz] = coords.map(u64::from);
    // Fits: callers hold procs whose product is a positive i32 and coords inside them.
    ((cx * py + cy) * pz + cz) as i32
}

/// One rank's part of the grid: its box of cells, its place in the process grid, and the
/// layout of its allocated array (the box plus `halo` cells on every side).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    /// Process grid `[px, py, pz]`.
    pub procs: [u32; 3],
    /// This rank's coordinates in the process grid.
    pub coords: [u32; 3],
    /// This rank.
    pub rank: i32,
    /// Interior extents of this rank, in cells.
    pub local: [u64; 3],
    /// Global index of this rank's first interior cell.
    pub origin: [u64; 3],
    /// Halo width on the low side of each dimension: where the interior starts in the
    /// allocation.
    pub halo: [u64; 3],
    /// Halo width on the high side of each dimension.
    pub halo_hi: [u64; 3],
    /// Allocated extents: `halo + local + halo_hi + pad` per dimension (the padding lies after
    /// the high halo, [`Layout`](super::Layout)).
    pub alloc: [u64; 3],
    /// Whether each dimension wraps around.
    pub periodic: [bool; 3],
    /// Global extents.
    pub grid: [u64; 3],
}

impl Decomposition {
    /// The send and receive boxes of direction `d` in allocated coordinates, unmerged (strides
    /// `[1, ax, ax * ay]`); `None` where one is empty (a halo of width 0 on that side). Per
    /// dimension `k`, with `n` the local extent and `lo`, `hi` the halo widths, `d[k]` selects:
    /// -1: send `[lo, lo + hi)` (what fills the low neighbour's high halo), receive `[0, lo)`;
    /// +1: send `[n, n + lo)`, receive `[lo + n, lo + n + hi)`; 0: both `[lo, lo + n)`.
    #[inline]
    pub fn halo_boxes(&self, d: [i8; 3]) -> (Option<Subarray>, Option<Subarray>) {
        let (n, lo, hi) = (self.local, self.halo, self.halo_hi);
        let mut send_start = [0; 3];
        let mut recv_start = [0; 3];
        let mut send_count = [0; 3];
        let mut recv_count = [0; 3];
        for k in 0..3 {
            (send_start[k], send_count[k], recv_start[k], recv_count[k]) = match d[k] {
                -1 => (lo[k], hi[k], 0, lo[k]),
                0 => (lo[k], n[k], lo[k], n[k]),
                _ => (n[k], lo[k], lo[k] + n[k], hi[k]),
            };
        }
        let boxed = |start, count: [u64; 3]| {
            (count.iter().all(|&c| c > 0)).then(|| Subarray::of_box(self.alloc, start, count))
        };
        (boxed(send_start, send_count), boxed(recv_start, recv_count))
    }

    /// The part of `spec`'s grid that `rank` of a job of `ranks` ranks owns.
    ///
    /// The process grid is `spec.procs`, or [`dims_create`]`(ranks)` where not given. Each
    /// dimension is split with [`split_extent`]. Rank order is `MPI_Cart_create`'s with dims
    /// `[px, py, pz]` and `reorder = false`: `rank = (cx * py + cy) * pz + cz`.
    ///
    /// MPI standard 3.1, 7.4 (row-major numbering) and 7.5.1 (MPI_CART_CREATE).
    ///
    /// # Errors
    /// [`Error::InvalidInput`], the same on every rank, when: the job has no ranks or `rank`
    /// is not one of them; an extent of the grid or the process grid is 0; `fields` is 0;
    /// the process grid's product is not `ranks`; a dimension has more processes than cells;
    /// the smallest part of a dimension with a halo is narrower than the halo (the message
    /// names the first rank owning such a part); or the allocated array does not fit 64-bit
    /// indices.
    pub fn new(spec: &DomainSpec, ranks: i32, rank: i32) -> Result<Decomposition> {
        let procs = spec.process_grid(ranks)?;
        check(spec, procs, ranks, rank)?;
        Ok(Decomposition::checked(spec, procs, rank))
    }

    /// The part of `rank` in process grid `procs`, for a declaration [`Decomposition::new`]
    /// already accepted with that process grid (for any rank: its checks are the job's, the
    /// same on every rank): what a rank computes of each neighbour at set-up, without
    /// checking or choosing the process grid again.
    pub(crate) fn checked(spec: &DomainSpec, procs: [u32; 3], rank: i32) -> Decomposition {
        let coords = Decomposition::coords_of(procs, rank);
        let halo = spec.halo_lo().map(u64::from);
        let halo_hi = spec.halo_hi().map(u64::from);
        let mut local = [0; 3];
        let mut origin = [0; 3];
        let mut alloc = [0; 3];
        for k in 0..3 {
            (origin[k], local[k]) = match &spec.layout.splits {
                Some(splits) => splits.part(k, coords[k], spec.grid[k]),
                None => split_extent(spec.grid[k], procs[k], coords[k]),
            };
            alloc[k] = local[k] + halo[k] + halo_hi[k] + u64::from(spec.layout.pad[k]);
        }
        Decomposition {
            procs,
            coords,
            rank,
            local,
            origin,
            halo,
            halo_hi,
            alloc,
            periodic: spec.periodic,
            grid: spec.grid,
        }
    }

    /// The rank at `coords` of the process grid (`MPI_Cart_rank`).
    ///
    /// MPI standard 3.1, 7.5.5 (MPI_CART_RANK).
    ///
    /// # Panics
    /// In debug builds, when `coords` lies outside the process grid.
    pub fn rank_of(&self, coords: [u32; 3]) -> i32 {
        debug_assert!(
            (0..3).all(|k| coords[k] < self.procs[k]),
            "coordinates {coords:?} outside process grid {:?}",
            self.procs
        );
        cart_rank(self.procs, coords)
    }

    /// The coordinates of `rank` in process grid `procs` (`MPI_Cart_coords`).
    ///
    /// MPI standard 3.1, 7.5.5 (MPI_CART_COORDS).
    ///
    /// # Panics
    /// When `rank` is negative or a component of `procs` is 0.
    pub fn coords_of(procs: [u32; 3], rank: i32) -> [u32; 3] {
        assert!(rank >= 0, "coords_of: negative rank {rank}");
        let r = rank.unsigned_abs();
        let [_, py, pz] = procs;
        [r / (py * pz), (r / pz) % py, r % pz]
    }

    /// The neighbour rank in direction `d` (each component -1, 0 or 1), wrapping around in
    /// periodic dimensions; `None` past a non-periodic boundary. `[0, 0, 0]` is this rank,
    /// and so is any step that wraps all the way round (one process along a periodic
    /// dimension).
    ///
    /// MPI standard 3.1, 7.5.6 (MPI_CART_SHIFT, here along several dimensions at once).
    pub fn neighbour(&self, d: [i8; 3]) -> Option<i32> {
        let mut coords = [0u32; 3];
        for k in 0..3 {
            coords[k] = self.step(k, d[k])?;
        }
        Some(self.rank_of(coords))
    }

    /// Every neighbour rank of this part, as [`Decomposition::neighbour`] gives them, from
    /// the 9 coordinates of one step each way along each dimension, computed once: what
    /// set-up asks of each of its neighbours' parts (26 directions each).
    pub(crate) fn neighbour_ranks(&self) -> NeighbourRanks {
        let [_, py, pz] = self.procs.map(i64::from);
        let weights = [py * pz, pz, 1];
        let mut terms = [[NeighbourRanks::NONE; 3]; 3];
        for (k, row) in terms.iter_mut().enumerate() {
            for (s, term) in (-1..=1).zip(row.iter_mut()) {
                if let Some(c) = self.step(k, s) {
                    *term = i64::from(c) * weights[k];
                }
            }
        }
        NeighbourRanks { terms }
    }

    /// The process coordinate along dimension `k` of the part `s` steps away, wrapping around
    /// a periodic dimension; `None` past a non-periodic boundary.
    fn step(&self, k: usize, s: i8) -> Option<u32> {
        let p = i64::from(self.procs[k]);
        let mut c = i64::from(self.coords[k]) + i64::from(s);
        if !(0..p).contains(&c) {
            if !self.periodic[k] {
                return None;
            }
            c = c.rem_euclid(p);
        }
        // In [0, p) with p a u32: fits.
        Some(c as u32)
    }

    /// Elements of one field's allocated array: `alloc[0] * alloc[1] * alloc[2]`.
    pub fn alloc_elems(&self) -> u64 {
        self.alloc.iter().product()
    }

    /// Cells of this rank's interior: `local[0] * local[1] * local[2]`.
    pub fn interior_elems(&self) -> u64 {
        self.local.iter().product()
    }

    /// Index into the allocated array of allocated coordinates `at` (each in
    /// `[0, alloc[k])`): `x + ax * (y + ay * z)`.
    pub fn index(&self, at: [u64; 3]) -> u64 {
        at[0] + self.alloc[0] * (at[1] + self.alloc[1] * at[2])
    }

    /// Global coordinates of allocated coordinates `at`. Signed: halo cells past the grid's
    /// edges lie outside `[0, grid)` (wrap them for a periodic dimension).
    pub fn global_of(&self, at: [u64; 3]) -> [i64; 3] {
        // Decomposition::new checked that allocated extents and the grid fit i64.
        std::array::from_fn(|k| self.origin[k] as i64 + at[k] as i64 - self.halo[k] as i64)
    }
}

/// The neighbour ranks of one part in every direction: [`Decomposition::neighbour_ranks`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct NeighbourRanks {
    /// Per dimension and step (-1, 0, 1): the neighbour's coordinate times the ranks one
    /// step along that dimension spans (`MPI_Cart_rank`'s terms), or [`NeighbourRanks::NONE`]
    /// past a non-periodic boundary: a direction's rank is the sum of its three, without a
    /// branch per dimension.
    terms: [[i64; 3]; 3],
}

impl NeighbourRanks {
    /// The term past a non-periodic boundary: negative enough that any sum holding it is
    /// negative (terms otherwise lie in `[0, 2^31)`), small enough that three never overflow.
    const NONE: i64 = i64::MIN / 4;

    /// The neighbour in direction `d` (each component -1, 0 or 1):
    /// [`Decomposition::neighbour`]`(d)`.
    pub(crate) fn get(&self, d: [i8; 3]) -> Option<i32> {
        debug_assert!(d.iter().all(|c| (-1..=1).contains(c)), "direction {d:?}");
        let term = |k: usize| self.terms[k][usize::from(d[k].wrapping_add(1) as u8).min(2)];
        let rank = term(0) + term(1) + term(2);
        // A rank of the process grid (an i32) unless past a boundary.
        (rank >= 0).then_some(rank as i32)
    }
}

/// The checks of [`Decomposition::new`], in the order their messages are reported. None
/// depends on `rank` beyond its range, so every rank of a job reports the same error.
fn check(spec: &DomainSpec, procs: [u32; 3], ranks: i32, rank: i32) -> Result<()> {
    let invalid = |message: String| Err(Error::InvalidInput(message));
    if ranks < 1 {
        return invalid(format!("the job has {ranks} ranks; it needs at least 1"));
    }
    if !(0..ranks).contains(&rank) {
        return invalid(format!(
            "rank {rank} is not one of the job's {ranks} ranks (0 to {})",
            ranks - 1
        ));
    }
    if let Some(k) = spec.grid.iter().position(|&n| n == 0) {
        return invalid(format!(
            "grid {} has extent 0 in {}; every extent must be at least 1",
            extents(&spec.grid),
            DIM_NAMES[k]
        ));
    }
    if spec.fields == 0 {
        return invalid("the declaration has 0 fields; it needs at least 1".to_string());
    }
    if let Some(shapes) = &spec.layout.fields {
        if shapes.len() != spec.fields as usize {
            return invalid(format!(
                "the declaration has {} fields and {} field shapes; give one shape per field",
                spec.fields,
                shapes.len()
            ));
        }
        for (k, f) in shapes.iter().enumerate() {
            if ![1, 2, 4, 8, 16].contains(&f.elem_bytes) || f.components == 0 {
                return invalid(format!(
                    "field {k}: elements of {} bytes, {} per cell; elements are 1, 2, 4, 8 or 16 bytes, at least 1 per cell",
                    f.elem_bytes, f.components
                ));
            }
        }
    }
    spec.word_bytes()?;
    if let Some(k) = procs.iter().position(|&p| p == 0) {
        return invalid(format!(
            "process grid {} has 0 processes in {}; every dimension needs at least 1",
            extents(&procs),
            DIM_NAMES[k]
        ));
    }
    if let Some(splits) = &spec.layout.splits {
        splits.check(spec.grid)?;
        if let Some(p) = spec.procs.filter(|&p| p != procs) {
            return invalid(format!(
                "the process grid {} differs from the decomposition's {}",
                extents(&p),
                extents(&procs)
            ));
        }
    }
    let product: u64 = procs.iter().map(|&p| u64::from(p)).product();
    if product != u64::from(ranks.unsigned_abs()) {
        return invalid(format!(
            "process grid {} has {product} ranks; the job has {ranks}",
            extents(&procs)
        ));
    }
    for k in 0..3 {
        if u64::from(procs[k]) > spec.grid[k] {
            return invalid(format!(
                "process grid {} has more processes in {} ({}) than grid {} has cells ({})",
                extents(&procs),
                DIM_NAMES[k],
                procs[k],
                extents(&spec.grid),
                spec.grid[k]
            ));
        }
    }
    for k in 0..3 {
        let (lo, hi) = (spec.halo_lo()[k], spec.halo_hi()[k]);
        let (n, p, h) = (spec.grid[k], procs[k], u64::from(lo.max(hi)));
        // Name the first rank owning a smallest part, so that every rank reports the same:
        // with an even split the parts from n % p on are the smallest (n / p cells).
        let (first, smallest) = match &spec.layout.splits {
            Some(splits) => (0..p)
                .map(|i| (i, splits.part(k, i, n).1))
                .min_by_key(|&(_, len)| len)
                .unwrap_or((0, n)),
            // n % p < p, a u32.
            None => ((n % u64::from(p)) as u32, n / u64::from(p)),
        };
        if h > 0 && smallest < h {
            let mut coords = [0; 3];
            coords[k] = first;
            return invalid(format!(
                "rank {}: local extent {smallest} in {} is smaller than the halo width {h}",
                cart_rank(procs, coords),
                DIM_NAMES[k]
            ));
        }
    }
    // The largest rank's array (first parts are the largest) must index with i64 and u64.
    let largest = (0..3).try_fold(1u64, |acc, k| {
        let local = spec.grid[k].div_ceil(u64::from(procs[k]));
        let widths = u64::from(spec.halo_lo()[k]) + u64::from(spec.halo_hi()[k]);
        let alloc = local
            .checked_add(widths)?
            .checked_add(u64::from(spec.layout.pad[k]))?;
        let global_end = spec.grid[k].checked_add(widths)?;
        i64::try_from(global_end).ok()?;
        acc.checked_mul(alloc).filter(|&a| i64::try_from(a).is_ok())
    });
    let Some(largest) = largest else {
        return invalid(format!(
            "grid {} with halo {} over process grid {} is too large for 64-bit indices",
            extents(&spec.grid),
            extents(&spec.halo),
            extents(&procs)
        ));
    };
    // Its bytes, over all fields, must be addressable: checked, never wrapped.
    let bytes = largest
        .checked_mul(spec.cell_bytes())
        .filter(|&b| usize::try_from(b).is_ok());
    if bytes.is_none() {
        return invalid(format!(
            "grid {} with halo {} over process grid {}: a local array of {largest} cells of {} bytes ({} fields of {}) does not fit in 64-bit byte sizes",
            extents(&spec.grid),
            extents(&spec.halo),
            extents(&procs),
            spec.cell_bytes(),
            spec.fields,
            spec.elem
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::ElemType;
    use super::*;

    fn spec(grid: [u64; 3], procs: Option<[u32; 3]>, halo: [u32; 3]) -> DomainSpec {
        DomainSpec {
            grid,
            procs,
            periodic: [false; 3],
            halo,
            elem: ElemType::F64,
            fields: 1,
            layout: Default::default(),
        }
    }

    fn message(result: Result<Decomposition>) -> String {
        match result {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn dims_create_matches_known_mpi_results() {
        // Results of MPI_Dims_create(n, 3, {0, 0, 0}) (Open MPI 4.1.4; MPICH agrees on these).
        let known: [(u32, [u32; 3]); 13] = [
            (1, [1, 1, 1]),
            (2, [2, 1, 1]),
            (3, [3, 1, 1]),
            (4, [2, 2, 1]),
            (6, [3, 2, 1]),
            (7, [7, 1, 1]),
            (8, [2, 2, 2]),
            (12, [3, 2, 2]),
            (16, [4, 2, 2]),
            (24, [4, 3, 2]),
            (27, [3, 3, 3]),
            (64, [4, 4, 4]),
            (360, [10, 6, 6]),
        ];
        for (ranks, dims) in known {
            assert_eq!(dims_create(ranks), dims, "{ranks} ranks");
        }
    }

    #[test]
    fn dims_create_multiplies_to_ranks_and_does_not_increase() {
        for ranks in 1..=1000 {
            let d = dims_create(ranks);
            assert_eq!(d[0] * d[1] * d[2], ranks, "{ranks} ranks: {d:?}");
            assert!(d[0] >= d[1] && d[1] >= d[2], "{ranks} ranks: {d:?}");
        }
    }

    #[test]
    fn prime_factors_are_ascending_with_multiplicity() {
        assert_eq!(prime_factors(1), Vec::<u32>::new());
        assert_eq!(prime_factors(360), vec![2, 2, 2, 3, 3, 5]);
        assert_eq!(prime_factors(4_294_967_291), vec![4_294_967_291]);
        assert_eq!(prime_factors(u32::MAX), vec![3, 5, 17, 257, 65537]);
    }

    #[test]
    fn split_extent_gives_the_remainder_to_the_first_parts() {
        let parts: Vec<_> = (0..3).map(|i| split_extent(10, 3, i)).collect();
        assert_eq!(parts, vec![(0, 4), (4, 3), (7, 3)]);
        assert_eq!(split_extent(7, 1, 0), (0, 7));
        for (n, p) in [(10, 4), (5, 5), (1000, 7), (3, 2)] {
            let mut next = 0;
            for i in 0..p {
                let (origin, len) = split_extent(n, p, i);
                assert_eq!(origin, next);
                assert!(len == n / u64::from(p) || len == n / u64::from(p) + 1);
                next = origin + len;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn ranks_are_numbered_like_mpi_cart_create() {
        let d = Decomposition::new(&spec([8, 8, 8], Some([2, 3, 4]), [1; 3]), 24, 0)
            .expect("valid declaration");
        // z fastest, then y, then x.
        assert_eq!(d.rank_of([0, 0, 1]), 1);
        assert_eq!(d.rank_of([0, 1, 0]), 4);
        assert_eq!(d.rank_of([1, 0, 0]), 12);
        assert_eq!(d.rank_of([1, 2, 3]), 23);
        for rank in 0..24 {
            let coords = Decomposition::coords_of(d.procs, rank);
            assert_eq!(d.rank_of(coords), rank);
        }
    }

    #[test]
    fn uneven_split_places_each_rank() {
        let s = spec([10, 7, 5], Some([3, 2, 1]), [1; 3]);
        // Rank 3: coords (1, 1, 0).
        let d = Decomposition::new(&s, 6, 3).expect("valid declaration");
        assert_eq!(d.coords, [1, 1, 0]);
        assert_eq!(d.local, [3, 3, 5]);
        assert_eq!(d.origin, [4, 4, 0]);
        assert_eq!(d.alloc, [5, 5, 7]);
        assert_eq!(d.alloc_elems(), 175);
        assert_eq!(d.interior_elems(), 45);
        assert_eq!(d.index([1, 2, 3]), 1 + 5 * (2 + 5 * 3));
        assert_eq!(d.global_of([0, 0, 0]), [3, 3, -1]);
        assert_eq!(d.global_of([1, 1, 1]), [4, 4, 0]);
        let total: u64 = (0..6)
            .map(|r| {
                Decomposition::new(&s, 6, r)
                    .expect("valid declaration")
                    .interior_elems()
            })
            .sum();
        assert_eq!(total, 350);
    }

    #[test]
    fn procs_default_to_dims_create() {
        let d = Decomposition::new(&spec([12, 12, 12], None, [1; 3]), 12, 5)
            .expect("valid declaration");
        assert_eq!(d.procs, [3, 2, 2]);
        assert_eq!(d.coords, [1, 0, 1]);
    }

    #[test]
    fn neighbours_wrap_only_in_periodic_dimensions() {
        let mut s = spec([8, 8, 8], Some([2, 2, 1]), [1; 3]);
        s.periodic = [true, false, true];
        // Rank 0 at (0, 0, 0).
        let d = Decomposition::new(&s, 4, 0).expect("valid declaration");
        assert_eq!(d.neighbour([0, 0, 0]), Some(0));
        assert_eq!(d.neighbour([1, 0, 0]), Some(2));
        assert_eq!(d.neighbour([-1, 0, 0]), Some(2));
        assert_eq!(d.neighbour([0, 1, 0]), Some(1));
        assert_eq!(d.neighbour([0, -1, 0]), None);
        assert_eq!(d.neighbour([-1, 1, 0]), Some(3));
        assert_eq!(d.neighbour([1, -1, 1]), None);
        // One process along periodic z: the neighbour is the rank itself.
        assert_eq!(d.neighbour([0, 0, 1]), Some(0));
        assert_eq!(d.neighbour([1, 1, -1]), Some(3));
    }

    #[test]
    fn neighbour_ranks_at_once_are_those_of_each_direction() {
        for (procs, periodic) in [
            ([2, 2, 1], [true, false, true]),
            ([1, 1, 1], [true; 3]),
            ([1, 1, 1], [false; 3]),
            ([3, 4, 2], [false; 3]),
            ([3, 4, 2], [true; 3]),
            ([5, 1, 3], [false, true, true]),
        ] {
            let mut s = spec([12, 12, 12], Some(procs), [1; 3]);
            s.periodic = periodic;
            let ranks = (procs[0] * procs[1] * procs[2]) as i32;
            for rank in 0..ranks {
                let d = Decomposition::new(&s, ranks, rank).expect("valid declaration");
                let at_once = d.neighbour_ranks();
                for dir in super::super::directions().into_iter().chain([[0, 0, 0]]) {
                    assert_eq!(
                        at_once.get(dir),
                        d.neighbour(dir),
                        "{procs:?} {periodic:?} rank {rank} {dir:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn process_grid_of_the_wrong_size_is_rejected() {
        let m = message(Decomposition::new(
            &spec([8, 8, 8], Some([2, 2, 1]), [1; 3]),
            3,
            0,
        ));
        assert_eq!(m, "process grid 2x2x1 has 4 ranks; the job has 3");
    }

    #[test]
    fn zero_extents_procs_fields_and_ranks_are_rejected() {
        let m = message(Decomposition::new(&spec([8, 0, 8], None, [1; 3]), 1, 0));
        assert!(m.contains("extent 0 in y") && m.contains("8x0x8"), "{m}");
        let m = message(Decomposition::new(
            &spec([8, 8, 8], Some([1, 1, 0]), [1; 3]),
            1,
            0,
        ));
        assert!(m.contains("0 processes in z") && m.contains("1x1x0"), "{m}");
        let mut s = spec([8, 8, 8], None, [1; 3]);
        s.fields = 0;
        let m = message(Decomposition::new(&s, 1, 0));
        assert!(m.contains("0 fields"), "{m}");
        let m = message(Decomposition::new(&spec([8, 8, 8], None, [1; 3]), 0, 0));
        assert!(m.contains("0 ranks"), "{m}");
        let m = message(Decomposition::new(&spec([8, 8, 8], None, [1; 3]), 4, 4));
        assert!(m.contains("rank 4") && m.contains("0 to 3"), "{m}");
    }

    #[test]
    fn more_processes_than_cells_is_rejected() {
        let m = message(Decomposition::new(
            &spec([3, 8, 8], Some([4, 1, 1]), [0; 3]),
            4,
            0,
        ));
        assert!(
            m.contains("more processes in x (4)") && m.contains("(3)"),
            "{m}"
        );
    }

    #[test]
    fn halo_wider_than_the_smallest_part_is_reported_alike_on_every_rank() {
        // y: 7 cells over 4 processes gives 2, 2, 2, 1; the first rank owning 1 cell in y is
        // at (0, 3, 0): rank 3. Rank 0 owns 2 cells but reports the same error.
        let s = spec([8, 7, 8], Some([1, 4, 1]), [2, 2, 2]);
        let expected = "rank 3: local extent 1 in y is smaller than the halo width 2";
        for rank in 0..4 {
            assert_eq!(message(Decomposition::new(&s, 4, rank)), expected);
        }
        // Without a halo in y the same split is fine.
        let s = spec([8, 7, 8], Some([1, 4, 1]), [2, 0, 2]);
        assert!(Decomposition::new(&s, 4, 0).is_ok());
    }

    #[test]
    fn grids_whose_bytes_overflow_are_refused_not_wrapped() {
        // 2^61 cells fit a 64-bit index; their 2^64 bytes of f64 do not.
        let s = spec([1 << 21, 1 << 20, 1 << 20], Some([1, 1, 1]), [0, 0, 0]);
        let m = message(Decomposition::new(&s, 1, 0));
        assert!(m.contains("does not fit in 64-bit byte sizes"), "{m}");
        // Many fields overflow a smaller grid too.
        let mut s = spec([1 << 20, 1 << 20, 1 << 10], Some([1, 1, 1]), [0, 0, 0]);
        s.fields = 1 << 14;
        let m = message(Decomposition::new(&s, 1, 0));
        assert!(m.contains("16384 fields"), "{m}");
    }

    #[test]
    fn an_application_decomposition_places_each_rank_and_names_the_smallest_part() {
        use super::super::{Layout, Splits};
        let mut s = spec([20, 12, 10], None, [1, 1, 1]);
        s.layout = Layout {
            splits: Some(Splits {
                x: vec![0, 3, 11],
                y: vec![0, 7],
                z: vec![0],
            }),
            ..Layout::default()
        };
        // Rank 4 of the 3x2x1 grid sits at (2, 0, 0): x [11, 20), y [0, 7).
        let d = Decomposition::new(&s, 6, 4).expect("decomposition");
        assert_eq!((d.procs, d.coords), ([3, 2, 1], [2, 0, 0]));
        assert_eq!((d.origin, d.local), ([11, 0, 0], [9, 7, 10]));
        let cells: u64 = (0..6)
            .map(|r| Decomposition::new(&s, 6, r).expect("part").interior_elems())
            .sum();
        assert_eq!(cells, 20 * 12 * 10, "the parts tile the grid once");
        // A halo of 4 is wider than x's part [0, 3), owned by rank 0.
        s.halo = [4, 1, 1];
        let m = message(Decomposition::new(&s, 6, 5));
        assert!(m.contains("rank 0: local extent 3 in x"), "{m}");
    }

    #[test]
    fn grids_too_large_for_64_bit_indices_are_rejected() {
        let m = message(Decomposition::new(
            &spec([1 << 30, 1 << 30, 1 << 30], None, [1; 3]),
            1,
            0,
        ));
        assert!(m.contains("too large"), "{m}");
        assert!(Decomposition::new(&spec([1 << 20, 1 << 20, 1 << 20], None, [1; 3]), 1, 0).is_ok());
    }
}
