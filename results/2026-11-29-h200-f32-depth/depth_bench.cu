/*
 * depth_bench.cu: the library's f32 lanes (hp_stencil27_lanes: 4 points a lane, one row a warp,
 * x - 1 and x + 4 by shuffle) in deeper tiles, with streaming stores, and over a whole interior
 * whose rows start on a 16-byte boundary (issue 23's f32 goal: compute alone >= 80 % of the copy
 * speed). Every variant is checked bit for bit against the point form (hp_stencil27).
 * Boxes, f32, N = 512 unless given:
 *   inner: 2 .. N of an (N + 2)^3 field with rows padded to a multiple of 4 (the step's box);
 *   whole: the whole interior of a field whose x halo is 4 wide on the low side (rows of N + 8):
 *          the interior's first point on a 16-byte boundary, so the lanes take every point and
 *          no slab is left (a step without an exchange could run just this).
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu depth_bench.cu -o depth_bench
 * usage: depth_bench [N] [reps] [MODE]. Without MODE: calls 1-2, the tile shapes over the inner
 * and whole boxes. MODE strides: call 3, both boxes over rows of other lengths; rows: call 4,
 * the inner box over rows padded to each multiple of 8 up to 64 more; halos-in: calls 5, 6 and
 * 9, a step without the exchange as the library runs it, and the lanes taking x = N; placed:
 * call 11, the whole interior of fields placed at an offset in their allocation, in one launch.
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

/* hp_stencil27_lanes<false> with the tile depth Z, prefetch PF, streaming stores (CS) and the
 * tile order: ORDER 0 x, y, z (the library's); 1 x, z, y; 2 as 0 with the lanes from the box's
 * first point (call 11: fields placed so that a vector starts there). */
template <int Z, int PF, bool CS, int ORDER>
__device__ __forceinline__ void lanes(const hp_stencil_args& a) {
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t first_x = ORDER == 2 ? a.begin[0] : a.begin[0] / 4u * 4u;
    const uint64_t rows = blockDim.x / 32u;
    const uint64_t width = 128u;
    const uint64_t tiles_x = (a.end[0] - first_x + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t tiles_z = (a.end[2] - a.begin[2] + Z - 1) / Z;
    const uint64_t tiles = tiles_x * tiles_y * tiles_z;
    const uint32_t lane = threadIdx.x % 32u;
    const uint64_t ty = threadIdx.x / 32u;
    const bool end_lane = lane == 0u || lane == 31u;
    const float scale = 1.0f / 27.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        uint64_t ti_y, ti_z;
        if (ORDER != 1) {
            ti_y = rest % tiles_y;
            ti_z = rest / tiles_y;
        } else {
            ti_z = rest % tiles_z;
            ti_y = rest / tiles_z;
        }
        const uint64_t y = a.begin[1] + ti_y * rows + ty;
        if (y >= a.end[1]) continue;
        const uint64_t x0 = first_x + (t % tiles_x) * width;
        uint64_t x = x0 + lane * 4u;
        const bool used = x <= a.end[0];
        if (!used) x = x0;
        const int edge = lane == 0u ? (x > 0u ? -1 : 0) : (x + 4u <= a.end[0] ? 4 : 0);
        const bool whole = used && x >= a.begin[0] && x + 4u <= a.end[0];
        const uint64_t z0 = a.begin[2] + ti_z * Z;
        const int depth = a.end[2] - z0 < (uint64_t)Z ? (int)(a.end[2] - z0) : Z;
        const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
#pragma unroll
        for (int d = 2; d < 2 + PF; ++d) {
            if (d <= depth) hp_prefetch_l2(q + d * plane);
        }
        float lo[4], mid[4], hi[4];
        hp_lanes_plane<false>(lo, q, ax, edge, 0, end_lane, lane);
        hp_lanes_plane<false>(mid, q + plane, ax, edge, 0, end_lane, lane);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (PF > 0 && z + 1 + PF <= depth) hp_prefetch_l2(q + PF * plane);
            hp_lanes_plane<false>(hi, q, ax, edge, 0, end_lane, lane);
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                r[k] = ((lo[k] + mid[k]) + hi[k]) * scale;
                lo[k] = mid[k];
                mid[k] = hi[k];
            }
            if (whole) {
                const float4 v = make_float4(r[0], r[1], r[2], r[3]);
                if (CS) {
                    __stcs((float4*)o, v);
                } else {
                    *(float4*)o = v;
                }
            } else if (used) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = r[k];
                }
            }
        }
    }
}

template <int Z, int PF, bool CS, int ORDER>
__global__ void __launch_bounds__(256) k_lanes(hp_stencil_args a) {
    lanes<Z, PF, CS, ORDER>(a);
}

__global__ void k_init(float* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
        double v = ((double)h / 3.0) * ((i % 3 == 0) ? -1.0 : 1.0) + 1.0 / 7.0;
        f[i] = (float)v;
    }
}

__global__ void k_copy4(const float4* __restrict__ s, float4* __restrict__ d, uint64_t n4) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4;
         i += (uint64_t)gridDim.x * blockDim.x)
        d[i] = s[i];
}

/* Points of box `b` where x and y differ (bit for bit). */
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
static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
typedef void (*Kern)(hp_stencil_args);

static void run(const char* box, uint64_t N, uint64_t ax, uint64_t lo_x, uint64_t lo_yz, int reps,
                bool strides) {
    const uint64_t A = N + 2, n = ax * A * A;
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
    /* x: the interior starts at lo_x - (lo_x == 2 ? 1 : 0)... the box is given directly. */
    a.begin[0] = lo_x;
    a.end[0] = lo_x + (lo_yz == 1 ? N : N - 2);
    a.begin[1] = a.begin[2] = lo_yz;
    a.end[1] = a.end[2] = lo_yz + (lo_yz == 1 ? N : N - 2);
    a.elem_bytes = 4;
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((ext(a, 0) * ext(a, 1) * ext(a, 2) + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
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
    /* The field's copy: the library's measure (a device-to-device memcpy of the allocation). */
    const float copy = timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
    const float copyk = timed([&] { k_copy4<<<132 * 16, 256>>>((const float4*)in, (float4*)out, n / 4); });
    printf("%s,%llu,copy-memcpy,%.1f,%.1f,1.000,0\n", box, (unsigned long long)ax, copy, copy);
    printf("%s,%llu,copy-kernel,%.1f,%.1f,%.3f,0\n", box, (unsigned long long)ax, copyk, copy, copy / copyk);
    auto time = [&](const char* name, Kern k, unsigned threads, int z, unsigned cap) {
        CK(cudaMemset(out, 0, bytes));
        const uint64_t rows = threads / 32, first = a.begin[0] / 4 * 4;
        uint64_t tiles = ((a.end[0] - first + 127) / 128) * ((ext(a, 1) + rows - 1) / rows) *
                         ((ext(a, 2) + z - 1) / z);
        const unsigned blocks = cap && tiles > cap ? cap : (unsigned)tiles;
        const float us = timed([&] { k<<<blocks, threads>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        printf("%s,%llu,%s,%.1f,%.1f,%.3f,%llu\n", box, (unsigned long long)ax, name, us, copy,
               copy / us, diffs);
        fflush(stdout);
    };
    if (!strides) {
        time("z32-pf2-t256 (library)", k_lanes<32, 2, false, 0>, 256, 32, 0);
        time("z32-pf2-t256-cs", k_lanes<32, 2, true, 0>, 256, 32, 0);
        time("z16-pf2-t256", k_lanes<16, 2, false, 0>, 256, 16, 0);
        time("z24-pf2-t256", k_lanes<24, 2, false, 0>, 256, 24, 0);
        time("z32-pf1-t256", k_lanes<32, 1, false, 0>, 256, 32, 0);
        time("z32-pf3-t256", k_lanes<32, 3, false, 0>, 256, 32, 0);
        time("z32-pf2-t128", k_lanes<32, 2, false, 0>, 128, 32, 0);
        time("z64-pf2-t256", k_lanes<64, 2, false, 0>, 256, 64, 0);
    }
    time("z32-pf2-t256 (library, again)", k_lanes<32, 2, false, 0>, 256, 32, 0);
    time("z16-pf2-t256 (again)", k_lanes<16, 2, false, 0>, 256, 16, 0);
    printf("%s,%llu,copy-memcpy-again,%.1f,%.1f,1.000,0\n", box, (unsigned long long)ax,
           timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }), copy);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

/* Call 6: hp_stencil27_lanes<false> (rows of a multiple of 4) taking a box whose x extent
 * from its first lane is one more than whole tiles: the last tile's lane 31 also takes the
 * box's last point (x + 4) as a fifth, from the x + 4 it loads already (its edge) and x + 5.
 * Same sums in the same order. */
HP_DEVICE void tail_row(float (&row)[4], float& row4, const float* __restrict__ r, int edge,
                        bool end_lane, uint32_t lane, bool tail) {
    const float4 w = *(const float4*)r;
    float e = 0.0f, f = 0.0f;
    if (end_lane) e = r[edge];
    if (tail) f = r[5];
    float left = hp_shfl_up32(w.w, 1u);
    float right = hp_shfl_down32(w.x, 1u);
    if (lane == 0u) left = e;
    if (lane == 31u) right = e;
    row[0] = (left + w.x) + w.y;
    row[1] = (w.x + w.y) + w.z;
    row[2] = (w.y + w.z) + w.w;
    row[3] = (w.z + w.w) + right;
    row4 = (w.w + e) + f;
}

HP_DEVICE void tail_plane(float (&sums)[4], float& sum4, const float* __restrict__ q, int64_t ax,
                          int edge, bool end_lane, uint32_t lane, bool tail) {
    float below[4], row[4], above[4], b4, r4, a4;
    tail_row(below, b4, q - ax, edge, end_lane, lane, tail);
    tail_row(above, a4, q + ax, edge, end_lane, lane, tail);
    tail_row(row, r4, q, edge, end_lane, lane, tail);
#pragma unroll
    for (int k = 0; k < 4; ++k) sums[k] = (below[k] + row[k]) + above[k];
    sum4 = (b4 + r4) + a4;
}

__global__ void __launch_bounds__(256) k_lanes_tail(hp_stencil_args a) {
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t first_x = a.begin[0] / 4u * 4u;
    const uint64_t rows = blockDim.x / 32u;
    const uint64_t width = 128u;
    /* The tail: one point past whole tiles, taken by the last tile's lane 31. */
    const bool has_tail = (a.end[0] - first_x) % width == 1u;
    const uint64_t end_x = has_tail ? a.end[0] - 1u : a.end[0];
    const uint64_t tiles_x = (end_x - first_x + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((a.end[2] - a.begin[2] + 31) / 32);
    const uint32_t lane = threadIdx.x % 32u;
    const uint64_t ty = threadIdx.x / 32u;
    const bool end_lane = lane == 0u || lane == 31u;
    const float scale = 1.0f / 27.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty;
        if (y >= a.end[1]) continue;
        const uint64_t x0 = first_x + (t % tiles_x) * width;
        uint64_t x = x0 + lane * 4u;
        const bool used = x <= end_x;
        if (!used) x = x0;
        const int edge = lane == 0u ? (x > 0u ? -1 : 0) : (x + 4u <= a.end[0] ? 4 : 0);
        const bool whole = used && x >= a.begin[0] && x + 4u <= end_x;
        const bool tail = has_tail && lane == 31u && x + 4u == end_x;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * 32u;
        const int depth = a.end[2] - z0 < 32u ? (int)(a.end[2] - z0) : 32;
        const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        for (int d = 2; d < 4; ++d) {
            if (d <= depth) hp_prefetch_l2(q + d * plane);
        }
        float lo[4], mid[4], hi[4], lo4, mid4, hi4;
        tail_plane(lo, lo4, q, ax, edge, end_lane, lane, tail);
        tail_plane(mid, mid4, q + plane, ax, edge, end_lane, lane, tail);
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            if (z + 3 <= depth) hp_prefetch_l2(q + 2 * plane);
            tail_plane(hi, hi4, q, ax, edge, end_lane, lane, tail);
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                r[k] = ((lo[k] + mid[k]) + hi[k]) * scale;
                lo[k] = mid[k];
                mid[k] = hi[k];
            }
            const float r4 = ((lo4 + mid4) + hi4) * scale;
            lo4 = mid4;
            mid4 = hi4;
            if (whole) {
                *(float4*)o = make_float4(r[0], r[1], r[2], r[3]);
            } else if (used) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (x + k >= a.begin[0] && x + k < a.end[0]) o[k] = r[k];
                }
            }
            if (tail) o[4] = r4;
        }
    }
}

/* Call 9: k_lanes_tail with the tail's code only in the last tile of a row (a branch the whole
 * block takes alike): every other tile runs the library's own plane sums (hp_lanes_plane). */
template <bool TAIL>
__device__ __forceinline__ void tail_tile(const hp_stencil_args& a, uint64_t x0, uint64_t y,
                                          uint64_t z0, uint64_t end_x, uint32_t lane) {
    const float* __restrict__ in = (const float*)a.in;
    float* __restrict__ out = (float*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const bool end_lane = lane == 0u || lane == 31u;
    const float scale = 1.0f / 27.0f;
    uint64_t x = x0 + lane * 4u;
    const bool used = x <= end_x;
    if (!used) x = x0;
    const int edge = lane == 0u ? (x > 0u ? -1 : 0) : (x + 4u <= a.end[0] ? 4 : 0);
    const bool whole = used && x >= a.begin[0] && x + 4u <= end_x;
    const bool tail = TAIL && lane == 31u && x + 4u == end_x;
    const int depth = a.end[2] - z0 < 32u ? (int)(a.end[2] - z0) : 32;
    const float* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
    float* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
    for (int d = 2; d < 4; ++d) {
        if (d <= depth) hp_prefetch_l2(q + d * plane);
    }
    float lo[4], mid[4], hi[4], lo4 = 0.0f, mid4 = 0.0f, hi4 = 0.0f;
    if (TAIL) {
        tail_plane(lo, lo4, q, ax, edge, end_lane, lane, tail);
        tail_plane(mid, mid4, q + plane, ax, edge, end_lane, lane, tail);
    } else {
        hp_lanes_plane<false>(lo, q, ax, edge, 0, end_lane, lane);
        hp_lanes_plane<false>(mid, q + plane, ax, edge, 0, end_lane, lane);
    }
    q += 2 * plane;
    for (int z = 0; z < depth; ++z, q += plane, o += plane) {
        if (z + 3 <= depth) hp_prefetch_l2(q + 2 * plane);
        if (TAIL) {
            tail_plane(hi, hi4, q, ax, edge, end_lane, lane, tail);
        } else {
            hp_lanes_plane<false>(hi, q, ax, edge, 0, end_lane, lane);
        }
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
        if (TAIL) {
            const float r4 = ((lo4 + mid4) + hi4) * scale;
            lo4 = mid4;
            mid4 = hi4;
            if (tail) o[4] = r4;
        }
    }
}

__global__ void __launch_bounds__(256) k_lanes_tail2(hp_stencil_args a) {
    const uint64_t first_x = a.begin[0] / 4u * 4u;
    const uint64_t rows = blockDim.x / 32u;
    const uint64_t width = 128u;
    const bool has_tail = (a.end[0] - first_x) % width == 1u;
    const uint64_t end_x = has_tail ? a.end[0] - 1u : a.end[0];
    const uint64_t tiles_x = (end_x - first_x + width - 1) / width;
    const uint64_t tiles_y = (a.end[1] - a.begin[1] + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((a.end[2] - a.begin[2] + 31) / 32);
    const uint32_t lane = threadIdx.x % 32u;
    const uint64_t ty = threadIdx.x / 32u;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty;
        if (y >= a.end[1]) continue;
        const uint64_t x0 = first_x + (t % tiles_x) * width;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * 32u;
        if (has_tail && t % tiles_x == tiles_x - 1u) {
            tail_tile<true>(a, x0, y, z0, end_x, lane);
        } else {
            tail_tile<false>(a, x0, y, z0, end_x, lane);
        }
    }
}

/* Call 5: a step without the exchange as the library's HalosIn runs it at N^3 with rows of ax:
 * the lanes (hp_stencil27_march32) over x 1 .. N - 1, y and z 1 .. N, and the slab x = N
 * (hp_stencil27_marching's columns), alone and on two streams in either order and priority,
 * checked bit for bit against the point form over the whole interior. */
static void halos_in(uint64_t N, uint64_t ax, int reps) {
    const uint64_t A = N + 2, n = ax * A * A;
    const size_t bytes = n * sizeof(float);
    float *in, *out, *ref;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    CK(cudaMalloc(&ref, bytes));
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    k_init<<<4096, 256>>>(in, n);
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args whole = {};
    whole.in = (uint64_t)in;
    whole.alloc[0] = ax;
    whole.alloc[1] = whole.alloc[2] = A;
    for (int k = 0; k < 3; ++k) whole.begin[k] = 1, whole.end[k] = N + 1;
    whole.elem_bytes = 4;
    whole.components = 1;
    whole.out = (uint64_t)ref;
    whole.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(whole);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    hp_stencil_args box = whole, slab = whole, whole_march = whole;
    whole_march.out = (uint64_t)out;
    whole_march.form = HP_STENCIL_FORM_MARCH;
    box.out = slab.out = (uint64_t)out;
    box.form = slab.form = HP_STENCIL_FORM_MARCH;
    box.end[0] = N;
    slab.begin[0] = N;
    const unsigned box_blocks = (unsigned)(((N - 0 + 127) / 128) * (N / 8) * ((N + 31) / 32));
    const unsigned slab_blocks = (unsigned)((N * ((N + HP_SLAB_Z - 1) / HP_SLAB_Z) + 255) / 256);
    int lo, hi;
    CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t s0, s1, urgent;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, hi));
    cudaEvent_t e0, e1, fork, j0, j1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&j0, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&j1, cudaEventDisableTiming));
    const float copy = [&] {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0, 0));
            CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, 0));
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    }();
    /* order: 0 box alone, 1 slab alone, 2 box then slab, 3 slab then box, 4 slab (urgent) then
     * box; call 6: 5 k_lanes_tail over the whole interior (its lane 31 takes x = N), 6 over the
     * box alone (no tail: the cost of its code); call 9: 7 and 8 the same with k_lanes_tail2. */
    auto time = [&](const char* name, int order) {
        CK(cudaMemset(out, 0, bytes));
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0, 0));
            CK(cudaEventRecord(fork, 0));
            CK(cudaStreamWaitEvent(s0, fork, 0));
            CK(cudaStreamWaitEvent(s1, fork, 0));
            CK(cudaStreamWaitEvent(urgent, fork, 0));
            cudaStream_t slab_stream = order == 4 ? urgent : s1;
            auto launch_box = [&] {
                if (order == 5) {
                    k_lanes_tail<<<box_blocks, 256, 0, s0>>>(whole_march);
                } else if (order == 7) {
                    k_lanes_tail2<<<box_blocks, 256, 0, s0>>>(whole_march);
                } else if (order == 8) {
                    k_lanes_tail2<<<box_blocks, 256, 0, s0>>>(box);
                } else if (order == 6) {
                    k_lanes_tail<<<box_blocks, 256, 0, s0>>>(box);
                } else {
                    hp_stencil27_march32<<<box_blocks, 256, 0, s0>>>(box);
                }
            };
            auto launch_slab = [&] { hp_stencil27_marching<<<slab_blocks, 256, 0, slab_stream>>>(slab); };
            if (order == 0 || order == 2 || order >= 5) launch_box();
            if (order >= 1 && order <= 4) launch_slab();
            if (order == 3 || order == 4) launch_box();
            CK(cudaEventRecord(j0, s0));
            CK(cudaEventRecord(j1, slab_stream));
            CK(cudaStreamWaitEvent(0, j0, 0));
            CK(cudaStreamWaitEvent(0, j1, 0));
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        const float us = median(t);
        unsigned long long diffs = 0;
        if (order >= 2 && order != 6 && order != 8) {
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<<<4096, 256>>>(out, ref, whole, count);
            CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        }
        printf("halos-in,%llu,%s,%.1f,%.1f,%.3f,%llu\n", (unsigned long long)ax, name, us, copy,
               copy / us, diffs);
        fflush(stdout);
    };
    time("box alone", 0);
    time("slab alone", 1);
    time("box then slab", 2);
    time("slab then box", 3);
    time("slab (urgent) then box", 4);
    time("box then slab (again)", 2);
    time("tail lanes over the whole interior", 5);
    time("tail lanes over the box alone", 6);
    time("box alone (again)", 0);
    time("tail lanes over the whole interior (again)", 5);
    time("tail in its own tiles over the whole interior", 7);
    time("tail in its own tiles over the box alone", 8);
    time("box alone (third)", 0);
    time("tail in its own tiles over the whole interior (again)", 7);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

/* Call 11: the whole N^3 interior of a field with a halo of 1 and rows of ax, placed `off`
 * bytes into its allocation, in one launch of the lanes from x = 1 (k_lanes ORDER 2: a vector
 * starts at x = 1 when off + 4 is a multiple of 16), against the point form. */
static void placed(uint64_t N, uint64_t ax, uint64_t off, int reps) {
    const uint64_t A = N + 2, n = ax * A * A;
    const size_t bytes = n * sizeof(float);
    char *in_raw, *out_raw, *ref_raw;
    CK(cudaMalloc(&in_raw, bytes + 256));
    CK(cudaMalloc(&out_raw, bytes + 256));
    CK(cudaMalloc(&ref_raw, bytes + 256));
    float* in = (float*)(in_raw + off);
    float* out = (float*)(out_raw + off);
    float* ref = (float*)(ref_raw + off);
    unsigned long long* count;
    CK(cudaMalloc(&count, sizeof *count));
    k_init<<<4096, 256>>>(in, n);
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = ax;
    a.alloc[1] = a.alloc[2] = A;
    for (int k = 0; k < 3; ++k) a.begin[k] = 1, a.end[k] = N + 1;
    a.elem_bytes = 4;
    a.components = 1;
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
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
    const float copy = timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
    const unsigned blocks = (unsigned)(((N + 127) / 128) * (N / 8) * ((N + 31) / 32));
    for (int r = 0; r < 2; ++r) {
        CK(cudaMemset(out, 0, bytes));
        const float us = timed([&] { k_lanes<32, 2, false, 2><<<blocks, 256>>>(a); });
        CK(cudaMemset(count, 0, sizeof *count));
        k_diff<<<4096, 256>>>(out, ref, a, count);
        unsigned long long diffs;
        CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
        printf("placed,%llu,offset %llu bytes%s,%.1f,%.1f,%.3f,%llu\n", (unsigned long long)ax,
               (unsigned long long)off, r ? " (again)" : "", us, copy, copy / us, diffs);
        fflush(stdout);
    }
    CK(cudaFree(in_raw));
    CK(cudaFree(out_raw));
    CK(cudaFree(ref_raw));
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N, reps);
    printf("box,alloc_x,variant,median_us,copy_us,copy_over_kernel,differing_points\n");
    if (argc > 3 && strcmp(argv[3], "placed") == 0) {
        printf("box,alloc_x,variant,median_us,copy_us,copy_over_kernel,differing_points\n");
        for (uint64_t ax : {N + 8, N + 16, N + 12, N + 4}) {
            for (uint64_t off : {28, 12, 60}) placed(N, ax, off, reps);
        }
        return 0;
    }
    if (argc > 3 && strcmp(argv[3], "halos-in") == 0) {
        printf("box,alloc_x,variant,median_us,copy_us,copy_over_kernel,differing_points\n");
        for (uint64_t ax : {N + 8, N + 4, N + 16}) halos_in(N, ax, reps);
        return 0;
    }
    if (argc > 3 && strcmp(argv[3], "rows") == 0) {
        /* Call 4: the step's box over rows padded to multiples of 8 elements (32 bytes). */
        for (uint64_t ax = (N + 2 + 3) / 4 * 4; ax <= N + 2 + 64; ax += ax % 8 ? 4 : 8) {
            run("inner", N, ax, 2, 2, reps, true);
        }
        return 0;
    }
    if (argc > 3 && strcmp(argv[3], "strides") == 0) {
        /* Call 3: the same boxes over rows of other lengths (the whole box's low x halo 4 wide;
         * with rows of N + 4 its last point's x + 1 is the next row's first, a load inside the
         * field all the same). */
        for (uint64_t ax : {N + 4, N + 8, N + 12, N + 16, N + 20, N + 32}) {
            run("inner", N, ax, 2, 2, reps, true);
            run("whole", N, ax, 4, 1, reps, true);
        }
        return 0;
    }
    /* inner: rows of N + 2 padded to a multiple of 4, the box 2 .. N. */
    run("inner", N, (N + 2 + 3) / 4 * 4, 2, 2, reps, false);
    /* whole: x halo of 4 on the low side (rows of N + 8), the whole interior. */
    run("whole", N, N + 8, 4, 1, reps, false);
    return 0;
}
