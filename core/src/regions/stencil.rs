//! The stencil's launch geometry: which kernel and grid a sweep of a box takes (the point,
//! march and lanes forms), the shell of slabs around an inner box and the tiles that take them,
//! and the wider box a field's f32 lanes take in a step whose halos are in from the start. The
//! stencil application, the host backend's twins and the conformance suite all plan with these.

use crate::backend::{Launch, LaunchDims};
use crate::error::{Error, Result};
use crate::shared::{self, hp_stencil_args};

use super::{blocks_for, check_elem_bytes};

/// Threads a stencil launch runs: the points of its box (0 when it is empty) times the
/// components of a cell.
pub fn stencil_points(args: &hp_stencil_args) -> u64 {
    (0..3)
        .map(|k| args.end[k].saturating_sub(args.begin[k]))
        .fold(u64::from(stencil_components(args)), u64::saturating_mul)
}

/// Components per cell of a stencil launch (0 counts as 1).
pub fn stencil_components(args: &hp_stencil_args) -> u32 {
    args.components.max(1)
}

/// Whether the kernels walk this launch in the march form ([`shared::HP_STENCIL_FORM_MARCH`]):
/// the full 27-point stencil or the 7-point one (every face read) over one component, in
/// blocks of whole warps, over a box of at least `HP_MARCH_X` x `HP_MARCH_ROWS` x
/// `HP_MARCH_MIN_Z` points, in tiles (the kernels' `hp_stencil_marches`; the 7-point stencil
/// in [`Kernel::StencilMarch7`](crate::Kernel::StencilMarch7), see [`stencil7_marching`], or in
/// larger blocks in [`Kernel::Stencil27`](crate::Kernel::Stencil27)). A shell's
/// thinner slabs take the point form in [`Kernel::Stencil27`](crate::Kernel::Stencil27) and
/// march in columns in the march form's own kernel ([`stencil_marching`]).
pub fn stencil_marches(args: &hp_stencil_args, threads: u32) -> bool {
    let extent = |k: usize| args.end[k].saturating_sub(args.begin[k]);
    let shape = stencil_shape(args.shape);
    args.form == shared::HP_STENCIL_FORM_MARCH
        && (shape == shared::HP_STENCIL_FULL
            || shape == shared::HP_STENCIL_FACES | shared::HP_STENCIL_FULL)
        && stencil_components(args) == 1
        && threads % shared::HP_MARCH_X == 0
        && extent(0) >= u64::from(shared::HP_MARCH_X)
        && extent(1) >= u64::from(shared::HP_MARCH_ROWS)
        && extent(2) >= u64::from(shared::HP_MARCH_MIN_Z)
}

/// Whether a sweep of `args` with `threads` a block runs the march form's own kernel
/// ([`Kernel::StencilMarching`](crate::Kernel::StencilMarching)): the full 27-point stencil over
/// one component in the march form, in blocks of whole warps up to `HP_MARCHING_MAX_THREADS`,
/// for 4- and 8-byte elements, over a box of at least `HP_MARCH_MIN_Z` planes. A box thick
/// enough for tiles ([`stencil_marches`]) marches in tiles; a thinner one (a shell's x and y
/// slabs) in columns of `HP_SLAB_Z` planes, a thread each (the kernels' `hp_stencil27_slab`).
pub fn stencil_marching(args: &hp_stencil_args, threads: u32) -> bool {
    let extent = |k: usize| args.end[k].saturating_sub(args.begin[k]);
    args.form == shared::HP_STENCIL_FORM_MARCH
        && stencil_shape(args.shape) == shared::HP_STENCIL_FULL
        && stencil_components(args) == 1
        && threads % shared::HP_MARCH_X == 0
        && threads > 0
        && threads <= shared::HP_MARCHING_MAX_THREADS
        && matches!(args.elem_bytes, 4 | 8)
        && extent(2) >= u64::from(shared::HP_MARCH_MIN_Z)
}

/// Whether a sweep of `args` with `threads` a block runs the 7-point stencil's march form in its
/// own kernel ([`Kernel::StencilMarch7`](crate::Kernel::StencilMarch7)): the 7-point stencil
/// (every face read) over one component of 8-byte elements in a box that marches in tiles
/// ([`stencil_marches`]), in blocks of whole warps up to `HP_MARCHING_MAX_THREADS`. Larger
/// blocks, and f32, march in [`Kernel::Stencil27`](crate::Kernel::Stencil27): f32 was 1-3 %
/// slower in the kernel of its own (`HP_MARCH7_MIN_BLOCKS`).
pub fn stencil7_marching(args: &hp_stencil_args, threads: u32) -> bool {
    stencil_shape(args.shape) == shared::HP_STENCIL_FACES | shared::HP_STENCIL_FULL
        && stencil_marches(args, threads)
        && threads > 0
        && threads <= shared::HP_MARCHING_MAX_THREADS
        && args.elem_bytes == 8
}

/// Whether a sweep of `args` with `threads` a block runs the march form's f32 tiles in lanes of
/// 4 points ([`Kernel::StencilMarch32`](crate::Kernel::StencilMarch32), `HP_LANES_POINTS`):
/// 4-byte elements where [`stencil_marching`] and [`stencil_marches`] say so, both fields at the
/// same [`lanes_phase`], and rows of a multiple of 4 elements (every lane's 4 points one aligned
/// 16-byte vector; an application pads its rows: the layout's `pad`) whose lanes read only the
/// field ([`lanes_reach_the_field`]), or rows of 2 mod 4 in planes of a multiple of 4 in
/// 16-byte aligned fields ([`stencil_lanes_off`]).
pub fn stencil_lanes(args: &hp_stencil_args, threads: u32) -> bool {
    let points = u64::from(shared::HP_LANES_POINTS);
    let phase = lanes_phase(args);
    args.elem_bytes == 4
        && stencil_marching(args, threads)
        && stencil_marches(args, threads)
        && args.in_ % 4 == 0
        && args.out % 4 == 0
        && (args.out / 4) % points == phase
        && if args.alloc[0] % points == 0 {
            lanes_reach_the_field(args)
        } else {
            phase == 0 && stencil_lanes_off(args)
        }
}

/// Where the 16-byte vectors of an f32 field start: the elements between the 16-byte boundary
/// at or before the field's first element and that element (0 in a 16-byte aligned field, 1 in
/// one 4 bytes past a boundary). With rows of a multiple of 4 elements the lanes' tiles start
/// at the columns `x` where `x + phase` is a multiple of 4 (the kernels' `hp_lanes_view`).
pub fn lanes_phase(args: &hp_stencil_args) -> u64 {
    (args.in_ / 4) % u64::from(shared::HP_LANES_POINTS)
}

/// The box of `args` as the lanes walk it: both fields seen from their 16-byte boundary at or
/// before their first element ([`lanes_phase`] elements earlier), the box's columns shifted as
/// far, so that its vectors start where x is a multiple of 4 (the kernels' `hp_lanes_view`).
/// Columns may then pass the row's length: the rows follow one another in memory.
pub(crate) fn lanes_view(args: &hp_stencil_args) -> hp_stencil_args {
    let phase = lanes_phase(args);
    hp_stencil_args {
        in_: args.in_ - 4 * phase,
        out: args.out - 4 * phase,
        begin: [args.begin[0] + phase, args.begin[1], args.begin[2]],
        end: [args.end[0] + phase, args.end[1], args.end[2]],
        ..*args
    }
}

/// Whether the lanes over `args`'s box (rows of a multiple of 4 elements) read only the field's
/// own elements: in a field whose vectors start before its first element ([`lanes_phase`] >
/// 0), the first tile's vector in the box's first row read (y and z one before the box) must
/// not start before it, nor the last lane's vector in the last row read end after the field
/// (the kernels' `hp_lanes_reach`). A 16-byte aligned field holds whole vectors.
pub fn lanes_reach_the_field(args: &hp_stencil_args) -> bool {
    let points = u64::from(shared::HP_LANES_POINTS);
    let phase = lanes_phase(args);
    let view = lanes_view(args);
    let first = view.begin[0] / points * points;
    // Lane 0 also reads x - 1 where x > 0; a lane at or before the box's end reads its vector.
    let lowest = first - u64::from(first > 0);
    let last = view.end[0] / points * points + points - 1;
    let rows_before = args.begin[1] >= 2 || args.begin[2] >= 2;
    let rows_after = args.end[1] + 1 < args.alloc[1] || args.end[2] + 1 < args.alloc[2];
    phase == 0 || ((lowest >= phase || rows_before) && (last - phase < args.alloc[0] || rows_after))
}

/// Whether the lanes take `args`'s rows in their off form: rows of 2 mod 4 elements in planes
/// of a multiple of 4 (odd rows' vectors start two points after even rows'; the rows beside a
/// lane's are read two points off and shuffled into place), a box from x >= 2 and from y or
/// z >= 2 (a lane's reads two points before its own stay after the allocation's start). The
/// kernels' `hp_stencil_lanes_off`.
pub fn stencil_lanes_off(args: &hp_stencil_args) -> bool {
    let points = u64::from(shared::HP_LANES_POINTS);
    args.alloc[0] % points == 2
        && args.alloc[1] % 2 == 0
        && args.begin[0] >= 2
        && (args.begin[1] >= 2 || args.begin[2] >= 2)
}

/// The cells of padding after each row of `args`'s allocation that would give it
/// [`stencil_lanes`], where only its rows' length keeps it from them; `None` where it has them
/// or misses them for another reason (its element type, shape or box).
pub fn lanes_padding(args: &hp_stencil_args, threads: u32) -> Option<u64> {
    let points = u64::from(shared::HP_LANES_POINTS);
    let short = (points - args.alloc[0] % points) % points;
    let padded = hp_stencil_args {
        alloc: [args.alloc[0] + short, args.alloc[1], args.alloc[2]],
        ..*args
    };
    (short > 0 && !stencil_lanes(args, threads) && stencil_lanes(&padded, threads)).then_some(short)
}

/// The launch of one sweep of `args` with `threads` a block, and its grid: the 7-point
/// stencil's march kernel where [`stencil7_marching`] says so, a block per tile; where
/// [`stencil_marching`] says so, the march form's own kernels: in a box thick enough for tiles
/// ([`stencil_marches`]) a block per tile of its element type's shape, f64 tiles in
/// [`Kernel::StencilMarch64`](crate::Kernel::StencilMarch64), f32 tiles in lanes of 4 points
/// where [`stencil_lanes`] says so; in a slab a thread per column of
/// `HP_SLAB_Z` planes. Else [`Kernel::Stencil27`](crate::Kernel::Stencil27) with
/// [`stencil_blocks`].
pub fn stencil_launch(args: &hp_stencil_args, threads: u32) -> (Launch<'_>, LaunchDims) {
    let seven = stencil7_marching(args, threads);
    if seven || !stencil_marching(args, threads) {
        let dims = LaunchDims {
            blocks: stencil_blocks(args, threads),
            threads,
        };
        let launch = if seven {
            Launch::StencilMarch7(args)
        } else {
            Launch::Stencil27(args)
        };
        return (launch, dims);
    }
    if !stencil_marches(args, threads) {
        let extent = |k: usize| args.end[k].saturating_sub(args.begin[k]);
        let columns = extent(0)
            .saturating_mul(extent(1))
            .saturating_mul(extent(2).div_ceil(u64::from(shared::HP_SLAB_Z)));
        let dims = LaunchDims {
            blocks: blocks_for(columns, threads, 1),
            threads,
        };
        return (Launch::StencilMarching(args), dims);
    }
    if stencil_lanes(args, threads) {
        return (Launch::StencilMarch32(args), lanes_dims(args, threads));
    }
    let (launch, (rows, cols, depth)) = if args.elem_bytes == 8 {
        (
            Launch::StencilMarch64(args),
            (
                shared::HP_MARCH64_ROWS,
                shared::HP_MARCH64_COLS,
                shared::HP_MARCH64_Z,
            ),
        )
    } else {
        (
            Launch::StencilMarching(args),
            (
                shared::HP_MARCH32_ROWS,
                shared::HP_MARCH32_COLS,
                shared::HP_MARCH32_Z,
            ),
        )
    };
    let dims = LaunchDims {
        blocks: march_tiles(args, threads, rows, cols, depth),
        threads,
    };
    (launch, dims)
}

/// The march form's tiles over `args`'s box: `cols` columns a thread (32 apart, or side by side
/// in the lanes), `rows` rows a thread, `depth` planes; at least one.
fn march_tiles(args: &hp_stencil_args, threads: u32, rows: u32, cols: u32, depth: u32) -> u32 {
    let extent = |k: usize| args.end[k].saturating_sub(args.begin[k]);
    let tile_rows = u64::from(threads / shared::HP_MARCH_X * rows);
    let tiles = extent(0).div_ceil(u64::from(shared::HP_MARCH_X * cols))
        * extent(1).div_ceil(tile_rows)
        * extent(2).div_ceil(u64::from(depth));
    u32::try_from(tiles.max(1)).unwrap_or(u32::MAX)
}

/// The first x of the lanes' tiles over `args`'s box in their [`lanes_view`] ([`stencil_lanes`];
/// the kernels' `first_x` in `hp_stencil27_lanes`): its first column rounded down to a multiple
/// of `HP_LANES_POINTS`, in the off form from 2 columns earlier (odd rows' lanes sit 2 after
/// even rows').
fn lanes_first_x(view: &hp_stencil_args) -> u64 {
    let points = u64::from(shared::HP_LANES_POINTS);
    let first = view.begin[0] - if stencil_lanes_off(view) { 2 } else { 0 };
    first / points * points
}

/// Where the lanes' tiles over `args`'s box would end (exclusive, in the field's columns) if the
/// box reached `x_end`: after the last of the 128-point tiles from the first that `x_end - 1`
/// lies in.
pub fn lanes_tiles_end(args: &hp_stencil_args, x_end: u64) -> u64 {
    let width = u64::from(shared::HP_MARCH_X * shared::HP_LANES_POINTS);
    let phase = lanes_phase(args);
    let first = lanes_first_x(&lanes_view(args));
    first + (x_end + phase - first).div_ceil(width) * width - phase
}

/// The grid of [`Kernel::StencilMarch32`](crate::Kernel::StencilMarch32) over `args`: the march
/// form's tiles (a row a warp, `HP_LANES_POINTS` points a lane, `HP_LANES_Z` planes) from
/// [`lanes_first_x`] (the kernel's `hp_stencil27_lanes`).
fn lanes_dims(args: &hp_stencil_args, threads: u32) -> LaunchDims {
    let view = lanes_view(args);
    let aligned = hp_stencil_args {
        begin: [lanes_first_x(&view), view.begin[1], view.begin[2]],
        ..view
    };
    LaunchDims {
        blocks: march_tiles(
            &aligned,
            threads,
            1,
            shared::HP_LANES_POINTS,
            shared::HP_LANES_Z,
        ),
        threads,
    }
}

/// How [`Kernel::StencilMarch64Shell`](crate::Kernel::StencilMarch64Shell) tiles a step's
/// inner box with the shell's x and y slabs (`HP_SHELL_READY` in the shared header): the box's
/// columns in tiles of `HP_MARCH_X` (the last tile's spare lanes taking the x slabs at
/// `end[0]` and `begin[0] - 1`), the rows from `begin[1] - 1` to `end[1] + 1`, and the box's
/// planes in chunks of `HP_MARCH64_Z`. Tiles are numbered x fastest, then y, then z: the
/// kernel's numbering, which its list of unfinished tiles and the fix-up share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellTiles {
    begin: [u64; 3],
    end: [u64; 3],
    rows: u64,
    tiles_x: u64,
    tiles_y: u64,
    chunks: u64,
}

impl ShellTiles {
    const WIDTH: u64 = shared::HP_MARCH_X as u64 * shared::HP_MARCH64_COLS as u64;
    const DEPTH: u64 = shared::HP_MARCH64_Z as u64;

    /// The tiling of `args`'s box with `threads` a block, where the kernel takes it: the full
    /// stencil over one component of 8-byte elements in the march form, a box thick enough for
    /// tiles whose width leaves 1 to `HP_MARCH_X - 2` columns in its last tile, two columns of
    /// allocation beside the box in x and y, blocks of whole warps up to
    /// `HP_MARCHING_MAX_THREADS`; with parity 0 or 1 and a list of at least
    /// [`ShellTiles::capacity`] tiles when `args.shell` is set, unless the parity is
    /// `HP_SHELL_HALOS_IN` (a step without an exchange, the words unused). The kernels'
    /// `hp_stencil_shell_fits`, which also needs `args.shell` set for parity 0 or 1 (the
    /// launches' checks ask for it).
    pub fn of(args: &hp_stencil_args, threads: u32) -> Option<Self> {
        let spare = args.end[0].saturating_sub(args.begin[0]) % Self::WIDTH;
        let fits = args.elem_bytes == 8
            && stencil_marching(args, threads)
            && stencil_marches(args, threads)
            && (1..=Self::WIDTH - 2).contains(&spare)
            && (0..2).all(|k| args.begin[k] >= 2 && args.end[k] + 2 <= args.alloc[k]);
        if !fits {
            return None;
        }
        let rows = u64::from(threads / shared::HP_MARCH_X * shared::HP_MARCH64_ROWS);
        let tiles = ShellTiles {
            begin: args.begin,
            end: args.end,
            rows,
            tiles_x: (args.end[0] - args.begin[0]).div_ceil(Self::WIDTH),
            tiles_y: (args.end[1] - args.begin[1] + 2).div_ceil(rows),
            chunks: (args.end[2] - args.begin[2]).div_ceil(Self::DEPTH),
        };
        let listed = args.shell == 0
            || args.parity == shared::HP_SHELL_HALOS_IN
            || (args.parity <= 1 && u64::from(args.shell_capacity) >= tiles.capacity());
        (listed && u32::try_from(tiles.tiles()).is_ok()).then_some(tiles)
    }

    /// Tiles in all (the launch's grid).
    pub fn tiles(&self) -> u64 {
        self.tiles_x * self.tiles_y * self.chunks
    }

    /// Tiles holding slab points (a row's last tile, or a tile of the first or last row): the
    /// most a step lists.
    pub fn capacity(&self) -> u64 {
        let rows_with_slabs = if self.tiles_y >= 2 { 2 } else { 1 };
        self.chunks * (self.tiles_y + (self.tiles_x - 1) * rows_with_slabs)
    }

    /// Whether tile `t` holds slab points.
    pub fn holds_slab(&self, t: u64) -> bool {
        let (i, j) = (t % self.tiles_x, t / self.tiles_x % self.tiles_y);
        i + 1 == self.tiles_x || j == 0 || j + 1 == self.tiles_y
    }

    /// Tile `t`'s slab points as boxes (`[begin, end)` per dimension), and for each box that
    /// is part of an x slab, the halo column beside it (the kernel copies it from `in` to
    /// `out`).
    pub fn slab_boxes(&self, t: u64) -> Vec<([[u64; 2]; 3], Option<u64>)> {
        let (b, e) = (self.begin, self.end);
        let (i, j, c) = (
            t % self.tiles_x,
            t / self.tiles_x % self.tiles_y,
            t / (self.tiles_x * self.tiles_y),
        );
        let y0 = b[1] - 1 + j * self.rows;
        let ys = [y0, (y0 + self.rows).min(e[1] + 1)];
        let zs = [
            b[2] + c * Self::DEPTH,
            (b[2] + (c + 1) * Self::DEPTH).min(e[2]),
        ];
        let xs = [
            b[0] + i * Self::WIDTH,
            (b[0] + (i + 1) * Self::WIDTH).min(e[0]),
        ];
        let mut boxes = Vec::new();
        if i + 1 == self.tiles_x {
            boxes.push(([[b[0] - 1, b[0]], ys, zs], Some(b[0] - 2)));
            boxes.push(([[e[0], e[0] + 1], ys, zs], Some(e[0] + 1)));
        }
        for y in [b[1] - 1, e[1]] {
            if (ys[0]..ys[1]).contains(&y) {
                boxes.push(([xs, [y, y + 1], zs], None));
            }
        }
        boxes
    }
}

/// A grid for [`Kernel::Stencil27`](crate::Kernel::Stencil27) with `threads` per block, at
/// least one block: a block per tile in the march form, else one thread per point.
pub fn stencil_blocks(args: &hp_stencil_args, threads: u32) -> u32 {
    if !stencil_marches(args, threads) {
        return blocks_for(stencil_points(args), threads, 1);
    }
    march_tiles(
        args,
        threads,
        shared::HP_MARCH_ROWS,
        shared::HP_MARCH_COLS,
        shared::HP_MARCH_Z,
    )
}

/// Whether [`Kernel::StencilFused`](crate::Kernel::StencilFused) walks `args`'s box in the
/// march form's f64 tiles (those of [`Kernel::StencilMarch64`](crate::Kernel::StencilMarch64),
/// each tile one box of the device API's box form): the full stencil over one component of
/// 8-byte elements, `threads` a block as [`stencil_marching`] takes them, a box that marches
/// in tiles (the kernels' `hp_fused_marches`). Other boxes take the point form's tiles
/// ([`fused_tiles`]).
pub fn fused_marches(args: &hp_stencil_args, threads: u32) -> bool {
    args.elem_bytes == 8 && stencil_marching(args, threads) && stencil_marches(args, threads)
}

/// The grid of a [`Kernel::StencilFused`](crate::Kernel::StencilFused) launch over `args`'s
/// box with `threads` a block: a block per tile of the form it takes ([`fused_marches`]), at
/// least one; past `u32::MAX` blocks the kernel strides.
pub fn fused_dims(args: &hp_stencil_args, threads: u32) -> LaunchDims {
    let blocks = if fused_marches(args, threads) {
        march_tiles(
            args,
            threads,
            shared::HP_MARCH64_ROWS,
            shared::HP_MARCH64_COLS,
            shared::HP_MARCH64_Z,
        )
    } else {
        u32::try_from(fused_tiles(args, threads).1.max(1)).unwrap_or(u32::MAX)
    };
    LaunchDims { blocks, threads }
}

/// The tile a block of [`Kernel::StencilFused`](crate::Kernel::StencilFused) takes with
/// `threads` threads, and how many tiles cover `args`'s box: per dimension, innermost first,
/// the largest power of two the box's extent needs that the threads left allow (the kernel's
/// `hp_fused_tile`). A grid of one block per tile runs each tile in the first pass: a block
/// left with two tiles doubles the launch's time, which for a thin slab is one pass.
pub fn fused_tiles(args: &hp_stencil_args, threads: u32) -> ([u64; 3], u64) {
    let mut left = u64::from(threads.max(1));
    let mut tile = [1u64; 3];
    for (k, t) in tile.iter_mut().enumerate() {
        let extent = args.end[k].saturating_sub(args.begin[k]);
        while *t < extent && 2 * *t <= left {
            *t *= 2;
        }
        left /= *t;
    }
    let tiles = (0..3)
        .map(|k| args.end[k].saturating_sub(args.begin[k]).div_ceil(tile[k]))
        .product();
    (tile, tiles)
}

/// A stencil's shape (`hp_stencil_args.shape`) with 0 read as the full 27-point stencil.
pub fn stencil_shape(shape: u32) -> u32 {
    if shape == 0 {
        shared::HP_STENCIL_FULL
    } else {
        shape
    }
}

/// Whether a stencil of `shape` reads offset `d` (-1, 0, 1) in dimension `k`: the kernels'
/// `hp_stencil_reads`.
pub fn stencil_reads(shape: u32, k: usize, d: i64) -> bool {
    let shape = stencil_shape(shape);
    let bit = if d < 0 {
        shared::HP_STENCIL_LO
    } else {
        shared::HP_STENCIL_HI
    };
    d == 0 || shape & (bit << k) != 0
}

/// Whether a stencil of `shape` reads the point at offset `d`.
pub fn stencil_reads_point(shape: u32, d: [i64; 3]) -> bool {
    let faces = stencil_shape(shape) & shared::HP_STENCIL_FACES != 0;
    (0..3).all(|k| stencil_reads(shape, k, d[k]))
        && (!faces || d.iter().filter(|&&c| c != 0).count() <= 1)
}

/// How many points a stencil of `shape` reads (the mean's divisor): the kernels'
/// `hp_stencil_count`.
pub fn stencil_count(shape: u32) -> u32 {
    let mut count = 0;
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                count += u32::from(stencil_reads_point(shape, [dx, dy, dz]));
            }
        }
    }
    count
}

/// Checks a stencil launch's argument: the element size, the shape, and that every point of
/// the box has the neighbours the shape reads inside the allocation.
///
/// # Errors
/// [`Error::InvalidInput`] naming the dimension.
pub fn check_stencil(args: &hp_stencil_args) -> Result<()> {
    check_elem_bytes(args.elem_bytes, "stencil")?;
    if args.shape > (shared::HP_STENCIL_FULL | shared::HP_STENCIL_FACES) {
        return Err(Error::InvalidInput(format!(
            "stencil: shape {:#x} has bits no kernel knows",
            args.shape
        )));
    }
    for k in 0..3 {
        let (b, e, a) = (args.begin[k], args.end[k], args.alloc[k]);
        let low = usize::from(stencil_reads(args.shape, k, -1)) as u64;
        let high = usize::from(stencil_reads(args.shape, k, 1)) as u64;
        if b < e && (b < low || e.saturating_add(high) > a) {
            return Err(Error::InvalidInput(format!(
                "stencil: box [{b}, {e}) in dimension {k} needs neighbours outside the \
                 allocated [0, {a})"
            )));
        }
    }
    Ok(())
}

/// Threads per block of the stencil kernel.
pub const STENCIL_THREADS: u32 = 256;

/// A box of cells: `[begin, end)` per dimension.
pub type CellBox = [[u64; 2]; 3];

/// The slabs of `interior` around `inner` (which it holds, or whose ends it clamps), each with
/// the dimension it closes: both ends of z over the whole interior, of y within inner z, of x
/// within inner z and y; empty slabs left out.
pub fn shell_around(interior: &CellBox, inner: &CellBox) -> Vec<(usize, CellBox)> {
    let mut shell = Vec::with_capacity(6);
    for k in (0..3).rev() {
        let mut low = *interior;
        let mut high = *interior;
        for (j, range) in inner.iter().enumerate().skip(k + 1) {
            low[j] = *range;
            high[j] = *range;
        }
        low[k] = [interior[k][0], inner[k][0].min(interior[k][1])];
        high[k] = [inner[k][1].max(low[k][1]), interior[k][1]];
        shell.push((k, low));
        shell.push((k, high));
    }
    shell.retain(|(_, b)| b.iter().all(|[lo, hi]| lo < hi));
    shell
}

/// A field's update in a step without the exchange where its inner box runs in the f32 lanes:
/// the halos are in from the start, so the lanes take the whole interior in y and z (the off
/// form: in z, and in y where its reads allow), and in x from the interior's first cell (or
/// the inner box's, where the lanes need that) to the end of the inner box's last tile. The
/// slabs they leave run beside them: at 512^3 one thin launch (x = 512) where the step's shell
/// takes six (`results/HISTORY.md: h200-f32-depth`).
pub struct HalosIn {
    /// The box the lanes update.
    pub inner: CellBox,
    /// The slabs of the interior around it ([`shell_around`]).
    pub slabs: Vec<CellBox>,
}

impl HalosIn {
    /// For a field of `kind` (both its allocations at `addrs`) whose inner box `inner` (of
    /// the `interior`) runs in the lanes; `None` where it does not, or where the lanes take
    /// no wider box.
    pub fn of(
        kind: &hp_stencil_args,
        addrs: [u64; 2],
        interior: &CellBox,
        inner: &CellBox,
    ) -> Option<Self> {
        let over = |b: &CellBox, at: u64| hp_stencil_args {
            in_: at,
            out: at,
            begin: b.map(|[lo, _]| lo),
            end: b.map(|[_, hi]| hi),
            ..*kind
        };
        let probe = |b: &CellBox| {
            addrs
                .iter()
                .all(|&at| stencil_lanes(&over(b, at), STENCIL_THREADS))
        };
        if inner.iter().any(|[lo, hi]| hi <= lo) || !probe(inner) {
            return None;
        }
        // The box from x_begin, in y from y_begin, the rest of the interior, in x to the end
        // of the inner box's last tile, or up to 3 columns short of it where the lanes' last
        // vectors would pass the field's end (a field whose vectors start before it).
        let wider = |(x_begin, y_begin): (u64, u64)| {
            let mut b = *interior;
            b[0][0] = x_begin;
            b[1][0] = y_begin;
            let end = lanes_tiles_end(&over(&b, addrs[0]), inner[0][1]).min(interior[0][1]);
            (0..u64::from(crate::shared::HP_LANES_POINTS)).map(move |short| {
                b[0][1] = end - short;
                b
            })
        };
        let wide = [
            (interior[0][0], interior[1][0]),
            (inner[0][0], interior[1][0]),
            (inner[0][0], inner[1][0]),
        ]
        .into_iter()
        .flat_map(wider)
        .find(|b| probe(b) && b != inner)?;
        Some(Self {
            inner: wide,
            slabs: shell_around(interior, &wide)
                .into_iter()
                .map(|(_, b)| b)
                .collect(),
        })
    }
}
