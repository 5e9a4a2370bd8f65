//! The library's halo-exchange declaration and its compilation into a plan (SPEC 13).
//!
//! A user declares a structured 3-D grid ([`DomainSpec`]): global extents, a Cartesian process
//! grid (given, or chosen by `MPI_Dims_create`: [`crate::halo::resolve_procs`]), periodicity and halo width per dimension,
//! the element type and the number of fields. [`HaloPlan::compile`] turns that declaration,
//! once per rank, into everything an exchange needs (seed 003: declare, compile, execute many
//! times): this rank's [`Decomposition`] (its box of the grid and the allocated array around
//! it) and up to 26 [`Neighbour`]s (faces, edges, corners), each with a send and a receive
//! [`Subarray`] in the flattened offset + count/stride form the region kernels walk (seed 002).
//!
//! # Conventions
//! - Dimension 0 is x, the innermost in memory; a field is one array of
//!   `alloc[0] * alloc[1] * alloc[2]` elements, index `x + ax * (y + ay * z)` in allocated
//!   coordinates, where the interior is `[halo[k], halo[k] + local[k])` per dimension.
//! - Ranks are numbered like `MPI_Cart_create` with `reorder = false`: row-major over the
//!   process grid `[px, py, pz]`, z fastest.
//! - A message is identified by its peer and its tag, [`direction_tag`] of the direction the
//!   data travels in; the same peer may appear in several directions (two processes along a
//!   periodic dimension), or be this rank itself (one process along it).
//!
//! # Invariants
//! For every neighbour, `send` on this rank and the peer's matching `recv` hold the same
//! number of elements in the same order, so packing one and unpacking into the other moves
//! every cell to the halo cell that mirrors it. Every rank of a job reports the same error
//! for the same declaration, so one rank can report it and all exit cleanly.
//!
//! # Threading
//! Everything here is plain data, computed on the host without communication; a plan is
//! `Send + Sync` and never changes after compilation.

mod decomposition;
mod plan;
mod subarray;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

pub use decomposition::{dims_create, split_extent, Decomposition};
pub(crate) use plan::Regions;
pub use plan::{direction_tag, directions, HaloPlan, Neighbour, NeighbourKind};
pub use subarray::Subarray;

/// Names of the three dimensions, innermost first, as messages print them.
pub(crate) const DIM_NAMES: [&str; 3] = ["x", "y", "z"];

/// Writes extents as `10x7x5`, the way messages print grids.
pub(crate) fn extents<T: fmt::Display>(v: &[T; 3]) -> String {
    format!("{}x{}x{}", v[0], v[1], v[2])
}

/// The element type of a declaration's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    /// 32-bit IEEE 754 floating point.
    F32,
    /// 64-bit IEEE 754 floating point.
    F64,
}

impl ElemType {
    /// Both element types, in the order messages list them.
    pub const ALL: [ElemType; 2] = [ElemType::F32, ElemType::F64];

    /// Bytes of one element: 4 or 8 (the region kernels' `elem_bytes`).
    pub fn bytes(self) -> u32 {
        match self {
            ElemType::F32 => 4,
            ElemType::F64 => 8,
        }
    }

    /// The name used on the command line and in outputs: `f32` or `f64`.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ElemType {
    type Err = Error;

    /// Parses `f32` or `f64`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the value given and the known types.
    fn from_str(s: &str) -> Result<Self, Error> {
        ElemType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown element type '{s}'; known element types: f32, f64"
                ))
            })
    }
}

/// A halo-exchange declaration: the grid, its decomposition and what lives on it (SPEC 13).
///
/// The same declaration is given on every rank; [`HaloPlan::compile`] checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    /// Global extents `[nx, ny, nz]` in cells, x innermost; each at least 1.
    pub grid: [u64; 3],
    /// Process grid `[px, py, pz]`; its product must be the job's rank count. `None`: chosen
    /// by [`dims_create`].
    #[serde(default)]
    pub procs: Option<[u32; 3]>,
    /// Whether each dimension wraps around (the last rank's neighbour is the first).
    pub periodic: [bool; 3],
    /// Halo width in cells per dimension; 0 means no exchange along that dimension.
    pub halo: [u32; 3],
    /// Element type of every field.
    pub elem: ElemType,
    /// Number of fields exchanged with this layout, each in its own buffer; at least 1.
    pub fields: u32,
    /// Padding of the allocation and which neighbours fill the halos (SPEC 15); by default
    /// none and all 26.
    #[serde(default)]
    pub layout: Layout,
}

/// How a field lies in its allocation beyond its halos, and which neighbours fill them.
///
/// ```text
///   allocated x extent = lo + local + hi + pad
///   |<- lo ->|<------ local (interior) ------>|<- hi ->|<- pad ->|
///   ^ index 0 ^ interior starts here (Decomposition::halo)        ^ unused by haloport
/// ```
/// `lo` and `hi` are [`DomainSpec::halo`] unless [`Layout::halo_lo`] / [`Layout::halo_hi`]
/// say otherwise. The `hi` cells of a rank's low-side neighbour travel into its `lo` halo, and
/// the other way round: every rank declares the same widths.
/// The same along y (rows of `alloc[0]` cells) and z (planes of `alloc[0] * alloc[1]`): a
/// pitched allocation (`cudaMallocPitch`, `cudaMalloc3D`) is a padding of
/// `pitch / element size - (local + 2 * halo)` in x.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Layout {
    /// Halo widths on the low side of each dimension, where they differ from
    /// [`DomainSpec::halo`]; 0 allowed (nothing arrives on that side).
    pub halo_lo: Option<[u32; 3]>,
    /// Halo widths on the high side of each dimension, likewise.
    pub halo_hi: Option<[u32; 3]>,
    /// Extra allocated cells after the high halo of each dimension; never read or written.
    pub pad: [u32; 3],
    /// Which neighbours exchange halos.
    pub neighbourhood: Neighbourhood,
    /// The application's own decomposition, where it does not split the grid evenly.
    pub splits: Option<Splits>,
    /// Each field's cells, where they are not one [`DomainSpec::elem`] each: as many as
    /// [`DomainSpec::fields`], in order. Fields of different shapes travel together, one
    /// message per neighbour.
    pub fields: Option<Vec<FieldShape>>,
}

/// What one cell of a field holds: `components` interleaved elements of `elem_bytes` bytes (a
/// velocity `[x][y][z][3]` of f64 is 8 bytes x 3). Halos move whole cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldShape {
    /// Bytes of one element: 1, 2, 4, 8 or 16 (integers, f16, f32, f64, complex f64).
    pub elem_bytes: u32,
    /// Elements per cell, interleaved; at least 1.
    pub components: u32,
}

impl FieldShape {
    /// Bytes of one cell.
    pub fn cell_bytes(self) -> u64 {
        u64::from(self.elem_bytes) * u64::from(self.components)
    }
}

/// A decomposition given by the application: where the parts start along each dimension (a
/// rectilinear partition, as a Cartesian process grid has). With starts `x = [0, 7, 12]` the
/// ranks at process coordinate 0, 1, 2 in x own cells `[0, 7)`, `[7, 12)` and `[12, nx)`; the
/// process grid is the number of starts per dimension, and rank `r` owns the part at its
/// Cartesian coordinates. Every rank derives every part from these few numbers, so the
/// set-up stays independent of the job's size; parts tile the grid exactly once by
/// construction, which [`Splits::check`] verifies.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Splits {
    /// Starts of the parts along x, ascending, the first 0.
    pub x: Vec<u64>,
    /// Starts along y.
    pub y: Vec<u64>,
    /// Starts along z.
    pub z: Vec<u64>,
}

impl Splits {
    /// Reads a decomposition file: TOML (`x = [0, 7]`, `y = [0]`, `z = [0, 3, 6]`), or the
    /// same keys in JSON for a name ending in `.json`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the file and what the parser said.
    pub fn load(path: &std::path::Path) -> crate::Result<Splits> {
        let fail = |why: String| {
            Error::InvalidInput(format!("decomposition file {}: {why}", path.display()))
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            serde_json::from_str(&text).map_err(|e| fail(format!("not valid JSON: {e}")))
        } else {
            toml::from_str(&text).map_err(|e| fail(format!("not valid TOML: {e}")))
        }
    }

    /// The starts along dimension `k`.
    pub fn starts(&self, k: usize) -> &[u64] {
        match k {
            0 => &self.x,
            1 => &self.y,
            _ => &self.z,
        }
    }

    /// The process grid: how many parts each dimension has.
    pub fn procs(&self) -> [u32; 3] {
        [0, 1, 2].map(|k| u32::try_from(self.starts(k).len()).unwrap_or(u32::MAX))
    }

    /// Origin and extent of part `i` along dimension `k` of a grid `n` cells long.
    pub fn part(&self, k: usize, i: u32, n: u64) -> (u64, u64) {
        let starts = self.starts(k);
        let i = i as usize;
        let begin = starts.get(i).copied().unwrap_or(n);
        let end = starts.get(i + 1).copied().unwrap_or(n);
        (begin, end.saturating_sub(begin))
    }

    /// Checks that the parts tile `grid` exactly once: per dimension at least one start, the
    /// first 0, each greater than the one before (no empty or overlapping part), the last
    /// inside the grid.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the dimension and the starts.
    pub fn check(&self, grid: [u64; 3]) -> crate::Result<()> {
        for k in 0..3 {
            let starts = self.starts(k);
            let name = ["x", "y", "z"][k];
            let bad = |why: &str| {
                Err(Error::InvalidInput(format!(
                    "the decomposition's starts in {name} {starts:?} {why} (grid extent {})",
                    grid[k]
                )))
            };
            match starts.first() {
                None => return bad("are empty: give at least [0]"),
                Some(&first) if first != 0 => return bad("leave a gap: the first must be 0"),
                _ => {}
            }
            if starts.windows(2).any(|w| w[1] <= w[0]) {
                return bad(
                    "overlap or leave an empty part: each must be greater than the one before",
                );
            }
            if starts.last().is_some_and(|&last| last >= grid[k]) {
                return bad("leave an empty part: the last must lie inside the grid");
            }
        }
        Ok(())
    }
}

/// Which neighbours an exchange fills the halos from. Fewer neighbours, fewer messages: a
/// 7-point stencil reads faces only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Neighbourhood {
    /// The 6 face neighbours. Halo cells outside the interior in two or three dimensions (the
    /// edges and corners of the halo) are left as they were.
    Faces,
    /// Faces and the 12 edge neighbours (18). Halo cells outside the interior in all three
    /// dimensions (the 8 corners of the halo) are left as they were.
    FacesEdges,
    /// All 26 neighbours: every halo cell that has a neighbour is filled.
    #[default]
    All,
}

impl Neighbourhood {
    /// How many dimensions a direction may cross: 1, 2 or 3.
    pub fn reach(self) -> usize {
        match self {
            Neighbourhood::Faces => 1,
            Neighbourhood::FacesEdges => 2,
            Neighbourhood::All => 3,
        }
    }

    /// Name on the command line: `faces`, `faces-edges`, `all`.
    pub fn name(self) -> &'static str {
        match self {
            Neighbourhood::Faces => "faces",
            Neighbourhood::FacesEdges => "faces-edges",
            Neighbourhood::All => "all",
        }
    }
}

impl std::str::FromStr for Neighbourhood {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        [
            Neighbourhood::Faces,
            Neighbourhood::FacesEdges,
            Neighbourhood::All,
        ]
        .into_iter()
        .find(|n| {
            n.name() == s
                || (s == "6" && n.reach() == 1)
                || (s == "18" && n.reach() == 2)
                || (s == "26" && n.reach() == 3)
        })
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "unknown neighbourhood '{s}'; known: faces (6), faces-edges (18), all (26)"
            ))
        })
    }
}

impl DomainSpec {
    /// Halo widths on the low side of each dimension.
    pub fn halo_lo(&self) -> [u32; 3] {
        self.layout.halo_lo.unwrap_or(self.halo)
    }

    /// Halo widths on the high side of each dimension.
    pub fn halo_hi(&self) -> [u32; 3] {
        self.layout.halo_hi.unwrap_or(self.halo)
    }

    /// The process grid for a job of `ranks` ranks: [`DomainSpec::procs`] where given, else
    /// [`dims_create`]`(ranks)`. Does not check it; [`Decomposition::new`] does.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `ranks` is not positive.
    pub fn process_grid(&self, ranks: i32) -> crate::Result<[u32; 3]> {
        if let Some(splits) = &self.layout.splits {
            return Ok(splits.procs());
        }
        match self.procs {
            Some(p) => Ok(p),
            None => match u32::try_from(ranks) {
                Ok(r) if r > 0 => Ok(dims_create(r)),
                _ => Err(Error::InvalidInput(format!(
                    "the job has {ranks} ranks; it needs at least 1"
                ))),
            },
        }
    }

    /// Each field's cell shape: [`Layout::fields`], or one [`DomainSpec::elem`] per cell.
    pub fn field_shapes(&self) -> Vec<FieldShape> {
        self.layout.fields.clone().unwrap_or_else(|| {
            vec![
                FieldShape {
                    elem_bytes: self.elem.bytes(),
                    components: 1,
                };
                self.fields as usize
            ]
        })
    }

    /// Bytes of one cell over all fields.
    pub fn cell_bytes(&self) -> u64 {
        self.cell_sizes().iter().sum()
    }

    /// Bytes of one cell of each field, in order.
    pub fn cell_sizes(&self) -> Vec<u64> {
        self.field_shapes().iter().map(|f| f.cell_bytes()).collect()
    }

    /// The word the exchange's kernels move every field's cells in: the largest of 8, 4, 2
    /// and 1 bytes that divides every field's cell (8-byte words move fastest; one field of
    /// single bytes makes every field move byte by byte).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a field whose cells have no bytes.
    pub fn word_bytes(&self) -> crate::Result<u32> {
        let shapes = self.field_shapes();
        if let Some(k) = shapes.iter().position(|f| f.cell_bytes() == 0) {
            return Err(Error::InvalidInput(format!(
                "field {k}'s cells have no bytes"
            )));
        }
        Ok([8_u32, 4, 2, 1]
            .into_iter()
            .find(|&w| shapes.iter().all(|f| f.cell_bytes() % u64::from(w) == 0))
            .unwrap_or(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elem_type_names_sizes_and_parsing_round_trip() {
        for t in ElemType::ALL {
            assert_eq!(t.name().parse::<ElemType>().expect("parses"), t);
            assert_eq!(t.to_string(), t.name());
        }
        assert_eq!(ElemType::F32.bytes(), 4);
        assert_eq!(ElemType::F64.bytes(), 8);
    }

    #[test]
    fn unknown_elem_type_names_the_value_and_the_choices() {
        let err = "f16"
            .parse::<ElemType>()
            .expect_err("is rejected")
            .to_string();
        assert!(err.contains("'f16'"), "{err}");
        assert!(err.contains("f32") && err.contains("f64"), "{err}");
        assert!("F64".parse::<ElemType>().is_err());
    }

    #[test]
    fn elem_type_serializes_lowercase() {
        assert_eq!(
            serde_json::to_string(&ElemType::F64).expect("serializes"),
            "\"f64\""
        );
        let t: ElemType = serde_json::from_str("\"f32\"").expect("parses");
        assert_eq!(t, ElemType::F32);
    }

    #[test]
    fn domain_spec_round_trips_through_toml_and_procs_may_be_left_out() {
        let text = r#"
            grid = [64, 32, 16]
            periodic = [true, false, true]
            halo = [1, 1, 2]
            elem = "f32"
            fields = 2
        "#;
        let spec: DomainSpec = toml::from_str(text).expect("parses");
        assert_eq!(spec.procs, None);
        assert_eq!(spec.elem, ElemType::F32);
        assert_eq!(spec.cell_bytes(), 8);
        let again: DomainSpec =
            toml::from_str(&toml::to_string(&spec).expect("serializes")).expect("parses");
        assert_eq!(again, spec);

        let with_procs = format!("{text}\nprocs = [2, 1, 1]");
        let spec: DomainSpec = toml::from_str(&with_procs).expect("parses");
        assert_eq!(spec.procs, Some([2, 1, 1]));
    }

    #[test]
    fn domain_spec_rejects_unknown_fields() {
        let text = r#"
            grid = [8, 8, 8]
            periodic = [true, true, true]
            halo = [1, 1, 1]
            elem = "f64"
            fields = 1
            halos = [2, 2, 2]
        "#;
        let err = toml::from_str::<DomainSpec>(text)
            .expect_err("is rejected")
            .to_string();
        assert!(err.contains("halos"), "{err}");
    }

    #[test]
    fn process_grid_defaults_to_dims_create_and_rejects_empty_jobs() {
        let mut spec = DomainSpec {
            grid: [8, 8, 8],
            procs: None,
            periodic: [false; 3],
            halo: [1; 3],
            elem: ElemType::F64,
            fields: 1,
            layout: Default::default(),
        };
        assert_eq!(
            spec.process_grid(12).expect("positive rank count"),
            [3, 2, 2]
        );
        assert!(spec.process_grid(0).is_err());
        spec.procs = Some([1, 1, 12]);
        assert_eq!(spec.process_grid(12).expect("given grid"), [1, 1, 12]);
    }
}
