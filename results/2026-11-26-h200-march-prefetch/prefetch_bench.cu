/*
 * prefetch_bench.cu: the march form with its next plane's loads issued before the current
 * plane's sums are stored (software pipelining), against the production entries, over the
 * step's inner box of an N^3 field (x, y, z from 2 to N - 1 of an (N + 2)^3 allocation) on one
 * GPU. Same sums in the same order as hp_stencil27_march (kernels-cu/hp_regions.cuh), so the
 * same bits: every result checked against the point form (hp_stencil27).
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu prefetch_bench.cu -o prefetch_bench
 * usage: prefetch_bench [N] [reps]
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

/* The raw loads of one plane: rows y - 1 .. y + ROWS, each at x - 1, x, x + 1, of COLS
 * columns; rows past the box's live ones not loaded (hp_march_plane's rule). */
template <typename T, int ROWS, int COLS>
struct plane_raw {
    T v[COLS][ROWS + 2][3];
};

template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void pf_load(plane_raw<T, ROWS, COLS>& p, const T* __restrict__ q,
                                        const int (&at)[COLS], int64_t ax, int live) {
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
#pragma unroll
        for (int i = 0; i < ROWS + 2; ++i) {
            if (i <= live + 1) {
                const T* r = q + at[c] + (i - 1) * ax;
                p.v[c][i][0] = r[-1];
                p.v[c][i][1] = r[0];
                p.v[c][i][2] = r[1];
            } else {
                p.v[c][i][0] = p.v[c][i][1] = p.v[c][i][2] = T(0);
            }
        }
    }
}

/* hp_march_plane's sums from loaded values: the same additions in the same order. */
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void pf_sums(T (&sums)[COLS][ROWS], const plane_raw<T, ROWS, COLS>& p) {
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
        T row[ROWS + 2];
#pragma unroll
        for (int i = 0; i < ROWS + 2; ++i) row[i] = (p.v[c][i][0] + p.v[c][i][1]) + p.v[c][i][2];
#pragma unroll
        for (int i = 0; i < ROWS; ++i) sums[c][i] = (row[i] + row[i + 1]) + row[i + 2];
    }
}

/* hp_stencil27_march with the next plane loaded before the current one is stored. */
template <typename T, int ROWS, int DEPTH, int COLS>
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
        T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
        plane_raw<T, ROWS, COLS> raw;
        pf_load(raw, q, at, ax, live);
        pf_sums(lo, raw);
        pf_load(raw, q + plane, at, ax, live);
        pf_sums(mid, raw);
        q += 2 * plane;
        pf_load(raw, q, at, ax, live);
        for (int z = 0; z < depth; ++z, o += plane) {
            pf_sums(hi, raw);
            q += plane;
            if (z + 1 < depth) pf_load(raw, q, at, ax, live);
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (c < cols && i < live) {
                        o[c * (int)HP_MARCH_X + i * ax] = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}

template <typename T, int R, int Z, int C>
__global__ void __launch_bounds__(256) k_pf_free(hp_stencil_args a) { march_pf<T, R, Z, C>(a); }
template <typename T, int R, int Z, int C>
__global__ void __launch_bounds__(256, 3) k_pf_min3(hp_stencil_args a) { march_pf<T, R, Z, C>(a); }
template <typename T, int R, int Z, int C>
__global__ void __launch_bounds__(256, 4) k_pf_min4(hp_stencil_args a) { march_pf<T, R, Z, C>(a); }
template <typename T, int R, int Z, int C>
__global__ void __launch_bounds__(256, 2) k_pf_min2(hp_stencil_args a) { march_pf<T, R, Z, C>(a); }

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
    if (f64) {
        time("production", hp_stencil27_march64, tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
    } else {
        time("production", hp_stencil27_marching, tiles(a, HP_MARCH32_ROWS, HP_MARCH32_COLS, HP_MARCH32_Z));
    }
#define PF(R, C, Z, B) time("pf-" #R "x" #C "x" #Z "-" #B, k_pf_##B<T, R, Z, C>, tiles(a, R, C, Z))
    PF(4, 1, 16, min3);
    PF(4, 1, 16, min2);
    PF(4, 1, 16, free);
    PF(2, 1, 16, min3);
    PF(2, 1, 16, min4);
    PF(2, 1, 16, free);
    PF(2, 1, 32, min3);
    PF(4, 1, 32, min3);
    PF(1, 1, 16, min4);
    PF(2, 2, 16, free);
    PF(2, 2, 16, min3);
#undef PF
    if (f64) {
        time("production-again", hp_stencil27_march64, tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
    } else {
        time("production-again", hp_stencil27_marching, tiles(a, HP_MARCH32_ROWS, HP_MARCH32_COLS, HP_MARCH32_Z));
    }
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
