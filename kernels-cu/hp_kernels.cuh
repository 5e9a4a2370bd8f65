/*
 * hp_kernels.cuh: haloport's kernels, written once in the subset CUDA and HIP share.
 *
 * Included by the CUDA entry (kernels-cu/haloport.cu) and the HIP entry (kernels-hip/haloport.hip).
 * Pack and unpack are __device__ functions with __global__ wrappers (thesis 3.2.3), so a
 * persistent kernel can call the same code later. Each grid block works on its own pattern
 * block: blockIdx.x == block id.
 *
 * Semantics (SPEC 5), mirrored by the host backend (backend-host/src/kernels.rs and
 * haloport_core::workload):
 *   pack:   element i of block b's send buffer := hp_packed_value(iteration, rank, b, i)
 *           (haloport_shared.h: a key from iteration, rank and block, times 2^21, plus i)
 *   unpack: checks block b's receive buffer against the values block b's source rank packed:
 *           with HP_VERIFY_SAMPLE, thread t checks element t*elems/threads (the thesis's
 *           sample), thread 0 also element 0 and the last thread element elems-1; with
 *           HP_VERIFY_FULL the threads check every element. The block writes its check record
 *           (checked, wrong, the lowest wrong index with its expected and found values).
 *           No assert: wrong values are data.
 */
#ifndef HP_KERNELS_CUH
#define HP_KERNELS_CUH

#include "hp_compat.h"
#include "haloport_shared.h"

HP_DEVICE double hp_packed_value(uint32_t iteration, int32_t rank, uint32_t block, uint64_t index) {
    const uint64_t key =
        (1000ull * ((uint64_t)iteration + 1ull) + 100ull * (uint64_t)rank + (uint64_t)block) &
        HP_VALUE_KEY_MASK;
    const uint64_t low = index & ((1ull << HP_VALUE_INDEX_BITS) - 1ull);
    return (double)((key << HP_VALUE_INDEX_BITS) | low);
}

HP_DEVICE hp_block_times* hp_times_of(const hp_exchange_args& a, uint32_t b) {
    return a.times ? (hp_block_times*)a.times + b : (hp_block_times*)0;
}

/* Packs block b into `send`: its pinned send buffer, or its device copy (memcpy taskqueue). */
__device__ void hp_pack_block_into(const hp_exchange_args& a, uint32_t b, uint64_t send_addr) {
    const hp_block blk = ((const hp_block*)a.blocks)[b];
    double* send = (double*)send_addr;
    for (uint64_t i = threadIdx.x; i < blk.elems; i += blockDim.x) {
        send[i] = hp_packed_value(a.iteration, a.rank, b, i);
    }
}

__device__ void hp_pack_block(const hp_exchange_args& a, uint32_t b) {
    hp_pack_block_into(a, b, ((const hp_block*)a.blocks)[b].send);
}

/* One thread's checks: counts them and remembers its lowest wrong index. */
struct hp_thread_checks {
    uint32_t checked;
    uint32_t wrong;
    uint64_t first_index;
    double first_expected;
    double first_found;
};

HP_DEVICE void hp_check_one(hp_thread_checks& c, const double* recv, uint64_t index,
                            double expected) {
    const double found = ((const volatile double*)recv)[index];
    c.checked += 1;
    if (hp_double_bits(found) != hp_double_bits(expected)) {
        if (c.wrong == 0 || index < c.first_index) {
            c.first_index = index;
            c.first_expected = expected;
            c.first_found = found;
        }
        c.wrong += 1;
    }
}

/* Folds every thread's checks into the block's check record: counts summed, the lowest wrong
 * index kept with its values. All threads of the block call it. */
__device__ void hp_fold_checks(const hp_thread_checks& c, hp_block_check* check) {
    __shared__ uint32_t checked;
    __shared__ uint32_t wrong;
    __shared__ unsigned long long first_index;
    __shared__ uint32_t first_thread;
    if (threadIdx.x == 0) {
        checked = 0;
        wrong = 0;
        first_index = ~0ull;
        first_thread = 0xffffffffu;
    }
    __syncthreads();
    atomicAdd(&checked, c.checked);
    if (c.wrong > 0) {
        atomicAdd(&wrong, c.wrong);
        atomicMin(&first_index, (unsigned long long)c.first_index);
    }
    __syncthreads();
    /* Of the threads that saw the lowest wrong index, the lowest-numbered one records it. */
    if (c.wrong > 0 && c.first_index == first_index) {
        atomicMin(&first_thread, (uint32_t)threadIdx.x);
    }
    __syncthreads();
    if (threadIdx.x == first_thread) {
        check->first_index = c.first_index;
        check->first_expected = c.first_expected;
        check->first_found = c.first_found;
    }
    if (threadIdx.x == 0) {
        check->checked = checked;
        check->wrong = wrong;
    }
}

/* A thread's part of the thesis's sample of the range [begin, end) (HP_VERIFY_SAMPLE): element
 * `index`, spread over the range by thread number; thread 0 also checks the first element, the
 * last thread the last. */
struct hp_sample {
    uint64_t begin;
    uint64_t end;
    uint64_t index;
};

/* This thread's part of the sample of [begin, end). It needs no data (its division is most of a
 * check's arithmetic), so a caller may work it out before the data comes. */
HP_DEVICE hp_sample hp_sample_of(uint64_t begin, uint64_t end) {
    hp_sample s = {begin, end, begin};
    if (end > begin) s.index = begin + (uint64_t)threadIdx.x * (end - begin) / (uint64_t)blockDim.x;
    return s;
}

/* Checks this thread's part `s` of the sample of block b's receive buffer `recv` against what
 * rank `source` packed in `iteration`. */
HP_DEVICE void hp_check_sample(hp_thread_checks& c, const double* recv, const hp_sample& s,
                               uint32_t iteration, int32_t source, uint32_t b) {
    if (s.end <= s.begin) return;
    hp_check_one(c, recv, s.index, hp_packed_value(iteration, source, b, s.index));
    if (threadIdx.x == 0) {
        hp_check_one(c, recv, s.begin, hp_packed_value(iteration, source, b, s.begin));
    }
    if (threadIdx.x == blockDim.x - 1) {
        const uint64_t last = s.end - 1;
        hp_check_one(c, recv, last, hp_packed_value(iteration, source, b, last));
    }
}

/* Checks elements [begin, end) of block b's receive buffer `recv` against what rank `source`
 * packed in `iteration`, by `verify`, and writes the check record. All threads of the block
 * call it. */
__device__ void hp_check_range(const double* recv, uint64_t begin, uint64_t end, uint32_t verify,
                               uint32_t iteration, int32_t source, uint32_t b,
                               hp_block_check* check) {
    hp_thread_checks c = {0, 0, 0, 0.0, 0.0};
    if (verify == HP_VERIFY_FULL) {
        for (uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
            hp_check_one(c, recv, i, hp_packed_value(iteration, source, b, i));
        }
    } else {
        hp_check_sample(c, recv, hp_sample_of(begin, end), iteration, source, b);
    }
    hp_fold_checks(c, check);
}

__device__ void hp_unpack_block(const hp_exchange_args& a, uint32_t b) {
    const hp_block blk = ((const hp_block*)a.blocks)[b];
    hp_check_range((const double*)blk.recv, 0, blk.elems, a.verify, a.iteration, blk.source, b,
                   (hp_block_check*)a.checks + b);
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
        /* Relaxed polls, one acquire once the flag is seen (hp_load_relaxed_system). */
        if (hp_load_relaxed_system(flag) == a.epoch) {
            hp_load_acquire_system(flag);
            return 0;
        }
        /* The abort flag is a second PCIe read: look at it every 16th spin only. */
        if ((spins & 15u) == 15u) {
            if (hp_load_relaxed_system((const uint32_t*)a.abort_flag) == a.epoch) return HP_TQ_ABORTED;
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

/* ---- Device-direct exchange (SPEC 12): kernels store straight into the peer's memory. ---- */

/* The flag at `base` for epochs of `epoch`'s parity (see hp_ipc_chunk). */
HP_DEVICE uint32_t* hp_ipc_flag(uint64_t base, uint64_t parity_bytes, uint32_t epoch) {
    return (uint32_t*)(base + (uint64_t)(epoch & 1u) * parity_bytes);
}

/* Thread 0 waits until *flag >= target (epochs only grow). Returns 0, or HP_IPC_ABORTED /
 * HP_IPC_TIMED_OUT. */
HP_DEVICE uint32_t hp_ipc_wait(const hp_ipc_args& a, const uint32_t* flag, uint32_t target) {
    const uint64_t since = hp_timer();
    for (uint32_t spins = 0;; ++spins) {
        /* Relaxed polls, one acquire once the flag is seen (hp_load_relaxed_system). */
        if (hp_load_relaxed_system(flag) >= target) {
            hp_load_acquire_system(flag);
            return 0;
        }
        /* The abort flag and the timer are PCIe and clock reads: look every 256th poll. */
        if ((spins & 255u) == 255u) {
            if (hp_load_relaxed_system((const uint32_t*)a.abort_flag) == a.epoch) return HP_IPC_ABORTED;
            if (hp_timer() - since > a.timeout_ticks) return HP_IPC_TIMED_OUT;
        }
        hp_backoff(a.poll_backoff_ns);
    }
}

/* Stores chunk c of this epoch into the destination's slot and raises its arrival flag.
 * All threads call it; returns 0 or the state it gave up in. */
__device__ uint32_t hp_ipc_send_chunk(const hp_ipc_args& a, uint32_t c, const hp_ipc_chunk& ch,
                                      uint32_t* state) {
    __shared__ uint32_t outcome;
    if (threadIdx.x == 0) {
        outcome = 0;
        if (a.epoch > 2) {
            hp_store_relaxed_system(state, HP_IPC_WAIT_CREDIT);
            outcome = hp_ipc_wait(a, hp_ipc_flag(ch.credit, ch.flag_parity_bytes, a.epoch), a.epoch - 2);
        }
        if (outcome == 0) hp_store_relaxed_system(state, HP_IPC_PACKING);
    }
    __syncthreads();
    if (outcome != 0) return outcome;
    double* dst = (double*)(ch.dest_recv + (uint64_t)(a.epoch & 1u) * ch.dest_slot_bytes);
    for (uint64_t i = ch.begin + threadIdx.x; i < ch.send_end; i += blockDim.x) {
        dst[i] = hp_packed_value(a.iteration, a.rank, ch.block, i);
    }
    /* Every thread's stores reach the peer before the flag that announces them: the barrier
     * orders them before thread 0's acq_rel fence at system scope (cumulative), which orders
     * them before the flag. One such fence per block, not a sequentially consistent one per
     * thread (see hp_fence_acq_rel_system); the fence followed by a strong store is a release
     * pattern (PTX memory model), so the flag's store needs no fence of its own. */
    __syncthreads();
    if (threadIdx.x == 0) {
        hp_fence_acq_rel_system();
        hp_store_relaxed_system(hp_ipc_flag(ch.dest_arrival, ch.dest_flag_parity_bytes, a.epoch), a.epoch);
    }
    return 0;
}

/* Waits for chunk c of this epoch, checks it, and gives the slot back to its source.
 * All threads call it; returns 0 or the state it gave up in. */
__device__ uint32_t hp_ipc_receive_chunk(const hp_ipc_args& a, uint32_t c, const hp_ipc_chunk& ch,
                                         uint32_t* state, hp_block_times* t) {
    __shared__ uint32_t outcome;
    if (threadIdx.x == 0) {
        hp_store_relaxed_system(state, HP_IPC_WAIT_DATA);
        outcome = hp_ipc_wait(a, hp_ipc_flag(ch.arrival, ch.flag_parity_bytes, a.epoch), a.epoch);
        if (outcome == 0) {
            hp_store_relaxed_system(state, HP_IPC_UNPACKING);
            if (t) t->unpack_start = hp_timer();
        }
    }
    __syncthreads();
    if (outcome != 0) return outcome;
    const double* recv = (const double*)(ch.recv + (uint64_t)(a.epoch & 1u) * ch.slot_bytes);
    hp_check_range(recv, ch.begin, ch.end, a.verify, a.iteration, ch.source, ch.block,
                   (hp_block_check*)a.checks + c);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (t) t->unpack_end = hp_timer();
        /* One fence, then strong stores (release patterns): every thread's reads of the slot
         * (ordered by the barrier above) are done before the source may overwrite it, and the
         * check records and timestamps are written before the final state the caller stores. */
        hp_fence_acq_rel_system();
        hp_store_relaxed_system(hp_ipc_flag(ch.source_credit, ch.source_flag_parity_bytes, a.epoch), a.epoch);
    }
    return 0;
}

HP_DEVICE uint32_t* hp_ipc_state(const hp_ipc_args& a, uint32_t c) {
    return (uint32_t*)a.states + c;
}

HP_DEVICE hp_block_times* hp_ipc_times(const hp_ipc_args& a, uint32_t c) {
    return a.times ? (hp_block_times*)a.times + c : (hp_block_times*)0;
}

HP_DEVICE uint32_t* hp_ipc_send_state(const hp_ipc_args& a, uint32_t c) {
    return (uint32_t*)a.send_states + c;
}

/* Sends chunk c with timestamps and stores the sending side's final state: with release
 * (PUBLISH, ipc-base's pack kernel, whose records the CPU reads once it sees that state) or
 * relaxed (ipc-tq, where the same thread stores the receiving side's final state afterwards,
 * with release semantics, and the CPU reads records only once it sees both). */
template <bool PUBLISH>
__device__ uint32_t hp_ipc_pack_chunk(const hp_ipc_args& a, uint32_t c, const hp_ipc_chunk& ch) {
    uint32_t* state = hp_ipc_send_state(a, c);
    hp_block_times* t = hp_ipc_times(a, c);
    if (t && threadIdx.x == 0) t->pack_start = hp_timer();
    const uint32_t outcome = hp_ipc_send_chunk(a, c, ch, state);
    if (threadIdx.x == 0) {
        if (t) t->pack_end = hp_timer();
        const uint32_t final_state = outcome != 0 ? outcome : HP_IPC_SENT;
        if (PUBLISH) {
            hp_store_release_system(state, final_state);
        } else {
            hp_store_relaxed_system(state, final_state);
        }
    }
    return outcome;
}

/* Receives chunk c and publishes the receiving side's final state: after a successful receive
 * the fence in hp_ipc_receive_chunk makes the store a release pattern; otherwise it is a
 * release store. */
__device__ void hp_ipc_unpack_chunk(const hp_ipc_args& a, uint32_t c, const hp_ipc_chunk& ch) {
    uint32_t* state = hp_ipc_state(a, c);
    const uint32_t outcome = hp_ipc_receive_chunk(a, c, ch, state, hp_ipc_times(a, c));
    if (threadIdx.x != 0) return;
    if (outcome == 0) {
        hp_store_relaxed_system(state, HP_IPC_DONE);
    } else {
        hp_store_release_system(state, outcome);
    }
}

/* ipc-base, the sending half: every chunk stored into its destination. */
extern "C" __global__ void hp_ipc_pack(hp_ipc_args a) {
    const uint32_t c = blockIdx.x;
    if (c >= a.num_chunks) return;
    const hp_ipc_chunk ch = ((const hp_ipc_chunk*)a.chunks)[c];
    hp_ipc_pack_chunk<true>(a, c, ch);
}

/* ipc-base, the receiving half (queued after the pack kernel, on the same stream): every incoming
 * chunk waited for and checked. */
extern "C" __global__ void hp_ipc_unpack(hp_ipc_args a) {
    const uint32_t c = blockIdx.x;
    if (c >= a.num_chunks) return;
    const hp_ipc_chunk ch = ((const hp_ipc_chunk*)a.chunks)[c];
    hp_ipc_unpack_chunk(a, c, ch);
}

/* ipc-tq: the GPU-only taskqueue (thesis 3.4 without the CPU): one persistent kernel, each block
 * sends its chunk, then waits for and checks its incoming one. */
extern "C" __global__ void hp_ipc_taskqueue(hp_ipc_args a) {
    const uint32_t c = blockIdx.x;
    if (c >= a.num_chunks) return;
    const hp_ipc_chunk ch = ((const hp_ipc_chunk*)a.chunks)[c];
    const uint32_t sent = hp_ipc_pack_chunk<false>(a, c, ch);
    if (sent != 0) {
        /* The receiving half never ran: it ends in the state the sending half gave up in. */
        if (threadIdx.x == 0) hp_store_release_system(hp_ipc_state(a, c), sent);
        return;
    }
    hp_ipc_unpack_chunk(a, c, ch);
}

#endif /* HP_KERNELS_CUH */
