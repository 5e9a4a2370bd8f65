/*
 * hp_regions.cuh: the library's halo-exchange kernels (SPEC 13), written once for CUDA and HIP.
 *
 *   hp_pack_regions    field -> packed buffer, for many regions in one launch
 *   hp_unpack_regions  packed buffer -> field
 *   hp_exchange_regions  both, for device-direct messages (HP_REGIONS_FUSED); _copies with a
 *                      rank's own messages copied into its halos (HP_REGIONS_FUSED_COPIES);
 *                      _w4, _w8 for one word size; hp_exchange_synthetic for synthetic regions
 *                      (HP_REGIONS_FUSED_SYNTHETIC); _few of each with a short parameter
 *   hp_{pack|unpack}_regions_w4, _w8   their plain form (HP_REGIONS_PLAIN in haloport_shared.h)
 *
 * Included, after hp_kernels.cuh, by the exchange entries (kernels-cu/haloport.cu,
 * kernels-hip/haloport.hip); the stencil's kernels are hp_stencil.cuh's, a compilation unit of
 * their own. The host backend mirrors both in backend-host/src/region_kernels.rs. The semantics are those of
 * the comments on hp_region, hp_message_signal, hp_regions_args and hp_stencil_args in
 * haloport_shared.h.
 *
 * Launch convention (regions): grid block g serves the region r with
 * first_block <= g < first_block + blocks (region g if it is g's alone, else found by binary
 * search, every thread alike, so the plain path needs no barrier); its threads take elements
 * e = (g - first_block) * blockDim.x + threadIdx.x, then + blocks * blockDim.x, ... Grid blocks
 * past the last region return at once.
 * Each element's field index is computed from e alone (no dependencies between threads); the
 * element numbering is 32-bit, dividing by magic numbers, when the region's elements plus
 * HP_UNROLL of the threads' strides stay below 2^31 and its strides below 2^32. A thread loads
 * HP_UNROLL of its elements before storing any. Callers number blocks with
 * haloport_core::regions::assign_blocks: ceil(elements / (threads * elems_per_thread)) per
 * region, ELEMS_PER_THREAD = 4 and 256 threads suggested.
 *
 * Messages: only blocks of a region with a message wait, count and raise flags; a region
 * without one (message == HP_NO_MESSAGE) moves its elements and returns: no barrier, no atomic
 * (one barrier, before its end stamp, when the launch records timestamps: a.times).
 * A region with a partner moves the partner's elements too, interleaved with its own (Pairs in
 * haloport_shared.h); the partner's record has no blocks of its own. A synthetic region (the
 * thesis's block) stores or checks the thesis's values instead of moving a field's.
 */
#ifndef HP_REGIONS_CUH
#define HP_REGIONS_CUH

#include <stddef.h>

#include "hp_compat.h"
#include "haloport_shared.h"

/* No region: what hp_region_of answers for a grid block past the last region. */
#define HP_REGION_NONE 0xffffffffu

/* Calls f with the launch's region table: its parameters' copy or the one in device memory,
 * each in a branch of its own, so that the compiler knows which memory every read of the table
 * goes to (the parameters' through the constant bank), not one pointer that may be either. */
template <typename F>
HP_DEVICE void hp_with_table(const hp_regions_args& a, F&& f) {
    if (a.table_inline) {
        f(a.inline_regions);
    } else {
        f((const hp_region*)a.regions);
    }
}

/* The region grid block `g` serves: the last region whose first_block <= g, if g lies inside
 * its blocks. Regions are sorted by first_block (the header's rule). Region g is asked first:
 * where every region has one block (a small exchange) it is the one, found without the search's
 * chain of dependent reads (results/HISTORY.md: h200-small-floor). */
HP_DEVICE uint32_t hp_region_of(const hp_region* regions, uint32_t num_regions, uint32_t g) {
    if (g < num_regions && regions[g].first_block == g && regions[g].blocks == 1u) return g;
    if (num_regions == 0 || g < regions[0].first_block) return HP_REGION_NONE;
    uint32_t lo = 0, hi = num_regions; /* invariant: first_block[lo] <= g < first_block[hi] */
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

/* n / d for n < 2^31 and 1 <= d < 2^31, by a multiply and a shift (the division's magic
 * number, CUTLASS's FastDivmod form): GPUs have no integer divider, and a division by a
 * variable costs some twenty instructions, two per element of a region. mul == 0 stands for
 * d == 1. */
HP_DEVICE uint32_t hp_fast_div(uint32_t n, uint32_t mul, uint32_t shift) {
    return mul != 0u ? (__umulhi(n, mul) >> shift) : n;
}

/* The magic number of d: mul = ceil(2^(31 + l) / d), shift = l - 1, l = ceil(log2 d), from a
 * double-precision quotient corrected exactly in integers (once per thread; no 64-bit integer
 * division). results/HISTORY.md: h200-pack-probe checked it against the exact division for
 * 100,003 divisors on an H200. */
HP_DEVICE void hp_fast_div_init(uint32_t d, uint32_t& mul, uint32_t& shift) {
    if (d <= 1u) {
        mul = 0u;
        shift = 0u;
        return;
    }
    const uint32_t l = 32u - (uint32_t)__clz((int)(d - 1u));
    const uint64_t num = 1ull << (31u + l);
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
    mul = (uint32_t)(q + (rem != 0 ? 1u : 0u));
    shift = l - 1u;
}

/* A region's index rule (haloport_shared.h) for element numbers below 2^31 and strides below
 * 2^32: divisions by magic numbers, 32 x 32 -> 64-bit products. */
struct hp_index32 {
    static constexpr int unroll = (int)HP_UNROLL;
    uint32_t c0, c1, mul0, shift0, mul1, shift1, s0, s1, s2;
    HP_DEVICE explicit hp_index32(const hp_region& r)
        : c0((uint32_t)r.count[0]), c1((uint32_t)r.count[1]), s0((uint32_t)r.stride[0]),
          s1((uint32_t)r.stride[1]), s2((uint32_t)r.stride[2]) {
        hp_fast_div_init(c0, mul0, shift0);
        hp_fast_div_init(c1, mul1, shift1);
    }
    HP_DEVICE uint64_t operator()(uint32_t e) const {
        const uint32_t rest = hp_fast_div(e, mul0, shift0);
        const uint32_t i2 = hp_fast_div(rest, mul1, shift1);
        const uint32_t i0 = e - rest * c0;
        const uint32_t i1 = rest - i2 * c1;
        return (uint64_t)i0 * s0 + (uint64_t)i1 * s1 + (uint64_t)i2 * s2;
    }
};

/* The same rule for any element number and stride (regions of 2^31 elements or more: one
 * element at a time, as 64-bit divisions take many registers). */
struct hp_index64 {
    static constexpr int unroll = 1;
    uint64_t c0, c1, s0, s1, s2;
    HP_DEVICE explicit hp_index64(const hp_region& r)
        : c0(r.count[0]), c1(r.count[1]), s0(r.stride[0]), s1(r.stride[1]), s2(r.stride[2]) {}
    HP_DEVICE uint64_t operator()(uint64_t e) const {
        const uint64_t rest = e / c0;
        return (e % c0) * s0 + (rest % c1) * s1 + (rest / c1) * s2;
    }
};

/* True when the 32-bit rule serves every number a thread of a region with `units` units
 * computes (HP_UNROLL steps of `step` past the last one included, so the group test cannot
 * wrap around either). */
HP_DEVICE bool hp_fits_index32(const hp_region& r, uint64_t units, uint64_t step) {
    return units + HP_UNROLL * step < 0x80000000ull &&
           ((r.stride[0] | r.stride[1] | r.stride[2]) >> 32) == 0;
}

/* Moves this block's elements of region r: PACK copies field -> buffer, else buffer -> field;
 * COPY (a pack of HP_PAYLOAD_COPY) stores element e at the buffer's index of its field index
 * rather than at e. W is the word type (uint32_t for f32, uint64_t for f64: bits, not values,
 * are moved); X the index rule (hp_index32 or hp_index64) and I its element number type. A
 * thread moves the same elements as one element at a time would, e, e + step, ..., in groups
 * of HP_UNROLL. */
template <typename W, typename I, typename X, bool PACK, bool COPY = false>
__device__ __forceinline__ void hp_move_region_as(const hp_region& r, uint32_t local_block,
                                                  I n) {
    W* __restrict__ field = (W*)r.field + r.offset;
    W* __restrict__ buffer = (W*)r.buffer;
    const X field_index(r);
    const I step = (I)r.blocks * (I)blockDim.x;
    I e = (I)local_block * (I)blockDim.x + (I)threadIdx.x;
    for (; e + (I)(X::unroll - 1) * step < n; e += (I)X::unroll * step) {
        uint64_t f[X::unroll];
        W v[X::unroll];
#pragma unroll
        for (int k = 0; k < X::unroll; ++k) f[k] = field_index(e + (I)k * step);
#pragma unroll
        for (int k = 0; k < X::unroll; ++k) v[k] = PACK ? field[f[k]] : buffer[e + (I)k * step];
#pragma unroll
        for (int k = 0; k < X::unroll; ++k) {
            if (PACK) {
                buffer[COPY ? f[k] : (uint64_t)(e + (I)k * step)] = v[k];
            } else {
                field[f[k]] = v[k];
            }
        }
    }
    for (; e < n; e += step) {
        const uint64_t f = field_index(e);
        if (PACK) {
            buffer[COPY ? f : (uint64_t)e] = field[f];
        } else {
            field[f] = buffer[e];
        }
    }
}

/* COPIES: whether the launch may hold HP_PAYLOAD_COPY regions (not hp_exchange_regions, whose
 * messages are all device-direct: without the path its registers stay as they were). */
template <typename W, bool PACK, bool COPIES>
__device__ __forceinline__ void hp_move_region_words(const hp_region& r, uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    const bool copy = PACK && COPIES && r.payload == HP_PAYLOAD_COPY;
    if (hp_fits_index32(r, n, step)) {
        if (copy) {
            hp_move_region_as<W, uint32_t, hp_index32, PACK, true>(r, local_block, (uint32_t)n);
        } else {
            hp_move_region_as<W, uint32_t, hp_index32, PACK>(r, local_block, (uint32_t)n);
        }
    } else if (copy) {
        hp_move_region_as<W, uint64_t, hp_index64, PACK, true>(r, local_block, n);
    } else {
        hp_move_region_as<W, uint64_t, hp_index64, PACK>(r, local_block, n);
    }
}

/* Moves this block's units of region r and its partner p (see Pairs in haloport_shared.h): unit
 * u is element u / 2 of r (u even) or element (u / 2 + n - 1) mod n of p (u odd); loads first,
 * HP_UNROLL units at a time, as hp_move_region_as (one at a time for an odd block size; COPY
 * as there: a pair is of one payload). */
template <typename W, typename I, typename X, bool PACK, bool COPY = false>
__device__ __forceinline__ void hp_move_pair_as(const hp_region& r, const hp_region& p,
                                                uint32_t local_block, I n) {
    /* Selected per unit, not indexed: an array indexed by u & 1 would live in local memory. */
    W* const field_r = (W*)r.field + r.offset;
    W* const field_p = (W*)p.field + p.offset;
    W* const buffer_r = (W*)r.buffer;
    W* const buffer_p = (W*)p.buffer;
    const X field_index(r);
    const I units = (I)2 * n;
    const I step = (I)r.blocks * (I)blockDim.x;
    const auto element = [&](I u) -> I {
        const I i = u >> 1;
        return (u & 1) ? (i == 0 ? n - 1 : i - 1) : i;
    };
    I u = (I)local_block * (I)blockDim.x + (I)threadIdx.x;
    if ((step & 1) == 0) {
        /* Then every unit of this thread has u's parity: its elements are all r's or all p's. */
        W* __restrict__ field = (u & 1) ? field_p : field_r;
        W* __restrict__ buffer = (u & 1) ? buffer_p : buffer_r;
        for (; u + (I)(X::unroll - 1) * step < units; u += (I)X::unroll * step) {
            uint64_t f[X::unroll];
            I e[X::unroll];
            W v[X::unroll];
#pragma unroll
            for (int k = 0; k < X::unroll; ++k) {
                e[k] = element(u + (I)k * step);
                f[k] = field_index(e[k]);
            }
#pragma unroll
            for (int k = 0; k < X::unroll; ++k) v[k] = PACK ? field[f[k]] : buffer[e[k]];
#pragma unroll
            for (int k = 0; k < X::unroll; ++k) {
                if (PACK) {
                    buffer[COPY ? f[k] : (uint64_t)e[k]] = v[k];
                } else {
                    field[f[k]] = v[k];
                }
            }
        }
    }
    for (; u < units; u += step) {
        const I e = element(u);
        const uint64_t i = field_index(e);
        W* f = ((u & 1) ? field_p : field_r) + i;
        W* b = ((u & 1) ? buffer_p : buffer_r) + (COPY ? i : (uint64_t)e);
        if (PACK) {
            *b = *f;
        } else {
            *f = *b;
        }
    }
}

template <typename W, bool PACK, bool COPIES>
__device__ __forceinline__ void hp_move_pair_words(const hp_region& r, const hp_region& p,
                                                   uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    const bool copy = PACK && COPIES && r.payload == HP_PAYLOAD_COPY;
    if (hp_fits_index32(r, 2 * n, step)) {
        if (copy) {
            hp_move_pair_as<W, uint32_t, hp_index32, PACK, true>(r, p, local_block, (uint32_t)n);
        } else {
            hp_move_pair_as<W, uint32_t, hp_index32, PACK>(r, p, local_block, (uint32_t)n);
        }
    } else if (copy) {
        hp_move_pair_as<W, uint64_t, hp_index64, PACK, true>(r, p, local_block, n);
    } else {
        hp_move_pair_as<W, uint64_t, hp_index64, PACK>(r, p, local_block, n);
    }
}

/* WORDS, the word sizes a kernel moves: HP_WORDS_ANY (a.elem_bytes says which), 4 or 8 (that
 * size alone), HP_WORDS_NARROW (1 or 2, a.elem_bytes says which) or HP_WORDS_SYNTHETIC (no
 * moves: a table of synthetic regions only, each with its message). A kernel of one word size
 * holds a third of the code (244 KB against 754 KB for the one launch of any size, sm_90), one
 * of synthetic regions a fourteenth, and a small exchange, whose blocks run a few hundred
 * instructions, spends less on fetching them (results/HISTORY.md: h200-small-floor). The _few
 * kernels halve that again (_few_w8 114 KB, hp_exchange_synthetic_few 17 KB; ipc-tq's kernel is
 * 10 KB): without the path of a table in device memory, and the synthetic form without the
 * unsignalled path (results/HISTORY.md: h200-host-path). */
#define HP_WORDS_ANY 0u
#define HP_WORDS_NARROW 0xfeu
#define HP_WORDS_SYNTHETIC 0xffu
template <bool PACK, bool COPIES, uint32_t WORDS>
__device__ __forceinline__ void hp_move_region(const hp_regions_args& a, const hp_region* regions,
                                               const hp_region& r, uint32_t local_block) {
    if (WORDS == HP_WORDS_SYNTHETIC) return;
    constexpr bool wide = WORDS != HP_WORDS_NARROW;
    const uint32_t elem_bytes =
        WORDS == HP_WORDS_ANY || WORDS == HP_WORDS_NARROW ? a.elem_bytes : WORDS;
    if (r.partner != 0) {
        const hp_region p = regions[r.partner - 1];
        if (wide && elem_bytes == 8) {
            hp_move_pair_words<uint64_t, PACK, COPIES>(r, p, local_block);
        } else if (wide && elem_bytes == 4) {
            hp_move_pair_words<uint32_t, PACK, COPIES>(r, p, local_block);
        } else if (elem_bytes == 2) {
            hp_move_pair_words<uint16_t, PACK, COPIES>(r, p, local_block);
        } else if (elem_bytes == 1) {
            hp_move_pair_words<uint8_t, PACK, COPIES>(r, p, local_block);
        }
        return;
    }
    if (wide && elem_bytes == 8) {
        hp_move_region_words<uint64_t, PACK, COPIES>(r, local_block);
    } else if (wide && elem_bytes == 4) {
        hp_move_region_words<uint32_t, PACK, COPIES>(r, local_block);
    } else if (elem_bytes == 2) {
        hp_move_region_words<uint16_t, PACK, COPIES>(r, local_block);
    } else if (elem_bytes == 1) {
        hp_move_region_words<uint8_t, PACK, COPIES>(r, local_block);
    }
    /* Any other word size moves nothing (the backends refuse such launches up front). */
}

/* The run [begin, end) of a synthetic region's n elements that its block `local_block` of
 * `blocks` serves (haloport_shared.h; haloport_core::regions::synthetic_run). */
HP_DEVICE void hp_synthetic_run(uint64_t n, uint32_t blocks, uint32_t local_block,
                                uint64_t& begin, uint64_t& end) {
    if (blocks == 1u) {
        /* The whole region, without the 64-bit division below. */
        begin = 0;
        end = n;
        return;
    }
    const uint64_t align = HP_SYNTHETIC_RUN_ALIGN;
    const uint64_t per = ((n + blocks - 1) / blocks + align - 1) / align * align;
    begin = min(n, (uint64_t)local_block * per);
    end = min(n, begin + per);
}

/* What a block of a synthetic region (HP_PAYLOAD_SYNTHETIC in haloport_shared.h) works out
 * before its wait, needing no data: its run [begin, end) and, for the unpack's sample of the
 * region, this thread's part. Worked out after the wait, this arithmetic (the sample's division
 * among it) ran once the data had come, on a path of one warp in a small exchange: small's
 * unpack blocks took 1.18 us against ipc-tq's 0.90, and 0.90-0.93 planned ahead
 * (docs/results.md#stencil-step-on-one-h200). */
struct hp_synthetic_plan {
    uint64_t begin;
    uint64_t end;
    hp_sample sample;
};

template <bool PACK>
HP_DEVICE hp_synthetic_plan hp_plan_synthetic(const hp_regions_args& a, const hp_region& r,
                                              uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    hp_synthetic_plan p;
    hp_synthetic_run(n, r.blocks, local_block, p.begin, p.end);
    /* The thesis's sample of the whole region, by its first grid block; none by the rest. */
    const bool samples = !PACK && a.verify != HP_VERIFY_FULL && local_block == 0;
    p.sample = hp_sample_of(0, samples ? n : 0);
    return p;
}

/* This block's elements of a synthetic region, its run (`p`, hp_plan_synthetic): pack stores the
 * thesis's values, unpack checks every one, or its part of the sample, and writes the block's
 * check record. */
template <bool PACK>
__device__ void hp_synthetic_region(const hp_regions_args& a, const hp_region& r,
                                    const hp_synthetic_plan& p) {
    const int32_t rank = (int32_t)(uint32_t)(r.offset >> 32);
    const uint32_t block = (uint32_t)r.offset;
    double* buffer = (double*)r.buffer;
    /* Read once: a store through `buffer` may alias `a` as far as the compiler knows, so
     * a.iteration read in the loop was loaded again after every store, on each store's path. */
    const uint32_t iteration = a.iteration;
    uint64_t e = p.begin + threadIdx.x;
    if (PACK) {
        for (; e < p.end; e += blockDim.x) buffer[e] = hp_packed_value(iteration, rank, block, e);
        return;
    }
    if (a.checks == 0) return;
    hp_thread_checks c = {0, 0, 0, 0.0, 0.0};
    if (a.verify == HP_VERIFY_FULL) {
        for (; e < p.end; e += blockDim.x) {
            hp_check_one(c, buffer, e, hp_packed_value(iteration, rank, block, e));
        }
    } else {
        hp_check_sample(c, buffer, p.sample, iteration, rank, block);
    }
    hp_fold_checks(c, (hp_block_check*)a.checks + blockIdx.x);
}

/* Whether region r's payload is synthetic in a kernel of WORDS (a synthetic region's words are
 * 8 bytes; a launch of another size moves nothing of it). */
template <uint32_t WORDS>
HP_DEVICE bool hp_synthetic_in(const hp_regions_args& a, const hp_region& r) {
    return WORDS != 4u && WORDS != HP_WORDS_NARROW && r.payload == HP_PAYLOAD_SYNTHETIC &&
           a.elem_bytes == 8;
}

/* hp_plan_synthetic where r is synthetic (hp_synthetic_in), else nothing. */
template <bool PACK, uint32_t WORDS>
HP_DEVICE hp_synthetic_plan hp_plan_payload(const hp_regions_args& a, const hp_region& r,
                                            uint32_t local_block) {
    if (!hp_synthetic_in<WORDS>(a, r)) return hp_synthetic_plan{0, 0, {0, 0, 0}};
    return hp_plan_synthetic<PACK>(a, r, local_block);
}

/* This block's part of region r, whatever its payload (COPIES: as hp_move_region_words;
 * WORDS: as hp_move_region). `ahead`: r's plan (hp_plan_payload), or null to work it out here,
 * where only a synthetic region's path holds it. */
template <bool PACK, bool COPIES, uint32_t WORDS = HP_WORDS_ANY>
__device__ __forceinline__ void hp_region_payload(const hp_regions_args& a,
                                                  const hp_region* regions, const hp_region& r,
                                                  uint32_t local_block,
                                                  const hp_synthetic_plan* ahead) {
    if (r.payload != HP_PAYLOAD_SYNTHETIC) {
        hp_move_region<PACK, COPIES, WORDS>(a, regions, r, local_block);
    } else if (hp_synthetic_in<WORDS>(a, r)) {
        hp_synthetic_region<PACK>(a, r,
                                  ahead ? *ahead : hp_plan_synthetic<PACK>(a, r, local_block));
    }
}

/* This launch's epoch: its own, moved on by the replays of its graph (epoch_base). */
HP_DEVICE uint64_t hp_epoch(const hp_regions_args& a) {
    return a.epoch_base ? a.epoch + *(const volatile uint64_t*)a.epoch_base : a.epoch;
}

/* Thread 0 waits until *wait + wait_lag >= epoch, giving up after timeout_ticks or when
 * *abort_flag >= epoch. Returns HP_MESSAGE_OK, HP_MESSAGE_TIMED_OUT or HP_MESSAGE_ABORTED. */
HP_DEVICE uint32_t hp_message_wait(const hp_regions_args& a, const hp_message_signal& m,
                                   uint64_t epoch) {
    if (m.wait == 0 || m.wait_lag >= epoch) return HP_MESSAGE_OK;
    const uint64_t wait_min = epoch - m.wait_lag;
    const uint64_t* flag = (const uint64_t*)m.wait;
    const uint64_t* abort_flag = (const uint64_t*)a.abort_flag;
    const uint64_t since = hp_timer();
    for (uint32_t spins = 0;; ++spins) {
        /* Relaxed polls, one acquire once the flag is seen (hp_load_relaxed_system). */
        if (hp_load_relaxed_system_u64(flag) >= wait_min) {
            hp_load_acquire_system_u64(flag);
            return HP_MESSAGE_OK;
        }
        /* The abort flag (device memory: read across PCIe from pinned memory, it slowed every
         * kernel beside the waiting blocks) and the timer are a second read and a clock read:
         * look at them every 64th poll only (the first included, so a raised abort is seen at
         * once). */
        if ((spins & 63u) == 0u) {
            if (abort_flag && hp_load_relaxed_system_u64(abort_flag) >= epoch) {
                return HP_MESSAGE_ABORTED;
            }
            if (hp_timer() - since > a.timeout_ticks) return HP_MESSAGE_TIMED_OUT;
        }
    }
}

/* Stamps this grid block's start (END false) or end of the launch's side, pack_* or unpack_*,
 * in hp_block_times[] at `times`. */
template <bool PACK, bool END>
__device__ __forceinline__ void hp_regions_stamp_inline(uint64_t times) {
    hp_block_times* t = (hp_block_times*)times + blockIdx.x;
    const uint64_t now = hp_timer();
    if (PACK) {
        if (END) {
            t->pack_end = now;
        } else {
            t->pack_start = now;
        }
    } else if (END) {
        t->unpack_end = now;
    } else {
        t->unpack_start = now;
    }
}

/* hp_regions_stamp_inline, not inlined: inlined, its few registers pushed the full form's
 * signalling (at the 64 of HP_REGIONS_MAX_THREADS) into spilling a message's counter across the
 * moves, with timestamps off too (ptxas, sm_90); a call costs only where they are on. */
template <bool PACK, bool END>
__device__ __noinline__ void hp_regions_stamp_at(uint64_t times) {
    hp_regions_stamp_inline<PACK, END>(times);
}

/* hp_regions_stamp_at when the launch records timestamps (a.times, read from the parameters at
 * each stamp, so that no register holds it across the block's moves). INLINE: the stamp inlined
 * where no moves compete for registers (HP_WORDS_SYNTHETIC): a call costs its spills. */
template <bool PACK, bool END, bool INLINE = false>
HP_DEVICE void hp_regions_stamp(const hp_regions_args& a) {
    if (a.times == 0) return;
    if (INLINE) {
        hp_regions_stamp_inline<PACK, END>(a.times);
    } else {
        hp_regions_stamp_at<PACK, END>(a.times);
    }
}

HP_DEVICE void hp_raise_done(const hp_regions_args& a);

/* One grid block's part of a side (PACK: field -> buffer, else buffer -> field) once its region
 * is known: `r`, of the side's table `regions`, and `signal`, its message's signalling (read
 * only where r has a message and the launch a message table). With a.times, thread 0 stamps the
 * block's start and end (haloport_shared.h). DONE (the one launch's unpack side): a block that
 * moved a signalled message's region raises its done word (a.done) right after its message's
 * fence, its end stamp taken before that fence, so the one fence orders everything the host
 * reads (ipc-tq's chunks also end with one); returns whether it did (the same in every thread
 * of the block). */
template <bool PACK, bool DONE = false, bool COPIES = PACK, uint32_t WORDS = HP_WORDS_ANY>
__device__ __forceinline__ bool hp_region_block(const hp_regions_args& a, const hp_region* regions,
                                                const hp_region& r,
                                                const hp_message_signal* signal) {
    constexpr bool inline_stamps = WORDS == HP_WORDS_SYNTHETIC;
    const uint32_t local_block = blockIdx.x - r.first_block;
    if (r.message == HP_NO_MESSAGE || a.messages == 0) {
        /* The synthetic form signals every region (HP_REGIONS_FUSED_SYNTHETIC): without the
         * unsignalled path its kernels hold a third less code. */
        if (WORDS == HP_WORDS_SYNTHETIC) return false;
        if (threadIdx.x == 0) hp_regions_stamp<PACK, false, inline_stamps>(a);
        hp_region_payload<PACK, COPIES, WORDS>(a, regions, r, local_block, 0);
        if (a.times != 0) {
            /* The end once every thread moved its elements (a.times is the launch's: every
             * thread of the block reaches the barrier). */
            __syncthreads();
            if (threadIdx.x == 0) hp_regions_stamp<PACK, true, inline_stamps>(a);
        }
        return false;
    }

    const hp_message_signal m = *signal;
    /* The synthetic form works out its payload's arithmetic before the wait (hp_plan_payload);
     * kernels that move words keep those registers for their moves. */
    constexpr bool ahead = WORDS == HP_WORDS_SYNTHETIC;
    hp_synthetic_plan plan = {0, 0, {0, 0, 0}};
    if (ahead) plan = hp_plan_payload<PACK, WORDS>(a, r, local_block);
    __shared__ uint32_t outcome;
    /* Only thread 0 waits and signals: only it reads the epoch. */
    const uint64_t epoch = threadIdx.x == 0 ? hp_epoch(a) : 0;
    if (threadIdx.x == 0) {
        /* Pack's start includes its wait for the slot; unpack's starts when its data came. */
        if (PACK) hp_regions_stamp<PACK, false, inline_stamps>(a);
        /* The outcome in a register: read back from shared memory after the start stamp's
         * store (which may alias it, as far as the compiler knows), it sat on the path to the
         * barrier (SASS, sm_90). */
        const uint32_t waited = hp_message_wait(a, m, epoch);
        outcome = waited;
        if (!PACK && waited == HP_MESSAGE_OK) hp_regions_stamp<PACK, false, inline_stamps>(a);
        if (waited != HP_MESSAGE_OK && a.status != 0) {
            hp_store_release_system((uint32_t*)a.status + r.message, waited);
        }
    }
    /* Broadcasts the outcome; with thread 0's acquire, orders every thread's accesses after
     * the wait (the peer's data is there, or the peer has freed the slot). */
    __syncthreads();
    if (outcome != HP_MESSAGE_OK) return false;

    hp_region_payload<PACK, COPIES, WORDS>(a, regions, r, local_block, ahead ? &plan : 0);
    /* The barrier orders every thread's moves before thread 0's (CTA scope). */
    __syncthreads();
    if (threadIdx.x == 0) {
        if (DONE) hp_regions_stamp<PACK, true, inline_stamps>(a);
        /* A message of several blocks counts them at device scope, acquire-release: each count
         * releases its block's moves to the block that counts last, which acquires them all (a
         * release sequence on the counter). A u32 count compared modulo 2^32: it gains exactly
         * m.blocks per epoch. */
        const bool last = m.blocks == 1u || hp_count_acq_rel_device((uint32_t*)m.counter) + 1u ==
                                                (uint32_t)(epoch * m.blocks);
        /* Then one acq_rel fence at system scope, cumulative, releases every block's moves with
         * the flag (the fence followed by a strong store is a release pattern, PTX memory
         * model), and a done block's work with its done word; the other blocks of a pack need
         * none. Each block fenced at system scope before its count and the last fenced again
         * before the flag: that second fence cost thesis-9 3 us on 2 x H200
         * (results/HISTORY.md: h200-lib-blocks). A sequentially consistent fence per thread
         * would serialize the whole launch. */
        if (last || DONE) hp_fence_acq_rel_system();
        if (last && m.flag != 0) hp_store_relaxed_system_u64((uint64_t*)m.flag, epoch);
        if (DONE) {
            /* The flag's store is not ordered before the done word: the host, which polls
             * the done words, reads no flag, and waits for the launch's event before peers may
             * free what the flags point at (MessageExchange::close). */
            hp_raise_done(a);
        } else {
            hp_regions_stamp<PACK, true, inline_stamps>(a);
        }
    }
    return DONE;
}

/* One grid block of hp_pack_regions (PACK) or hp_unpack_regions; `regions` is the side's table
 * of `num_regions` regions (as hp_region_block). */
template <bool PACK, bool DONE = false, bool COPIES = PACK, uint32_t WORDS = HP_WORDS_ANY>
__device__ __forceinline__ bool hp_regions_block(const hp_regions_args& a,
                                                 const hp_region* regions, uint32_t num_regions) {
    const uint32_t ri = hp_region_of(regions, num_regions, blockIdx.x);
    if (ri == HP_REGION_NONE) return false;
    const hp_region r = regions[ri];
    const hp_message_signal* signal =
        r.message == HP_NO_MESSAGE ? 0 : (const hp_message_signal*)a.messages + r.message;
    return hp_region_block<PACK, DONE, COPIES, WORDS>(a, regions, r, signal);
}

/* The most threads a block of the region kernels may have (the devices' limit): the compiler
 * keeps their registers within what a block of that many needs, so any block size launches. */
#define HP_REGIONS_MAX_THREADS 1024

/* A launch of the full form: the kernel's parameter `a` read in place, its table wherever it
 * lies. */
template <bool PACK>
HP_DEVICE void hp_regions_launch(const hp_regions_args& a) {
    const hp_regions_args& args = hp_args_in_place(a);
    hp_with_table(args, [&](const hp_region* regions) {
        hp_regions_block<PACK>(args, regions, args.num_regions);
    });
}

/* field -> buffer for every region of the launch (see the file comment). */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_pack_regions(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_regions_launch<true>(a);
}

/* buffer -> field for every region of the launch (see the file comment). */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_unpack_regions(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_regions_launch<false>(a);
}

/* With a.done: raises this grid block's done word. Thread 0's fence orders the block's work
 * before it (the barrier orders every thread's before thread 0's fence, as in
 * hp_regions_block). All threads call it. */
HP_DEVICE void hp_launch_done(const hp_regions_args& a) {
    if (a.done == 0) return;
    __syncthreads();
    if (threadIdx.x != 0) return;
    hp_fence_acq_rel_system();
    hp_raise_done(a);
}

/* Thread 0 of a grid block whose work an acq_rel fence at system scope already ordered: raises
 * the block's own done word, a.done[blockIdx.x], to the epoch (the fence and the strong store a
 * release). The host reads every block's word: no shared count, whose atomic round trip and
 * second fence sat on the launch's tail (results/HISTORY.md: h200-lib-latency). */
HP_DEVICE void hp_raise_done(const hp_regions_args& a) {
    if (a.done == 0) return;
    hp_store_relaxed_system_u64((uint64_t*)a.done + blockIdx.x, a.epoch);
}

/* What a grid block of a one launch whose table lies in device memory works on, side 0 its pack
 * and side 1 its unpack: the regions (index HP_REGION_NONE where it serves none), their
 * messages and their messages' signalling. */
struct hp_block_plan {
    hp_region region[2];
    hp_message_signal signal[2];
    uint32_t index[2];
    uint32_t message[2];
};

/* Words of a region and of a signal, and the words a thread of hp_plan_block loads before it
 * stores any. */
#define HP_REGION_WORDS ((uint32_t)(sizeof(hp_region) / sizeof(uint64_t)))
#define HP_SIGNAL_WORDS ((uint32_t)(sizeof(hp_message_signal) / sizeof(uint64_t)))
#define HP_PLAN_LOADS 4

/* Where each side's region lies in the table `regions` (the pack side's, then the unpack
 * side's) and its message, into `plan`: the block's threads take the table's regions in turn,
 * their loads independent (one round where the table is no longer than the block). */
HP_DEVICE void hp_plan_regions(const hp_regions_args& a, const hp_region* regions,
                               hp_block_plan& plan) {
    const uint32_t num_pack = a.num_regions;
    const uint32_t total = num_pack + a.num_unpack_regions;
    if (threadIdx.x < 2) {
        plan.index[threadIdx.x] = HP_REGION_NONE;
        plan.message[threadIdx.x] = HP_NO_MESSAGE;
    }
    __syncthreads();
    /* At most one region of each side holds this grid block. */
    for (uint32_t t = threadIdx.x; t < total; t += blockDim.x) {
        const uint32_t first = regions[t].first_block;
        const uint32_t blocks = regions[t].blocks;
        const uint32_t message = regions[t].message;
        if (blockIdx.x >= first && blockIdx.x - first < blocks) {
            const uint32_t side = t < num_pack ? 0u : 1u;
            plan.index[side] = t - (side == 0u ? 0u : num_pack);
            plan.message[side] = message;
        }
    }
    __syncthreads();
}

/* Word w of the plan's second round: a word of a side's region (w < 2 * HP_REGION_WORDS), then
 * of a side's signal; its source in `from` and its place in `to`, both null where the side has
 * none. */
HP_DEVICE void hp_plan_word(const hp_regions_args& a, const hp_region* regions,
                            hp_block_plan& plan, uint32_t w, const uint64_t*& from,
                            uint64_t*& to) {
    from = 0;
    to = 0;
    if (w < 2u * HP_REGION_WORDS) {
        const uint32_t side = w / HP_REGION_WORDS, k = w % HP_REGION_WORDS;
        if (plan.index[side] == HP_REGION_NONE) return;
        const uint32_t ri = (side == 0u ? 0u : a.num_regions) + plan.index[side];
        from = (const uint64_t*)(regions + ri) + k;
        to = (uint64_t*)&plan.region[side] + k;
        return;
    }
    w -= 2u * HP_REGION_WORDS;
    if (w >= 2u * HP_SIGNAL_WORDS) return;
    const uint32_t side = w / HP_SIGNAL_WORDS, k = w % HP_SIGNAL_WORDS;
    if (plan.message[side] == HP_NO_MESSAGE || a.messages == 0) return;
    from = (const uint64_t*)((const hp_message_signal*)a.messages + plan.message[side]) + k;
    to = (uint64_t*)&plan.signal[side] + k;
}

/* Fills `plan` (shared memory) for this grid block from a table in device memory: where its
 * regions lie, then both regions and their signalling in one round of independent loads spread
 * over the block's threads. Looked up a side at a time, each lookup was a chain of dependent
 * loads from device memory (a binary search of the table, the region, its signalling), the
 * unpack side's between this block's pack and its unpack (results/HISTORY.md: h200-block-plan).
 * All threads call it. */
HP_DEVICE void hp_plan_block(const hp_regions_args& a, const hp_region* regions,
                             hp_block_plan& plan) {
    hp_plan_regions(a, regions, plan);
    const uint32_t words = 2u * (HP_REGION_WORDS + HP_SIGNAL_WORDS);
    for (uint32_t base = 0; base < words; base += HP_PLAN_LOADS * blockDim.x) {
        const uint64_t* from[HP_PLAN_LOADS];
        uint64_t* to[HP_PLAN_LOADS];
        uint64_t value[HP_PLAN_LOADS];
#pragma unroll
        for (int j = 0; j < HP_PLAN_LOADS; ++j) {
            hp_plan_word(a, regions, plan, base + (uint32_t)j * blockDim.x + threadIdx.x, from[j],
                         to[j]);
        }
#pragma unroll
        for (int j = 0; j < HP_PLAN_LOADS; ++j) value[j] = from[j] ? *from[j] : 0;
#pragma unroll
        for (int j = 0; j < HP_PLAN_LOADS; ++j) {
            if (to[j]) *to[j] = value[j];
        }
    }
    __syncthreads();
}

/* An exchange of device-direct messages in one launch (HP_REGIONS_FUSED in haloport_shared.h):
 * this block's pack block, then its unpack block, then its done word (in the unpack block's
 * signalling where it moved a message's region). A table inline is read in place, a side at a
 * time, through the constant bank: planned ahead (its signalling, or its regions too, copied
 * to shared memory first) small and thesis-9 were slower (results/HISTORY.md: h200-block-plan).
 * A table in device memory is planned first (hp_plan_block). COPIES: the pack side may hold
 * HP_PAYLOAD_COPY regions (HP_REGIONS_FUSED_COPIES). INLINE_ONLY: the table is inline (the
 * caller checked), and the path of a table in device memory is not built. */
template <bool COPIES, uint32_t WORDS = HP_WORDS_ANY, bool INLINE_ONLY = false>
HP_DEVICE void hp_exchange_launch(const hp_regions_args& args) {
    if (INLINE_ONLY || args.table_inline) {
        const hp_region* regions = args.inline_regions;
        hp_regions_block<true, false, COPIES, WORDS>(args, regions, args.num_regions);
        if (!hp_regions_block<false, true, false, WORDS>(args, regions + args.num_regions,
                                           args.num_unpack_regions)) {
            hp_launch_done(args);
        }
        return;
    }
    __shared__ hp_block_plan plan;
    const hp_region* regions = (const hp_region*)args.regions;
    hp_plan_block(args, regions, plan);
    if (plan.index[0] != HP_REGION_NONE) {
        hp_region_block<true, false, COPIES, WORDS>(args, regions, plan.region[0],
                                                    &plan.signal[0]);
    }
    const bool done = plan.index[1] != HP_REGION_NONE &&
                      hp_region_block<false, true, false, WORDS>(args, regions + args.num_regions,
                                                   plan.region[1], &plan.signal[1]);
    if (!done) hp_launch_done(args);
}

/* The one launch of 1- and 2-byte words: 4- and 8-byte ones take _w4 and _w8. */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_exchange_launch<false, HP_WORDS_NARROW>(hp_args_in_place(a));
}

/* hp_exchange_regions for one word size (HP_WORDS_ANY's note), and for a table of synthetic
 * regions only (HP_REGIONS_FUSED_SYNTHETIC). */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_w4(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_exchange_launch<false, 4u>(hp_args_in_place(a));
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_w8(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_exchange_launch<false, 8u>(hp_args_in_place(a));
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_synthetic(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_exchange_launch<false, HP_WORDS_SYNTHETIC>(hp_args_in_place(a));
}

/* The one launch whose pack side also copies a rank's own messages straight into its halos
 * (HP_REGIONS_FUSED_COPIES): an entry of its own, so that the one launch without copies keeps
 * its registers. */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_copies(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_exchange_launch<true>(hp_args_in_place(a));
}

/* hp_regions_args up to and with inline_regions[N): the parameter of the one launch for a table
 * of at most N regions inline (HP_INLINE_REGIONS_FEW in haloport_shared.h). */
template <uint32_t N>
struct hp_regions_args_upto {
    alignas(8) unsigned char bytes[offsetof(hp_regions_args, inline_regions) +
                                   N * sizeof(hp_region)];
};

/* hp_exchange_regions over `a`, read as an hp_regions_args whose inline table holds at most N
 * regions: the same code over a shorter parameter, without the path of a table in device
 * memory (half the code). A launch with more regions inline would read past its parameter, and
 * one with its table in device memory has no code here: either moves nothing and raises no done
 * word, so the host's wait reports the launch as ended without them. */
template <uint32_t N, uint32_t WORDS = HP_WORDS_ANY>
HP_DEVICE void hp_exchange_launch_upto(const hp_regions_args_upto<N>& a) {
    const hp_regions_args& args = *(const hp_regions_args*)(const void*)&a;
    if (!args.table_inline || args.num_regions + args.num_unpack_regions > N) return;
    hp_exchange_launch<false, WORDS, true>(args);
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_few(const HP_GRID_CONSTANT hp_regions_args_upto<HP_INLINE_REGIONS_FEW> a) {
    hp_exchange_launch_upto<HP_INLINE_REGIONS_FEW, HP_WORDS_NARROW>(hp_args_in_place(a));
}

/* hp_exchange_regions_few as hp_exchange_regions_w4, _w8 and hp_exchange_synthetic. */
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_few_w4(const HP_GRID_CONSTANT hp_regions_args_upto<HP_INLINE_REGIONS_FEW> a) {
    hp_exchange_launch_upto<HP_INLINE_REGIONS_FEW, 4u>(hp_args_in_place(a));
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_regions_few_w8(const HP_GRID_CONSTANT hp_regions_args_upto<HP_INLINE_REGIONS_FEW> a) {
    hp_exchange_launch_upto<HP_INLINE_REGIONS_FEW, 8u>(hp_args_in_place(a));
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS)
    hp_exchange_synthetic_few(const HP_GRID_CONSTANT hp_regions_args_upto<HP_INLINE_REGIONS_FEW> a) {
    hp_exchange_launch_upto<HP_INLINE_REGIONS_FEW, HP_WORDS_SYNTHETIC>(hp_args_in_place(a));
}

/* Moves a graph's epochs on (hp_epoch_args). */
extern "C" __global__ void hp_epoch_step(hp_epoch_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    uint64_t* word = (uint64_t*)a.word;
    *word = a.set ? a.value : *word + a.value;
}

/* Fused mode's credits and arrivals (hp_signal_args): one block, its threads taking the ops in
 * turn. */
extern "C" __global__ void hp_fused_signal(hp_signal_args a) {
    if (blockIdx.x != 0) return;
    const uint64_t e = *(const volatile uint64_t*)a.epoch + 1;
    const hp_word_op* ops = (const hp_word_op*)a.ops;
    for (uint32_t i = threadIdx.x; i < a.stores; i += blockDim.x) {
        hp_store_release_system_u64((uint64_t*)ops[i].addr, e * ops[i].per_epoch);
    }
    const uint64_t since = hp_timer();
    uint32_t* status = (uint32_t*)a.status;
    for (uint32_t i = threadIdx.x; i < a.waits; i += blockDim.x) {
        const hp_word_op w = ops[a.stores + i];
        const uint64_t* word = (const uint64_t*)w.addr;
        const uint64_t want = e * w.per_epoch;
        while (hp_load_relaxed_system_u64(word) < want) {
            if (hp_timer() - since > a.timeout_ticks) {
                atomicCAS(status, 0u, i + 1u);
                break;
            }
        }
        hp_load_acquire_system_u64(word);
    }
    __syncthreads();
    if (a.advance && threadIdx.x == 0 && *(volatile uint32_t*)status == 0u) {
        *(volatile uint64_t*)a.epoch = e;
    }
}

/* One grid block of the plain form (HP_REGIONS_PLAIN in haloport_shared.h) for words W: only
 * the 32-bit movers, so no path of another element size, index width, payload or message
 * holds registers (ptxas: 32 against 64 for the full form). */
template <typename W, bool PACK>
__device__ __forceinline__ void hp_plain_regions_block(const hp_region* regions,
                                                       uint32_t num_regions) {
    const uint32_t ri = hp_region_of(regions, num_regions, blockIdx.x);
    if (ri == HP_REGION_NONE) return;
    const hp_region r = regions[ri];
    const uint32_t local_block = blockIdx.x - r.first_block;
    const uint32_t n = (uint32_t)(r.count[0] * r.count[1] * r.count[2]);
    const bool copy = PACK && r.payload == HP_PAYLOAD_COPY;
    if (r.partner != 0) {
        const hp_region p = regions[r.partner - 1];
        if (copy) {
            hp_move_pair_as<W, uint32_t, hp_index32, PACK, true>(r, p, local_block, n);
        } else {
            hp_move_pair_as<W, uint32_t, hp_index32, PACK>(r, p, local_block, n);
        }
    } else if (copy) {
        hp_move_region_as<W, uint32_t, hp_index32, PACK, true>(r, local_block, n);
    } else {
        hp_move_region_as<W, uint32_t, hp_index32, PACK>(r, local_block, n);
    }
}

/* A launch of the plain form: the kernel's parameter `a` read in place, its table wherever it
 * lies. */
template <typename W, bool PACK>
HP_DEVICE void hp_plain_regions_launch(const hp_regions_args& a) {
    const hp_regions_args& args = hp_args_in_place(a);
    hp_with_table(args, [&](const hp_region* regions) {
        hp_plain_regions_block<W, PACK>(regions, args.num_regions);
    });
}

/* The plain form of hp_pack_regions and hp_unpack_regions, for 4- and 8-byte elements. Two
 * blocks of the most threads per SM hold them to 32 registers (ptxas spills none; left free,
 * it takes 50-58 for the two table branches and an SM holds fewer blocks). */
#define HP_PLAIN_MIN_BLOCKS 2
extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS, HP_PLAIN_MIN_BLOCKS)
    hp_pack_regions_w4(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_plain_regions_launch<uint32_t, true>(a);
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS, HP_PLAIN_MIN_BLOCKS)
    hp_pack_regions_w8(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_plain_regions_launch<uint64_t, true>(a);
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS, HP_PLAIN_MIN_BLOCKS)
    hp_unpack_regions_w4(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_plain_regions_launch<uint32_t, false>(a);
}

extern "C" __global__ void __launch_bounds__(HP_REGIONS_MAX_THREADS, HP_PLAIN_MIN_BLOCKS)
    hp_unpack_regions_w8(const HP_GRID_CONSTANT hp_regions_args a) {
    hp_plain_regions_launch<uint64_t, false>(a);
}

#endif /* HP_REGIONS_CUH */
