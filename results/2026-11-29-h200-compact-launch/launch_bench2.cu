// Is a cooperative launch with a short parameter still cheaper than the library's plain launch
// of its 880-byte parameter (hp_regions_args with 8 regions inline), and what would reading a
// per-block plan from device memory cost the blocks? Each kernel's block 0 thread 0 stores the
// round's number into a word of pinned host memory; the host times the launch call alone and
// the round trip (the call's start until it sees the word), medians of ROUNDS rounds.
//   inline: thread 0 reads its region from the parameter through a chain of dependent reads
//           (a search, the region, its signal in device memory), as the library's kernel does
//   plan:   the block's threads load 48 words (the header and the block's plan) from device
//           memory into shared memory in one round, then a barrier, as a compact launch would
// build: nvcc -O2 -arch=sm_90 -o launch_bench2 launch_bench2.cu
// run:   ./launch_bench2 TAG  (one CSV line per case)
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

struct Region {
    uint64_t w[12];
};

template <int BYTES>
struct Args {
    volatile uint64_t* word;
    uint64_t value;
    const uint64_t* plans;
    unsigned char pad[BYTES - 24];
};

template <int BYTES>
__global__ void inline_kernel(const __grid_constant__ Args<BYTES> a) {
    if (threadIdx.x != 0) return;
    const Region* tab = (const Region*)a.pad;
    constexpr int regions = (BYTES - 24) / (int)sizeof(Region);
    constexpr int n = regions > 0 ? regions : 1;
    uint64_t x = blockIdx.x;
    if (regions > 0) {
        // A search, the region, then its signal in device memory: dependent reads.
        x = tab[x % n].w[8];
        x = tab[x % n].w[9];
    }
    x = a.plans[x & 63];
    if (blockIdx.x == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        *a.word = a.value + (x & 0);
    }
}

template <int BYTES>
__global__ void plan_kernel(const __grid_constant__ Args<BYTES> a) {
    __shared__ uint64_t plan[48];
    for (unsigned i = threadIdx.x; i < 48; i += blockDim.x) {
        plan[i] = i < 14 ? a.plans[i] : a.plans[14 + blockIdx.x * 34 + (i - 14)];
    }
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        *a.word = a.value + (plan[47] & 0);
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
static void run(const char* tag, bool plan, bool cooperative, unsigned threads,
                volatile uint64_t* word, uint64_t* dev_word, const uint64_t* plans,
                cudaStream_t s, cudaEvent_t ev) {
    const int WARMUP = 200, ROUNDS = 2000;
    std::vector<double> call, trip;
    Args<BYTES> a{};
    a.word = dev_word;
    a.plans = plans;
    void* params[] = {&a};
    void* f = plan ? (void*)plan_kernel<BYTES> : (void*)inline_kernel<BYTES>;
    for (int r = 0; r < WARMUP + ROUNDS; ++r) {
        a.value = (uint64_t)r + 1000000;
        const double t0 = now_ns();
        if (cooperative) {
            CHECK(cudaLaunchCooperativeKernel(f, dim3(4), dim3(threads), params, 0, s));
        } else {
            CHECK(cudaLaunchKernel(f, dim3(4), dim3(threads), params, 0, s));
        }
        CHECK(cudaEventRecord(ev, s));
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
    std::printf("%s,%s,%d,%d,%u,%.0f,%.0f\n", tag, plan ? "plan" : "inline", BYTES,
                cooperative, threads, median(call), median(trip));
    std::fflush(stdout);
}

int main(int argc, char** argv) {
    const char* tag = argc > 1 ? argv[1] : "alone";
    CHECK(cudaSetDevice(0));
    uint64_t* host = nullptr;
    CHECK(cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    *host = 0;
    uint64_t* dev = nullptr;
    CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    uint64_t* plans = nullptr;
    CHECK(cudaMalloc(&plans, 4096 * sizeof(uint64_t)));
    CHECK(cudaMemset(plans, 0, 4096 * sizeof(uint64_t)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (std::getenv("HEADER")) {
        std::printf("tag,kernel,param_bytes,cooperative,threads,call_ns,round_trip_ns\n");
    }
    for (int rep = 0; rep < 2; ++rep) {
        for (unsigned threads : {16u, 128u}) {
            run<880>(tag, false, false, threads, host, dev, plans, s, ev);
            run<880>(tag, false, true, threads, host, dev, plans, s, ev);
            run<64>(tag, true, false, threads, host, dev, plans, s, ev);
            run<64>(tag, true, true, threads, host, dev, plans, s, ev);
            run<64>(tag, false, true, threads, host, dev, plans, s, ev);
        }
    }
    return 0;
}
