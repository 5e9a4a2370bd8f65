/*
 * tile_bench.cu: the march form's tilings on one GPU, to pick the tile and the registers for
 * the device at hand. The production template hp_stencil27_march<T, ROWS, DEPTH, COLS>
 * (kernels-cu/hp_regions.cuh, as built) as a kernel per tiling and per floor of resident blocks
 * (__launch_bounds__(256, MINB): MINB 0 leaves the compiler's choice; 3 and 4 cap the registers
 * at 80 and 64, for more warps a SM), over the stencil step's inner box of an N^3 field,
 * against a copy-engine copy of the field; every result checked bit for bit against the point
 * form (hp_stencil27). Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu results/2026-11-26-h200-tiles/tile_bench.cu -o tile_bench
 * usage: tile_bench [N] [reps] [prod]
 * prod: instead of the tilings, candidates for the production entry (prod_body: its body with
 * the tiles and the floor of resident blocks as parameters) over the inner box and the step's
 * x-low and y-low slabs, beside the entry as built.
 * One CSV line per (type, tiling): median us of `reps` launches, the copy's median, copy /
 * kernel, points differing from the point form, registers, local (spill) bytes a thread.
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

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

template <typename T, int ROWS, int DEPTH, int COLS>
__global__ void __launch_bounds__(256) k_free(hp_stencil_args a) {
    hp_stencil27_march<T, ROWS, DEPTH, COLS>(a);
}
template <typename T, int ROWS, int DEPTH, int COLS>
__global__ void __launch_bounds__(256, 3) k_min3(hp_stencil_args a) {
    hp_stencil27_march<T, ROWS, DEPTH, COLS>(a);
}
template <typename T, int ROWS, int DEPTH, int COLS>
__global__ void __launch_bounds__(256, 4) k_min4(hp_stencil_args a) {
    hp_stencil27_march<T, ROWS, DEPTH, COLS>(a);
}

/* hp_stencil27_marching's body with the tiles of each element type and the floor of resident
 * blocks as parameters: candidates for the production entry, slab path included (it shares
 * the entry's registers). */
template <int R64, int C64, int Z64, int R32, int C32, int Z32>
__device__ __forceinline__ void prod_body(const hp_stencil_args& a) {
    if (hp_stencil_box_empty(a)) return;
    const bool tiles = hp_stencil_marches(a);
    if (a.elem_bytes == 8) {
        if (tiles) {
            hp_stencil27_march<double, R64, Z64, C64>(a);
        } else {
            hp_stencil27_slab<double, HP_SLAB_Z>(a);
        }
    } else if (a.elem_bytes == 4) {
        if (tiles) {
            hp_stencil27_march<float, R32, Z32, C32>(a);
        } else {
            hp_stencil27_slab<float, HP_SLAB_Z>(a);
        }
    }
}
template <int R64, int C64, int Z64, int R32, int C32, int Z32>
__global__ void __launch_bounds__(256) k_prod_free(hp_stencil_args a) {
    prod_body<R64, C64, Z64, R32, C32, Z32>(a);
}
template <int R64, int C64, int Z64, int R32, int C32, int Z32>
__global__ void __launch_bounds__(256, 3) k_prod_min3(hp_stencil_args a) {
    prod_body<R64, C64, Z64, R32, C32, Z32>(a);
}
template <int R64, int C64, int Z64, int R32, int C32, int Z32>
__global__ void __launch_bounds__(256, 4) k_prod_min4(hp_stencil_args a) {
    prod_body<R64, C64, Z64, R32, C32, Z32>(a);
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

/* Points of box `b` where `a` and `b`'s reference differ (bit for bit). */
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
static void run(const char* tname, uint64_t N, int reps, bool prod) {
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
    // The reference: the point form over the whole interior.
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((ext(a, 0) * ext(a, 1) * ext(a, 2) + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    // The step's inner box: every neighbour interior.
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
    const float copy0 =
        timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
    printf("%s,copy,%.1f,%.1f,1.000,0,0,0\n", tname, copy0, copy0);
    auto time = [&](const char* name, Kern k, unsigned blocks, const hp_stencil_args& a) {
        // A point of the box left unwritten differs from the reference.
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
    const int prow = f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS;
    const int pcol = f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS;
    const int pz = f64 ? HP_MARCH64_Z : HP_MARCH32_Z;
    time("production", hp_stencil27_marching, tiles(a, prow, pcol, pz), a);
    if (!prod) {
#define TILE(R, C, Z)                                                                 \
    time("tiles-" #R "x" #C "x" #Z "-free", k_free<T, R, Z, C>, tiles(a, R, C, Z), a);  \
    time("tiles-" #R "x" #C "x" #Z "-min3", k_min3<T, R, Z, C>, tiles(a, R, C, Z), a);  \
    time("tiles-" #R "x" #C "x" #Z "-min4", k_min4<T, R, Z, C>, tiles(a, R, C, Z), a)
    TILE(1, 1, 16);
    TILE(1, 1, 32);
    TILE(2, 1, 16);
    TILE(2, 1, 32);
    TILE(2, 1, 64);
    TILE(1, 2, 16);
    TILE(1, 2, 32);
    TILE(2, 2, 16);
    TILE(2, 2, 32);
    TILE(4, 1, 16);
    TILE(4, 1, 32);
    TILE(1, 4, 16);
#undef TILE
    } else {
        // The step's x-low and y-low slabs (core/src/stencil.rs), a thread a column.
        hp_stencil_args xs = a, ys = a;
        xs.begin[0] = 1, xs.end[0] = 2, xs.begin[1] = 2, xs.end[1] = N, xs.begin[2] = 2, xs.end[2] = N;
        ys.begin[0] = 1, ys.end[0] = N + 1, ys.begin[1] = 1, ys.end[1] = 2, ys.begin[2] = 2, ys.end[2] = N;
        auto cols = [&](const hp_stencil_args& b) {
            return (unsigned)((ext(b, 0) * ext(b, 1) * ((ext(b, 2) + HP_SLAB_Z - 1) / HP_SLAB_Z) + 255) / 256);
        };
        const bool f64t = sizeof(T) == 8;
#define PROD(NAME, K, R64, C64, Z64, R32, C32, Z32)                                        \
        {                                                                                  \
            Kern k = K<R64, C64, Z64, R32, C32, Z32>;                                      \
            time("prod-" NAME, k, f64t ? tiles(a, R64, C64, Z64) : tiles(a, R32, C32, Z32), a); \
            time("prod-" NAME "-slab-x", k, cols(xs), xs);                                 \
            time("prod-" NAME "-slab-y", k, cols(ys), ys);                                 \
        }
        time("production-slab-x", hp_stencil27_marching, cols(xs), xs);
        time("production-slab-y", hp_stencil27_marching, cols(ys), ys);
        PROD("now-free", k_prod_free, 2, 2, 32, 2, 2, 16);
        PROD("now-min3", k_prod_min3, 2, 2, 32, 2, 2, 16);
        PROD("4x1x16-min3", k_prod_min3, 4, 1, 16, 2, 2, 16);
        PROD("2x1x16-min3", k_prod_min3, 2, 1, 16, 2, 2, 16);
        PROD("2x1x32-min3", k_prod_min3, 2, 1, 32, 2, 2, 16);
        PROD("4x1x32-min3", k_prod_min3, 4, 1, 32, 2, 2, 16);
        PROD("4x1x16-min4", k_prod_min4, 4, 1, 16, 2, 2, 16);
        PROD("4x1x16-f32-2x1x16-min3", k_prod_min3, 4, 1, 16, 2, 1, 16);
#undef PROD
    }
    time("production-again", hp_stencil27_marching, tiles(a, prow, pcol, pz), a);
    printf("%s,copy-again,%.1f,%.1f,1.000,0,0,0\n", tname,
           timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }), copy0);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    const bool prod = argc > 3 && strcmp(argv[3], "prod") == 0;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount,
           (unsigned long long)N, reps);
    printf("type,variant,median_us,copy_us,copy_over_kernel,differing_points,registers,local_bytes\n");
    run<double>("f64", N, reps, prod);
    run<float>("f32", N, reps, prod);
    return 0;
}
