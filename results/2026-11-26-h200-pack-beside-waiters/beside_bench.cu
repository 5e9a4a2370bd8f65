// Does a pack slow down while other blocks of the same process wait on the device? A probe of the
// collapse in ../2026-11-26-h200x2-unpack-beside: a pack-like kernel (strided copy, then per
// block a system-scope fence, a count on a device counter and, by the last block, a release
// store of the flag) runs alone or beside a kernel of waiting blocks (thread 0 polls the flag
// relaxed at system scope, every 64th poll also an abort word and the clock), on its own stream,
// as the library's unpack would. Each mode flips one of the things the library's wait and
// signal do, so the one that makes the pack slow shows.
//
// build: nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -o beside_bench beside_bench.cu
// usage: beside_bench [reps]   prints CSV: mode,pack_us(median),pack_us(min),waiter_us(median)
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

__device__ __forceinline__ uint64_t timer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_relaxed_gpu(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(uint64_t* p, uint64_t v) {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

struct Args {
    const double* src;
    double* dst;
    double* out;
    uint64_t n;           // doubles moved by the pack (and by the waiters after it)
    uint64_t stride;      // source stride in doubles (a strided halo face)
    uint32_t* counter;    // device counter of pack blocks
    uint64_t* flag;       // the flag the last pack block raises (device memory)
    const uint64_t* abort_word;  // host pinned or device, polled every 64th poll (0: none)
    uint64_t epoch;
    uint64_t* stamps;     // per block: start, end (pack blocks first, then waiters)
    uint32_t pack_blocks;
    uint32_t fence;       // 0 none, 1 fence.acq_rel.sys, 2 fence.acq_rel.gpu
    uint32_t poll;        // 0 relaxed.sys, 1 relaxed.gpu, 2 acquire.sys
    uint32_t timer_every; // poll count between clock reads (0: never)
    uint32_t sleep_ns;    // pause between polls
    uint32_t relaxed_flag;  // the last block stores the flag relaxed after its fence
};

__device__ void pack_block(const Args& a, uint32_t b, uint32_t nb) {
    if (threadIdx.x == 0) a.stamps[2 * blockIdx.x] = timer();
    const uint64_t per = (a.n + nb - 1) / nb;
    const uint64_t lo = b * per, hi = min(a.n, lo + per);
    for (uint64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) a.dst[i] = a.src[i * a.stride];
    __syncthreads();
    if (threadIdx.x == 0) {
        if (a.fence == 1) asm volatile("fence.acq_rel.sys;" ::: "memory");
        if (a.fence == 2) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        const uint32_t done = atomicAdd(a.counter, 1u) + 1u;
        if (done == (uint32_t)(a.epoch * nb)) {
            if (a.fence == 1) asm volatile("fence.acq_rel.sys;" ::: "memory");
            if (a.fence == 2) asm volatile("fence.acq_rel.gpu;" ::: "memory");
            if (a.relaxed_flag) {
                st_relaxed_sys(a.flag, a.epoch);
            } else {
                st_release_sys(a.flag, a.epoch);
            }
        }
        a.stamps[2 * blockIdx.x + 1] = timer();
    }
}

__device__ void wait_block(const Args& a, uint32_t b, uint32_t nb) {
    __shared__ int ok;
    if (threadIdx.x == 0) {
        a.stamps[2 * blockIdx.x] = timer();
        ok = 1;
        const uint64_t since = timer();
        for (uint32_t spins = 0;; ++spins) {
            uint64_t v = a.poll == 0   ? ld_relaxed_sys(a.flag)
                         : a.poll == 1 ? ld_relaxed_gpu(a.flag)
                                       : ld_acquire_sys(a.flag);
            if (v >= a.epoch) {
                ld_acquire_sys(a.flag);
                break;
            }
            if ((spins & 63u) == 0u) {
                if (a.abort_word && ld_relaxed_sys(a.abort_word) >= a.epoch + 1000) {
                    ok = 0;
                    break;
                }
                if (a.timer_every && timer() - since > 2000000000ull) {
                    ok = 0;
                    break;
                }
            }
            if (a.sleep_ns) __nanosleep(a.sleep_ns);
        }
    }
    __syncthreads();
    if (ok) {
        const uint64_t per = (a.n + nb - 1) / nb;
        const uint64_t lo = b * per, hi = min(a.n, lo + per);
        for (uint64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) a.out[i] = a.dst[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) a.stamps[2 * blockIdx.x + 1] = timer();
}

__global__ void pack_kernel(Args a) { pack_block(a, blockIdx.x, gridDim.x); }

// Waiter blocks numbered after the pack's in the stamps.
__global__ void wait_kernel(Args a, uint32_t offset) {
    // stamps of block offset + blockIdx.x
    Args b = a;
    b.stamps = a.stamps + 2 * offset;
    wait_block(b, blockIdx.x, gridDim.x);
}

// One launch: the first pack_blocks blocks pack, the rest wait (the one-launch form).
__global__ void fused_kernel(Args a) {
    if (blockIdx.x < a.pack_blocks) {
        pack_block(a, blockIdx.x, a.pack_blocks);
    } else {
        wait_block(a, blockIdx.x - a.pack_blocks, gridDim.x - a.pack_blocks);
    }
}

struct Mode {
    const char* name;
    int beside;  // 0 pack alone, 1 waiters on a second stream launched first, 2 fused, 3 waiters after on same stream
    int abort_where;  // 0 none, 1 host pinned, 2 device
    uint32_t fence, poll, timer_every, sleep_ns, relaxed_flag, waiters;
};

int main(int argc, char** argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    const uint64_t n = 540000, stride = 7;  // thesis-9: 4.32 MB
    const uint32_t pack_blocks = 144;
    double *src, *dst, *out;
    uint32_t* counter;
    uint64_t *flag, *dev_abort, *host_abort, *stamps;
    CK(cudaMalloc(&src, n * stride * sizeof(double)));
    CK(cudaMemset(src, 0, n * stride * sizeof(double)));
    CK(cudaMalloc(&dst, n * sizeof(double)));
    CK(cudaMalloc(&out, n * sizeof(double)));
    CK(cudaMalloc(&counter, 4));
    CK(cudaMalloc(&flag, 8));
    CK(cudaMalloc(&dev_abort, 8));
    CK(cudaMemset(dev_abort, 0, 8));
    CK(cudaHostAlloc(&host_abort, 8, cudaHostAllocMapped));
    *host_abort = 0;
    const uint32_t max_blocks = 4096;
    CK(cudaMalloc(&stamps, 2 * max_blocks * 8));
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    uint64_t* host_abort_dev;
    CK(cudaHostGetDevicePointer((void**)&host_abort_dev, host_abort, 0));

    const Mode modes[] = {
        {"alone", 0, 1, 1, 0, 1, 0, 0, 144},
        {"after-same-stream", 3, 1, 1, 0, 1, 0, 0, 144},
        {"beside", 1, 1, 1, 0, 1, 0, 0, 144},
        {"beside-no-abort", 1, 0, 1, 0, 1, 0, 0, 144},
        {"beside-abort-device", 1, 2, 1, 0, 1, 0, 0, 144},
        {"beside-no-abort-no-timer", 1, 0, 1, 0, 0, 0, 0, 144},
        {"beside-fence-gpu", 1, 1, 2, 0, 1, 0, 0, 144},
        {"beside-no-fence", 1, 1, 0, 0, 1, 0, 0, 144},
        {"beside-relaxed-flag", 1, 1, 1, 0, 1, 0, 1, 144},
        {"beside-poll-gpu", 1, 1, 1, 1, 1, 0, 0, 144},
        {"beside-poll-acquire", 1, 1, 1, 2, 1, 0, 0, 144},
        {"beside-sleep-1000", 1, 1, 1, 0, 1, 1000, 0, 144},
        {"beside-16-waiters", 1, 1, 1, 0, 1, 0, 0, 16},
        {"beside-1-waiter", 1, 1, 1, 0, 1, 0, 0, 1},
        {"beside-512-waiters", 1, 1, 1, 0, 1, 0, 0, 512},
        {"fused", 2, 1, 1, 0, 1, 0, 0, 144},
        {"fused-no-abort", 2, 0, 1, 0, 1, 0, 0, 144},
        {"fused-no-fence", 2, 1, 0, 0, 1, 0, 0, 144},
        {"alone-again", 0, 1, 1, 0, 1, 0, 0, 144},
    };
    printf("mode,pack_median_us,pack_min_us,waiters_median_us\n");
    std::vector<uint64_t> h(2 * max_blocks);
    for (const Mode& m : modes) {
        std::vector<double> packs, waits;
        CK(cudaMemset(counter, 0, 4));
        CK(cudaMemset(flag, 0, 8));
        CK(cudaDeviceSynchronize());
        for (int r = 0; r < reps; ++r) {
            Args a{src, dst, out, n, stride, counter, flag,
                   m.abort_where == 1 ? host_abort_dev : m.abort_where == 2 ? dev_abort : nullptr,
                   (uint64_t)(r + 1), stamps, pack_blocks, m.fence, m.poll, m.timer_every,
                   m.sleep_ns, m.relaxed_flag};
            CK(cudaMemset(stamps, 0, 2 * max_blocks * 8));
            CK(cudaDeviceSynchronize());
            uint32_t total = pack_blocks + (m.beside ? m.waiters : 0);
            if (m.beside == 0) {
                pack_kernel<<<pack_blocks, 256, 0, s1>>>(a);
            } else if (m.beside == 1) {
                wait_kernel<<<m.waiters, 256, 0, s2>>>(a, pack_blocks);
                pack_kernel<<<pack_blocks, 256, 0, s1>>>(a);
            } else if (m.beside == 2) {
                fused_kernel<<<pack_blocks + m.waiters, 256, 0, s1>>>(a);
            } else {
                pack_kernel<<<pack_blocks, 256, 0, s1>>>(a);
                wait_kernel<<<m.waiters, 256, 0, s1>>>(a, pack_blocks);
            }
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(h.data(), stamps, 2 * total * 8, cudaMemcpyDeviceToHost));
            uint64_t ps = UINT64_MAX, pe = 0, ws = UINT64_MAX, we = 0;
            for (uint32_t b = 0; b < pack_blocks; ++b) {
                ps = std::min(ps, h[2 * b]);
                pe = std::max(pe, h[2 * b + 1]);
            }
            for (uint32_t b = pack_blocks; b < total; ++b) {
                ws = std::min(ws, h[2 * b]);
                we = std::max(we, h[2 * b + 1]);
            }
            if (r >= 3) {
                packs.push_back((pe - ps) / 1e3);
                if (total > pack_blocks) waits.push_back((we - ps) / 1e3);
            }
        }
        std::sort(packs.begin(), packs.end());
        std::sort(waits.begin(), waits.end());
        printf("%s,%.2f,%.2f,%.2f\n", m.name, packs[packs.size() / 2], packs[0],
               waits.empty() ? 0.0 : waits[waits.size() / 2]);
        fflush(stdout);
    }
    return 0;
}
