/*
 * hp_compat.h: the few things CUDA and HIP spell differently, behind one set of names.
 *
 *   hp_timer()                       the device's global timer (ticks at DeviceInfo::timer_hz)
 *   hp_load_acquire_system(p)        32-bit load, acquire, system scope (CPU writes are seen)
 *   hp_load_relaxed_system(p)        32-bit load, relaxed, system scope (polling: see below)
 *   hp_load_relaxed_system_u64       the same, 64 bits
 *   hp_store_release_system(p, v)    32-bit store, release, system scope (CPU sees prior writes)
 *   hp_store_release_system_u64      the same, 64 bits
 *   hp_store_relaxed_system(p, v)    32-bit store, relaxed, system scope (progress reports, or
 *                                    a release after hp_fence_acq_rel_system)
 *   hp_store_relaxed_system_u64      the same, 64 bits
 *   hp_fence_system()                fence ordering this thread's writes for the CPU
 *   hp_fence_acq_rel_system()        acquire-release fence at system scope: orders, without the
 *                                    global serialization of a sequentially consistent fence
 *   hp_count_acq_rel_device(p)       adds 1 to the u32 at p, acquire-release at device scope
 *                                    (the GPU's blocks, no CPU or peer); returns the value before
 *   hp_backoff(ns)                   pause about ns nanoseconds between polls (0: none)
 *   hp_prefetch_l2(p)                ask L2 for the line holding p ahead of its loads (a hint:
 *                                    no register is held for it, and no fault is raised)
 *   hp_shfl_up32(v, d), _down32      v of the lane d below / above in the caller's group of 32
 *                                    lanes (every lane of the group calls it)
 *   HP_GRID_CONSTANT                 marks a by-value kernel parameter read through
 *                                    hp_args_in_place
 *   hp_args_in_place(a)              a reference to the kernel's one by-value parameter `a`,
 *                                    read where the launch put it (constant bank, kernarg
 *                                    segment), never copied into each thread's local memory
 *
 * The kernels use nothing vendor-specific beyond these. AMD's definitions live in
 * kernels-hip/hp_amd.h (found through the include path hipcc is given).
 */
#ifndef HP_COMPAT_H
#define HP_COMPAT_H

#include <stdint.h>

#if defined(__HIPCC__)
#include "hp_amd.h"
#elif defined(__CUDACC__)

#define HP_DEVICE __device__ __forceinline__

/* Without it, a reference to a kernel parameter makes nvcc copy the whole parameter into every
 * thread's local memory. */
#define HP_GRID_CONSTANT __grid_constant__

template <typename T>
HP_DEVICE const T& hp_args_in_place(const T& a) {
    return a;
}

/* %globaltimer: nanoseconds, shared by all SMs of the device. */
HP_DEVICE uint64_t hp_timer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* PTX memory model (sm_70+): .sys scope makes the access ordered with respect to the host. */
HP_DEVICE uint32_t hp_load_acquire_system(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

HP_DEVICE void hp_store_release_system(uint32_t* p, uint32_t v) {
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* Polls read relaxed: on sm_90 an acquire load is a strong load followed by CCTL.IVALL, which
 * invalidates the whole L1 of the SM, so a loop of them spoils the L1 of every block beside the
 * waiting one (a stencil's neighbour loads). A wait polls relaxed and, once it sees its flag,
 * reads it again with acquire, ordering what follows after the writer's release (the value
 * of that read is not needed: flags only grow, and a later value was released after the one
 * waited for, by work ordered after it). */
HP_DEVICE uint32_t hp_load_relaxed_system(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

HP_DEVICE uint64_t hp_load_relaxed_system_u64(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

HP_DEVICE void hp_store_relaxed_system(uint32_t* p, uint32_t v) {
    asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

HP_DEVICE void hp_store_release_system_u64(uint64_t* p, uint64_t v) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

HP_DEVICE void hp_store_relaxed_system_u64(uint64_t* p, uint64_t v) {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

HP_DEVICE uint64_t hp_load_acquire_system_u64(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

HP_DEVICE void hp_fence_system(void) { __threadfence_system(); }

/* __threadfence_system() is fence.sc.sys, which the GPU serializes across all blocks (about
 * 2 us each on H200: a launch of 1000 signalling blocks spent 1.5 ms in fences). A release or
 * acquire pattern needs only acq_rel. */
HP_DEVICE void hp_fence_acq_rel_system(void) { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

HP_DEVICE uint32_t hp_count_acq_rel_device(uint32_t* p) {
    uint32_t before;
    asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(p) : "memory");
    return before;
}

HP_DEVICE uint64_t hp_double_bits(double v) { return (uint64_t)__double_as_longlong(v); }

HP_DEVICE void hp_backoff(uint32_t ns) {
    if (ns != 0) __nanosleep(ns);
}

HP_DEVICE void hp_prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

HP_DEVICE float hp_shfl_up32(float v, unsigned d) { return __shfl_up_sync(0xffffffffu, v, d); }
HP_DEVICE float hp_shfl_down32(float v, unsigned d) { return __shfl_down_sync(0xffffffffu, v, d); }

#else
#error "hp_compat.h needs nvcc (__CUDACC__) or hipcc (__HIPCC__)"
#endif

#endif /* HP_COMPAT_H */
