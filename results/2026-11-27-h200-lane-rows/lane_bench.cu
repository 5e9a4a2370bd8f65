/*
 * lane_bench.cu: the march form with a row's x neighbours taken from the lanes beside (warp
 * shuffles) instead of loads of their own, each lane P consecutive points loaded as one vector.
 * hp_march_plane loads every row three times (x - 1, x, x + 1: two of the loads unaligned, two
 * L1 wavefronts a warp each); here a lane loads its P points once, takes x - 1 and x + P from
 * the lanes beside, and lanes 0 and 31 load the warp's two ends. Same sums in the same order,
 * so the same bits: every variant is checked bit for bit against the point form (hp_stencil27).
 * One GPU, the stencil step's inner box (2 .. N of an (N + 2)^3 field; with P = 4 also an
 * allocation padded in x to a multiple of 4), median of `reps` launches against a copy-engine
 * copy of the field.
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu lane_bench.cu -o lane_bench
 * usage: lane_bench [N] [reps] [wide]   (wide: call 2's variants of the 4-point lanes alone)
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

/* P consecutive elements as one load / store (P * sizeof(T) aligned). */
template <typename T, int P>
struct lane_vec;
template <typename T>
struct lane_vec<T, 1> {
    __device__ static void load(T (&v)[1], const T* p) { v[0] = *p; }
    __device__ static void store(T* p, const T (&v)[1]) { *p = v[0]; }
};
template <>
struct lane_vec<float, 2> {
    __device__ static void load(float (&v)[2], const float* p) {
        const float2 w = *(const float2*)p;
        v[0] = w.x, v[1] = w.y;
    }
    __device__ static void store(float* p, const float (&v)[2]) { *(float2*)p = make_float2(v[0], v[1]); }
};
template <>
struct lane_vec<double, 2> {
    __device__ static void load(double (&v)[2], const double* p) {
        const double2 w = *(const double2*)p;
        v[0] = w.x, v[1] = w.y;
    }
    __device__ static void store(double* p, const double (&v)[2]) { *(double2*)p = make_double2(v[0], v[1]); }
};
template <>
struct lane_vec<float, 4> {
    __device__ static void load(float (&v)[4], const float* p) {
        const float4 w = *(const float4*)p;
        v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
    }
    __device__ static void store(float* p, const float (&v)[4]) {
        *(float4*)p = make_float4(v[0], v[1], v[2], v[3]);
    }
};

/* Plane sums of rows y .. y + ROWS - 1 for the lane's P points, from q at (x, y) of the plane
 * (x = the lane's first point). `edge`: the offset from q of the point lane 0 (x - 1) or lane 31
 * (x + P) loads; rows past `live` (warp-uniform) are zero. */
template <typename T, int P, int ROWS>
__device__ __forceinline__ void lane_plane(T (&sums)[ROWS][P], const T* q, int64_t ax, int live,
                                           int edge, bool end_lane, unsigned lane) {
    T row[ROWS + 2][P];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        if (i <= live + 1) {
            const T* r = q + (i - 1) * ax;
            T v[P];
            lane_vec<T, P>::load(v, r);
            T e = T(0);
            if (end_lane) e = r[edge];
            T left = __shfl_up_sync(0xffffffffu, v[P - 1], 1);
            T right = __shfl_down_sync(0xffffffffu, v[0], 1);
            if (lane == 0u) left = e;
            if (lane == 31u) right = e;
            T ext[P + 2];
            ext[0] = left;
#pragma unroll
            for (int k = 0; k < P; ++k) ext[k + 1] = v[k];
            ext[P + 1] = right;
#pragma unroll
            for (int k = 0; k < P; ++k) row[i][k] = (ext[k] + ext[k + 1]) + ext[k + 2];
        } else {
#pragma unroll
            for (int k = 0; k < P; ++k) row[i][k] = T(0);
        }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
#pragma unroll
        for (int k = 0; k < P; ++k) sums[i][k] = (row[i][k] + row[i + 1][k]) + row[i + 2][k];
    }
}

/* hp_stencil27_march with lanes of P points: tiles 32 P wide from begin[0] rounded down to a
 * multiple of P, (blockDim.x / 32) ROWS rows, DEPTH planes. A lane whose points all lie past
 * the box's end reads the tile's first points instead (nothing it holds is stored, and no
 * stored point takes it: the lane before needs it only when its own last point is in the box).
 * Bench only: reads x = end + P - 1 at most and begin - P, which the inner box keeps inside. */
template <typename T, int P, int ROWS, int DEPTH, int PF>
__device__ __forceinline__ void march_lanes(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t xa = a.begin[0] / P * P;
    const uint64_t rows = (uint64_t)(blockDim.x / 32u) * ROWS;
    const uint64_t width = 32u * P;
    const uint64_t tiles_x = (a.end[0] - xa + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((a.end[2] - a.begin[2] + DEPTH - 1) / DEPTH);
    const unsigned lane = threadIdx.x % 32u;
    const uint64_t ty = threadIdx.x / 32u;
    const bool end_lane = lane == 0u || lane == 31u;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x0 = xa + (t % tiles_x) * width;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (y >= a.end[1]) continue; /* warp-uniform */
        uint64_t x = x0 + lane * P;
        const bool lane_used = x <= a.end[0];
        if (!lane_used) x = x0;
        const int edge = lane == 0u ? -1 : (x + P <= a.end[0] ? P : 0);
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 2; d < 2 + PF; ++d) {
            if (d <= depth) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i)
                    if (i < live) hp_prefetch_l2(q + d * plane + i * ax);
            }
        }
        T lo[ROWS][P], mid[ROWS][P], hi[ROWS][P];
        lane_plane<T, P, ROWS>(lo, q, ax, live, edge, end_lane, lane);
        lane_plane<T, P, ROWS>(mid, q + plane, ax, live, edge, end_lane, lane);
        q += 2 * plane;
        bool whole = lane_used && x >= a.begin[0] && x + P <= a.end[0];
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (PF > 0 && z + 1 + PF <= depth) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i)
                    if (i < live) hp_prefetch_l2(q + PF * plane + i * ax);
            }
            lane_plane<T, P, ROWS>(hi, q, ax, live, edge, end_lane, lane);
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                T r[P];
#pragma unroll
                for (int k = 0; k < P; ++k) r[k] = ((lo[i][k] + mid[i][k]) + hi[i][k]) * scale;
                if (i < live) {
                    if (whole) {
                        lane_vec<T, P>::store(o + i * ax, r);
                    } else if (lane_used) {
#pragma unroll
                        for (int k = 0; k < P; ++k)
                            if (x + k >= a.begin[0] && x + k < a.end[0]) o[i * ax + k] = r[k];
                    }
                }
#pragma unroll
                for (int k = 0; k < P; ++k) {
                    lo[i][k] = mid[i][k];
                    mid[i][k] = hi[i][k];
                }
            }
        }
    }
}

template <typename T, int P, int ROWS, int DEPTH, int PF>
__global__ void __launch_bounds__(256) k_free(hp_stencil_args a) {
    march_lanes<T, P, ROWS, DEPTH, PF>(a);
}
template <typename T, int P, int ROWS, int DEPTH, int PF>
__global__ void __launch_bounds__(256, 3) k_min3(hp_stencil_args a) {
    march_lanes<T, P, ROWS, DEPTH, PF>(a);
}
template <typename T, int P, int ROWS, int DEPTH, int PF>
__global__ void __launch_bounds__(256, 4) k_min4(hp_stencil_args a) {
    march_lanes<T, P, ROWS, DEPTH, PF>(a);
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

/* Points of box `b` where x and the reference y differ (bit for bit). */
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
static unsigned march_tiles(const hp_stencil_args& a, int rows, int cols, int depth) {
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (unsigned)(((ext(a, 0) + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static unsigned lane_tiles(const hp_stencil_args& a, int p, int rows, int depth) {
    const uint64_t xa = a.begin[0] / p * p, w = 32 * (uint64_t)p, r = 8 * (uint64_t)rows;
    return (unsigned)(((a.end[0] - xa + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

typedef void (*Kern)(hp_stencil_args);

/* One field of N^3 points with a halo of 1, allocated ax x (N + 2) x (N + 2). */
template <typename T>
static void run(const char* tname, uint64_t N, uint64_t ax, int reps, bool wide) {
    const uint64_t A = N + 2, n = ax * A * A;
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
    a.alloc[0] = ax;
    a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((ext(a, 0) * ext(a, 1) * ext(a, 2) + 255) / 256), 256>>>(a);
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
    printf("%s,%llu,copy,%.1f,%.1f,1.000,0,0,0\n", tname, (unsigned long long)ax, copy0, copy0);
    auto time = [&](const char* name, Kern k, unsigned blocks) {
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k<<<blocks, 256>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<T><<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, (const void*)k));
        printf("%s,%llu,%s,%.1f,%.1f,%.3f,%llu,%d,%zu\n", tname, (unsigned long long)ax, name, us,
               copy0, copy0 / us, diffs, attr.numRegs, attr.localSizeBytes);
        fflush(stdout);
    };
    const bool f64 = sizeof(T) == 8;
    if (f64) {
        time("production-march64", hp_stencil27_march64,
             march_tiles(a, HP_MARCH64_ROWS, HP_MARCH64_COLS, HP_MARCH64_Z));
    } else {
        time("production-marching", hp_stencil27_marching,
             march_tiles(a, HP_MARCH32_ROWS, HP_MARCH32_COLS, HP_MARCH32_Z));
    }
#define LANES(P, R, Z, PF)                                                                          \
    time("lanes-p" #P "-r" #R "-z" #Z "-pf" #PF "-free", k_free<T, P, R, Z, PF>, lane_tiles(a, P, R, Z)); \
    time("lanes-p" #P "-r" #R "-z" #Z "-pf" #PF "-min3", k_min3<T, P, R, Z, PF>, lane_tiles(a, P, R, Z)); \
    time("lanes-p" #P "-r" #R "-z" #Z "-pf" #PF "-min4", k_min4<T, P, R, Z, PF>, lane_tiles(a, P, R, Z))
    if (!wide) {
        LANES(1, 2, 16, 0);
        LANES(1, 4, 16, 0);
        LANES(1, 4, 8, 2);
        LANES(2, 2, 16, 0);
        LANES(2, 2, 16, 2);
        LANES(2, 4, 16, 0);
        LANES(2, 4, 8, 2);
        LANES(2, 1, 16, 0);
    }
    if constexpr (sizeof(T) == 4) {
        if (ax % 4 == 0 && !wide) {
            LANES(4, 1, 16, 0);
            LANES(4, 2, 16, 0);
            LANES(4, 2, 16, 2);
        }
        if (ax % 4 == 0 && wide) {
            /* Call 2: the 4-point lanes around call 1's best (4 x 2 x 16, prefetch 2). */
            LANES(4, 2, 16, 2);
            LANES(4, 2, 16, 1);
            LANES(4, 2, 16, 3);
            LANES(4, 2, 8, 2);
            LANES(4, 2, 32, 2);
            LANES(4, 1, 16, 2);
            LANES(4, 1, 32, 2);
            LANES(4, 3, 16, 2);
            LANES(4, 4, 16, 2);
            LANES(4, 4, 8, 2);
        }
    }
#undef LANES
    printf("%s,%llu,copy-again,%.1f,%.1f,1.000,0,0,0\n", tname, (unsigned long long)ax,
           timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }), copy0);
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
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N, reps);
    printf("type,alloc_x,variant,median_us,copy_us,copy_over_kernel,differing_points,registers,local_bytes\n");
    /* "wide": call 2's sweep of the 4-point lanes alone. */
    const bool wide = argc > 3 && strcmp(argv[3], "wide") == 0;
    if (!wide) run<float>("f32", N, N + 2, reps, false);
    run<float>("f32", N, (N + 2 + 3) / 4 * 4, reps, wide);
    if (!wide) run<double>("f64", N, N + 2, reps, false);
    return 0;
}
