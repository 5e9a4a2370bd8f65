/*
 * f32_bench.cu: the f32 march tiles with L2 prefetch (hp_stencil27_march's PF) in the shape of
 * production's hp_stencil27_marching entry (both element types and the slab path in one
 * kernel) and in entries of their own, over the step's inner box of an N^3 field (x, y, z from 2
 * to N - 1 of an (N + 2)^3 allocation) on one GPU, every result checked bit for bit against the
 * point form (hp_stencil27).
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu f32_bench.cu -o f32_bench
 * usage: f32_bench [N] [reps]
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

/* hp_stencil27_marching's body with the f32 tiles' prefetch distance P32 and the f64 tiles' P64. */
template <int P32, int P64>
__device__ __forceinline__ void entry_body(const hp_stencil_args& a) {
    if (hp_stencil_box_empty(a)) return;
    const bool tiles = hp_stencil_marches(a);
    if (a.elem_bytes == 8) {
        if (tiles) {
            hp_stencil27_march<double, HP_MARCHING64_ROWS, HP_MARCHING64_Z, HP_MARCHING64_COLS, P64>(a);
        } else {
            hp_stencil27_slab<double, HP_SLAB_Z>(a);
        }
    } else if (a.elem_bytes == 4) {
        if (tiles) {
            hp_stencil27_march<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS, P32>(a);
        } else {
            hp_stencil27_slab<float, HP_SLAB_Z>(a);
        }
    }
}
template <int P32, int P64>
__global__ void __launch_bounds__(256) k_entry(hp_stencil_args a) { entry_body<P32, P64>(a); }
template <int P32, int P64>
__global__ void __launch_bounds__(256, 4) k_entry4(hp_stencil_args a) { entry_body<P32, P64>(a); }
template <int R, int Z, int C, int P, int MINB>
__global__ void __launch_bounds__(256, MINB) k_own(hp_stencil_args a) {
    if (hp_stencil_box_empty(a) || !hp_stencil_marches(a)) return;
    hp_stencil27_march<float, R, Z, C, P>(a);
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

int main(int argc, char** argv) {
    typedef float T;
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount,
           (unsigned long long)N, reps);
    printf("type,variant,median_us,copy_us,copy_over_kernel,differing_points,registers,local_bytes\n");
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
    printf("f32,copy,%.1f,%.1f,1.000,0,0,0\n", copy0, copy0);
    auto time = [&](const char* name, Kern k, unsigned blocks) {
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k<<<blocks, 256>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<T><<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, (const void*)k));
        printf("f32,%s,%.1f,%.1f,%.3f,%llu,%d,%zu\n", name, us, copy0, copy0 / us, diffs,
               attr.numRegs, attr.localSizeBytes);
        fflush(stdout);
    };
    const unsigned prod = tiles(a, HP_MARCH32_ROWS, HP_MARCH32_COLS, HP_MARCH32_Z);
    for (int round = 0; round < 2; ++round) {
        time("production", hp_stencil27_marching, prod);
        time("entry-p0", k_entry<0, 0>, prod);
        time("entry-p1", k_entry<1, 0>, prod);
        time("entry-p2", k_entry<2, 0>, prod);
        time("entry-p2-p64", k_entry<2, 2>, prod);
        time("entry4-p2", k_entry4<2, 0>, prod);
        time("own-2x2x16-p2-min3", k_own<2, 16, 2, 2, 3>, prod);
        time("own-2x2x16-p1-min3", k_own<2, 16, 2, 1, 3>, prod);
        time("own-2x2x16-p2-min2", k_own<2, 16, 2, 2, 2>, prod);
        time("own-4x1x16-p2-min3", k_own<4, 16, 1, 2, 3>, tiles(a, 4, 1, 16));
        time("own-4x1x8-p2-min3", k_own<4, 8, 1, 2, 3>, tiles(a, 4, 1, 8));
        time("own-2x2x8-p2-min3", k_own<2, 8, 2, 2, 3>, tiles(a, 2, 2, 8));
    }
    return 0;
}
