/*
 * A program that never frees its handles: it exchanges once, calls MPI_Finalize and returns.
 * The exchange left in its thread's table must not be torn down after MPI_Finalize (that would
 * call MPI then, which aborts): the program exits 0 on every rank, and haloport says on standard
 * error what it left to the process. Host backend (bench/gpu-foreign-checks.sh runs the same
 * on CUDA).
 *
 *   mpicc never_freed.c $(pkg-config --cflags --libs haloport) -o never_freed && mpirun -np 2 ./never_freed
 */
#include <haloport.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        haloport_status s_ = (call);                                                           \
        if (s_ != HALOPORT_STATUS_OK) {                                                        \
            fprintf(stderr, "%s: %s\n", haloport_status_name(s_), haloport_last_error());      \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                      \
        }                                                                                      \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const uint64_t grid[3] = {16, 8, 8};
    haloport_backend *backend = NULL;
    haloport_domain *domain = NULL;
    haloport_exchange *exchange = NULL;
    CHECK(haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0, &backend));
    CHECK(haloport_domain_new(grid, &domain));
    CHECK(haloport_domain_add_field(domain, 8, 1));
    CHECK(haloport_exchange_new(backend, MPI_COMM_WORLD, domain, NULL, &exchange));
    size_t bytes = 0;
    CHECK(haloport_exchange_field_bytes(exchange, 0, &bytes));
    /* The field stays allocated to the end: the exchange is never freed. */
    haloport_field field = {calloc(bytes, 1), bytes};
    CHECK(haloport_exchange_exchange(exchange, &field, 1, NULL));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("never-freed: exchanged; MPI_Finalize with the exchange, domain and backend live\n");
    MPI_Finalize();
    return 0;
}
