/*
 * step_bench.cu: the 27-point step's kernels (kernels-cu/hp_regions.cuh as built) against a
 * copy-engine copy of the same field, each result checked bit for bit against the point form.
 * Grown from ../2026-11-25-h100-step-wide/step_bench.cu. On the GPU machine, from the
 * repository root:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu results/2026-11-25-h100-step-overlap/step_bench.cu -o step_bench
 * usage: step_bench [N] [reps]   (an N^3 interior with a halo of 1, f64 and f32)
 * One CSV line per (type, variant): median microseconds of `reps` launches, the copy's median,
 * copy / kernel, the points that differ from the point form, the kernel's registers.
 * - "box-production": hp_stencil27_marching over one N^3 box (its tiles per type);
 *   "box-tiles-RxCxZ" the production template as a kernel per tiling; "box-shfl-RxCxZ" the
 *   same tiles with the x neighbours taken from warp shuffles (shfl_march below).
 * - "inner-production": the step's inner box (x, y, z from 2 to N - 1) in hp_stencil27_marching;
 *   "box-vecV-RxZ" the same box in tiles of V adjacent points a lane, one vector load a row
 *   (k_vec below).
 * - "slab-*": each shell slab of haloport stencil's step, point form and production.
 * - "step-now": the inner box and the six slabs one after another on one stream;
 *   "step-box-beside-urgent-slabs": the box on a stream of the lowest priority and each slab
 *   on one of the highest, all forked from one marker and joined (haloport's step from this
 *   change on); "step-one-low-stream": the same launches on the box's stream alone.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <string>
#include <vector>

#include "hp_kernels.cuh"
#include "hp_regions.cuh"

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* The march template with the x neighbours from warp shuffles: per plane and row a thread loads
 * its COLS points (x, x + 32, ...) once, coalesced, and takes x - 1 and x + 1 from the lanes
 * beside it; lanes 0 and 31 load the two points past the warp's ends. One load a point per row
 * where the production template makes three (unaligned) ones. The same sums in the same order:
 * the same bits. Columns past the box read the box's end column (a valid point) and store
 * nothing. */
template <typename T>
__device__ __forceinline__ T shfl_idx(T v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
template <typename T>
__device__ __forceinline__ T shfl_up1(T v) { return __shfl_up_sync(0xffffffffu, v, 1); }
template <typename T>
__device__ __forceinline__ T shfl_down1(T v) { return __shfl_down_sync(0xffffffffu, v, 1); }

template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void shfl_plane(T (&sums)[COLS][ROWS], const T* __restrict__ q,
                                           const int (&at)[COLS], int edge, int64_t ax, int live,
                                           int lane) {
    T row[COLS][ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        const T* r = q + (i - 1) * ax;
        const bool load = i <= live + 1;
        T v[COLS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) v[c] = load ? r[at[c]] : T(0);
        const T e = (load && (lane == 0 || lane == 31)) ? r[edge] : T(0);
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const T up = shfl_up1(v[c]);
            const T down = shfl_down1(v[c]);
            const T prev_last = c > 0 ? shfl_idx(v[c > 0 ? c - 1 : 0], 31) : e;
            const T next_first = c < COLS - 1 ? shfl_idx(v[c < COLS - 1 ? c + 1 : 0], 0) : e;
            const T left = lane == 0 ? prev_last : up;
            const T right = lane == 31 ? next_first : down;
            row[c][i] = (left + v[c]) + right;
        }
    }
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
#pragma unroll
        for (int i = 0; i < ROWS; ++i) sums[c][i] = (row[c][i] + row[c][i + 1]) + row[c][i + 2];
    }
}

template <typename T, int ROWS, int DEPTH, int COLS>
__device__ void shfl_march(const hp_stencil_args& a) {
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
    const int lane = (int)(threadIdx.x % HP_MARCH_X);
    const uint64_t ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x0 = a.begin[0] + (t % tiles_x) * width; /* the warp's first column */
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (y >= a.end[1]) continue; /* whole warps: every lane alike */
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        /* Column c's point of this lane, clamped to the box's end column (x = end is the last
         * right neighbour any point of the box needs). */
        int at[COLS];
        bool store[COLS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const uint64_t x = x0 + (uint64_t)(c * (int)HP_MARCH_X + lane);
            store[c] = x < a.end[0];
            at[c] = (int)((x < a.end[0] ? x : a.end[0]) - x0);
        }
        /* Lane 0: the point before the warp's first; lane 31: the one after its last. */
        const uint64_t right_edge = x0 + width < a.end[0] ? x0 + width : a.end[0];
        const int edge = lane == 0 ? -1 : (int)(right_edge - x0);
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x0 + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x0 + a.alloc[0] * (y + a.alloc[1] * z0));
        T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
        shfl_plane<T, ROWS, COLS>(lo, q, at, edge, ax, live, lane);
        shfl_plane<T, ROWS, COLS>(mid, q + plane, at, edge, ax, live, lane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            shfl_plane<T, ROWS, COLS>(hi, q, at, edge, ax, live, lane);
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (store[c] && i < live) {
                        o[c * (int)HP_MARCH_X + lane + i * ax] =
                            ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}

/* Tiles of V adjacent points a lane (one vector load of V words per row: a warp covers 32 V
 * contiguous points), the x neighbours inside a lane's vector from itself, across lanes from
 * shuffles, past the warp's ends from lanes 0 and 31. The same sums in the same order as the
 * production template: the same bits. Needs the box's first column at a multiple of V in the
 * allocation (vectors aligned): step_bench's inner box starts at x = 2. Vectors past the box's
 * end read the vector holding the box's end column and store nothing. */
template <typename T, int V>
struct alignas(sizeof(T) * V) vec_of {
    T v[V];
};

template <typename T, int V, int ROWS>
__device__ __forceinline__ void vec_plane(T (&sums)[V][ROWS], const T* __restrict__ q, int at,
                                          int edge, int64_t ax, int live, int lane) {
    T row[V][ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        const T* r = q + (i - 1) * ax;
        const bool load = i <= live + 1;
        vec_of<T, V> w;
        if (load) {
            w = *(const vec_of<T, V>*)(r + at);
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j) w.v[j] = T(0);
        }
        const T e = (load && (lane == 0 || lane == 31)) ? r[edge] : T(0);
        const T up = shfl_up1(w.v[V - 1]);
        const T down = shfl_down1(w.v[0]);
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const T left = j > 0 ? w.v[j > 0 ? j - 1 : 0] : (lane == 0 ? e : up);
            const T right = j < V - 1 ? w.v[j < V - 1 ? j + 1 : 0] : (lane == 31 ? e : down);
            row[j][i] = (left + w.v[j]) + right;
        }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
#pragma unroll
        for (int i = 0; i < ROWS; ++i) sums[j][i] = (row[j][i] + row[j][i + 1]) + row[j][i + 2];
    }
}

template <typename T, int V, int ROWS, int DEPTH>
__global__ void __launch_bounds__(256) k_vec(hp_stencil_args a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t width = (uint64_t)HP_MARCH_X * V;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + width - 1) / width;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const int lane = (int)(threadIdx.x % HP_MARCH_X);
    const uint64_t ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    /* The vector holding the box's end column (the last right neighbour the box needs). */
    const uint64_t last_vec = a.end[0] - a.end[0] % V;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x0 = a.begin[0] + (t % tiles_x) * width;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (y >= a.end[1]) continue;
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        const uint64_t x = x0 + (uint64_t)(V * lane);
        const int at = (int)((x < last_vec ? x : last_vec) - x0);
        const uint64_t right_edge = x0 + width < a.end[0] ? x0 + width : a.end[0];
        const int edge = lane == 0 ? -1 : (int)(right_edge - x0);
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x0 + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        const bool whole = x + V <= a.end[0];
        T lo[V][ROWS], mid[V][ROWS], hi[V][ROWS];
        vec_plane<T, V, ROWS>(lo, q, at, edge, ax, live, lane);
        vec_plane<T, V, ROWS>(mid, q + plane, at, edge, ax, live, lane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            vec_plane<T, V, ROWS>(hi, q, at, edge, ax, live, lane);
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                vec_of<T, V> r;
#pragma unroll
                for (int j = 0; j < V; ++j) r.v[j] = ((lo[j][i] + mid[j][i]) + hi[j][i]) * scale;
                if (i < live) {
                    if (whole) {
                        *(vec_of<T, V>*)(o + i * ax) = r;
                    } else {
#pragma unroll
                        for (int j = 0; j < V; ++j) {
                            if (x + j < a.end[0]) o[i * ax + j] = r.v[j];
                        }
                    }
                }
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    lo[j][i] = mid[j][i];
                    mid[j][i] = hi[j][i];
                }
            }
        }
    }
}

template <typename T, int ROWS, int DEPTH, int COLS, bool SHFL>
__global__ void __launch_bounds__(256) k_tiles(hp_stencil_args a) {
    if (SHFL) {
        shfl_march<T, ROWS, DEPTH, COLS>(a);
    } else {
        hp_stencil27_march<T, ROWS, DEPTH, COLS>(a);
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(256) k_slab(hp_stencil_args a) {
    hp_stencil27_slab<T, D>(a);
}

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
__global__ void k_poison(hp_stencil_args a) {
    T* out = (T*)a.out;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1];
    const uint64_t n = bx * by * (a.end[2] - a.begin[2]);
    for (uint64_t p = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; p < n;
         p += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t x = a.begin[0] + p % bx, y = a.begin[1] + (p / bx) % by,
                       z = a.begin[2] + p / bx / by;
        out[x + a.alloc[0] * (y + a.alloc[1] * z)] = T(-1234.5);
    }
}

template <typename T>
__global__ void k_diff(const T* a, const T* b, uint64_t n, unsigned long long* count) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        bool same = sizeof(T) == 8
                        ? __double_as_longlong((double)a[i]) == __double_as_longlong((double)b[i])
                        : __float_as_uint((float)a[i]) == __float_as_uint((float)b[i]);
        if (!same) atomicAdd(count, 1ull);
    }
}

static uint64_t ext(const hp_stencil_args& a, int k) { return a.end[k] - a.begin[k]; }

static unsigned tiles(const hp_stencil_args& a, int rows, int cols, int depth) {
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (unsigned)(((ext(a, 0) + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static unsigned points(const hp_stencil_args& a) {
    return (unsigned)((ext(a, 0) * ext(a, 1) * ext(a, 2) + 255) / 256);
}
static unsigned columns(const hp_stencil_args& a, int depth) {
    return (unsigned)((ext(a, 0) * ext(a, 1) * ((ext(a, 2) + depth - 1) / depth) + 255) / 256);
}
static bool thick(const hp_stencil_args& a) {
    return ext(a, 0) >= HP_MARCH_X && ext(a, 1) >= HP_MARCH_ROWS && ext(a, 2) >= HP_MARCH_MIN_Z;
}

typedef void (*Kern)(hp_stencil_args);
struct Launch1 {
    Kern k;
    unsigned blocks;
    hp_stencil_args a;
};

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename T>
static void run(const char* tname, uint64_t N, int reps) {
    const uint64_t A = N + 2, n = A * A * A;
    const size_t bytes = n * sizeof(T);
    T *in, *out, *ref;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&ref, bytes));
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    k_init<T><<<4096, 256>>>(in, n);
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<points(a), 256>>>(a);
    CK(cudaDeviceSynchronize());
    a.out = (uint64_t)out;
    a.form = HP_STENCIL_FORM_MARCH;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto copy_us = [&]() {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    const float copy0 = copy_us();
    printf("%s,copy,%.1f,%.1f,1.000,0,0\n", tname, copy0, copy0);
    // Times a list of launches (one variant) and compares the whole field with the point
    // form's: out starts as ref with the launches' boxes poisoned.
    auto time = [&](const char* name, const std::vector<Launch1>& ls) {
        CK(cudaMemcpy(out, ref, bytes, cudaMemcpyDeviceToDevice));
        // Poison the covered boxes, so that a point left unwritten differs.
        for (const Launch1& l : ls) k_poison<T><<<4096, 256>>>(l.a);
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            for (const Launch1& l : ls) l.k<<<l.blocks, 256>>>(l.a);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<T><<<4096, 256>>>(out, ref, n, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        int regs = 0;
        if (ls.size() == 1) {
            cudaFuncAttributes attr;
            CK(cudaFuncGetAttributes(&attr, (const void*)ls[0].k));
            regs = attr.numRegs;
        }
        const float us = median(t);
        printf("%s,%s,%.1f,%.1f,%.3f,%llu,%d\n", tname, name, us, copy0, copy0 / us, diffs, regs);
        fflush(stdout);
    };
    const bool f64 = sizeof(T) == 8;
    const int prow = f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS;
    const int pcol = f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS;
    const int pz = f64 ? HP_MARCH64_Z : HP_MARCH32_Z;
    // One N^3 box.
    time("box-production", {{hp_stencil27_marching, tiles(a, prow, pcol, pz), a}});
#define TILES(R, C, Z)                                                                   \
    time("box-tiles-" #R "x" #C "x" #Z, {{k_tiles<T, R, Z, C, false>, tiles(a, R, C, Z), a}}); \
    time("box-shfl-" #R "x" #C "x" #Z, {{k_tiles<T, R, Z, C, true>, tiles(a, R, C, Z), a}})
    if (getenv("BENCH_TILES_ALL")) {
        TILES(2, 2, 32);
        TILES(2, 2, 16);
        TILES(4, 1, 32);
        TILES(4, 2, 16);
        TILES(2, 4, 16);
        TILES(8, 1, 16);
        TILES(4, 2, 32);
    }
    // Deeper tiles: fewer planes read twice (2 of every Z).
    time("box-tiles-2x2x32", {{k_tiles<T, 2, 32, 2, false>, tiles(a, 2, 2, 32), a}});
    time("box-tiles-2x2x64", {{k_tiles<T, 2, 64, 2, false>, tiles(a, 2, 2, 64), a}});
    time("box-tiles-2x2x128", {{k_tiles<T, 2, 128, 2, false>, tiles(a, 2, 2, 128), a}});
    time("box-tiles-2x2x16", {{k_tiles<T, 2, 16, 2, false>, tiles(a, 2, 2, 16), a}});
#define VEC(V, R, Z) \
    time("box-vec" #V "-" #R "x" #Z, {{k_vec<T, V, R, Z>, tiles(a, R, V, Z), a}})
    // The inner box of the step (x from 2): vectors aligned.
    {
        hp_stencil_args in_box = a;
        for (int k = 0; k < 3; ++k) in_box.begin[k] = 2, in_box.end[k] = N;
        const hp_stencil_args keep = a;
        a = in_box;
        time("inner-production", {{hp_stencil27_marching, tiles(a, prow, pcol, pz), a}});
        VEC(2, 2, 32);
        VEC(2, 4, 32);
        VEC(2, 2, 16);
        VEC(2, 4, 16);
        a = keep;
    }
#undef VEC
#undef TILES
    time("box-production-again", {{hp_stencil27_marching, tiles(a, prow, pcol, pz), a}});
    // The step's boxes (core/src/stencil.rs boxes()): the inner box, then the slabs.
    const uint64_t lo = 1, hi = N + 1;
    const uint64_t boxes[7][2][3] = {
        {{lo + 1, lo + 1, lo + 1}, {hi - 1, hi - 1, hi - 1}},
        {{lo, lo, lo}, {hi, hi, lo + 1}},
        {{lo, lo, hi - 1}, {hi, hi, hi}},
        {{lo, lo, lo + 1}, {hi, lo + 1, hi - 1}},
        {{lo, hi - 1, lo + 1}, {hi, hi, hi - 1}},
        {{lo, lo + 1, lo + 1}, {lo + 1, hi - 1, hi - 1}},
        {{hi - 1, lo + 1, lo + 1}, {hi, hi - 1, hi - 1}},
    };
    const char* names[7] = {"inner", "z-low", "z-high", "y-low", "y-high", "x-low", "x-high"};
    hp_stencil_args b[7];
    for (int i = 0; i < 7; ++i) {
        b[i] = a;
        for (int k = 0; k < 3; ++k) {
            b[i].begin[k] = boxes[i][0][k];
            b[i].end[k] = boxes[i][1][k];
        }
    }
    for (int i = 1; i < 7; ++i) {
        std::string s = std::string("slab-") + names[i];
        hp_stencil_args p = b[i];
        p.form = HP_STENCIL_FORM_POINTS;
        time((s + "-points").c_str(), {{hp_stencil27, points(p), p}});
        if (ext(b[i], 2) < HP_MARCH_MIN_Z) continue;
        time((s + "-production").c_str(), {{hp_stencil27_marching, columns(b[i], HP_SLAB_Z), b[i]}});
    }
    // The whole step's compute, now and before.
    std::vector<Launch1> now, before;
    for (int i = 0; i < 7; ++i) {
        hp_stencil_args p = b[i];
        if (thick(b[i])) {
            now.push_back({hp_stencil27_marching, tiles(b[i], prow, pcol, pz), b[i]});
            before.push_back(now.back());
        } else {
            if (ext(b[i], 2) >= HP_MARCH_MIN_Z) {
                now.push_back({hp_stencil27_marching, columns(b[i], HP_SLAB_Z), b[i]});
            } else {
                now.push_back({hp_stencil27, points(p), p});
            }
            before.push_back({hp_stencil27, points(p), p});
        }
    }
    time("step-now", now);
    time("step-slabs-in-points", before);
    // The step as haloport now queues it: the box on a stream of ordinary priority, each slab
    // on a stream of the highest, all after one marker, joined back.
    {
        int least, greatest;
        CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        cudaStream_t main_s, box_s, slab_s[6];
        CK(cudaStreamCreateWithPriority(&main_s, cudaStreamNonBlocking, greatest));
        CK(cudaStreamCreateWithPriority(&box_s, cudaStreamNonBlocking, least));
        for (int i = 0; i < 6; ++i) {
            CK(cudaStreamCreateWithPriority(&slab_s[i], cudaStreamNonBlocking, greatest));
        }
        cudaEvent_t fork, join[7];
        CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        for (int i = 0; i < 7; ++i) CK(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming));
        auto overlap = [&](const char* name, bool urgent) {
            CK(cudaMemcpy(out, ref, bytes, cudaMemcpyDeviceToDevice));
            for (const Launch1& l : now) k_poison<T><<<4096, 256>>>(l.a);
            CK(cudaDeviceSynchronize());
            std::vector<float> t;
            for (int i = 0; i < reps + 2; ++i) {
                CK(cudaEventRecord(e0, main_s));
                CK(cudaEventRecord(fork, main_s));
                for (size_t k = 0; k < now.size(); ++k) {
                    cudaStream_t s = k == 0 ? box_s : (urgent ? slab_s[k - 1] : box_s);
                    if (k == 0 || urgent) CK(cudaStreamWaitEvent(s, fork, 0));
                    now[k].k<<<now[k].blocks, 256, 0, s>>>(now[k].a);
                    if (k == 0 || urgent) {
                        CK(cudaEventRecord(join[k], s));
                        CK(cudaStreamWaitEvent(main_s, join[k], 0));
                    }
                }
                CK(cudaEventRecord(e1, main_s));
                CK(cudaEventSynchronize(e1));
                CK(cudaGetLastError());
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (i >= 2) t.push_back(ms * 1000.0f);
            }
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<T><<<4096, 256>>>(out, ref, n, count);
            unsigned long long diffs;
            CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
            const float us = median(t);
            printf("%s,%s,%.1f,%.1f,%.3f,%llu,0\n", tname, name, us, copy0, copy0 / us, diffs);
            fflush(stdout);
        };
        overlap("step-box-beside-urgent-slabs", true);
        overlap("step-one-low-stream", false);
        for (int i = 0; i < 6; ++i) CK(cudaStreamDestroy(slab_s[i]));
        CK(cudaStreamDestroy(main_s));
        CK(cudaStreamDestroy(box_s));
    }
    time("step-now-again", now);
    printf("%s,copy-again,%.1f,%.1f,1.000,0,0\n", tname, copy_us(), copy0);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N,
           reps);
    printf("type,variant,median_us,copy_us,copy_over_kernel,differing_points,registers\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
