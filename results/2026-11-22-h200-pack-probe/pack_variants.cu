// pack_variants.cu: probe of formulations of haloport's "pack/unpack regions" kernel
// (kernels-cu/hp_regions.cuh) on one GPU. Self-contained: CUDA runtime only.
//
// Case: a 512^3 f64 field with halo 1 (allocation 514^3, x fastest), the 6 interior faces
// (512*512 elements each) packed one after another into a 12 MiB buffer (pack), and a 12 MiB
// buffer unpacked into the 6 halo faces (x=0, x=513, y=0, y=513, z=0, z=513) (unpack).
// Useful bytes per launch: 2 * 12 MiB = 25,165,824 B; percentages are against 4266 GB/s.
//
// Timing, per variant: (a) 50 back-to-back launches between two events, per-launch time =
// total / 50, median of 11 runs (haloport's methodology); (b) a CUDA graph of the same 50
// launches replayed between two events, median of 11. Every variant is first run once and its
// data verified (pack: the whole 12 MiB buffer against a host reference, and the field
// untouched; unpack: every element of the field on the device); a wrong variant is not timed.
//
// Build: nvcc -O3 -arch=sm_90 -o pack_variants pack_variants.cu

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

// ------------------------------------------------------------------------------------------
// Error handling: every CUDA call is checked; a failure throws, the variant is reported as
// failed, and if the context is broken (sticky error) the program prints what it has and exits.

struct CudaFail : std::runtime_error {
    cudaError_t code;
    CudaFail(const std::string& s, cudaError_t c) : std::runtime_error(s), code(c) {}
};

static void ck_(cudaError_t e, const char* what, const char* file, int line) {
    if (e != cudaSuccess) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s:%d: %s -> %s (%s)", file, line, what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
        throw CudaFail(buf, e);
    }
}
#define CK(x) ck_((x), #x, __FILE__, __LINE__)

// ------------------------------------------------------------------------------------------
// The library's ABI (kernels-cu/haloport_shared.h), replicated.

#define HP_NO_MESSAGE 0xffffffffu
typedef struct hp_region {
    uint64_t field;
    uint64_t buffer;
    uint64_t offset;
    uint64_t count[3];
    uint64_t stride[3];
    uint32_t first_block;
    uint32_t blocks;
    uint32_t message;
    uint32_t reserved;
} hp_region;
static_assert(sizeof(hp_region) == 88, "hp_region layout");

typedef struct hp_message_signal {
    uint64_t counter;
    uint64_t flag;
    uint64_t wait;
    uint32_t wait_lag;
    uint32_t blocks;
} hp_message_signal;

typedef struct hp_regions_args {
    uint64_t regions;
    uint64_t messages;
    uint64_t status;
    uint64_t abort_flag;
    uint64_t timeout_ticks;
    uint32_t num_regions;
    uint32_t elem_bytes;
    uint32_t epoch;
    uint32_t reserved;
} hp_regions_args;

#define HP_MESSAGE_OK 0u
#define HP_MESSAGE_TIMED_OUT 1u
#define HP_MESSAGE_ABORTED 2u
#define HP_DEVICE __device__ __forceinline__

HP_DEVICE uint64_t hp_timer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
HP_DEVICE uint32_t hp_load_acquire_system(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
HP_DEVICE void hp_store_release_system(uint32_t* p, uint32_t v) {
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
HP_DEVICE void hp_fence_acq_rel_system(void) { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// ------------------------------------------------------------------------------------------
// V0: a faithful replica of hp_regions.cuh (hp_pack_regions / hp_unpack_regions), message
// path included (never taken here: every region has HP_NO_MESSAGE and messages == 0).

#define HP_REGION_NONE 0xffffffffu

HP_DEVICE uint32_t hp_region_of(const hp_region* regions, uint32_t num_regions, uint32_t g) {
    if (num_regions == 0 || g < regions[0].first_block) return HP_REGION_NONE;
    uint32_t lo = 0, hi = num_regions;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (regions[mid].first_block <= g) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return g - regions[lo].first_block < regions[lo].blocks ? lo : HP_REGION_NONE;
}

template <typename W, typename I, bool PACK>
__device__ __forceinline__ void hp_move_region_as(const hp_region& r, uint32_t local_block,
                                                  I n) {
    W* __restrict__ field = (W*)r.field + r.offset;
    W* __restrict__ buffer = (W*)r.buffer;
    const I c0 = (I)r.count[0];
    const I c1 = (I)r.count[1];
    const uint64_t s0 = r.stride[0], s1 = r.stride[1], s2 = r.stride[2];
    const I step = (I)r.blocks * (I)blockDim.x;
    for (I e = (I)local_block * (I)blockDim.x + (I)threadIdx.x; e < n; e += step) {
        const I i0 = e % c0;
        const I rest = e / c0;
        const I i1 = rest % c1;
        const I i2 = rest / c1;
        const uint64_t f = (uint64_t)i0 * s0 + (uint64_t)i1 * s1 + (uint64_t)i2 * s2;
        if (PACK) {
            buffer[e] = field[f];
        } else {
            field[f] = buffer[e];
        }
    }
}

template <typename W, bool PACK>
__device__ __forceinline__ void hp_move_region_words(const hp_region& r, uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    if (n + step <= 0xffffffffull) {
        hp_move_region_as<W, uint32_t, PACK>(r, local_block, (uint32_t)n);
    } else {
        hp_move_region_as<W, uint64_t, PACK>(r, local_block, n);
    }
}

template <bool PACK>
__device__ __forceinline__ void hp_move_region(const hp_regions_args& a, const hp_region& r,
                                               uint32_t local_block) {
    if (a.elem_bytes == 8) {
        hp_move_region_words<uint64_t, PACK>(r, local_block);
    } else if (a.elem_bytes == 4) {
        hp_move_region_words<uint32_t, PACK>(r, local_block);
    }
}

HP_DEVICE uint32_t hp_message_wait(const hp_regions_args& a, const hp_message_signal& m) {
    if (m.wait == 0 || m.wait_lag >= a.epoch) return HP_MESSAGE_OK;
    const uint32_t wait_min = a.epoch - m.wait_lag;
    const uint32_t* flag = (const uint32_t*)m.wait;
    const uint32_t* abort_flag = (const uint32_t*)a.abort_flag;
    const uint64_t since = hp_timer();
    for (uint32_t spins = 0;; ++spins) {
        if (hp_load_acquire_system(flag) >= wait_min) return HP_MESSAGE_OK;
        if ((spins & 63u) == 0u) {
            if (abort_flag && hp_load_acquire_system(abort_flag) >= a.epoch) {
                return HP_MESSAGE_ABORTED;
            }
            if (hp_timer() - since > a.timeout_ticks) return HP_MESSAGE_TIMED_OUT;
        }
    }
}

// MOVE is the element mover (V0: the replica's; V1: the same with fast division).
template <bool PACK, typename MOVE>
__device__ void hp_regions_block_with(const hp_regions_args& a, MOVE move) {
    const hp_region* regions = (const hp_region*)a.regions;
    const uint32_t ri = hp_region_of(regions, a.num_regions, blockIdx.x);
    if (ri == HP_REGION_NONE) return;
    const hp_region r = regions[ri];
    const uint32_t local_block = blockIdx.x - r.first_block;
    if (r.message == HP_NO_MESSAGE || a.messages == 0) {
        move(r, ri, local_block);
        return;
    }
    const hp_message_signal m = ((const hp_message_signal*)a.messages)[r.message];
    __shared__ uint32_t outcome;
    if (threadIdx.x == 0) {
        outcome = hp_message_wait(a, m);
        if (outcome != HP_MESSAGE_OK && a.status != 0) {
            hp_store_release_system((uint32_t*)a.status + r.message, outcome);
        }
    }
    __syncthreads();
    if (outcome != HP_MESSAGE_OK) return;
    move(r, ri, local_block);
    __syncthreads();
    if (threadIdx.x == 0) {
        hp_fence_acq_rel_system();
        const uint32_t done = atomicAdd((unsigned int*)m.counter, 1u) + 1u;
        if (done == a.epoch * m.blocks && m.flag != 0) {
            hp_fence_acq_rel_system();
            hp_store_release_system((uint32_t*)m.flag, a.epoch);
        }
    }
}

template <bool PACK>
__global__ void v0_kernel(hp_regions_args a) {
    hp_regions_block_with<PACK>(a, [&](const hp_region& r, uint32_t, uint32_t lb) {
        hp_move_region<PACK>(a, r, lb);
    });
}

// ------------------------------------------------------------------------------------------
// Fast division by an invariant divisor (CUTLASS FastDivmod form; Granlund & Montgomery):
// for 2 <= d < 2^31, l = ceil(log2 d), mul = ceil(2^(31+l) / d), shr = l - 1, and
// n / d == umulhi(n, mul) >> shr for every n < 2^31. d == 1 is mul = 0 (quotient n).

struct FastDiv {
    uint32_t mul, shr;
};

static FastDiv host_fastdiv(uint32_t d) {
    if (d <= 1) return {0u, 0u};
    const uint32_t l = 32u - (uint32_t)__builtin_clz(d - 1u);
    const uint64_t m = ((1ull << (31u + l)) + d - 1u) / d;
    return {(uint32_t)m, l - 1u};
}

HP_DEVICE void dev_fastdiv(uint32_t d, uint32_t& mul, uint32_t& shr) {
    if (d <= 1u) {
        mul = 0u;
        shr = 0u;
        return;
    }
    const uint32_t l = 32u - (uint32_t)__clz(d - 1u);
    mul = (uint32_t)(((1ull << (31u + l)) + d - 1u) / d);
    shr = l - 1u;
}

HP_DEVICE uint32_t fdiv(uint32_t n, uint32_t mul, uint32_t shr) {
    return mul ? (__umulhi(n, mul) >> shr) : n;
}

// ------------------------------------------------------------------------------------------
// V1: V0 with the two divisions of the 32-bit path replaced by fast division (multiplier and
// shift per region computed on the host, in a side table fd[2 * region + {0, 1}]). The 32-bit
// path is taken when n + step < 2^31 (the fast division's range); else V0's 64-bit path.

template <typename W, bool PACK>
__device__ __forceinline__ void v1_move_u32(const hp_region& r, uint32_t local_block, uint32_t n,
                                            FastDiv d0, FastDiv d1) {
    W* __restrict__ field = (W*)r.field + r.offset;
    W* __restrict__ buffer = (W*)r.buffer;
    const uint32_t c0 = (uint32_t)r.count[0];
    const uint32_t c1 = (uint32_t)r.count[1];
    const uint64_t s0 = r.stride[0], s1 = r.stride[1], s2 = r.stride[2];
    const uint32_t step = r.blocks * blockDim.x;
    for (uint32_t e = local_block * blockDim.x + threadIdx.x; e < n; e += step) {
        const uint32_t rest = fdiv(e, d0.mul, d0.shr);
        const uint32_t i0 = e - rest * c0;
        const uint32_t i2 = fdiv(rest, d1.mul, d1.shr);
        const uint32_t i1 = rest - i2 * c1;
        const uint64_t f = (uint64_t)i0 * s0 + (uint64_t)i1 * s1 + (uint64_t)i2 * s2;
        if (PACK) {
            buffer[e] = field[f];
        } else {
            field[f] = buffer[e];
        }
    }
}

template <typename W, bool PACK>
__device__ __forceinline__ void v1_move_words(const hp_region& r, uint32_t local_block,
                                              FastDiv d0, FastDiv d1) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    if (n + step <= 0x7fffffffull) {
        v1_move_u32<W, PACK>(r, local_block, (uint32_t)n, d0, d1);
    } else if (n + step <= 0xffffffffull) {
        hp_move_region_as<W, uint32_t, PACK>(r, local_block, (uint32_t)n);
    } else {
        hp_move_region_as<W, uint64_t, PACK>(r, local_block, n);
    }
}

template <bool PACK>
__global__ void v1_kernel(hp_regions_args a, const FastDiv* __restrict__ fd) {
    hp_regions_block_with<PACK>(a, [&](const hp_region& r, uint32_t ri, uint32_t lb) {
        const FastDiv d0 = fd[2 * ri], d1 = fd[2 * ri + 1];
        if (a.elem_bytes == 8) {
            v1_move_words<uint64_t, PACK>(r, lb, d0, d1);
        } else if (a.elem_bytes == 4) {
            v1_move_words<uint32_t, PACK>(r, lb, d0, d1);
        }
    });
}

// ------------------------------------------------------------------------------------------
// V2 / V3 / V4: a compact region record prepared on the host (fast division, 32-bit counts
// and strides, byte addresses with the offset applied). A "unit" is one element, or, for a
// region with flags & FR_VEC2 (contiguous rows, s0 == 1, even c0), a pair of consecutive
// elements: c0 is then the pairs per row, and the buffer side moves 16 bytes at once.

#define FR_VEC2 1u
#define MAXR 8

struct FRegion {
    uint64_t field;   // byte address of the region's first element (field + offset)
    uint64_t buffer;  // byte address of its packed units
    uint32_t c0, c1;  // units per row, rows per plane
    uint32_t m0, r0;  // fast division by c0
    uint32_t m1, r1;  // fast division by c1
    uint32_t s0, s1, s2;  // element strides
    uint32_t n;           // units
    uint32_t first_block, blocks;
    uint32_t prefix;  // first unit of this region in the concatenation of all (V3)
    uint32_t flags;
};
static_assert(sizeof(FRegion) == 72, "FRegion layout");

struct PTab {
    FRegion r[MAXR];
};

// 32 x 32 -> 64-bit product (one IMAD.WIDE.U32).
HP_DEVICE uint64_t mulwide(uint32_t a, uint32_t b) {
    uint64_t r;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(r) : "r"(a), "r"(b));
    return r;
}

// Element index (from the region's first element) of unit e.
HP_DEVICE uint64_t fr_index(const FRegion& r, uint32_t e, uint32_t m0, uint32_t r0, uint32_t m1,
                            uint32_t r1) {
    const uint32_t q0 = fdiv(e, m0, r0);
    const uint32_t i0 = e - q0 * r.c0;
    const uint32_t i2 = fdiv(q0, m1, r1);
    const uint32_t i1 = q0 - i2 * r.c1;
    return mulwide(i0, r.s0) + mulwide(i1, r.s1) + mulwide(i2, r.s2);
}

// Loads and stores with cache hints.
//   H0 plain; H1 ld.global.nc; H2 ld.global.nc.L1::no_allocate + st.global.cs;
//   H3 ld.global.cs + st.global.cs; H4 plain loads + st.global.cs;
//   H5 ld.global.nc.L2::256B (prefetch hint); H6 ld.global.nc.L2::64B.
template <int H>
HP_DEVICE uint64_t ld8(const uint64_t* p) {
    uint64_t v;
    if constexpr (H == 1) {
        v = __ldg((const unsigned long long*)p);
    } else if constexpr (H == 2) {
        asm("ld.global.nc.L1::no_allocate.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else if constexpr (H == 3) {
        v = __ldcs((const unsigned long long*)p);
    } else if constexpr (H == 5) {
        asm("ld.global.nc.L2::256B.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else if constexpr (H == 6) {
        asm("ld.global.nc.L2::64B.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else {
        v = *p;
    }
    return v;
}

template <int H>
HP_DEVICE void st8(uint64_t* p, uint64_t v) {
    if constexpr (H == 2 || H == 3 || H == 4) {
        __stcs((unsigned long long*)p, (unsigned long long)v);
    } else {
        *p = v;
    }
}

template <int H>
HP_DEVICE ulonglong2 ld16(const ulonglong2* p) {
    ulonglong2 v;
    if constexpr (H == 1) {
        asm("ld.global.nc.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
    } else if constexpr (H == 2) {
        asm("ld.global.nc.L1::no_allocate.v2.u64 {%0, %1}, [%2];"
            : "=l"(v.x), "=l"(v.y)
            : "l"(p));
    } else if constexpr (H == 3) {
        asm("ld.global.cs.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
    } else if constexpr (H == 5) {
        asm("ld.global.nc.L2::256B.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
    } else if constexpr (H == 6) {
        asm("ld.global.nc.L2::64B.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
    } else {
        v = *p;
    }
    return v;
}

template <int H>
HP_DEVICE void st16(ulonglong2* p, ulonglong2 v) {
    if constexpr (H == 2 || H == 3 || H == 4) {
        asm volatile("st.global.cs.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.x), "l"(v.y)
                     : "memory");
    } else {
        *p = v;
    }
}

// The region grid block g serves (binary search on first_block, as the library does).
HP_DEVICE uint32_t fr_region_of(const FRegion* t, uint32_t nreg, uint32_t g) {
    if (nreg == 0 || g < t[0].first_block) return HP_REGION_NONE;
    uint32_t lo = 0, hi = nreg;
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) >> 1;
        if (t[mid].first_block <= g) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return g - t[lo].first_block < t[lo].blocks ? lo : HP_REGION_NONE;
}

// L2 eviction-priority policies (H7..H9), per region and side (field side, buffer side):
//   H7: field accesses of strided regions (s0 != 1, the x faces) L2::evict_first;
//   H8: every field access L2::evict_first;
//   H9: strided field accesses evict_first, every other access (contiguous field rows and the
//       buffer) L2::evict_last (the host resets persisting lines after each variant).
struct Acc {
    bool use;
    uint64_t pol;
};
HP_DEVICE uint64_t pol_first() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
HP_DEVICE uint64_t pol_last() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}
template <int H>
HP_DEVICE void region_policies(const FRegion& r, Acc& fa, Acc& ba) {
    fa.use = ba.use = false;
    fa.pol = ba.pol = 0;
    if constexpr (H == 7) {
        if (r.s0 != 1) {
            fa.use = true;
            fa.pol = pol_first();
        }
    } else if constexpr (H == 8) {
        fa.use = true;
        fa.pol = pol_first();
    } else if constexpr (H == 9) {
        fa.use = true;
        fa.pol = r.s0 != 1 ? pol_first() : pol_last();
        ba.use = true;
        ba.pol = pol_last();
    }
}
template <int H>
HP_DEVICE uint64_t ldp(const uint64_t* p, const Acc& a) {
    if (H >= 7 && a.use) {
        uint64_t v;
        asm("ld.global.nc.L2::cache_hint.u64 %0, [%1], %2;" : "=l"(v) : "l"(p), "l"(a.pol));
        return v;
    }
    return ld8<H>(p);
}
template <int H>
HP_DEVICE void stp(uint64_t* p, uint64_t v, const Acc& a) {
    if (H >= 7 && a.use) {
        asm volatile("st.global.L2::cache_hint.u64 [%0], %1, %2;" ::"l"(p), "l"(v), "l"(a.pol)
                     : "memory");
        return;
    }
    st8<H>(p, v);
}
template <int H>
HP_DEVICE ulonglong2 ldp16(const ulonglong2* p, const Acc& a) {
    if (H >= 7 && a.use) {
        ulonglong2 v;
        asm("ld.global.nc.L2::cache_hint.v2.u64 {%0, %1}, [%2], %3;"
            : "=l"(v.x), "=l"(v.y)
            : "l"(p), "l"(a.pol));
        return v;
    }
    return ld16<H>(p);
}
template <int H>
HP_DEVICE void stp16(ulonglong2* p, ulonglong2 v, const Acc& a) {
    if (H >= 7 && a.use) {
        asm volatile("st.global.L2::cache_hint.v2.u64 [%0], {%1, %2}, %3;" ::"l"(p), "l"(v.x),
                     "l"(v.y), "l"(a.pol)
                     : "memory");
        return;
    }
    st16<H>(p, v);
}

// Moves U units of region r: e0, e0 + ks, ..., e0 + (U-1) ks (those < n), all loads first.
template <int U, int H, bool VEC2, bool PACK>
HP_DEVICE void fr_move_units(const FRegion& r, uint32_t e0, uint32_t ks, uint32_t m0,
                             uint32_t r0, uint32_t m1, uint32_t r1, const Acc& fa,
                             const Acc& ba) {
    uint64_t* __restrict__ field = (uint64_t*)r.field;
    if (VEC2 && (r.flags & FR_VEC2)) {
        ulonglong2* __restrict__ buffer = (ulonglong2*)r.buffer;
        uint64_t fo[U];
        ulonglong2 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            const uint32_t q0 = fdiv(e, m0, r0);
            const uint32_t i0 = e - q0 * r.c0;
            const uint32_t i2 = fdiv(q0, m1, r1);
            const uint32_t i1 = q0 - i2 * r.c1;
            fo[k] = (uint64_t)(2u * i0) + mulwide(i1, r.s1) + mulwide(i2, r.s2);
        }
        if (PACK) {
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (e0 + (uint32_t)k * ks < r.n) {
                    v[k].x = ldp<H>(field + fo[k], fa);
                    v[k].y = ldp<H>(field + fo[k] + 1, fa);
                }
            }
#pragma unroll
            for (int k = 0; k < U; ++k) {
                const uint32_t e = e0 + (uint32_t)k * ks;
                if (e < r.n) stp16<H>(buffer + e, v[k], ba);
            }
        } else {
#pragma unroll
            for (int k = 0; k < U; ++k) {
                const uint32_t e = e0 + (uint32_t)k * ks;
                if (e < r.n) v[k] = ldp16<H>(buffer + e, ba);
            }
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (e0 + (uint32_t)k * ks < r.n) {
                    stp<H>(field + fo[k], v[k].x, fa);
                    stp<H>(field + fo[k] + 1, v[k].y, fa);
                }
            }
        }
        return;
    }
    uint64_t* __restrict__ buffer = (uint64_t*)r.buffer;
    uint64_t fo[U];
    uint64_t v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) fo[k] = fr_index(r, e0 + (uint32_t)k * ks, m0, r0, m1, r1);
    if (PACK) {
#pragma unroll
        for (int k = 0; k < U; ++k) {
            if (e0 + (uint32_t)k * ks < r.n) v[k] = ldp<H>(field + fo[k], fa);
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            if (e < r.n) stp<H>(buffer + e, v[k], ba);
        }
    } else {
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            if (e < r.n) v[k] = ldp<H>(buffer + e, ba);
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            if (e0 + (uint32_t)k * ks < r.n) stp<H>(field + fo[k], v[k], fa);
        }
    }
}

// Paired regions (flags & FR_PAIR): two regions of the same shape (counts, strides) whose
// elements lie next to each other in the field (here -x at x=1 and +x at x=512 of the row
// before: 24 bytes apart; halo x=513 and x=0 of the next row: adjacent). Unit u of the pair
// is element u/2 of region A (u even) or element (u/2 + shift) mod n of region B (u odd), so
// the two elements sharing a sector or line are moved by neighbouring lanes of one warp
// instruction. r.n counts both regions' elements; B's addresses come from its own record.
#define FR_PAIR 2u
template <int U, int H, bool PACK>
HP_DEVICE void fr_move_pair(const FRegion& r, uint64_t fieldB, uint64_t bufB, uint32_t shift,
                            uint32_t e0, uint32_t ks, uint32_t m0, uint32_t r0, uint32_t m1,
                            uint32_t r1, const Acc& fa, const Acc& ba) {
    const uint32_t nh = r.n >> 1;
    uint64_t* fp[U];
    uint64_t* bp[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const uint32_t u = e0 + (uint32_t)k * ks;
        const bool b = u & 1u;
        uint32_t e = u >> 1;
        if (b) {
            e += shift;
            if (e >= nh) e -= nh;
        }
        fp[k] = (uint64_t*)(b ? fieldB : r.field) + fr_index(r, e, m0, r0, m1, r1);
        bp[k] = (uint64_t*)(b ? bufB : r.buffer) + e;
    }
    uint64_t v[U];
    if (PACK) {
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) v[k] = ldp<H>(fp[k], fa);
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) stp<H>(bp[k], v[k], ba);
    } else {
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) v[k] = ldp<H>(bp[k], ba);
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) stp<H>(fp[k], v[k], fa);
    }
}

// V2 body. CHUNK: block b of a region takes the U*blockDim consecutive units from b*U*blockDim
// (unit e0 + k*blockDim); else the U units e0 + k*T, T = the region's threads (grid-stride).
// DEVMAGIC: the fast-division constants are computed in the kernel from c0, c1 (no extra
// table fields needed), instead of read from the record. PAIR: paired regions allowed.
template <int U, int H, bool CHUNK, bool DEVMAGIC, bool VEC2, bool PAIR, bool PACK>
HP_DEVICE void v2_body(const FRegion* t, uint32_t nreg) {
    const uint32_t ri = fr_region_of(t, nreg, blockIdx.x);
    if (ri == HP_REGION_NONE) return;
    const FRegion r = t[ri];
    uint32_t m0 = r.m0, r0 = r.r0, m1 = r.m1, r1 = r.r1;
    if (DEVMAGIC) {
        dev_fastdiv(r.c0, m0, r0);
        dev_fastdiv(r.c1, m1, r1);
    }
    Acc fa, ba;
    region_policies<H>(r, fa, ba);
    const uint32_t B = blockDim.x;
    const uint32_t lb = blockIdx.x - r.first_block;
    uint32_t e0, ks, step;
    if (CHUNK) {
        e0 = lb * B * U + threadIdx.x;
        ks = B;
        step = r.blocks * B * U;
    } else {
        e0 = lb * B + threadIdx.x;
        ks = r.blocks * B;
        step = ks * U;
    }
    if (PAIR && (r.flags & FR_PAIR)) {
        const uint32_t pi = r.flags >> 8;
        const uint64_t fieldB = t[pi].field, bufB = t[pi].buffer;
        const uint32_t shift = r.prefix;
        for (; e0 < r.n; e0 += step)
            fr_move_pair<U, H, PACK>(r, fieldB, bufB, shift, e0, ks, m0, r0, m1, r1, fa, ba);
        return;
    }
    for (; e0 < r.n; e0 += step)
        fr_move_units<U, H, VEC2, PACK>(r, e0, ks, m0, r0, m1, r1, fa, ba);
}

template <int U, int H, bool CHUNK, bool DEVMAGIC, bool VEC2, bool PAIR, bool PACK>
__global__ void v2_kernel(const FRegion* __restrict__ t, uint32_t nreg) {
    v2_body<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, PACK>(t, nreg);
}

// The same with the region table passed by value (kernel parameter space, constant cache).
template <int U, int H, bool CHUNK, bool DEVMAGIC, bool VEC2, bool PAIR, bool PACK>
__global__ void v2p_kernel(uint32_t nreg, const __grid_constant__ PTab tab) {
    v2_body<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, PACK>(tab.r, nreg);
}

// The same, table by value, with __launch_bounds__(256, 8): at most 32 registers, so 8 blocks
// of 256 (all 64 warps) fit on an SM.
template <int U, int H, bool CHUNK, bool DEVMAGIC, bool VEC2, bool PAIR, bool PACK>
__global__ void __launch_bounds__(256, 8) v2pl_kernel(uint32_t nreg, const __grid_constant__ PTab tab) {
    v2_body<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, PACK>(tab.r, nreg);
}

// ------------------------------------------------------------------------------------------
// R: the candidate for hp_regions.cuh, on the library's own table (hp_region), no new fields:
//   - fast division by c0, c1 with constants computed in the kernel (double-precision
//     quotient, corrected exactly in integers: no 64-bit integer division);
//   - U units per thread at e, e + T, ... (T = the region's threads), all loads before stores;
//   - hp_region.reserved (this probe's encoding): bits 0..15 partner index + 1 (0: none),
//     bits 16..18 the partner's shift code, bit 19 "vec2 rows". A region with a partner moves
//     both: unit u is element u/2 of itself (u even) or element (u/2 + shift) mod n of the
//     partner (u odd); the partner record has no blocks (blocks = 0, first_block = the grid
//     size, listed last). vec2: contiguous rows (s0 == 1, c0 even, 16-byte aligned buffer)
//     move pairs of elements, the buffer side as one 16-byte access;
//   - units: n, 2n with a partner, n/2 with vec2; blocks = ceil(units / (threads * U));
//   - outside the 32-bit range (units + U * blocks * threads >= 2^31, or a stride >= 2^32) the
//     host sets neither bit and the block falls back to the replica's loop.
// Shift codes: 0: 0, 1: +1, 2: n-1 (i.e. -1), 3: +c0, 4: n-c0.

HP_DEVICE void dev_fastdiv_fp(uint32_t d, uint32_t& mul, uint32_t& shr) {
    if (d <= 1u) {
        mul = 0u;
        shr = 0u;
        return;
    }
    const uint32_t l = 32u - (uint32_t)__clz(d - 1u);
    const uint64_t num = 1ull << (31u + l);  // the quotient num / d lies in [2^31, 2^32)
    uint64_t q = (uint64_t)((double)num / (double)d);
    int64_t rem = (int64_t)(num - q * (uint64_t)d);
    while (rem < 0) {
        --q;
        rem += d;
    }
    while (rem >= (int64_t)d) {
        ++q;
        rem -= d;
    }
    mul = (uint32_t)(q + (rem != 0));  // ceil(2^(31+l) / d)
    shr = l - 1u;
}

#define R_PARTNER_MASK 0xffffu
#define R_SHIFT_SHIFT 16u
#define R_VEC2_BIT (1u << 19)

template <int U, int H, bool PACK>
HP_DEVICE void r_body(const hp_region* t, uint32_t nreg) {
    const uint32_t ri = hp_region_of(t, nreg, blockIdx.x);
    if (ri == HP_REGION_NONE) return;
    const hp_region h = t[ri];
    const uint32_t lb = blockIdx.x - h.first_block;
    const uint64_t n = h.count[0] * h.count[1] * h.count[2];
    const uint32_t partner = h.reserved & R_PARTNER_MASK;
    const bool vec2 = (h.reserved & R_VEC2_BIT) != 0;
    const uint64_t units = partner ? 2 * n : (vec2 ? n / 2 : n);
    const uint64_t span = units + (uint64_t)h.blocks * blockDim.x * U;
    if (span >= 0x7fffffffull || ((h.stride[0] | h.stride[1] | h.stride[2]) >> 32) != 0) {
        hp_move_region_words<uint64_t, PACK>(h, lb);
        return;
    }
    FRegion r;
    r.field = (uint64_t)((uint64_t*)h.field + h.offset);
    r.buffer = h.buffer;
    r.c0 = (uint32_t)(vec2 ? h.count[0] / 2 : h.count[0]);
    r.c1 = (uint32_t)h.count[1];
    r.s0 = (uint32_t)h.stride[0];
    r.s1 = (uint32_t)h.stride[1];
    r.s2 = (uint32_t)h.stride[2];
    r.n = (uint32_t)units;
    r.flags = vec2 ? FR_VEC2 : 0u;
    uint32_t m0, r0, m1, r1;
    dev_fastdiv_fp(r.c0, m0, r0);
    dev_fastdiv_fp(r.c1, m1, r1);
    Acc fa, ba;
    region_policies<H>(r, fa, ba);
    uint32_t e0 = lb * blockDim.x + threadIdx.x;
    const uint32_t ks = h.blocks * blockDim.x;
    const uint32_t step = ks * U;
    if (partner) {
        const hp_region& b = t[partner - 1];
        const uint64_t fieldB = (uint64_t)((uint64_t*)b.field + b.offset);
        const uint32_t nh = (uint32_t)n;
        const uint32_t code = (h.reserved >> R_SHIFT_SHIFT) & 7u;
        const uint32_t shift = code == 1u   ? 1u
                               : code == 2u ? nh - 1u
                               : code == 3u ? r.c0
                               : code == 4u ? nh - r.c0
                                            : 0u;
        for (; e0 < r.n; e0 += step)
            fr_move_pair<U, H, PACK>(r, fieldB, b.buffer, shift, e0, ks, m0, r0, m1, r1, fa, ba);
        return;
    }
    for (; e0 < r.n; e0 += step)
        fr_move_units<U, H, true, PACK>(r, e0, ks, m0, r0, m1, r1, fa, ba);
}

#define R_MAXR 8
struct RTab {
    uint32_t nreg, pad;
    hp_region r[R_MAXR];
};

// Table by value (kernel parameters).
template <int U, int H, bool PACK>
__global__ void r_kernel_p(const __grid_constant__ RTab tab) {
    r_body<U, H, PACK>(tab.r, tab.nreg);
}
// Table in device memory, the library's hp_regions_args unchanged.
template <int U, int H, bool PACK>
__global__ void r_kernel_g(hp_regions_args a) {
    r_body<U, H, PACK>((const hp_region*)a.regions, a.num_regions);
}

// V3: a grid sized to the machine, each thread striding through the concatenation of all
// regions' units (total); U units per step (g, g + T, ..., all loads first); the region of a
// unit found by a forward linear search over prefix (monotone per thread).
template <int U, int H, bool PACK>
HP_DEVICE void v3_body(const FRegion* t, uint32_t nreg, uint32_t total) {
    const uint32_t T = gridDim.x * blockDim.x;
    uint32_t r = 0;
    for (uint32_t g0 = blockIdx.x * blockDim.x + threadIdx.x; g0 < total; g0 += U * T) {
        uint64_t* src[U];
        uint64_t* dst[U];
        bool ok[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t g = g0 + (uint32_t)k * T;
            ok[k] = g < total;
            src[k] = dst[k] = nullptr;
            if (ok[k]) {
                while (r + 1 < nreg && g >= t[r + 1].prefix) ++r;
                const FRegion& q = t[r];
                const uint32_t e = g - q.prefix;
                uint64_t* f = (uint64_t*)q.field + fr_index(q, e, q.m0, q.r0, q.m1, q.r1);
                uint64_t* b = (uint64_t*)q.buffer + e;
                src[k] = PACK ? f : b;
                dst[k] = PACK ? b : f;
            }
        }
        uint64_t v[U];
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (ok[k]) v[k] = ld8<H>(src[k]);
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (ok[k]) st8<H>(dst[k], v[k]);
    }
}

template <int U, int H, bool PACK>
__global__ void v3_kernel(const FRegion* __restrict__ t, uint32_t nreg, uint32_t total) {
    __shared__ FRegion s[MAXR];
    const uint32_t words = nreg * (uint32_t)(sizeof(FRegion) / 8);
    for (uint32_t i = threadIdx.x; i < words; i += blockDim.x)
        ((uint64_t*)s)[i] = ((const uint64_t*)t)[i];
    __syncthreads();
    v3_body<U, H, PACK>(s, nreg, total);
}

template <int U, int H, bool PACK>
__global__ void v3p_kernel(uint32_t nreg, uint32_t total, const __grid_constant__ PTab tab) {
    v3_body<U, H, PACK>(tab.r, nreg, total);
}

// ------------------------------------------------------------------------------------------
// Reference kernels: empty, contiguous copies, field init, L2 flush, verification.

__global__ void k_empty() {}

// dev_fastdiv_fp against host_fastdiv, for d = 1 .. count (and a few large ones).
__global__ void k_fastdiv_fp_test(const uint32_t* ds, uint32_t count, uint32_t* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        uint32_t m, sh;
        dev_fastdiv_fp(ds[i], m, sh);
        out[2 * i] = m;
        out[2 * i + 1] = sh;
    }
}

__global__ void k_copy8(const uint64_t* __restrict__ s, uint64_t* __restrict__ d, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = s[i];
}

// 16-byte words, U per thread, block-contiguous chunks, all loads first.
template <int U>
__global__ void k_copy16(const ulonglong2* __restrict__ s, ulonglong2* __restrict__ d,
                         uint32_t n) {
    const uint32_t base = blockIdx.x * blockDim.x * U + threadIdx.x;
    ulonglong2 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const uint32_t i = base + k * blockDim.x;
        if (i < n) v[k] = s[i];
    }
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const uint32_t i = base + k * blockDim.x;
        if (i < n) d[i] = v[k];
    }
}

__host__ __device__ inline uint64_t fpat(uint64_t i) {
    return (i * 0x9E3779B97F4A7C15ull) ^ 0x0123456789ABCDEFull;
}
__host__ __device__ inline uint64_t bpat(uint64_t j) {
    return (j * 0xD1B54A32D192ED03ull) ^ 0xFEDCBA9876543210ull;
}

__global__ void k_init_field(uint64_t* f, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        f[i] = fpat(i);
}

__global__ void k_init_buf(uint64_t* b, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        b[i] = bpat(i);
}

__global__ void k_flush(const uint4* __restrict__ p, uint64_t n, uint32_t* sink) {
    uint32_t acc = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345679u) *sink = acc;
}

// Every element of the 514^3 field: the halo faces in `mask` (bit k: face k of -x,+x,-y,+y,
// -z,+z) must hold bpat(k * 512*512 + e), everything else fpat(index).
#define A_ 514u
#define N_ 512u
__global__ void k_verify_field(const uint64_t* __restrict__ f, uint64_t n, uint32_t mask,
                               unsigned long long* bad, unsigned long long* first_bad) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t x = (uint32_t)(i % A_);
        const uint32_t rest = (uint32_t)(i / A_);
        const uint32_t y = rest % A_, z = rest / A_;
        int face = -1;
        uint32_t e = 0;
        if (y - 1u < N_ && z - 1u < N_) {
            if (x == 0) { face = 0; e = (y - 1) + N_ * (z - 1); }
            if (x == A_ - 1) { face = 1; e = (y - 1) + N_ * (z - 1); }
        }
        if (x - 1u < N_ && z - 1u < N_) {
            if (y == 0) { face = 2; e = (x - 1) + N_ * (z - 1); }
            if (y == A_ - 1) { face = 3; e = (x - 1) + N_ * (z - 1); }
        }
        if (x - 1u < N_ && y - 1u < N_) {
            if (z == 0) { face = 4; e = (x - 1) + N_ * (y - 1); }
            if (z == A_ - 1) { face = 5; e = (x - 1) + N_ * (y - 1); }
        }
        uint64_t want = fpat(i);
        if (face >= 0 && ((mask >> face) & 1u)) want = bpat((uint64_t)face * N_ * N_ + e);
        if (f[i] != want) {
            atomicAdd(bad, 1ull);
            atomicMin(first_bad, (unsigned long long)i);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Host side.

static const uint64_t A = 514, A2 = 514ull * 514ull, NF = 514ull * 514ull * 514ull;
static const uint32_t FACE_N = 512u * 512u;
static const double USEFUL_BYTES = 2.0 * 6 * FACE_N * 8;  // 25,165,824
static const double REF_GBS = 4266.0;
static const int REPS = 50, RUNS = 11;

struct Face {
    const char* name;
    uint64_t pack_off, unpack_off;
    uint64_t count[3], stride[3];
};
static const Face FACES[6] = {
    {"-x", 1 + A * 1 + A2 * 1, 0 + A * 1 + A2 * 1, {512, 512, 1}, {A, A2, 0}},
    {"+x", 512 + A * 1 + A2 * 1, 513 + A * 1 + A2 * 1, {512, 512, 1}, {A, A2, 0}},
    {"-y", 1 + A * 1 + A2 * 1, 1 + A * 0 + A2 * 1, {512, 512, 1}, {1, A2, 0}},
    {"+y", 1 + A * 512 + A2 * 1, 1 + A * 513 + A2 * 1, {512, 512, 1}, {1, A2, 0}},
    {"-z", 1 + A * 1 + A2 * 1, 1 + A * 1 + A2 * 0, {512, 512, 1}, {1, A, 0}},
    {"+z", 1 + A * 1 + A2 * 512, 1 + A * 1 + A2 * 513, {512, 512, 1}, {1, A, 0}},
};

static uint64_t face_index(const Face& f, bool pack, uint64_t e) {
    const uint64_t i0 = e % f.count[0], rest = e / f.count[0];
    const uint64_t i1 = rest % f.count[1], i2 = rest / f.count[1];
    return (pack ? f.pack_off : f.unpack_off) + i0 * f.stride[0] + i1 * f.stride[1] +
           i2 * f.stride[2];
}

struct Gpu {
    uint64_t* field = nullptr;   // 514^3 words
    uint64_t* field2 = nullptr;  // copy target for the bandwidth calibration
    uint64_t* pbuf = nullptr;    // pack destination, 6 faces
    uint64_t* ubuf = nullptr;    // unpack source, 6 faces (bpat)
    uint64_t* cbuf = nullptr;    // copy destination, 12 MiB
    uint4* flush = nullptr;
    uint64_t flush_n = 0;
    uint32_t* sink = nullptr;
    unsigned long long* bad = nullptr;  // [0] count, [1] first
    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    int sms = 0;
};
static Gpu G;
static std::vector<uint64_t> REF;  // host reference of the packed buffer

// A prepared launch: tables in device memory (or by value), grid and block.
struct Prep {
    hp_region* d_hp = nullptr;
    FastDiv* d_fd = nullptr;
    FRegion* d_fr = nullptr;
    PTab ptab;
    RTab rtab;
    uint32_t nreg = 0, grid = 0, block = 256, total = 0;
    Prep* next = nullptr;  // a second launch (split variants)
    void release() {
        if (next) {
            next->release();
            delete next;
            next = nullptr;
        }
        if (d_hp) cudaFree(d_hp);
        if (d_fd) cudaFree(d_fd);
        if (d_fr) cudaFree(d_fr);
        d_hp = nullptr;
        d_fd = nullptr;
        d_fr = nullptr;
    }
};

using FaceList = std::vector<int>;  // faces in table order

struct Variant {
    std::string name;
    std::function<Prep(const FaceList&, bool)> prepare;
    std::function<void(const Prep&, bool, cudaStream_t)> launch;
};

static uint64_t face_buffer(bool pack, int k) {
    return (uint64_t)(uintptr_t)((pack ? G.pbuf : G.ubuf) + (uint64_t)k * FACE_N);
}

// hp_region tables as the library builds them (assign_blocks: ceil(n / (threads * ept))).
static Prep prep_hp(const FaceList& faces, bool pack, uint32_t ept, uint32_t threads,
                    bool with_fastdiv) {
    std::vector<hp_region> rs;
    std::vector<FastDiv> fd;
    uint32_t next = 0;
    for (int k : faces) {
        const Face& f = FACES[k];
        hp_region r{};
        r.field = (uint64_t)(uintptr_t)G.field;
        r.buffer = face_buffer(pack, k);
        r.offset = pack ? f.pack_off : f.unpack_off;
        for (int d = 0; d < 3; ++d) {
            r.count[d] = f.count[d];
            r.stride[d] = f.stride[d];
        }
        const uint64_t n = f.count[0] * f.count[1] * f.count[2];
        const uint64_t per = (uint64_t)threads * ept;
        r.first_block = next;
        r.blocks = (uint32_t)std::max<uint64_t>(1, (n + per - 1) / per);
        r.message = HP_NO_MESSAGE;
        next += r.blocks;
        rs.push_back(r);
        fd.push_back(host_fastdiv((uint32_t)f.count[0]));
        fd.push_back(host_fastdiv((uint32_t)f.count[1]));
    }
    Prep p;
    p.nreg = (uint32_t)rs.size();
    p.grid = next;
    p.block = threads;
    CK(cudaMalloc(&p.d_hp, rs.size() * sizeof(hp_region)));
    CK(cudaMemcpy(p.d_hp, rs.data(), rs.size() * sizeof(hp_region), cudaMemcpyHostToDevice));
    if (with_fastdiv) {
        CK(cudaMalloc(&p.d_fd, fd.size() * sizeof(FastDiv)));
        CK(cudaMemcpy(p.d_fd, fd.data(), fd.size() * sizeof(FastDiv), cudaMemcpyHostToDevice));
    }
    return p;
}

static hp_regions_args hp_args(const Prep& p) {
    hp_regions_args a{};
    a.regions = (uint64_t)(uintptr_t)p.d_hp;
    a.num_regions = p.nreg;
    a.elem_bytes = 8;
    a.epoch = 1;
    return a;
}

// FRegion tables; units_per_block = threads * U; grid = sum of blocks (V2) or the caller's.
// xept: units per thread used to size the blocks of strided regions (s0 != 1, the x faces);
// 0 = U. A kernel built for U then leaves the surplus slots of those threads idle.
static Prep prep_fr(const FaceList& faces_in, bool pack, uint32_t U, uint32_t threads, bool vec2,
                    uint32_t xept = 0, bool pairx = false) {
    if (faces_in.size() > MAXR) throw std::runtime_error("too many regions");
    // Pairing: when both x faces are listed, -x (A) carries +x (B) as its partner; B moves to
    // the end of the table with no blocks of its own.
    FaceList faces = faces_in;
    bool paired = false;
    if (pairx && std::find(faces.begin(), faces.end(), 0) != faces.end() &&
        std::find(faces.begin(), faces.end(), 1) != faces.end()) {
        faces.erase(std::find(faces.begin(), faces.end(), 1));
        paired = true;
    }
    std::vector<FRegion> rs;
    uint32_t next = 0, prefix = 0;
    int a_index = -1;
    for (int k : faces) {
        const Face& f = FACES[k];
        FRegion r{};
        r.field = (uint64_t)(uintptr_t)(G.field + (pack ? f.pack_off : f.unpack_off));
        r.buffer = face_buffer(pack, k);
        for (int d = 0; d < 3; ++d)
            if (f.stride[d] > 0xffffffffull) throw std::runtime_error("stride over 32 bits");
        const uint64_t n = f.count[0] * f.count[1] * f.count[2];
        const bool v2 = vec2 && f.stride[0] == 1 && f.count[0] % 2 == 0 && r.buffer % 16 == 0;
        r.c0 = (uint32_t)(v2 ? f.count[0] / 2 : f.count[0]);
        r.c1 = (uint32_t)f.count[1];
        const FastDiv d0 = host_fastdiv(r.c0), d1 = host_fastdiv(r.c1);
        r.m0 = d0.mul;
        r.r0 = d0.shr;
        r.m1 = d1.mul;
        r.r1 = d1.shr;
        r.s0 = (uint32_t)f.stride[0];
        r.s1 = (uint32_t)f.stride[1];
        r.s2 = (uint32_t)f.stride[2];
        r.n = (uint32_t)(v2 ? n / 2 : n);
        r.flags = v2 ? FR_VEC2 : 0u;
        if (paired && k == 0) {
            r.n *= 2;
            r.flags |= FR_PAIR;
            a_index = (int)rs.size();
        }
        const uint64_t per = (uint64_t)threads * (f.stride[0] != 1 && xept ? xept : U);
        r.first_block = next;
        r.blocks = (uint32_t)std::max<uint64_t>(1, (r.n + per - 1) / per);
        r.prefix = prefix;
        if ((uint64_t)r.n + (uint64_t)U * r.blocks * threads >= 0x7fffffffull)
            throw std::runtime_error("region too large for the 32-bit fast path");
        next += r.blocks;
        prefix += r.n;
        rs.push_back(r);
    }
    if (paired) {
        // B = +x: same shape as -x (checked); element e of A pairs with element e + shift of B,
        // shift chosen among a few candidates to put the two elements closest in the field.
        const Face& fa = FACES[0];
        const Face& fb = FACES[1];
        for (int d = 0; d < 3; ++d)
            if (fa.count[d] != fb.count[d] || fa.stride[d] != fb.stride[d])
                throw std::runtime_error("pair: shapes differ");
        const uint64_t n = fa.count[0] * fa.count[1] * fa.count[2];
        const uint64_t cands[5] = {0, 1, n - 1, fa.count[0], n - fa.count[0]};
        uint64_t best = 0, bestd = ~0ull;
        const uint64_t e = fa.count[0] + 1;
        for (uint64_t c : cands) {
            const uint64_t ia = face_index(fa, pack, e), ib = face_index(fb, pack, (e + c) % n);
            const uint64_t d = ia > ib ? ia - ib : ib - ia;
            if (d < bestd) {
                bestd = d;
                best = c;
            }
        }
        FRegion b = rs[a_index];
        b.field = (uint64_t)(uintptr_t)(G.field + (pack ? fb.pack_off : fb.unpack_off));
        b.buffer = face_buffer(pack, 1);
        b.n = (uint32_t)n;
        b.flags = 0;
        b.first_block = 0xfffffff0u;  // never served by a grid block
        b.blocks = 0;
        rs[a_index].prefix = (uint32_t)best;  // the shift
        rs[a_index].flags |= (uint32_t)rs.size() << 8;
        rs.push_back(b);
        static bool told = false;
        if (!told) {
            printf("   (pairing -x/+x: shift %llu, elements %llu words apart in the %s field)\n",
                   (unsigned long long)best, (unsigned long long)bestd, pack ? "pack" : "unpack");
            if (!pack) told = true;
        }
    }
    Prep p;
    p.nreg = (uint32_t)rs.size();
    p.grid = next;
    p.block = threads;
    p.total = prefix;
    memset(&p.ptab, 0, sizeof p.ptab);
    for (size_t i = 0; i < rs.size(); ++i) p.ptab.r[i] = rs[i];
    CK(cudaMalloc(&p.d_fr, rs.size() * sizeof(FRegion)));
    CK(cudaMemcpy(p.d_fr, rs.data(), rs.size() * sizeof(FRegion), cudaMemcpyHostToDevice));
    return p;
}

// R tables: hp_region records with the reserved-field encoding of r_body.
static Prep prep_r(const FaceList& faces_in, bool pack, uint32_t U, uint32_t threads, bool pairx,
                   bool vec2) {
    FaceList faces = faces_in;
    bool paired = false;
    if (pairx && std::find(faces.begin(), faces.end(), 0) != faces.end() &&
        std::find(faces.begin(), faces.end(), 1) != faces.end()) {
        faces.erase(std::find(faces.begin(), faces.end(), 1));
        paired = true;
    }
    if (faces.size() + (paired ? 1 : 0) > R_MAXR) throw std::runtime_error("too many regions");
    std::vector<hp_region> rs;
    uint32_t next = 0;
    int a_index = -1;
    for (int k : faces) {
        const Face& f = FACES[k];
        hp_region r{};
        r.field = (uint64_t)(uintptr_t)G.field;
        r.buffer = face_buffer(pack, k);
        r.offset = pack ? f.pack_off : f.unpack_off;
        for (int d = 0; d < 3; ++d) {
            r.count[d] = f.count[d];
            r.stride[d] = f.stride[d];
        }
        r.message = HP_NO_MESSAGE;
        const uint64_t n = f.count[0] * f.count[1] * f.count[2];
        uint64_t units = n;
        if (paired && k == 0) {
            units = 2 * n;
            a_index = (int)rs.size();
        } else if (vec2 && f.stride[0] == 1 && f.count[0] % 2 == 0 && r.buffer % 16 == 0) {
            units = n / 2;
            r.reserved |= R_VEC2_BIT;
        }
        const uint64_t per = (uint64_t)threads * U;
        r.first_block = next;
        r.blocks = (uint32_t)std::max<uint64_t>(1, (units + per - 1) / per);
        if (units + (uint64_t)r.blocks * per >= 0x7fffffffull)
            throw std::runtime_error("outside the probe's 32-bit range");
        next += r.blocks;
        rs.push_back(r);
    }
    if (paired) {
        const Face& fa = FACES[0];
        const Face& fb = FACES[1];
        for (int d = 0; d < 3; ++d)
            if (fa.count[d] != fb.count[d] || fa.stride[d] != fb.stride[d])
                throw std::runtime_error("pair: shapes differ");
        const uint64_t n = fa.count[0] * fa.count[1] * fa.count[2];
        const uint64_t shifts[5] = {0, 1, n - 1, fa.count[0], n - fa.count[0]};
        uint32_t best = 0;
        uint64_t bestd = ~0ull;
        const uint64_t e = fa.count[0] + 1;
        for (uint32_t c = 0; c < 5; ++c) {
            const uint64_t ia = face_index(fa, pack, e);
            const uint64_t ib = face_index(fb, pack, (e + shifts[c]) % n);
            const uint64_t d = ia > ib ? ia - ib : ib - ia;
            if (d < bestd) {
                bestd = d;
                best = c;
            }
        }
        hp_region b{};
        b.field = (uint64_t)(uintptr_t)G.field;
        b.buffer = face_buffer(pack, 1);
        b.offset = pack ? fb.pack_off : fb.unpack_off;
        for (int d = 0; d < 3; ++d) {
            b.count[d] = fb.count[d];
            b.stride[d] = fb.stride[d];
        }
        b.message = HP_NO_MESSAGE;
        b.first_block = next;  // no blocks of its own
        b.blocks = 0;
        rs[a_index].reserved = (uint32_t)(rs.size() + 1) | (best << R_SHIFT_SHIFT);
        rs.push_back(b);
    }
    Prep p;
    p.nreg = (uint32_t)rs.size();
    p.grid = next;
    p.block = threads;
    memset(&p.rtab, 0, sizeof p.rtab);
    p.rtab.nreg = p.nreg;
    for (size_t i = 0; i < rs.size(); ++i) p.rtab.r[i] = rs[i];
    CK(cudaMalloc(&p.d_hp, rs.size() * sizeof(hp_region)));
    CK(cudaMemcpy(p.d_hp, rs.data(), rs.size() * sizeof(hp_region), cudaMemcpyHostToDevice));
    return p;
}

template <int U, int H, bool PARAMS>
static Variant make_r(const std::string& name, uint32_t threads = 256, bool pairx = true,
                      bool vec2 = true) {
    Variant v;
    v.name = name;
    v.prepare = [=](const FaceList& f, bool pack) {
        return prep_r(f, pack, U, threads, pairx, vec2);
    };
    v.launch = [](const Prep& p, bool pack, cudaStream_t s) {
        if constexpr (PARAMS) {
            if (pack)
                r_kernel_p<U, H, true><<<p.grid, p.block, 0, s>>>(p.rtab);
            else
                r_kernel_p<U, H, false><<<p.grid, p.block, 0, s>>>(p.rtab);
        } else {
            if (pack)
                r_kernel_g<U, H, true><<<p.grid, p.block, 0, s>>>(hp_args(p));
            else
                r_kernel_g<U, H, false><<<p.grid, p.block, 0, s>>>(hp_args(p));
        }
    };
    return v;
}

// ---- variant makers ----

static Variant make_v0(uint32_t ept, bool rev = false) {
    Variant v;
    v.name = "V0 replica ept" + std::to_string(ept) + (rev ? " order z,y,x" : "");
    v.prepare = [=](const FaceList& f, bool pack) {
        FaceList g = f;
        if (rev) std::reverse(g.begin(), g.end());
        return prep_hp(g, pack, ept, 256, false);
    };
    v.launch = [](const Prep& p, bool pack, cudaStream_t s) {
        if (pack)
            v0_kernel<true><<<p.grid, p.block, 0, s>>>(hp_args(p));
        else
            v0_kernel<false><<<p.grid, p.block, 0, s>>>(hp_args(p));
    };
    return v;
}

static Variant make_v1(uint32_t ept) {
    Variant v;
    v.name = "V1 fastdiv ept" + std::to_string(ept);
    v.prepare = [=](const FaceList& f, bool pack) { return prep_hp(f, pack, ept, 256, true); };
    v.launch = [](const Prep& p, bool pack, cudaStream_t s) {
        if (pack)
            v1_kernel<true><<<p.grid, p.block, 0, s>>>(hp_args(p), p.d_fd);
        else
            v1_kernel<false><<<p.grid, p.block, 0, s>>>(hp_args(p), p.d_fd);
    };
    return v;
}

template <int U, int H, bool PTAB, bool CHUNK, bool DEVMAGIC, bool VEC2, bool LB = false,
          bool PAIR = false>
static void launch_v2(const Prep& p, bool pack, cudaStream_t s) {
    if constexpr (LB) {
        static_assert(PTAB, "launch-bounds kernel takes the table by value");
        if (pack)
            v2pl_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, true><<<p.grid, p.block, 0, s>>>(p.nreg,
                                                                                           p.ptab);
        else
            v2pl_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, false><<<p.grid, p.block, 0, s>>>(
                p.nreg, p.ptab);
    } else if constexpr (PTAB) {
        if (pack)
            v2p_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, true><<<p.grid, p.block, 0, s>>>(p.nreg,
                                                                                          p.ptab);
        else
            v2p_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, false><<<p.grid, p.block, 0, s>>>(
                p.nreg, p.ptab);
    } else {
        if (pack)
            v2_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, true><<<p.grid, p.block, 0, s>>>(p.d_fr,
                                                                                         p.nreg);
        else
            v2_kernel<U, H, CHUNK, DEVMAGIC, VEC2, PAIR, false><<<p.grid, p.block, 0, s>>>(
                p.d_fr, p.nreg);
    }
    if (p.next) launch_v2<U, H, PTAB, CHUNK, DEVMAGIC, VEC2, LB, PAIR>(*p.next, pack, s);
}

// SPLIT: two launches per operation, the strided faces (x) first, then the contiguous ones.
template <int U, int H, bool PTAB, bool CHUNK, bool DEVMAGIC, bool VEC2, bool LB = false,
          bool PAIR = false>
static Variant make_v2(const std::string& name, uint32_t threads = 256, bool rev = false,
                       uint32_t xept = 0, bool split = false) {
    Variant v;
    v.name = name;
    v.prepare = [=](const FaceList& f, bool pack) {
        FaceList g = f;
        if (rev) std::reverse(g.begin(), g.end());
        if (split) {
            FaceList xs, rest;
            for (int k : g) (FACES[k].stride[0] != 1 ? xs : rest).push_back(k);
            if (!xs.empty() && !rest.empty()) {
                Prep p = prep_fr(xs, pack, U, threads, VEC2, xept, PAIR);
                p.next = new Prep(prep_fr(rest, pack, U, threads, VEC2, xept, PAIR));
                return p;
            }
        }
        return prep_fr(g, pack, U, threads, VEC2, xept, PAIR);
    };
    v.launch = [](const Prep& p, bool pack, cudaStream_t s) {
        launch_v2<U, H, PTAB, CHUNK, DEVMAGIC, VEC2, LB, PAIR>(p, pack, s);
    };
    return v;
}

template <int U, int H, bool PTAB>
static Variant make_v3(const std::string& name, uint32_t threads = 256) {
    Variant v;
    v.name = name;
    v.prepare = [=](const FaceList& f, bool pack) {
        Prep p = prep_fr(f, pack, U, threads, false);
        int occ = 0;
        if constexpr (PTAB) {
            if (pack)
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v3p_kernel<U, H, true>,
                                                                 threads, 0));
            else
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v3p_kernel<U, H, false>,
                                                                 threads, 0));
        } else {
            if (pack)
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v3_kernel<U, H, true>,
                                                                 threads, 0));
            else
                CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v3_kernel<U, H, false>,
                                                                 threads, 0));
        }
        p.grid = (uint32_t)(G.sms * std::max(occ, 1));
        if ((uint64_t)p.total + (uint64_t)U * p.grid * threads >= 0x7fffffffull)
            throw std::runtime_error("too large for 32-bit units");
        return p;
    };
    v.launch = [](const Prep& p, bool pack, cudaStream_t s) {
        if constexpr (PTAB) {
            if (pack)
                v3p_kernel<U, H, true><<<p.grid, p.block, 0, s>>>(p.nreg, p.total, p.ptab);
            else
                v3p_kernel<U, H, false><<<p.grid, p.block, 0, s>>>(p.nreg, p.total, p.ptab);
        } else {
            if (pack)
                v3_kernel<U, H, true><<<p.grid, p.block, 0, s>>>(p.d_fr, p.nreg, p.total);
            else
                v3_kernel<U, H, false><<<p.grid, p.block, 0, s>>>(p.d_fr, p.nreg, p.total);
        }
    };
    return v;
}

// ---- timing ----

using Fn = std::function<void(cudaStream_t)>;

static double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// (a) REPS back-to-back launches between events, per launch, median of RUNS.
static double time_stream(const Fn& f) {
    f(G.s);
    f(G.s);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(G.s));
    std::vector<double> us;
    for (int run = 0; run < RUNS; ++run) {
        CK(cudaEventRecord(G.e0, G.s));
        for (int i = 0; i < REPS; ++i) f(G.s);
        CK(cudaEventRecord(G.e1, G.s));
        CK(cudaGetLastError());
        CK(cudaEventSynchronize(G.e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
        us.push_back(1e3 * ms / REPS);
    }
    return median_of(us);
}

// (b) a graph of REPS launches replayed between events, per launch, median of RUNS.
static double time_graph(const Fn& f) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    CK(cudaStreamBeginCapture(G.s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < REPS; ++i) f(G.s);
    cudaError_t le = cudaGetLastError();
    cudaError_t ce = cudaStreamEndCapture(G.s, &g);
    CK(le);
    CK(ce);
    CK(cudaGraphInstantiate(&x, g, 0));
    std::vector<double> us;
    try {
        CK(cudaGraphLaunch(x, G.s));
        CK(cudaStreamSynchronize(G.s));
        for (int run = 0; run < RUNS; ++run) {
            CK(cudaEventRecord(G.e0, G.s));
            CK(cudaGraphLaunch(x, G.s));
            CK(cudaEventRecord(G.e1, G.s));
            CK(cudaEventSynchronize(G.e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
            us.push_back(1e3 * ms / REPS);
        }
    } catch (...) {
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(g);
        throw;
    }
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    return median_of(us);
}

static void flush_l2(cudaStream_t s) {
    k_flush<<<G.sms * 8, 256, 0, s>>>(G.flush, G.flush_n, G.sink);
}

// One launch between events, median of RUNS; with flush, a 256 MiB read before each.
static double time_single(const Fn& f, bool flush) {
    f(G.s);
    CK(cudaStreamSynchronize(G.s));
    std::vector<double> us;
    for (int run = 0; run < RUNS; ++run) {
        if (flush) flush_l2(G.s);
        CK(cudaEventRecord(G.e0, G.s));
        f(G.s);
        CK(cudaEventRecord(G.e1, G.s));
        CK(cudaGetLastError());
        CK(cudaEventSynchronize(G.e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
        us.push_back(1e3 * ms);
    }
    return median_of(us);
}

static double pct(double us, double bytes) { return 100.0 * (bytes / (us * 1e3)) / REF_GBS; }

// ---- verification ----

static uint32_t mask_of(const FaceList& faces) {
    uint32_t m = 0;
    for (int k : faces) m |= 1u << k;
    return m;
}

// Field vs fpat (mask 0) or with the halo faces of mask unpacked; returns mismatches.
static unsigned long long verify_field(uint32_t mask, unsigned long long* first) {
    unsigned long long h[2] = {0, ~0ull};
    CK(cudaMemcpy(G.bad, h, sizeof h, cudaMemcpyHostToDevice));
    k_verify_field<<<G.sms * 16, 256, 0, G.s>>>(G.field, NF, mask, G.bad, G.bad + 1);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(G.s));
    CK(cudaMemcpy(h, G.bad, sizeof h, cudaMemcpyDeviceToHost));
    if (first) *first = h[1];
    return h[0];
}

static void reset_field() {
    k_init_field<<<G.sms * 16, 256, 0, G.s>>>(G.field, NF);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(G.s));
}

// Packed buffer: the faces listed must match REF, the others must still hold 0xff bytes.
static std::string verify_pack(const FaceList& faces) {
    std::vector<uint64_t> h(6ull * FACE_N);
    CK(cudaMemcpy(h.data(), G.pbuf, h.size() * 8, cudaMemcpyDeviceToHost));
    const uint32_t m = mask_of(faces);
    uint64_t bad = 0, first = ~0ull;
    for (uint64_t j = 0; j < h.size(); ++j) {
        const int k = (int)(j / FACE_N);
        const uint64_t want = ((m >> k) & 1u) ? REF[j] : ~0ull;
        if (h[j] != want) {
            if (!bad) first = j;
            ++bad;
        }
    }
    unsigned long long fb = 0;
    const unsigned long long fbad = verify_field(0, &fb);
    if (bad || fbad) {
        char buf[256];
        snprintf(buf, sizeof buf, "WRONG: %llu buffer words differ (first %llu), %llu field words",
                 (unsigned long long)bad, (unsigned long long)first, fbad);
        return buf;
    }
    return "";
}

static std::string verify_unpack(const FaceList& faces) {
    unsigned long long first = 0;
    const unsigned long long bad = verify_field(mask_of(faces), &first);
    if (bad) {
        char buf[256];
        snprintf(buf, sizeof buf, "WRONG: %llu field words differ (first at index %llu)", bad,
                 first);
        return buf;
    }
    return "";
}

// Runs a variant once over `faces` and verifies; "" when right.
static std::string run_and_verify(const Variant& v, const Prep& p, const FaceList& faces,
                                  bool pack) {
    reset_field();  // pack checks the field is untouched; unpack starts from the pattern
    if (pack) CK(cudaMemsetAsync(G.pbuf, 0xff, 6ull * FACE_N * 8, G.s));
    v.launch(p, pack, G.s);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(G.s));
    return pack ? verify_pack(faces) : verify_unpack(faces);
}

// ---- results ----

struct Row {
    std::string name;
    double pa = -1, pb = -1, ua = -1, ub = -1;  // pack (a), pack (b), unpack (a), unpack (b)
    std::string status;
};
static std::vector<Row> ROWS;

static void fatal_if_sticky(const CudaFail& e);

static void print_row(const Row& r, double bytes) {
    auto cell = [&](double us) {
        char b[64];
        if (us < 0)
            snprintf(b, sizeof b, "%16s", "-");
        else
            snprintf(b, sizeof b, "%8.2f (%5.1f%%)", us, pct(us, bytes));
        return std::string(b);
    };
    printf("%-44s | %s | %s | %s | %s | %s\n", r.name.c_str(), cell(r.pa).c_str(),
           cell(r.pb).c_str(), cell(r.ua).c_str(), cell(r.ub).c_str(), r.status.c_str());
    fflush(stdout);
}

static void print_header(const char* title) {
    printf("\n== %s ==\n", title);
    printf("%-44s | %16s | %16s | %16s | %16s | %s\n", "variant", "pack a (us, %)",
           "pack b graph", "unpack a", "unpack b graph", "status");
    fflush(stdout);
}

// Measures one variant over `faces`, pack and unpack; returns the row (status "" if right).
static Row measure(const Variant& v, const FaceList& faces, bool do_pack = true,
                   bool do_unpack = true) {
    Row row;
    row.name = v.name;
    for (int pass = 0; pass < 2; ++pass) {
        const bool pack = pass == 0;
        if ((pack && !do_pack) || (!pack && !do_unpack)) continue;
        Prep p;
        try {
            p = v.prepare(faces, pack);
            std::string err = run_and_verify(v, p, faces, pack);
            if (!err.empty()) {
                row.status += std::string(pack ? "pack " : "unpack ") + err + "; ";
                p.release();
                if (!pack) reset_field();
                continue;
            }
            const Fn f = [&](cudaStream_t s) { v.launch(p, pack, s); };
            const double a = time_stream(f);
            const double b = time_graph(f);
            // Re-verify after the timed launches (the operation is idempotent).
            err = pack ? verify_pack(faces) : verify_unpack(faces);
            if (!err.empty()) {
                row.status += std::string(pack ? "pack after timing " : "unpack after timing ") +
                              err + "; ";
            } else if (pack) {
                row.pa = a;
                row.pb = b;
            } else {
                row.ua = a;
                row.ub = b;
            }
        } catch (const CudaFail& e) {
            row.status += std::string(pack ? "pack FAILED: " : "unpack FAILED: ") + e.what() + "; ";
            p.release();
            fatal_if_sticky(e);
            if (!pack) reset_field();
            continue;
        } catch (const std::exception& e) {
            row.status += std::string(pack ? "pack FAILED: " : "unpack FAILED: ") + e.what() + "; ";
            p.release();
            if (!pack) reset_field();
            continue;
        }
        p.release();
        if (!pack) reset_field();
    }
    // Evict-last (persisting) lines left by a variant would favour the next: reset them.
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError();
    if (row.status.size() >= 2) row.status.resize(row.status.size() - 2);  // trailing "; "
    if (row.status.empty()) row.status = "ok";  // verified before and after timing
    return row;
}

static void print_summary();

static void fatal_if_sticky(const CudaFail& e) {
    // A sticky error breaks the context: nothing after it can be trusted.
    cudaError_t s = cudaDeviceSynchronize();
    if (s != cudaSuccess || e.code == cudaErrorIllegalAddress || e.code == cudaErrorLaunchFailure ||
        e.code == cudaErrorMisalignedAddress || e.code == cudaErrorIllegalInstruction) {
        fprintf(stdout, "\nFATAL: CUDA context broken (%s; sync: %s); results so far:\n", e.what(),
                cudaGetErrorName(s));
        print_summary();
        exit(2);
    }
}

static void print_summary() {
    print_header("SUMMARY: all 6 faces in one launch (a: 50 back-to-back launches / 50, b: graph of 50 / 50; median of 11; % of 4266 GB/s at 25,165,824 useful bytes)");
    for (const Row& r : ROWS) print_row(r, USEFUL_BYTES);
}

static void self_test_fastdiv() {
    uint64_t x = 88172645463325252ull;
    auto rnd = [&]() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    std::vector<uint32_t> ds = {1, 2, 3, 5, 7, 255, 256, 257, 511, 512, 513, 514, 1000, 4096,
                                65535, 65536, 65537, 264196, 0x7ffffffeu, 0x7fffffffu};
    for (int i = 0; i < 200; ++i) ds.push_back((uint32_t)(rnd() % 0x7fffffffu) + 1u);
    for (uint32_t d : ds) {
        const FastDiv f = host_fastdiv(d);
        for (int i = 0; i < 20000; ++i) {
            uint32_t n;
            if (i < 64)
                n = (uint32_t)i;
            else if (i < 128)
                n = 0x7fffffffu - (uint32_t)(i - 64);
            else if (i < 192)
                n = (uint32_t)std::min<uint64_t>(0x7fffffffull, (uint64_t)d * (i - 128) + (i & 1 ? d - 1 : 0));
            else
                n = (uint32_t)(rnd() & 0x7fffffffu);
            const uint32_t q = f.mul ? (uint32_t)(((uint64_t)n * f.mul) >> 32) >> f.shr : n;
            if (q != n / d) {
                printf("fastdiv self-test FAILED: d=%u n=%u got %u want %u\n", d, n, q, n / d);
                exit(3);
            }
        }
    }
    printf("fastdiv self-test: ok (%zu divisors x 20000 dividends < 2^31)\n", ds.size());
}

static int run_all();

int main() {
    try {
        return run_all();
    } catch (const std::exception& e) {
        printf("\nFATAL: unexpected error: %s\nresults so far:\n", e.what());
        print_summary();
        return 2;
    }
}

static int run_all() {
    self_test_fastdiv();
    int dev = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    int drv = 0, rt = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    int clk = 0, mclk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, dev);
    G.sms = prop.multiProcessorCount;
    printf("device: %s, cc %d.%d, %d SMs, L2 %d B, %.1f GiB, SM clock %d kHz, mem clock %d kHz, "
           "driver %d, runtime %d\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize,
           prop.totalGlobalMem / 1073741824.0, clk, mclk, drv, rt);
    printf("case: 514^3 f64 field (%.3f GB), 6 faces of 512x512, useful bytes %.0f, reference "
           "%.0f GB/s, %d launches per run, median of %d runs\n",
           NF * 8 / 1e9, USEFUL_BYTES, REF_GBS, REPS, RUNS);
    fflush(stdout);

    CK(cudaStreamCreateWithFlags(&G.s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&G.e0));
    CK(cudaEventCreate(&G.e1));
    CK(cudaMalloc(&G.field, NF * 8));
    CK(cudaMalloc(&G.field2, NF * 8));
    CK(cudaMalloc(&G.pbuf, 6ull * FACE_N * 8));
    CK(cudaMalloc(&G.ubuf, 6ull * FACE_N * 8));
    CK(cudaMalloc(&G.cbuf, 6ull * FACE_N * 8));
    G.flush_n = (256ull << 20) / 16;
    CK(cudaMalloc(&G.flush, G.flush_n * 16));
    CK(cudaMemset(G.flush, 1, G.flush_n * 16));
    CK(cudaMalloc(&G.sink, 4));
    CK(cudaMalloc(&G.bad, 16));
    reset_field();
    k_init_buf<<<G.sms * 4, 256, 0, G.s>>>(G.ubuf, 6ull * FACE_N);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(G.s));
    if (verify_field(0, nullptr) != 0) {
        printf("FATAL: field init does not verify\n");
        return 2;
    }
    REF.resize(6ull * FACE_N);
    for (int k = 0; k < 6; ++k)
        for (uint64_t e = 0; e < FACE_N; ++e)
            REF[k * (uint64_t)FACE_N + e] = fpat(face_index(FACES[k], true, e));

    const FaceList ALL = {0, 1, 2, 3, 4, 5};

    // Device fast-division constants (double-precision method) against the host's.
    {
        std::vector<uint32_t> ds;
        for (uint32_t d = 1; d <= 70000; ++d) ds.push_back(d);
        uint64_t x = 1234567;
        for (int i = 0; i < 30000; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            ds.push_back((uint32_t)((x >> 33) % 0x7fffffffu) + 1u);
        }
        ds.push_back(0x7fffffffu);
        ds.push_back(0x40000000u);
        ds.push_back(0x40000001u);
        uint32_t *dd = nullptr, *dout = nullptr;
        CK(cudaMalloc(&dd, ds.size() * 4));
        CK(cudaMalloc(&dout, ds.size() * 8));
        CK(cudaMemcpy(dd, ds.data(), ds.size() * 4, cudaMemcpyHostToDevice));
        k_fastdiv_fp_test<<<(uint32_t)(ds.size() + 255) / 256, 256>>>(dd, (uint32_t)ds.size(), dout);
        CK(cudaGetLastError());
        std::vector<uint32_t> out(ds.size() * 2);
        CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaFree(dd));
        CK(cudaFree(dout));
        size_t bad = 0;
        for (size_t i = 0; i < ds.size(); ++i) {
            const FastDiv f = host_fastdiv(ds[i]);
            if (out[2 * i] != f.mul || out[2 * i + 1] != f.shr) {
                if (bad < 5)
                    printf("device fastdiv (fp) MISMATCH d=%u: %u/%u, host %u/%u\n", ds[i],
                           out[2 * i], out[2 * i + 1], f.mul, f.shr);
                ++bad;
            }
        }
        printf("device fastdiv (double-precision method) vs host: %zu divisors, %zu mismatches\n",
               ds.size(), bad);
        fflush(stdout);
    }

    // ---- warm-up (clocks up): about 400 whole-field copies ----
    for (int i = 0; i < 400; ++i)
        CK(cudaMemcpyAsync(G.field2, G.field, NF * 8, cudaMemcpyDeviceToDevice, G.s));
    CK(cudaStreamSynchronize(G.s));

    // ---- calibration and ceilings ----
    printf("\n== ceilings ==\n");
    try {
        // Whole-field device copy (the 4266 GB/s figure's method): 5 copies per run, median of 5.
        std::vector<double> us;
        for (int run = 0; run < 5; ++run) {
            CK(cudaEventRecord(G.e0, G.s));
            for (int i = 0; i < 5; ++i)
                CK(cudaMemcpyAsync(G.field2, G.field, NF * 8, cudaMemcpyDeviceToDevice, G.s));
            CK(cudaEventRecord(G.e1, G.s));
            CK(cudaEventSynchronize(G.e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, G.e0, G.e1));
            us.push_back(1e3 * ms / 5);
        }
        const double t = median_of(us);
        printf("cudaMemcpyAsync DtoD of the whole field (%.3f GB): %.1f us = %.1f GB/s (read + "
               "written)\n",
               NF * 8 / 1e9, t, 2.0 * NF * 8 / (t * 1e3));
    } catch (const CudaFail& e) {
        printf("whole-field copy FAILED: %s\n", e.what());
        fatal_if_sticky(e);
    }
    const uint32_t n8 = 6 * FACE_N, n16 = n8 / 2;
    struct Ceil {
        const char* name;
        Fn f;
    };
    std::vector<Ceil> ceils = {
        {"empty kernel, 1536 blocks x 256", [](cudaStream_t s) { k_empty<<<1536, 256, 0, s>>>(); }},
        {"copy kernel 12 MiB, 8 B/thread (6144 blk)",
         [=](cudaStream_t s) {
             k_copy8<<<(n8 + 255) / 256, 256, 0, s>>>(G.pbuf, G.cbuf, n8);
         }},
        {"copy kernel 12 MiB, 16 B x2/thread (1536 blk)",
         [=](cudaStream_t s) {
             k_copy16<2><<<(n16 + 511) / 512, 256, 0, s>>>((const ulonglong2*)G.pbuf,
                                                           (ulonglong2*)G.cbuf, n16);
         }},
        {"copy kernel 12 MiB, 16 B x4/thread (768 blk)",
         [=](cudaStream_t s) {
             k_copy16<4><<<(n16 + 1023) / 1024, 256, 0, s>>>((const ulonglong2*)G.pbuf,
                                                             (ulonglong2*)G.cbuf, n16);
         }},
        {"cudaMemcpyAsync DtoD 12 MiB",
         [=](cudaStream_t s) {
             CK(cudaMemcpyAsync(G.cbuf, G.pbuf, (size_t)n8 * 8, cudaMemcpyDeviceToDevice, s));
         }},
    };
    printf("%-44s | %16s | %16s | %16s | %16s\n", "ceiling", "a (us, %)", "b graph",
           "single warm", "single L2-flushed");
    for (auto& c : ceils) {
        try {
            const double a = time_stream(c.f), b = time_graph(c.f);
            const double sw = time_single(c.f, false), sc = time_single(c.f, true);
            printf("%-44s | %8.2f (%5.1f%%) | %8.2f (%5.1f%%) | %8.2f (%5.1f%%) | %8.2f (%5.1f%%)\n",
                   c.name, a, pct(a, USEFUL_BYTES), b, pct(b, USEFUL_BYTES), sw,
                   pct(sw, USEFUL_BYTES), sc, pct(sc, USEFUL_BYTES));
            fflush(stdout);
        } catch (const CudaFail& e) {
            printf("%-44s | FAILED: %s\n", c.name, e.what());
            fatal_if_sticky(e);
        }
    }

    // ---- variants ----
    std::vector<Variant> vs;
    for (uint32_t ept : {1u, 2u, 4u, 8u}) vs.push_back(make_v0(ept));
    vs.push_back(make_v0(4, true));
    for (uint32_t ept : {1u, 2u, 4u, 8u}) vs.push_back(make_v1(ept));
    // V2: fast division + 32-bit strides + U independent units per thread, all loads first.
    vs.push_back(make_v2<1, 0, false, false, false, false>("V2 U1 (=V1 + 32-bit strides)"));
    vs.push_back(make_v2<2, 0, false, false, false, false>("V2 U2 grid-stride"));
    vs.push_back(make_v2<4, 0, false, false, false, false>("V2 U4 grid-stride"));
    vs.push_back(make_v2<8, 0, false, false, false, false>("V2 U8 grid-stride"));
    vs.push_back(make_v2<2, 0, false, true, false, false>("V2 U2 block-chunk"));
    vs.push_back(make_v2<4, 0, false, true, false, false>("V2 U4 block-chunk"));
    vs.push_back(make_v2<8, 0, false, true, false, false>("V2 U8 block-chunk"));
    vs.push_back(make_v2<4, 0, false, false, true, false>("V2 U4 grid-stride, magic on device"));
    // V3: machine-sized grid, grid-stride over the concatenation.
    vs.push_back(make_v3<1, 0, false>("V3 persistent U1 (table in smem)"));
    vs.push_back(make_v3<2, 0, false>("V3 persistent U2 (table in smem)"));
    vs.push_back(make_v3<4, 0, false>("V3 persistent U4 (table in smem)"));
    vs.push_back(make_v3<2, 0, true>("V3 persistent U2 (table in params)"));
    vs.push_back(make_v3<4, 0, true>("V3 persistent U4 (table in params)"));
    vs.push_back(make_v3<2, 1, false>("V3 persistent U2 smem, ld.nc"));
    // V4: block size.
    vs.push_back(make_v2<4, 0, false, false, false, false>("V4 V2 U4 grid-stride, 128 thr", 128));
    vs.push_back(make_v2<4, 0, false, false, false, false>("V4 V2 U4 grid-stride, 512 thr", 512));
    vs.push_back(make_v2<8, 0, false, false, false, false>("V4 V2 U8 grid-stride, 128 thr", 128));
    vs.push_back(make_v2<8, 0, false, false, false, false>("V4 V2 U8 grid-stride, 512 thr", 512));
    vs.push_back(make_v2<4, 0, false, true, false, false>("V4 V2 U4 block-chunk, 128 thr", 128));
    vs.push_back(make_v2<4, 0, false, true, false, false>("V4 V2 U4 block-chunk, 512 thr", 512));
    vs.push_back(make_v2<2, 0, false, false, false, false>("V4 V2 U2 grid-stride, 128 thr", 128));
    // V4: cache hints.
    vs.push_back(make_v2<4, 1, false, false, false, false>("V4 V2 U4 gs, ld.nc"));
    vs.push_back(make_v2<4, 2, false, false, false, false>("V4 V2 U4 gs, ld.nc.L1::no_alloc+st.cs"));
    vs.push_back(make_v2<4, 3, false, false, false, false>("V4 V2 U4 gs, ld.cs+st.cs"));
    vs.push_back(make_v2<4, 4, false, false, false, false>("V4 V2 U4 gs, st.cs only"));
    vs.push_back(make_v2<4, 5, false, false, false, false>("V4 V2 U4 gs, ld.nc.L2::256B"));
    vs.push_back(make_v2<4, 6, false, false, false, false>("V4 V2 U4 gs, ld.nc.L2::64B"));
    vs.push_back(make_v2<8, 1, false, false, false, false>("V4 V2 U8 gs, ld.nc"));
    // V4: 16-byte buffer side for contiguous rows (y, z faces), pairs per thread.
    vs.push_back(make_v2<1, 0, false, false, false, true>("V4 V2 U1 gs, vec2 rows"));
    vs.push_back(make_v2<2, 0, false, false, false, true>("V4 V2 U2 gs, vec2 rows"));
    vs.push_back(make_v2<4, 0, false, false, false, true>("V4 V2 U4 gs, vec2 rows"));
    // V4: region table by value (kernel parameters).
    vs.push_back(make_v2<2, 0, true, false, false, false>("V4 V2 U2 gs, table in params"));
    vs.push_back(make_v2<4, 0, true, false, false, false>("V4 V2 U4 gs, table in params"));
    vs.push_back(make_v2<8, 0, true, false, false, false>("V4 V2 U8 gs, table in params"));
    vs.push_back(make_v2<4, 0, true, true, false, false>("V4 V2 U4 chunk, table in params"));
    // V4: combinations.
    vs.push_back(make_v2<2, 0, true, false, false, true>("V4 V2 U2 gs, params+vec2"));
    vs.push_back(make_v2<4, 0, true, false, false, true>("V4 V2 U4 gs, params+vec2"));
    vs.push_back(make_v2<2, 1, true, false, false, true>("V4 V2 U2 gs, params+vec2+ld.nc"));
    vs.push_back(make_v2<4, 1, true, false, false, true>("V4 V2 U4 gs, params+vec2+ld.nc"));
    vs.push_back(make_v2<4, 2, true, false, false, true>("V4 V2 U4 gs, params+vec2+nc.noalloc+cs"));
    vs.push_back(make_v2<4, 1, true, false, false, false>("V4 V2 U4 gs, params+ld.nc"));
    vs.push_back(make_v2<8, 1, true, false, false, false>("V4 V2 U8 gs, params+ld.nc"));
    vs.push_back(make_v2<4, 0, true, false, false, false>("V4 V2 U4 gs, params, order z,y,x", 256,
                                                          true));
    vs.push_back(make_v2<4, 1, true, false, false, true>("V4 V2 U4 gs, params+vec2+nc, 512 thr",
                                                         512));
    vs.push_back(make_v2<2, 1, true, false, false, true>("V4 V2 U2 gs, params+vec2+nc, 128 thr",
                                                         128));
    vs.push_back(make_v2<4, 1, true, false, false, true, true>(
        "V4 V2 U4 gs, params+vec2+nc, launch_bounds(256,8)"));
    vs.push_back(make_v2<8, 1, true, false, false, false, true>(
        "V4 V2 U8 gs, params+nc, launch_bounds(256,8)"));
    vs.push_back(make_v2<4, 1, true, false, false, false, true>(
        "V4 V2 U4 gs, params+nc, launch_bounds(256,8)"));
    vs.push_back(make_v2<4, 1, true, true, false, true, true>(
        "V4 V2 U4 chunk, params+vec2+nc, launch_bounds(256,8)"));
    // V4: x faces (strided) given more or fewer blocks than the contiguous faces.
    vs.push_back(make_v2<4, 1, true, false, false, true>(
        "V4 V2 U4 gs, params+vec2+nc, x faces ept1", 256, false, 1));
    vs.push_back(make_v2<4, 1, true, false, false, true>(
        "V4 V2 U4 gs, params+vec2+nc, x faces ept2", 256, false, 2));
    vs.push_back(make_v2<8, 1, true, false, false, true>(
        "V4 V2 U8 gs, params+vec2+nc, x faces ept2", 256, false, 2));
    vs.push_back(make_v2<8, 1, true, false, false, true>(
        "V4 V2 U8 gs, params+vec2+nc, x faces ept4", 256, false, 4));
    vs.push_back(make_v2<8, 1, true, false, false, true>("V4 V2 U8 gs, params+vec2+nc"));
    // V5: -x and +x paired: their elements that share a sector or line are moved by
    // neighbouring lanes of one warp instruction.
    vs.push_back(make_v2<2, 0, true, false, false, true, false, true>("V5 U2 params+vec2+pairx"));
    vs.push_back(make_v2<4, 0, true, false, false, true, false, true>("V5 U4 params+vec2+pairx"));
    vs.push_back(make_v2<8, 0, true, false, false, true, false, true>("V5 U8 params+vec2+pairx"));
    vs.push_back(make_v2<8, 0, true, false, false, false, false, true>("V5 U8 params+pairx"));
    vs.push_back(make_v2<4, 0, true, false, false, true, false, true>(
        "V5 U4 params+vec2+pairx, 512 thr", 512));
    vs.push_back(make_v2<8, 0, true, false, false, true, false, true>(
        "V5 U8 params+vec2+pairx, 512 thr", 512));
    vs.push_back(make_v2<8, 0, false, false, false, true, false, true>(
        "V5 U8 global table+vec2+pairx"));
    vs.push_back(make_v2<8, 0, true, false, true, true, false, true>(
        "V5 U8 params+vec2+pairx, magic on device"));
    vs.push_back(make_v2<4, 0, false, false, true, true, false, true>(
        "V5 U4 global table+vec2+pairx, dev magic"));
    // V6: L2 eviction priorities (see region_policies).
    vs.push_back(make_v2<8, 7, true, false, false, true>("V6 U8 params+vec2, x evict_first"));
    vs.push_back(make_v2<8, 7, true, false, false, true, false, true>(
        "V6 U8 params+vec2+pairx, x evict_first"));
    vs.push_back(make_v2<8, 8, true, false, false, true, false, true>(
        "V6 U8 params+vec2+pairx, field evict_first"));
    vs.push_back(make_v2<8, 9, true, false, false, true, false, true>(
        "V6 U8 p+v2+pairx, x ev_first, rest ev_last"));
    // V7: two launches per operation (x faces | y, z faces); times are per operation.
    vs.push_back(make_v2<8, 0, true, false, false, true>("V7 U8 params+vec2, 2 launches x|yz", 256,
                                                         false, 0, true));
    vs.push_back(make_v2<8, 0, true, false, false, true, false, true>(
        "V7 U8 params+vec2+pairx, 2 launches x|yz", 256, false, 0, true));
    // R: the port candidate on hp_region (pairing and vec2 through hp_region.reserved, fast
    // division computed in the kernel).
    vs.push_back(make_r<2, 0, true>("R U2 params"));
    vs.push_back(make_r<4, 0, true>("R U4 params"));
    vs.push_back(make_r<8, 0, true>("R U8 params"));
    vs.push_back(make_r<4, 0, false>("R U4 global table"));
    vs.push_back(make_r<2, 0, false>("R U2 global table"));
    vs.push_back(make_r<4, 0, true>("R U4 params, no pairing", 256, false, true));
    vs.push_back(make_r<4, 0, true>("R U4 params, no vec2", 256, true, false));
    vs.push_back(make_r<4, 0, true>("R U4 params, 128 thr", 128));
    vs.push_back(make_r<4, 7, true>("R U4 params, H7 x evict_first"));
    vs.push_back(make_r<4, 8, true>("R U4 params, H8 field evict_first"));
    vs.push_back(make_r<4, 9, true>("R U4 params, H9 x ev_first, rest ev_last"));
    vs.push_back(make_r<2, 8, true>("R U2 params, H8"));
    vs.push_back(make_r<2, 9, true>("R U2 params, H9"));
    vs.push_back(make_r<8, 8, true>("R U8 params, H8"));
    vs.push_back(make_r<8, 9, true>("R U8 params, H9"));
    vs.push_back(make_r<4, 8, false>("R U4 global table, H8"));
    vs.push_back(make_r<4, 9, false>("R U4 global table, H9"));
    vs.push_back(make_v0(4));
    vs.back().name = "V0 replica ept4 (repeat, drift check)";

    print_header("variants, all 6 faces in one launch (a: 50 back-to-back / 50; b: graph of 50 / 50; median of 11)");
    for (const Variant& v : vs) {
        Row r = measure(v, ALL);
        ROWS.push_back(r);
        print_row(r, USEFUL_BYTES);
    }

    const int v0_4 = 2;  // "V0 replica ept4"
    const int v0_8 = 3;  // "V0 replica ept8"

    // ---- candidates: the 5 fastest packs and unpacks (a), V0 ept4 and ept8, measured again in
    // 3 interleaved rounds; ranked by the median over the rounds ----
    std::vector<int> cand = {v0_4, v0_8};
    {
        std::vector<int> idx;
        for (size_t i = 0; i + 1 < ROWS.size(); ++i) idx.push_back((int)i);  // not the repeat
        auto add_top = [&](auto key) {
            std::vector<int> v;
            for (int i : idx)
                if (key(ROWS[i]) > 0) v.push_back(i);
            std::sort(v.begin(), v.end(), [&](int a, int b) { return key(ROWS[a]) < key(ROWS[b]); });
            for (size_t j = 0; j < v.size() && j < 5; ++j)
                if (std::find(cand.begin(), cand.end(), v[j]) == cand.end()) cand.push_back(v[j]);
        };
        add_top([](const Row& r) { return r.pa; });
        add_top([](const Row& r) { return r.ua; });
    }
    const int ROUNDS = 3;
    std::vector<std::vector<Row>> got(cand.size());
    for (int round = 0; round < ROUNDS; ++round) {
        char title[128];
        snprintf(title, sizeof title, "candidates, round %d of %d, all 6 faces", round + 1, ROUNDS);
        print_header(title);
        for (size_t i = 0; i < cand.size(); ++i) {
            Row r = measure(vs[cand[i]], ALL);
            print_row(r, USEFUL_BYTES);
            got[i].push_back(r);
        }
    }
    auto med = [](const std::vector<Row>& rs, double Row::*f) {
        std::vector<double> v;
        for (const Row& r : rs)
            if (r.*f > 0) v.push_back(r.*f);
        return v.size() == rs.size() && !v.empty() ? median_of(v) : -1.0;
    };
    std::vector<Row> medrows;
    print_header("candidates: median of the 3 rounds and the first sweep (4 measurements each)");
    for (size_t i = 0; i < cand.size(); ++i) {
        std::vector<Row> all = got[i];
        all.push_back(ROWS[cand[i]]);
        Row m;
        m.name = vs[cand[i]].name;
        m.pa = med(all, &Row::pa);
        m.pb = med(all, &Row::pb);
        m.ua = med(all, &Row::ua);
        m.ub = med(all, &Row::ub);
        double lo = 1e30, hi = 0;
        for (const Row& r : all) {
            if (r.pa > 0) lo = std::min(lo, r.pa), hi = std::max(hi, r.pa);
        }
        double ulo = 1e30, uhi = 0;
        for (const Row& r : all) {
            if (r.ua > 0) ulo = std::min(ulo, r.ua), uhi = std::max(uhi, r.ua);
        }
        char st[128];
        snprintf(st, sizeof st, "pack a %.2f-%.2f, unpack a %.2f-%.2f", lo, hi, ulo, uhi);
        m.status = st;
        print_row(m, USEFUL_BYTES);
        medrows.push_back(m);
    }
    int bp = -1, bu = -1, bpg = -1, bug = -1;
    for (size_t i = 0; i < medrows.size(); ++i) {
        const Row& r = medrows[i];
        if (r.pa > 0 && (bp < 0 || r.pa < medrows[bp].pa)) bp = (int)i;
        if (r.ua > 0 && (bu < 0 || r.ua < medrows[bu].ua)) bu = (int)i;
        if (r.pb > 0 && (bpg < 0 || r.pb < medrows[bpg].pb)) bpg = (int)i;
        if (r.ub > 0 && (bug < 0 || r.ub < medrows[bug].ub)) bug = (int)i;
    }
    printf("\nbest pack (a, median): %s %.2f us; best unpack (a, median): %s %.2f us\n",
           bp >= 0 ? medrows[bp].name.c_str() : "-", bp >= 0 ? medrows[bp].pa : -1.0,
           bu >= 0 ? medrows[bu].name.c_str() : "-", bu >= 0 ? medrows[bu].ua : -1.0);
    printf("best pack (b graph, median): %s %.2f us; best unpack (b graph, median): %s %.2f us\n",
           bpg >= 0 ? medrows[bpg].name.c_str() : "-", bpg >= 0 ? medrows[bpg].pb : -1.0,
           bug >= 0 ? medrows[bug].name.c_str() : "-", bug >= 0 ? medrows[bug].ub : -1.0);
    fflush(stdout);
    // Back to indices into vs.
    bp = bp >= 0 ? cand[bp] : -1;
    bu = bu >= 0 ? cand[bu] : -1;
    bpg = bpg >= 0 ? cand[bpg] : -1;
    bug = bug >= 0 ? cand[bug] : -1;

    // ---- per face: V0 ept4 and the best ones, each face alone in its own launch ----
    std::vector<int> chosen = {v0_4};
    for (int c : {bp, bu, bpg, bug})
        if (c >= 0 && std::find(chosen.begin(), chosen.end(), c) == chosen.end())
            chosen.push_back(c);
    const double face_bytes = 2.0 * FACE_N * 8;
    for (int c : chosen) {
        char title[256];
        snprintf(title, sizeof title, "per face, each alone in its own launch: %s (%% at %.0f B)",
                 vs[c].name.c_str(), face_bytes);
        print_header(title);
        for (int k = 0; k < 6; ++k) {
            Row r = measure(vs[c], FaceList{k});
            r.name = std::string(FACES[k].name) + " face";
            print_row(r, face_bytes);
        }
        // x faces together, y faces together, z faces together.
        const char* pn[3] = {"x faces (2) together", "y faces (2) together", "z faces (2) together"};
        for (int d = 0; d < 3; ++d) {
            Row r = measure(vs[c], FaceList{2 * d, 2 * d + 1});
            r.name = pn[d];
            print_row(r, 2 * face_bytes);
        }
        Row r = measure(vs[c], FaceList{2, 3, 4, 5});
        r.name = "y+z faces (4) together";
        print_row(r, 4 * face_bytes);
    }
    // The candidates too, for the cold-L2 comparison below.
    for (int c : cand)
        if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);

    // ---- single launches, L2 warm and L2 flushed (256 MiB read before each) ----
    printf("\n== single launch between two events, median of 11: L2 warm vs L2 flushed ==\n");
    printf("%-44s | %6s | %16s | %16s\n", "variant", "op", "warm (us, %)", "flushed (us, %)");
    for (int c : chosen) {
        for (int pass = 0; pass < 2; ++pass) {
            const bool pack = pass == 0;
            Prep p;
            try {
                p = vs[c].prepare(ALL, pack);
                const std::string err = run_and_verify(vs[c], p, ALL, pack);
                if (!err.empty()) {
                    printf("%-44s | %6s | %s\n", vs[c].name.c_str(), pack ? "pack" : "unpack",
                           err.c_str());
                    p.release();
                    continue;
                }
                const Fn f = [&](cudaStream_t s) { vs[c].launch(p, pack, s); };
                const double w = time_single(f, false), fl = time_single(f, true);
                printf("%-44s | %6s | %8.2f (%5.1f%%) | %8.2f (%5.1f%%)\n", vs[c].name.c_str(),
                       pack ? "pack" : "unpack", w, pct(w, USEFUL_BYTES), fl,
                       pct(fl, USEFUL_BYTES));
                fflush(stdout);
            } catch (const CudaFail& e) {
                printf("%-44s | %6s | FAILED: %s\n", vs[c].name.c_str(), pack ? "pack" : "unpack",
                       e.what());
                p.release();
                fatal_if_sticky(e);
                continue;
            }
            p.release();
            if (!pack) reset_field();
        }
    }
    reset_field();

    print_summary();
    printf("\ndone\n");
    return 0;
}
