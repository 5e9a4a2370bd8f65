/*
 * Fused mode through the C ABI, on the host backend (1, 2 or 4 ranks of one node; CI runs 2):
 * the library allocates two sets of two f64 fields; each step writes one set's interior with a
 * value derived from (global cell, step, field) and, through the host descriptors and
 * haloport_device.h's haloport_target, stores each boundary cell into the neighbours' halos,
 * then adds each block's cells per message to the neighbour's counter (release), as
 * haloport_block_done does on a GPU. After haloport_exchange_fused_finish every halo cell must
 * hold its global cell's value of that step: a halo left unfilled keeps the value of two steps
 * before (or 0) and fails. Also the refusals: before fuse, 0 sets, different numbers of sets on
 * different ranks, fused twice, a set that does not exist, a count that does not match, NULL
 * pointers, and host-staged neighbours. Prints
 * one line per check and exits non-zero if any failed.
 *
 *   mpicc -std=c11 fused.c $(pkg-config --cflags --libs haloport) -o fused && mpirun -np 2 ./fused
 */
#include <haloport.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS 2
#define SETS 2
#define STEPS 6

#include "checks.h"

static int size;

static const uint64_t grid[3] = {12, 10, 8};
static const int32_t periodic[3] = {1, 1, 0};

/* The value of global cell g of field f in step n: never 0, different per step and field. */
static double value(const int64_t g[3], int n, int f) {
    return 1.0 + (double)(g[0] + 100 * g[1] + 10000 * g[2]) + 0.25 * f + 1000000.0 * n;
}

/* This rank's layout, read back from the exchange. */
static uint64_t alloc[3], lo[3], hi[3], local[3], origin[3];

static size_t index_of(uint32_t x, uint32_t y, uint32_t z) {
    return (size_t)x + alloc[0] * ((size_t)y + alloc[1] * (size_t)z);
}

/* One step of the application on set `set`: every interior cell of each field written, and
 * stored wherever its descriptor sends it; each z-slab of the interior counts as one block,
 * reported per message once its stores are done. */
static void step(haloport_exchange *exchange, double **fields, int set, int n) {
    const void *device[FIELDS] = {NULL, NULL};
    expect("fused_start", haloport_exchange_fused_start(exchange, (size_t)set, NULL, device), HALOPORT_STATUS_OK,
           NULL);
    haloport_fused d[FIELDS];
    expect("the host descriptors", haloport_exchange_fused_descriptors(exchange, (size_t)set, d, FIELDS),
           HALOPORT_STATUS_OK, NULL);
    /* On the host backend the device addresses are this process's memory. */
    int same = 1;
    for (int f = 0; f < FIELDS; f++) same &= device[f] != NULL && memcmp(device[f], &d[f], sizeof d[f]) == 0;
    check("the descriptors fused_start returned are the host copies", same, "they differ");
    for (int f = 0; f < FIELDS; f++) {
        double *u = fields[f];
        for (uint32_t z = (uint32_t)lo[2]; z < lo[2] + local[2]; z++) {
            for (uint32_t y = (uint32_t)lo[1]; y < lo[1] + local[1]; y++) {
                for (uint32_t x = (uint32_t)lo[0]; x < lo[0] + local[0]; x++) {
                    const int64_t g[3] = {(int64_t)(origin[0] + x - lo[0]), (int64_t)(origin[1] + y - lo[1]),
                                          (int64_t)(origin[2] + z - lo[2])};
                    double v = value(g, n, f);
                    u[index_of(x, y, z)] = v;
                    if (haloport_quiet(&d[f], x, y, z)) continue;
                    for (uint32_t m = 0; m < d[f].messages; m++) {
                        uint64_t addr;
                        if (haloport_target(&d[f], m, x, y, z, &addr)) *(double *)(uintptr_t)addr = v;
                    }
                }
            }
            const uint32_t block_lo[3] = {(uint32_t)lo[0], (uint32_t)lo[1], z};
            const uint32_t block_hi[3] = {(uint32_t)(lo[0] + local[0]), (uint32_t)(lo[1] + local[1]), z + 1};
            for (uint32_t m = 0; m < d[f].messages; m++) {
                uint64_t cells = haloport_box_cells(&d[f], m, block_lo, block_hi);
                if (cells != 0)
                    __atomic_fetch_add((uint64_t *)(uintptr_t)d[f].message[m].counter, cells, __ATOMIC_RELEASE);
            }
        }
    }
    expect("fused_finish", haloport_exchange_fused_finish(exchange, (size_t)set, NULL), HALOPORT_STATUS_OK, NULL);
}

/* Every halo cell that has a global cell (periodic, or inside the grid) holds its value of
 * step n; returns how many were checked. */
static long halos_right(double **fields, int n, char *seen, size_t seen_len) {
    long checked = 0;
    for (int f = 0; f < FIELDS; f++) {
        for (uint64_t z = 0; z < lo[2] + local[2] + hi[2]; z++) {
            for (uint64_t y = 0; y < lo[1] + local[1] + hi[1]; y++) {
                for (uint64_t x = 0; x < lo[0] + local[0] + hi[0]; x++) {
                    const uint64_t idx[3] = {x, y, z};
                    int interior = 1, outside = 0;
                    int64_t g[3];
                    for (int k = 0; k < 3; k++) {
                        interior &= idx[k] >= lo[k] && idx[k] < lo[k] + local[k];
                        g[k] = (int64_t)origin[k] + (int64_t)idx[k] - (int64_t)lo[k];
                        if (periodic[k]) {
                            g[k] = (g[k] % (int64_t)grid[k] + (int64_t)grid[k]) % (int64_t)grid[k];
                        } else if (g[k] < 0 || g[k] >= (int64_t)grid[k]) {
                            outside = 1;
                        }
                    }
                    if (interior || outside) continue;
                    double got = fields[f][index_of((uint32_t)x, (uint32_t)y, (uint32_t)z)];
                    double want = value(g, n, f);
                    if (got != want) {
                        snprintf(seen, seen_len, "step %d field %d halo cell (%lu, %lu, %lu): %.2f, expected %.2f", n,
                                 f, (unsigned long)x, (unsigned long)y, (unsigned long)z, got, want);
                        return -1;
                    }
                    checked++;
                }
            }
        }
    }
    return checked;
}

static haloport_exchange *new_exchange(haloport_backend *backend, haloport_domain *domain, haloport_transport t) {
    haloport_options *options = NULL;
    expect("options", haloport_options_new(&options), HALOPORT_STATUS_OK, NULL);
    expect("the transport", haloport_options_set_transport(options, t), HALOPORT_STATUS_OK, NULL);
    haloport_exchange *exchange = NULL;
    expect("the exchange", haloport_exchange_new(backend, MPI_COMM_WORLD, domain, options, &exchange),
           HALOPORT_STATUS_OK, NULL);
    haloport_options_free(options);
    return exchange;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    haloport_backend *backend = NULL;
    expect("the host backend", haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0, &backend), HALOPORT_STATUS_OK,
           NULL);
    haloport_domain *domain = NULL;
    expect("a domain", haloport_domain_new(grid, &domain), HALOPORT_STATUS_OK, NULL);
    expect("periodic in x and y", haloport_domain_set_periodic(domain, periodic), HALOPORT_STATUS_OK, NULL);
    const uint32_t halo_lo[3] = {1, 2, 1}, halo_hi[3] = {2, 1, 1};
    expect("uneven halos", haloport_domain_set_halo(domain, halo_lo, halo_hi), HALOPORT_STATUS_OK, NULL);
    for (int f = 0; f < FIELDS; f++)
        expect("an f64 field", haloport_domain_add_field(domain, 8, 1), HALOPORT_STATUS_OK, NULL);

    /* Host-staged neighbours: served by an ordinary exchange inside fused_finish. */
    if (size > 1) {
        haloport_exchange *staged = new_exchange(backend, domain, HALOPORT_TRANSPORT_MPI);
        void *fields_of_staged[SETS * FIELDS];
        expect("fuse with host-staged neighbours", haloport_exchange_fuse(staged, SETS, fields_of_staged),
               HALOPORT_STATUS_OK, NULL);
        expect("freeing it", haloport_exchange_free(staged), HALOPORT_STATUS_OK, NULL);
    }

    haloport_exchange *exchange = new_exchange(backend, domain, HALOPORT_TRANSPORT_IPC);
    expect("the allocation", haloport_exchange_allocation(exchange, alloc, lo, hi, NULL), HALOPORT_STATUS_OK, NULL);
    expect("this rank's part", haloport_exchange_local(exchange, local, origin), HALOPORT_STATUS_OK, NULL);

    /* Calls before fuse. */
    const void *device[FIELDS];
    haloport_fused d[FIELDS];
    expect("fused_start before fuse", haloport_exchange_fused_start(exchange, 0, NULL, device), HALOPORT_STATUS_USAGE,
           "call fuse first");
    expect("fused_finish before fuse", haloport_exchange_fused_finish(exchange, 0, NULL), HALOPORT_STATUS_USAGE,
           "call fuse first");
    expect("fused_descriptors before fuse", haloport_exchange_fused_descriptors(exchange, 0, d, FIELDS),
           HALOPORT_STATUS_USAGE, "call fuse first");

    /* fuse: its refusals, then two sets. */
    void *fields_out[SETS * FIELDS] = {NULL};
    expect("fuse with a NULL fields_out", haloport_exchange_fuse(exchange, SETS, NULL), HALOPORT_STATUS_NULL_ARGUMENT,
           "haloport_exchange_fuse: fields_out is NULL");
    expect("fuse of 0 sets", haloport_exchange_fuse(exchange, 0, fields_out), HALOPORT_STATUS_INVALID_INPUT,
           "0 sets");
    if (size > 1) {
        void *more[(SETS + 1) * FIELDS];
        expect("fuse of 2 sets on rank 0 and 3 on the others",
               haloport_exchange_fuse(exchange, rank == 0 ? SETS : SETS + 1, more), HALOPORT_STATUS_INVALID_INPUT,
               "the ranks fused different numbers of sets: rank 0 gave 2, rank 1 gave 3");
    }
    expect("fuse of two sets", haloport_exchange_fuse(exchange, SETS, fields_out), HALOPORT_STATUS_OK, NULL);
    int all_there = 1;
    for (int i = 0; i < SETS * FIELDS; i++) all_there &= fields_out[i] != NULL;
    check("fuse wrote every field's address", all_there, "a NULL address");
    void *again[SETS * FIELDS];
    expect("fusing twice", haloport_exchange_fuse(exchange, SETS, again), HALOPORT_STATUS_USAGE, "already fused");

    /* Refusals of a fused exchange. */
    expect("fused_start of set 2 of 2", haloport_exchange_fused_start(exchange, 2, NULL, device), HALOPORT_STATUS_USAGE,
           "fused set 2 does not exist");
    expect("fused_finish of a set far beyond", haloport_exchange_fused_finish(exchange, (size_t)-1, NULL),
           HALOPORT_STATUS_USAGE, "does not exist");
    expect("fused_start with a NULL descriptors_out", haloport_exchange_fused_start(exchange, 0, NULL, NULL),
           HALOPORT_STATUS_NULL_ARGUMENT, "descriptors_out is NULL");
    expect("descriptors of a count unlike the fields", haloport_exchange_fused_descriptors(exchange, 0, d, 1),
           HALOPORT_STATUS_INVALID_INPUT, "set 0 has 2 descriptors");
    expect("descriptors into NULL", haloport_exchange_fused_descriptors(exchange, 0, NULL, FIELDS),
           HALOPORT_STATUS_NULL_ARGUMENT, "out is NULL");
    expect("a NULL exchange", haloport_exchange_fused_finish(NULL, 0, NULL), HALOPORT_STATUS_NULL_ARGUMENT,
           "exchange handle is NULL");

    /* An ordinary exchange of the library's fields first, as a code starting from initial
     * values would; then steps alternating the sets, each checked cell by cell. */
    haloport_field first[FIELDS];
    size_t bytes = 0;
    expect("the field's size", haloport_exchange_field_bytes(exchange, 0, &bytes), HALOPORT_STATUS_OK, NULL);
    for (int f = 0; f < FIELDS; f++) first[f] = (haloport_field){fields_out[f], bytes};
    expect("an ordinary exchange of set 0", haloport_exchange_exchange(exchange, first, FIELDS, NULL),
           HALOPORT_STATUS_OK, NULL);
    long total_checked = 0;
    for (int n = 0; n < STEPS; n++) {
        int set = n % SETS;
        double *fields[FIELDS];
        for (int f = 0; f < FIELDS; f++) fields[f] = (double *)fields_out[set * FIELDS + f];
        step(exchange, fields, set, n);
        char seen[256] = "";
        long checked = halos_right(fields, n, seen, sizeof seen);
        char name[64];
        snprintf(name, sizeof name, "step %d: every halo cell of set %d holds its value", n, set);
        check(name, checked >= 0, seen);
        if (checked > 0) total_checked += checked;
    }
    check("halo cells were checked", total_checked > 0, "none");
    expect("wait", haloport_exchange_wait(exchange), HALOPORT_STATUS_OK, NULL);
    expect("freeing the exchange", haloport_exchange_free(exchange), HALOPORT_STATUS_OK, NULL);
    expect("freeing the domain", haloport_domain_free(domain), HALOPORT_STATUS_OK, NULL);
    expect("freeing the backend", haloport_backend_free(backend), HALOPORT_STATUS_OK, NULL);

    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d checks per rank, %d failed on all ranks\n", checks, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
