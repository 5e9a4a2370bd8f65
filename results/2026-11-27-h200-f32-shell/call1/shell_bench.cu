/*
 * shell_bench.cu: where the f32 step's compute goes beyond its inner box. The stencil's compute
 * at 512^3 f32 (rows of 516) takes 386-391 us where its inner box alone (hp_stencil27_march32)
 * takes 330-333: the six slabs of the shell around it cost about 58 us though they hold 1.2 %
 * of the points. This times, over the same field and boxes as `haloport stencil` (box 2 .. 511,
 * z slabs over the whole interior, y slabs within inner z, x slabs within inner z and y), with
 * the launches the library makes (haloport_core::regions::stencil_launch):
 *   - the box alone and each slab alone;
 *   - the compute as the library queues it: the box on one stream and each slab on a stream of
 *     its own, forked from and joined to a first stream;
 *   - the same with the slabs queued before the box, with the box after the slabs on one stream,
 *     and with the slabs on streams of higher priority;
 *   - the same with other slab kernels: the x slabs transposed (a warp's lanes along z, 30
 *     planes a warp, marching along y, the plane sums of z - 1 and z + 1 from the lanes beside)
 *     and the y slabs in columns of 16 planes rather than 4.
 * Every kernel's output is checked bit for bit against the point form (hp_stencil27) over the
 * whole interior, after each configuration. Median of `reps` runs.
 * Built where the sources are (nvcc 13.0):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels-cu -L$CUDA/lib shell_bench.cu -o shell_bench
 * usage: shell_bench [N] [reps]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <functional>
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

/* An x slab (a box a few points wide in x) with a warp's lanes along z: lane l holds plane
 * z0 - 1 + l, lanes 1 .. 30 store; the warp marches rows y0 .. y0 + Y - 1, each lane summing
 * its plane's rows (((x - 1 + x) + x + 1) a row, ((y - 1 + y) + y + 1) a plane) and taking the
 * plane sums of z - 1 and z + 1 from the lanes beside: hp_stencil27_slab's sums in its order.
 * Warps numbered (x, y chunk, z chunk), x fastest. */
template <typename T, int Y>
__global__ void __launch_bounds__(256) k_xslab(hp_stencil_args a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t bx = a.end[0] - a.begin[0];
    const uint64_t chunks_y = (a.end[1] - a.begin[1] + Y - 1) / Y;
    const uint64_t chunks_z = (a.end[2] - a.begin[2] + 29) / 30;
    const uint64_t warps = bx * chunks_y * chunks_z;
    const uint32_t lane = threadIdx.x % 32u;
    const T scale = T(1) / T(27u);
    for (uint64_t w = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / 32u; w < warps;
         w += (uint64_t)gridDim.x * blockDim.x / 32u) {
        const uint64_t x = a.begin[0] + w % bx;
        const uint64_t rest = w / bx;
        const uint64_t y0 = a.begin[1] + (rest % chunks_y) * Y;
        const uint64_t p = a.begin[2] - 1 + (rest / chunks_y) * 30 + lane;
        /* Planes past end[2] are not read (their sums reach no stored point). */
        const uint64_t pl = p <= a.end[2] ? p : a.end[2];
        const bool store = lane >= 1u && lane <= 30u && p < a.end[2];
        const int rows = a.end[1] - y0 < (uint64_t)Y ? (int)(a.end[1] - y0) : Y;
        const T* q = in + (x + a.alloc[0] * (y0 - 1) + plane * pl);
        T* o = out + (x + a.alloc[0] * y0 + plane * p);
        T r[Y + 2];
#pragma unroll
        for (int i = 0; i < Y + 2; ++i) {
            if (i <= rows + 1) {
                const T* s = q + i * ax;
                r[i] = (s[-1] + s[0]) + s[1];
            }
        }
#pragma unroll
        for (int i = 0; i < Y; ++i) {
            if (i < rows) {
                const T mid = (r[i] + r[i + 1]) + r[i + 2];
                const T lo = __shfl_up_sync(0xffffffffu, mid, 1u);
                const T hi = __shfl_down_sync(0xffffffffu, mid, 1u);
                if (store) o[i * ax] = ((lo + mid) + hi) * scale;
            }
        }
    }
}

/* hp_stencil27_slab with columns of DEPTH planes (the library's is HP_SLAB_Z). */
template <int DEPTH>
__global__ void __launch_bounds__(256) k_slab(hp_stencil_args a) {
    hp_stencil27_slab<float, DEPTH>(a);
}

__global__ void k_init(float* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
        double v = ((double)h / 3.0) * ((i % 3 == 0) ? -1.0 : 1.0) + 1.0 / 7.0;
        f[i] = (float)v;
    }
}

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

struct Launch {
    void (*kernel)(hp_stencil_args);
    hp_stencil_args args;
    unsigned blocks;
};

static unsigned div_up(uint64_t a, uint64_t b) { return (unsigned)((a + b - 1) / b); }
static uint64_t ext(const hp_stencil_args& a, int k) { return a.end[k] - a.begin[k]; }

/* The library's launch for a box (regions::stencil_launch, 256 threads): lanes tiles where the
 * box is wide and its rows allow (else the march kernel's f32 tiles), columns of HP_SLAB_Z
 * planes in a slab. */
static Launch library(hp_stencil_args a) {
    const bool tiles = ext(a, 0) >= 32 && ext(a, 1) >= HP_MARCH_ROWS;
    if (!tiles) return {hp_stencil27_marching, a, div_up(ext(a, 0) * ext(a, 1) * div_up(ext(a, 2), HP_SLAB_Z), 256)};
    const bool off = a.alloc[0] % 4 == 2 && a.alloc[1] % 2 == 0 && a.begin[0] >= 2 &&
                     (a.begin[1] >= 2 || a.begin[2] >= 2);
    if (a.alloc[0] % 4 == 0 || off) {
        const uint64_t first = (off ? a.begin[0] - 2 : a.begin[0]) / 4 * 4;
        return {hp_stencil27_march32, a,
                div_up(a.end[0] - first, 128) * div_up(ext(a, 1), 8) * div_up(ext(a, 2), HP_LANES_Z)};
    }
    return {hp_stencil27_marching, a,
            div_up(ext(a, 0), 32 * HP_MARCH32_COLS) * div_up(ext(a, 1), 8 * HP_MARCH32_ROWS) *
                div_up(ext(a, 2), HP_MARCH32_Z)};
}

int main(int argc, char** argv) {
    const uint64_t N = argc > 1 ? strtoull(argv[1], 0, 10) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 15;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs, N=%llu, reps=%d\n", prop.name, prop.multiProcessorCount, (unsigned long long)N, reps);
    printf("rows,config,median_us,copy_us,copy_over_compute,differing_points\n");
    const uint64_t A = N + 2;
    for (uint64_t ax : {(A + 3) / 4 * 4, A}) {
        const uint64_t n = ax * A * A;
        const size_t bytes = n * sizeof(float);
        float *in, *out, *ref;
        CK(cudaMalloc(&in, bytes));
        CK(cudaMalloc(&out, bytes));
        CK(cudaMalloc(&ref, bytes));
        unsigned long long* count;
        CK(cudaMalloc(&count, sizeof *count));
        k_init<<<4096, 256>>>(in, n);
        CK(cudaMemset(ref, 0, bytes));
        hp_stencil_args base = {};
        base.in = (uint64_t)in;
        base.alloc[0] = ax;
        base.alloc[1] = base.alloc[2] = A;
        base.elem_bytes = 4;
        base.components = 1;
        hp_stencil_args whole = base;
        whole.begin[0] = whole.begin[1] = whole.begin[2] = 1;
        whole.end[0] = whole.end[1] = whole.end[2] = N + 1;
        whole.out = (uint64_t)ref;
        whole.form = HP_STENCIL_FORM_POINTS;
        hp_stencil27<<<div_up(N * N * N, 256), 256>>>(whole);
        CK(cudaDeviceSynchronize());
        whole.out = (uint64_t)out;
        base.out = (uint64_t)out;
        base.form = HP_STENCIL_FORM_MARCH;
        auto box = [&](uint64_t x0, uint64_t x1, uint64_t y0, uint64_t y1, uint64_t z0, uint64_t z1) {
            hp_stencil_args b = base;
            b.begin[0] = x0, b.end[0] = x1, b.begin[1] = y0, b.end[1] = y1, b.begin[2] = z0, b.end[2] = z1;
            return b;
        };
        const uint64_t lo = 1, hi = N + 1;
        const hp_stencil_args inner = box(2, N, 2, N, 2, N);
        /* stencil.rs `boxes`: z slabs over the interior, y within inner z, x within inner z, y. */
        const hp_stencil_args slabs[6] = {
            box(lo, hi, lo, hi, lo, 2),    box(lo, hi, lo, hi, N, hi),    box(lo, hi, lo, 2, 2, N),
            box(lo, hi, N, hi, 2, N),      box(lo, 2, 2, N, 2, N),        box(N, hi, 2, N, 2, N),
        };
        const Launch box_launch = library(inner);
        std::vector<Launch> lib_slabs, new_slabs;
        for (int s = 0; s < 6; ++s) {
            lib_slabs.push_back(library(slabs[s]));
            Launch l = library(slabs[s]);
            const hp_stencil_args& b = slabs[s];
            if (s >= 4) {
                /* x slabs transposed: warps of 30 planes x 8 rows. */
                l = {k_xslab<float, 8>, b, div_up(ext(b, 0) * div_up(ext(b, 1), 8) * div_up(ext(b, 2), 30) * 32, 256)};
            } else if (s >= 2) {
                l = {k_slab<16>, b, div_up(ext(b, 0) * ext(b, 1) * div_up(ext(b, 2), 16), 256)};
            }
            new_slabs.push_back(l);
        }
        int lo_prio, hi_prio;
        CK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
        cudaStream_t s0, sb, ss[6], sh[6];
        CK(cudaStreamCreateWithPriority(&s0, cudaStreamNonBlocking, hi_prio));
        CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
        for (int s = 0; s < 6; ++s) {
            CK(cudaStreamCreateWithFlags(&ss[s], cudaStreamNonBlocking));
            CK(cudaStreamCreateWithPriority(&sh[s], cudaStreamNonBlocking, hi_prio));
        }
        cudaEvent_t e0, e1, fork, join[7];
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        for (auto& j : join) CK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
        auto go = [](const Launch& l, cudaStream_t s) { l.kernel<<<l.blocks, 256, 0, s>>>(l.args); };
        auto timed = [&](const std::function<void()>& queue) {
            std::vector<float> t;
            for (int i = 0; i < reps + 2; ++i) {
                CK(cudaEventRecord(e0, s0));
                queue();
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
        /* Queues on s0 the box on `box_stream` and each slab on its stream, forked and joined. */
        auto side_by_side = [&](const std::vector<Launch>& sl, cudaStream_t box_stream, cudaStream_t* slab_streams,
                                bool slabs_first) {
            CK(cudaEventRecord(fork, s0));
            CK(cudaStreamWaitEvent(box_stream, fork));
            if (!slabs_first) go(box_launch, box_stream);
            for (int s = 0; s < 6; ++s) {
                CK(cudaStreamWaitEvent(slab_streams[s], fork));
                go(sl[s], slab_streams[s]);
                CK(cudaEventRecord(join[s], slab_streams[s]));
            }
            if (slabs_first) go(box_launch, box_stream);
            CK(cudaEventRecord(join[6], box_stream));
            for (auto& j : join) CK(cudaStreamWaitEvent(s0, j));
        };
        auto report = [&](const char* name, const hp_stencil_args& check, const std::function<void()>& queue) {
            CK(cudaMemset(out, 0, bytes));
            const float us = timed(queue);
            CK(cudaMemset(count, 0, sizeof *count));
            k_diff<<<4096, 256>>>(out, ref, check, count);
            unsigned long long diffs;
            CK(cudaMemcpy(&diffs, count, sizeof diffs, cudaMemcpyDeviceToHost));
            printf("%llu,%s,%.1f,%.1f,%.3f,%llu\n", (unsigned long long)ax, name, us, copy, copy / us, diffs);
            fflush(stdout);
        };
        printf("%llu,copy,%.1f,%.1f,1.000,0\n", (unsigned long long)ax, copy, copy);
        report("box-alone", inner, [&] { go(box_launch, s0); });
        const char* slab_names[6] = {"z-low", "z-high", "y-low", "y-high", "x-low", "x-high"};
        char name[64];
        for (int s = 0; s < 6; ++s) {
            snprintf(name, sizeof name, "slab-%s-library", slab_names[s]);
            report(name, slabs[s], [&] { go(lib_slabs[s], s0); });
            if (s >= 2) {
                snprintf(name, sizeof name, "slab-%s-%s", slab_names[s], s >= 4 ? "transposed" : "depth16");
                report(name, slabs[s], [&] { go(new_slabs[s], s0); });
            }
        }
        report("compute-library", whole, [&] { side_by_side(lib_slabs, sb, ss, false); });
        report("compute-library-slabs-queued-first", whole, [&] { side_by_side(lib_slabs, sb, ss, true); });
        report("compute-library-slabs-urgent", whole, [&] { side_by_side(lib_slabs, sb, sh, false); });
        report("compute-library-one-stream-slabs-then-box", whole, [&] {
            for (auto& l : lib_slabs) go(l, s0);
            go(box_launch, s0);
        });
        report("compute-library-one-stream-box-then-slabs", whole, [&] {
            go(box_launch, s0);
            for (auto& l : lib_slabs) go(l, s0);
        });
        report("compute-new-slabs", whole, [&] { side_by_side(new_slabs, sb, ss, false); });
        report("compute-new-slabs-urgent", whole, [&] { side_by_side(new_slabs, sb, sh, false); });
        report("compute-new-one-stream-slabs-then-box", whole, [&] {
            for (auto& l : new_slabs) go(l, s0);
            go(box_launch, s0);
        });
        printf("%llu,copy-again,%.1f,%.1f,1.000,0\n", (unsigned long long)ax,
               timed([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s0)); }), copy);
        CK(cudaDeviceSynchronize());
        CK(cudaFree(in));
        CK(cudaFree(out));
        CK(cudaFree(ref));
        CK(cudaFree(count));
    }
    return 0;
}
