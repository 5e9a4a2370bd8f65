/*
 * haloport_shared.h: the structs that kernels and the host share, declared once.
 *
 * The CUDA and HIP kernels include this header; Rust gets the same layout through bindgen
 * (haloport-core's build.rs), so there is no hand-copied twin to drift. Addresses are plain
 * 64-bit integers: each is a *device* address (what a kernel dereferences), taken from the
 * backend (cuMemHostGetDevicePointer / hipHostGetDevicePointer for pinned host memory; the
 * host backend's device addresses are host addresses).
 *
 * Only fixed-width types, no pointers, no bitfields: the layout must be the same for nvcc,
 * hipcc, clang (bindgen) and rustc.
 */
#ifndef HALOPORT_SHARED_H
#define HALOPORT_SHARED_H

#include <stdint.h>

/* One block of the exchange pattern, as the kernels see it (SPEC 3). */
typedef struct hp_block {
    /* Device address of this block's send buffer (f64 elements). */
    uint64_t send;
    /* Device address of this block's receive buffer (f64 elements). */
    uint64_t recv;
    /* Elements in both buffers: block b has the same size on sender and receiver. */
    uint64_t elems;
    /* Rank this block's receive buffer comes from; unpack derives the expected value from it. */
    int32_t source;
    /* Rank this block's send buffer goes to. */
    int32_t dest;
} hp_block;

/* What unpack found in one block's receive buffer in one iteration (SPEC 5). */
typedef struct hp_block_check {
    /* Elements checked (one per thread). */
    uint32_t checked;
    /* Checked elements that held a wrong value. */
    uint32_t wrong;
    /* Index, expected and found value of the first wrong element seen (valid when wrong > 0). */
    uint64_t first_index;
    double first_expected;
    double first_found;
} hp_block_check;

/* Per-block device timestamps of one iteration, in device timer ticks (SPEC 6). */
typedef struct hp_block_times {
    uint64_t pack_start;
    uint64_t pack_end;
    uint64_t unpack_start;
    uint64_t unpack_end;
} hp_block_times;

/* The argument of the pack and unpack kernels: one struct passed by value. */
typedef struct hp_exchange_args {
    /* Device address of hp_block[num_blocks]. */
    uint64_t blocks;
    /* Device address of hp_block_check[num_blocks] (coherent pinned memory). */
    uint64_t checks;
    /* Device address of hp_block_times[num_blocks] (coherent pinned memory). */
    uint64_t times;
    /* Blocks in the grid; grid block b works on blocks[b]. */
    uint32_t num_blocks;
    /* This process's MPI rank: part of every packed value. */
    int32_t rank;
    /* Global iteration number: part of every packed value. */
    uint32_t iteration;
    uint32_t reserved;
} hp_exchange_args;

/*
 * Clock ping-pong (SPEC 6): one GPU thread and the CPU take turns through two sequence flags in
 * coherent pinned memory. For sample i the kernel stamps gpu_before, publishes gpu_seq = i + 1
 * (release), waits for cpu_seq == i + 1 (acquire), stamps gpu_after. The CPU waits for
 * gpu_seq == i + 1, stamps cpu, publishes cpu_seq = i + 1. The CPU's stamp lies between the two
 * GPU stamps, so the pair (midpoint of gpu stamps, cpu) aligns the clocks within half the round
 * trip.
 */
typedef struct hp_clock_sample {
    uint64_t gpu_before;
    uint64_t gpu_after;
    /* Host clock, nanoseconds since haloport's host epoch. */
    uint64_t cpu;
} hp_clock_sample;

typedef struct hp_pingpong_args {
    /* Device address of hp_clock_sample[count]. */
    uint64_t samples;
    /* Device addresses of the two uint32_t sequence flags. */
    uint64_t gpu_seq;
    uint64_t cpu_seq;
    /* The kernel gives up waiting for the CPU after this many device timer ticks. */
    uint64_t timeout_ticks;
    uint32_t count;
    uint32_t reserved;
} hp_pingpong_args;

#endif /* HALOPORT_SHARED_H */
