/*
 * The C ABI's error paths, on 2 ranks of the host backend: every bad call returns the status
 * the header promises and a message naming the function and what was wrong; none aborts,
 * crashes or hangs. Prints one line per check and exits non-zero if any failed.
 *
 *   mpicc -pthread errors.c $(pkg-config --cflags --libs haloport) -o errors && mpirun -np 2 ./errors
 */
#define _POSIX_C_SOURCE 200809L
#include <haloport.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, failures, checks;

/* The call returned `want` and the last error contains `fragment` (NULL: any message). */
static void expect(const char *name, haloport_status got, haloport_status want, const char *fragment) {
    const char *message = haloport_last_error();
    int ok = got == want && (want == HALOPORT_STATUS_OK || fragment == NULL || strstr(message, fragment) != NULL);
    checks++;
    if (!ok) failures++;
    if (rank == 0 || !ok)
        printf("rank %d: %s - %s: %s (%s)\n", rank, ok ? "ok" : "FAIL", name,
               haloport_status_name(got), got == HALOPORT_STATUS_OK ? "" : message);
}

/* A call from another thread than the handle's: refused, naming the thread that made it. */
static void *from_another_thread(void *exchange) {
    haloport_status got = haloport_exchange_wait((haloport_exchange *)exchange);
    static char message[512];
    snprintf(message, sizeof message, "%s", haloport_last_error());
    return got == HALOPORT_STATUS_USAGE && strstr(message, "was created on thread") != NULL ? exchange : message;
}

static haloport_domain *small_domain(uint64_t nx) {
    const uint64_t grid[3] = {nx, 8, 8};
    haloport_domain *d = NULL;
    expect("a domain", haloport_domain_new(grid, &d), HALOPORT_STATUS_OK, NULL);
    expect("a field", haloport_domain_add_field(d, 8, 1), HALOPORT_STATUS_OK, NULL);
    return d;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    haloport_backend *backend = NULL;
    expect("the host backend", haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0, &backend),
           HALOPORT_STATUS_OK, NULL);

    /* NULL arguments and handles. */
    const uint32_t pad[3] = {0, 0, 0};
    expect("a NULL domain handle", haloport_domain_set_pad(NULL, pad), HALOPORT_STATUS_NULL_ARGUMENT,
           "haloport_domain_set_pad: the domain handle is NULL");
    expect("a NULL out-parameter", haloport_options_new(NULL), HALOPORT_STATUS_NULL_ARGUMENT,
           "out-parameter is NULL");
    expect("a NULL grid", haloport_domain_new(NULL, NULL), HALOPORT_STATUS_NULL_ARGUMENT, "grid is NULL");
    expect("freeing NULL does nothing", haloport_exchange_free(NULL), HALOPORT_STATUS_OK, NULL);

    /* Bad declarations: refused when made, or when compiled (then on every rank alike). */
    const uint64_t zero_grid[3] = {8, 0, 8};
    haloport_domain *bad = NULL;
    expect("a grid extent of 0", haloport_domain_new(zero_grid, &bad), HALOPORT_STATUS_INVALID_INPUT,
           "every extent must be at least 1");
    haloport_domain *d = small_domain(8);
    expect("an element size of 3 bytes", haloport_domain_add_field(d, 3, 1), HALOPORT_STATUS_INVALID_INPUT,
           "element size 3 bytes");
    expect("an unknown neighbourhood", haloport_domain_set_neighbourhood(d, 7), HALOPORT_STATUS_INVALID_INPUT,
           "unknown neighbourhood 7");
    expect("an unknown backend kind", haloport_backend_new(9, 0, &backend), HALOPORT_STATUS_INVALID_INPUT,
           "unknown backend kind 9");
    const uint32_t wide[3] = {5, 1, 1};
    expect("halos of 5", haloport_domain_set_halo(d, wide, wide), HALOPORT_STATUS_OK, NULL);
    haloport_exchange *exchange = NULL;
    expect("a halo wider than the neighbour's part (8 cells over 2 ranks)",
           haloport_exchange_new(backend, MPI_COMM_WORLD, d, NULL, &exchange), HALOPORT_STATUS_INVALID_INPUT,
           "halo");
    haloport_domain *empty = NULL;
    const uint64_t grid[3] = {8, 8, 8};
    expect("a domain", haloport_domain_new(grid, &empty), HALOPORT_STATUS_OK, NULL);
    expect("a domain without fields", haloport_exchange_new(backend, MPI_COMM_WORLD, empty, NULL, &exchange),
           HALOPORT_STATUS_INVALID_INPUT, "declares no field");
    expect("MPI_COMM_NULL", haloport_exchange_new(backend, MPI_COMM_NULL, small_domain(8), NULL, &exchange),
           HALOPORT_STATUS_INVALID_INPUT, "MPI_COMM_NULL");

    /* Ranks that declare different grids: the same error on both, no hang. */
    haloport_domain *mine = small_domain(rank == 0 ? 16 : 17);
    expect("declarations that differ between ranks",
           haloport_exchange_new(backend, MPI_COMM_WORLD, mine, NULL, &exchange), HALOPORT_STATUS_INVALID_INPUT,
           "differ");

    /* A good exchange; then fields that do not fit it, and calls out of order. */
    haloport_domain *good = small_domain(16);
    haloport_options *options = NULL;
    expect("options", haloport_options_new(&options), HALOPORT_STATUS_OK, NULL);
    expect("a time-out of -1 s", haloport_options_set_timeout(options, -1.0), HALOPORT_STATUS_INVALID_INPUT,
           "time-out");
    expect("a time-out of 1 s", haloport_options_set_timeout(options, 1.0), HALOPORT_STATUS_OK, NULL);
    expect("transport 4", haloport_options_set_transport(options, 4), HALOPORT_STATUS_INVALID_INPUT,
           "_AUTO (3)");
    expect("GPU-aware MPI setting 7", haloport_options_set_gpu_aware_mpi(options, 7),
           HALOPORT_STATUS_INVALID_INPUT, "HALOPORT_GPU_AWARE_MPI_AUTO (0)");
    expect("GPU-aware MPI off", haloport_options_set_gpu_aware_mpi(options, HALOPORT_GPU_AWARE_MPI_OFF),
           HALOPORT_STATUS_OK, NULL);
    expect("the exchange", haloport_exchange_new(backend, MPI_COMM_WORLD, good, options, &exchange),
           HALOPORT_STATUS_OK, NULL);
    size_t bytes = 0;
    expect("the field's size", haloport_exchange_field_bytes(exchange, 0, &bytes), HALOPORT_STATUS_OK, NULL);
    expect("a field the domain does not have", haloport_exchange_field_bytes(exchange, 1, &bytes),
           HALOPORT_STATUS_INVALID_INPUT, "field 1");
    double *u = calloc(bytes, 1);
    haloport_field small = {u, bytes - 8};
    expect("a field 8 bytes too small", haloport_exchange_exchange(exchange, &small, 1, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "bytes");
    haloport_field null_field = {NULL, bytes};
    expect("a NULL field", haloport_exchange_exchange(exchange, &null_field, 1, NULL), HALOPORT_STATUS_INVALID_INPUT,
           "non-null");
    haloport_field field = {u, bytes};
    expect("two fields for a domain of one", haloport_exchange_exchange(exchange, (haloport_field[]){field, field}, 2, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "declared with 1 fields, 2 were given");
    expect("finish before start", haloport_exchange_finish(exchange, NULL), HALOPORT_STATUS_USAGE, NULL);
    /* A count that does not fit the declaration is refused before the array is read. */
    expect("a count of 1000000 with one field", haloport_exchange_start(exchange, &field, 1000000, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "declared with 1 fields, 1000000 were given");
    expect("a count of 1000000 for a whole exchange", haloport_exchange_exchange(exchange, &field, 1000000, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "declared with 1 fields, 1000000 were given");
    expect("an exchange", haloport_exchange_exchange(exchange, &field, 1, NULL), HALOPORT_STATUS_OK, NULL);
    /* The default periodicity is Rust's and Python's: every dimension (2 ranks along x, one
       along y and z, so every rank has all 26 neighbours). */
    size_t neighbours = 0;
    expect("the neighbour count", haloport_exchange_neighbour_count(exchange, &neighbours), HALOPORT_STATUS_OK, NULL);
    expect("periodic in x, y and z by default", neighbours == 26 ? HALOPORT_STATUS_OK : HALOPORT_STATUS_INTERNAL,
           HALOPORT_STATUS_OK, NULL);
    /* A graph cannot hold host-staged messages: refused with a status, not a crash (GPU
       captures run in bench/gpu-foreign-checks.sh). */
    expect("capturing host-staged messages", haloport_exchange_begin_capture(exchange, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "host-staged");
    /* Another thread: "created on thread", not an invalid handle. */
    pthread_t thread;
    void *answer = NULL;
    if (pthread_create(&thread, NULL, from_another_thread, exchange) != 0 || pthread_join(thread, &answer) != 0)
        answer = "the thread did not run";
    checks++;
    if (answer != (void *)exchange) {
        failures++;
        printf("rank %d: FAIL - a handle used from another thread: %s\n", rank, (const char *)answer);
    } else if (rank == 0) {
        printf("rank %d: ok - a handle used from another thread: refused, naming its thread\n", rank);
    }

    /* A peer that never sends: rank 0 gives up after the time-out, rank 1 stays out. */
    if (rank == 0)
        expect("a peer that never sends", haloport_exchange_exchange(exchange, &field, 1, NULL),
               HALOPORT_STATUS_TIMEOUT, "timed out");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Use after free: the handle is dead, and known to be. */
    expect("freeing the exchange", haloport_exchange_free(exchange), HALOPORT_STATUS_OK, NULL);
    expect("an exchange used after free", haloport_exchange_exchange(exchange, &field, 1, NULL),
           HALOPORT_STATUS_INVALID_HANDLE, "already freed");
    expect("an exchange freed twice", haloport_exchange_free(exchange), HALOPORT_STATUS_INVALID_HANDLE,
           "haloport_exchange_free: the exchange handle is not live");
    expect("freeing the domain", haloport_domain_free(good), HALOPORT_STATUS_OK, NULL);
    expect("a domain used after free", haloport_domain_add_field(good, 8, 1), HALOPORT_STATUS_INVALID_HANDLE,
           "already freed");
    expect("a domain handle passed as options", haloport_options_set_checked((haloport_options *)d, 1),
           HALOPORT_STATUS_INVALID_HANDLE, "options handle is not live");
    expect("an unknown status's name", strcmp(haloport_status_name(99), "unknown status") == 0
           ? HALOPORT_STATUS_OK : HALOPORT_STATUS_INTERNAL, HALOPORT_STATUS_OK, NULL);

    /* Each field's own type and word: fields of 8 bytes x 1 and 4 bytes x 3 (4-byte words). */
    haloport_domain *mixed = small_domain(16);
    expect("a second field of 4 bytes x 3", haloport_domain_add_field(mixed, 4, 3), HALOPORT_STATUS_OK, NULL);
    haloport_exchange *two = NULL;
    expect("an exchange of two types", haloport_exchange_new(backend, MPI_COMM_WORLD, mixed, NULL, &two),
           HALOPORT_STATUS_OK, NULL);
    size_t bytes0 = 0, bytes1 = 0;
    haloport_exchange_field_bytes(two, 0, &bytes0);
    haloport_exchange_field_bytes(two, 1, &bytes1);
    double *f0 = calloc(bytes0, 1);
    float *f1 = calloc(bytes1, 1);
    haloport_field short1[2] = {{f0, bytes0}, {f1, bytes1 - 1}};
    expect("field 1 one byte short, named with its own type", haloport_exchange_exchange(two, short1, 2, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "field 1 (4-byte x3, 12 bytes a cell)");
    haloport_field both[2] = {{f0, bytes0}, {f1, bytes1}};
    expect("an exchange of two types", haloport_exchange_exchange(two, both, 2, NULL), HALOPORT_STATUS_OK, NULL);
    expect("freeing it", haloport_exchange_free(two), HALOPORT_STATUS_OK, NULL);

    /* Two 4-byte components travel as 8-byte words: a field at 4 mod 8 is refused. */
    haloport_domain *pairs = NULL;
    const uint64_t pair_grid[3] = {16, 8, 8};
    expect("a domain", haloport_domain_new(pair_grid, &pairs), HALOPORT_STATUS_OK, NULL);
    expect("a field of 4 bytes x 2", haloport_domain_add_field(pairs, 4, 2), HALOPORT_STATUS_OK, NULL);
    expect("an exchange of pairs", haloport_exchange_new(backend, MPI_COMM_WORLD, pairs, NULL, &two),
           HALOPORT_STATUS_OK, NULL);
    haloport_exchange_field_bytes(two, 0, &bytes0);
    char *raw = calloc(bytes0 + 8, 1);
    haloport_field off = {raw + 4, bytes0};
    expect("a field at 4 mod 8 for 8-byte words", haloport_exchange_exchange(two, &off, 1, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "field 0 (4-byte x2, 8 bytes a cell) at");
    expect("... naming the word", haloport_exchange_exchange(two, &off, 1, NULL), HALOPORT_STATUS_INVALID_INPUT,
           "aligned to 8 bytes");
    expect("freeing it", haloport_exchange_free(two), HALOPORT_STATUS_OK, NULL);

    /* The allocation read back: high halos and padding as declared. */
    haloport_domain *padded = small_domain(16);
    const uint32_t lo[3] = {1, 2, 1}, hi[3] = {2, 1, 0}, padding[3] = {3, 0, 1};
    expect("halos of 1/2/1 and 2/1/0", haloport_domain_set_halo(padded, lo, hi), HALOPORT_STATUS_OK, NULL);
    expect("padding of 3/0/1", haloport_domain_set_pad(padded, padding), HALOPORT_STATUS_OK, NULL);
    expect("a padded exchange", haloport_exchange_new(backend, MPI_COMM_WORLD, padded, NULL, &two),
           HALOPORT_STATUS_OK, NULL);
    uint64_t local[3], origin[3], alloc[3], halo_lo[3], halo_hi[3], pad_back[3];
    expect("its part", haloport_exchange_local(two, local, origin), HALOPORT_STATUS_OK, NULL);
    expect("its allocation", haloport_exchange_allocation(two, alloc, halo_lo, halo_hi, pad_back),
           HALOPORT_STATUS_OK, NULL);
    int same = 1;
    for (int k = 0; k < 3; k++)
        same &= halo_lo[k] == lo[k] && halo_hi[k] == hi[k] && pad_back[k] == padding[k] &&
                alloc[k] == lo[k] + local[k] + hi[k] + padding[k];
    expect("halo_hi and pad read back as declared", same ? HALOPORT_STATUS_OK : HALOPORT_STATUS_INTERNAL,
           HALOPORT_STATUS_OK, NULL);
    expect("freeing it", haloport_exchange_free(two), HALOPORT_STATUS_OK, NULL);

    /* The application's decomposition: a count beyond the grid is refused before it is read. */
    const uint64_t one_start[1] = {0};
    expect("1000000 starts along x", haloport_domain_set_splits(padded, 0, one_start, 1000000),
           HALOPORT_STATUS_INVALID_INPUT, "1000000 starts along dimension 0");
    expect("one start along x", haloport_domain_set_splits(padded, 0, one_start, 1), HALOPORT_STATUS_OK, NULL);

    free(raw);
    free(f0);
    free(f1);
    free(u);
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d checks per rank, %d failed on all ranks\n", checks, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
