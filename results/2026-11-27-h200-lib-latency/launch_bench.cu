// What a launch costs the host and how soon its work is seen, by the size of the kernel's
// parameter: 80 bytes (ipc-tq's hp_ipc_args) against 3 KiB (hp_regions_args, the library's
// region table inline), plain and cooperative launches, with and without an event recorded
// after. Each kernel's block 0 thread 0 stores the round's number into a word of pinned host
// memory; the host times the launch call alone and the round trip (the call's start until it
// sees the word), medians of ROUNDS rounds after WARMUP.
// build: nvcc -O2 -arch=sm_90 -o launch_bench launch_bench.cu
// run:   ./launch_bench  (prints one CSV line per case)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,       \
                         cudaGetErrorString(e_));                                    \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

template <int BYTES>
struct Args {
    volatile uint64_t* word;
    uint64_t value;
    unsigned char pad[BYTES - 16];
};

template <int BYTES>
__global__ void store_word(const __grid_constant__ Args<BYTES> a) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        *a.word = a.value + a.pad[BYTES - 17];
    }
}

static double now_ns() {
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <int BYTES>
static void run(const char* name, bool cooperative, bool event, unsigned blocks,
                volatile uint64_t* word, uint64_t* dev_word, cudaStream_t s, cudaEvent_t ev) {
    const int WARMUP = 200, ROUNDS = 3000;
    std::vector<double> call, trip;
    Args<BYTES> a{};
    a.word = dev_word;
    void* params[] = {&a};
    for (int r = 0; r < WARMUP + ROUNDS; ++r) {
        a.value = (uint64_t)r + 1000000;
        const double t0 = now_ns();
        if (cooperative) {
            CHECK(cudaLaunchCooperativeKernel((void*)store_word<BYTES>, dim3(blocks), dim3(128),
                                              params, 0, s));
        } else {
            CHECK(cudaLaunchKernel((void*)store_word<BYTES>, dim3(blocks), dim3(128), params, 0,
                                   s));
        }
        if (event) CHECK(cudaEventRecord(ev, s));
        const double t1 = now_ns();
        while (*word != a.value) {
        }
        const double t2 = now_ns();
        if (r >= WARMUP) {
            call.push_back(t1 - t0);
            trip.push_back(t2 - t0);
        }
        CHECK(cudaStreamSynchronize(s));
    }
    std::printf("%s,%d,%d,%d,%u,%.0f,%.0f\n", name, BYTES, cooperative, event, blocks,
                median(call), median(trip));
}

int main() {
    CHECK(cudaSetDevice(0));
    uint64_t* host = nullptr;
    CHECK(cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    *host = 0;
    uint64_t* dev = nullptr;
    CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    std::printf("case,param_bytes,cooperative,event_after,blocks,call_ns,round_trip_ns\n");
    for (int rep = 0; rep < 2; ++rep) {
        for (unsigned blocks : {4u, 64u}) {
            run<80>("small", false, false, blocks, host, dev, s, ev);
            run<3072>("big", false, false, blocks, host, dev, s, ev);
            run<80>("small-coop", true, false, blocks, host, dev, s, ev);
            run<3072>("big-coop", true, false, blocks, host, dev, s, ev);
            run<80>("small-event", false, true, blocks, host, dev, s, ev);
            run<3072>("big-event", false, true, blocks, host, dev, s, ev);
        }
    }
    return 0;
}
