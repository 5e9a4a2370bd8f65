/*
 * hp_amd.h: what AMD GPUs need differently, behind the names of kernels-cu/hp_compat.h.
 *
 *   timer:   s_memrealtime through wall_clock64(), a constant-rate clock shared by all compute
 *            units (its rate is the device attribute hipDeviceAttributeWallClockRate, in kHz).
 *   atomics: clang's scoped HIP atomics at system scope, so the CPU sees them (and vice versa)
 *            through coherent pinned memory; a message's block count at agent scope (the
 *            device's blocks alone count it).
 *   fences:  __threadfence_system().
 *   back-off: s_sleep, ~64 clocks per unit (thesis 4.6.2: constant polling slowed flag
 *            propagation on MI50s; a pause between polls lets it through).
 *   L2 prefetch: none (hp_prefetch_l2 is a no-op).
 *   shuffles: __shfl_up / __shfl_down with a width of 32, so a 64-wide wavefront shuffles as
 *            two groups of 32, as CUDA's warps do.
 * Wavefronts are 64 threads wide; nothing else in the kernels depends on the width.
 */
#ifndef HP_AMD_H
#define HP_AMD_H

#include <hip/hip_runtime.h>
#include <stdint.h>

#define HP_DEVICE __device__ __forceinline__

#define HP_GRID_CONSTANT

/* The kernel's one by-value parameter, read from the kernarg segment where the launch put it:
 * clang copies a parameter whose address is taken into every thread's private memory (3 KiB
 * for hp_regions_args), and `a` itself is then never read. */
template <typename T>
HP_DEVICE const T& hp_args_in_place(const T&) {
    return *(const T*)(const void*)__builtin_amdgcn_kernarg_segment_ptr();
}

HP_DEVICE uint64_t hp_timer(void) { return wall_clock64(); }

HP_DEVICE uint32_t hp_load_acquire_system(const uint32_t* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE void hp_store_release_system(uint32_t* p, uint32_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE uint32_t hp_load_relaxed_system(const uint32_t* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE uint64_t hp_load_relaxed_system_u64(const uint64_t* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE void hp_store_relaxed_system(uint32_t* p, uint32_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE void hp_store_release_system_u64(uint64_t* p, uint64_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE void hp_store_relaxed_system_u64(uint64_t* p, uint64_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE uint64_t hp_load_acquire_system_u64(const uint64_t* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}

HP_DEVICE void hp_fence_system(void) { __threadfence_system(); }

/* AMD's system fence is already acquire-release (no sequentially consistent variant to avoid). */
HP_DEVICE void hp_fence_acq_rel_system(void) { __threadfence_system(); }

HP_DEVICE uint32_t hp_count_acq_rel_device(uint32_t* p) {
    return __hip_atomic_fetch_add(p, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
}

HP_DEVICE uint64_t hp_double_bits(double v) { return (uint64_t)__double_as_longlong(v); }

/* Pause for about `ns` nanoseconds between polls (0: none). s_sleep N waits 64 * N clocks;
 * at ~1.5 GHz one unit is ~43 ns. */
HP_DEVICE void hp_backoff(uint32_t ns) {
    for (uint32_t waited = 0; waited < ns; waited += 43) {
        __builtin_amdgcn_s_sleep(1);
    }
}

/* gfx9 has no load that only fills L2 (a plain load would hold a register until it lands),
 * so the hint is dropped; the march form is correct and unchanged without it. */
HP_DEVICE void hp_prefetch_l2(const void* p) { (void)p; }

HP_DEVICE float hp_shfl_up32(float v, unsigned d) { return __shfl_up(v, d, 32); }
HP_DEVICE float hp_shfl_down32(float v, unsigned d) { return __shfl_down(v, d, 32); }

#endif /* HP_AMD_H */
