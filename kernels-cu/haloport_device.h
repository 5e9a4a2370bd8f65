/*
 * haloport_device.h: halos written from the application's own kernels (fused mode).
 *
 * One header for CUDA and HIP (nvcc and hipcc compile it alike); a C compiler sees the types
 * and the host-side helpers only. The library hands a kernel one descriptor per field and step
 * (haloport_fused, in device memory); for each cell of its boundary the kernel asks where the
 * cell goes in the neighbours' halos (none, or several: a corner cell of the boundary feeds 3
 * faces, 3 edges and 1 corner, more where a rank is as narrow as its halos) and stores it there, then each block reports the cells it stored per message. The stores are the
 * exchange: no pack kernel reads the boundary again and no unpack kernel writes the halo.
 *
 *     __global__ void boundary(const haloport_fused* out, const double* u, double* v, ...)
 *     {
 *         __shared__ haloport_box_targets targets;
 *         int feeds = !haloport_box_quiet(out, block_lo, block_hi); // the same in every thread
 *         if (feeds) haloport_box_begin(out, block_lo, block_hi, &targets); // whole block
 *         ... compute v[i] for cell (x, y, z) of [block_lo, block_hi) ...
 *         v[i] = value;
 *         if (feeds) haloport_box_store_f64(&targets, x, y, z, value); // every neighbour's halo
 *         if (feeds) haloport_box_done(&targets);                      // whole block
 *     }
 *
 * Indices are those of the field's allocated array (halos included, x innermost); a block
 * stores the box [block_lo, block_hi) of cells (each cell once, from one block). The box form
 * looks the messages up once per block, so a cell tests only the one or few its box feeds;
 * haloport_store_f64 with haloport_block_done (or the counted stores, for blocks whose cells
 * are no box) test all of them per cell.
 * The library waits on the receiving side until every cell of every message arrived (a count
 * per message in the receiver's memory) and, before a step's stores, until each neighbour is
 * done reading the halo they overwrite: the kernel itself never waits.
 *
 * Only fixed-width types and no pointers in the structs: the layout is the same for nvcc,
 * hipcc, clang (bindgen makes haloport's Rust twin of these types) and rustc.
 */
#ifndef HALOPORT_DEVICE_H
#define HALOPORT_DEVICE_H

#if defined(__CUDACC_RTC__)
/* NVRTC (a CuPy RawKernel) has no <stdint.h>: the two widths used here, as NVIDIA's libcu++
 * defines them for NVRTC. */
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

/* Most messages of one rank: 26 neighbours (faces, edges, corners). */
#define HALOPORT_FUSED_MESSAGES 26u

/* One neighbour's message of one field. */
typedef struct haloport_fused_message {
    /* Address of the neighbour's field element 0 as this process reaches it (mapped from the
     * neighbour, or this rank's own field where the neighbour is this rank). */
    uint64_t dest;
    /* Elements from `dest` to the halo cell that receives this rank's cell `lo`. */
    uint64_t dest_offset;
    /* Element strides of the neighbour's array, innermost first (1, ax, ax * ay). */
    uint64_t dest_stride[3];
    /* Address of the neighbour's count of this message's cells arrived (uint64, monotonic). */
    uint64_t counter;
    /* The cells the neighbour needs: [lo, hi) per dimension, indices of this rank's array. */
    uint32_t lo[3];
    uint32_t hi[3];
} haloport_fused_message;

/* What a kernel needs to write one field's halos into its neighbours. */
typedef struct haloport_fused {
    /* Messages in use, message[0 .. messages). */
    uint32_t messages;
    /* Bytes of one element of the field (4 or 8; a component of a vector field counts alone). */
    uint32_t elem_bytes;
    /* Cells no neighbour needs: [quiet_lo, quiet_hi) per dimension (empty where lo >= hi), so
     * that most cells are answered by one test. */
    uint32_t quiet_lo[3];
    uint32_t quiet_hi[3];
    haloport_fused_message message[HALOPORT_FUSED_MESSAGES];
} haloport_fused;

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HALOPORT_DEVICE __device__ __forceinline__
#else
#define HALOPORT_DEVICE static inline
#endif

/* Whether cell (x, y, z) lies in [lo, hi). */
HALOPORT_DEVICE int haloport_in_box(const uint32_t lo[3], const uint32_t hi[3], uint32_t x,
                                    uint32_t y, uint32_t z)
{
    return x >= lo[0] && x < hi[0] && y >= lo[1] && y < hi[1] && z >= lo[2] && z < hi[2];
}

/* Whether no message takes cell (x, y, z) (one test answers most cells). */
HALOPORT_DEVICE int haloport_quiet(const haloport_fused* d, uint32_t x, uint32_t y, uint32_t z)
{
    return haloport_in_box(d->quiet_lo, d->quiet_hi, x, y, z);
}

/* Whether message e (of elements of elem_bytes) takes cell (x, y, z), and if so the byte
 * address it goes to (*addr). */
HALOPORT_DEVICE int haloport_message_target(const haloport_fused_message* e, uint32_t elem_bytes,
                                            uint32_t x, uint32_t y, uint32_t z, uint64_t* addr)
{
    if (!haloport_in_box(e->lo, e->hi, x, y, z)) {
        return 0;
    }
    uint64_t at = e->dest_offset + (uint64_t)(x - e->lo[0]) * e->dest_stride[0] +
                  (uint64_t)(y - e->lo[1]) * e->dest_stride[1] +
                  (uint64_t)(z - e->lo[2]) * e->dest_stride[2];
    *addr = e->dest + at * elem_bytes;
    return 1;
}

/* Whether message m takes cell (x, y, z), and if so the byte address it goes to (*addr). */
HALOPORT_DEVICE int haloport_target(const haloport_fused* d, uint32_t m, uint32_t x, uint32_t y,
                                    uint32_t z, uint64_t* addr)
{
    return haloport_message_target(&d->message[m], d->elem_bytes, x, y, z, addr);
}

/* Cells of [lo, hi) that message m carries (the box's overlap with the message's cells). */
HALOPORT_DEVICE uint64_t haloport_box_cells(const haloport_fused* d, uint32_t m,
                                            const uint32_t lo[3], const uint32_t hi[3])
{
    const haloport_fused_message* e = &d->message[m];
    uint64_t cells = 1;
    for (int k = 0; k < 3; ++k) {
        uint32_t a = lo[k] > e->lo[k] ? lo[k] : e->lo[k];
        uint32_t b = hi[k] < e->hi[k] ? hi[k] : e->hi[k];
        if (a >= b) {
            return 0;
        }
        cells *= (uint64_t)(b - a);
    }
    return cells;
}

/* Whether no message takes any cell of the box [lo, hi): it lies in the quiet cells. A block
 * whose box is quiet may skip haloport_box_begin, its stores and haloport_box_done (its threads
 * all pass the same box, so they agree and no barrier is left half-met): most blocks of a kernel
 * over the whole interior then run as they would without fused mode. */
HALOPORT_DEVICE int haloport_box_quiet(const haloport_fused* d, const uint32_t lo[3],
                                       const uint32_t hi[3])
{
    for (int k = 0; k < 3; ++k) {
        if (lo[k] < d->quiet_lo[k] || hi[k] > d->quiet_hi[k]) {
            return 0;
        }
    }
    return 1;
}

#if defined(__CUDACC__) || defined(__HIPCC__)

/* Stores `value` (one element of the field) wherever cell (x, y, z) goes. */
HALOPORT_DEVICE void haloport_store_f64(const haloport_fused* d, uint32_t x, uint32_t y,
                                        uint32_t z, double value)
{
    uint64_t addr;
    if (haloport_quiet(d, x, y, z)) {
        return;
    }
    for (uint32_t m = 0; m < d->messages; ++m) {
        if (haloport_target(d, m, x, y, z, &addr)) {
            *(double*)addr = value;
        }
    }
}

/* The same for a 4-byte element. */
HALOPORT_DEVICE void haloport_store_f32(const haloport_fused* d, uint32_t x, uint32_t y,
                                        uint32_t z, float value)
{
    uint64_t addr;
    if (haloport_quiet(d, x, y, z)) {
        return;
    }
    for (uint32_t m = 0; m < d->messages; ++m) {
        if (haloport_target(d, m, x, y, z, &addr)) {
            *(float*)addr = value;
        }
    }
}

/* The thread's index in its block, and the block's threads. */
HALOPORT_DEVICE uint32_t haloport_block_thread(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

HALOPORT_DEVICE uint32_t haloport_block_threads(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

/* Adds `cells` to a neighbour's count at `counter`, releasing at system scope (the stores may
 * cross to another GPU) every store of the block that a __syncthreads() ordered before it: a
 * release is cumulative. One release per message and block, not a fence per thread: a
 * sequentially consistent fence (__threadfence_system) per thread serializes the launch. */
HALOPORT_DEVICE void haloport_release_add(uint64_t counter, uint64_t cells)
{
#if defined(__HIPCC__)
    __hip_atomic_fetch_add((unsigned long long*)counter, (unsigned long long)cells,
                           __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    asm volatile("fence.acq_rel.sys;\n\tred.relaxed.sys.add.u64 [%0], %1;"
                 :
                 : "l"(counter), "l"(cells)
                 : "memory");
#endif
}

/* Reports the cells of [lo, hi) this block stored to each message: every thread of the block
 * calls it after its stores (it synchronizes the block), and the block's threads add each
 * message's cells to the neighbour's count: when a count reaches its whole, the neighbour's
 * wait ends. */
HALOPORT_DEVICE void haloport_block_done(const haloport_fused* d, const uint32_t lo[3],
                                         const uint32_t hi[3])
{
    __syncthreads();
    for (uint32_t m = haloport_block_thread(); m < d->messages; m += haloport_block_threads()) {
        uint64_t cells = haloport_box_cells(d, m, lo, hi);
        if (cells != 0) {
            haloport_release_add(d->message[m].counter, cells);
        }
    }
}

/* The messages a block's box of cells feeds, with the box's cells in each: gathered once per
 * block (haloport_box_begin, in shared memory), so that each cell tests only these. */
typedef struct haloport_box_targets {
    uint32_t count;
    uint32_t elem_bytes;
    uint64_t cells[HALOPORT_FUSED_MESSAGES];
    haloport_fused_message message[HALOPORT_FUSED_MESSAGES];
} haloport_box_targets;

/* Gathers into `t` the messages that the box [lo, hi) feeds: every thread of the block calls
 * it with the same box, before storing any of its cells (it synchronizes the block). */
HALOPORT_DEVICE void haloport_box_begin(const haloport_fused* d, const uint32_t lo[3],
                                        const uint32_t hi[3], haloport_box_targets* t)
{
    /* The block's earlier use of `t` (haloport_box_done) is over. */
    __syncthreads();
    if (haloport_block_thread() == 0) {
        t->count = 0u;
        t->elem_bytes = d->elem_bytes;
    }
    __syncthreads();
    for (uint32_t m = haloport_block_thread(); m < d->messages; m += haloport_block_threads()) {
        uint64_t cells = haloport_box_cells(d, m, lo, hi);
        if (cells != 0) {
            uint32_t j = atomicAdd(&t->count, 1u);
            t->cells[j] = cells;
            t->message[j] = d->message[m];
        }
    }
    __syncthreads();
}

/* Stores `value` (one element of the field) wherever cell (x, y, z) of the box goes. */
HALOPORT_DEVICE void haloport_box_store_f64(const haloport_box_targets* t, uint32_t x,
                                            uint32_t y, uint32_t z, double value)
{
    uint64_t addr;
    for (uint32_t j = 0; j < t->count; ++j) {
        if (haloport_message_target(&t->message[j], t->elem_bytes, x, y, z, &addr)) {
            *(double*)addr = value;
        }
    }
}

/* The same for a 4-byte element. */
HALOPORT_DEVICE void haloport_box_store_f32(const haloport_box_targets* t, uint32_t x,
                                            uint32_t y, uint32_t z, float value)
{
    uint64_t addr;
    for (uint32_t j = 0; j < t->count; ++j) {
        if (haloport_message_target(&t->message[j], t->elem_bytes, x, y, z, &addr)) {
            *(float*)addr = value;
        }
    }
}

/* Reports the box's cells to each message it feeds, as haloport_block_done does: every thread
 * of the block calls it after its stores. */
HALOPORT_DEVICE void haloport_box_done(const haloport_box_targets* t)
{
    __syncthreads();
    for (uint32_t j = haloport_block_thread(); j < t->count; j += haloport_block_threads()) {
        haloport_release_add(t->message[j].counter, t->cells[j]);
    }
}

/* Kernels whose blocks do not store a box of cells (a loop striding over a box's points, say)
 * count instead: each block keeps its cells per message in shared memory,
 *
 *     __shared__ haloport_block_counts counts;
 *     haloport_counts_begin(&counts);                  // every thread of the block
 *     ... haloport_store_f64_counted(d, x, y, z, value, &counts); ...
 *     haloport_counts_done(d, &counts);                // every thread of the block
 *
 * and adds them to the neighbours' counts once, at its end. */
typedef struct haloport_block_counts {
    unsigned int cells[HALOPORT_FUSED_MESSAGES];
} haloport_block_counts;

/* Zeroes the block's counts: every thread of the block calls it (it synchronizes the block). */
HALOPORT_DEVICE void haloport_counts_begin(haloport_block_counts* c)
{
    for (uint32_t m = haloport_block_thread(); m < HALOPORT_FUSED_MESSAGES;
         m += haloport_block_threads()) {
        c->cells[m] = 0u;
    }
    __syncthreads();
}

/* haloport_store_f64, counting the cell for each message that takes it. */
HALOPORT_DEVICE void haloport_store_f64_counted(const haloport_fused* d, uint32_t x, uint32_t y,
                                                uint32_t z, double value,
                                                haloport_block_counts* c)
{
    uint64_t addr;
    if (haloport_quiet(d, x, y, z)) {
        return;
    }
    for (uint32_t m = 0; m < d->messages; ++m) {
        if (haloport_target(d, m, x, y, z, &addr)) {
            *(double*)addr = value;
            atomicAdd(&c->cells[m], 1u);
        }
    }
}

/* The same for a 4-byte element. */
HALOPORT_DEVICE void haloport_store_f32_counted(const haloport_fused* d, uint32_t x, uint32_t y,
                                                uint32_t z, float value,
                                                haloport_block_counts* c)
{
    uint64_t addr;
    if (haloport_quiet(d, x, y, z)) {
        return;
    }
    for (uint32_t m = 0; m < d->messages; ++m) {
        if (haloport_target(d, m, x, y, z, &addr)) {
            *(float*)addr = value;
            atomicAdd(&c->cells[m], 1u);
        }
    }
}

/* Adds the block's counts to the neighbours' counts, as haloport_block_done does for a box:
 * every thread of the block calls it after its stores. */
HALOPORT_DEVICE void haloport_counts_done(const haloport_fused* d, haloport_block_counts* c)
{
    __syncthreads();
    for (uint32_t m = haloport_block_thread(); m < d->messages; m += haloport_block_threads()) {
        if (c->cells[m] != 0u) {
            haloport_release_add(d->message[m].counter, (uint64_t)c->cells[m]);
        }
    }
}

#endif /* __CUDACC__ || __HIPCC__ */

#endif /* HALOPORT_DEVICE_H */
