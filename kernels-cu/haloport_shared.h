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

/* The fused mode's descriptors (haloport_fused), which applications include alone. */
#include "haloport_device.h"

/* One block of the exchange pattern, as the kernels see it (SPEC 3). */
typedef struct hp_block {
    /* Device address of this block's send buffer (f64 elements), in pinned host memory. */
    uint64_t send;
    /* Device address of this block's send buffer in device memory (memcpy taskqueue), or 0. */
    uint64_t send_device;
    /* Device address of this block's receive buffer (f64 elements). */
    uint64_t recv;
    /* Elements in both buffers: block b has the same size on sender and receiver. */
    uint64_t elems;
    /* Rank this block's receive buffer comes from; unpack derives the expected value from it. */
    int32_t source;
    /* Rank this block's send buffer goes to. */
    int32_t dest;
} hp_block;

/*
 * Verification (SPEC 5). Element i of block b packed by rank r in global iteration it holds
 *   key * 2^21 + (i mod 2^21),   key = (1000 * (it + 1) + 100 * r + b) mod 2^31
 * (the thesis's listing 3.4 value as the key): an integer below 2^52, exact in f64, different
 * for every element of a block, so a short, shifted or stale message cannot look right.
 */
#define HP_VALUE_INDEX_BITS 21u
#define HP_VALUE_KEY_MASK 0x7fffffffull

/* What unpack checks: the thesis's sample plus the first and last element, or everything. */
#define HP_VERIFY_SAMPLE 0u /* per block: element 0, element elems-1, and one per thread */
#define HP_VERIFY_FULL 1u   /* per block: every element */

/* What unpack found in one block's receive buffer in one iteration (SPEC 5). */
typedef struct hp_block_check {
    /* Elements checked: threads + 2 (sample) or elems (full); 0 if unpack never ran. */
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
    /* HP_VERIFY_SAMPLE or HP_VERIFY_FULL. */
    uint32_t verify;
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

/*
 * Taskqueue (thesis 3.4, 3.5). One persistent kernel; grid block b runs the state machine of
 * thesis figures 3.7 / 3.11 and publishes its state in states[b] (for time-out reports):
 */
#define HP_TQ_IDLE 0u
#define HP_TQ_WAIT_COPY 1u  /* memcpy: waiting for the CPU to say the H2D copy finished */
#define HP_TQ_PACKING 2u
#define HP_TQ_WAIT_RECV 3u  /* task posted; waiting for the go flag (receive arrived) */
#define HP_TQ_UNPACKING 4u
#define HP_TQ_DONE 5u
#define HP_TQ_TIMED_OUT 6u  /* gave up waiting after timeout_ticks */
#define HP_TQ_ABORTED 7u    /* the CPU raised the abort flag */

/* Mode bits. */
#define HP_TQ_MODE_QUEUE 1u  /* one task queue under a GPU-side lock; else one channel per block */
#define HP_TQ_MODE_MEMCPY 2u /* pack into device memory between CPU-issued H2D and D2H copies */

/*
 * Flags live in coherent pinned memory, one per block, `stride` bytes apart (a cache line or
 * more by default, thesis 3.6.3), each written by one side and read by the other with
 * release/acquire ordering. Values are the iteration's epoch (never 0), so nothing needs a
 * reset between iterations:
 *   tasks[b]      channel mode: GPU -> CPU, u32 := epoch when block b packed.
 *   tasks[slot]   queue mode: u64 entries := (epoch << 32) | (b + 1), slot = tail % num_blocks,
 *                 appended under queue_lock; queue_lock and queue_tail (u32) in device memory.
 *   pack_go[b]    memcpy mode: CPU -> GPU, u32 := epoch when block b's H2D copy finished.
 *   unpack_go[b]  CPU -> GPU, u32 := epoch when block b's receive completed.
 *   states[b]     GPU -> CPU, u32 HP_TQ_* state.
 *   abort_flag    CPU -> GPU, u32 := epoch to make every waiting block give up.
 */
typedef struct hp_taskqueue_args {
    hp_exchange_args exchange;
    uint64_t tasks;
    uint64_t pack_go;
    uint64_t unpack_go;
    uint64_t states;
    uint64_t abort_flag;
    uint64_t queue_lock;
    uint64_t queue_tail;
    uint64_t timeout_ticks;
    uint32_t mode;
    uint32_t stride;
    uint32_t epoch;
    /* Pause between polls of a flag, nanoseconds (0: spin). */
    uint32_t poll_backoff_ns;
} hp_taskqueue_args;

/*
 * Device-direct exchange within a node (SPEC 12, transport `ipc`). Every rank keeps its receive
 * buffers (two slots: iteration epoch e uses slot e & 1) and two flag arrays in device memory
 * exported by IPC; its peers open them. A pattern block is served by one or more chunks, one GPU
 * block each; chunk c is both an outgoing chunk (block b to its destination) and an incoming one
 * (block b from its source: block b has the same size on both sides, so the chunking agrees).
 * Flags are u32 epochs `stride` bytes apart, never reset:
 *   arrival[c]  in the receiver's memory: the sender raises it to e after storing chunk c of
 *               epoch e into the receiver's slot e & 1 (system-scope fence, then release).
 *   credit[c]   in the sender's memory: the receiver raises it to e after unpacking epoch e, so
 *               the sender may overwrite that slot with epoch e + 2.
 * A sender waits for credit >= e - 2 before packing epoch e; a receiver waits for
 * arrival >= e (the sender may already be one epoch ahead, in the other slot).
 */
#define HP_IPC_IDLE 0u
#define HP_IPC_WAIT_CREDIT 1u /* sender waiting for the receiver to free the slot */
#define HP_IPC_PACKING 2u
#define HP_IPC_WAIT_DATA 3u   /* receiver waiting for the chunk's arrival flag */
#define HP_IPC_UNPACKING 4u
#define HP_IPC_DONE 5u
#define HP_IPC_TIMED_OUT 6u
#define HP_IPC_ABORTED 7u
#define HP_IPC_SENT 8u        /* sender: the chunk is stored and its flag raised (final) */

typedef struct hp_ipc_chunk {
    /* Pattern block this chunk belongs to, and the block's size in elements. */
    uint32_t block;
    uint32_t reserved;
    uint64_t elems;
    /* Elements [begin, end) of the block that this chunk moves. */
    uint64_t begin;
    uint64_t end;
    /* Outgoing, the chunk's elements [begin, send_end) are stored: send_end == end, except
     * where fault injection (core/src/transport/faulty.rs) drops or shortens a send. */
    uint64_t send_end;
    /* Outgoing: the destination's receive buffer for this block, slot 0, as this process
     * addresses it (opened IPC memory); the destination's slot size in bytes; the destination's
     * arrival flag for this chunk; this chunk's credit flag in our own memory. */
    uint64_t dest_recv;
    uint64_t dest_slot_bytes;
    uint64_t dest_arrival;
    uint64_t credit;
    /* Incoming: our receive buffer for this block, slot 0; our slot size in bytes; our arrival
     * flag for this chunk; the source's credit flag for this chunk (opened IPC memory). */
    uint64_t recv;
    uint64_t slot_bytes;
    uint64_t arrival;
    uint64_t source_credit;
    /* Bytes from each flag above (of epochs of parity 0) to its twin for epochs of parity 1:
     * the destination's flags (dest_arrival), ours (credit, arrival) and the source's
     * (source_credit). With a flag per parity, a flag only ever carries epochs of its parity,
     * in increasing order, so the kernels of consecutive epochs may run at once (pipelined back
     * to back). 0 where one flag serves both parities (host-staged chunks, faults). */
    uint64_t dest_flag_parity_bytes;
    uint64_t flag_parity_bytes;
    uint64_t source_flag_parity_bytes;
    /* Ranks the incoming chunk comes from and the outgoing one goes to. */
    int32_t source;
    int32_t dest;
} hp_ipc_chunk;

/* The argument of hp_ipc_pack, hp_ipc_unpack and hp_ipc_taskqueue. */
typedef struct hp_ipc_args {
    /* Device address of hp_ipc_chunk[num_chunks]. */
    uint64_t chunks;
    /* hp_block_check[num_chunks] and hp_block_times[num_chunks] (coherent pinned): one record
     * per chunk; the CPU folds them per block. */
    uint64_t checks;
    uint64_t times;
    /* u32 HP_IPC_* states per chunk, 4 bytes apart (coherent pinned): the receiving side's
     * (final: DONE), then the sending side's (final: SENT). Each chunk's records are written
     * before its final states (release), so the CPU may read them once it sees every chunk's
     * final states, without waiting for the kernels to be reported finished. */
    uint64_t states;
    uint64_t send_states;
    /* u32 abort flag (coherent pinned), CPU -> GPU: every wait gives up when it equals epoch. */
    uint64_t abort_flag;
    /* A wait gives up after this many device timer ticks. */
    uint64_t timeout_ticks;
    uint32_t num_chunks;
    int32_t rank;
    /* Global iteration number (part of every packed value) and its epoch, iteration + 1. */
    uint32_t iteration;
    uint32_t epoch;
    /* HP_VERIFY_SAMPLE or HP_VERIFY_FULL. */
    uint32_t verify;
    /* Pause between polls of a flag, nanoseconds (0: spin). */
    uint32_t poll_backoff_ns;
} hp_ipc_args;

/*
 * The library's halo exchange (SPEC 13): fields of f32 or f64 elements in 3-D arrays, and
 * regions of them (a face, an edge or a corner) described in a flattened form (seed 002):
 * an offset plus nested count/stride, innermost dimension first. Element e of a region, with
 *   i0 = e % count[0], i1 = (e / count[0]) % count[1], i2 = e / (count[0] * count[1]),
 * lives at field index offset + i0 * stride[0] + i1 * stride[1] + i2 * stride[2], and at index
 * e of the region's packed buffer. One GPU thread per element, no dependencies between threads.
 *
 * A launch serves many regions: region r owns grid blocks [first_block, first_block + blocks);
 * a grid block finds its region by binary search and its threads stride over the region's
 * elements by blocks * blockDim.
 *
 * Pairs: a region whose `partner` is p + 1 also moves region p (same counts and strides, no
 * message on either), whose record has blocks = 0 and first_block = the grid size and comes
 * after every region with blocks. The pair's 2n units interleave them: unit u is element u / 2
 * of the region (u even) or element (u / 2 + n - 1) mod n of the partner (u odd), so that the
 * -x face's element of row k and the +x face's of row k - 1, a few words apart, go through
 * neighbouring lanes of one warp instruction (results/HISTORY.md: h200-pack-probe).
 */
#define HP_NO_MESSAGE 0xffffffffu

/*
 * What a region's elements are (hp_region.payload):
 *   HP_PAYLOAD_FIELD      elements of a field, by the index rule above.
 *   HP_PAYLOAD_SYNTHETIC  the thesis's synthetic block (SPEC 5; f64 only): offset holds the
 *     block's key, the packing rank in its high 32 bits (two's complement) and the block id in
 *     its low 32 bits; element e lies at buffer index e, e < count[0] * count[1] * count[2]
 *     (field is unused). Pack stores hp_packed_value(iteration, rank, block, e); unpack checks
 *     elements against it (hp_regions_args.verify) and each grid block writes its
 *     hp_block_check at checks + blockIdx.x. Each of the region's blocks serves a contiguous
 *     run of its elements, the runs HP_SYNTHETIC_RUN_ALIGN-aligned (hp_synthetic_run), as
 *     ipc-tq's chunks do: a block that streams through neighbouring lines stores faster than
 *     blocks interleaved across the region.
 *   HP_PAYLOAD_COPY       pack only: elements of a field copied straight into another region
 *     of the same counts and strides (a local neighbour's halo: no slot, no unpack). Element e
 *     moves from field index offset + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] to
 *     buffer index i0 * stride[0] + i1 * stride[1] + i2 * stride[2] (buffer: the destination
 *     region's first element). A pair's regions are of one payload.
 */
#define HP_SYNTHETIC_RUN_ALIGN 32u
#define HP_PAYLOAD_FIELD 0u
#define HP_PAYLOAD_SYNTHETIC 1u
#define HP_PAYLOAD_COPY 2u

typedef struct hp_region {
    /* Device address of the field's element 0 (the allocated array, halos included). */
    uint64_t field;
    /* Device address of the region's packed elements (pinned host, own or a peer's device
     * memory). */
    uint64_t buffer;
    /* Elements from `field` to the region's first element. */
    uint64_t offset;
    /* Extents and element strides, innermost first; count[k] >= 1. */
    uint64_t count[3];
    uint64_t stride[3];
    /* Grid blocks of this region: [first_block, first_block + blocks). Regions are listed in
     * increasing first_block, without gaps. */
    uint32_t first_block;
    uint32_t blocks;
    /* Index into the launch's message table, or HP_NO_MESSAGE (no signalling). */
    uint32_t message;
    /* Index + 1 of the region this one moves along with itself, or 0 (see Pairs above). */
    uint32_t partner;
    /* HP_PAYLOAD_*. */
    uint32_t payload;
    uint32_t reserved;
} hp_region;

/*
 * Signalling for device-direct messages (several regions, one per field, may form one message).
 * Before touching its region, a grid block waits (thread 0, bounded by timeout_ticks, watching
 * the abort flag) until *wait + wait_lag >= epoch (no wait when wait == 0): a lag, not a value, so
 * one table serves every epoch. After its
 * stores, it fences at system scope and adds 1 to *counter (monotonic, never reset); the block
 * that brings *counter to epoch * blocks fences again and stores epoch into *flag (the fence and
 * the strong store a release; no store when flag == 0). A message of one block counts nothing:
 * its block stores the flag after its fence. So every epoch must run every block of the message
 * once. The abort flag lies in device memory: polled across PCIe, it slowed every kernel beside
 * the waiting blocks.
 *   pack:    wait = own credit flag (the peer unpacked the slot), flag = the peer's arrival flag
 *   unpack:  wait = own arrival flag (>= epoch),                  flag = the peer's credit flag
 */
typedef struct hp_message_signal {
    /* Device address of a u32 block counter in this process's device memory (compared modulo
     * 2^32 with epoch * blocks). */
    uint64_t counter;
    /* Device address of the u64 flag raised to epoch when the message is complete, or 0. */
    uint64_t flag;
    /* Device address of the u64 flag waited for, or 0. */
    uint64_t wait;
    /* Epochs the awaited flag may lag behind this one: 0 for an arrival of this epoch, 2 for
     * the credit of the slot used two epochs ago. */
    uint32_t wait_lag;
    /* Grid blocks serving the message, over all its regions. */
    uint32_t blocks;
} hp_message_signal;

/* What a region kernel's waits ended in, per message (u32, coherent pinned). */
#define HP_MESSAGE_OK 0u
#define HP_MESSAGE_TIMED_OUT 1u
#define HP_MESSAGE_ABORTED 2u

/* The most regions a launch carries in its parameters (hp_regions_args.inline_regions): 32 of
 * 96 bytes keep the arguments under the 4 KiB that CUDA and HIP both accept, and hold the 26
 * neighbour regions of one field. */
#define HP_INLINE_REGIONS 32
/* The one-launch exchange of a table of at most this many regions, carried inline, launches
 * hp_exchange_regions_few, whose parameter is hp_regions_args cut after that many inline
 * regions: 880 bytes against 3184. A launch's parameters cost the host's call and the device's
 * start about 0.4 us a KiB (3 KiB against 80 B: results/HISTORY.md: h200-lib-latency), and a
 * small exchange (two ranks trading 4 blocks each way: 8 regions) is mostly launch: with this
 * entry and the argument built once, lib-tq-ipc on small went from 1.22-1.24 to 1.17-1.18 x
 * ipc-tq (results/HISTORY.md: h200-few-args; a second entry for 20 regions, thesis-9's 18,
 * measured no gain there). The host passes the whole struct; the driver copies the bytes the
 * kernel's parameter has. */
#define HP_INLINE_REGIONS_FEW 8

/* The argument of hp_pack_regions and hp_unpack_regions. */
typedef struct hp_regions_args {
    /* Device address of hp_region[num_regions]. */
    uint64_t regions;
    /* Device address of hp_message_signal[...], or 0 when no region has a message. */
    uint64_t messages;
    /* Device address of u32 status per message (HP_MESSAGE_*), or 0 when messages == 0. */
    uint64_t status;
    /* Device address of the u64 abort flag: a wait gives up when *abort_flag >= epoch; or 0. */
    uint64_t abort_flag;
    /* A wait gives up after this many device timer ticks. */
    uint64_t timeout_ticks;
    /* This exchange's epoch (1, 2, ...): counter targets and flag values. 64-bit, so that
     * epochs never wrap, however long a job runs. */
    uint64_t epoch;
    /* Device address of a u64 the kernels add to `epoch`, or 0. A graph's launches keep the
     * epochs they were captured with; each replay first moves this word on by the exchanges
     * replayed before (hp_epoch_step), so the flags still see every epoch once, in order. */
    uint64_t epoch_base;
    /* Device address of hp_block_check[grid blocks] (coherent pinned) where synthetic regions'
     * unpack writes each grid block's checks, or 0 when the launch has none. */
    uint64_t checks;
    /* Device address of hp_block_times[grid blocks] (coherent pinned), or 0: the full form's
     * thread 0 of each grid block that serves a region stamps its two fields of this launch's
     * side, pack_start (before its wait) and pack_end, or unpack_start (once its wait ended)
     * and unpack_end, each end after the block's moves, count and flag. A pack and an unpack
     * launch may share one array: each writes only its own fields. The plain form stamps
     * nothing (the host passes 0). */
    uint64_t times;
    /* HP_REGIONS_FUSED(_COPIES) only: device address of u64[grid blocks] in coherent pinned
     * memory, each grid block raising its own word to `epoch` once its moves, checks and
     * stamps are done, or 0. The host polls them where it would otherwise wait for an event. */
    uint64_t done;
    uint32_t num_regions;
    /* 4 (f32) or 8 (f64): elements are moved as 32- or 64-bit words. */
    uint32_t elem_bytes;
    /* The global iteration synthetic values are made of. */
    uint32_t iteration;
    /* Which elements of a synthetic region unpack checks: HP_VERIFY_FULL every one;
     * HP_VERIFY_SAMPLE the thesis's sample of the whole block, taken by the region's first
     * grid block (hp_check_range), the others writing records of no checks. */
    uint32_t verify;
    /* HP_REGIONS_FULL, HP_REGIONS_PLAIN, HP_REGIONS_FUSED or HP_REGIONS_FUSED_COPIES: which
     * form of the kernels the launch runs. */
    uint32_t form;
    /* 1: the table is inline_regions[0, num_regions) (num_regions <= HP_INLINE_REGIONS), not
     * the one at `regions`; 0: the table at `regions`. HP_REGIONS_FUSED(_COPIES) counts its
     * unpack regions in both bounds. */
    uint32_t table_inline;
    /* HP_REGIONS_FUSED(_COPIES) only: the unpack regions, after the num_regions pack regions
     * of the table (0 in the other forms). */
    uint32_t num_unpack_regions;
    uint32_t reserved;
    /* A table carried in the launch's parameters: every block of a launch reads its region
     * from the constant bank instead of searching device memory (0.8 us off a 6-face f64 pack
     * of 16 us, 1.6 us off an f32 one of 11.8: docs/results.md#pack-and-unpack-kernels).
     * Unused when table_inline == 0. */
    hp_region inline_regions[HP_INLINE_REGIONS];
} hp_regions_args;

/* The argument of hp_epoch_step: *word = value (set = 1) or *word += value (set = 0), by one
 * thread. A replayed graph ends with one (its epochs move on by its exchanges), and a replay
 * after exchanges outside the graph starts with one that sets the word. */
typedef struct hp_epoch_args {
    /* Device address of the u64 (hp_regions_args.epoch_base). */
    uint64_t word;
    uint64_t value;
    uint32_t set;
    uint32_t reserved;
} hp_epoch_args;

/* One word a signal kernel stores or waits for: the u64 at `addr`, `per_epoch` times the epoch
 * (fused mode: a credit is the epoch itself, an arrival count the epoch times a message's
 * cells). */
typedef struct hp_word_op {
    uint64_t addr;
    uint64_t per_epoch;
} hp_word_op;

/*
 * The argument of hp_fused_signal (fused mode's start and finish, one block): with
 * e = *epoch + 1, stores e * per_epoch into each of the first `stores` ops (release, system
 * scope: another process reads them), then waits until each of the next `waits` ops' words is
 * at least e * per_epoch (acquire), each wait bounded by timeout_ticks from the launch's start;
 * then, with advance != 0 and every wait met, *epoch = e. A wait that times out stores 1 + its
 * index (among the waits) into the u32 at `status` (the first to do so wins) and the launch
 * ends without advancing. The epoch lives in device memory, so a captured launch moves on with
 * each replay.
 */
typedef struct hp_signal_args {
    /* Device address of stores + waits hp_word_op entries, the stores first. */
    uint64_t ops;
    /* Device address of this rank's fused epoch (u64). */
    uint64_t epoch;
    /* Device address of the u32 status word (pinned memory: the host reads it). */
    uint64_t status;
    uint64_t timeout_ticks;
    uint32_t stores;
    uint32_t waits;
    uint32_t advance;
    uint32_t reserved;
} hp_signal_args;

/*
 * The forms of the region kernels (hp_regions_args.form; the host picks the symbol by it):
 *   HP_REGIONS_FULL   hp_pack_regions / hp_unpack_regions: any table.
 *   HP_REGIONS_PLAIN  hp_{pack|unpack}_regions_w4 / _w8 for 4- and 8-byte elements: tables whose
 *     regions have no message and a field payload, and whose every region fits the 32-bit index
 *     rule (its units, 2n with a partner, plus HP_UNROLL steps of blocks * threads below 2^31,
 *     its strides below 2^32). Without the other paths these need half the registers, so an SM
 *     holds twice the blocks (haloport_core::regions::kernel_form decides).
 */
#define HP_REGIONS_FULL 0u
#define HP_REGIONS_PLAIN 1u
/*   HP_REGIONS_FUSED  hp_exchange_regions: an exchange whose every message is device-direct, in
 *     one launch (ipc-tq's shape: no kernel boundary between a message's pack and its unpack).
 *     The table holds the pack regions, then the num_unpack_regions unpack regions, each side
 *     numbering its grid blocks from 0; unpack regions name messages after the pack ones (their
 *     signals follow the pack signals, their status words the pack ones). Grid block b packs its
 *     pack block b, then unpacks its unpack block b, so a block waits for a peer only after its
 *     own stores. Its waits depend on other processes' blocks only: the host launches it only
 *     where every rank's grid on the device can be resident at once. */
#define HP_REGIONS_FUSED 2u
/*   HP_REGIONS_FUSED_COPIES  hp_exchange_regions_copies: HP_REGIONS_FUSED whose pack side may
 *     also hold HP_PAYLOAD_COPY regions, a rank's own messages copied straight into its halos
 *     (a periodic rank with device-direct neighbours too): they need no kernel boundary either.
 *     A kernel of its own, so that the one launch without copies keeps its registers. */
#define HP_REGIONS_FUSED_COPIES 3u
/*   HP_REGIONS_FUSED_SYNTHETIC  hp_exchange_synthetic(_few): HP_REGIONS_FUSED whose every region
 *     is synthetic (HP_PAYLOAD_SYNTHETIC, the thesis's workload as the library's messages) and
 *     has its message: kernels without the moves or the unsignalled path, a twentieth of the
 *     code (a region without a message moves nothing there). */
#define HP_REGIONS_FUSED_SYNTHETIC 4u

/* Elements a thread of the region kernels moves at once, all loads before any store, so their
 * memory latencies overlap (results/HISTORY.md: h200-pack-probe: with loads issued one at a
 * time, a thread's strided loads wait for each other). */
#define HP_UNROLL 4u

/*
 * One Jacobi sweep of the 27-point stencil over a box of a field's interior (SPEC 13's
 * application): out[p] = S * (1 / 27), computed in the element type, where S is the sum of
 * in[p + d] over d in -1..1 per dimension in one order, nested partial sums: per row (dz, dy)
 * r = (in[dx = -1] + in[0]) + in[1], per plane dz s = (r[dy = -1] + r[0]) + r[1], then
 * S = (s[dz = -1] + s[0]) + s[1]. Every kernel form, backend and decomposition adds in that
 * order, so all give the same bits.
 */
typedef struct hp_stencil_args {
    /* Device addresses of the input and output fields (same layout). */
    uint64_t in;
    uint64_t out;
    /* Allocated extents, halos included, innermost (x) first: index = x + ax * (y + ay * z). */
    uint64_t alloc[3];
    /* The box to update, in allocated coordinates: [begin[k], end[k]) per dimension; every
     * point's 26 neighbours lie inside the allocation. */
    uint64_t begin[3];
    uint64_t end[3];
    /* 4 (f32) or 8 (f64). */
    uint32_t elem_bytes;
    /* Which neighbours the update reads (HP_STENCIL_*); 0: all 26 (HP_STENCIL_FULL). */
    uint32_t shape;
    /* Interleaved components per cell (0 or 1: one): component c of the cell at index i is
     * element i * components + c, updated from the same component of the neighbours. */
    uint32_t components;
    /* How the kernel walks the box (HP_STENCIL_FORM_*); every form gives the same bits. */
    uint32_t form;
    /* The shell in the box's tiles (HP_SHELL_*; only hp_stencil27_march64_shell,
     * hp_stencil27_shell_fixup and hp_stencil27_shell_ready read these): device address of
     * the control words, 0 for none; which of their two sets this step uses (0 or 1; steps
     * alternate), or HP_SHELL_HALOS_IN for a step without an exchange (the box alone, words
     * unused); how many tile numbers a set's list holds. */
    uint64_t shell;
    uint32_t parity;
    uint32_t shell_capacity;
    /* Fused mode (hp_stencil_fused only): device address of the out field's descriptor
     * (haloport_fused, haloport_device.h); each updated cell a neighbour needs is also stored
     * into its halo, and each block adds its cells to the neighbours' counts. */
    uint64_t fused;
} hp_stencil_args;

/* hp_stencil_args.form: MARCH (0, the default) for the full 27-point stencil over one
 * component: each thread walks HP_MARCH_ROWS rows of HP_MARCH_Z planes along z, summing each
 * row and each plane of its neighbourhood once and keeping the plane sums of the two planes
 * before in registers, so a cell costs (HP_MARCH_ROWS + 2) * 3 / HP_MARCH_ROWS loads and about
 * 7 additions instead of 27 and 26 (other stencils and components take the point form).
 * POINTS: one thread per point, striding. */
#define HP_STENCIL_FORM_MARCH 0u
#define HP_STENCIL_FORM_POINTS 1u
/* A march tile: 32 threads in x (a warp) by blockDim.x / 32 threads in y, each thread
 * HP_MARCH_COLS columns 32 apart of HP_MARCH_ROWS rows, HP_MARCH_Z planes deep: HP_MARCH_X *
 * HP_MARCH_COLS points wide. Boxes of at least HP_MARCH_X x HP_MARCH_ROWS x HP_MARCH_MIN_Z
 * points march in tiles: a shell's z slabs, one plane deep, too (3 planes loaded a plane
 * stored, where the point form they took before loads 27 points a point). Thinner boxes (a
 * shell's x and y slabs) march in columns in hp_stencil27_marching. */
#define HP_MARCH_X 32u
#define HP_MARCH_COLS 1u
#define HP_MARCH_ROWS 4u
#define HP_MARCH_Z 32u
#define HP_MARCH_MIN_Z 1u
/* hp_stencil27_marching, the march form as an entry of its own (blocks of at most
 * HP_MARCHING_MAX_THREADS threads, a multiple of HP_MARCH_X): without the point paths beside it
 * the compiler keeps fewer registers, and its tiles are chosen per element type. f32: 2 rows x
 * 2 columns x 16 planes (554 us at 512^3 on one H100 against 643 us with 4 rows x 1 column:
 * results/HISTORY.md: h100-step-wide; 391 us on one H200, 68 % of the copy speed, better than
 * any other tiling or register floor there: results/HISTORY.md: h200-tiles). f64 tiles march in
 * an entry of their own, hp_stencil27_march64: 4 rows x 1 column, at least
 * HP_MARCH64_MIN_BLOCKS blocks an SM (80 registers), where 2 x 2 x 32 tiles in this entry were
 * 9 % slower and the same tiles beside this entry's other paths 3 % (results/HISTORY.md: h200-tiles
 *); 8 planes deep, 2 % faster than 16 over the step's inner box at 512^3 on one H200
 * (667 against 682 us, results/HISTORY.md: h200-march-prefetch). */
#define HP_MARCHING_MAX_THREADS 256u
#define HP_MARCH64_ROWS 4u
#define HP_MARCH64_COLS 1u
#define HP_MARCH64_Z 8u
#define HP_MARCH64_MIN_BLOCKS 3
#define HP_MARCH32_ROWS 2u
#define HP_MARCH32_COLS 2u
#define HP_MARCH32_Z 16u
/* hp_stencil27_marching's own f64 tiles, 2 x 2 x 32 (83 % of the copy speed on one H100 in
 * results/HISTORY.md: h100-step-fast, 72 % on one H200): the host sends f64 tiles to
 * hp_stencil27_march64, but the entry keeps them, and with them the 64 registers its f32 code
 * was measured with (without them ptxas gives it 48). */
#define HP_MARCHING64_ROWS 2u
#define HP_MARCHING64_COLS 2u
#define HP_MARCHING64_Z 32u
/* How many planes ahead of its loads a thread of hp_stencil27_march64 prefetches its rows into
 * L2: with 2 the stencil's compute at 512^3 f64 on one H200 took 689 against 745 us, the inner
 * box alone 617 us, 84 % of the copy speed (results/HISTORY.md: h200-l2-prefetch); 1 and 3 did as
 * well as 2, and prefetching the rows beside a warp's too, or a row per warp in bulk, was
 * slower. The f32 tiles in hp_stencil27_marching do not prefetch: in that entry it took 74 to 78
 * registers against 64 and was 2 to 22 % slower; 2 x 2 x 8 tiles in a kernel of their own gained
 * 2 % (f32_bench.csv there), not worth an entry. */
#define HP_MARCH_PREFETCH 2u
/* hp_stencil7_marching, the 7-point stencil's march form in an entry of its own (blocks of at
 * most HP_MARCHING_MAX_THREADS threads) with a floor of HP_MARCH7_MIN_BLOCKS resident blocks an
 * SM, as hp_stencil27_march64. At 512^3 on one H200 its f64 compute took 753-754 us against
 * 774 us in hp_stencil27 (70 against 68 % of the copy speed; 80 registers on sm_90 in both),
 * but its f32 488-495 against 481-483 us: the host sends it f64 only
 * (haloport_core::regions::stencil7_marching), and its f32 branch stays so that its code stays
 * the one measured. The same bounds on hp_stencil27 itself gained 4 % in f64 and 5 % in f32,
 * but hp_stencil27 takes any block size. An L2 prefetch as hp_stencil27_march64's gained
 * nothing, and tiles 8 planes deep lost 7 % (results/HISTORY.md: h200-compact-launch). */
#define HP_MARCH7_MIN_BLOCKS 3
/* hp_stencil27_march32: the march form's f32 tiles in lanes of HP_LANES_POINTS consecutive
 * points, loaded as one 16-byte vector a row, x - 1 and x + 4 taken from the lanes beside
 * (shuffles; lanes 0 and 31 load the ends of their group's 128 points): a row costs a lane one
 * aligned load where hp_march_plane's three loads each cost two L1 wavefronts a warp, two of
 * them unaligned. A thread marches one row of its lane's points through HP_LANES_Z planes,
 * prefetching HP_LANES_PREFETCH planes ahead. Only for rows of a multiple of 4 elements (an
 * application pads its rows for it, as with cudaMallocPitch; the tiles start where the field's
 * vectors do, at any 4-byte phase) or, in 16-byte aligned fields, of 2 mod 4 in planes of a
 * multiple of 4 (the off form: odd rows' lanes sit 2 points after even rows', and the rows
 * beside a lane's are read 2 points off and shuffled into place;
 * haloport_core::regions::stencil_lanes). Over the step's inner box at 512^3 (rows of 516) on one
 * H200: 334.7 us against 397.8 us for hp_stencil27_marching's f32 tiles, 79 % of the copy
 * speed; one row a thread beat 2, 3 and 4, 2 and 1 point lanes were slower than the tiles
 * (results/HISTORY.md: h200-lane-rows). */
#define HP_LANES_POINTS 4u
#define HP_LANES_Z 32u
#define HP_LANES_PREFETCH 2u
/* hp_stencil27_marching over a box at least HP_MARCH_MIN_Z planes deep but too thin for tiles
 * (a shell's x and y slabs): a thread per column of HP_SLAB_Z planes (hp_stencil27_slab). 4
 * planes rather than 8 (twice the threads for a latency-bound slab): the stencil's compute at
 * 512^3 on one H200 6 us faster in f64 and f32 (results/HISTORY.md: h200-l2-prefetch). */
#define HP_SLAB_Z 4u

/* The x and y slabs of a step's shell marched in the inner box's own tiles
 * (hp_stencil27_march64_shell): the slabs next to the halos in x and y cost the step 50 to 60 us
 * at 512^3 f64 on one H200 as launches of their own, run after the box, one point a row in x
 * (results/HISTORY.md: h200-shell-timeline). Tiles take the box's columns and the rows from
 * begin[1] - 1 to end[1] + 1; in the last tile of each row of tiles the lane at x = end[0]
 * takes the x-high slab, the one after it the x-low slab (x = begin[0] - 1, reading its
 * columns there), so the box needs (end[0] - begin[0]) % 32 in 1 .. 30. Those lanes also copy
 * the halo point beside their point from `in` to `out` (a halo of `out` is refreshed by the
 * next exchange before anything reads it, or is a fixed boundary equal in both fields), so the
 * slabs' sectors are written whole: 14 us over the box alone, against 22 us without the
 * copies.
 *
 * The slabs read the halos, which arrive while the box runs: each block reads the set's ready
 * word once (hp_stencil27_shell_ready raises it after the exchange's finish); before it is
 * raised a block leaves its slab points and appends its tile's number to the set's list, and
 * hp_stencil27_shell_fixup, queued after both, updates the listed tiles' slab points (in columns
 * marching their planes: the same bits) and clears the other set for the next step. Control words (u32): ready
 * for sets 0 and 1, list lengths for sets 0 and 1, then each set's list of shell_capacity tile
 * numbers. */
#define HP_SHELL_READY 0u
#define HP_SHELL_COUNT 2u
#define HP_SHELL_LIST 4u
/* hp_stencil_args.parity of a step without an exchange: the halos are in from the start, so the
 * box takes its slabs in every tile and reads and writes no control word (no ready word or
 * fix-up is queued: they are the exchange's cost, not the update's). */
#define HP_SHELL_HALOS_IN 2u
/* Blocks of hp_stencil27_shell_fixup (its threads stride over the listed tiles' slab columns):
 * 2 an SM of an H100 or H200. */
#define HP_SHELL_FIXUP_BLOCKS 264u

/* hp_stencil_args.shape: bit HP_STENCIL_LO << k reads offset -1 in dimension k (x, y, z = 0, 1,
 * 2), bit HP_STENCIL_HI << k offset +1; HP_STENCIL_FACES reads only points that differ from the
 * centre in one dimension (the 7-point stencil). The update is the mean of the points read,
 * summed in the order of the full stencil with the points not read left out (a partial sum
 * starts from its first term; a row or plane without a point read is no term), so a point
 * whose halo side has width 0 takes a one-sided mean. */
#define HP_STENCIL_LO 1u
#define HP_STENCIL_HI 8u
#define HP_STENCIL_FACES 64u
#define HP_STENCIL_FULL 63u

#endif /* HALOPORT_SHARED_H */
