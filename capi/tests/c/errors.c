/*
 * The C ABI's error paths, on 2 ranks of the host backend: every bad call returns the status
 * the header promises and a message naming the function and what was wrong; none aborts,
 * crashes or hangs. Prints one line per check and exits non-zero if any failed.
 *
 *   mpicc errors.c $(pkg-config --cflags --libs haloport) -o errors && mpirun -np 2 ./errors
 */
#include <haloport.h>
#include <mpi.h>
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
    expect("the exchange", haloport_exchange_new(backend, MPI_COMM_WORLD, good, options, &exchange),
           HALOPORT_STATUS_OK, NULL);
    size_t bytes = 0;
    expect("the field's size", haloport_exchange_field_bytes(exchange, 0, &bytes), HALOPORT_STATUS_OK, NULL);
    expect("a field the domain does not have", haloport_exchange_field_bytes(exchange, 1, &bytes),
           HALOPORT_STATUS_INVALID_INPUT, "field 1");
    double *u = calloc(bytes, 1);
    haloport_field small = {u, bytes - 8};
    expect("a field 8 bytes too small", haloport_exchange_run(exchange, &small, 1, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "bytes");
    haloport_field null_field = {NULL, bytes};
    expect("a NULL field", haloport_exchange_run(exchange, &null_field, 1, NULL), HALOPORT_STATUS_INVALID_INPUT,
           "non-null");
    haloport_field field = {u, bytes};
    expect("two fields for a domain of one", haloport_exchange_run(exchange, (haloport_field[]){field, field}, 2, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "declared with 1 fields, 2 were given");
    expect("finish before start", haloport_exchange_finish(exchange, NULL), HALOPORT_STATUS_USAGE, NULL);
    expect("an exchange", haloport_exchange_run(exchange, &field, 1, NULL), HALOPORT_STATUS_OK, NULL);

    /* A peer that never sends: rank 0 gives up after the time-out, rank 1 stays out. */
    if (rank == 0)
        expect("a peer that never sends", haloport_exchange_run(exchange, &field, 1, NULL),
               HALOPORT_STATUS_TIMEOUT, "timed out");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Use after free: the handle is dead, and known to be. */
    expect("freeing the exchange", haloport_exchange_free(exchange), HALOPORT_STATUS_OK, NULL);
    expect("an exchange used after free", haloport_exchange_run(exchange, &field, 1, NULL),
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

    free(u);
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d checks per rank, %d failed on all ranks\n", checks, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
