/*
 * hp_stencil.cuh: the stencil application's kernels, written once for CUDA and HIP.
 *
 *   hp_stencil27       one Jacobi sweep of the 27-point stencil over a box (the application)
 *   hp_stencil27_marching, hp_stencil27_march64, hp_stencil27_march32   its march form
 *                      (haloport_shared.h)
 *   hp_stencil7_marching  the 7-point stencil's march form
 *   hp_stencil27_march64_shell, hp_stencil27_shell_ready, hp_stencil27_shell_fixup   the inner
 *                      box taking its shell's slabs
 *   hp_stencil_cells   cells of several components
 *
 * Included by the stencil entries (kernels-cu/haloport_stencil.cu,
 * kernels-hip/haloport_stencil.hip), a compilation unit apart from the exchange's kernels so
 * that the compilers build both side by side. The host backend mirrors them in
 * backend-host/src/region_kernels.rs; the semantics are those of the comments on
 * hp_stencil_args in haloport_shared.h.
 *
 * Launch convention: a 1-D grid over the box's points, x fastest; threads stride by
 * gridDim.x * blockDim.x, so any grid size covers the box (haloport_core::regions::
 * stencil_blocks gives one thread per point).
 */
#ifndef HP_STENCIL_CUH
#define HP_STENCIL_CUH

#include <stddef.h>

#include "hp_compat.h"
#include "haloport_shared.h"

/* Whether a stencil of `shape` reads offset d (-1, 0, 1) in dimension k. */
HP_DEVICE bool hp_stencil_reads(uint32_t shape, int k, int d) {
    return d == 0 || (shape & ((d < 0 ? HP_STENCIL_LO : HP_STENCIL_HI) << k)) != 0u;
}

/* How many points a stencil of `shape` reads. */
HP_DEVICE uint32_t hp_stencil_count(uint32_t shape) {
    uint32_t reach[3];
    for (int k = 0; k < 3; ++k) {
        reach[k] = (uint32_t)hp_stencil_reads(shape, k, -1) + (uint32_t)hp_stencil_reads(shape, k, 1);
    }
    if (shape & HP_STENCIL_FACES) return 1u + reach[0] + reach[1] + reach[2];
    return (1u + reach[0]) * (1u + reach[1]) * (1u + reach[2]);
}

/* One term of a partial sum that starts from its first term: the stencil's order
 * (haloport_shared.h) adds nothing to 0. `any` says whether `sum` holds a term yet (a constant
 * in the full stencil's unrolled loops, so no select is left there). */
template <typename T>
HP_DEVICE void hp_sum_in(T& sum, bool& any, T v) {
    sum = any ? sum + v : v;
    any = true;
}

/* The sum of the points around `c` that `shape` reads, in the stencil's one order
 * (haloport_shared.h): per row (dz, dy) its x terms from dx = -1, per plane dz its row sums from
 * dy = -1, then the plane sums from dz = -1, each partial sum starting from its first term.
 * Neighbours lie sx (x), sy (y) and sz (z) elements away. FULL: all 27 points, no test per
 * point: ((r(-1) + r(0)) + r(1)) at every level. */
template <typename T, bool FULL>
HP_DEVICE T hp_stencil_sum(const T* __restrict__ c, int64_t sx, int64_t sy, int64_t sz,
                           uint32_t shape) {
    const bool faces = !FULL && (shape & HP_STENCIL_FACES) != 0u;
    T total = T(0);
    bool in_total = false;
#pragma unroll
    for (int dz = -1; dz <= 1; ++dz) {
        if (!FULL && !hp_stencil_reads(shape, 2, dz)) continue;
        T plane = T(0);
        bool in_plane = false;
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
            if (!FULL && !hp_stencil_reads(shape, 1, dy)) continue;
            if (faces && dz != 0 && dy != 0) continue;
            const T* row = c + (dy * sy + dz * sz);
            T sum = T(0);
            bool in_row = false;
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
                if (!FULL && !hp_stencil_reads(shape, 0, dx)) continue;
                if (faces && dx != 0 && (dy != 0 || dz != 0)) continue;
                hp_sum_in(sum, in_row, row[dx * sx]);
            }
            hp_sum_in(plane, in_plane, sum);
        }
        hp_sum_in(total, in_total, plane);
    }
    return total;
}

/* out[p] = hp_stencil_sum(in at p) * (T(1) / T(count)): the same IEEE operations in the same
 * order as the march form, the components form and the host twin, so all give the same bits.
 * I is the type of the point numbering (uint32_t when the box and the grid fit, as for
 * regions). FULL: all 27 points. */
template <typename T, typename I, bool FULL>
HP_DEVICE void hp_stencil27_as(const hp_stencil_args& a, I n) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const I bx = (I)(a.end[0] - a.begin[0]);
    const I by = (I)(a.end[1] - a.begin[1]);
    const uint32_t shape = FULL ? HP_STENCIL_FULL : a.shape;
    const T scale = T(1) / T(FULL ? 27u : hp_stencil_count(shape));
    const I step = (I)gridDim.x * (I)blockDim.x;
    for (I p = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; p < n; p += step) {
        const I rest = p / bx;
        const uint64_t x = a.begin[0] + (uint64_t)(p % bx);
        const uint64_t y = a.begin[1] + (uint64_t)(rest % by);
        const uint64_t z = a.begin[2] + (uint64_t)(rest / by);
        const uint64_t centre = x + ax * (y + ay * z);
        out[centre] =
            hp_stencil_sum<T, FULL>(in + centre, 1, (int64_t)ax, (int64_t)(ax * ay), shape) *
            scale;
    }
}

template <typename T, bool FULL>
HP_DEVICE void hp_stencil27_points(const hp_stencil_args& a) {
    const uint64_t n =
        (a.end[0] - a.begin[0]) * (a.end[1] - a.begin[1]) * (a.end[2] - a.begin[2]);
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    if (n + step <= 0xffffffffull) {
        hp_stencil27_as<T, uint32_t, FULL>(a, (uint32_t)n);
    } else {
        hp_stencil27_as<T, uint64_t, FULL>(a, n);
    }
}

/* The plane sums of rows y .. y + ROWS - 1 of one plane (hp_stencil_sum's inner two levels),
 * from `q` at (x, y) of that plane: row sums of rows y - 1 .. y + ROWS, each ((x - 1 + x) +
 * x + 1), then per row ((row - 1 + row) + row + 1), each row sum serving three rows. Only the
 * first `live` of the thread's rows lie inside the box: rows past y + live are not loaded, and
 * the sums of rows past y + live - 1 are garbage the caller never stores. */
template <typename T, int ROWS>
HP_DEVICE void hp_march_plane(T (&sums)[ROWS], const T* __restrict__ q, int64_t ax, int live) {
    T row[ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        if (i <= live + 1) {
            const T* r = q + (i - 1) * ax;
            row[i] = (r[-1] + r[0]) + r[1];
        } else {
            row[i] = T(0);
        }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) sums[i] = (row[i] + row[i + 1]) + row[i + 2];
}

/* The march form's tiles over a box: HP_MARCH_X * COLS x (blockDim.x / HP_MARCH_X * ROWS) x
 * DEPTH points, numbered x fastest, a block per tile, blocks striding over tiles
 * (hp_stencil7_march's). hp_stencil27_march spells the same arithmetic out: through these
 * structs ptxas scheduled hp_stencil27_marching's f32 tiles otherwise (the same 64 registers),
 * 38 % slower at 512^3 on one H200 (results/HISTORY.md: h200-march7b). */
template <int ROWS, int DEPTH, int COLS>
struct hp_march_tiles {
    uint64_t rows, width, tiles_x, tiles_y, tiles, tx, ty;
    HP_DEVICE explicit hp_march_tiles(const hp_stencil_args& a)
        : rows((uint64_t)(blockDim.x / HP_MARCH_X) * ROWS),
          width((uint64_t)HP_MARCH_X * COLS),
          tiles_x((a.end[0] - a.begin[0] + width - 1) / width),
          tiles_y((a.end[1] - a.begin[1] + rows - 1) / rows),
          tiles(tiles_x * tiles_y * ((a.end[2] - a.begin[2] + DEPTH - 1) / DEPTH)),
          tx(threadIdx.x % HP_MARCH_X),
          ty(threadIdx.x / HP_MARCH_X) {}
};

/* One thread's part of march tile t: columns x, x + 32, ... (COLS; column c lies in the box for
 * c < cols, the others read column x: at[c]), rows y .. y + live - 1 of its ROWS, planes z0 ..
 * z0 + depth - 1 from (x, y, z0), index `first` of the field. False when the thread has no
 * point in the box (a partial tile). */
template <int ROWS, int DEPTH, int COLS>
struct hp_march_part {
    int cols, live, depth;
    int at[COLS];
    uint64_t first;
    HP_DEVICE bool take(const hp_stencil_args& a, const hp_march_tiles<ROWS, DEPTH, COLS>& g,
                        uint64_t t) {
        const uint64_t rest = t / g.tiles_x;
        const uint64_t x = a.begin[0] + (t % g.tiles_x) * g.width + g.tx;
        const uint64_t y = a.begin[1] + (rest % g.tiles_y) * g.rows + g.ty * ROWS;
        if (x >= a.end[0] || y >= a.end[1]) return false;
        cols = (int)((a.end[0] - x + HP_MARCH_X - 1) / HP_MARCH_X);
#pragma unroll
        for (int c = 0; c < COLS; ++c) at[c] = c < cols ? c * (int)HP_MARCH_X : 0;
        live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        const uint64_t z0 = a.begin[2] + (rest / g.tiles_y) * DEPTH;
        depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        first = x + a.alloc[0] * (y + a.alloc[1] * z0);
        return true;
    }
};

/* Fused mode's store of an updated cell wherever the neighbours' halos take it (the box's
 * messages, haloport_box_begin), by element size. */
HP_DEVICE void hp_fused_store(const haloport_box_targets* t, uint32_t x, uint32_t y, uint32_t z,
                              double v) {
    haloport_box_store_f64(t, x, y, z, v);
}

HP_DEVICE void hp_fused_store(const haloport_box_targets* t, uint32_t x, uint32_t y, uint32_t z,
                              float v) {
    haloport_box_store_f32(t, x, y, z, v);
}

/* Begins a fused tile's box [lo, hi) (every thread of the block, with the same box): false, and
 * no barrier, where the box is quiet (no neighbour needs a cell of it: the tile stores and
 * reports nothing); else its messages gathered into `t` (haloport_box_begin), true. */
HP_DEVICE bool hp_fused_box_begin(const haloport_fused* d, const uint32_t lo[3],
                                  const uint32_t hi[3], haloport_box_targets* t) {
    if (haloport_box_quiet(d, lo, hi)) return false;
    haloport_box_begin(d, lo, hi, t);
    return true;
}

/* A fused march tile's box (hp_stencil27_march with FUSED): width x rows x depth cells from
 * begin + (ox, oy) at plane z0, cut at the box's end; begun as hp_fused_box_begin does. */
HP_DEVICE bool hp_march_box_begin(const hp_stencil_args& a, const haloport_fused* d, uint64_t ox,
                                  uint64_t oy, uint64_t z0, uint64_t width, uint64_t rows,
                                  uint64_t depth, haloport_box_targets* t) {
    const uint64_t first[3] = {a.begin[0] + ox, a.begin[1] + oy, z0};
    const uint64_t size[3] = {width, rows, depth};
    uint32_t lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = (uint32_t)first[k];
        hi[k] = (uint32_t)(first[k] + size[k] < a.end[k] ? first[k] + size[k] : a.end[k]);
    }
    return hp_fused_box_begin(d, lo, hi, t);
}

/* The full 27-point stencil over one component, marching in z (HP_STENCIL_FORM_MARCH): tiles of
 * HP_MARCH_X * COLS x (blockDim.x / HP_MARCH_X * ROWS) x DEPTH points, a block per tile,
 * blocks striding over tiles. A thread owns ROWS rows of the columns x, x + 32, ... (COLS of
 * them) and walks the tile's planes: per plane and column it loads rows y - 1 .. y + ROWS (3
 * loads a row: (ROWS + 2) * 3 / ROWS a point), sums each row once and each plane's three rows
 * once (hp_march_plane), and keeps the plane sums of the two planes before, so a point costs
 * (ROWS + 2) * 2 / ROWS + 4 additions and a product where the point form does 26:
 * hp_stencil_sum's order, the same bits.
 *
 * A column past the box's end (the last tile of a box whose width is no multiple of the tile's)
 * reads column x again (`at`, a select) and stores nothing: no branch lies between the columns'
 * loads, so a plane's loads of every column issue together (one memory latency a plane, not
 * one a column) and the compiler keeps k_wide's registers (results/HISTORY.md: h100-step-wide).
 *
 * With PF > 0, each thread asks L2 for its rows of the plane PF ahead of the one it loads
 * (hp_march_prefetch): the loads in flight then no longer depend on how many warps the
 * registers let an SM hold (HP_MARCH_PREFETCH in haloport_shared.h).
 *
 * FUSED (hp_stencil_fused): each tile is one box of the device API's box form (`targets`, in
 * shared memory). A tile a neighbour needs gathers the messages it feeds, stores each of its
 * cells into them too and reports its cells at its end; a quiet tile (haloport_box_quiet)
 * does neither, and meets no barrier. A thread without a point in a tile stays for its
 * barriers instead of moving on. */
template <typename T, int ROWS, int COLS>
HP_DEVICE void hp_march_prefetch(const T* q, int64_t ax, const int (&at)[COLS], int live) {
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            if (i < live) hp_prefetch_l2(q + at[c] + i * ax);
        }
    }
}

template <typename T, int ROWS, int DEPTH, int COLS, int PF, bool FUSED = false>
HP_DEVICE void hp_stencil27_march(const hp_stencil_args& a,
                                  haloport_box_targets* targets = nullptr) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t width = (uint64_t)HP_MARCH_X * COLS;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + width - 1) / width;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x = a.begin[0] + (t % tiles_x) * width + tx;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const bool owns = x < a.end[0] && y < a.end[1];
        if (!FUSED && !owns) continue;
        /* Fused: the tile's box, begun unless quiet (the same answer in every thread). */
        const bool feeds =
            FUSED && hp_march_box_begin(a, (const haloport_fused*)a.fused, t % tiles_x * width,
                                        rest % tiles_y * rows, z0, width, rows, DEPTH, targets);
        if (owns) {
            /* Column c (x + 32 c) lies in the box for c < cols; the others read column x. */
            const int cols = (int)((a.end[0] - x + HP_MARCH_X - 1) / HP_MARCH_X);
            int at[COLS];
#pragma unroll
            for (int c = 0; c < COLS; ++c) at[c] = c < cols ? c * (int)HP_MARCH_X : 0;
            const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
            const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
            const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
            T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
            /* The planes the first PF steps load (planes past the tile's last are never asked
             * for). */
#pragma unroll
            for (int d = 2; d < 2 + PF; ++d) {
                if (d <= depth) hp_march_prefetch<T, ROWS, COLS>(q + d * plane, ax, at, live);
            }
            T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                hp_march_plane(lo[c], q + at[c], ax, live);
                hp_march_plane(mid[c], q + at[c] + plane, ax, live);
            }
            q += 2 * plane;
            for (int z = 0; z < depth; ++z, q += plane, o += plane) {
                if (PF > 0 && z + 1 + PF <= depth) {
                    hp_march_prefetch<T, ROWS, COLS>(q + PF * plane, ax, at, live);
                }
#pragma unroll
                for (int c = 0; c < COLS; ++c) hp_march_plane(hi[c], q + at[c], ax, live);
#pragma unroll
                for (int c = 0; c < COLS; ++c) {
#pragma unroll
                    for (int i = 0; i < ROWS; ++i) {
                        if (c < cols && i < live) {
                            const T v = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                            o[c * (int)HP_MARCH_X + i * ax] = v;
                            if (FUSED && feeds) {
                                hp_fused_store(targets, (uint32_t)x + c * HP_MARCH_X,
                                               (uint32_t)y + i, (uint32_t)z0 + z, v);
                            }
                        }
                        lo[c][i] = mid[c][i];
                        mid[c][i] = hi[c][i];
                    }
                }
            }
        }
        if (FUSED && feeds) haloport_box_done(targets);
    }
}

/* The row sums of one row for a lane's points x .. x + 3 (HP_LANES_POINTS), from `r` at (x, row):
 * the lane's points loaded once (16 bytes), x - 1 and x + 4 from the lanes beside, lanes 0 and
 * 31 of the group loading the group's ends (r[edge]); each ((x - 1 + x) + x + 1), the order of
 * hp_march_plane. */
HP_DEVICE void hp_lanes_row(float (&row)[4], const float* __restrict__ r, int edge, bool end_lane,
                            uint32_t lane) {
    const float4 w = *(const float4*)r;
    float e = 0.0f;
    if (end_lane) e = r[edge];
    float left = hp_shfl_up32(w.w, 1u);
    float right = hp_shfl_down32(w.x, 1u);
    if (lane == 0u) left = e;
    if (lane == 31u) right = e;
    row[0] = (left + w.x) + w.y;
    row[1] = (w.x + w.y) + w.z;
    row[2] = (w.y + w.z) + w.w;
    row[3] = (w.z + w.w) + right;
}

/* The row sums of a row two points off the lane's own (rows of 2 mod 4 elements: the row
 * before and after the lane's, whose vectors start 2 points before and after its points), from
 * `r` at (x, row): its vector at x - 2 (16-byte aligned), x + 2 .. x + 4 from the lane after
 * (lane 31 loads those it needs, up to end[0]: `far` of them); each ((x - 1 + x) + x + 1), the
 * order of hp_march_plane. The vector's x - 2 serves only the lane before (as its x + 2). */
HP_DEVICE void hp_lanes_row_off(float (&row)[4], const float* __restrict__ r, int far,
                                uint32_t lane) {
    const float4 w = *(const float4*)(r - 2);
    float n0 = hp_shfl_down32(w.x, 1u);
    float n1 = hp_shfl_down32(w.y, 1u);
    float n2 = hp_shfl_down32(w.z, 1u);
    if (lane == 31u) {
        n0 = far > 0 ? r[2] : 0.0f;
        n1 = far > 1 ? r[3] : 0.0f;
        n2 = far > 2 ? r[4] : 0.0f;
    }
    row[0] = (w.y + w.z) + w.w;
    row[1] = (w.z + w.w) + n0;
    row[2] = (w.w + n0) + n1;
    row[3] = (n0 + n1) + n2;
}

/* The plane sums of a lane's points in row y from `q` at (x, y) of the plane: ((row y - 1 +
 * row y) + row y + 1), hp_march_plane's order. OFF: the rows beside lie two points off
 * (hp_lanes_row_off). */
template <bool OFF>
HP_DEVICE void hp_lanes_plane(float (&sums)[4], const float* __restrict__ q, int64_t ax, int edge,
                              int far, bool end_lane, uint32_t lane) {
    float below[4], row[4], above[4];
    if (OFF) {
        hp_lanes_row_off(below, q - ax, far, lane);
        hp_lanes_row_off(above, q + ax, far, lane);
    } else {
        hp_lanes_row(below, q - ax, edge, end_lane, lane);
        hp_lanes_row(above, q + ax, edge, end_lane, lane);
    }
    hp_lanes_row(row, q, edge, end_lane, lane);
#pragma unroll
    for (int k = 0; k < 4; ++k) sums[k] = (below[k] + row[k]) + above[k];
}

/* Elements between the 16-byte boundary at or before an f32 field's first element and it
 * (haloport_core::regions::lanes_phase). */
HP_DEVICE uint64_t hp_lanes_phase(const hp_stencil_args& a) {
    return (a.in / 4u) % HP_LANES_POINTS;
}

/* The box of `a` seen from its fields' 16-byte boundaries, its columns shifted as far
 * (haloport_core::regions::lanes_view): its vectors then start where x is a multiple of 4. */
HP_DEVICE hp_stencil_args hp_lanes_view(const hp_stencil_args& a) {
    const uint64_t phase = hp_lanes_phase(a);
    hp_stencil_args v = a;
    v.in = a.in - 4u * phase;
    v.out = a.out - 4u * phase;
    v.begin[0] = a.begin[0] + phase;
    v.end[0] = a.end[0] + phase;
    return v;
}

/* Whether the lanes over the box of `a` (rows of a multiple of 4) read only the field: the first
 * tile's vector (and lane 0's x - 1) in the first row read, and the last lane's vector in the last
 * row read, inside it (haloport_core::regions::lanes_reach_the_field). */
HP_DEVICE bool hp_lanes_reach(const hp_stencil_args& a) {
    const uint64_t phase = hp_lanes_phase(a);
    const hp_stencil_args v = hp_lanes_view(a);
    const uint64_t first = v.begin[0] / HP_LANES_POINTS * HP_LANES_POINTS;
    const uint64_t lowest = first - (first > 0u ? 1u : 0u);
    const uint64_t last = v.end[0] / HP_LANES_POINTS * HP_LANES_POINTS + HP_LANES_POINTS - 1u;
    const bool rows_before = a.begin[1] >= 2u || a.begin[2] >= 2u;
    const bool rows_after = a.end[1] + 1u < a.alloc[1] || a.end[2] + 1u < a.alloc[2];
    return phase == 0u ||
           ((lowest >= phase || rows_before) && (last - phase < a.alloc[0] || rows_after));
}

/* The full 27-point stencil over one f32 component in lanes of 4 points (HP_LANES_* in
 * haloport_shared.h): tiles of 128 points from begin[0] rounded down to a multiple of 4, by
 * blockDim.x / 32 rows, by HP_LANES_Z planes, a block per tile, blocks striding over tiles.
 * A group of 32 lanes takes one row of a tile (so every lane of a group shuffles, or none); a
 * lane whose points all lie past end[0] reads the tile's first points instead (nothing it
 * holds is stored or taken by a stored point: the lane before takes its first point only when
 * that lane's last point lies in the box, and then this lane's points start at or before
 * end[0]). Lane 0's x - 1 lies at or after begin[0] - 4 >= -3: a read of column x0 - 1 >= 0 is
 * taken only where x0 > 0 (x0 = 0 is never in the box).
 *
 * OFF: rows of 2 mod 4 elements in planes of a multiple of 4 (haloport_core::regions::
 * stencil_lanes): a row's vectors start where x + ax * y is a multiple of 4, so odd rows' lanes
 * sit two points after even rows' (tiles from begin[0] - 2 rounded down to a multiple of 4, plus
 * 2 in odd rows), and the rows beside a lane's come two points off (hp_lanes_row_off). A lane
 * then also reads its vectors while its x - 2 lies at or before end[0], since the lane before
 * takes x - 2 .. x from it; its loads stay inside the allocation, which holds whole vectors
 * (begin[1] or begin[2] >= 2: x - 2 >= -2 never reaches before the first row).
 *
 * A field whose vectors start before its first element (rows of a multiple of 4 only) is walked
 * in its view from that 16-byte boundary (hp_lanes_view); hp_lanes_reach keeps the reads in it.
 *
 * The same sums in the same order as hp_stencil27_march: the same bits. */
template <bool OFF>
HP_DEVICE void hp_stencil27_lanes(const hp_stencil_args& field) {
    const hp_stencil_args a = hp_lanes_view(field);
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t first_x =
        (OFF ? a.begin[0] - 2u : a.begin[0]) / HP_LANES_POINTS * HP_LANES_POINTS;
    const uint64_t rows = blockDim.x / HP_MARCH_X;
    const uint64_t width = HP_MARCH_X * HP_LANES_POINTS;
    const uint64_t tiles_x = (a.end[0] - first_x + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((a.end[2] - a.begin[2] + HP_LANES_Z - 1) / HP_LANES_Z);
    const uint32_t lane = threadIdx.x % HP_MARCH_X;
    const uint64_t ty = threadIdx.x / HP_MARCH_X;
    const bool end_lane = lane == 0u || lane == HP_MARCH_X - 1u;
    const float scale = 1.0f / 27.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty;
        if (y >= a.end[1]) continue; /* the whole group */
        const uint64_t x0 = first_x + (t % tiles_x) * width + (OFF && (y & 1u) ? 2u : 0u);
        uint64_t x = x0 + lane * HP_LANES_POINTS;
        const bool used = x <= a.end[0] + (OFF ? 2u : 0u);
        if (!used) x = x0;
        /* Lane 0 reads x - 1 (none at x = 0), lane 31 x + 4 where its last point is in the box. */
        const int edge = lane == 0u ? (x > 0u ? -1 : 0)
                                    : (x + HP_LANES_POINTS <= a.end[0] ? (int)HP_LANES_POINTS : 0);
        /* OFF: of x + 2 .. x + 4, those at or before end[0] (lane 31 loads them). */
        const int far = x + 2u > a.end[0] ? 0 : (int)(a.end[0] - x - 1u < 3u ? a.end[0] - x - 1u : 3u);
        const bool whole = used && x >= a.begin[0] && x + HP_LANES_POINTS <= a.end[0];
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * HP_LANES_Z;
        const int depth = a.end[2] - z0 < (uint64_t)HP_LANES_Z ? (int)(a.end[2] - z0) : (int)HP_LANES_Z;
        const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 2; d < 2 + (int)HP_LANES_PREFETCH; ++d) {
            if (d <= depth) hp_prefetch_l2(q + d * plane);
        }
        float lo[4], mid[4], hi[4];
        hp_lanes_plane<OFF>(lo, q, ax, edge, far, end_lane, lane);
        hp_lanes_plane<OFF>(mid, q + plane, ax, edge, far, end_lane, lane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (z + 1 + (int)HP_LANES_PREFETCH <= depth) {
                hp_prefetch_l2(q + (int)HP_LANES_PREFETCH * plane);
            }
            hp_lanes_plane<OFF>(hi, q, ax, edge, far, end_lane, lane);
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                r[k] = ((lo[k] + mid[k]) + hi[k]) * scale;
                lo[k] = mid[k];
                mid[k] = hi[k];
            }
            if (whole) {
                *(float4*)o = make_float4(r[0], r[1], r[2], r[3]);
            } else if (used) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = r[k];
                }
            }
        }
    }
}

/* Appends tile t to the step's list of tiles whose slab points the fix-up updates (at most
 * `capacity`). Not inlined: the march's loop keeps the registers and schedule it has without
 * it. */
__device__ __noinline__ void hp_shell_list(uint32_t* words, uint32_t parity, uint32_t capacity,
                                           uint32_t t) {
    const uint32_t k = atomicAdd(words + HP_SHELL_COUNT + parity, 1u);
    if (k < capacity) words[HP_SHELL_LIST + parity * capacity + k] = t;
}

/* hp_stencil27_march's f64 tiles also taking the x and y slabs around the box
 * (hp_stencil27_march64_shell; HP_SHELL_READY in haloport_shared.h): rows from begin[1] - 1 to
 * end[1] + 1, and in a row's last tile the lanes at x = end[0] and end[0] + 1 (the latter
 * reading and writing x = begin[0] - 1 instead: `at`), each copying the halo point beside its
 * own. A block reads the ready word once; until it is raised the slab points are left and the
 * tile listed. The same sums in the same order as hp_stencil27_march, spelled out apart from it
 * in the shape that ran at 636-641 us over the box at 512^3 on one H200 where the same logic
 * inside hp_stencil27_march's template ran at 665-678 us
 * (results/HISTORY.md: h200-shell-timeline). */
template <typename T, int ROWS, int DEPTH, int COLS, int PF>
HP_DEVICE void hp_stencil27_march_shell(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t width = (uint64_t)HP_MARCH_X * COLS;
    const uint64_t yb = a.begin[1] - 1, ye = a.end[1] + 1;
    const uint64_t bx = a.end[0] - a.begin[0], by = ye - yb, bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + width - 1) / width;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    uint32_t* words = (uint32_t*)a.shell;
    __shared__ uint32_t ready_seen;
    if (threadIdx.x == 0) {
        ready_seen = a.parity == HP_SHELL_HALOS_IN
                         ? 1u
                         : hp_load_acquire_system(words + HP_SHELL_READY + a.parity);
    }
    __syncthreads();
    const bool ready = ready_seen != 0u;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t txi = t % tiles_x, tyi = rest % tiles_y;
        if (!ready && threadIdx.x == 0 &&
            (txi + 1 == tiles_x || tyi == 0 || tyi + 1 == tiles_y)) {
            hp_shell_list(words, a.parity, a.shell_capacity, (uint32_t)t);
        }
        const uint64_t x = a.begin[0] + txi * width + tx;
        const uint64_t y = yb + tyi * rows + ty * ROWS;
        if (x > a.end[0] + 1 || y >= ye) continue;
        /* Column c: `at` its offset from x (the x-low slab's lane reads begin[0] - 1), `halo`
         * the side of a slab lane's halo point, bit c of `valid` that its points are stored. */
        int at[COLS], halo[COLS];
        uint32_t valid = 0;
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const uint64_t xc = x + c * HP_MARCH_X;
            halo[c] = xc == a.end[0] ? 1 : xc == a.end[0] + 1 ? -1 : 0;
            at[c] = xc < a.end[0] + 1    ? c * (int)HP_MARCH_X
                    : xc == a.end[0] + 1 ? (int)((int64_t)a.begin[0] - 1 - (int64_t)x)
                                         : 0;
            if (xc < a.end[0] || (ready && xc <= a.end[0] + 1)) valid |= 1u << c;
        }
        const int live = ye - y < (uint64_t)ROWS ? (int)(ye - y) : ROWS;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 2; d < 2 + PF; ++d) {
            if (d <= depth) hp_march_prefetch<T, ROWS, COLS>(q + d * plane, ax, at, live);
        }
        T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            hp_march_plane(lo[c], q + at[c], ax, live);
            hp_march_plane(mid[c], q + at[c] + plane, ax, live);
        }
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (PF > 0 && z + 1 + PF <= depth) {
                hp_march_prefetch<T, ROWS, COLS>(q + PF * plane, ax, at, live);
            }
#pragma unroll
            for (int c = 0; c < COLS; ++c) hp_march_plane(hi[c], q + at[c], ax, live);
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    const bool row_ok = ready || (y + i >= a.begin[1] && y + i < a.end[1]);
                    if ((valid >> c & 1u) && i < live && row_ok) {
                        o[at[c] + i * ax] = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                        if (halo[c] != 0) {
                            /* q is a plane ahead of o. */
                            const int64_t h = at[c] + halo[c] + i * ax;
                            o[h] = q[h - plane];
                        }
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}

/* One plane of the 7-point march for rows y .. y + ROWS - 1 from `q` at (x, y): each row's
 * centre, and its in-plane sum ((y - 1 + ((x - 1 + x) + x + 1)) + y + 1) (hp_stencil_sum's
 * order for the faces). Rows past the first `live` are not loaded (their results unused). */
template <typename T, int ROWS>
HP_DEVICE void hp_march7_plane(T (&centre)[ROWS], T (&flat)[ROWS], const T* __restrict__ q,
                               int64_t ax, int live) {
    T col[ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) col[i] = i <= live + 1 ? q[(i - 1) * ax] : T(0);
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
        const T* r = q + i * ax;
        const T row = i < live ? (r[-1] + col[i + 1]) + r[1] : T(0);
        flat[i] = (col[i] + row) + col[i + 2];
        centre[i] = col[i + 1];
    }
}

/* The 7-point stencil (faces, every side read) over one component, marching in z in the same
 * tiles as hp_stencil27_march: per plane and column a thread loads the centres of rows y - 1 ..
 * y + ROWS and x - 1, x + 1 of its own rows (3 ROWS + 2 loads for ROWS points, where the point
 * form makes 7 a point) and keeps the centres of the plane before and the in-plane sums of its
 * own: ((z - 1 + in-plane) + z + 1), hp_stencil_sum's order, the same bits. */
template <typename T, int ROWS, int DEPTH, int COLS>
HP_DEVICE void hp_stencil7_march(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const hp_march_tiles<ROWS, DEPTH, COLS> g(a);
    const T scale = T(1) / T(7u);
    for (uint64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
        hp_march_part<ROWS, DEPTH, COLS> p;
        if (!p.take(a, g, t)) continue;
        const T* q = in + p.first;
        T* o = out + p.first;
        T below[COLS][ROWS], centre[COLS][ROWS], flat[COLS][ROWS];
        T above[COLS][ROWS], next[COLS][ROWS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                below[c][i] = i < p.live ? q[p.at[c] + i * ax - plane] : T(0);
            }
            hp_march7_plane(centre[c], flat[c], q + p.at[c], ax, p.live);
        }
        for (int z = 0; z < p.depth; ++z, q += plane, o += plane) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                hp_march7_plane(above[c], next[c], q + p.at[c] + plane, ax, p.live);
            }
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (c < p.cols && i < p.live) {
                        o[c * (int)HP_MARCH_X + i * ax] =
                            ((below[c][i] + flat[c][i]) + above[c][i]) * scale;
                    }
                    below[c][i] = centre[c][i];
                    centre[c][i] = above[c][i];
                    flat[c][i] = next[c][i];
                }
            }
        }
    }
}

/* The full 27-point stencil over one component for a box too thin for march tiles but at least
 * HP_MARCH_MIN_Z planes deep (a shell's x and y slabs, HP_STENCIL_FORM_MARCH): a thread per
 * (x, y) column of HP_SLAB_Z planes, threads numbered x fastest (so along y in a slab one
 * point wide), marching in z: per plane it loads the 9 points of rows y - 1 .. y + 1
 * (hp_march_plane with one row) and keeps the plane sums of the two planes before, so a point
 * costs 9 (HP_SLAB_Z + 2) / HP_SLAB_Z loads where the point form makes 27: in a slab one
 * point wide every lane's row is a line of its own, so the loads, not the additions, set the
 * time. hp_stencil_sum's order, the same bits. Threads stride over the columns, so any grid
 * covers the box. I numbers the columns (uint32_t when they fit). */
template <typename T, typename I, int DEPTH>
HP_DEVICE void hp_stencil27_slab_as(const hp_stencil_args& a, I n) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const I bx = (I)(a.end[0] - a.begin[0]);
    const I by = (I)(a.end[1] - a.begin[1]);
    const T scale = T(1) / T(27u);
    const I step = (I)gridDim.x * (I)blockDim.x;
    for (I u = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; u < n; u += step) {
        const I rest = u / bx;
        const uint64_t x = a.begin[0] + (uint64_t)(u % bx);
        const uint64_t y = a.begin[1] + (uint64_t)(rest % by);
        const uint64_t z0 = a.begin[2] + (uint64_t)(rest / by) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        T lo[1], mid[1], hi[1];
        hp_march_plane(lo, q, ax, 1);
        hp_march_plane(mid, q + plane, ax, 1);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            hp_march_plane(hi, q, ax, 1);
            *o = ((lo[0] + mid[0]) + hi[0]) * scale;
            lo[0] = mid[0];
            mid[0] = hi[0];
        }
    }
}

template <typename T, int DEPTH>
HP_DEVICE void hp_stencil27_slab(const hp_stencil_args& a) {
    const uint64_t n = (a.end[0] - a.begin[0]) * (a.end[1] - a.begin[1]) *
                       ((a.end[2] - a.begin[2] + DEPTH - 1) / DEPTH);
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    if (n + step <= 0xffffffffull) {
        hp_stencil27_slab_as<T, uint32_t, DEPTH>(a, (uint32_t)n);
    } else {
        hp_stencil27_slab_as<T, uint64_t, DEPTH>(a, n);
    }
}

/* Whether a launch of the full stencil over one component marches in tiles (haloport_core::
 * regions::stencil_marches): the march form asked for, blocks of whole warps, and a box of at
 * least HP_MARCH_X x HP_MARCH_ROWS x HP_MARCH_MIN_Z points (one column a thread). A thinner box
 * (a shell's slab) takes the point form in hp_stencil27, where every thread has a point
 * (marching it in tiles would leave most lanes idle), and marches in columns
 * (hp_stencil27_slab) in hp_stencil27_marching. */
HP_DEVICE bool hp_stencil_marches(const hp_stencil_args& a) {
    return a.form == HP_STENCIL_FORM_MARCH && blockDim.x % HP_MARCH_X == 0u &&
           a.end[0] - a.begin[0] >= HP_MARCH_X && a.end[1] - a.begin[1] >= HP_MARCH_ROWS &&
           a.end[2] - a.begin[2] >= HP_MARCH_MIN_Z;
}

template <typename T>
HP_DEVICE void hp_stencil_shaped(const hp_stencil_args& a) {
    if (a.shape == 0u || a.shape == HP_STENCIL_FULL) {
        if (hp_stencil_marches(a)) {
            hp_stencil27_march<T, HP_MARCH_ROWS, HP_MARCH_Z, HP_MARCH_COLS, 0>(a);
        } else {
            hp_stencil27_points<T, true>(a);
        }
    } else if (a.shape == (HP_STENCIL_FACES | HP_STENCIL_FULL) && hp_stencil_marches(a)) {
        hp_stencil7_march<T, HP_MARCH_ROWS, HP_MARCH_Z, HP_MARCH_COLS>(a);
    } else {
        hp_stencil27_points<T, false>(a);
    }
}

/* Cells of `components` interleaved elements (components > 1): a thread per (cell,
 * component); component c of the cell at index i is element i * components + c, the sum of the
 * same component of the neighbours the shape reads, in hp_stencil_sum's order, times 1 /
 * count. Kept apart from hp_stencil27_as so that the one-component kernel keeps its
 * registers. */
template <typename T>
HP_DEVICE void hp_stencil_components(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const uint64_t bx = a.end[0] - a.begin[0];
    const uint64_t by = a.end[1] - a.begin[1];
    const uint64_t comps = a.components;
    const int64_t c64 = (int64_t)comps;
    const uint32_t shape = a.shape == 0u ? HP_STENCIL_FULL : a.shape;
    const T scale = T(1) / T(hp_stencil_count(shape));
    const uint64_t n = bx * by * (a.end[2] - a.begin[2]) * comps;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t p = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += step) {
        const uint64_t cell = p / comps, comp = p % comps;
        const uint64_t rest = cell / bx;
        const uint64_t x = a.begin[0] + cell % bx;
        const uint64_t y = a.begin[1] + rest % by;
        const uint64_t z = a.begin[2] + rest / by;
        const uint64_t centre = (x + ax * (y + ay * z)) * comps + comp;
        out[centre] = hp_stencil_sum<T, false>(in + centre, c64, (int64_t)ax * c64,
                                               (int64_t)(ax * ay) * c64, shape) *
                      scale;
    }
}

/* True when the stencil's box holds no point (every stencil entry then returns at once). */
HP_DEVICE bool hp_stencil_box_empty(const hp_stencil_args& a) {
    return a.end[0] <= a.begin[0] || a.end[1] <= a.begin[1] || a.end[2] <= a.begin[2];
}

/* The march form alone (HP_MARCHING_MAX_THREADS in haloport_shared.h): the host launches it
 * only for the full stencil over one component, a box of at least HP_MARCH_MIN_Z planes, and
 * blocks of whole warps (haloport_core::regions::stencil_marching). A box thick enough for
 * tiles (hp_stencil_marches) marches in tiles; a thinner one (a shell's x or y slab) in
 * columns (hp_stencil27_slab). The host sends f64 tiles to hp_stencil27_march64; this entry's
 * own f64 tiles (HP_MARCHING64_*) stay, so that its registers, and with them its f32 code, stay
 * those measured. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS)
    hp_stencil27_marching(hp_stencil_args a) {
    if (hp_stencil_box_empty(a)) return;
    const bool tiles = hp_stencil_marches(a);
    if (a.elem_bytes == 8) {
        if (tiles) {
            hp_stencil27_march<double, HP_MARCHING64_ROWS, HP_MARCHING64_Z, HP_MARCHING64_COLS,
                               0>(a);
        } else {
            hp_stencil27_slab<double, HP_SLAB_Z>(a);
        }
    } else if (a.elem_bytes == 4) {
        if (tiles) {
            hp_stencil27_march<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a);
        } else {
            hp_stencil27_slab<float, HP_SLAB_Z>(a);
        }
    }
}

/* The march form's f64 tiles, alone in their entry with a floor of resident blocks
 * (HP_MARCH64_MIN_BLOCKS in haloport_shared.h): the host launches it only for 8-byte elements
 * and a box that marches in tiles (haloport_core::regions::stencil_marches); anything else
 * updates nothing, and the host refuses such a launch up front. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH64_MIN_BLOCKS)
    hp_stencil27_march64(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || a.elem_bytes != 8 || !hp_stencil_marches(a)) return;
    hp_stencil27_march<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS,
                       (int)HP_MARCH_PREFETCH>(a);
}

/* The 7-point stencil's march form (HP_MARCH7_MIN_BLOCKS in haloport_shared.h): the host
 * launches it only for the 7-point stencil over one component of f64 in a box that marches in
 * tiles, in blocks of whole warps up to HP_MARCHING_MAX_THREADS (haloport_core::regions::
 * stencil7_marching); anything else updates nothing, and the host refuses such a launch up
 * front. Larger blocks, and f32, march in hp_stencil27; the f32 branch stays so that the
 * entry's code stays the one measured. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH7_MIN_BLOCKS)
    hp_stencil7_marching(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || a.shape != (HP_STENCIL_FACES | HP_STENCIL_FULL) ||
        a.components > 1u || !hp_stencil_marches(a)) {
        return;
    }
    if (a.elem_bytes == 8) {
        hp_stencil7_march<double, HP_MARCH_ROWS, HP_MARCH_Z, HP_MARCH_COLS>(a);
    } else if (a.elem_bytes == 4) {
        hp_stencil7_march<float, HP_MARCH_ROWS, HP_MARCH_Z, HP_MARCH_COLS>(a);
    }
}

/* Whether the rows of `a` are 2 mod 4 elements long in planes of a multiple of 4, a box from
 * x >= 2 and y or z >= 2: hp_stencil27_lanes' OFF form. */
HP_DEVICE bool hp_stencil_lanes_off(const hp_stencil_args& a) {
    return a.alloc[0] % HP_LANES_POINTS == 2u && a.alloc[1] % 2u == 0u && a.begin[0] >= 2u &&
           (a.begin[1] >= 2u || a.begin[2] >= 2u);
}

/* Whether hp_stencil27_march32 takes the box of `a` (haloport_core::regions::stencil_lanes):
 * f32, a box that marches in tiles, both fields at the same phase (hp_lanes_phase), and rows a
 * multiple of HP_LANES_POINTS elements (every lane's four points one aligned vector in every
 * row) whose lanes read only the field (hp_lanes_reach), or the OFF form's in 16-byte aligned
 * fields (hp_stencil_lanes_off). */
HP_DEVICE bool hp_stencil_lanes_fit(const hp_stencil_args& a) {
    const uint64_t phase = hp_lanes_phase(a);
    const bool rows = a.alloc[0] % HP_LANES_POINTS == 0u ? hp_lanes_reach(a)
                                                         : phase == 0u && hp_stencil_lanes_off(a);
    return a.elem_bytes == 4u && hp_stencil_marches(a) && a.in % 4u == 0u && a.out % 4u == 0u &&
           (a.out / 4u) % HP_LANES_POINTS == phase && rows;
}

/* The march form's f32 tiles in lanes of 4 points (HP_LANES_* in haloport_shared.h): the host
 * launches it only where haloport_core::regions::stencil_lanes says the box and fields fit (a
 * block per tile), and refuses any other launch up front; here such a launch updates nothing. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS)
    hp_stencil27_march32(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || !hp_stencil_lanes_fit(a)) return;
    if (a.alloc[0] % HP_LANES_POINTS == 0u) {
        hp_stencil27_lanes<false>(a);
    } else {
        hp_stencil27_lanes<true>(a);
    }
}

/* Whether the box of `a` can take its x and y slabs into its tiles (HP_SHELL_READY in
 * haloport_shared.h; haloport_core::regions::ShellTiles::of): control words and a set given, or
 * a step without an exchange (HP_SHELL_HALOS_IN), and the last tile of a row has the two lanes
 * the x slabs need. */
HP_DEVICE bool hp_stencil_shell_fits(const hp_stencil_args& a) {
    const uint64_t spare = (a.end[0] - a.begin[0]) % (HP_MARCH_X * HP_MARCH64_COLS);
    return (a.parity == HP_SHELL_HALOS_IN || (a.shell != 0u && a.parity < 2u)) && spare >= 1u &&
           spare <= HP_MARCH_X * HP_MARCH64_COLS - 2u && a.begin[0] >= 2u &&
           a.begin[1] >= 2u && a.end[0] + 2u <= a.alloc[0] && a.end[1] + 2u <= a.alloc[1];
}

/* hp_stencil27_march64 taking the step's x and y slabs too (HP_SHELL_READY): the host launches
 * it only where haloport_core::regions::ShellTiles::of says the box fits, a block per tile. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH64_MIN_BLOCKS)
    hp_stencil27_march64_shell(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || a.elem_bytes != 8 || !hp_stencil_marches(a) ||
        !hp_stencil_shell_fits(a)) {
        return;
    }
    hp_stencil27_march_shell<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS,
                             (int)HP_MARCH_PREFETCH>(a);
}

/* Raises this step's ready word (one thread), after the exchange's finish: the halos are in. */
extern "C" __global__ void hp_stencil27_shell_ready(hp_stencil_args a) {
    if (a.shell == 0u || a.parity > 1u || blockIdx.x != 0u || threadIdx.x != 0u) return;
    hp_store_release_system((uint32_t*)a.shell + HP_SHELL_READY + a.parity, 1u);
}

/* After hp_stencil27_march64_shell and the ready word: the slab points of the tiles it listed,
 * as columns marching the tile's planes (hp_march_plane with one row: 9 loads a plane, the
 * same bits), every thread of the grid striding over (listed tile, column) items: per tile the
 * x-low and x-high slabs' columns of its rows (in a row's last tile), then the y slabs' columns
 * of its width (where its rows hold one). Then the other set is cleared for the next step
 * (nothing reads it now: the step before is done, the next not begun). blockDim.x is the box
 * launch's (it sets the tiles' rows). */
extern "C" __global__ void hp_stencil27_shell_fixup(hp_stencil_args a) {
    if (!hp_stencil_shell_fits(a) || a.parity > 1u || a.elem_bytes != 8 ||
        hp_stencil_box_empty(a)) {
        return;
    }
    uint32_t* words = (uint32_t*)a.shell;
    if (blockIdx.x == 0u && threadIdx.x == 0u) {
        words[HP_SHELL_READY + (a.parity ^ 1u)] = 0u;
        words[HP_SHELL_COUNT + (a.parity ^ 1u)] = 0u;
    }
    const uint32_t listed = words[HP_SHELL_COUNT + a.parity];
    const uint64_t count = listed < a.shell_capacity ? listed : a.shell_capacity;
    const uint64_t width = HP_MARCH_X * HP_MARCH64_COLS;
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * HP_MARCH64_ROWS;
    const uint64_t y_begin = a.begin[1] - 1, y_end = a.end[1] + 1;
    const uint64_t tiles_x = (a.end[0] - a.begin[0] + width - 1) / width;
    const uint64_t tiles_y = (y_end - y_begin + rows - 1) / rows;
    const double* __restrict__ in = (const double*)a.in;
    double* __restrict__ out = (double*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const double scale = 1.0 / 27.0;
    /* Items of a tile: 2 x rows x-slab columns, then 2 x width y-slab columns. */
    const uint64_t per_tile = 2u * rows + 2u * width;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t item = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; item < count * per_tile;
         item += step) {
        const uint64_t t = words[HP_SHELL_LIST + a.parity * a.shell_capacity + item / per_tile];
        const uint64_t j = item % per_tile;
        const uint64_t rest = t / tiles_x, ti = t % tiles_x;
        const uint64_t x0 = a.begin[0] + ti * width, y0 = y_begin + (rest % tiles_y) * rows;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * HP_MARCH64_Z;
        uint64_t x, y;
        int halo = 0;
        if (j < 2u * rows) {
            /* An x slab's column: row y0 + j % rows, in a row's last tile only. */
            if (ti + 1 != tiles_x) continue;
            y = y0 + j % rows;
            x = j < rows ? a.begin[0] - 1 : a.end[0];
            halo = j < rows ? -1 : 1;
        } else {
            /* A y slab's column: x0 + k, in the row y_begin or end[1] if the tile holds it. */
            const uint64_t k = (j - 2u * rows) % width;
            y = j - 2u * rows < width ? y_begin : a.end[1];
            x = x0 + k;
            if (x >= a.end[0] || y < y0 || y >= y0 + rows) continue;
        }
        if (y >= y_end) continue;
        const int depth = a.end[2] - z0 < (uint64_t)HP_MARCH64_Z ? (int)(a.end[2] - z0)
                                                                  : (int)HP_MARCH64_Z;
        const double* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        double* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        double lo[1], mid[1], hi[1];
        hp_march_plane(lo, q, ax, 1);
        hp_march_plane(mid, q + plane, ax, 1);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            hp_march_plane(hi, q, ax, 1);
            *o = ((lo[0] + mid[0]) + hi[0]) * scale;
            /* The halo copy the tile's slab lane would have made. */
            if (halo != 0) o[halo] = q[halo - plane];
            lo[0] = mid[0];
            mid[0] = hi[0];
        }
    }
}

extern "C" __global__ void hp_stencil27(hp_stencil_args a) {
    if (hp_stencil_box_empty(a)) return;
    if (a.elem_bytes == 8) {
        hp_stencil_shaped<double>(a);
    } else if (a.elem_bytes == 4) {
        hp_stencil_shaped<float>(a);
    }
}

/* hp_stencil27 over cells of a.components > 1 components: a kernel of its own, so that the
 * one-component kernel keeps its registers. */
extern "C" __global__ void hp_stencil_cells(hp_stencil_args a) {
    if (hp_stencil_box_empty(a)) return;
    if (a.elem_bytes == 8) {
        hp_stencil_components<double>(a);
    } else if (a.elem_bytes == 4) {
        hp_stencil_components<float>(a);
    }
}

/* A fused launch's tile in the point form: per dimension, innermost first, the largest power
 * of two the box's extent needs that the block's threads left still allow (a z slab of 512 x
 * 256 cells takes tiles of 256 x 1 x 1, an x slab one cell thick 1 x 256 x 1); the host
 * launches a block per tile (haloport_core::regions::fused_tiles). */
HP_DEVICE void hp_fused_tile(const uint64_t extent[3], uint32_t threads, uint32_t tile[3]) {
    uint32_t left = threads;
    for (int k = 0; k < 3; ++k) {
        uint32_t t = 1u;
        while ((uint64_t)t < extent[k] && 2u * t <= left) t *= 2u;
        tile[k] = t;
        left /= t;
    }
}

/* The fused step's update in the point form: hp_stencil27_as's sums over the box in tiles, a
 * block's tile at a time; each updated cell also stored wherever a neighbour's halo takes it,
 * through the messages the tile feeds (haloport_box_begin: one or a few, looked up once per
 * tile), and the tile's cells reported per message (haloport_box_done). */
template <typename T, bool FULL>
HP_DEVICE void hp_stencil_fused_as(const hp_stencil_args& a, haloport_box_targets* targets) {
    const haloport_fused* d = (const haloport_fused*)a.fused;
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const uint32_t shape = FULL ? HP_STENCIL_FULL : a.shape;
    const T scale = T(1) / T(FULL ? 27u : hp_stencil_count(shape));
    uint64_t extent[3], tiles[3];
    uint32_t tile[3];
    for (int k = 0; k < 3; ++k) extent[k] = a.end[k] - a.begin[k];
    hp_fused_tile(extent, blockDim.x, tile);
    for (int k = 0; k < 3; ++k) tiles[k] = (extent[k] + tile[k] - 1u) / tile[k];
    const uint64_t all = tiles[0] * tiles[1] * tiles[2];
    /* The thread's cell in its tile; threads past the tile's cells only join the block's
     * synchronization. */
    const uint32_t ox = threadIdx.x % tile[0];
    const uint32_t oy = (threadIdx.x / tile[0]) % tile[1];
    const uint32_t oz = threadIdx.x / (tile[0] * tile[1]);
    for (uint64_t b = blockIdx.x; b < all; b += gridDim.x) {
        const uint64_t at[3] = {b % tiles[0], (b / tiles[0]) % tiles[1], b / (tiles[0] * tiles[1])};
        uint32_t lo[3], hi[3];
        for (int k = 0; k < 3; ++k) {
            const uint64_t first = a.begin[k] + at[k] * tile[k];
            lo[k] = (uint32_t)first;
            hi[k] = (uint32_t)(first + tile[k] < a.end[k] ? first + tile[k] : a.end[k]);
        }
        const bool feeds = hp_fused_box_begin(d, lo, hi, targets);
        const uint32_t x = lo[0] + ox, y = lo[1] + oy, z = lo[2] + oz;
        if (oz < tile[2] && x < hi[0] && y < hi[1] && z < hi[2]) {
            const uint64_t centre = x + ax * (y + ay * (uint64_t)z);
            const T v =
                hp_stencil_sum<T, FULL>(in + centre, 1, (int64_t)ax, (int64_t)(ax * ay), shape) *
                scale;
            out[centre] = v;
            if (feeds) hp_fused_store(targets, x, y, z, v);
        }
        if (feeds) haloport_box_done(targets);
    }
}

template <typename T>
HP_DEVICE void hp_stencil_fused_typed(const hp_stencil_args& a, haloport_box_targets* targets) {
    if (a.shape == 0u || a.shape == HP_STENCIL_FULL) {
        hp_stencil_fused_as<T, true>(a, targets);
    } else {
        hp_stencil_fused_as<T, false>(a, targets);
    }
}

/* Whether a fused launch takes the march form's f64 tiles (hp_stencil27_march64's, each tile
 * a box of haloport_box_begin): the full stencil over f64 in a box that marches
 * (haloport_core::regions::fused_marches). */
HP_DEVICE bool hp_fused_marches(const hp_stencil_args& a) {
    return a.elem_bytes == 8u && (a.shape == 0u || a.shape == HP_STENCIL_FULL) &&
           a.components <= 1u && blockDim.x <= HP_MARCHING_MAX_THREADS && hp_stencil_marches(a);
}

/* The fused step's update (fused mode's fields: one component per cell, indices that fit 32
 * bits): f64 boxes that march in hp_stencil27_march64's tiles and its floor of resident
 * blocks, a block per tile (a whole interior in one launch); any other box in the point form,
 * a 1-D grid of any size covering it. */
extern "C" __global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH64_MIN_BLOCKS)
    hp_stencil_fused(hp_stencil_args a) {
    __shared__ haloport_box_targets targets;
    if (hp_stencil_box_empty(a) || a.fused == 0u) return;
    if (hp_fused_marches(a)) {
        hp_stencil27_march<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS,
                           (int)HP_MARCH_PREFETCH, true>(a, &targets);
    } else if (a.elem_bytes == 8) {
        hp_stencil_fused_typed<double>(a, &targets);
    } else if (a.elem_bytes == 4) {
        hp_stencil_fused_typed<float>(a, &targets);
    }
}

#endif /* HP_STENCIL_CUH */
