/*
 * step_bench.cu: the march form of the 27-point stencil (kernels-cu/hp_regions.cuh) in several
 * tilings, against a copy-engine copy of the same field in the same process, each checked bit
 * for bit against the point form. Built on the build machine with the pip nvcc for sm_90:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -I../../kernels-cu -L$NV/lib step_bench.cu -o step_bench
 * ($NV: .venv/lib/python3.11/site-packages/nvidia/cu13, whose lib holds the static cudart).
 * usage: step_bench [N] [reps]   (an N^3 interior with a halo of 1, f64 and f32)
 * Prints one CSV line per (type, variant): median microseconds of `reps` launches, the copy's
 * median (cudaMemcpyAsync of the whole allocation), the ratio copy / kernel, the points that
 * differ from the point form, and the kernel's registers. "production-*" is hp_stencil27 itself
 * (the header as built); k_march and k_wide are the same march template (and a shuffle
 * variant) instantiated as kernels of their own with __launch_bounds__(256).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <string>
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

/* The production march body with prefetch: the next plane's raw values are loaded while the
 * current plane is summed. Same order as hp_march_plane. */
template <typename T, int ROWS>
__device__ __forceinline__ void pf_load(T (&v)[ROWS + 2][3], const T* __restrict__ q, int64_t ax,
                                        int live) {
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        if (i <= live + 1) {
            const T* r = q + (i - 1) * ax;
            v[i][0] = r[-1];
            v[i][1] = r[0];
            v[i][2] = r[1];
        } else {
            v[i][0] = v[i][1] = v[i][2] = T(0);
        }
    }
}
template <typename T, int ROWS>
__device__ __forceinline__ void pf_sums(T (&s)[ROWS], const T (&v)[ROWS + 2][3]) {
    T row[ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) row[i] = (v[i][0] + v[i][1]) + v[i][2];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) s[i] = (row[i] + row[i + 1]) + row[i + 2];
}

template <typename T, int ROWS, int DEPTH>
__device__ __forceinline__ void pf_march(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * ROWS;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + HP_MARCH_X - 1) / HP_MARCH_X;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x = a.begin[0] + (t % tiles_x) * HP_MARCH_X + tx;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (x >= a.end[0] || y >= a.end[1]) continue;
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        T v[ROWS + 2][3];
        T lo[ROWS], mid[ROWS], hi[ROWS];
        pf_load<T, ROWS>(v, q, ax, live);
        pf_sums<T, ROWS>(lo, v);
        pf_load<T, ROWS>(v, q + plane, ax, live);
        pf_sums<T, ROWS>(mid, v);
        pf_load<T, ROWS>(v, q + 2 * plane, ax, live);
        q += 3 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
            pf_sums<T, ROWS>(hi, v);
            if (z + 1 < depth) pf_load<T, ROWS>(v, q, ax, live);
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                if (i < live) o[i * ax] = ((lo[i] + mid[i]) + hi[i]) * scale;
                lo[i] = mid[i];
                mid[i] = hi[i];
            }
        }
    }
}

/* x neighbours by warp shuffles: a row costs one full load, one load by lanes 0 and 31 and two
 * shuffles. Bench only: needs box widths that are multiples of 32 (every lane live). */
template <typename T, int ROWS>
__device__ __forceinline__ void sh_plane(T (&sums)[ROWS], const T* __restrict__ q, int64_t ax,
                                         int live, unsigned lane) {
    T row[ROWS + 2];
#pragma unroll
    for (int i = 0; i < ROWS + 2; ++i) {
        if (i <= live + 1) {
            const T* r = q + (i - 1) * ax;
            const T c = r[0];
            T e = T(0);
            if (lane == 0u || lane == 31u) e = r[lane == 0u ? -1 : 1];
            T l = __shfl_up_sync(0xffffffffu, c, 1);
            T h = __shfl_down_sync(0xffffffffu, c, 1);
            if (lane == 0u) l = e;
            if (lane == 31u) h = e;
            row[i] = (l + c) + h;
        } else {
            row[i] = T(0);
        }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) sums[i] = (row[i] + row[i + 1]) + row[i + 2];
}

/* COLS columns a thread (x, x + 32, ...): tiles 32 * COLS wide; SHFL: x neighbours by shuffles. */
template <typename T, int ROWS, int DEPTH, int COLS, bool SHFL>
__device__ __forceinline__ void wide_march(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / 32) * ROWS;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + 32 * COLS - 1) / (32 * COLS);
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + DEPTH - 1) / DEPTH);
    const unsigned lane = threadIdx.x % 32;
    const uint64_t tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x = a.begin[0] + (t % tiles_x) * 32 * COLS + tx;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * ROWS;
        if (x >= a.end[0] || y >= a.end[1]) continue;
        const int live = a.end[1] - y < (uint64_t)ROWS ? (int)(a.end[1] - y) : ROWS;
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * DEPTH;
        const int depth = a.end[2] - z0 < (uint64_t)DEPTH ? (int)(a.end[2] - z0) : DEPTH;
        const T* q = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        T lo[COLS][ROWS], mid[COLS][ROWS], hi[COLS][ROWS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            if (SHFL) {
                sh_plane<T, ROWS>(lo[c], q + 32 * c, ax, live, lane);
                sh_plane<T, ROWS>(mid[c], q + 32 * c + plane, ax, live, lane);
            } else {
                hp_march_plane<T, ROWS>(lo[c], q + 32 * c, ax, live);
                hp_march_plane<T, ROWS>(mid[c], q + 32 * c + plane, ax, live);
            }
        }
        q += 2 * plane;
        for (int z = 0; z < depth; ++z, q += plane, o += plane) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                if (SHFL) {
                    sh_plane<T, ROWS>(hi[c], q + 32 * c, ax, live, lane);
                } else {
                    hp_march_plane<T, ROWS>(hi[c], q + 32 * c, ax, live);
                }
            }
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    if (i < live) o[32 * c + i * ax] = ((lo[c][i] + mid[c][i]) + hi[c][i]) * scale;
                    lo[c][i] = mid[c][i];
                    mid[c][i] = hi[c][i];
                }
            }
        }
    }
}

template <typename T, int ROWS, int DEPTH, int COLS, bool SHFL>
__global__ void __launch_bounds__(256) k_wide(hp_stencil_args a) {
    wide_march<T, ROWS, DEPTH, COLS, SHFL>(a);
}

template <typename T, int ROWS, int DEPTH, bool PF, int MINB>
__global__ void __launch_bounds__(256, MINB) k_march(hp_stencil_args a) {
    if (PF) {
        pf_march<T, ROWS, DEPTH>(a);
    } else {
        hp_stencil27_march<T, ROWS, DEPTH, 1>(a);
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

template <typename T>
__global__ void k_diff(const T* a, const T* b, uint64_t n, unsigned long long* count) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        bool same = sizeof(T) == 8 ? __double_as_longlong((double)a[i]) == __double_as_longlong((double)b[i])
                                   : __float_as_uint((float)a[i]) == __float_as_uint((float)b[i]);
        if (!same) atomicAdd(count, 1ull);
    }
}

static uint64_t tiles(const hp_stencil_args& a, int threads, int rows, int depth, int cols = 1) {
    uint64_t r = (uint64_t)(threads / 32) * rows;
    uint64_t w = 32 * (uint64_t)cols;
    uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1], bz = a.end[2] - a.begin[2];
    return ((bx + w - 1) / w) * ((by + r - 1) / r) * ((bz + depth - 1) / depth);
}

struct Variant {
    std::string name;
    void (*kernel)(hp_stencil_args);
    int threads;
    int rows, depth;  // for the grid
    uint32_t form;
    int cols = 1;
};

template <typename T, int R, int D, bool PF, int MB>
static Variant v(int threads = 256) {
    char buf[96];
    snprintf(buf, sizeof buf, "rows%d-depth%d-%s-minblocks%d-threads%d", R, D, PF ? "prefetch" : "plain",
             MB, threads);
    return Variant{buf, k_march<T, R, D, PF, MB>, threads, R, D, 0};
}

template <typename T, int R, int D, int C, bool S>
static Variant w() {
    char buf[96];
    snprintf(buf, sizeof buf, "rows%d-depth%d-cols%d-%s-threads256", R, D, C, S ? "shuffles" : "loads");
    return Variant{buf, k_wide<T, R, D, C, S>, 256, R, D, 0, C};
}

template <typename T>
static std::vector<Variant> variants() {
    std::vector<Variant> vs;
    vs.push_back(Variant{"production-hp_stencil27-march", hp_stencil27, 256, (int)HP_MARCH_ROWS,
                         (int)HP_MARCH_Z, HP_STENCIL_FORM_MARCH, (int)HP_MARCH_COLS});
    vs.push_back(v<T, 4, 32, false, 1>());
    vs.push_back(v<T, 4, 32, true, 1>());
    vs.push_back(v<T, 4, 16, false, 1>());
    vs.push_back(v<T, 8, 32, false, 1>());
    vs.push_back(v<T, 4, 32, false, 4>());
    vs.push_back(w<T, 4, 32, 1, true>());
    vs.push_back(w<T, 8, 32, 1, true>());
    vs.push_back(w<T, 2, 32, 2, false>());
    vs.push_back(w<T, 4, 32, 2, false>());
    vs.push_back(w<T, 2, 32, 2, true>());
    vs.push_back(w<T, 4, 32, 2, true>());
    vs.push_back(w<T, 2, 16, 4, false>());
    vs.push_back(w<T, 4, 16, 2, false>());
    vs.push_back(Variant{"production-hp_stencil27-march-again", hp_stencil27, 256,
                         (int)HP_MARCH_ROWS, (int)HP_MARCH_Z, HP_STENCIL_FORM_MARCH,
                         (int)HP_MARCH_COLS});
    vs.push_back(Variant{"production-hp_stencil27-points", hp_stencil27, 256, 0, 0,
                         HP_STENCIL_FORM_POINTS});
    return vs;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

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
    CK(cudaMemset(out, 0, bytes));
    CK(cudaMemset(ref, 0, bytes));
    hp_stencil_args a = {};
    a.in = (uint64_t)in;
    a.alloc[0] = a.alloc[1] = a.alloc[2] = A;
    a.begin[0] = a.begin[1] = a.begin[2] = 1;
    a.end[0] = a.end[1] = a.end[2] = N + 1;
    a.elem_bytes = sizeof(T);
    a.components = 1;
    // The reference: the point form.
    a.out = (uint64_t)ref;
    a.form = HP_STENCIL_FORM_POINTS;
    uint64_t pts = N * N * N;
    hp_stencil27<<<(unsigned)((pts + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    a.out = (uint64_t)out;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto copy_us = [&]() {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    float copy0 = copy_us();
    printf("%s,copy,%.1f,%.1f,1.000,0,0\n", tname, copy0, copy0);
    for (const Variant& var : variants<T>()) {
        cudaFuncAttributes attr;
        CK(cudaFuncGetAttributes(&attr, var.kernel));
        a.form = var.form;
        unsigned blocks = var.rows ? (unsigned)tiles(a, var.threads, var.rows, var.depth, var.cols)
                                   : (unsigned)((pts + var.threads - 1) / var.threads);
        CK(cudaMemset(out, 0, bytes));
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0));
            var.kernel<<<blocks, var.threads>>>(a);
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
        float us = median(t);
        printf("%s,%s,%.1f,%.1f,%.3f,%llu,%d\n", tname, var.name.c_str(), us, copy0, copy0 / us,
               diffs, attr.numRegs);
        fflush(stdout);
    }
    // haloport stencil's compute step on one rank: the inner box, then the six shell slabs
    // (core/src/stencil.rs boxes()), each launch with the grid regions::stencil_blocks gives.
    {
        uint64_t lo = 1, hi = N + 1;
        uint64_t boxes[7][2][3] = {
            {{lo + 1, lo + 1, lo + 1}, {hi - 1, hi - 1, hi - 1}},
            {{lo, lo, lo}, {hi, hi, lo + 1}},
            {{lo, lo, hi - 1}, {hi, hi, hi}},
            {{lo, lo, lo + 1}, {hi, lo + 1, hi - 1}},
            {{lo, hi - 1, lo + 1}, {hi, hi, hi - 1}},
            {{lo, lo + 1, lo + 1}, {lo + 1, hi - 1, hi - 1}},
            {{hi - 1, lo + 1, lo + 1}, {hi, hi - 1, hi - 1}},
        };
        for (uint32_t form : {HP_STENCIL_FORM_MARCH, HP_STENCIL_FORM_POINTS}) {
            CK(cudaMemset(out, 0, bytes));
            std::vector<float> t;
            for (int i = 0; i < reps + 2; ++i) {
                CK(cudaEventRecord(e0));
                for (auto& b : boxes) {
                    hp_stencil_args s = a;
                    s.form = form;
                    for (int k = 0; k < 3; ++k) {
                        s.begin[k] = b[0][k];
                        s.end[k] = b[1][k];
                    }
                    uint64_t ex = s.end[0] - s.begin[0], ey = s.end[1] - s.begin[1],
                             ez = s.end[2] - s.begin[2];
                    bool march = form == HP_STENCIL_FORM_MARCH && ex >= HP_MARCH_X &&
                                 ey >= HP_MARCH_ROWS && ez >= HP_MARCH_MIN_Z;
                    unsigned blocks = march ? (unsigned)tiles(s, 256, HP_MARCH_ROWS, HP_MARCH_Z, HP_MARCH_COLS)
                                            : (unsigned)((ex * ey * ez + 255) / 256);
                    hp_stencil27<<<blocks, 256>>>(s);
                }
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
            float us = median(t);
            printf("%s,step-inner-and-6-shells-%s,%.1f,%.1f,%.3f,%llu,0\n", tname,
                   form == HP_STENCIL_FORM_MARCH ? "march" : "points", us, copy0, copy0 / us,
                   diffs);
        }
    }
    printf("%s,copy-again,%.1f,%.1f,1.000,0,0\n", tname, copy_us(), copy0);
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(ref));
    CK(cudaFree(count));
}

int main(int argc, char** argv) {
    uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", p.name, p.multiProcessorCount, (unsigned long long)N,
           reps);
    printf("type,variant,median_us,copy_us,copy_over_kernel,differing_points,registers\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
