//! The flattened description of a noncontiguous region of a field (seed 002): an offset plus
//! three nested counts and element strides, innermost first.
//!
//! This is what a region kernel walks (`hp_region` in `kernels-cu/haloport_shared.h`): one
//! GPU thread per element `e`, which finds its field index with [`Subarray::index_of`]
//! without looking at any other element. Element `e` of a packed buffer is always element `e`
//! of the subarray, so two subarrays with the same number of elements, enumerated in the same
//! logical order, can be packed on one side and unpacked on the other.
//!
//! Invariant: every count is at least 1. [`Subarray::merged`] keeps the elements and their
//! order and only shortens the description, so kernels see longer contiguous runs. A
//! subarray is a `Copy` value with no pointers: the field and buffer addresses are joined to it
//! only when a region table is built for a launch.

use serde::Serialize;

/// A region of a field: `count[2] * count[1] * count[0]` elements, element `(i0, i1, i2)` at
/// index `offset + i0 * stride[0] + i1 * stride[1] + i2 * stride[2]`, enumerated with `i0`
/// fastest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Subarray {
    /// Elements from the field's element 0 to the region's first element.
    pub offset: u64,
    /// Extents, innermost first; each at least 1.
    pub count: [u64; 3],
    /// Element strides, innermost first.
    pub stride: [u64; 3],
}

impl Subarray {
    /// The box `[start, start + count)` of an array of extents `alloc` (x innermost, index
    /// `x + ax * (y + ay * z)`), unmerged: strides `[1, ax, ax * ay]`.
    #[inline]
    pub fn of_box(alloc: [u64; 3], start: [u64; 3], count: [u64; 3]) -> Subarray {
        Subarray {
            offset: start[0] + alloc[0] * (start[1] + alloc[1] * start[2]),
            count,
            stride: [1, alloc[0], alloc[0] * alloc[1]],
        }
    }

    /// Number of elements: `count[0] * count[1] * count[2]`.
    pub fn elems(&self) -> u64 {
        self.count.iter().product()
    }

    /// The same elements in the same order, described with the fewest dimensions.
    ///
    /// Dimensions of count 1 are dropped, and dimension `k + 1` is merged into dimension `k`
    /// when it continues it in memory (`stride[k + 1] == count[k] * stride[k]`). The remaining
    /// dimensions move down; unused ones get count 1 and the stride that would continue the
    /// previous one (`count * stride` of it; 1 when all elements are one). Merging a merged
    /// subarray changes nothing.
    #[inline]
    pub fn merged(self) -> Subarray {
        // The dimensions kept, (count, stride) each, in locals rather than arrays indexed by
        // how many are kept: set-up merges hundreds, and this keeps them in registers.
        let (mut c0, mut s0, mut c1, mut s1, mut c2, mut s2) = (1, 1, 1, 1, 1, 1);
        let mut used = 0;
        for k in 0..3 {
            let (count, stride) = (self.count[k], self.stride[k]);
            if count == 1 {
                continue;
            }
            match used {
                0 => (c0, s0, used) = (count, stride, 1),
                1 if stride == c0 * s0 => c0 *= count,
                1 => (c1, s1, used) = (count, stride, 2),
                2 if stride == c1 * s1 => c1 *= count,
                _ => (c2, s2, used) = (count, stride, 3),
            }
        }
        if used < 2 {
            s1 = c0 * s0;
        }
        if used < 3 {
            s2 = c1 * s1;
        }
        Subarray {
            offset: self.offset,
            count: [c0, c1, c2],
            stride: [s0, s1, s2],
        }
    }

    /// Elements copied as one contiguous run: `count[0]` when `stride[0] == 1`, else 1.
    /// Largest after [`Subarray::merged`].
    pub fn contiguous_run(&self) -> u64 {
        if self.stride[0] == 1 {
            self.count[0]
        } else {
            1
        }
    }

    /// The field index of element `e` (in `[0, elems())`), by the rule of
    /// `kernels-cu/haloport_shared.h`'s `hp_region`: `i0 = e % c0`, `i1 = (e / c0) % c1`,
    /// `i2 = e / (c0 * c1)`, index `offset + i0 * s0 + i1 * s1 + i2 * s2`.
    pub fn index_of(&self, e: u64) -> u64 {
        crate::regions::index_in(self.offset, self.count, self.stride, e)
    }

    /// The largest field index of the region: that of its last element.
    pub fn last_index(&self) -> u64 {
        self.offset
            + (0..3)
                .map(|k| (self.count[k] - 1) * self.stride[k])
                .sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indices(s: &Subarray) -> Vec<u64> {
        (0..s.elems()).map(|e| s.index_of(e)).collect()
    }

    /// Every box of a small array, as the plan builds them.
    fn boxes() -> Vec<Subarray> {
        let alloc = [5, 4, 3];
        let mut out = Vec::new();
        for (sx, cx) in [(0, 1), (1, 3), (0, 5), (4, 1)] {
            for (sy, cy) in [(0, 1), (1, 2), (0, 4)] {
                for (sz, cz) in [(0, 1), (1, 2), (0, 3)] {
                    out.push(Subarray::of_box(alloc, [sx, sy, sz], [cx, cy, cz]));
                }
            }
        }
        out
    }

    #[test]
    fn a_box_enumerates_x_fastest() {
        let s = Subarray::of_box([5, 4, 3], [1, 2, 1], [2, 2, 2]);
        assert_eq!(s.offset, 1 + 5 * (2 + 4));
        assert_eq!(s.stride, [1, 5, 20]);
        assert_eq!(s.elems(), 8);
        let base = s.offset;
        assert_eq!(
            indices(&s),
            vec![
                base,
                base + 1,
                base + 5,
                base + 6,
                base + 20,
                base + 21,
                base + 25,
                base + 26
            ]
        );
        assert_eq!(s.last_index(), base + 26);
    }

    #[test]
    fn merging_keeps_the_elements_and_their_order() {
        for s in boxes() {
            let m = s.merged();
            assert_eq!(m.elems(), s.elems(), "{s:?} -> {m:?}");
            assert_eq!(indices(&m), indices(&s), "{s:?} -> {m:?}");
            assert_eq!(m.last_index(), s.last_index(), "{s:?} -> {m:?}");
            assert_eq!(m.merged(), m, "merging {s:?} twice");
            assert!(m.count.iter().all(|&c| c >= 1));
        }
    }

    /// The merge as first written (arrays indexed by the dimensions kept), which
    /// [`Subarray::merged`] must reproduce exactly.
    fn merged_by_arrays(s: Subarray) -> Subarray {
        let mut count = [1u64; 3];
        let mut stride = [1u64; 3];
        let mut used = 0;
        for k in 0..3 {
            if s.count[k] == 1 {
                continue;
            }
            if used > 0 && s.stride[k] == count[used - 1] * stride[used - 1] {
                count[used - 1] *= s.count[k];
            } else {
                count[used] = s.count[k];
                stride[used] = s.stride[k];
                used += 1;
            }
        }
        for k in used.max(1)..3 {
            stride[k] = count[k - 1] * stride[k - 1];
        }
        Subarray {
            offset: s.offset,
            count,
            stride,
        }
    }

    #[test]
    fn merging_gives_exactly_what_the_array_form_gave() {
        // Every box of a few arrays, and subarrays of any counts and strides (merged or
        // not, strides continuing or not).
        let mut all = boxes();
        for alloc in [[1, 1, 1], [3, 1, 4], [1, 6, 2], [7, 5, 3]] {
            for start in [[0, 0, 0], [0, 0, 1], [2, 0, 1]] {
                for count in [[1, 1, 1], [1, 6, 1], [7, 5, 3], [2, 1, 3], [1, 1, 2]] {
                    all.push(Subarray::of_box(alloc, start, count));
                }
            }
        }
        let values = [1, 2, 3, 6];
        for c in values.iter().flat_map(|&a| values.map(|b| [a, b])) {
            for z in values {
                for stride in [[1, 2, 6], [2, 4, 8], [3, 6, 36], [1, 1, 1], [5, 2, 7]] {
                    all.push(Subarray {
                        offset: 9,
                        count: [c[0], c[1], z],
                        stride,
                    });
                }
            }
        }
        for s in all {
            assert_eq!(s.merged(), merged_by_arrays(s), "{s:?}");
            assert_eq!(s.merged().merged(), merged_by_arrays(s), "{s:?} twice");
        }
    }

    #[test]
    fn merging_joins_contiguous_dimensions() {
        // Whole x rows and whole planes of a 5x4x3 array: one run.
        let all = Subarray::of_box([5, 4, 3], [0, 0, 0], [5, 4, 3]).merged();
        assert_eq!(all.count, [60, 1, 1]);
        assert_eq!(all.stride, [1, 60, 60]);
        assert_eq!(all.contiguous_run(), 60);
        // Whole rows, part of the y range: the rows of a plane merge, planes stay apart.
        let rows = Subarray::of_box([5, 4, 3], [0, 1, 0], [5, 2, 3]).merged();
        assert_eq!(rows.count, [10, 3, 1]);
        assert_eq!(rows.stride, [1, 20, 60]);
        assert_eq!(rows.contiguous_run(), 10);
        // Part of each row: nothing merges.
        let part = Subarray::of_box([5, 4, 3], [1, 1, 1], [3, 2, 2]).merged();
        assert_eq!(part.count, [3, 2, 2]);
        assert_eq!(part.stride, [1, 5, 20]);
        assert_eq!(part.contiguous_run(), 3);
    }

    #[test]
    fn merging_drops_dimensions_of_one_element() {
        // An x face one cell wide: columns of single elements, stride ax, then planes.
        let face = Subarray::of_box([5, 4, 3], [1, 1, 1], [1, 2, 2]).merged();
        assert_eq!(face.count, [2, 2, 1]);
        assert_eq!(face.stride, [5, 20, 40]);
        assert_eq!(face.contiguous_run(), 1);
        // A full-height x face: y and z merge into one strided dimension.
        let full = Subarray::of_box([5, 4, 3], [0, 0, 0], [1, 4, 3]).merged();
        assert_eq!(full.count, [12, 1, 1]);
        assert_eq!(full.stride, [5, 60, 60]);
        // One element.
        let one = Subarray::of_box([5, 4, 3], [2, 3, 1], [1, 1, 1]).merged();
        assert_eq!(one.count, [1, 1, 1]);
        assert_eq!(one.stride, [1, 1, 1]);
        assert_eq!(one.offset, 2 + 5 * (3 + 4));
        assert_eq!(one.contiguous_run(), 1);
    }
}
