/*
 * hp_kernels.cuh: haloport's kernels, written once in the subset CUDA and HIP share.
 *
 * Included by the CUDA entry (kernels-cu/haloport.cu) and the HIP entry (kernels-hip/haloport.hip).
 * Pack and unpack are __device__ functions with __global__ wrappers (thesis 3.2.3), so a
 * persistent kernel can call the same code later. Each grid block works on its own pattern
 * block: blockIdx.x == block id.
 *
 * Semantics (SPEC 5), mirrored by the host backend (backend-host/src/kernels.rs):
 *   pack:   every element of block b's send buffer := 1000*(iteration+1) + rank*100 + b
 *   unpack: thread t checks element t*elems/threads of block b's receive buffer against the value
 *           block b's source rank packed, and the block writes its check record (checked, wrong,
 *           the first wrong element by thread order). No assert: wrong values are data.
 */
#ifndef HP_KERNELS_CUH
#define HP_KERNELS_CUH

#include "hp_compat.h"
#include "haloport_shared.h"

HP_DEVICE double hp_packed_value(uint32_t iteration, int32_t rank, uint32_t block) {
    return 1000.0 * ((double)iteration + 1.0) + (double)rank * 100.0 + (double)block;
}

HP_DEVICE hp_block_times* hp_times_of(const hp_exchange_args& a, uint32_t b) {
    return a.times ? (hp_block_times*)a.times + b : (hp_block_times*)0;
}

/* Packs block b into `send`: its pinned send buffer, or its device copy (memcpy taskqueue). */
__device__ void hp_pack_block_into(const hp_exchange_args& a, uint32_t b, uint64_t send_addr) {
    const hp_block blk = ((const hp_block*)a.blocks)[b];
    double* send = (double*)send_addr;
    const double value = hp_packed_value(a.iteration, a.rank, b);
    for (uint64_t i = threadIdx.x; i < blk.elems; i += blockDim.x) {
        send[i] = value;
    }
}

__device__ void hp_pack_block(const hp_exchange_args& a, uint32_t b) {
    hp_pack_block_into(a, b, ((const hp_block*)a.blocks)[b].send);
}

__device__ void hp_unpack_block(const hp_exchange_args& a, uint32_t b) {
    __shared__ uint32_t wrong;
    __shared__ uint32_t first_thread;
    const hp_block blk = ((const hp_block*)a.blocks)[b];
    if (threadIdx.x == 0) {
        wrong = 0;
        first_thread = 0xffffffffu;
    }
    __syncthreads();
    const uint64_t index = (uint64_t)threadIdx.x * blk.elems / (uint64_t)blockDim.x;
    const double expected = hp_packed_value(a.iteration, blk.source, b);
    const double found = ((const volatile double*)blk.recv)[index];
    const bool bad = hp_double_bits(found) != hp_double_bits(expected);
    if (bad) {
        atomicAdd(&wrong, 1u);
        atomicMin(&first_thread, (uint32_t)threadIdx.x);
    }
    __syncthreads();
    hp_block_check* check = (hp_block_check*)a.checks + b;
    if (bad && threadIdx.x == first_thread) {
        check->first_index = index;
        check->first_expected = expected;
        check->first_found = found;
    }
    if (threadIdx.x == 0) {
        check->checked = blockDim.x;
        check->wrong = wrong;
    }
}

extern "C" __global__ void hp_pack(hp_exchange_args a) {
    const uint32_t b = blockIdx.x;
    if (b >= a.num_blocks) return;
    hp_block_times* t = hp_times_of(a, b);
    if (t && threadIdx.x == 0) t->pack_start = hp_timer();
    hp_pack_block(a, b);
    __syncthreads();
    if (t && threadIdx.x == 0) t->pack_end = hp_timer();
}

extern "C" __global__ void hp_unpack(hp_exchange_args a) {
    const uint32_t b = blockIdx.x;
    if (b >= a.num_blocks) return;
    hp_block_times* t = hp_times_of(a, b);
    if (t && threadIdx.x == 0) t->unpack_start = hp_timer();
    hp_unpack_block(a, b);
    __syncthreads();
    if (t && threadIdx.x == 0) t->unpack_end = hp_timer();
}

/* One thread plays ping-pong with the CPU (see hp_pingpong_args). On a time-out the kernel
 * leaves gpu_after of the sample at 0 and returns; the CPU reports it. */
extern "C" __global__ void hp_clock_pingpong(hp_pingpong_args a) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    hp_clock_sample* samples = (hp_clock_sample*)a.samples;
    uint32_t* gpu_seq = (uint32_t*)a.gpu_seq;
    const uint32_t* cpu_seq = (const uint32_t*)a.cpu_seq;
    for (uint32_t i = 0; i < a.count; ++i) {
        samples[i].gpu_before = hp_timer();
        hp_store_release_system(gpu_seq, i + 1);
        const uint64_t waiting_since = hp_timer();
        while (hp_load_acquire_system(cpu_seq) != i + 1) {
            if (hp_timer() - waiting_since > a.timeout_ticks) {
                samples[i].gpu_after = 0;
                hp_fence_system();
                return;
            }
        }
        samples[i].gpu_after = hp_timer();
    }
    hp_fence_system();
}

/* ---- Taskqueue (thesis 3.4-3.5): one persistent kernel, flags in coherent pinned memory. ---- */

HP_DEVICE uint32_t* hp_tq_flag(uint64_t base, uint32_t stride, uint32_t b) {
    return (uint32_t*)(base + (uint64_t)stride * b);
}

/* Thread 0 waits until *flag == epoch. Returns 0, or HP_TQ_ABORTED / HP_TQ_TIMED_OUT. */
HP_DEVICE uint32_t hp_tq_wait(const hp_taskqueue_args& a, const uint32_t* flag) {
    const uint64_t since = hp_timer();
    for (uint32_t spins = 0;; ++spins) {
        if (hp_load_acquire_system(flag) == a.epoch) return 0;
        /* The abort flag is a second PCIe read: look at it every 16th spin only. */
        if ((spins & 15u) == 15u) {
            if (hp_load_acquire_system((const uint32_t*)a.abort_flag) == a.epoch) return HP_TQ_ABORTED;
            if (hp_timer() - since > a.timeout_ticks) return HP_TQ_TIMED_OUT;
        }
        hp_backoff(a.poll_backoff_ns);
    }
}

/* Thread 0 appends block b to the task queue under the GPU-side lock (thesis listing 3.12). */
HP_DEVICE uint32_t hp_tq_post_queue(const hp_taskqueue_args& a, uint32_t b) {
    uint32_t* lock = (uint32_t*)a.queue_lock;
    uint32_t* tail = (uint32_t*)a.queue_tail;
    const uint64_t since = hp_timer();
    while (atomicCAS(lock, 0u, b + 1) != 0u) {
        if (hp_timer() - since > a.timeout_ticks) return HP_TQ_TIMED_OUT;
    }
    __threadfence();
    const uint32_t index = *(volatile uint32_t*)tail;
    uint64_t* entry = (uint64_t*)(a.tasks + (uint64_t)a.stride * (index % a.exchange.num_blocks));
    hp_store_release_system_u64(entry, ((uint64_t)a.epoch << 32) | (uint64_t)(b + 1));
    atomicAdd(tail, 1u);
    __threadfence();
    atomicExch(lock, 0u);
    return 0;
}

extern "C" __global__ void hp_taskqueue(hp_taskqueue_args a) {
    const uint32_t b = blockIdx.x;
    if (b >= a.exchange.num_blocks) return;
    __shared__ uint32_t outcome;
    uint32_t* state = hp_tq_flag(a.states, a.stride, b);
    hp_block_times* t = hp_times_of(a.exchange, b);
    const hp_block blk = ((const hp_block*)a.exchange.blocks)[b];
    const bool memcpy_mode = (a.mode & HP_TQ_MODE_MEMCPY) != 0;

    if (threadIdx.x == 0) {
        outcome = 0;
        if (memcpy_mode) {
            hp_store_release_system(state, HP_TQ_WAIT_COPY);
            outcome = hp_tq_wait(a, hp_tq_flag(a.pack_go, a.stride, b));
        }
        if (outcome == 0) {
            hp_store_release_system(state, HP_TQ_PACKING);
            if (t) t->pack_start = hp_timer();
        }
    }
    __syncthreads();
    if (outcome != 0) {
        if (threadIdx.x == 0) hp_store_release_system(state, outcome);
        return;
    }

    hp_pack_block_into(a.exchange, b, memcpy_mode ? blk.send_device : blk.send);
    /* Every thread's packing writes are ordered before the task the CPU will act on. */
    hp_fence_system();
    __syncthreads();

    if (threadIdx.x == 0) {
        if (t) t->pack_end = hp_timer();
        if (a.mode & HP_TQ_MODE_QUEUE) {
            outcome = hp_tq_post_queue(a, b);
        } else {
            hp_store_release_system(hp_tq_flag(a.tasks, a.stride, b), a.epoch);
        }
        if (outcome == 0) {
            hp_store_release_system(state, HP_TQ_WAIT_RECV);
            outcome = hp_tq_wait(a, hp_tq_flag(a.unpack_go, a.stride, b));
        }
        if (outcome == 0) {
            hp_store_release_system(state, HP_TQ_UNPACKING);
            if (t) t->unpack_start = hp_timer();
        }
    }
    __syncthreads();
    if (outcome != 0) {
        if (threadIdx.x == 0) hp_store_release_system(state, outcome);
        return;
    }

    hp_unpack_block(a.exchange, b);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (t) t->unpack_end = hp_timer();
        hp_fence_system();
        hp_store_release_system(state, HP_TQ_DONE);
    }
}

#endif /* HP_KERNELS_CUH */
