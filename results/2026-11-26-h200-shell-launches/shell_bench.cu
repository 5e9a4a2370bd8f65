/*
 * shell_bench.cu: why the step's compute (inner box + shell) is slower than the inner box alone,
 * and what one launch for the whole shell gives. One GPU, an N^3 field with a halo of 1, the
 * kernels of kernels-cu/hp_regions.cuh as built. Variants, each timed `reps` times (median)
 * and checked bit for bit against the point form over the whole interior:
 *   whole          one march launch over the whole interior (reads the halo: the ideal)
 *   box-thin       the inner box alone, the shell one cell thick (not checked: partial)
 *   thin-streams   that box, then the thin shell's six slabs on six streams (the step today)
 *   thin-serial    the same on one stream
 *   box-thick      the inner box alone, the shell W cells thick (not checked: partial)
 *   thick-streams  that box, then six thick slabs on six streams
 *   thick-serial   the same on one stream
 *   thick-multi    that box, then ONE launch over the six thick slabs (a block per tile of any)
 *   thick-multi2   the same, the shell's launch on a second stream beside the box
 *   all-multi      box and slabs in one launch
 *   slabs-thin / slabs-thick / slabs-multi   the shell alone (not checked)
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu shell_bench.cu -o shell_bench
 * usage: shell_bench [N] [reps]
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

#define MAX_BOXES 7
struct multi_args {
    hp_stencil_args box[MAX_BOXES];
    uint32_t first[MAX_BOXES + 1];
    uint32_t n;
};

template <typename T, int R, int Z, int C>
__device__ __forceinline__ void multi_body(const multi_args& m) {
    uint32_t b = 0;
    while (b + 1 < m.n && blockIdx.x >= m.first[b + 1]) ++b;
    hp_stencil27_march_tiles<T, R, Z, C>(m.box[b], blockIdx.x - m.first[b],
                                         m.first[b + 1] - m.first[b]);
}
__global__ void __launch_bounds__(256, HP_MARCH64_MIN_BLOCKS) k_multi64(multi_args m) {
    multi_body<double, HP_MARCH64_ROWS, HP_MARCH64_Z, HP_MARCH64_COLS>(m);
}
__global__ void __launch_bounds__(256) k_multi32(multi_args m) {
    multi_body<float, HP_MARCH32_ROWS, HP_MARCH32_Z, HP_MARCH32_COLS>(m);
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

/* The inner box and the six slabs of core/src/stencil.rs's boxes() for widths w. */
static void boxes(const hp_stencil_args& a, uint64_t N, const uint64_t w[3], hp_stencil_args& inner,
                  std::vector<hp_stencil_args>& shell) {
    uint64_t in[3][2], it[3][2];
    for (int k = 0; k < 3; ++k) {
        it[k][0] = 1, it[k][1] = N + 1;
        in[k][0] = 1 + w[k], in[k][1] = N + 1 - w[k];
    }
    inner = a;
    for (int k = 0; k < 3; ++k) inner.begin[k] = in[k][0], inner.end[k] = in[k][1];
    shell.clear();
    for (int k = 2; k >= 0; --k) {
        hp_stencil_args lo = a, hi = a;
        for (int j = 0; j < 3; ++j) {
            const uint64_t(&r)[2] = j > k ? in[j] : it[j];
            lo.begin[j] = hi.begin[j] = r[0];
            lo.end[j] = hi.end[j] = r[1];
        }
        lo.begin[k] = it[k][0], lo.end[k] = in[k][0];
        hi.begin[k] = in[k][1], hi.end[k] = it[k][1];
        shell.push_back(lo);
        shell.push_back(hi);
    }
}

template <typename T>
static void run(const char* tname, uint64_t N, int reps) {
    const bool f64 = sizeof(T) == 8;
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
    const hp_stencil_args whole_pts = a;
    hp_stencil27<<<(unsigned)((N * N * N + 255) / 256), 256>>>(a);
    CK(cudaDeviceSynchronize());
    a.out = (uint64_t)out;
    a.form = HP_STENCIL_FORM_MARCH;
    const int R = f64 ? HP_MARCH64_ROWS : HP_MARCH32_ROWS;
    const int C = f64 ? HP_MARCH64_COLS : HP_MARCH32_COLS;
    const int Z = f64 ? HP_MARCH64_Z : HP_MARCH32_Z;
    void (*march)(hp_stencil_args) = f64 ? hp_stencil27_march64 : hp_stencil27_marching;
    void (*multik)(multi_args) = f64 ? k_multi64 : k_multi32;
    // One launch as the step's stencil_launch (core/src/regions.rs) chooses it.
    auto launch = [&](const hp_stencil_args& b, cudaStream_t s) {
        if (ext(b, 2) < HP_MARCH_MIN_Z) {
            hp_stencil27<<<(unsigned)((ext(b, 0) * ext(b, 1) * ext(b, 2) + 255) / 256), 256, 0, s>>>(b);
        } else if (ext(b, 0) < HP_MARCH_X || ext(b, 1) < HP_MARCH_ROWS) {
            const uint64_t cols = ext(b, 0) * ext(b, 1) * ((ext(b, 2) + HP_SLAB_Z - 1) / HP_SLAB_Z);
            hp_stencil27_marching<<<(unsigned)((cols + 255) / 256), 256, 0, s>>>(b);
        } else {
            march<<<tiles_of(b, R, C, Z), 256, 0, s>>>(b);
        }
    };
    auto multi_of = [&](const std::vector<hp_stencil_args>& bs) {
        multi_args m = {};
        uint32_t at = 0;
        for (size_t i = 0; i < bs.size(); ++i) {
            m.box[i] = bs[i];
            m.first[i] = at;
            at += tiles_of(bs[i], R, C, Z);
        }
        m.first[bs.size()] = at;
        m.n = (uint32_t)bs.size();
        return m;
    };
    auto launch_multi = [&](const multi_args& m, cudaStream_t s) {
        multik<<<m.first[m.n], 256, 0, s>>>(m);
    };
    cudaStream_t s0, side[6], s1;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    for (auto& s : side) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1, fork, join[7];
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (auto& e : join) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    auto timed = [&](auto&& body) {
        std::vector<float> t;
        for (int i = 0; i < reps + 2; ++i) {
            CK(cudaEventRecord(e0, s0));
            body();
            CK(cudaEventRecord(e1, s0));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 2) t.push_back(ms * 1000.0f);
        }
        return median(t);
    };
    const float copy = timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s0)); });
    printf("%s,copy,%.1f,%.3f,-\n", tname, copy, 1.0);
    auto time = [&](const char* name, bool check, auto&& body) {
        CK(cudaMemset(out, 0, bytes));
        CK(cudaDeviceSynchronize());
        const float us = timed(body);
        long long diffs = -1;
        if (check) {
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<T><<<4096, 256>>>(out, ref, whole_pts, count);
            unsigned long long d;
            CK(cudaMemcpy(&d, count, sizeof d, cudaMemcpyDeviceToHost));
            diffs = (long long)d;
        }
        printf("%s,%s,%.1f,%.3f,%lld\n", tname, name, us, copy / us, diffs);
        fflush(stdout);
    };
    // Slabs on the side streams after everything on s0 so far, s0 waiting for them.
    auto on_sides = [&](const std::vector<hp_stencil_args>& shell) {
        CK(cudaEventRecord(fork, s0));
        for (size_t i = 0; i < shell.size(); ++i) {
            CK(cudaStreamWaitEvent(side[i], fork));
            launch(shell[i], side[i]);
            CK(cudaEventRecord(join[i], side[i]));
        }
        for (size_t i = 0; i < shell.size(); ++i) CK(cudaStreamWaitEvent(s0, join[i]));
    };
    // The box on s1 beside s0 (as the step's inner stream), s0 joining it at the end.
    auto box_beside = [&](const hp_stencil_args& box, auto&& rest) {
        CK(cudaEventRecord(fork, s0));
        CK(cudaStreamWaitEvent(s1, fork));
        launch(box, s1);
        CK(cudaEventRecord(join[6], s1));
        rest();
        CK(cudaStreamWaitEvent(s0, join[6]));
    };
    time("whole", true, [&] { launch(a, s0); });
    const uint64_t thin[3] = {1, 1, 1};
    const uint64_t thick[3] = {f64 ? 32u : 64u, f64 ? 32u : 16u, 16};
    hp_stencil_args inner;
    std::vector<hp_stencil_args> shell;
    boxes(a, N, thin, inner, shell);
    time("box-thin", false, [&] { launch(inner, s0); });
    time("slabs-thin", false, [&] { on_sides(shell); });
    time("slabs-thin-serial", false, [&] { for (auto& b : shell) launch(b, s0); });
    for (size_t i = 0; i < shell.size(); ++i) {
        char name[32];
        snprintf(name, sizeof name, "slab-thin-%zu", i);
        time(name, false, [&] { launch(shell[i], s0); });
    }
    time("thin-streams", true, [&] { box_beside(inner, [&] { on_sides(shell); }); });
    time("thin-serial", true, [&] { launch(inner, s0); for (auto& b : shell) launch(b, s0); });
    boxes(a, N, thick, inner, shell);
    const multi_args slabs = multi_of(shell);
    std::vector<hp_stencil_args> all = shell;
    all.push_back(inner);
    const multi_args every = multi_of(all);
    time("box-thick", false, [&] { launch(inner, s0); });
    time("slabs-thick", false, [&] { on_sides(shell); });
    time("slabs-multi", false, [&] { launch_multi(slabs, s0); });
    time("thick-streams", true, [&] { box_beside(inner, [&] { on_sides(shell); }); });
    time("thick-serial", true, [&] { launch(inner, s0); for (auto& b : shell) launch(b, s0); });
    time("thick-multi", true, [&] { launch(inner, s0); launch_multi(slabs, s0); });
    time("thick-multi2", true, [&] { box_beside(inner, [&] { launch_multi(slabs, s0); }); });
    time("all-multi", true, [&] { launch_multi(every, s0); });
    time("whole-again", true, [&] { launch(a, s0); });
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
    printf("type,variant,median_us,copy_over_variant,differing_points\n");
    run<double>("f64", N, reps);
    run<float>("f32", N, reps);
    return 0;
}
