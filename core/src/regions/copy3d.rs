//! The copy engine's form of moving a region: a pitched 3-D copy.

use crate::error::{Error, Result};
use crate::shared::hp_region;

/// A 3-D strided copy between device addresses, by the copy engine: `depth` slices of `height`
/// rows of `width` bytes, from a pitched 3-D array at `src` (rows `src_pitch` bytes apart,
/// slices `src_pitch * src_rows` bytes apart) into one at `dst` (likewise). The copy engine's
/// form of packing a region (SPEC 13 compares the two: [`Copy3d::pack_region`]).
///
/// Vendor: CUDA_MEMCPY3D / hipMemcpy3DParms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy3d {
    /// Device address of the source's first byte copied.
    pub src: u64,
    /// Bytes from one source row to the next.
    pub src_pitch: usize,
    /// Rows from one source slice to the next.
    pub src_rows: usize,
    /// Device address of the destination's first byte.
    pub dst: u64,
    /// Bytes from one destination row to the next.
    pub dst_pitch: usize,
    /// Rows from one destination slice to the next.
    pub dst_rows: usize,
    /// Bytes copied per row.
    pub width: usize,
    /// Rows copied per slice.
    pub height: usize,
    /// Slices copied.
    pub depth: usize,
}

impl std::fmt::Display for Copy3d {
    /// `W x H x D bytes from SRC (pitch P, R rows) to DST (pitch P, R rows)`, for errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} x {} x {} bytes from {:#x} (pitch {}, {} rows) to {:#x} (pitch {}, {} rows)",
            self.width,
            self.height,
            self.depth,
            self.src,
            self.src_pitch,
            self.src_rows,
            self.dst,
            self.dst_pitch,
            self.dst_rows
        )
    }
}

impl Copy3d {
    /// Checks the shape: rows no wider than their pitch, slices no taller than their rows, no
    /// size overflowing, a non-empty copy.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `backend` and the copy.
    pub fn check(&self, backend: &str) -> Result<()> {
        let ok = self.width > 0
            && self.height > 0
            && self.depth > 0
            && self.width <= self.src_pitch
            && self.width <= self.dst_pitch
            && self.height <= self.src_rows
            && self.height <= self.dst_rows
            && self.src_span().is_some()
            && self.dst_span().is_some();
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "{backend}: 3-D copy {self:?}: each of width, height, depth must be at least 1, \
                 width at most each pitch, height at most each row count, sizes within usize"
            )))
        }
    }

    fn span(pitch: usize, rows: usize, width: usize, height: usize, depth: usize) -> Option<usize> {
        let slice = pitch.checked_mul(rows)?;
        slice
            .checked_mul(depth.checked_sub(1)?)?
            .checked_add(pitch.checked_mul(height.checked_sub(1)?)?)?
            .checked_add(width)
    }

    /// Bytes from the source's first byte copied to one past its last.
    pub fn src_span(&self) -> Option<usize> {
        Self::span(
            self.src_pitch,
            self.src_rows,
            self.width,
            self.height,
            self.depth,
        )
    }

    /// Bytes from the destination's first byte written to one past its last.
    pub fn dst_span(&self) -> Option<usize> {
        Self::span(
            self.dst_pitch,
            self.dst_rows,
            self.width,
            self.height,
            self.depth,
        )
    }

    /// The copy that packs `region` (elements of `elem_bytes`) from its field into its buffer,
    /// as [`Kernel::PackRegions`](crate::Kernel::PackRegions) does, or `None` where a 3-D copy
    /// cannot express it: the innermost stride is not 1 (with more than one element per row),
    /// rows would overlap, or the slice stride is not a whole number of row strides.
    /// Dimensions with a count of 1 are dropped first, so a face of any orientation fits.
    pub fn pack_region(region: &hp_region, elem_bytes: u32) -> Option<Copy3d> {
        let eb = elem_bytes as usize;
        let count = region.count.map(|c| usize::try_from(c).ok());
        let stride = region.stride.map(|s| usize::try_from(s).ok());
        let c0 = count[0]?;
        if c0 > 1 && stride[0]? != 1 {
            return None;
        }
        let width = c0.checked_mul(eb)?;
        // The outer dimensions that have more than one element, innermost first.
        let outer: Vec<(usize, usize)> = (1..3)
            .filter(|&k| region.count[k] > 1)
            .map(|k| Some((count[k]?, stride[k]?.checked_mul(eb)?)))
            .collect::<Option<_>>()?;
        let (height, pitch, depth, rows) = match outer.as_slice() {
            [] => (1, width, 1, 1),
            [(h, p)] => (*h, *p, 1, *h),
            [(h, p), (d, slice)] => {
                if *p == 0 || slice % p != 0 || slice / p < *h {
                    return None;
                }
                (*h, *p, *d, slice / p)
            }
            _ => return None,
        };
        if pitch < width {
            return None;
        }
        let src = region
            .field
            .checked_add(region.offset.checked_mul(u64::from(elem_bytes))?)?;
        let copy = Copy3d {
            src,
            src_pitch: pitch,
            src_rows: rows,
            dst: region.buffer,
            dst_pitch: width,
            dst_rows: height,
            width,
            height,
            depth,
        };
        copy.check("").ok().map(|()| copy)
    }

    /// The reverse copy (buffer into the field's region), as
    /// [`Kernel::UnpackRegions`](crate::Kernel::UnpackRegions) does.
    pub fn unpack_region(region: &hp_region, elem_bytes: u32) -> Option<Copy3d> {
        let pack = Self::pack_region(region, elem_bytes)?;
        Some(Copy3d {
            src: pack.dst,
            src_pitch: pack.dst_pitch,
            src_rows: pack.dst_rows,
            dst: pack.src,
            dst_pitch: pack.src_pitch,
            dst_rows: pack.src_rows,
            ..pack
        })
    }
}
