// Probe: can the strided x faces of a 6-face pack/unpack overlap with the contiguous y/z faces?
// 512^3 f64 field, halo 1 (allocation 514^3, x fastest), the 6 interior faces packed into one
// 12 MiB buffer and the 6 halo faces unpacked from it. Hand-written kernels (power-of-two
// index arithmetic, x faces paired as in the library: -x element e next to +x element e - 1)
// so that the numbers are a floor for the library's generic kernels, not a measure of them.
// Every variant is checked (pack: every buffer word on the host; unpack: every field word on
// the device) before it is timed; a wrong variant is reported and not timed.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(x) ck((x), #x, __LINE__)
static void ck(cudaError_t e, const char* what, int line) {
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA error %s at line %d: %s\n", cudaGetErrorString(e), line, what);
        exit(1);
    }
}

static const uint32_t A = 514, N = 512, FACE = N * N;  // FACE = elements per face
static const uint64_t NF = (uint64_t)A * A * A;
static const double USEFUL = 2.0 * 6 * FACE * 8;  // bytes read + written by one 6-face op
static const int REPS = 50, RUNS = 11, THREADS = 256;

__host__ __device__ inline uint64_t fpat(uint64_t i) { return (i * 0x9E3779B97F4A7C15ull) ^ 0x0123456789ABCDEFull; }
__host__ __device__ inline uint64_t bpat(uint64_t j) { return (j * 0xD1B54A32D192ED03ull) ^ 0xFEDCBA9876543210ull; }
__host__ __device__ inline uint64_t at(uint32_t x, uint32_t y, uint32_t z) { return x + (uint64_t)A * (y + (uint64_t)A * z); }

// Unit u of the paired x faces: its field index and buffer index.
__device__ __forceinline__ void x_unit(uint32_t u, bool pack, uint64_t& f, uint32_t& b) {
    uint32_t e = u >> 1;
    uint32_t face = u & 1;
    if (face) e = e == 0 ? FACE - 1 : e - 1;
    const uint32_t y = 1 + (e & (N - 1)), z = 1 + (e >> 9);
    const uint32_t x = face ? (pack ? N : N + 1) : (pack ? 1 : 0);
    f = at(x, y, z);
    b = face * FACE + e;
}

// Unit v of the four y/z faces (rows of 512 contiguous words).
__device__ __forceinline__ void yz_unit(uint32_t v, bool pack, uint64_t& f, uint32_t& b) {
    const uint32_t face = 2 + (v >> 18), e = v & (FACE - 1);
    const uint32_t x = 1 + (e & (N - 1)), r = 1 + (e >> 9);
    const uint32_t lo = pack ? 1 : 0, hi = pack ? N : N + 1;
    const uint32_t side = (face & 1) ? hi : lo;
    f = face < 4 ? at(x, side, r) : at(x, r, side);
    b = face * FACE + e;
}

// Block layouts of one launch: which kind of block grid block g is, and its index among them.
enum Mode { X_ONLY, YZ_ONLY, X_FIRST, YZ_FIRST, INTERLEAVED };

template <int U, bool PACK, int MODE>
__global__ void __launch_bounds__(256) k_faces(uint64_t* __restrict__ field, uint64_t* __restrict__ buf,
                                               uint32_t x_blocks) {
    uint32_t g = blockIdx.x;
    bool is_x;
    uint32_t blk;
    if (MODE == X_ONLY) { is_x = true; blk = g; }
    else if (MODE == YZ_ONLY) { is_x = false; blk = g; }
    else if (MODE == X_FIRST) { is_x = g < x_blocks; blk = is_x ? g : g - x_blocks; }
    else if (MODE == YZ_FIRST) { const uint32_t yzb = 2 * x_blocks; is_x = g >= yzb; blk = is_x ? g - yzb : g; }
    else { is_x = g % 3 == 0; blk = is_x ? g / 3 : (g / 3) * 2 + (g % 3 - 1); }
    const uint32_t base = blk * blockDim.x * U + threadIdx.x;
    uint64_t f[U];
    uint32_t b[U];
    uint64_t v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        if (is_x) x_unit(base + k * blockDim.x, PACK, f[k], b[k]);
        else yz_unit(base + k * blockDim.x, PACK, f[k], b[k]);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = PACK ? field[f[k]] : buf[b[k]];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        if (PACK) buf[b[k]] = v[k];
        else field[f[k]] = v[k];
    }
}

__global__ void k_touch_x(const uint64_t* __restrict__ field, uint64_t* sink) {
    // Reads the word next to every x-face halo word (same 32-byte sector): the sectors an unpack
    // of the x faces writes come into L2.
    const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= 2 * FACE) return;
    uint64_t f;
    uint32_t b;
    x_unit(u, true, f, b);
    if (field[f] == 0x5555) *sink = 1;
}

__global__ void k_copy16(const ulonglong2* __restrict__ s, ulonglong2* __restrict__ d, uint32_t n) {
    const uint32_t base = blockIdx.x * blockDim.x * 4 + threadIdx.x;
    ulonglong2 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (base + k * blockDim.x < n) v[k] = s[base + k * blockDim.x];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (base + k * blockDim.x < n) d[base + k * blockDim.x] = v[k];
}

__global__ void k_init(uint64_t* p, uint64_t n, int which) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = which ? bpat(i) : fpat(i);
}

__global__ void k_flush(const uint4* __restrict__ p, uint64_t n, uint32_t* sink) {
    uint32_t acc = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345679u) *sink = acc;
}

// Every field word: halo faces in `mask` hold their buffer word, all else its initial value.
__global__ void k_verify(const uint64_t* __restrict__ f, uint32_t mask, unsigned long long* bad) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < NF; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t x = (uint32_t)(i % A), rest = (uint32_t)(i / A), y = rest % A, z = rest / A;
        int face = -1;
        uint32_t e = 0;
        if (y - 1u < N && z - 1u < N && (x == 0 || x == A - 1)) { face = x ? 1 : 0; e = (y - 1) + N * (z - 1); }
        if (x - 1u < N && z - 1u < N && (y == 0 || y == A - 1)) { face = y ? 3 : 2; e = (x - 1) + N * (z - 1); }
        if (x - 1u < N && y - 1u < N && (z == 0 || z == A - 1)) { face = z ? 5 : 4; e = (x - 1) + N * (y - 1); }
        uint64_t want = fpat(i);
        if (face >= 0 && ((mask >> face) & 1u)) want = bpat((uint64_t)face * FACE + e);
        if (f[i] != want) atomicAdd(bad, 1ull);
    }
}

struct G_ {
    int sms = 0;
    uint64_t *field = nullptr, *buf = nullptr, *copy_dst = nullptr, *big_dst = nullptr, *sink = nullptr;
    uint4* flush = nullptr;
    uint64_t flush_n = 0;
    unsigned long long* bad = nullptr;
    cudaStream_t s0, s1;
    cudaEvent_t e0, e1, fork, join;
} G;

static void flush_l2() {
    k_flush<<<G.sms * 8, 256, 0, G.s0>>>(G.flush, G.flush_n, (uint32_t*)G.sink);
    CK(cudaGetLastError());
}

using Op = std::function<void()>;

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// (warm) REPS back-to-back ops between two events, per op; (cold) one op after an L2 flush
// (and `before`, untimed). Medians of RUNS.
static double time_warm(const Op& op) {
    std::vector<double> t;
    for (int r = 0; r < RUNS; ++r) {
        CK(cudaEventRecord(G.e0, G.s0));
        for (int i = 0; i < REPS; ++i) op();
        CK(cudaEventRecord(G.e1, G.s0));
        CK(cudaEventSynchronize(G.e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
        t.push_back(ms * 1000.0 / REPS);
    }
    return median(t);
}

static double time_cold(const Op& op, const Op& before = nullptr) {
    std::vector<double> t;
    for (int r = 0; r < RUNS; ++r) {
        flush_l2();
        if (before) before();
        CK(cudaEventRecord(G.e0, G.s0));
        op();
        CK(cudaEventRecord(G.e1, G.s0));
        CK(cudaEventSynchronize(G.e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
        t.push_back(ms * 1000.0);
    }
    return median(t);
}

template <int U, bool PACK, int MODE>
static void launch(cudaStream_t s) {
    const uint32_t x_blocks = 2 * FACE / (THREADS * U), yz_blocks = 4 * FACE / (THREADS * U);
    uint32_t grid = MODE == X_ONLY ? x_blocks : MODE == YZ_ONLY ? yz_blocks : x_blocks + yz_blocks;
    k_faces<U, PACK, MODE><<<grid, THREADS, 0, s>>>(G.field, G.buf, x_blocks);
    CK(cudaGetLastError());
}

// x faces on stream s0 and y/z faces on s1 at once, joined back onto s0.
template <int U, bool PACK>
static void concurrent() {
    CK(cudaEventRecord(G.fork, G.s0));
    CK(cudaStreamWaitEvent(G.s1, G.fork, 0));
    launch<U, PACK, X_ONLY>(G.s0);
    launch<U, PACK, YZ_ONLY>(G.s1);
    CK(cudaEventRecord(G.join, G.s1));
    CK(cudaStreamWaitEvent(G.s0, G.join, 0));
}

static double REF = 0;  // the measured whole-field copy bandwidth, GB/s (read + write)

// Pack: every word of the faces the op wrote; unpack: every field word. Faces: bit mask.
static bool check(bool pack, uint32_t mask, const Op& op) {
    CK(cudaDeviceSynchronize());
    k_init<<<G.sms * 8, 256>>>(G.field, NF, 0);
    k_init<<<G.sms * 8, 256>>>(G.buf, 6ull * FACE, 1);
    CK(cudaDeviceSynchronize());
    if (pack) CK(cudaMemset(G.buf, 0, 6ull * FACE * 8));
    op();
    CK(cudaDeviceSynchronize());
    if (pack) {
        std::vector<uint64_t> b(6ull * FACE);
        CK(cudaMemcpy(b.data(), G.buf, b.size() * 8, cudaMemcpyDeviceToHost));
        uint64_t bad = 0;
        for (uint32_t face = 0; face < 6; ++face) {
            for (uint32_t e = 0; e < FACE; ++e) {
                const uint32_t p = 1 + (e & (N - 1)), q = 1 + (e >> 9), side = (face & 1) ? N : 1;
                const uint64_t i = face < 2 ? at(side, p, q) : face < 4 ? at(p, side, q) : at(p, q, side);
                const uint64_t want = ((mask >> face) & 1u) ? fpat(i) : 0;
                bad += b[(uint64_t)face * FACE + e] != want;
            }
        }
        if (bad) printf("   CHECK FAILED: %llu wrong buffer words\n", (unsigned long long)bad);
        return bad == 0;
    }
    CK(cudaMemset(G.bad, 0, 8));
    k_verify<<<G.sms * 8, 256>>>(G.field, mask, G.bad);
    unsigned long long bad = 0;
    CK(cudaMemcpy(&bad, G.bad, 8, cudaMemcpyDeviceToHost));
    if (bad) printf("   CHECK FAILED: %llu wrong field words\n", bad);
    return bad == 0;
}

static void row(const char* name, bool pack, uint32_t mask, const Op& op, double share = 1.0) {
    if (!check(pack, mask, op)) {
        printf("%-46s %-6s  not timed (wrong data)\n", name, pack ? "pack" : "unpack");
        return;
    }
    const double w = time_warm(op), c = time_cold(op);
    const double bytes = USEFUL * share;
    printf("%-46s %-6s  warm %7.2f us (%5.1f %%)   cold %7.2f us (%5.1f %%)\n", name, pack ? "pack" : "unpack", w,
           100.0 * bytes / (w * 1e-6) / 1e9 / REF, c, 100.0 * bytes / (c * 1e-6) / 1e9 / REF);
    fflush(stdout);
}

template <int U>
static void table() {
    printf("\n-- U = %d units per thread, %d threads\n", U, THREADS);
    for (int p = 1; p >= 0; --p) {
        const bool pack = p;
        auto L = [&](auto f) { return Op(f); };
        if (pack) {
            row("x faces only (2 of 6: 1/3 of the bytes)", true, 0x03, L([] { launch<U, true, X_ONLY>(G.s0); }), 1.0 / 3);
            row("y/z faces only (4 of 6)", true, 0x3c, L([] { launch<U, true, YZ_ONLY>(G.s0); }), 2.0 / 3);
            row("6 faces, one launch, x blocks first", true, 0x3f, L([] { launch<U, true, X_FIRST>(G.s0); }));
            row("6 faces, one launch, y/z blocks first", true, 0x3f, L([] { launch<U, true, YZ_FIRST>(G.s0); }));
            row("6 faces, one launch, interleaved 1:2", true, 0x3f, L([] { launch<U, true, INTERLEAVED>(G.s0); }));
            row("6 faces, x || y/z on two streams", true, 0x3f, L([] { concurrent<U, true>(); }));
            row("6 faces, x then y/z, two launches", true, 0x3f,
                L([] { launch<U, true, X_ONLY>(G.s0); launch<U, true, YZ_ONLY>(G.s0); }));
        } else {
            row("x faces only (2 of 6: 1/3 of the bytes)", false, 0x03, L([] { launch<U, false, X_ONLY>(G.s0); }), 1.0 / 3);
            row("y/z faces only (4 of 6)", false, 0x3c, L([] { launch<U, false, YZ_ONLY>(G.s0); }), 2.0 / 3);
            row("6 faces, one launch, x blocks first", false, 0x3f, L([] { launch<U, false, X_FIRST>(G.s0); }));
            row("6 faces, one launch, y/z blocks first", false, 0x3f, L([] { launch<U, false, YZ_FIRST>(G.s0); }));
            row("6 faces, one launch, interleaved 1:2", false, 0x3f, L([] { launch<U, false, INTERLEAVED>(G.s0); }));
            row("6 faces, x || y/z on two streams", false, 0x3f, L([] { concurrent<U, false>(); }));
            row("6 faces, x then y/z, two launches", false, 0x3f,
                L([] { launch<U, false, X_ONLY>(G.s0); launch<U, false, YZ_ONLY>(G.s0); }));
        }
    }
}

int main() {
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    G.sms = prop.multiProcessorCount;
    int ecc = prop.ECCEnabled;
    size_t gran = 0;
    CK(cudaDeviceGetLimit(&gran, cudaLimitMaxL2FetchGranularity));
    printf("%s, %d SMs, L2 %d B, ECC %s, L2 fetch granularity limit %zu B\n", prop.name, G.sms, prop.l2CacheSize,
           ecc ? "on" : "off", gran);
    CK(cudaStreamCreateWithFlags(&G.s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&G.s1, cudaStreamNonBlocking));
    CK(cudaEventCreate(&G.e0));
    CK(cudaEventCreate(&G.e1));
    CK(cudaEventCreateWithFlags(&G.fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&G.join, cudaEventDisableTiming));
    CK(cudaMalloc(&G.field, NF * 8));
    CK(cudaMalloc(&G.big_dst, NF * 8));
    CK(cudaMalloc(&G.buf, 6ull * FACE * 8));
    CK(cudaMalloc(&G.copy_dst, 6ull * FACE * 8));
    CK(cudaMalloc(&G.sink, 64));
    CK(cudaMalloc(&G.bad, 8));
    G.flush_n = (256ull << 20) / 16;
    CK(cudaMalloc(&G.flush, G.flush_n * 16));
    CK(cudaMemset(G.flush, 1, G.flush_n * 16));
    k_init<<<G.sms * 8, 256>>>(G.field, NF, 0);
    CK(cudaDeviceSynchronize());

    // The reference: the copy engine moving the whole field (read + write), as pack-bench does.
    const double whole = time_warm([] { CK(cudaMemcpyAsync(G.big_dst, G.field, NF * 8, cudaMemcpyDeviceToDevice, G.s0)); });
    REF = 2.0 * NF * 8 / (whole * 1e-6) / 1e9;
    printf("whole-field copy-engine copy: %.1f us -> %.1f GB/s (the 100 %% of every row)\n", whole, REF);
    const double empty_w = time_warm([] { k_flush<<<1, 32, 0, G.s0>>>(G.flush, 0, (uint32_t*)G.sink); });
    const double empty_c = time_cold([] { k_flush<<<1, 32, 0, G.s0>>>(G.flush, 0, (uint32_t*)G.sink); });
    printf("empty kernel: warm %.2f us, cold %.2f us\n", empty_w, empty_c);
    const uint32_t n16 = 6 * FACE / 2;
    auto copy = [n16] { k_copy16<<<(n16 + 1023) / 1024, 256, 0, G.s0>>>((const ulonglong2*)G.buf, (ulonglong2*)G.copy_dst, n16); };
    const double cw = time_warm(copy), cc = time_cold(copy);
    printf("12 MiB contiguous copy kernel: warm %.2f us (%.1f %%), cold %.2f us (%.1f %%)\n", cw,
           100.0 * USEFUL / (cw * 1e-6) / 1e9 / REF, cc, 100.0 * USEFUL / (cc * 1e-6) / 1e9 / REF);

    for (size_t g : {(size_t)0, (size_t)32}) {
        if (g) {
            CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, g));
            size_t now = 0;
            CK(cudaDeviceGetLimit(&now, cudaLimitMaxL2FetchGranularity));
            printf("\n==== L2 fetch granularity limit set to %zu B (reads back %zu B)\n", g, now);
        } else {
            printf("\n==== L2 fetch granularity limit left at %zu B\n", gran);
        }
        table<4>();
        if (!g) table<8>();
        // Does the fill of the partially written sectors cost the x-face unpack its time? Cold,
        // with those sectors brought into L2 first (untimed) against without.
        const Op ux = [] { launch<4, false, X_ONLY>(G.s0); };
        const Op touch = [] { k_touch_x<<<2 * FACE / 256, 256, 0, G.s0>>>(G.field, G.sink); };
        const double plain = time_cold(ux), touched = time_cold(ux, touch);
        printf("x-face unpack cold: %.2f us; with its sectors read into L2 first: %.2f us\n", plain, touched);
    }
    CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, gran));
    printf("done\n");
    return 0;
}
