/*
 * hp_regions.cuh: the library's halo-exchange kernels (SPEC 13), written once for CUDA and HIP.
 *
 *   hp_pack_regions    field -> packed buffer, for many regions in one launch
 *   hp_unpack_regions  packed buffer -> field
 *   hp_stencil27       one Jacobi sweep of the 27-point stencil over a box (the application)
 *
 * Included, after hp_kernels.cuh, by the entries (kernels-cu/haloport.cu,
 * kernels-hip/haloport.hip); the host backend mirrors them in
 * backend-host/src/region_kernels.rs. The semantics are those of
 * the comments on hp_region, hp_message_signal, hp_regions_args and hp_stencil_args in
 * haloport_shared.h.
 *
 * Launch convention (regions): grid block g serves the region r with
 * first_block <= g < first_block + blocks (found by binary search, every thread alike, so the
 * plain path needs no barrier); its threads take elements e = (g - first_block) * blockDim.x +
 * threadIdx.x, then + blocks * blockDim.x, ... Grid blocks past the last region return at once.
 * Each element's field index is computed from e alone (no dependencies between threads); the
 * element numbering is 32-bit (cheaper divisions) when the region's elements plus HP_UNROLL of
 * the threads' strides stay below 2^32. A thread loads HP_UNROLL of its elements before storing
 * any. Callers number blocks with haloport_core::regions::assign_blocks:
 * ceil(elements / (threads * elems_per_thread)) per region, ELEMS_PER_THREAD = 4 and 256
 * threads suggested.
 *
 * Messages: only blocks of a region with a message wait, count and raise flags; a region
 * without one (message == HP_NO_MESSAGE) moves its elements and returns: no barrier, no atomic.
 * A region with a partner moves the partner's elements too, interleaved with its own (Pairs in
 * haloport_shared.h); the partner's record has no blocks of its own. A synthetic region (the
 * thesis's block) stores or checks the thesis's values instead of moving a field's.
 *
 * Launch convention (stencil): a 1-D grid over the box's points, x fastest; threads stride by
 * gridDim.x * blockDim.x, so any grid size covers the box (haloport_core::regions::
 * stencil_blocks gives one thread per point).
 */
#ifndef HP_REGIONS_CUH
#define HP_REGIONS_CUH

#include "hp_compat.h"
#include "haloport_shared.h"

/* No region: what hp_region_of answers for a grid block past the last region. */
#define HP_REGION_NONE 0xffffffffu

/* The region grid block `g` serves: the last region whose first_block <= g, if g lies inside
 * its blocks. Regions are sorted by first_block (the header's rule). */
HP_DEVICE uint32_t hp_region_of(const hp_region* regions, uint32_t num_regions, uint32_t g) {
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

/* Elements a thread moves at once, all loads before any store, so their memory latencies overlap
 * (results/2026-11-22-h200-pack-probe: with loads issued one at a time, a thread's strided
 * loads wait for each other). Matches ELEMS_PER_THREAD, the suggested grid sizing. */
#define HP_UNROLL 4

/* Moves this block's elements of region r: PACK copies field -> buffer, else buffer -> field.
 * W is the word type (uint32_t for f32, uint64_t for f64: bits, not values, are moved); I the
 * index type (uint32_t when the region's elements plus HP_UNROLL strides fit in 32 bits). A
 * thread moves the same elements as one element at a time would, e, e + step, ..., in groups
 * of HP_UNROLL. */
template <typename W, typename I, bool PACK>
__device__ __forceinline__ void hp_move_region_as(const hp_region& r, uint32_t local_block,
                                                  I n) {
    W* __restrict__ field = (W*)r.field + r.offset;
    W* __restrict__ buffer = (W*)r.buffer;
    const I c0 = (I)r.count[0];
    const I c1 = (I)r.count[1];
    const uint64_t s0 = r.stride[0], s1 = r.stride[1], s2 = r.stride[2];
    const I step = (I)r.blocks * (I)blockDim.x;
    const auto field_index = [&](I e) -> uint64_t {
        const I i0 = e % c0;
        const I rest = e / c0;
        const I i1 = rest % c1;
        const I i2 = rest / c1;
        return (uint64_t)i0 * s0 + (uint64_t)i1 * s1 + (uint64_t)i2 * s2;
    };
    I e = (I)local_block * (I)blockDim.x + (I)threadIdx.x;
    for (; e + (I)(HP_UNROLL - 1) * step < n; e += (I)HP_UNROLL * step) {
        uint64_t f[HP_UNROLL];
        W v[HP_UNROLL];
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) f[k] = field_index(e + (I)k * step);
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) v[k] = PACK ? field[f[k]] : buffer[e + (I)k * step];
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) {
            if (PACK) {
                buffer[e + (I)k * step] = v[k];
            } else {
                field[f[k]] = v[k];
            }
        }
    }
    for (; e < n; e += step) {
        const uint64_t f = field_index(e);
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
    /* HP_UNROLL steps (blocks * blockDim.x each) past the last element must fit too, or the
     * group test could wrap around. */
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    if (n + HP_UNROLL * step <= 0xffffffffull) {
        hp_move_region_as<W, uint32_t, PACK>(r, local_block, (uint32_t)n);
    } else {
        hp_move_region_as<W, uint64_t, PACK>(r, local_block, n);
    }
}

/* Moves this block's units of region r and its partner p (see Pairs in haloport_shared.h): unit
 * u is element u / 2 of r (u even) or element (u / 2 + n - 1) mod n of p (u odd); loads first,
 * HP_UNROLL units at a time, as hp_move_region_as. */
template <typename W, typename I, bool PACK>
__device__ __forceinline__ void hp_move_pair_as(const hp_region& r, const hp_region& p,
                                                uint32_t local_block, I n) {
    W* fields[2] = {(W*)r.field + r.offset, (W*)p.field + p.offset};
    W* buffers[2] = {(W*)r.buffer, (W*)p.buffer};
    const I c0 = (I)r.count[0];
    const I c1 = (I)r.count[1];
    const uint64_t s0 = r.stride[0], s1 = r.stride[1], s2 = r.stride[2];
    const I units = (I)2 * n;
    const I step = (I)r.blocks * (I)blockDim.x;
    const auto element = [&](I u) -> I {
        const I i = u >> 1;
        return (u & 1) ? (i == 0 ? n - 1 : i - 1) : i;
    };
    const auto field_index = [&](I e) -> uint64_t {
        const I i0 = e % c0;
        const I rest = e / c0;
        return (uint64_t)i0 * s0 + (uint64_t)(rest % c1) * s1 + (uint64_t)(rest / c1) * s2;
    };
    I u = (I)local_block * (I)blockDim.x + (I)threadIdx.x;
    for (; u + (I)(HP_UNROLL - 1) * step < units; u += (I)HP_UNROLL * step) {
        W* f[HP_UNROLL];
        W* b[HP_UNROLL];
        W v[HP_UNROLL];
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) {
            const I uk = u + (I)k * step;
            const I e = element(uk);
            f[k] = fields[uk & 1] + field_index(e);
            b[k] = buffers[uk & 1] + e;
        }
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) v[k] = PACK ? *f[k] : *b[k];
#pragma unroll
        for (int k = 0; k < HP_UNROLL; ++k) {
            if (PACK) {
                *b[k] = v[k];
            } else {
                *f[k] = v[k];
            }
        }
    }
    for (; u < units; u += step) {
        const I e = element(u);
        W* f = fields[u & 1] + field_index(e);
        W* b = buffers[u & 1] + e;
        if (PACK) {
            *b = *f;
        } else {
            *f = *b;
        }
    }
}

template <typename W, bool PACK>
__device__ __forceinline__ void hp_move_pair_words(const hp_region& r, const hp_region& p,
                                                   uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    if (2 * n + HP_UNROLL * step <= 0xffffffffull) {
        hp_move_pair_as<W, uint32_t, PACK>(r, p, local_block, (uint32_t)n);
    } else {
        hp_move_pair_as<W, uint64_t, PACK>(r, p, local_block, n);
    }
}

template <bool PACK>
__device__ __forceinline__ void hp_move_region(const hp_regions_args& a, const hp_region& r,
                                               uint32_t local_block) {
    if (r.partner != 0) {
        const hp_region p = ((const hp_region*)a.regions)[r.partner - 1];
        if (a.elem_bytes == 8) {
            hp_move_pair_words<uint64_t, PACK>(r, p, local_block);
        } else if (a.elem_bytes == 4) {
            hp_move_pair_words<uint32_t, PACK>(r, p, local_block);
        }
        return;
    }
    if (a.elem_bytes == 8) {
        hp_move_region_words<uint64_t, PACK>(r, local_block);
    } else if (a.elem_bytes == 4) {
        hp_move_region_words<uint32_t, PACK>(r, local_block);
    }
    /* Any other element size moves nothing (the backends refuse such launches up front). */
}

/* This block's elements of a synthetic region (HP_PAYLOAD_SYNTHETIC in haloport_shared.h), the
 * same elements a field region's block would move: pack stores the thesis's values, unpack
 * checks every one and writes the block's check record. */
template <bool PACK>
__device__ void hp_synthetic_region(const hp_regions_args& a, const hp_region& r,
                                    uint32_t local_block) {
    const uint64_t n = r.count[0] * r.count[1] * r.count[2];
    const int32_t rank = (int32_t)(uint32_t)(r.offset >> 32);
    const uint32_t block = (uint32_t)r.offset;
    double* buffer = (double*)r.buffer;
    const uint64_t step = (uint64_t)r.blocks * blockDim.x;
    uint64_t e = (uint64_t)local_block * blockDim.x + threadIdx.x;
    if (PACK) {
        for (; e < n; e += step) buffer[e] = hp_packed_value(a.iteration, rank, block, e);
        return;
    }
    if (a.checks == 0) return;
    hp_block_check* check = (hp_block_check*)a.checks + blockIdx.x;
    if (a.verify != HP_VERIFY_FULL) {
        /* The thesis's sample of the whole block, by the first grid block; none by the rest. */
        const hp_thread_checks none = {0, 0, 0, 0.0, 0.0};
        if (local_block == 0) {
            hp_check_range(buffer, 0, n, HP_VERIFY_SAMPLE, a.iteration, rank, block, check);
        } else {
            hp_fold_checks(none, check);
        }
        return;
    }
    hp_thread_checks c = {0, 0, 0, 0.0, 0.0};
    for (; e < n; e += step) hp_check_one(c, buffer, e, hp_packed_value(a.iteration, rank, block, e));
    hp_fold_checks(c, check);
}

/* This block's part of region r, whatever its payload. */
template <bool PACK>
__device__ __forceinline__ void hp_region_payload(const hp_regions_args& a, const hp_region& r,
                                                  uint32_t local_block) {
    if (r.payload == HP_PAYLOAD_SYNTHETIC) {
        if (a.elem_bytes == 8) hp_synthetic_region<PACK>(a, r, local_block);
    } else {
        hp_move_region<PACK>(a, r, local_block);
    }
}

/* Thread 0 waits until *wait + wait_lag >= epoch, giving up after timeout_ticks or when
 * *abort_flag >= epoch. Returns HP_MESSAGE_OK, HP_MESSAGE_TIMED_OUT or HP_MESSAGE_ABORTED. */
HP_DEVICE uint32_t hp_message_wait(const hp_regions_args& a, const hp_message_signal& m) {
    if (m.wait == 0 || m.wait_lag >= a.epoch) return HP_MESSAGE_OK;
    const uint32_t wait_min = a.epoch - m.wait_lag;
    const uint32_t* flag = (const uint32_t*)m.wait;
    const uint32_t* abort_flag = (const uint32_t*)a.abort_flag;
    const uint64_t since = hp_timer();
    for (uint32_t spins = 0;; ++spins) {
        if (hp_load_acquire_system(flag) >= wait_min) return HP_MESSAGE_OK;
        /* The abort flag and the timer are a second (PCIe) read and a clock read: look at them
         * every 64th poll only (the first included, so a raised abort is seen at once). */
        if ((spins & 63u) == 0u) {
            if (abort_flag && hp_load_acquire_system(abort_flag) >= a.epoch) {
                return HP_MESSAGE_ABORTED;
            }
            if (hp_timer() - since > a.timeout_ticks) return HP_MESSAGE_TIMED_OUT;
        }
    }
}

/* One grid block of hp_pack_regions (PACK) or hp_unpack_regions. */
template <bool PACK>
__device__ void hp_regions_block(const hp_regions_args& a) {
    const hp_region* regions = (const hp_region*)a.regions;
    const uint32_t ri = hp_region_of(regions, a.num_regions, blockIdx.x);
    if (ri == HP_REGION_NONE) return;
    const hp_region r = regions[ri];
    const uint32_t local_block = blockIdx.x - r.first_block;
    if (r.message == HP_NO_MESSAGE || a.messages == 0) {
        hp_region_payload<PACK>(a, r, local_block);
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
    /* Broadcasts the outcome; with thread 0's acquire, orders every thread's accesses after
     * the wait (the peer's data is there, or the peer has freed the slot). */
    __syncthreads();
    if (outcome != HP_MESSAGE_OK) return;

    hp_region_payload<PACK>(a, r, local_block);
    /* The barrier orders every thread's stores before thread 0's (CTA scope); thread 0's
     * release fence at system scope, cumulative, then orders them all before the block is
     * counted (as cooperative groups' grid sync does). One acq_rel fence per block: a
     * sequentially consistent one per thread serializes the whole launch. */
    __syncthreads();
    if (threadIdx.x == 0) {
        hp_fence_acq_rel_system();
        const uint32_t done = atomicAdd((unsigned int*)m.counter, 1u) + 1u;
        if (done == a.epoch * m.blocks && m.flag != 0) {
            /* The last block of the message: every other block's fence and count happened
             * before its count was seen here (a release sequence on the counter); acquire
             * them, then release all of them with the flag. */
            hp_fence_acq_rel_system();
            hp_store_release_system((uint32_t*)m.flag, a.epoch);
        }
    }
}

/* field -> buffer for every region of the launch (see the file comment). */
extern "C" __global__ void hp_pack_regions(hp_regions_args a) { hp_regions_block<true>(a); }

/* buffer -> field for every region of the launch (see the file comment). */
extern "C" __global__ void hp_unpack_regions(hp_regions_args a) { hp_regions_block<false>(a); }

/* out[p] = (sum of the 27 in[p + d], dz outermost, dx innermost, from 0) * (T(1) / T(27)): the
 * same IEEE operations in the same order as the host twin, so both give the same bits. I is
 * the type of the point numbering (uint32_t when the box and the grid fit, as for regions). */
template <typename T, typename I>
__device__ __forceinline__ void hp_stencil27_as(const hp_stencil_args& a, I n) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const uint64_t ax = a.alloc[0], ay = a.alloc[1];
    const I bx = (I)(a.end[0] - a.begin[0]);
    const I by = (I)(a.end[1] - a.begin[1]);
    const T scale = T(1) / T(27);
    const I step = (I)gridDim.x * (I)blockDim.x;
    for (I p = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; p < n; p += step) {
        const I rest = p / bx;
        const uint64_t x = a.begin[0] + (uint64_t)(p % bx);
        const uint64_t y = a.begin[1] + (uint64_t)(rest % by);
        const uint64_t z = a.begin[2] + (uint64_t)(rest / by);
        const uint64_t centre = x + ax * (y + ay * z);
        T sum = T(0);
#pragma unroll
        for (int dz = -1; dz <= 1; ++dz) {
#pragma unroll
            for (int dy = -1; dy <= 1; ++dy) {
                const T* row = in + (centre + (int64_t)ax * (dy + (int64_t)ay * dz));
#pragma unroll
                for (int dx = -1; dx <= 1; ++dx) {
                    sum += row[dx];
                }
            }
        }
        out[centre] = sum * scale;
    }
}

template <typename T>
__device__ __forceinline__ void hp_stencil27_points(const hp_stencil_args& a) {
    const uint64_t n =
        (a.end[0] - a.begin[0]) * (a.end[1] - a.begin[1]) * (a.end[2] - a.begin[2]);
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    if (n + step <= 0xffffffffull) {
        hp_stencil27_as<T, uint32_t>(a, (uint32_t)n);
    } else {
        hp_stencil27_as<T, uint64_t>(a, n);
    }
}

extern "C" __global__ void hp_stencil27(hp_stencil_args a) {
    if (a.end[0] <= a.begin[0] || a.end[1] <= a.begin[1] || a.end[2] <= a.begin[2]) return;
    if (a.elem_bytes == 8) {
        hp_stencil27_points<double>(a);
    } else if (a.elem_bytes == 4) {
        hp_stencil27_points<float>(a);
    }
}

#endif /* HP_REGIONS_CUH */
