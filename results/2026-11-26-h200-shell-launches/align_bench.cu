/*
 * align_bench.cu: does the march form gain when a field's rows are aligned? One GPU, an N^3
 * field with a halo of 1, the production entries (hp_stencil27_march64 for f64,
 * hp_stencil27_marching for f32) over the whole interior and over the step's inner box, with
 *   plain     rows of N + 2 elements (as haloport allocates today)
 *   pitched   rows padded to a multiple of 32 elements (256 B f64, 128 B f32)
 *   aligned   pitched, and the allocation shifted so that the first interior cell of every row
 *             (x = 1) starts a 256-byte line: every march tile's 32 columns are whole sectors
 * Each checked bit for bit against the point form over the same field; median of `reps`.
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu align_bench.cu -o align_bench
 * usage: align_bench [N] [reps]
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
static uint32_t tiles_of(const hp_stencil_args& a, int rows, int cols, int depth) {
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (uint32_t)(((ext(a, 0) + w - 1) / w) * ((ext(a, 1) + r - 1) / r) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename T>
static void run(const char* tname, uint64_t N, int reps) {
    const bool f64 = sizeof(T) == 8;
    const int R = f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS;
    const int C = f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS;
    const int Z = f64 ? HP_MARCH64_Z : HP_MARCH32_Z;
    void (*march)(hp_stencil_args) = f64 ? hp_stencil27_march64 : hp_stencil27_marching;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto timed = [&](auto&& body) {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            body();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    const char* names[3] = {"plain", "pitched", "aligned"};
    for (int layout = 0; layout < 3; ++layout) {
        const uint64_t ax = layout == 0 ? N + 2 : (N + 2 + 31) / 32 * 32;
        const uint64_t n = ax * (N + 2) * (N + 2);
        // The first interior cell's offset from a 256-byte line: 0 when aligned.
        const uint64_t shift = layout == 2 ? 256 / sizeof(T) - 1 : 0;
        const size_t bytes = (n + 256 / sizeof(T)) * sizeof(T);
        T *in0, *out0, *ref0;
        CK(cudaMalloc(&in0, bytes));
        CK(cudaMalloc(&out0, bytes));
        CK(cudaMalloc(&ref0, bytes));
        T *in = in0 + shift, *out = out0 + shift, *ref = ref0 + shift;
        k_init<T><<<4096, 256>>>(in, n);
        hp_stencil_args a = {};
        a.in = (uint64_t)in;
        a.alloc[0] = ax;
        a.alloc[1] = a.alloc[2] = N + 2;
        a.begin[0] = a.begin[1] = a.begin[2] = 1;
        a.end[0] = a.end[1] = a.end[2] = N + 1;
        a.elem_bytes = sizeof(T);
        a.components = 1;
        a.out = (uint64_t)ref;
        a.form = HP_STENCIL_FORM_POINTS;
        hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
        CK(cudaDeviceSynchronize());
        a.out = (uint64_t)out;
        a.form = HP_STENCIL_FORM_MARCH;
        hp_stencil_args box = a;
        box.begin[0] = box.begin[1] = box.begin[2] = 2;
        box.end[0] = box.end[1] = box.end[2] = N;
        const float copy =
            timed([&] { CK(cudaMemcpyAsync(out, in, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
        for (const hp_stencil_args* b : {&a, &box}) {
            CK(cudaMemset(out0, 0, bytes));
            const float us = timed([&] { march<<<tiles_of(*b, R, C, Z), 256>>>(*b); });
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<T><<<4096, 256>>>(out, ref, *b, count);
            unsigned long long d;
            CK(cudaMemcpy(&d, count, sizeof d, cudaMemcpyDeviceToHost));
            printf("%s,%s,%s,%llu,%.1f,%.1f,%.3f,%llu\n", tname, names[layout],
                   b == &a ? "whole" : "inner-box", (unsigned long long)ax, us, copy, copy / us, d);
            fflush(stdout);
        }
        CK(cudaFree(in0));
        CK(cudaFree(out0));
        CK(cudaFree(ref0));
    }
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount,
           (unsigned long long)N, reps);
    printf("type,layout,box,row_elements,median_us,copy_us,copy_over_kernel,differing_points\n");
    for (int round = 0; round < 2; ++round) {
        run<double>("f64", N, reps);
        run<float>("f32", N, reps);
    }
    return 0;
}
