/*
 * best_kernel.cuh: the probe's "R" region mover (pack_variants.cu: r_body and its helpers),
 * written out for porting into kernels-cu/hp_regions.cuh. Same logic as measured, with the
 * probe's unused cache-hint branches (H1..H6) removed; H is 0 (plain), 7, 8 or 9 (L2
 * eviction priorities, see hp_fast_policies). f64 only (elem_bytes == 8): f32 was not probed.
 *
 * Include after hp_regions.cuh (it uses hp_region, hp_region_of, hp_move_region_words, HP_DEVICE).
 * Use: in hp_regions_block<PACK>, for a.elem_bytes == 8, call
 *     hp_move_region_fast<U, H, PACK>(regions, ri, local_block)
 * instead of hp_move_region<PACK>(a, r, local_block), and size regions on the host with
 * blocks = ceil(units / (threads * U)) where units = n, 2n (region with a partner) or n/2 (vec2).
 *
 * hp_region.reserved (the probe's encoding; the host sets it, 0 keeps today's behaviour):
 *   bits 0..15  partner index + 1 (0: none). The partner (same counts and strides) is moved by
 *               this region's blocks: unit u is element u/2 of this region (u even) or element
 *               (u/2 + shift) mod n of the partner (u odd). The partner's record has blocks = 0,
 *               first_block = the grid size, and is listed last.
 *   bits 16..18 shift code: 0: 0, 1: +1, 2: n-1 (i.e. -1), 3: +c0, 4: n-c0. For the x faces of
 *               a halo-1 field, partner of -x = +x with code 2: -x element e (x=1, row k) and +x
 *               element e-1 (x=512, row k-1) lie 24 bytes apart (pack), the halo words x=0 and
 *               x=513 8 bytes apart (unpack).
 *   bit 19      vec2: contiguous rows (stride[0] == 1, count[0] even, buffer 16-byte aligned),
 *               moved as pairs of elements, the buffer side one 16-byte access.
 * Outside the 32-bit range (units + U * blocks * threads >= 2^31, or a stride >= 2^32) the host
 * must leave reserved = 0; the block then runs the existing loop (hp_move_region_words).
 */
#ifndef HP_BEST_KERNEL_CUH
#define HP_BEST_KERNEL_CUH

#define HP_R_PARTNER_MASK 0xffffu
#define HP_R_SHIFT_SHIFT 16u
#define HP_R_VEC2_BIT (1u << 19)

/* n / d for n < 2^31, 2 <= d < 2^31: umulhi(n, mul) >> shr (CUTLASS FastDivmod form); mul == 0
 * stands for d == 1. */
HP_DEVICE uint32_t hp_fdiv(uint32_t n, uint32_t mul, uint32_t shr) {
    return mul ? (__umulhi(n, mul) >> shr) : n;
}

/* mul = ceil(2^(31+l) / d), shr = l - 1, l = ceil(log2 d): a double-precision quotient corrected
 * exactly in integers (no 64-bit integer division). Checked against the host formula for
 * d = 1..70000 and 30003 other d < 2^31 on the H200 (pack_variants.txt). */
HP_DEVICE void hp_fastdiv_init(uint32_t d, uint32_t& mul, uint32_t& shr) {
    if (d <= 1u) {
        mul = 0u;
        shr = 0u;
        return;
    }
    const uint32_t l = 32u - (uint32_t)__clz(d - 1u);
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
    mul = (uint32_t)(q + (rem != 0));
    shr = l - 1u;
}

HP_DEVICE uint64_t hp_mulwide(uint32_t a, uint32_t b) {
    uint64_t r;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(r) : "r"(a), "r"(b));
    return r;
}

/* The region as the fast path sees it (registers only). */
struct hp_fast_region {
    uint64_t field;  /* byte address of the first element (field + offset) */
    uint64_t buffer; /* byte address of the packed units */
    uint32_t c0, c1; /* units per row, rows per plane */
    uint32_t s0, s1, s2;
    uint32_t n; /* units */
    bool vec2;
};

HP_DEVICE uint64_t hp_fast_index(const hp_fast_region& r, uint32_t e, uint32_t m0, uint32_t r0,
                                 uint32_t m1, uint32_t r1) {
    const uint32_t q0 = hp_fdiv(e, m0, r0);
    const uint32_t i0 = e - q0 * r.c0;
    const uint32_t i2 = hp_fdiv(q0, m1, r1);
    const uint32_t i1 = q0 - i2 * r.c1;
    return hp_mulwide(i0, r.s0) + hp_mulwide(i1, r.s1) + hp_mulwide(i2, r.s2);
}

/* L2 eviction priorities (H): 0 none; 7 field accesses of strided regions (stride[0] != 1:
 * the x faces) evict_first; 8 every field access evict_first; 9 strided field accesses
 * evict_first, everything else (contiguous field rows, the buffer) evict_last. */
struct hp_acc {
    bool use;
    uint64_t pol;
};
HP_DEVICE uint64_t hp_pol_first() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
HP_DEVICE uint64_t hp_pol_last() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}
template <int H>
HP_DEVICE void hp_fast_policies(const hp_fast_region& r, hp_acc& fa, hp_acc& ba) {
    fa.use = ba.use = false;
    fa.pol = ba.pol = 0;
    if constexpr (H == 7) {
        if (r.s0 != 1) {
            fa.use = true;
            fa.pol = hp_pol_first();
        }
    } else if constexpr (H == 8) {
        fa.use = true;
        fa.pol = hp_pol_first();
    } else if constexpr (H == 9) {
        fa.use = true;
        fa.pol = r.s0 != 1 ? hp_pol_first() : hp_pol_last();
        ba.use = true;
        ba.pol = hp_pol_last();
    }
}
template <int H>
HP_DEVICE uint64_t hp_ld(const uint64_t* p, const hp_acc& a) {
    if (H != 0 && a.use) {
        uint64_t v;
        asm("ld.global.nc.L2::cache_hint.u64 %0, [%1], %2;" : "=l"(v) : "l"(p), "l"(a.pol));
        return v;
    }
    return *p;
}
template <int H>
HP_DEVICE void hp_st(uint64_t* p, uint64_t v, const hp_acc& a) {
    if (H != 0 && a.use) {
        asm volatile("st.global.L2::cache_hint.u64 [%0], %1, %2;" ::"l"(p), "l"(v), "l"(a.pol)
                     : "memory");
        return;
    }
    *p = v;
}
template <int H>
HP_DEVICE ulonglong2 hp_ld16(const ulonglong2* p, const hp_acc& a) {
    if (H != 0 && a.use) {
        ulonglong2 v;
        asm("ld.global.nc.L2::cache_hint.v2.u64 {%0, %1}, [%2], %3;"
            : "=l"(v.x), "=l"(v.y)
            : "l"(p), "l"(a.pol));
        return v;
    }
    return *p;
}
template <int H>
HP_DEVICE void hp_st16(ulonglong2* p, ulonglong2 v, const hp_acc& a) {
    if (H != 0 && a.use) {
        asm volatile("st.global.L2::cache_hint.v2.u64 [%0], {%1, %2}, %3;" ::"l"(p), "l"(v.x),
                     "l"(v.y), "l"(a.pol)
                     : "memory");
        return;
    }
    *p = v;
}

/* U units e0, e0 + ks, ... (those < n) of one region: all loads, then all stores. */
template <int U, int H, bool PACK>
HP_DEVICE void hp_fast_units(const hp_fast_region& r, uint32_t e0, uint32_t ks, uint32_t m0,
                             uint32_t r0, uint32_t m1, uint32_t r1, const hp_acc& fa,
                             const hp_acc& ba) {
    uint64_t* __restrict__ field = (uint64_t*)r.field;
    if (r.vec2) { /* a unit is 2 consecutive elements of a row (s0 == 1) */
        ulonglong2* __restrict__ buffer = (ulonglong2*)r.buffer;
        uint64_t fo[U];
        ulonglong2 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            const uint32_t q0 = hp_fdiv(e, m0, r0);
            const uint32_t i0 = e - q0 * r.c0;
            const uint32_t i2 = hp_fdiv(q0, m1, r1);
            const uint32_t i1 = q0 - i2 * r.c1;
            fo[k] = (uint64_t)(2u * i0) + hp_mulwide(i1, r.s1) + hp_mulwide(i2, r.s2);
        }
        if (PACK) {
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (e0 + (uint32_t)k * ks < r.n) {
                    v[k].x = hp_ld<H>(field + fo[k], fa);
                    v[k].y = hp_ld<H>(field + fo[k] + 1, fa);
                }
            }
#pragma unroll
            for (int k = 0; k < U; ++k) {
                const uint32_t e = e0 + (uint32_t)k * ks;
                if (e < r.n) hp_st16<H>(buffer + e, v[k], ba);
            }
        } else {
#pragma unroll
            for (int k = 0; k < U; ++k) {
                const uint32_t e = e0 + (uint32_t)k * ks;
                if (e < r.n) v[k] = hp_ld16<H>(buffer + e, ba);
            }
#pragma unroll
            for (int k = 0; k < U; ++k) {
                if (e0 + (uint32_t)k * ks < r.n) {
                    hp_st<H>(field + fo[k], v[k].x, fa);
                    hp_st<H>(field + fo[k] + 1, v[k].y, fa);
                }
            }
        }
        return;
    }
    uint64_t* __restrict__ buffer = (uint64_t*)r.buffer;
    uint64_t fo[U];
    uint64_t v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) fo[k] = hp_fast_index(r, e0 + (uint32_t)k * ks, m0, r0, m1, r1);
    if (PACK) {
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) v[k] = hp_ld<H>(field + fo[k], fa);
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            if (e < r.n) hp_st<H>(buffer + e, v[k], ba);
        }
    } else {
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const uint32_t e = e0 + (uint32_t)k * ks;
            if (e < r.n) v[k] = hp_ld<H>(buffer + e, ba);
        }
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) hp_st<H>(field + fo[k], v[k], fa);
    }
}

/* U units of a region with a partner (r.n = 2 * elements): even units are this region's
 * element u/2, odd units the partner's element (u/2 + shift) mod n, so the two elements that
 * share a sector or line go through neighbouring lanes of one warp instruction. */
template <int U, int H, bool PACK>
HP_DEVICE void hp_fast_pair(const hp_fast_region& r, uint64_t fieldB, uint64_t bufB,
                            uint32_t shift, uint32_t e0, uint32_t ks, uint32_t m0, uint32_t r0,
                            uint32_t m1, uint32_t r1, const hp_acc& fa, const hp_acc& ba) {
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
        fp[k] = (uint64_t*)(b ? fieldB : r.field) + hp_fast_index(r, e, m0, r0, m1, r1);
        bp[k] = (uint64_t*)(b ? bufB : r.buffer) + e;
    }
    uint64_t v[U];
    if (PACK) {
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) v[k] = hp_ld<H>(fp[k], fa);
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) hp_st<H>(bp[k], v[k], ba);
    } else {
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) v[k] = hp_ld<H>(bp[k], ba);
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (e0 + (uint32_t)k * ks < r.n) hp_st<H>(fp[k], v[k], fa);
    }
}

/* This block's units of region ri (f64). Replaces hp_move_region<PACK>(a, r, local_block). */
template <int U, int H, bool PACK>
HP_DEVICE void hp_move_region_fast(const hp_region* regions, uint32_t ri, uint32_t local_block) {
    const hp_region h = regions[ri];
    const uint64_t n = h.count[0] * h.count[1] * h.count[2];
    const uint32_t partner = h.reserved & HP_R_PARTNER_MASK;
    const bool vec2 = (h.reserved & HP_R_VEC2_BIT) != 0;
    const uint64_t units = partner ? 2 * n : (vec2 ? n / 2 : n);
    const uint64_t span = units + (uint64_t)h.blocks * blockDim.x * U;
    if (span >= 0x7fffffffull || ((h.stride[0] | h.stride[1] | h.stride[2]) >> 32) != 0) {
        hp_move_region_words<uint64_t, PACK>(h, local_block);
        return;
    }
    hp_fast_region r;
    r.field = (uint64_t)((uint64_t*)h.field + h.offset);
    r.buffer = h.buffer;
    r.c0 = (uint32_t)(vec2 ? h.count[0] / 2 : h.count[0]);
    r.c1 = (uint32_t)h.count[1];
    r.s0 = (uint32_t)h.stride[0];
    r.s1 = (uint32_t)h.stride[1];
    r.s2 = (uint32_t)h.stride[2];
    r.n = (uint32_t)units;
    r.vec2 = vec2;
    uint32_t m0, r0, m1, r1;
    hp_fastdiv_init(r.c0, m0, r0);
    hp_fastdiv_init(r.c1, m1, r1);
    hp_acc fa, ba;
    hp_fast_policies<H>(r, fa, ba);
    uint32_t e0 = local_block * blockDim.x + threadIdx.x;
    const uint32_t ks = h.blocks * blockDim.x; /* the region's threads */
    const uint32_t step = ks * U;
    if (partner) {
        const hp_region& b = regions[partner - 1];
        const uint64_t fieldB = (uint64_t)((uint64_t*)b.field + b.offset);
        const uint32_t nh = (uint32_t)n;
        const uint32_t code = (h.reserved >> HP_R_SHIFT_SHIFT) & 7u;
        const uint32_t shift = code == 1u   ? 1u
                               : code == 2u ? nh - 1u
                               : code == 3u ? r.c0
                               : code == 4u ? nh - r.c0
                                            : 0u;
        for (; e0 < r.n; e0 += step)
            hp_fast_pair<U, H, PACK>(r, fieldB, b.buffer, shift, e0, ks, m0, r0, m1, r1, fa, ba);
        return;
    }
    for (; e0 < r.n; e0 += step) hp_fast_units<U, H, PACK>(r, e0, ks, m0, r0, m1, r1, fa, ba);
}

#endif /* HP_BEST_KERNEL_CUH */
