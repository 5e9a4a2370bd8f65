/*
 * lanes_async_bench.cu: the f32 lanes of 4 points (hp_stencil27_march32, aligned rows) against
 * two ways of keeping more of the field's planes in flight a warp:
 *   pipe:  each thread loads its next plane's three row vectors into registers before it sums
 *          the plane it has (one plane ahead, in registers);
 *   async: a block copies its tile's rows (its rows and the one before and after, 128 points and
 *          a vector each side) plane by plane into a ring of S planes in shared memory with
 *          cp.async, S - 1 planes ahead, and sums from there (the x neighbours by shuffle, as
 *          the lanes do); one __syncthreads a plane.
 * The same sums in the same order as hp_stencil27_march32: every variant is checked bit for bit
 * against the point form (hp_stencil27). One GPU, the stencil step's inner box (2 .. N of an
 * (N + 2)^3 field with rows padded to a multiple of 4), median of `reps` launches, beside a
 * copy of the field (cudaMemcpyAsync device to device).
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu -L$CUDA/lib lanes_async_bench.cu -o lanes_async_bench
 * usage: lanes_async_bench [N] [reps]
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

/* The tile of a block: 128 points from x0 (a multiple of 4), R rows from y0, planes z0 ..
 * z0 + depth - 1; false past the box. */
struct Tile {
    uint64_t x0, y0, z0;
    int depth;
};
template <int R, int Z>
__device__ __forceinline__ uint64_t tiles_of(const hp_stencil_args& a, uint64_t* tx, uint64_t* ty) {
    const uint64_t first_x = a.begin[0] / 4 * 4;
    *tx = (a.end[0] - first_x + 127) / 128;
    *ty = (a.end[1] - a.begin[1] + R - 1) / R;
    return *tx * *ty * ((a.end[2] - a.begin[2] + Z - 1) / Z);
}

/* The production kernel's body with blocks of THREADS (hp_stencil27_lanes<false>). */
template <int THREADS>
__global__ void __launch_bounds__(THREADS) k_lanes(hp_stencil_args a) {
    hp_stencil27_lanes<false>(a);
}

/* One row's sums from a vector and its two neighbours (hp_lanes_row's arithmetic). */
__device__ __forceinline__ void row_sums(float (&row)[4], float4 w, float e, uint32_t lane) {
    float left = hp_shfl_up32(w.w, 1u);
    float right = hp_shfl_down32(w.x, 1u);
    if (lane == 0u) left = e;
    if (lane == 31u) right = e;
    row[0] = (left + w.x) + w.y;
    row[1] = (w.x + w.y) + w.z;
    row[2] = (w.y + w.z) + w.w;
    row[3] = (w.z + w.w) + right;
}

struct Raw {
    float4 b, r, t;
    float eb, er, et;
};
__device__ __forceinline__ void raw_load(Raw& v, const float* q, int64_t ax, int edge, bool end_lane) {
    v.b = *(const float4*)(q - ax);
    v.r = *(const float4*)q;
    v.t = *(const float4*)(q + ax);
    v.eb = v.er = v.et = 0.0f;
    if (end_lane) {
        v.eb = (q - ax)[edge];
        v.er = q[edge];
        v.et = (q + ax)[edge];
    }
}
__device__ __forceinline__ void raw_sums(float (&s)[4], const Raw& v, uint32_t lane) {
    float b[4], r[4], t[4];
    row_sums(b, v.b, v.eb, lane);
    row_sums(r, v.r, v.er, lane);
    row_sums(t, v.t, v.et, lane);
#pragma unroll
    for (int k = 0; k < 4; ++k) s[k] = (b[k] + r[k]) + t[k];
}

/* pipe: the lanes with the next plane's loads issued before the current plane's sums. */
template <int THREADS, int Z, int PF>
__global__ void __launch_bounds__(THREADS) k_pipe(hp_stencil_args a) {
    constexpr int R = THREADS / 32;
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    uint64_t tiles_x, tiles_y;
    const uint64_t tiles = tiles_of<R, Z>(a, &tiles_x, &tiles_y);
    const uint64_t first_x = a.begin[0] / 4 * 4;
    const uint32_t lane = threadIdx.x % 32u;
    const bool end_lane = lane == 0u || lane == 31u;
    const float scale = 1.0f / 27.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * R + threadIdx.x / 32u;
        if (y >= a.end[1]) continue;
        const uint64_t x0 = first_x + (t % tiles_x) * 128;
        uint64_t x = x0 + lane * 4;
        const bool used = x <= a.end[0];
        if (!used) x = x0;
        const int edge = lane == 0u ? (x > 0u ? -1 : 0) : (x + 4 <= a.end[0] ? 4 : 0);
        const bool whole = used && x >= a.begin[0] && x + 4 <= a.end[0];
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * Z;
        const int depth = a.end[2] - z0 < (uint64_t)Z ? (int)(a.end[2] - z0) : Z;
        const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 3; d < 3 + PF; ++d) {
            if (d <= depth + 1) hp_prefetch_l2(q + d * plane);
        }
        Raw v;
        float lo[4], mid[4], hi[4];
        raw_load(v, q, ax, edge, end_lane);
        raw_sums(lo, v, lane);
        raw_load(v, q + plane, ax, edge, end_lane);
        raw_sums(mid, v, lane);
        q += 2 * plane;
        raw_load(v, q, ax, edge, end_lane);
        for (int z = 0; z < depth; ++z, o += plane) {
            const Raw cur = v;
            q += plane;
            if (z + 1 < depth) raw_load(v, q, ax, edge, end_lane);
            if (z + 3 + PF <= depth) hp_prefetch_l2(q + (PF + 1) * plane);
            raw_sums(hi, cur, lane);
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                r[k] = ((lo[k] + mid[k]) + hi[k]) * scale;
                lo[k] = mid[k];
                mid[k] = hi[k];
            }
            if (whole) {
                *(float4*)o = make_float4(r[0], r[1], r[2], r[3]);
            } else if (used) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = r[k];
                }
            }
        }
    }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* async: a ring of S planes of the tile's R + 2 rows x 34 vectors (x0 - 4 .. x0 + 131) in shared
 * memory, filled by cp.async S - 1 planes ahead. Vectors outside the row (x < 0 or past
 * alloc[0]) and rows past end[1] are not copied (nothing stored reads them). PF: planes past
 * the ring's prefetched into L2. */
template <int THREADS, int Z, int S, int PF, int MINB = 1>
__global__ void __launch_bounds__(THREADS, MINB) k_async(hp_stencil_args a) {
    constexpr int R = THREADS / 32;
    constexpr int W = 34; /* vectors a row */
    constexpr int SLOT = (R + 2) * W;
    extern __shared__ float4 ring[];
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    uint64_t tiles_x, tiles_y;
    const uint64_t tiles = tiles_of<R, Z>(a, &tiles_x, &tiles_y);
    const uint64_t first_x = a.begin[0] / 4 * 4;
    const uint32_t lane = threadIdx.x % 32u;
    const uint32_t warp = threadIdx.x / 32u;
    const float scale = 1.0f / 27.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t ybase = a.begin[1] + (rest % tiles_y) * R;
        const uint64_t x0 = first_x + (t % tiles_x) * 128;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * Z;
        const int depth = a.end[2] - z0 < (uint64_t)Z ? (int)(a.end[2] - z0) : Z;
        const int planes = depth + 2; /* z0 - 1 .. z0 + depth */
        const float* base = in + (a.alloc[0] * (ybase - 1 + a.alloc[1] * (z0 - 1)));
        /* Plane p of the tile into slot p % S. */
        auto issue = [&](int p) {
            float4* slot = ring + (p % S) * SLOT;
            const float* pl = base + p * plane;
            for (int i = threadIdx.x; i < SLOT; i += THREADS) {
                const int row = i / W, v = i % W;
                const int64_t vx = (int64_t)x0 - 4 + 4 * v;
                if (vx >= 0 && vx + 4 <= ax && ybase - 1 + row <= a.end[1]) {
                    cp_async16(slot + i, pl + row * ax + vx);
                }
            }
        };
        for (int p = 0; p < S - 1; ++p) {
            if (p < planes) issue(p);
            cp_async_commit();
        }
        const uint64_t y = ybase + warp;
        const bool row_in = y < a.end[1];
        const uint64_t x = x0 + lane * 4;
        const bool used = x < a.end[0];
        const bool whole = used && x >= a.begin[0] && x + 4 <= a.end[0];
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        float lo[4], mid[4], hi[4];
        for (int p = 0; p < planes; ++p) {
            cp_async_wait<S - 2>();
            __syncthreads();
            if (p + S - 1 < planes) issue(p + S - 1);
            cp_async_commit();
            if (p + S - 1 + PF < planes) {
                /* One prefetch a row of the tile for the plane PF past the ring's. */
                if (lane < 4 && warp < R + 2 && ybase - 1 + warp <= a.end[1]) {
                    hp_prefetch_l2(base + (p + S - 1 + PF) * plane + warp * ax + x0 + lane * 32);
                }
            }
            if (!row_in) continue;
            const float4* slot = ring + (p % S) * SLOT;
            const float* sf = (const float*)slot;
            float rs[3][4];
#pragma unroll
            for (int i = 0; i < 3; ++i) {
                const int row = warp + i;
                const float4 w = slot[row * W + 1 + lane];
                float e = 0.0f;
                if (lane == 0u) e = sf[row * W * 4 + 3];
                if (lane == 31u) e = sf[row * W * 4 + 4 + 128];
                row_sums(rs[i], w, e, lane);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) hi[k] = (rs[0][k] + rs[1][k]) + rs[2][k];
            if (p >= 2) {
                float r[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) r[k] = ((lo[k] + mid[k]) + hi[k]) * scale;
                if (whole) {
                    *(float4*)o = make_float4(r[0], r[1], r[2], r[3]);
                } else if (used) {
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = r[k];
                    }
                }
                o += plane;
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                lo[k] = mid[k];
                mid[k] = hi[k];
            }
        }
        cp_async_wait<0>();
        __syncthreads(); /* the ring is the next tile's */
    }
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

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
static unsigned tiles_host(const hp_stencil_args& a, int r, int z) {
    const uint64_t fx = a.begin[0] / 4 * 4;
    return (unsigned)(((a.end[0] - fx + 127) / 128) * ((a.end[1] - a.begin[1] + r - 1) / r) *
                      ((a.end[2] - a.begin[2] + z - 1) / z));
}

typedef void (*Kern)(hp_stencil_args);

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", prop.name, prop.multiProcessorCount, (unsigned long long)N, reps);
    printf("box,variant,median_us,copy_us,copy_over_kernel,differing_points,registers,smem_bytes\n");
    const uint64_t A = N + 2, ax = (A + 3) / 4 * 4, n = ax * A * A;
    const size_t bytes = n * sizeof(float);
    float *in, *out, *ref;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&ref, bytes));
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    k_init<float><<<4096, 256>>>(in, n);
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = ax;
    a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = 4;
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
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
    printf("-,copy,%.1f,%.1f,1.000,0,0,0\n", copy0, copy0);
    auto time = [&](const char* box, const char* name, Kern k, unsigned blocks, int threads, int smem) {
        if (smem > 48 * 1024) CK(cudaFuncSetAttribute((const void*)k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k<<<blocks, threads, smem>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, (const void*)k));
        printf("%s,%s,%.1f,%.1f,%.3f,%llu,%d,%d\n", box, name, us, copy0, copy0 / us, diffs, attr.numRegs, smem);
        fflush(stdout);
    };
    auto slot = [](int threads) { return (threads / 32 + 2) * 34 * 16; };
    for (int b = 0; b < 3; ++b) {
        /* The step's inner box, then the whole interior (what a step without the exchange needs). */
        const uint64_t lo = b == 1 ? 1 : 2, hi = b == 1 ? N + 1 : N;
        const char* box = b == 0 ? "inner" : b == 1 ? "interior" : "inner-rows-514";
        a.begin[0] = a.begin[1] = a.begin[2] = lo;
        a.end[0] = a.end[1] = a.end[2] = hi;
        /* b == 2: the same box in rows of N + 2 elements, the lanes' off form (its tiles start
         * 2 columns earlier; the field's first elements are the same memory). */
        if (b == 2) {
            /* The point form's reference in rows of N + 2. */
            a.alloc[0] = A;
            hp_stencil_args r = a;
            r.begin[0] = r.begin[1] = r.begin[2] = 1;
            r.end[0] = r.end[1] = r.end[2] = N + 1;
            r.out = (uint64_t)ref;
            r.form = HP_STENCIL_FORM_POINTS;
            CK(cudaMemset(ref, 0, bytes));
            hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(r);
            CK(cudaDeviceSynchronize());
        }
        const hp_stencil_args t = {.begin = {b == 2 ? lo - 2 : lo, lo, lo}, .end = {hi, hi, hi}};
        time(box, "production-march32", hp_stencil27_march32, tiles_host(t, 8, HP_LANES_Z), 256, 0);
        if (b != 0) continue;
        time(box, "lanes-t128-z32", k_lanes<128>, tiles_host(a, 4, HP_LANES_Z), 128, 0);
        time(box, "lanes-t512-z32", k_lanes<512>, tiles_host(a, 16, HP_LANES_Z), 512, 0);
        time(box, "pipe-t256-z32-pf2", k_pipe<256, 32, 2>, tiles_host(a, 8, 32), 256, 0);
        time(box, "pipe-t256-z32-pf0", k_pipe<256, 32, 0>, tiles_host(a, 8, 32), 256, 0);
        time(box, "pipe-t256-z16-pf2", k_pipe<256, 16, 2>, tiles_host(a, 8, 16), 256, 0);
        time(box, "pipe-t128-z32-pf2", k_pipe<128, 32, 2>, tiles_host(a, 4, 32), 128, 0);
        time(box, "async-t256-z32-s3-pf0", k_async<256, 32, 3, 0>, tiles_host(a, 8, 32), 256, 3 * slot(256));
        time(box, "async-t256-z32-s4-pf0", k_async<256, 32, 4, 0>, tiles_host(a, 8, 32), 256, 4 * slot(256));
        time(box, "async-t256-z32-s6-pf0", k_async<256, 32, 6, 0>, tiles_host(a, 8, 32), 256, 6 * slot(256));
        time(box, "async-t256-z32-s4-pf2", k_async<256, 32, 4, 2>, tiles_host(a, 8, 32), 256, 4 * slot(256));
        time(box, "async-t256-z64-s4-pf0", k_async<256, 64, 4, 0>, tiles_host(a, 8, 64), 256, 4 * slot(256));
        time(box, "async-t512-z32-s4-pf0", k_async<512, 32, 4, 0>, tiles_host(a, 16, 32), 512, 4 * slot(512));
        time(box, "async-t512-z32-s3-pf2", k_async<512, 32, 3, 2>, tiles_host(a, 16, 32), 512, 3 * slot(512));
        time(box, "async-t256-z32-s4-pf0-min5", k_async<256, 32, 4, 0, 5>, tiles_host(a, 8, 32), 256, 4 * slot(256));
        time(box, "async-t256-z32-s4-pf0-min6", k_async<256, 32, 4, 0, 6>, tiles_host(a, 8, 32), 256, 4 * slot(256));
        time(box, "async-t256-z32-s3-pf2-min6", k_async<256, 32, 3, 2, 6>, tiles_host(a, 8, 32), 256, 3 * slot(256));
        time(box, "async-t128-z32-s4-pf0", k_async<128, 32, 4, 0>, tiles_host(a, 4, 32), 128, 4 * slot(128));
        time(box, "async-t1024-z32-s3-pf0", k_async<1024, 32, 3, 0>, tiles_host(a, 32, 32), 1024, 3 * slot(1024));
    }
    printf("-,copy-again,%.1f,%.1f,1.000,0,0,0\n",
           timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }), copy0);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
    return 0;
}
