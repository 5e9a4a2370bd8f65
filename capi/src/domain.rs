//! The domain handle: a declaration built up by setters (SPEC 15), compiled when an exchange is
//! made from it.

use haloport::core::domain::{DomainSpec, ElemType, FieldShape, Layout, Neighbourhood, Splits};
use haloport::foreign::{DEFAULT_HALO, DEFAULT_NEIGHBOURHOOD, DEFAULT_PAD, DEFAULT_PERIODIC};

use crate::handles::{read3, read_array, AtExit, Kind, Table};
use crate::status::{entry, Failure, HaloportStatus, Outcome};

/// A domain declaration: the global grid, its decomposition, the halos and the fields. Made
/// with `haloport_domain_new`, changed with the `haloport_domain_set_*` functions, freed with
/// `haloport_domain_free`; exchanges copy what they need of it.
pub struct HaloportDomain {
    _opaque: [u8; 0],
}

/// Which neighbours fill the halos.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportNeighbourhood {
    /// The 6 face neighbours: the halo's edges and corners are left as they were (a 7-point
    /// stencil).
    Faces = 0,
    /// Faces and edges (18): the halo's 8 corners are left as they were.
    FacesEdges = 1,
    /// All 26: every halo cell that has a neighbour is filled (a 27-point stencil).
    All = 2,
}

/// A declaration under construction.
pub(crate) struct Declaration {
    grid: [u64; 3],
    procs: Option<[u32; 3]>,
    periodic: [bool; 3],
    halo_lo: [u32; 3],
    halo_hi: [u32; 3],
    pad: [u32; 3],
    neighbourhood: Neighbourhood,
    starts: [Option<Vec<u64>>; 3],
    fields: Vec<FieldShape>,
}

impl Declaration {
    /// The declaration as the Rust API takes it.
    pub(crate) fn spec(&self) -> Outcome<DomainSpec> {
        if self.fields.is_empty() {
            return Err(Failure::invalid(
                "the domain declares no field: add one with haloport_domain_add_field",
            ));
        }
        // Fields of one plain type keep the typed form; any other mix is described per field.
        let plain = |bytes| {
            self.fields
                .iter()
                .all(|f| f.elem_bytes == bytes && f.components == 1)
        };
        let elem = if plain(4) {
            ElemType::F32
        } else {
            ElemType::F64
        };
        let typed = plain(4) || plain(8);
        let splits = self.starts.iter().any(Option::is_some).then(|| {
            let starts = |k: usize| self.starts[k].clone().unwrap_or_else(|| vec![0]);
            Splits {
                x: starts(0),
                y: starts(1),
                z: starts(2),
            }
        });
        Ok(DomainSpec {
            grid: self.grid,
            procs: self.procs,
            periodic: self.periodic,
            halo: self.halo_lo,
            elem,
            fields: u32::try_from(self.fields.len())
                .map_err(|_| Failure::invalid("too many fields"))?,
            layout: Layout {
                halo_lo: Some(self.halo_lo),
                halo_hi: Some(self.halo_hi),
                pad: self.pad,
                neighbourhood: self.neighbourhood,
                splits,
                fields: (!typed).then(|| self.fields.clone()),
            },
        })
    }
}

thread_local! {
    static DOMAINS: Table<Declaration> = Table::new("domain", AtExit::Drop);
}

pub(crate) const DOMAIN: Kind<Declaration> = Kind {
    table: &DOMAINS,
    name: "domain",
};

/// Declares a domain of `grid[3]` cells (x, y, z; x varies fastest in memory) with, until set
/// otherwise (the defaults of Rust's and Python's declarations too): the process grid chosen
/// by `MPI_Dims_create`, every dimension periodic, halos of 1 cell on every side, no padding,
/// all 26 neighbours, and no field (add at least one).
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` for an extent of 0.
#[no_mangle]
pub extern "C" fn haloport_domain_new(
    grid: *const u64,
    out: *mut *mut HaloportDomain,
) -> HaloportStatus {
    entry("haloport_domain_new", || {
        // SAFETY: the header asks for 3 values.
        let grid = unsafe { read3(grid, "grid")? };
        if grid.contains(&0) {
            return Err(Failure::invalid(format!(
                "grid {grid:?}: every extent must be at least 1"
            )));
        }
        let declaration = Declaration {
            grid,
            procs: None,
            periodic: DEFAULT_PERIODIC,
            halo_lo: DEFAULT_HALO,
            halo_hi: DEFAULT_HALO,
            pad: DEFAULT_PAD,
            neighbourhood: DEFAULT_NEIGHBOURHOOD,
            starts: [None, None, None],
            fields: Vec::new(),
        };
        DOMAIN.insert(declaration, out)
    })
}

/// Frees a domain handle. NULL is allowed and does nothing.
#[no_mangle]
pub extern "C" fn haloport_domain_free(domain: *mut HaloportDomain) -> HaloportStatus {
    entry("haloport_domain_free", || {
        if !domain.is_null() {
            DOMAIN.free(domain)?;
        }
        Ok(())
    })
}

/// Runs `f` on the declaration of `domain`, as exported function `function`.
fn change(
    function: &str,
    domain: *mut HaloportDomain,
    f: impl FnOnce(&mut Declaration) -> Outcome,
) -> HaloportStatus {
    entry(function, || DOMAIN.with(domain, f))
}

/// Sets the process grid `procs[3]`; its product must be the communicator's size. All zeros:
/// chosen by `MPI_Dims_create` (the default). A Cartesian communicator's own dimensions are
/// used when it has them.
#[no_mangle]
pub extern "C" fn haloport_domain_set_procs(
    domain: *mut HaloportDomain,
    procs: *const u32,
) -> HaloportStatus {
    change("haloport_domain_set_procs", domain, |d| {
        // SAFETY: the header asks for 3 values.
        let procs = unsafe { read3(procs, "procs")? };
        d.procs = match procs {
            [0, 0, 0] => None,
            p if p.contains(&0) => {
                return Err(Failure::invalid(format!(
                "procs {p:?}: give every dimension at least 1 process, or all 0 to let MPI choose"
            )))
            }
            p => Some(p),
        };
        Ok(())
    })
}

/// Sets which dimensions wrap around: `periodic[3]`, non-zero for periodic (default: all).
#[no_mangle]
pub extern "C" fn haloport_domain_set_periodic(
    domain: *mut HaloportDomain,
    periodic: *const i32,
) -> HaloportStatus {
    change("haloport_domain_set_periodic", domain, |d| {
        // SAFETY: the header asks for 3 values.
        d.periodic = unsafe { read3(periodic, "periodic")? }.map(|p| p != 0);
        Ok(())
    })
}

/// Sets the halo widths in cells on the low side (`lo[3]`) and the high side (`hi[3]`) of each
/// dimension; 0 allowed (nothing arrives on that side). Every rank declares the same widths.
#[no_mangle]
pub extern "C" fn haloport_domain_set_halo(
    domain: *mut HaloportDomain,
    lo: *const u32,
    hi: *const u32,
) -> HaloportStatus {
    change("haloport_domain_set_halo", domain, |d| {
        // SAFETY: the header asks for 3 values each.
        (d.halo_lo, d.halo_hi) = unsafe { (read3(lo, "lo")?, read3(hi, "hi")?) };
        Ok(())
    })
}

/// Sets the padding: `pad[3]` extra allocated cells after the high halo of each dimension
/// (alignment; a pitched allocation's `pitch / cell size - (local + halos)` in x), never read
/// or written by haloport. The allocation is then `lo + local + hi + pad` cells per dimension.
#[no_mangle]
pub extern "C" fn haloport_domain_set_pad(
    domain: *mut HaloportDomain,
    pad: *const u32,
) -> HaloportStatus {
    change("haloport_domain_set_pad", domain, |d| {
        // SAFETY: the header asks for 3 values.
        d.pad = unsafe { read3(pad, "pad")? };
        Ok(())
    })
}

/// Sets which neighbours fill the halos: a `haloport_neighbourhood`.
#[no_mangle]
pub extern "C" fn haloport_domain_set_neighbourhood(
    domain: *mut HaloportDomain,
    neighbourhood: i32,
) -> HaloportStatus {
    change("haloport_domain_set_neighbourhood", domain, |d| {
        d.neighbourhood = match neighbourhood {
            0 => Neighbourhood::Faces,
            1 => Neighbourhood::FacesEdges,
            2 => Neighbourhood::All,
            other => {
                return Err(Failure::invalid(format!(
                    "unknown neighbourhood {other}; known: HALOPORT_NEIGHBOURHOOD_FACES (0), _FACES_EDGES (1), _ALL (2)"
                )))
            }
        };
        Ok(())
    })
}

/// Gives the application's own decomposition (Rust's `Layout::splits`) along dimension `dim`
/// (0 = x, 1 = y, 2 = z): the `count` cells where its parts start, ascending, the first 0.
/// Ranks at process coordinate `i` in that dimension own `[starts[i], starts[i + 1])`. A
/// dimension not given has one part. `count` is at most the grid's extent along `dim`, and
/// compared with it before `starts` is read. Checked when the exchange is made: parts that
/// overlap, leave a gap or lie outside the grid are refused on every rank.
#[no_mangle]
pub extern "C" fn haloport_domain_set_splits(
    domain: *mut HaloportDomain,
    dim: u32,
    starts: *const u64,
    count: usize,
) -> HaloportStatus {
    change("haloport_domain_set_splits", domain, |d| {
        splits(d, dim, starts, count)
    })
}

/// The former name of `haloport_domain_set_splits`, kept for programs written against it.
#[deprecated(note = "call haloport_domain_set_splits")]
#[no_mangle]
pub extern "C" fn haloport_domain_set_parts(
    domain: *mut HaloportDomain,
    dim: u32,
    starts: *const u64,
    count: usize,
) -> HaloportStatus {
    change("haloport_domain_set_parts", domain, |d| {
        splits(d, dim, starts, count)
    })
}

fn splits(d: &mut Declaration, dim: u32, starts: *const u64, count: usize) -> Outcome {
    let extent = *d
        .grid
        .get(dim as usize)
        .ok_or_else(|| Failure::invalid(format!("dimension {dim}: give 0, 1 or 2")))?;
    if count == 0 {
        return Err(Failure::invalid("count is 0: give at least one start"));
    }
    if count as u64 > extent {
        return Err(Failure::invalid(format!(
            "{count} starts along dimension {dim}: the grid has {extent} cells there, and every part at least one"
        )));
    }
    // SAFETY: the header asks for `count` values; `count` is bounded by the grid above.
    d.starts[dim as usize] = Some(unsafe { read_array(starts, count, "starts")? });
    Ok(())
}

/// Adds a field: each cell holds `components` interleaved elements of `elem_bytes` bytes (1, 2,
/// 4, 8 or 16: integers, halves, floats, doubles, complex doubles). Fields are exchanged
/// together, in the order added, one message per neighbour for all of them.
#[no_mangle]
pub extern "C" fn haloport_domain_add_field(
    domain: *mut HaloportDomain,
    elem_bytes: u32,
    components: u32,
) -> HaloportStatus {
    change("haloport_domain_add_field", domain, |d| {
        if ![1, 2, 4, 8, 16].contains(&elem_bytes) {
            return Err(Failure::invalid(format!(
                "element size {elem_bytes} bytes: give 1, 2, 4, 8 or 16"
            )));
        }
        if components == 0 {
            return Err(Failure::invalid("0 components: give at least 1"));
        }
        d.fields.push(FieldShape {
            elem_bytes,
            components,
        });
        Ok(())
    })
}
