/*
 * l2pf_bench.cu: the march form with the planes ahead prefetched into L2 (no registers held for
 * them, unlike prefetch_bench's software pipelining in ../2026-11-26-h200-march-prefetch),
 * against the production entries, over the step's inner box of an N^3 field (x, y, z from 2 to
 * N - 1 of an (N + 2)^3 allocation) on one GPU. The same sums in the same order as
 * hp_stencil27_march (kernels-cu/hp_regions.cuh), so the same bits: every result checked
 * against the point form (hp_stencil27).
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu l2pf_bench.cu -o l2pf_bench
 * usage: l2pf_bench [N] [reps]
 * CSV: type, variant, median us of `reps` launches, copy us, copy / kernel, differing points,
 * registers, spill bytes.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* KIND 0: no prefetch (the production body); 1: each lane prefetches its own rows of the
 * plane PD ahead (prefetch.global.L2); 2: each lane its rows and the two beside them; 3: lane 0
 * of each warp one bulk prefetch a row (cp.async.bulk.prefetch.L2, sm_90) of the warp's rows and
 * the two beside them; 4: as 1, with evict_last. */
template <int KIND>
__device__ __forceinline__ void pf_row(const void* row, unsigned bytes) {
    if (KIND == 1 || KIND == 2) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row));
    } else if (KIND == 4) {
        asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(row));
    } else if (KIND == 3) {
        const uint64_t a = (uint64_t)row & ~(uint64_t)15;
        const uint64_t e = ((uint64_t)row + bytes + 15) & ~(uint64_t)15;
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"((unsigned)(e - a))
                     : "memory");
    }
}

/* Prefetches the rows of plane `p` (a pointer at the thread's x, first row y, of that plane). */
template <typename T, int ROWS, int COLS, int KIND>
__device__ __forceinline__ void pf_plane(const T* p, int64_t ax, const int (&at)[COLS], int live,
                                         unsigned lane) {
    if (KIND == 1 || KIND == 4) {
#pragma unroll
        for (int c = 0; c < COLS; ++c)
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
                if (i < live) pf_row<KIND>(p + at[c] + i * ax, 0);
    } else if (KIND == 2) {
#pragma unroll
        for (int c = 0; c < COLS; ++c)
#pragma unroll
            for (int i = -1; i <= ROWS; ++i)
                if (i <= live) pf_row<KIND>(p + at[c] + i * ax, 0);
    } else if (KIND == 3) {
        if (lane == 0) {
#pragma unroll
            for (int i = -1; i <= ROWS; ++i)
                if (i <= live)
                    pf_row<KIND>(p - 1 + i * ax, (unsigned)((HP_MARCH_X * COLS + 2) * sizeof(T)));
        }
    }
}

template <typename T, int ROWS, int DEPTH, int COLS, int KIND, int PD>
__device__ __forceinline__ void march_pf(const hp_stencil_args& a) {
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
        if (KIND != 0) {
            /* the planes z0 + 1 .. z0 + PD, loaded in the first PD steps */
#pragma unroll
            for (int d = 2; d < 2 + PD; ++d)
                if (d <= depth) pf_plane<T, ROWS, COLS, KIND>(q + d * plane, ax, at, live, tx);
        }
        T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            hp_march_plane(lo[c], q + at[c], ax, live);
            hp_march_plane(mid[c], q + at[c] + plane, ax, live);
        }
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (KIND != 0 && z + 1 + PD <= depth)
                pf_plane<T, ROWS, COLS, KIND>(q + PD * plane, ax, at, live, tx);
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
}

template <typename T, int R, int Z, int C, int K, int P>
__global__ void __launch_bounds__(256, 3) k_min3(hp_stencil_args a) { march_pf<T, R, Z, C, K, P>(a); }
template <typename T, int R, int Z, int C, int K, int P>
__global__ void __launch_bounds__(256, 4) k_min4(hp_stencil_args a) { march_pf<T, R, Z, C, K, P>(a); }


/* The march form from shared memory: a block's tile is 32 x 8 ROWS points, DEPTH planes; each
 * plane of the tile with its border (34 x (8 ROWS + 2) points) is copied into shared memory by
 * cp.async, S - 1 planes ahead of the plane summed (S stages), so the loads in flight do not
 * hold registers; each thread then sums its ROWS rows from shared memory with
 * hp_march_plane, the same operations as the production form, so the same bits. */
template <typename T>
__device__ __forceinline__ void cp_async(T* dst, const T* src) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if (sizeof(T) == 8) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
    }
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

template <typename T, int ROWS, int DEPTH, int S>
__device__ __forceinline__ void march_smem(const hp_stencil_args& a) {
    constexpr int W = HP_MARCH_X + 2;          /* a smem row: x - 1 .. x + 32 */
    constexpr int H = 8 * ROWS + 2;            /* rows y - 1 .. y + 8 ROWS */
    constexpr int PER = (W * H + 255) / 256;   /* elements a thread copies a plane */
    __shared__ T tile[S][H][W];
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + HP_MARCH_X - 1) / HP_MARCH_X;
    const uint64_t tiles_y = (by + 8 * ROWS - 1) / (8 * ROWS);
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const int tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x0 = a.begin[0] + (t % tiles_x) * HP_MARCH_X;
        const uint64_t y0 = a.begin[1] + (rest % tiles_y) * (8 * ROWS);
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        /* the tile's copy: element e = r * W + c of a plane, if inside x0 - 1 .. end[0] and
         * y0 - 1 .. end[1] (a partial tile's other elements feed no stored point) */
        int64_t src[PER];
        int dst[PER];
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int e = threadIdx.x + 256 * k;
            const int r = e / W, c = e % W;
            const bool ok = e < W * H && x0 - 1 + c <= a.end[0] && y0 - 1 + r <= a.end[1];
            dst[k] = ok ? e : -1;
            src[k] = (int64_t)(x0 - 1 + c) + ax * (int64_t)(y0 - 1 + r);
        }
        const T* base = in + plane * (int64_t)(z0 - 1);
        auto issue = [&](int p) {
            if (p <= depth + 1) {
                T* s = &tile[p % S][0][0];
#pragma unroll
                for (int k = 0; k < PER; ++k)
                    if (dst[k] >= 0) cp_async(s + dst[k], base + plane * p + src[k]);
            }
            cp_commit();
        };
        __syncthreads(); /* the tile before is done with every stage */
#pragma unroll
        for (int p = 0; p < S - 1; ++p) issue(p);
        const uint64_t x = x0 + tx, y = y0 + ty * ROWS;
        const bool mine = x < a.end[0] && y < a.end[1];
        const int live = !mine ? 0 : a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        T lo[ROWS], mid[ROWS], hi[ROWS];
        for (int p = 0; p <= depth + 1; ++p) {
            cp_wait<S - 2>();
            __syncthreads();
            issue(p + S - 1);
            const T* q = &tile[p % S][1 + ty * ROWS][1 + tx];
            if (p == 0) {
                hp_march_plane(lo, q, (int64_t)W, live);
            } else if (p == 1) {
                hp_march_plane(mid, q, (int64_t)W, live);
            } else {
                hp_march_plane(hi, q, (int64_t)W, live);
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (i < live) o[i * ax] = ((lo[i] + mid[i]) + hi[i]) * scale;
                    lo[i] = mid[i];
                    mid[i] = hi[i];
                }
                o += plane;
            }
        }
        cp_wait<0>();
    }
}

template <typename T, int R, int Z, int S>
__global__ void __launch_bounds__(256) k_smem(hp_stencil_args a) { march_smem<T, R, Z, S>(a); }
template <typename T, int R, int Z, int S>
__global__ void __launch_bounds__(256, 3) k_smem3(hp_stencil_args a) { march_smem<T, R, Z, S>(a); }

/* Production's f64 entry, word for word, as a kernel of this file (with and without its
 * checks): production took 668 us where the same template here took 634 in the first run. */
__global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH64_MIN_BLOCKS)
    k_prodcopy(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || a.elem_bytes != 8 || !hp_stencil_marches(a)) return;
    hp_stencil27_march<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS>(a);
}
__global__ void __launch_bounds__(HP_MARCHING_MAX_THREADS, HP_MARCH64_MIN_BLOCKS)
    k_prodbody(hp_stencil_args a) {
    hp_stencil27_march<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS>(a);
}

template <typename T>
__global__ void k_init(T* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
        f[i] = (T)(((double)h / 3.0) * ((i % 3 == 0) ? -1.0 : 1.0) + 1.0 / 7.0);
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
static unsigned tiles(const hp_stencil_args& a, int rows, int cols, int depth) {
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (unsigned)(((ext(a, 0) + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

typedef void (*Kern)(hp_stencil_args);

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
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    a.begin[0] = a.begin[1] = a.begin[2] = 2;
    a.end[0] = a.end[1] = a.end[2] = N;
    a.out = (uint64_t)out;
    a.form = HP_STENCIL_FORM_MARCH;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto timed = [&](auto&& launch) {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            launch();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    const float copy0 = timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
    printf("%s,copy,%.1f,%.1f,1.000,0,0,0\n", tname, copy0, copy0);
    auto time = [&](const char* name, Kern k, unsigned blocks) {
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k<<<blocks, 256>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<T><<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, (const void*)k));
        printf("%s,%s,%.1f,%.1f,%.3f,%llu,%d,%zu\n", tname, name, us, copy0, copy0 / us, diffs,
               attr.numRegs, attr.localSizeBytes);
        fflush(stdout);
    };
    const bool f64 = sizeof(T) == 8;
    auto production = [&](const char* name) {
        if (f64) {
            time(name, hp_stencil27_march64, tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
        } else {
            time(name, hp_stencil27_marching, tiles(a, HP_MARCH32_ROWS, HP_MARCH32_COLS, HP_MARCH32_Z));
        }
    };
    production("production");
    if (f64) {
        time("production-copy", k_prodcopy, tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
        time("production-body", k_prodbody, tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
    }
#define PF(B, R, C, Z, K, P) \
    time(#B "-" #R "x" #C "x" #Z "-kind" #K "-pd" #P, k_##B<T, R, Z, C, K, P>, tiles(a, R, C, Z))
    if (f64) {
        PF(min3, 4, 1, 8, 0, 0);
        PF(min3, 4, 1, 8, 1, 1);
        PF(min3, 4, 1, 8, 1, 2);
        PF(min3, 4, 1, 8, 1, 3);
        PF(min3, 4, 1, 8, 2, 2);
        PF(min3, 4, 1, 8, 3, 1);
        PF(min3, 4, 1, 8, 3, 2);
        PF(min3, 4, 1, 8, 3, 4);
        PF(min3, 4, 1, 8, 4, 2);
        PF(min3, 4, 1, 16, 1, 2);
        PF(min3, 4, 1, 16, 3, 2);
        PF(min3, 4, 1, 16, 3, 4);
        PF(min3, 4, 1, 32, 3, 4);
        PF(min4, 2, 1, 16, 0, 0);
        PF(min4, 2, 1, 16, 3, 2);
        PF(min4, 2, 1, 16, 3, 4);
    } else {
        PF(min4, 2, 2, 16, 0, 0);
        PF(min4, 2, 2, 16, 1, 2);
        PF(min4, 2, 2, 16, 3, 1);
        PF(min4, 2, 2, 16, 3, 2);
        PF(min4, 2, 2, 16, 3, 4);
        PF(min4, 2, 2, 8, 3, 2);
        PF(min4, 4, 1, 16, 3, 2);
        PF(min4, 2, 2, 32, 3, 4);
    }
#undef PF
#define SM(B, R, Z, S) time(#B "-" #R "x1x" #Z "-stages" #S, k_##B<T, R, Z, S>, tiles(a, R, 1, Z))
    SM(smem, 4, 16, 3);
    SM(smem, 4, 16, 4);
    SM(smem, 4, 32, 4);
    SM(smem, 2, 32, 4);
    SM(smem, 4, 64, 4);
    SM(smem3, 4, 32, 3);
    SM(smem, 4, 8, 3);
#undef SM
    production("production-again");
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount,
           (unsigned long long)N, reps);
    printf("type,variant,median_us,copy_us,copy_over_kernel,differing_points,registers,local_bytes\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
