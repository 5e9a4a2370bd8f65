/*
 * shell_timeline.cu: where the step's compute (inner box + thin shell) spends the time the inner
 * box alone does not, and what other shapes of the shell's launches give. One GPU, an N^3 field
 * with a halo of 1, the kernels of kernels-cu/hp_regions.cuh as built.
 *
 * 1. Timeline: the compute-only step as core/src/stencil.rs queues it (the box on an inner
 *    stream, each of the six slabs on a side stream of its own, all joined on the step's
 *    stream), with each launch's first block start and last block end stamped from %globaltimer
 *    (wrappers of the production bodies), printed relative to the box's first block.
 * 2. Timings (median of `reps`, checked bit for bit against the point form over the whole
 *    interior where the variant covers it):
 *      box            the inner box alone
 *      whole          one march launch over the whole interior (reads the halo: the ideal)
 *      step-prod      box + six slabs as production (production kernels, no stamps)
 *      step-slabx     the same, the x slabs in the shuffle kernel (one row a lane)
 *      step-one-D     box + the whole shell in ONE launch on one side stream (z slabs in march
 *                     tiles, y slabs in columns, x slabs in the shuffle kernel; D planes a
 *                     column)
 *      shell-*        the same shells alone
 * 3-7. Where else the x and y slabs could go (edge, wide, remap, remap2; see the README).
 * 8.   The production kernels in the production compute-only step (f64).
 * SECTIONS (environment) picks sections, e.g. SECTIONS=8; all when unset.
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu shell_timeline.cu -o shell_timeline
 * usage: shell_timeline [N] [reps]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#include "hp_kernels.cuh"
#include "hp_regions.cuh"

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* ---- stamps ---- */
struct stamp {
    unsigned long long first, last;
};
__device__ __forceinline__ void stamp_in(stamp* s) {
    if (threadIdx.x == 0) atomicMin(&s->first, (unsigned long long)hp_timer());
}
__device__ __forceinline__ void stamp_out(stamp* s) {
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&s->last, (unsigned long long)hp_timer());
}
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box64_st(hp_stencil_args a, stamp* s) {
    stamp_in(s);
    hp_stencil27_march<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH>(a);
    stamp_out(s);
}
__global__ void __launch_bounds__(256) k_marching_st(hp_stencil_args a, stamp* s) {
    stamp_in(s);
    const bool tiles = hp_stencil_marches(a);
    if (a.elem_bytes == 8) {
        if (tiles) hp_stencil27_march<double, HP_MARCHING64_ROWS, HP_MARCHING64_Z, HP_MARCHING64_COLS, 0>(a);
        else hp_stencil27_slab<double, HP_SLAB_Z>(a);
    } else {
        if (tiles) hp_stencil27_march<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a);
        else hp_stencil27_slab<float, HP_SLAB_Z>(a);
    }
    stamp_out(s);
}

/* ---- the x slab, one row a lane, rows beside by shuffle (slab-x.diff of
 * results/2026-11-26-h200x2-slab-x): groups of 32 lanes per 30 rows and D planes, over
 * [blk, blocks) of the launch's blocks. ---- */
template <typename T, int D>
__device__ __forceinline__ void slab_x(const hp_stencil_args& a, uint64_t blk, uint64_t blocks) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t by = a.end[1] - a.begin[1];
    const uint64_t groups = (by + 29) / 30;
    const uint64_t items = groups * ((a.end[2] - a.begin[2] + D - 1) / D);
    const uint32_t lane = threadIdx.x % 32u;
    const uint64_t step = blocks * (blockDim.x / 32u);
    const T scale = T(1) / T(27u);
    for (uint64_t w = blk * (blockDim.x / 32u) + threadIdx.x / 32u; w < items; w += step) {
        const uint64_t y = a.begin[1] + (w % groups) * 30 - 1u + lane;
        const uint64_t z0 = a.begin[2] + (w / groups) * D;
        const int depth = a.end[2] - z0 < (uint64_t)D ? (int)(a.end[2] - z0) : D;
        const bool loads = y <= a.end[1];
        const bool stores = lane >= 1u && lane <= 30u && y < a.end[1];
        const T* q = in + (a.begin[0] + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (a.begin[0] + a.alloc[0] * (y + a.alloc[1] * z0));
        auto plane_sum = [&](const T* p) {
            const T row = loads ? (p[-1] + p[0]) + p[1] : T(0);
            return (__shfl_up_sync(0xffffffffu, row, 1) + row) + __shfl_down_sync(0xffffffffu, row, 1);
        };
        T lo = plane_sum(q);
        T mid = plane_sum(q + plane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            const T hi = plane_sum(q);
            if (stores) *o = ((lo + mid) + hi) * scale;
            lo = mid;
            mid = hi;
        }
    }
}
static uint64_t slab_x_blocks(const hp_stencil_args& a, int D) {
    const uint64_t groups = (a.end[1] - a.begin[1] + 29) / 30;
    return (groups * ((a.end[2] - a.begin[2] + D - 1) / D) + 7) / 8;
}
template <typename T>
__global__ void __launch_bounds__(256) k_slab_x(hp_stencil_args a) {
    slab_x<T, 4>(a, blockIdx.x, gridDim.x);
}

/* ---- columns (hp_stencil27_slab's body) over [blk, blocks) ---- */
template <typename T, int D>
__device__ __forceinline__ void slab_cols(const hp_stencil_args& a, uint64_t blk, uint64_t blocks) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1];
    const uint64_t n = bx * by * ((a.end[2] - a.begin[2] + D - 1) / D);
    const T scale = T(1) / T(27u);
    for (uint64_t u = blk * blockDim.x + threadIdx.x; u < n; u += blocks * blockDim.x) {
        const uint64_t rest = u / bx;
        const uint64_t x = a.begin[0] + u % bx;
        const uint64_t y = a.begin[1] + rest % by;
        const uint64_t z0 = a.begin[2] + (rest / by) * D;
        const int depth = a.end[2] - z0 < (uint64_t)D ? (int)(a.end[2] - z0) : D;
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
static uint64_t slab_cols_blocks(const hp_stencil_args& a, int D) {
    return ((a.end[0] - a.begin[0]) * (a.end[1] - a.begin[1]) * ((a.end[2] - a.begin[2] + D - 1) / D) + 255) / 256;
}

/* ---- z slabs one plane deep in 32 x 32 tiles (4 rows a thread), over [blk, blocks) ---- */
template <typename T>
__device__ __forceinline__ void slab_z(const hp_stencil_args& a, uint64_t blk, uint64_t blocks) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (blockDim.x / 32u) * 4u;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1], bz = a.end[2] - a.begin[2];
    const uint64_t tx_n = (bx + 31) / 32, ty_n = (by + rows - 1) / rows, tiles = tx_n * ty_n * bz;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blk; t < tiles; t += blocks) {
        const uint64_t rest = t / tx_n;
        const uint64_t x = a.begin[0] + (t % tx_n) * 32 + threadIdx.x % 32u;
        const uint64_t y = a.begin[1] + (rest % ty_n) * rows + (threadIdx.x / 32u) * 4u;
        const uint64_t z = a.begin[2] + rest / ty_n;
        if (x >= a.end[0] || y >= a.end[1]) continue;
        const int live = a.end[1] - y < 4u ? (int)(a.end[1] - y) : 4;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z));
        T lo[4], mid[4], hi[4];
        hp_march_plane(lo, q, ax, live);
        hp_march_plane(mid, q + plane, ax, live);
        hp_march_plane(hi, q + 2 * plane, ax, live);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i < live) o[i * ax] = ((lo[i] + mid[i]) + hi[i]) * scale;
        }
    }
}
static uint64_t slab_z_blocks(const hp_stencil_args& a) {
    return ((a.end[0] - a.begin[0] + 31) / 32) * ((a.end[1] - a.begin[1] + 31) / 32) * (a.end[2] - a.begin[2]);
}

/* ---- the whole shell in one launch: part p takes blocks [first[p], first[p + 1]) ---- */
enum { PART_Z = 0, PART_COLS = 1, PART_X = 2 };
struct shell_args {
    hp_stencil_args box[6];
    uint32_t kind[6];
    uint32_t first[7];
    uint32_t n;
};
template <typename T, int D>
__global__ void __launch_bounds__(256) k_shell(shell_args m) {
    uint32_t p = 0;
    while (p + 1 < m.n && blockIdx.x >= m.first[p + 1]) ++p;
    const uint64_t blk = blockIdx.x - m.first[p], blocks = m.first[p + 1] - m.first[p];
    const hp_stencil_args& a = m.box[p];
    if (m.kind[p] == PART_Z) slab_z<T>(a, blk, blocks);
    else if (m.kind[p] == PART_COLS) slab_cols<T, D>(a, blk, blocks);
    else slab_x<T, D>(a, blk, blocks);
}


/* ---- the box computing the x slab's cells beside its edge tiles (variant "edge") ----
 * The production march body, and after each tile at either x end of the box: when the word
 * `ready` is set (the halos have arrived; read with acquire once per tile by one thread and
 * shared, so the whole block agrees), the block computes the x slab's cells beside the tile
 * (its rows and planes, one point each, the point form: the same bits) while the tile's lines
 * are in cache, and marks the edge done. A fix-up after the box does the edges not marked
 * (tiles swept before the halos came) and clears the marks and the word. */
struct edge_args {
    uint32_t* ready;
    uint32_t* done;
};
template <typename T>
__device__ __forceinline__ void edge_cells(const hp_stencil_args& a, uint64_t x, uint64_t y0, uint64_t rows,
                                           uint64_t z0, uint64_t depth) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const T scale = T(1) / T(27u);
    for (uint64_t i = threadIdx.x; i < rows * depth; i += blockDim.x) {
        const uint64_t y = y0 + i % rows, z = z0 + i / rows;
        if (y >= a.end[1] || z >= a.end[2]) continue;
        const uint64_t c = x + ax * (y + ay * z);
        out[c] = hp_stencil_sum<T, true>(in + c, 1, (int64_t)ax, (int64_t)(ax * ay), HP_STENCIL_FULL) * scale;
    }
}
template <typename T, int ROWS, int DEPTH, int COLS, int PF>
__device__ __forceinline__ void box_edges(const hp_stencil_args& a, const edge_args& e) {
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
    __shared__ uint32_t ready;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x = a.begin[0] + (t % tiles_x) * width + tx;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (x < a.end[0] && y < a.end[1]) {
            const int cols = (int)((a.end[0] - x + HP_MARCH_X - 1) / HP_MARCH_X);
            int at[COLS];
#pragma unroll
            for (int c = 0; c < COLS; ++c) at[c] = c < cols ? c * (int)HP_MARCH_X : 0;
            const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
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
                        if (c < cols && i < live) {
                            o[c * (int)HP_MARCH_X + i * ax] =
                                ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                        }
                        lo[c][i] = mid[c][i];
                        mid[c][i] = hi[c][i];
                    }
                }
            }
        }
        const uint64_t txi = t % tiles_x;
        if (txi != 0 && txi + 1 != tiles_x) continue;
        __syncthreads();
        if (threadIdx.x == 0) ready = hp_load_acquire_system(e.ready);
        __syncthreads();
        if (!ready) continue;
        const uint64_t y0 = a.begin[1] + (rest % tiles_y) * rows;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        for (int side = 0; side < 2; ++side) {
            if (side == 0 ? txi != 0 : txi + 1 != tiles_x) continue;
            edge_cells<T>(a, side == 0 ? a.begin[0] - 1 : a.end[0], y0, rows, z0, DEPTH);
            if (threadIdx.x == 0) e.done[rest * 2 + side] = 1u;
        }
    }
}
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box_edges64(hp_stencil_args a, edge_args e) {
    box_edges<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH>(a, e);
}
__global__ void __launch_bounds__(256) k_box_edges32(hp_stencil_args a, edge_args e) {
    box_edges<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a, e);
}
/* The fix-up: a block per (edge tile, side) of the box in `a`; tiles of `rows` x `depth`. */
template <typename T>
__global__ void __launch_bounds__(256) k_edge_fixup(hp_stencil_args a, edge_args e, uint32_t rows, uint32_t depth) {
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t rest = blockIdx.x / 2, side = blockIdx.x % 2;
    const bool done = e.done[blockIdx.x] != 0u;
    if (blockIdx.x == 0 && threadIdx.x == 0) *e.ready = 0u;
    if (done) {
        __syncthreads();
        if (threadIdx.x == 0) e.done[blockIdx.x] = 0u;
        return;
    }
    edge_cells<T>(a, side == 0 ? a.begin[0] - 1 : a.end[0], a.begin[1] + (rest % tiles_y) * rows, rows,
                  a.begin[2] + (rest / tiles_y) * depth, depth);
}

/* ---- the box widened to the shell's x and y slabs (variant "wide") ----
 * Tiles over `w` (the interior in x and y, the inner planes in z). A block reads `ready` once
 * (one thread, acquire, shared): when set, its tile updates every cell; when not, the cells of
 * the x and y slabs (x or y at either end of w) are left, and the block marks its tile for the
 * fix-up. */
template <typename T, int ROWS, int DEPTH, int COLS, int PF>
__device__ __forceinline__ void box_wide(const hp_stencil_args& a, const edge_args& e) {
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
    __shared__ uint32_t ready_s;
    if (threadIdx.x == 0) ready_s = hp_load_acquire_system(e.ready);
    __syncthreads();
    const bool ready = ready_s != 0u;
    const uint64_t xlo = a.begin[0] + (ready ? 0 : 1), xhi = a.end[0] - (ready ? 0 : 1);
    const uint64_t ylo = a.begin[1] + (ready ? 0 : 1), yhi = a.end[1] - (ready ? 0 : 1);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t txi = t % tiles_x, tyi = rest % tiles_y;
        if (!ready && threadIdx.x == 0 &&
            (txi == 0 || txi + 1 == tiles_x || tyi == 0 || tyi + 1 == tiles_y)) {
            e.done[t] = 1u;
        }
        const uint64_t x = a.begin[0] + txi * width + tx;
        const uint64_t y = a.begin[1] + tyi * rows + ty * ROWS;
        if (x >= a.end[0] || y >= a.end[1]) continue;
        const int cols = (int)((a.end[0] - x + HP_MARCH_X - 1) / HP_MARCH_X);
        int at[COLS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) at[c] = c < cols ? c * (int)HP_MARCH_X : 0;
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
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
                const uint64_t xc = x + c * HP_MARCH_X;
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (c < cols && i < live && xc >= xlo && xc < xhi && y + i >= ylo && y + i < yhi) {
                        o[c * (int)HP_MARCH_X + i * ax] =
                            ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box_wide64(hp_stencil_args a, edge_args e) {
    box_wide<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH>(a, e);
}
__global__ void __launch_bounds__(256) k_box_wide32(hp_stencil_args a, edge_args e) {
    box_wide<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a, e);
}
/* The fix-up of "wide": a block per tile of w (most return at once); a marked tile's cells in
 * the x and y slabs, the point form; the mark cleared, and `ready`. */
template <typename T>
__global__ void __launch_bounds__(256) k_wide_fixup(hp_stencil_args a, edge_args e, uint32_t width, uint32_t rows, uint32_t depth) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *e.ready = 0u;
    if (e.done[blockIdx.x] == 0u) return;
    const uint64_t tiles_x = (a.end[0] - a.begin[0] + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t t = blockIdx.x, rest = t / tiles_x;
    const uint64_t x0 = a.begin[0] + (t % tiles_x) * width, y0 = a.begin[1] + (rest % tiles_y) * rows;
    const uint64_t z0 = a.begin[2] + (rest / tiles_y) * depth;
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const T scale = T(1) / T(27u);
    for (uint64_t i = threadIdx.x; i < (uint64_t)width * rows * depth; i += blockDim.x) {
        const uint64_t x = x0 + i % width, y = y0 + (i / width) % rows, z = z0 + i / width / rows;
        if (x >= a.end[0] || y >= a.end[1] || z >= a.end[2]) continue;
        if (x != a.begin[0] && x + 1 != a.end[0] && y != a.begin[1] && y + 1 != a.end[1]) continue;
        const uint64_t c = x + ax * (y + ay * z);
        out[c] = hp_stencil_sum<T, true>(in + c, 1, (int64_t)ax, (int64_t)(ax * ay), HP_STENCIL_FULL) * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) e.done[blockIdx.x] = 0u;
}


/* ---- the x and y slabs in the box's own tiles (variant "remap") ----
 * Tiles over x in [b0, e0) (the inner box's) and y in [b1 - 1, e1 + 1) (the interior), z as
 * the inner box. In the last x tile the lanes past the box take the x slabs: x = e0 (its own
 * place) and x = e0 + 1, which reads column b0 - 1 instead (the x-low slab), so both x slabs
 * march with the tile's rows at no extra load instruction. A block reads `ready` once (one
 * thread, acquire, shared): when set, it stores the slab cells too; when not, it leaves them
 * and marks its tile for the fix-up. Needs e0 - b0 to leave 2 lanes in the last tile. */
template <typename T, int ROWS, int DEPTH, int COLS, int PF, bool XR = true, bool YS = true, bool HC = false>
__device__ __forceinline__ void box_remap(const hp_stencil_args& a, const edge_args& e) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t width = (uint64_t)HP_MARCH_X * COLS;
    const uint64_t yb = a.begin[1] - (YS ? 1 : 0), ye = a.end[1] + (YS ? 1 : 0);
    const uint64_t bx = a.end[0] - a.begin[0], by = ye - yb, bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + width - 1) / width;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    __shared__ uint32_t ready_s;
    if (threadIdx.x == 0) ready_s = hp_load_acquire_system(e.ready);
    __syncthreads();
    const bool ready = ready_s != 0u;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t txi = t % tiles_x, tyi = rest % tiles_y;
        if (!ready && threadIdx.x == 0 && (txi + 1 == tiles_x || tyi == 0 || tyi + 1 == tiles_y)) {
            e.done[t] = 1u;
        }
        const uint64_t x = a.begin[0] + txi * width + tx;
        const uint64_t y = yb + tyi * rows + ty * ROWS;
        if (x > a.end[0] + (XR ? 1 : -1) || y >= ye) continue;
        int at[COLS], halo[COLS];
        uint32_t valid = 0;
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const uint64_t xc = x + c * HP_MARCH_X;
            /* HC: the lane of x = e0 also copies the halo beside it (x = e0 + 1), the lane of
             * x = b0 - 1 the halo at b0 - 2, so the slabs' sectors are written whole. */
            halo[c] = xc == a.end[0] ? 1 : xc == a.end[0] + 1 ? -1 : 0;
            if (XR) {
                at[c] = xc < a.end[0] + 1 ? c * (int)HP_MARCH_X
                        : xc == a.end[0] + 1 ? (int)((int64_t)a.begin[0] - 1 - (int64_t)x)
                                             : 0;
                if (xc < a.end[0] || (ready && xc <= a.end[0] + 1)) valid |= 1u << c;
            } else {
                at[c] = xc < a.end[0] ? c * (int)HP_MARCH_X : 0;
                if (xc < a.end[0]) valid |= 1u << c;
            }
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
                    const bool row_ok = !YS || ready || (y + i >= a.begin[1] && y + i < a.end[1]);
                    if ((valid >> c & 1u) && i < live && row_ok) {
                        o[at[c] + i * ax] = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                        if (HC && halo[c] != 0) {
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
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box_remap64(hp_stencil_args a, edge_args e) {
    box_remap<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH>(a, e);
}
template <bool XR, bool YS, bool HC = false>
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box_rv64(hp_stencil_args a, edge_args e) {
    box_remap<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH, XR, YS, HC>(a, e);
}
__global__ void __launch_bounds__(256) k_box_remap32(hp_stencil_args a, edge_args e) {
    box_remap<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a, e);
}
/* Its fix-up: a block per tile (unmarked ones return at once); a marked tile's cells in the x
 * and y slabs, the point form; the mark cleared, and `ready`. */
template <typename T>
__global__ void __launch_bounds__(256) k_remap_fixup(hp_stencil_args a, edge_args e, uint32_t width, uint32_t rows, uint32_t depth) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *e.ready = 0u;
    if (e.done[blockIdx.x] == 0u) return;
    const uint64_t yb = a.begin[1] - 1, ye = a.end[1] + 1;
    const uint64_t tiles_x = (a.end[0] - a.begin[0] + width - 1) / width;
    const uint64_t tiles_y = (ye - yb + rows - 1) / rows;
    const uint64_t t = blockIdx.x, rest = t / tiles_x, txi = t % tiles_x;
    const uint64_t x0 = a.begin[0] + txi * width, y0 = yb + (rest % tiles_y) * rows;
    const uint64_t z0 = a.begin[2] + (rest / tiles_y) * depth;
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const T scale = T(1) / T(27u);
    const uint64_t w = width + 2;  // the tile's columns, then x = b0 - 1 and x = e0
    for (uint64_t i = threadIdx.x; i < w * rows * depth; i += blockDim.x) {
        const uint64_t k = i % w, y = y0 + (i / w) % rows, z = z0 + i / w / rows;
        uint64_t x;
        if (k < width) {
            x = x0 + k;
            if (x >= a.end[0]) continue;
            if (y != yb && y != a.end[1]) continue;  // inside: the tile did it
        } else {
            if (txi + 1 != tiles_x) continue;
            x = k == width ? a.begin[0] - 1 : a.end[0];
        }
        if (y >= ye || z >= a.end[2]) continue;
        const uint64_t c = x + ax * (y + ay * z);
        out[c] = hp_stencil_sum<T, true>(in + c, 1, (int64_t)ax, (int64_t)(ax * ay), HP_STENCIL_FULL) * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) e.done[blockIdx.x] = 0u;
}


/* ---- remap2: the tiles start 2 columns before the inner box (the sectors fall as the inner
 * box's do): the lane at x = b0 - 1 takes the x-low slab in its place, the lane at b0 - 2 (a
 * halo column) takes x = e0 instead (the x-high slab). Rows from b1 - 1 to e1 + 1 (y slabs).
 * lane_x: the column a lane at xc updates, or ~0 for none; `edge`: it lies in a slab. */
struct lane_map {
    uint64_t b0, e0, first, span_end;
    bool wrap;  // no lane lies at e0: the lane at b0 - 2 takes it
    __device__ uint64_t x_of(uint64_t xc, bool& edge) const {
        edge = xc < b0 || xc >= e0;
        if (xc == b0 - 2) return wrap ? e0 : ~0ull;
        if (xc < span_end) return xc;
        return ~0ull;
    }
};
__device__ __forceinline__ lane_map lanes_of(const hp_stencil_args& a, uint64_t width) {
    lane_map m;
    m.b0 = a.begin[0], m.e0 = a.end[0], m.first = a.begin[0] - 2;
    m.wrap = (a.end[0] - m.first) % width == 0;
    m.span_end = m.wrap ? a.end[0] : a.end[0] + 1;
    return m;
}
/* Border tile b of the tiles_x x tiles_y x chunks tiles (those at either end in x or y). */
__device__ __forceinline__ uint64_t border_tile(uint64_t b, uint64_t tx, uint64_t ty) {
    const uint64_t per = ty <= 2 ? tx * ty : 2 * tx + 2 * (ty - 2);
    const uint64_t chunk = b / per, j = b % per;
    uint64_t xi, yi;
    if (ty <= 2) xi = j % tx, yi = j / tx;
    else if (j < tx) xi = j, yi = 0;
    else if (j < 2 * tx) xi = j - tx, yi = ty - 1;
    else if (j < 2 * tx + ty - 2) xi = 0, yi = 1 + (j - 2 * tx);
    else xi = tx - 1, yi = 1 + (j - 2 * tx - (ty - 2));
    return (chunk * ty + yi) * tx + xi;
}
template <typename T, int ROWS, int DEPTH, int COLS, int PF>
__device__ __forceinline__ void box_remap2(const hp_stencil_args& a, const edge_args& e) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t width = (uint64_t)HP_MARCH_X * COLS;
    const lane_map m = lanes_of(a, width);
    const uint64_t yb = a.begin[1] - 1, ye = a.end[1] + 1;
    const uint64_t bx = m.span_end - m.first, by = ye - yb, bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + width - 1) / width;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    __shared__ uint32_t ready_s;
    if (threadIdx.x == 0) ready_s = hp_load_acquire_system(e.ready);
    __syncthreads();
    const bool ready = ready_s != 0u;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t txi = t % tiles_x, tyi = rest % tiles_y;
        if (!ready && threadIdx.x == 0 && (txi == 0 || txi + 1 == tiles_x || tyi == 0 || tyi + 1 == tiles_y)) {
            e.done[t] = 1u;
        }
        const uint64_t x = m.first + txi * width + tx;
        const uint64_t y = yb + tyi * rows + ty * ROWS;
        if (y >= ye) continue;
        int at[COLS];
        uint32_t valid = 0;
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            bool edge;
            const uint64_t xe = m.x_of(x + c * HP_MARCH_X, edge);
            at[c] = xe == ~0ull ? 0 : (int)((int64_t)xe - (int64_t)x);
            if (xe != ~0ull && (ready || !edge)) valid |= 1u << c;
        }
        if (valid == 0u && !ready) continue;
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
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_box_remap2_64(hp_stencil_args a, edge_args e) {
    box_remap2<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS, (int)HP_MARCH_PREFETCH>(a, e);
}
__global__ void __launch_bounds__(256) k_box_remap2_32(hp_stencil_args a, edge_args e) {
    box_remap2<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, 0>(a, e);
}
/* remap2's fix-up: a block per border tile; a marked one's slab cells (point form), its mark
 * cleared; block 0 clears `ready`. */
template <typename T>
__global__ void __launch_bounds__(256) k_remap2_fixup(hp_stencil_args a, edge_args e, uint32_t width, uint32_t rows,
                                                      uint32_t depth) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *e.ready = 0u;
    const lane_map m = lanes_of(a, width);
    const uint64_t yb = a.begin[1] - 1, ye = a.end[1] + 1;
    const uint64_t tiles_x = (m.span_end - m.first + width - 1) / width;
    const uint64_t tiles_y = (ye - yb + rows - 1) / rows;
    const uint64_t t = border_tile(blockIdx.x, tiles_x, tiles_y);
    if (e.done[t] == 0u) return;
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const T scale = T(1) / T(27u);
    const uint64_t rest = t / tiles_x;
    const uint64_t x0 = m.first + (t % tiles_x) * width, y0 = yb + (rest % tiles_y) * rows;
    const uint64_t z0 = a.begin[2] + (rest / tiles_y) * depth;
    for (uint64_t i = threadIdx.x; i < (uint64_t)width * rows * depth; i += blockDim.x) {
        const uint64_t y = y0 + (i / width) % rows, z = z0 + i / width / rows;
        bool edge;
        const uint64_t x = m.x_of(x0 + i % width, edge);
        if (x == ~0ull || y >= ye || z >= a.end[2]) continue;
        if (!edge && y >= a.begin[1] && y < a.end[1]) continue;
        const uint64_t c = x + ax * (y + ay * z);
        out[c] = hp_stencil_sum<T, true>(in + c, 1, (int64_t)ax, (int64_t)(ax * ay), HP_STENCIL_FULL) * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) e.done[t] = 0u;
}
__global__ void k_set(uint32_t* w) { hp_store_release_system(w, 1u); }
__global__ void k_spin(uint64_t ns) {
    const uint64_t t0 = hp_timer();
    while (hp_timer() - t0 < ns) {
    }
}

/* ---- the check ---- */
template <typename T>
__global__ void k_init(T* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
        double v = ((double)h / 3.0) * ((i % 3 == 0) ? -1.0 : 1.0) + 1.0 / 7.0;
        f[i] = (T)v;
    }
}
template <typename T>
__global__ void k_diff(const T* x, const T* y, hp_stencil_args b, unsigned long long* count) {
    const uint64_t bx = b.end[0] - b.begin[0], by = b.end[1] - b.begin[1];
    const uint64_t n = bx * by * (b.end[2] - b.begin[2]);
    for (uint64_t p = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; p < n;
         p += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t i = b.begin[0] + p % bx +
                           b.alloc[0] * (b.begin[1] + (p / bx) % by + b.alloc[1] * (b.begin[2] + p / bx / by));
        bool same = sizeof(T) == 8
                        ? __double_as_longlong((double)x[i]) == __double_as_longlong((double)y[i])
                        : __float_as_uint((float)x[i]) == __float_as_uint((float)y[i]);
        if (!same) atomicAdd(count, 1ull);
    }
}

static uint64_t ext(const hp_stencil_args& a, int k) { return a.end[k] - a.begin[k]; }
static uint32_t tiles_of(const hp_stencil_args& a, int rows, int cols, int depth) {
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (uint32_t)(((ext(a, 0) + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* The inner box and the six thin slabs of core/src/stencil.rs's boxes(). */
static void boxes(const hp_stencil_args& a, uint64_t N, hp_stencil_args& inner,
                  std::vector<hp_stencil_args>& shell) {
    uint64_t in[3][2], it[3][2];
    for (int k = 0; k < 3; ++k) {
        it[k][0] = 1, it[k][1] = N + 1;
        in[k][0] = 2, in[k][1] = N;
    }
    inner = a;
    for (int k = 0; k < 3; ++k) inner.begin[k] = in[k][0], inner.end[k] = in[k][1];
    shell.clear();
    for (int k = 2; k >= 0; --k) {
        hp_stencil_args lo = a, hi = a;
        for (int j = 0; j < 3; ++j) {
            const uint64_t(&r)[2] = j > k ? in[j] : it[j];
            lo.begin[j] = hi.begin[j] = r[0];
            lo.end[j] = hi.end[j] = r[1];
        }
        lo.begin[k] = it[k][0], lo.end[k] = in[k][0];
        hi.begin[k] = in[k][1], hi.end[k] = it[k][1];
        shell.push_back(lo);
        shell.push_back(hi);
    }
}

/* SECTIONS (environment): the sections to run, e.g. "15"; all when unset. */
static bool want(char k) {
    const char* only = getenv("SECTIONS");
    return !only || strchr(only, k) != nullptr;
}

template <typename T>
static void run(const char* tname, uint64_t N, int reps) {
    const bool f64 = sizeof(T) == 8;
    const uint64_t A = N + 2, n = A * A * A;
    const size_t bytes = n * sizeof(T);
    T *in, *out, *ref;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&ref, bytes));
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    stamp* st;
    const int NST = 8;
    CK(cudaMalloc(&st, NST * sizeof(stamp)));
    k_init<T><<<4096, 256>>>(in, n);
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    const hp_stencil_args whole_pts = a;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    a.out = (uint64_t)out;
    a.form = HP_STENCIL_FORM_MARCH;
    const int R = f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS;
    const int C = f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS;
    const int Z = f64 ? HP_MARCH64_Z : HP_MARCH32_Z;
    void (*march)(hp_stencil_args) = f64 ? hp_stencil27_march64 : hp_stencil27_marching;
    /* One launch as the step's stencil_launch (core/src/regions.rs) chooses it; stamped
     * wrappers of the same bodies when s is given. */
    auto launch = [&](const hp_stencil_args& b, cudaStream_t q, stamp* s) {
        if (ext(b, 0) < HP_MARCH_X || ext(b, 1) < HP_MARCH_ROWS) {
            const uint64_t cols = ext(b, 0) * ext(b, 1) * ((ext(b, 2) + HP_SLAB_Z - 1) / HP_SLAB_Z);
            const unsigned g = (unsigned)((cols + 255) / 256);
            if (s) k_marching_st<<<g, 256, 0, q>>>(b, s);
            else hp_stencil27_marching<<<g, 256, 0, q>>>(b);
        } else {
            const unsigned g = tiles_of(b, R, C, Z);
            if (s && f64) k_box64_st<<<g, 256, 0, q>>>(b, s);
            else if (s) k_marching_st<<<g, 256, 0, q>>>(b, s);
            else march<<<g, 256, 0, q>>>(b);
        }
    };
    cudaStream_t s0, s1, side[6];
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    for (auto& q : side) CK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking));
    cudaEvent_t e0, e1, fork, join[7];
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (auto& e : join) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    auto timed = [&](auto&& body) {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0, s0));
            body();
            CK(cudaEventRecord(e1, s0));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    const float copy = timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s0)); });
    printf("%s,copy,%.1f,%.3f,-\n", tname, copy, 1.0);
    auto time = [&](const char* name, bool check, auto&& body) {
        CK(cudaMemset(out, 0, bytes));
        CK(cudaDeviceSynchronize());
        const float us = timed(body);
        long long diffs = -1;
        if (check) {
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<T><<<4096, 256>>>(out, ref, whole_pts, count);
            unsigned long long d;
            CK(cudaMemcpy(&d, count, sizeof d, cudaMemcpyDeviceToHost));
            diffs = (long long)d;
        }
        printf("%s,%s,%.1f,%.3f,%lld\n", tname, name, us, copy / us, diffs);
        fflush(stdout);
    };
    hp_stencil_args inner;
    std::vector<hp_stencil_args> shell;
    boxes(a, N, inner, shell);
    /* The compute-only step: the box on s1, `sides` queued beside it, s0 joining both. */
    auto step = [&](stamp* sbox, auto&& sides) {
        CK(cudaEventRecord(fork, s0));
        CK(cudaStreamWaitEvent(s1, fork));
        launch(inner, s1, sbox);
        sides();
        CK(cudaEventRecord(join[6], s1));
        CK(cudaStreamWaitEvent(s0, join[6]));
    };
    auto on_sides = [&](auto&& one) {
        CK(cudaEventRecord(fork, s0));
        for (size_t i = 0; i < shell.size(); ++i) {
            CK(cudaStreamWaitEvent(side[i], fork));
            one(i, side[i]);
            CK(cudaEventRecord(join[i], side[i]));
        }
        for (size_t i = 0; i < shell.size(); ++i) CK(cudaStreamWaitEvent(s0, join[i]));
    };
    auto prod_slab = [&](size_t i, cudaStream_t q) { launch(shell[i], q, nullptr); };
    auto slabx_slab = [&](size_t i, cudaStream_t q) {
        if (ext(shell[i], 0) == 1) k_slab_x<T><<<(unsigned)slab_x_blocks(shell[i], 4), 256, 0, q>>>(shell[i]);
        else launch(shell[i], q, nullptr);
    };
    auto shell_of = [&](int D) {
        shell_args m = {};
        uint32_t at = 0;
        for (size_t i = 0; i < shell.size(); ++i) {
            const hp_stencil_args& b = shell[i];
            m.box[i] = b;
            m.first[i] = at;
            uint64_t blocks;
            if (ext(b, 2) == 1) m.kind[i] = PART_Z, blocks = slab_z_blocks(b);
            else if (ext(b, 0) == 1) m.kind[i] = PART_X, blocks = slab_x_blocks(b, D);
            else m.kind[i] = PART_COLS, blocks = slab_cols_blocks(b, D);
            at += (uint32_t)blocks;
        }
        m.first[shell.size()] = at;
        m.n = (uint32_t)shell.size();
        return m;
    };
    void (*shell_k[4])(shell_args) = {k_shell<T, 2>, k_shell<T, 4>, k_shell<T, 8>, k_shell<T, 16>};
    const int shell_d[4] = {2, 4, 8, 16};
    auto one_shell = [&](int v, cudaStream_t q) {
        const shell_args m = shell_of(shell_d[v]);
        shell_k[v]<<<m.first[m.n], 256, 0, q>>>(m);
    };
    auto one_beside = [&](int v) {
        CK(cudaEventRecord(fork, s0));
        CK(cudaStreamWaitEvent(side[0], fork));
        one_shell(v, side[0]);
        CK(cudaEventRecord(join[0], side[0]));
        CK(cudaStreamWaitEvent(s0, join[0]));
    };

    /* 1. The timeline, three rounds. */
    for (int round = 0; round < (want('1') ? 1 : 0); ++round) {
        std::vector<stamp> init(NST, stamp{~0ull, 0ull});
        CK(cudaMemcpy(st, init.data(), NST * sizeof(stamp), cudaMemcpyHostToDevice));
        CK(cudaDeviceSynchronize());
        const float us = timed([&] {});  // warm the events
        (void)us;
        CK(cudaEventRecord(e0, s0));
        step(st + 6, [&] { on_sides([&](size_t i, cudaStream_t q) { launch(shell[i], q, st + i); }); });
        CK(cudaEventRecord(e1, s0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        std::vector<stamp> got(NST);
        CK(cudaMemcpy(got.data(), st, NST * sizeof(stamp), cudaMemcpyDeviceToHost));
        const unsigned long long t0 = got[6].first;
        printf("# %s timeline round %d (events %.1f us; us from the box's first block): box %.1f..%.1f",
               tname, round, ms * 1000.0f, 0.0, (got[6].last - t0) / 1000.0);
        const char* names[6] = {"z-lo", "z-hi", "y-lo", "y-hi", "x-lo", "x-hi"};
        for (int i = 0; i < 6; ++i)
            printf(", %s %.1f..%.1f", names[i], ((long long)(got[i].first - t0)) / 1000.0,
                   ((long long)(got[i].last - t0)) / 1000.0);
        printf("\n");
    }

    /* 2. Timings. */
    if (want('2')) {
    time("whole", true, [&] { launch(a, s0, nullptr); });
    time("box", false, [&] { launch(inner, s0, nullptr); });
    for (int rep = 0; rep < 2; ++rep) {
        time("step-prod", true, [&] { step(nullptr, [&] { on_sides(prod_slab); }); });
        time("step-slabx", true, [&] { step(nullptr, [&] { on_sides(slabx_slab); }); });
        for (int v = 0; v < 4; ++v) {
            char name[32];
            snprintf(name, sizeof name, "step-one-%d", shell_d[v]);
            time(name, true, [&] { step(nullptr, [&] { one_beside(v); }); });
        }
    }
    time("shell-prod", false, [&] { on_sides(prod_slab); });
    time("shell-prod-serial", false, [&] { for (size_t i = 0; i < shell.size(); ++i) launch(shell[i], s0, nullptr); });
    for (size_t i = 0; i < shell.size(); ++i) {
        char name[32];
        snprintf(name, sizeof name, "slab-prod-%zu", i);
        time(name, false, [&] { launch(shell[i], s0, nullptr); });
    }
    time("shell-slabx", false, [&] { on_sides(slabx_slab); });
    for (int v = 0; v < 4; ++v) {
        char name[32];
        snprintf(name, sizeof name, "shell-one-%d", shell_d[v]);
        time(name, false, [&] { one_shell(v, s0); });
    }

    }
    /* 3. The x slabs inside the box (edge): y and z slabs beside as today, after `ready`. */
    if (want('3')) {
        edge_args e;
        CK(cudaMalloc(&e.ready, sizeof(uint32_t)));
        const uint32_t erows = 8u * R, edepth = Z;
        const uint64_t nedge = 2 * ((ext(inner, 1) + erows - 1) / erows) * ((ext(inner, 2) + edepth - 1) / edepth);
        CK(cudaMalloc(&e.done, nedge * sizeof(uint32_t)));
        CK(cudaMemset(e.ready, 0, sizeof(uint32_t)));
        CK(cudaMemset(e.done, 0, nedge * sizeof(uint32_t)));
        void (*boxk)(hp_stencil_args, edge_args) = f64 ? k_box_edges64 : k_box_edges32;
        auto yz_sides = [&] {
            CK(cudaEventRecord(fork, s0));
            for (size_t i = 0; i < 4; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
        };
        /* delay_ns < 0: the word is never raised. */
        auto edge_step = [&](long long delay_ns) {
            CK(cudaEventRecord(fork, s0));
            CK(cudaStreamWaitEvent(s1, fork));
            boxk<<<tiles_of(inner, R, C, Z), 256, 0, s1>>>(inner, e);
            CK(cudaEventRecord(join[6], s1));
            if (delay_ns > 0) k_spin<<<1, 32, 0, s0>>>((uint64_t)delay_ns);
            if (delay_ns >= 0) k_set<<<1, 32, 0, s0>>>(e.ready);
            yz_sides();
            CK(cudaStreamWaitEvent(s0, join[6]));
            k_edge_fixup<T><<<(unsigned)nedge, 256, 0, s0>>>(inner, e, erows, edepth);
            for (size_t i = 0; i < 4; ++i) CK(cudaStreamWaitEvent(s0, join[i]));
        };
        for (int rep = 0; rep < 2; ++rep) {
            time("step-prod", true, [&] { step(nullptr, [&] { on_sides(prod_slab); }); });
            time("step-edge", true, [&] { edge_step(0); });
            time("step-edge-late40", true, [&] { edge_step(40000); });
            time("step-edge-late100", true, [&] { edge_step(100000); });
            time("step-edge-never", true, [&] { edge_step(-1); });
        }
        time("box-edges-ready", false, [&] {
            k_set<<<1, 32, 0, s0>>>(e.ready);
            boxk<<<tiles_of(inner, R, C, Z), 256, 0, s0>>>(inner, e);
            k_edge_fixup<T><<<(unsigned)nedge, 256, 0, s0>>>(inner, e, erows, edepth);
        });
        time("box-edges-never", false, [&] { boxk<<<tiles_of(inner, R, C, Z), 256, 0, s0>>>(inner, e); });
        time("box-again", false, [&] { launch(inner, s0, nullptr); });
        time("fixup-all", false, [&] { k_edge_fixup<T><<<(unsigned)nedge, 256, 0, s0>>>(inner, e, erows, edepth); });
        CK(cudaFree(e.ready));
        CK(cudaFree(e.done));
    }





    /* 8. The production kernels (hp_stencil27_march64_shell, _shell_ready, _shell_fixup) in
     * the compute-only step as core/src/stencil.rs queues it (f64): ready first, the box, the
     * z slabs on side streams, the fix-up; and their parts, with stamps from events. */
    if (want('8') && f64) {
        const uint32_t W = 32u, RW = 8u * R;
        hp_stencil_args sh = inner;
        const uint64_t ttx = (ext(inner, 0) + W - 1) / W, tty = (ext(inner, 1) + 2 + RW - 1) / RW;
        const uint64_t chunks = (ext(inner, 2) + Z - 1) / Z;
        const uint32_t tiles = (uint32_t)(ttx * tty * chunks);
        const uint32_t cap = (uint32_t)(chunks * (tty + (ttx - 1) * 2));
        uint32_t* words;
        CK(cudaMalloc(&words, (HP_SHELL_LIST + 2 * cap) * 4));
        CK(cudaMemset(words, 0, (HP_SHELL_LIST + 2 * cap) * 4));
        sh.shell = (uint64_t)words;
        sh.shell_capacity = cap;
        int lo_pri, hi_pri;
        CK(cudaDeviceGetStreamPriorityRange(&lo_pri, &hi_pri));
        cudaStream_t su;
        CK(cudaStreamCreateWithPriority(&su, cudaStreamNonBlocking, hi_pri));
        uint32_t parity = 0;
        /* One compute-only step of the given shape, on su (urgent), parity alternating. */
        auto tiles_step = [&](bool ready_first) {
            hp_stencil_args a2 = sh;
            a2.parity = parity;
            parity ^= 1u;
            if (ready_first) hp_stencil27_shell_ready<<<1, 32, 0, su>>>(a2);
            CK(cudaEventRecord(fork, su));
            CK(cudaStreamWaitEvent(s1, fork));
            hp_stencil27_march64_shell<<<tiles, 256, 0, s1>>>(a2);
            if (!ready_first) hp_stencil27_shell_ready<<<1, 32, 0, su>>>(a2);
            CK(cudaEventRecord(fork, su));
            for (size_t i = 0; i < 2; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
            for (size_t i = 0; i < 2; ++i) CK(cudaStreamWaitEvent(su, join[i]));
            CK(cudaEventRecord(join[6], s1));
            CK(cudaStreamWaitEvent(su, join[6]));
            hp_stencil27_shell_fixup<<<HP_SHELL_FIXUP_BLOCKS, 256, 0, su>>>(a2);
        };
        auto prod_step = [&] {
            CK(cudaEventRecord(fork, su));
            CK(cudaStreamWaitEvent(s1, fork));
            launch(inner, s1, nullptr);
            CK(cudaEventRecord(fork, su));
            for (size_t i = 0; i < 6; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
            for (size_t i = 0; i < 6; ++i) CK(cudaStreamWaitEvent(su, join[i]));
            CK(cudaEventRecord(join[6], s1));
            CK(cudaStreamWaitEvent(su, join[6]));
        };
        auto time_su = [&](const char* name, bool check, auto&& body) {
            std::swap(s0, su);
            time(name, check, body);
            std::swap(s0, su);
        };
        for (int rep = 0; rep < 2; ++rep) {
            time_su("p-step-launches", true, [&] { std::swap(s0, su); prod_step(); std::swap(s0, su); });
            time_su("p-step-tiles-ready-first", true, [&] { std::swap(s0, su); tiles_step(true); std::swap(s0, su); });
            time_su("p-step-tiles-ready-after", true, [&] { std::swap(s0, su); tiles_step(false); std::swap(s0, su); });
            time("p-box", false, [&] { launch(inner, s0, nullptr); });
            time("p-box-shell-ready", false, [&] {
                hp_stencil_args a2 = sh;
                a2.parity = 0;
                hp_stencil27_shell_ready<<<1, 32, 0, s0>>>(a2);
                hp_stencil27_march64_shell<<<tiles, 256, 0, s0>>>(a2);
            });
            time("bench-box-both-hc-ready", false, [&] {
                edge_args e{words, words + 8};
                k_set<<<1, 32, 0, s0>>>(words);
                k_box_rv64<true, true, true><<<tiles, 256, 0, s0>>>(inner, e);
            });
            time("p-fixup-empty", false, [&] {
                hp_stencil_args a2 = sh;
                a2.parity = 1;  // set 1 holds nothing; clears set 0
                hp_stencil27_shell_fixup<<<HP_SHELL_FIXUP_BLOCKS, 256, 0, s0>>>(a2);
            });
            time("p-z-slabs", false, [&] { for (size_t i = 0; i < 2; ++i) launch(shell[i], s0, nullptr); });
            time("p-ready", false, [&] {
                hp_stencil_args a2 = sh;
                hp_stencil27_shell_ready<<<1, 32, 0, s0>>>(a2);
            });
            CK(cudaMemset(words, 0, (HP_SHELL_LIST + 2 * cap) * 4));
        }
        CK(cudaStreamDestroy(su));
        CK(cudaFree(words));
    }
    /* 7. remap2 in the step (s0 urgent, as the step's stream), and its box alone. */
    if (want('7')) {
        edge_args e;
        const uint32_t W = 32u * C, RW = 8u * R;
        const bool wrap = (ext(inner, 0) + 2) % W == 0;
        const uint64_t ttx = (ext(inner, 0) + (wrap ? 2 : 3) + W - 1) / W, tty = (ext(inner, 1) + 2 + RW - 1) / RW;
        const uint64_t chunks = (ext(inner, 2) + Z - 1) / Z;
        const uint32_t tiles = (uint32_t)(ttx * tty * chunks);
        const uint32_t borders = (uint32_t)(chunks * (tty <= 2 ? ttx * tty : 2 * ttx + 2 * (tty - 2)));
        CK(cudaMalloc(&e.ready, sizeof(uint32_t)));
        CK(cudaMalloc(&e.done, tiles * sizeof(uint32_t)));
        CK(cudaMemset(e.ready, 0, sizeof(uint32_t)));
        CK(cudaMemset(e.done, 0, tiles * sizeof(uint32_t)));
        int lo_pri, hi_pri;
        CK(cudaDeviceGetStreamPriorityRange(&lo_pri, &hi_pri));
        cudaStream_t su;
        CK(cudaStreamCreateWithPriority(&su, cudaStreamNonBlocking, hi_pri));
        void (*boxk)(hp_stencil_args, edge_args) = f64 ? k_box_remap2_64 : k_box_remap2_32;
        auto fixup = [&](cudaStream_t q) {
            k_remap2_fixup<T><<<borders, 256, 0, q>>>(inner, e, W, RW, Z);
        };
        /* The step as production queues it with s0 -> su (urgent). */
        auto prod_urgent = [&] {
            CK(cudaEventRecord(fork, su));
            CK(cudaStreamWaitEvent(s1, fork));
            launch(inner, s1, nullptr);
            CK(cudaEventRecord(fork, su));
            for (size_t i = 0; i < 6; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
            for (size_t i = 0; i < 6; ++i) CK(cudaStreamWaitEvent(su, join[i]));
            CK(cudaEventRecord(join[6], s1));
            CK(cudaStreamWaitEvent(su, join[6]));
        };
        auto remap_urgent = [&](long long delay_ns) {
            CK(cudaEventRecord(fork, su));
            CK(cudaStreamWaitEvent(s1, fork));
            boxk<<<tiles, 256, 0, s1>>>(inner, e);
            CK(cudaEventRecord(join[6], s1));
            if (delay_ns > 0) k_spin<<<1, 32, 0, su>>>((uint64_t)delay_ns);
            if (delay_ns >= 0) k_set<<<1, 32, 0, su>>>(e.ready);
            CK(cudaEventRecord(fork, su));
            for (size_t i = 0; i < 2; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
            CK(cudaStreamWaitEvent(su, join[6]));
            fixup(su);
            for (size_t i = 0; i < 2; ++i) CK(cudaStreamWaitEvent(su, join[i]));
        };
        /* timed on su */
        auto time_su = [&](const char* name, bool check, auto&& body) {
            std::swap(s0, su);
            time(name, check, body);
            std::swap(s0, su);
        };
        for (int rep = 0; rep < 3; ++rep) {
            time_su("u-step-prod", true, [&] { std::swap(s0, su); prod_urgent(); std::swap(s0, su); });
            time_su("u-step-remap2", true, [&] { std::swap(s0, su); remap_urgent(0); std::swap(s0, su); });
            time_su("u-step-remap2-late40", true, [&] { std::swap(s0, su); remap_urgent(40000); std::swap(s0, su); });
            time_su("u-step-remap2-never", true, [&] { std::swap(s0, su); remap_urgent(-1); std::swap(s0, su); });
        }
        time("box-again", false, [&] { launch(inner, s0, nullptr); });
        time("box-remap2-ready", false, [&] { k_set<<<1, 32, 0, s0>>>(e.ready); boxk<<<tiles, 256, 0, s0>>>(inner, e); });
        time("fixup2-empty", false, [&] { fixup(s0); });
        CK(cudaMemset(e.ready, 0, sizeof(uint32_t)));
        time("box-remap2-never", false, [&] { boxk<<<tiles, 256, 0, s0>>>(inner, e); });
        time("box-remap2-never+fixup", true, [&] {
            for (size_t i = 0; i < 2; ++i) launch(shell[i], s0, nullptr);
            boxk<<<tiles, 256, 0, s0>>>(inner, e);
            fixup(s0);
        });
        CK(cudaStreamDestroy(su));
        CK(cudaFree(e.ready));
        CK(cudaFree(e.done));
    }
    /* 6. remap's parts, f64: the box alone, ready set / not, no fix-up. */
    if (want('6') && f64) {
        edge_args e;
        hp_stencil_args wide = inner;
        wide.begin[1] = 1, wide.end[1] = N + 1;
        const uint32_t tiles = tiles_of(wide, R, C, Z);
        CK(cudaMalloc(&e.ready, sizeof(uint32_t)));
        CK(cudaMalloc(&e.done, tiles * sizeof(uint32_t)));
        CK(cudaMemset(e.done, 0, tiles * sizeof(uint32_t)));
        for (int rep = 0; rep < 2; ++rep) {
            time("box-again", false, [&] { launch(inner, s0, nullptr); });
            for (int r = 0; r < 2; ++r) {
                CK(cudaMemset(e.ready, r, sizeof(uint32_t)));
                char name[48];
                snprintf(name, sizeof name, "box-flag-only-r%d", r);
                time(name, false, [&] { k_box_rv64<false, false><<<tiles_of(inner, R, C, Z), 256, 0, s0>>>(inner, e); });
                snprintf(name, sizeof name, "box-xremap-r%d", r);
                time(name, false, [&] { k_box_rv64<true, false><<<tiles_of(inner, R, C, Z), 256, 0, s0>>>(inner, e); });
                snprintf(name, sizeof name, "box-yshift-r%d", r);
                time(name, false, [&] { k_box_rv64<false, true><<<tiles, 256, 0, s0>>>(inner, e); });
                snprintf(name, sizeof name, "box-both-r%d", r);
                time(name, false, [&] { k_box_rv64<true, true><<<tiles, 256, 0, s0>>>(inner, e); });
                snprintf(name, sizeof name, "box-xremap-hc-r%d", r);
                time(name, false, [&] { k_box_rv64<true, false, true><<<tiles_of(inner, R, C, Z), 256, 0, s0>>>(inner, e); });
                snprintf(name, sizeof name, "box-both-hc-r%d", r);
                time(name, false, [&] { k_box_rv64<true, true, true><<<tiles, 256, 0, s0>>>(inner, e); });
            }
            CK(cudaMemset(e.done, 0, tiles * sizeof(uint32_t)));
            time("fixup-empty", false, [&] { k_remap_fixup<T><<<tiles, 256, 0, s0>>>(inner, e, 32u * C, 8u * R, Z); });
        }
        CK(cudaFree(e.ready));
        CK(cudaFree(e.done));
    }
    /* 5. remap: the z slabs beside, after `ready`. */
    if (want('5')) {
        edge_args e;
        hp_stencil_args wide = inner;
        wide.begin[1] = 1, wide.end[1] = N + 1;
        const uint32_t tiles = tiles_of(wide, R, C, Z);
        CK(cudaMalloc(&e.ready, sizeof(uint32_t)));
        CK(cudaMalloc(&e.done, tiles * sizeof(uint32_t)));
        CK(cudaMemset(e.ready, 0, sizeof(uint32_t)));
        CK(cudaMemset(e.done, 0, tiles * sizeof(uint32_t)));
        void (*boxk)(hp_stencil_args, edge_args) = f64 ? k_box_remap64 : k_box_remap32;
        auto z_sides = [&] {
            CK(cudaEventRecord(fork, s0));
            for (size_t i = 0; i < 2; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
        };
        auto fixup = [&] { k_remap_fixup<T><<<tiles, 256, 0, s0>>>(inner, e, 32u * C, 8u * R, Z); };
        auto remap_step = [&](long long delay_ns) {
            CK(cudaEventRecord(fork, s0));
            CK(cudaStreamWaitEvent(s1, fork));
            boxk<<<tiles, 256, 0, s1>>>(inner, e);
            CK(cudaEventRecord(join[6], s1));
            if (delay_ns > 0) k_spin<<<1, 32, 0, s0>>>((uint64_t)delay_ns);
            if (delay_ns >= 0) k_set<<<1, 32, 0, s0>>>(e.ready);
            z_sides();
            CK(cudaStreamWaitEvent(s0, join[6]));
            fixup();
            for (size_t i = 0; i < 2; ++i) CK(cudaStreamWaitEvent(s0, join[i]));
        };
        for (int rep = 0; rep < 2; ++rep) {
            time("step-prod", true, [&] { step(nullptr, [&] { on_sides(prod_slab); }); });
            time("step-remap", true, [&] { remap_step(0); });
            time("step-remap-late40", true, [&] { remap_step(40000); });
            time("step-remap-never", true, [&] { remap_step(-1); });
        }
        time("box-remap-ready", false, [&] {
            k_set<<<1, 32, 0, s0>>>(e.ready);
            boxk<<<tiles, 256, 0, s0>>>(inner, e);
            fixup();
        });
        time("box-remap-never", false, [&] { boxk<<<tiles, 256, 0, s0>>>(inner, e); fixup(); });
        time("box-again", false, [&] { launch(inner, s0, nullptr); });
        CK(cudaFree(e.ready));
        CK(cudaFree(e.done));
    }
    /* 4. The x and y slabs inside the box's tiles (wide): the z slabs beside, after `ready`. */
    if (want('4')) {
        edge_args e;
        hp_stencil_args wide = inner;
        for (int k = 0; k < 2; ++k) wide.begin[k] = 1, wide.end[k] = N + 1;
        const uint32_t tiles = tiles_of(wide, R, C, Z);
        CK(cudaMalloc(&e.ready, sizeof(uint32_t)));
        CK(cudaMalloc(&e.done, tiles * sizeof(uint32_t)));
        CK(cudaMemset(e.ready, 0, sizeof(uint32_t)));
        CK(cudaMemset(e.done, 0, tiles * sizeof(uint32_t)));
        void (*boxk)(hp_stencil_args, edge_args) = f64 ? k_box_wide64 : k_box_wide32;
        auto z_sides = [&] {
            CK(cudaEventRecord(fork, s0));
            for (size_t i = 0; i < 2; ++i) {
                CK(cudaStreamWaitEvent(side[i], fork));
                launch(shell[i], side[i], nullptr);
                CK(cudaEventRecord(join[i], side[i]));
            }
        };
        auto fixup = [&] { k_wide_fixup<T><<<tiles, 256, 0, s0>>>(wide, e, 32u * C, 8u * R, Z); };
        auto wide_step = [&](long long delay_ns) {
            CK(cudaEventRecord(fork, s0));
            CK(cudaStreamWaitEvent(s1, fork));
            boxk<<<tiles, 256, 0, s1>>>(wide, e);
            CK(cudaEventRecord(join[6], s1));
            if (delay_ns > 0) k_spin<<<1, 32, 0, s0>>>((uint64_t)delay_ns);
            if (delay_ns >= 0) k_set<<<1, 32, 0, s0>>>(e.ready);
            z_sides();
            CK(cudaStreamWaitEvent(s0, join[6]));
            fixup();
            for (size_t i = 0; i < 2; ++i) CK(cudaStreamWaitEvent(s0, join[i]));
        };
        for (int rep = 0; rep < 2; ++rep) {
            time("step-prod", true, [&] { step(nullptr, [&] { on_sides(prod_slab); }); });
            time("step-wide", true, [&] { wide_step(0); });
            time("step-wide-late40", true, [&] { wide_step(40000); });
            time("step-wide-never", true, [&] { wide_step(-1); });
        }
        time("box-wide-ready", false, [&] {
            k_set<<<1, 32, 0, s0>>>(e.ready);
            boxk<<<tiles, 256, 0, s0>>>(wide, e);
            fixup();
        });
        time("box-wide-never", false, [&] { boxk<<<tiles, 256, 0, s0>>>(wide, e); fixup(); });
        time("box-prod-wide", false, [&] { launch(wide, s0, nullptr); });
        time("box-again", false, [&] { launch(inner, s0, nullptr); });
        CK(cudaFree(e.ready));
        CK(cudaFree(e.done));
    }
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
    CK(cudaFree(st));
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount,
           (unsigned long long)N, reps);
    printf("type,variant,median_us,copy_over_variant,differing_points\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
