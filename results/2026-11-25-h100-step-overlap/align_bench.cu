/*
 * align_bench.cu: does the 27-point box kernel gain from rows aligned to 128-byte lines, or from
 * streaming (evict-first) stores? The step's inner box (N - 2 points a side) in an allocation
 * whose rows are P points long, the box's first column at an offset of 0, 8 or 16 bytes from a
 * 128-byte line (rows start on lines when P * sizeof(T) is a multiple of 128). Each variant is
 * checked bit for bit against the point form (hp_stencil27) on the same layout.
 * On the GPU machine, from the repository root:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu results/2026-11-25-h100-step-overlap/align_bench.cu -o align_bench
 * usage: align_bench [N] [reps]. CSV: type,pitch,offset_bytes,variant,median_us,copy_us,copy/kernel,differing
 *   variants: production (hp_stencil27_marching), tiles-2x2x32 and -2x2x16 (the production
 *   template), cs-2x2x32 and cs-2x2x16 (the same with __stcs stores).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#include "hp_kernels.cuh"
#include "hp_regions.cuh"

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* hp_stencil27_march (kernels-cu/hp_regions.cuh) with its store as a parameter: CS stores
 * with __stcs (evict first), so the written field does not push the read one out of L2. */
template <typename T, int ROWS, int DEPTH, int COLS, bool CS>
__global__ void __launch_bounds__(256) k_march(hp_stencil_args a) {
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
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            hp_march_plane(lo[c], q + at[c], ax, live);
            hp_march_plane(mid[c], q + at[c] + plane, ax, live);
        }
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) hp_march_plane(hi[c], q + at[c], ax, live);
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (c < cols && i < live) {
                        const T v = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                        T* p = o + c * (int)HP_MARCH_X + i * ax;
                        if (CS) {
                            __stcs(p, v);
                        } else {
                            *p = v;
                        }
                    }
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
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
__global__ void k_diff(const T* a, const T* b, uint64_t n, unsigned long long* count) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        bool same = sizeof(T) == 8
                        ? __double_as_longlong((double)a[i]) == __double_as_longlong((double)b[i])
                        : __float_as_uint((float)a[i]) == __float_as_uint((float)b[i]);
        if (!same) atomicAdd(count, 1ull);
    }
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static unsigned tiles(const hp_stencil_args& a, int rows, int cols, int depth) {
    auto ext = [&](int k) { return a.end[k] - a.begin[k]; };
    uint64_t r = 8 * (uint64_t)rows, w = 32 * (uint64_t)cols;
    return (unsigned)(((ext(0) + w - 1) / w) * ((ext(1) + r - 1) / r) * ((ext(2) + depth - 1) / depth));
}

typedef void (*Kern)(hp_stencil_args);

template <typename T>
static void run(const char* tname, uint64_t N, int reps) {
    const uint64_t E = 128 / sizeof(T); /* points a 128-byte line */
    const uint64_t pitches[2] = {N + 2, (N + 2 * E + E - 1) / E * E};
    for (uint64_t P : pitches) {
        const uint64_t A1 = N + 2, n = P * A1 * A1;
        const size_t bytes = n * sizeof(T);
        T *in, *out, *ref;
        unsigned long long* count;
        CK(cudaMalloc(&in, bytes));
        CK(cudaMalloc(&out, bytes));
        CK(cudaMalloc(&ref, bytes));
        CK(cudaMalloc(&count, sizeof *count));
        k_init<T><<<4096, 256>>>(in, n);
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> ct;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) ct.push_back(ms * 1000.0f);
        }
        const float copy = median(ct);
        /* The box's first column: the step's inner box starts 2 points into the interior. With
         * the padded pitch, at a line (offset 0), a point past it, or two. */
        const uint64_t starts[3] = {E, E + 1, E + 2};
        for (int s = 0; s < (P == N + 2 ? 1 : 3); ++s) {
            const uint64_t x0 = P == N + 2 ? 2 : starts[s];
            if (x0 + N - 2 + 1 > P) continue;
            hp_stencil_args a = {};
            a.in = (uint64_t)in;
            a.alloc[0] = P;
            a.alloc[1] = a.alloc[2] = A1;
            a.begin[0] = x0;
            a.end[0] = x0 + N - 2;
            a.begin[1] = a.begin[2] = 2;
            a.end[1] = a.end[2] = N;
            a.elem_bytes = sizeof(T);
            a.components = 1;
            a.out = (uint64_t)ref;
            a.form = HP_STENCIL_FORM_POINTS;
            CK(cudaMemset(ref, 0, bytes));
            const uint64_t pts = (N - 2) * (N - 2) * (N - 2);
            hp_stencil27<<<(unsigned)((pts + 255) / 256), 256>>>(a);
            CK(cudaDeviceSynchronize());
            a.out = (uint64_t)out;
            a.form = HP_STENCIL_FORM_MARCH;
            const uint64_t offset = (x0 * sizeof(T)) % 128 + (P * sizeof(T) % 128 ? 1000 : 0);
            auto time = [&](const char* name, Kern k, unsigned blocks) {
                CK(cudaMemset(out, 0, bytes));
                std::vector<float> t;
                for (int i = 0; i < reps + 2; ++i) {
                    CK(cudaEventRecord(e0));
                    k<<<blocks, 256>>>(a);
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
                const float us = median(t);
                /* offset >= 1000: rows do not start on lines (offset - 1000 is row 0's). */
                printf("%s,%llu,%llu,%s,%.1f,%.1f,%.3f,%llu\n", tname, (unsigned long long)P,
                       (unsigned long long)offset, name, us, copy, copy / us, diffs);
                fflush(stdout);
            };
            const bool f64 = sizeof(T) == 8;
            time("production", hp_stencil27_marching,
                 tiles(a, f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS,
                       f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS, f64 ? HP_MARCH64_Z : HP_MARCH32_Z));
            time("tiles-2x2x32", k_march<T, 2, 32, 2, false>, tiles(a, 2, 2, 32));
            time("cs-2x2x32", k_march<T, 2, 32, 2, true>, tiles(a, 2, 2, 32));
            time("tiles-2x2x16", k_march<T, 2, 16, 2, false>, tiles(a, 2, 2, 16));
            time("cs-2x2x16", k_march<T, 2, 16, 2, true>, tiles(a, 2, 2, 16));
        }
        CK(cudaFree(in));
        CK(cudaFree(out));
        CK(cudaFree(ref));
        CK(cudaFree(count));
    }
}

int main(int argc, char** argv) {
    uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N, reps);
    printf("type,pitch,offset_bytes,variant,median_us,copy_us,copy_over_kernel,differing_points\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
