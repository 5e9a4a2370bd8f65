/*
 * smem_bench.cu: the f32 box of the step (hp_stencil27_march32's lanes of 4 points) with the
 * row sums shared through shared memory. In the library's tiles every warp loads its own row
 * and the rows on either side (3 row loads an output row, the neighbours' from L1); here a
 * block of R warps loads the R + 2 rows of its tile once per plane (warp w its output row,
 * warps 0 and 1 the two rows beside the tile), each warp stores its row sums in shared memory
 * (double-buffered, one barrier a plane) and takes the rows beside its own from there. The
 * same sums in the same order ((x - 1 + x) + x + 1 a row, (below + row) + above a plane,
 * (lo + mid) + hi through z): every variant is checked bit for bit against the point form
 * (hp_stencil27). One GPU, the inner box 2 .. N of an (N + 2)^3 f32 field with rows padded to
 * a multiple of 4, median of `reps` launches against a copy-engine copy of the field.
 * Built from the repository root (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu results/2026-11-28-h200-f32-smem/smem_bench.cu -o smem_bench
 * usage: smem_bench [N] [reps]
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

/* Row sums of the row at r for a lane's 4 points (hp_lanes_row's sums), or zeros where the row
 * lies outside what the box reads (`live` false; warp-uniform). */
__device__ __forceinline__ float4 row_sums(const float* r, bool live, int edge, bool end_lane,
                                           unsigned lane) {
    float4 w = make_float4(0.f, 0.f, 0.f, 0.f);
    float e = 0.0f;
    if (live) {
        w = *(const float4*)r;
        if (end_lane) e = r[edge];
    }
    float left = __shfl_up_sync(0xffffffffu, w.w, 1u);
    float right = __shfl_down_sync(0xffffffffu, w.x, 1u);
    if (lane == 0u) left = e;
    if (lane == 31u) right = e;
    return make_float4((left + w.x) + w.y, (w.x + w.y) + w.z, (w.y + w.z) + w.w,
                       (w.z + w.w) + right);
}

/* Tiles of 128 points (32 lanes of 4) by R rows by DEPTH planes, a warp a row, blocks striding
 * over tiles. Rows of a multiple of 4 elements, fields 16-byte aligned. */
template <int R, int DEPTH, int PF>
__device__ __forceinline__ void smem_lanes(const hp_stencil_args& a) {
    __shared__ float4 sums[2][R + 2][32];
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t first_x = a.begin[0] / 4u * 4u;
    const uint64_t width = 128u;
    const uint64_t tiles_x = (a.end[0] - first_x + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + R - 1) / R;
    const uint64_t tiles = tiles_x * tiles_y * ((a.end[2] - a.begin[2] + DEPTH - 1) / DEPTH);
    const unsigned lane = threadIdx.x % 32u;
    const int w = (int)(threadIdx.x / 32u);
    const bool end_lane = lane == 0u || lane == 31u;
    const float scale = 1.0f / 27.0f;
    int buf = 0;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t y0 = a.begin[1] + (rest % tiles_y) * R;
        const uint64_t y = y0 + w; /* this warp's output row */
        const bool out_row = y < a.end[1];
        const uint64_t x0 = first_x + (t % tiles_x) * width;
        uint64_t x = x0 + lane * 4u;
        const bool used = x <= a.end[0];
        if (!used) x = x0;
        const int edge = lane == 0u ? (x > 0u ? -1 : 0) : (x + 4u <= a.end[0] ? 4 : 0);
        const bool whole = used && x >= a.begin[0] && x + 4u <= a.end[0];
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        /* The extra row warp 0 or 1 loads: y0 - 1 (slot 0) or y0 + R (slot R + 1). */
        const bool extra = w < 2;
        const int extra_slot = w == 0 ? 0 : R + 1;
        const uint64_t ey = w == 0 ? y0 - 1 : y0 + R;
        const bool own_live = y <= a.end[1];
        const bool extra_live = extra && ey <= a.end[1];
        const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        const int64_t extra_off = ((int64_t)ey - (int64_t)y) * ax;
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 2; d < 2 + PF; ++d) {
            if (d <= depth) {
                if (own_live) hp_prefetch_l2(q + d * plane);
                if (extra_live) hp_prefetch_l2(q + d * plane + extra_off);
            }
        }
        float4 lo, mid, hi;
        /* The plane sums of plane q for this warp's row, through shared memory. */
        auto plane_sums = [&](const float* p) {
            const float4 own = row_sums(p, own_live, edge, end_lane, lane);
            sums[buf][w + 1][lane] = own;
            if (extra) sums[buf][extra_slot][lane] = row_sums(p + extra_off, extra_live, edge, end_lane, lane);
            __syncthreads();
            const float4 b = sums[buf][w][lane], c = sums[buf][w + 2][lane];
            buf ^= 1;
            return make_float4((b.x + own.x) + c.x, (b.y + own.y) + c.y, (b.z + own.z) + c.z,
                               (b.w + own.w) + c.w);
        };
        lo = plane_sums(q);
        mid = plane_sums(q + plane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (PF > 0 && z + 1 + PF <= depth) {
                if (own_live) hp_prefetch_l2(q + PF * plane);
                if (extra_live) hp_prefetch_l2(q + PF * plane + extra_off);
            }
            hi = plane_sums(q);
            const float4 r = make_float4(((lo.x + mid.x) + hi.x) * scale, ((lo.y + mid.y) + hi.y) * scale,
                                         ((lo.z + mid.z) + hi.z) * scale, ((lo.w + mid.w) + hi.w) * scale);
            lo = mid;
            mid = hi;
            if (!out_row) continue;
            if (whole) {
                *(float4*)o = r;
            } else if (used) {
                const float v[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = v[k];
            }
        }
    }
}

template <int R, int DEPTH, int PF>
__global__ void __launch_bounds__(32 * R) k_smem(hp_stencil_args a) {
    smem_lanes<R, DEPTH, PF>(a);
}

__global__ void k_init(float* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
        double v = ((double)h / 3.0) * ((i % 3 == 0) ? -1.0 : 1.0) + 1.0 / 7.0;
        f[i] = (float)v;
    }
}

/* Points of box `b` where x and the reference y differ (bit for bit). */
__global__ void k_diff(const float* x, const float* y, hp_stencil_args b, unsigned long long* count) {
    const uint64_t bx = b.end[0] - b.begin[0], by = b.end[1] - b.begin[1];
    const uint64_t n = bx * by * (b.end[2] - b.begin[2]);
    for (uint64_t p = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; p < n;
         p += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t i = b.begin[0] + p % bx +
                           b.alloc[0] * (b.begin[1] + (p / bx) % by + b.alloc[1] * (b.begin[2] + p / bx / by));
        if (__float_as_uint(x[i]) != __float_as_uint(y[i])) atomicAdd(count, 1ull);
    }
}

static uint64_t ext(const hp_stencil_args& a, int k) { return a.end[k] - a.begin[k]; }
static unsigned tiles(const hp_stencil_args& a, int rows, int depth) {
    const uint64_t xa = a.begin[0] / 4 * 4;
    return (unsigned)(((a.end[0] - xa + 127) / 128) * ((ext(a, 1) + rows - 1) / rows) *
                      ((ext(a, 2) + depth - 1) / depth));
}
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

typedef void (*Kern)(hp_stencil_args);

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N, reps);
    printf("variant,median_us,copy_us,copy_over_kernel,differing_points,registers,threads,blocks\n");
    const uint64_t A = N + 2, ax = (A + 3) / 4 * 4, n = ax * A * A;
    const size_t bytes = n * sizeof(float);
    float *in, *out, *ref;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&ref, bytes));
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    k_init<<<4096, 256>>>(in, n);
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = ax;
    a.alloc[1] = a.alloc[2] = A;
    a.elem_bytes = 4;
    a.components = 1;
    a.begin[0] = a.begin[1] = a.begin[2] = 2;
    a.end[0] = a.end[1] = a.end[2] = N;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((ext(a, 0) * ext(a, 1) * ext(a, 2) + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
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
    printf("copy,%.1f,%.1f,1.000,0,0,0,0\n", copy0, copy0);
    auto time = [&](const char* name, Kern k, unsigned threads, unsigned blocks) {
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k<<<blocks, threads>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, (const void*)k));
        printf("%s,%.1f,%.1f,%.3f,%llu,%d,%u,%u\n", name, us, copy0, copy0 / us, diffs,
               attr.numRegs, threads, blocks);
        fflush(stdout);
    };
    for (int round = 0; round < 2; ++round) {
        time("production-march32", hp_stencil27_march32, 256, tiles(a, 8, HP_LANES_Z));
#define SMEM(R, Z, PF)                                                                           \
    time("smem-r" #R "-z" #Z "-pf" #PF, k_smem<R, Z, PF>, 32 * R, tiles(a, R, Z));            \
    time("smem-r" #R "-z" #Z "-pf" #PF "-half", k_smem<R, Z, PF>, 32 * R, tiles(a, R, Z) / 2 + 1)
        SMEM(8, 32, 0);
        SMEM(8, 32, 2);
        SMEM(8, 64, 2);
        SMEM(8, 16, 2);
        SMEM(16, 32, 0);
        SMEM(16, 32, 2);
        SMEM(16, 64, 2);
        SMEM(32, 32, 2);
        SMEM(32, 16, 2);
#undef SMEM
    }
    printf("copy-again,%.1f,%.1f,1.000,0,0,0,0\n",
           timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }), copy0);
    return 0;
}
