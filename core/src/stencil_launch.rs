//! The stencil's launch geometry beyond one box: the shell of slabs around an inner box, and
//! the wider box a field's f32 lanes take in a step whose halos are in from the start. The
//! stencil application and the backends' conformance suite both plan launches with these.

use crate::regions::{lanes_tiles_end, stencil_lanes};
use crate::shared::hp_stencil_args;

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
