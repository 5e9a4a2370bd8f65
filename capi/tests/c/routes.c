/*
 * Routes files and each neighbour's route through the C ABI, on 2 ranks of the host backend
 * (one node): a routes file written here puts mpi before ipc within a node, so every neighbour
 * that is not the rank itself takes host-staged MPI and says why; bad files are refused with
 * HALOPORT_STATUS_INVALID_INPUT and a message naming the file. Prints one line per check and
 * exits non-zero if any failed.
 *
 *   mpicc routes.c $(pkg-config --cflags --libs haloport) -o routes && mpirun -np 2 ./routes
 */
#define _POSIX_C_SOURCE 200809L
#include <haloport.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"

/* The last error contains `fragment`. */
static void said(const char *name, const char *fragment) {
    check(name, strstr(haloport_last_error(), fragment) != NULL, haloport_last_error());
}

/* Writes `text` to a file of this rank's own; returns its name (static storage per slot). */
static const char *write_file(int slot, const char *text) {
    static char names[2][256];
    snprintf(names[slot], sizeof names[slot], "%s/haloport-routes-%ld-%d-%d.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), rank, slot);
    FILE *f = fopen(names[slot], "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        printf("rank %d: FAIL - cannot write %s\n", rank, names[slot]);
        exit(1);
    }
    return names[slot];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *good = write_file(
        0, "{\"schema\": \"haloport-routes/1\", \"within_node\": [\"mpi\", \"ipc\"], \"between_nodes\": [\"mpi\"],"
           " \"settings\": {\"strategy\": \"base\", \"threads\": 128, \"elems_per_thread\": 2, \"signalled_blocks\": 8}}\n");
    const char *other = write_file(
        1, "{\"schema\": \"other/9\", \"within_node\": [\"mpi\"], \"between_nodes\": [\"mpi\"]}\n");
    char missing[300];
    snprintf(missing, sizeof missing, "%s.missing", good);

    haloport_backend *backend = NULL;
    expect("the host backend", haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0, &backend), HALOPORT_STATUS_OK,
           NULL);
    haloport_options *options = NULL;
    expect("options", haloport_options_new(&options), HALOPORT_STATUS_OK, NULL);

    /* Bad files: refused, naming the file; the options are left as they were. */
    expect("a routes file that does not exist", haloport_options_set_routes_file(options, missing),
           HALOPORT_STATUS_INVALID_INPUT, missing);
    said("... saying it cannot be read", "cannot be read");
    expect("a routes file of schema other/9", haloport_options_set_routes_file(options, other),
           HALOPORT_STATUS_INVALID_INPUT, other);
    said("... naming its schema", "schema 'other/9'");
    expect("a NULL path", haloport_options_set_routes_file(options, NULL), HALOPORT_STATUS_NULL_ARGUMENT,
           "haloport_options_set_routes_file: the path is NULL");
    expect("a NULL options handle", haloport_options_set_routes_file(NULL, good), HALOPORT_STATUS_NULL_ARGUMENT,
           "options handle is NULL");

    /* The good file: transport auto with mpi first within the node. */
    expect("the routes file", haloport_options_set_routes_file(options, good), HALOPORT_STATUS_OK, NULL);
    const uint64_t grid[3] = {16, 8, 8};
    haloport_domain *domain = NULL;
    expect("a domain", haloport_domain_new(grid, &domain), HALOPORT_STATUS_OK, NULL);
    expect("a field", haloport_domain_add_field(domain, 8, 1), HALOPORT_STATUS_OK, NULL);
    haloport_exchange *exchange = NULL;
    expect("the exchange", haloport_exchange_new(backend, MPI_COMM_WORLD, domain, options, &exchange),
           HALOPORT_STATUS_OK, NULL);
    size_t count = 0;
    expect("the neighbour count", haloport_exchange_neighbour_count(exchange, &count), HALOPORT_STATUS_OK, NULL);
    int others = 0, as_filed = 1;
    const char *first_why = NULL;
    char seen[1024] = "";
    for (size_t i = 0; i < count; i++) {
        int32_t peer = -1;
        haloport_link link = HALOPORT_LINK_NCCL, routed = HALOPORT_LINK_NCCL;
        haloport_locality locality = HALOPORT_LOCALITY_NOT_ASKED;
        const char *why = NULL;
        haloport_status a = haloport_exchange_neighbour(exchange, i, NULL, &peer, &link);
        haloport_status b = haloport_exchange_route(exchange, i, &locality, &routed, &why);
        int ok = a == HALOPORT_STATUS_OK && b == HALOPORT_STATUS_OK && why != NULL && routed == link;
        if (ok && peer == rank) {
            ok = locality == HALOPORT_LOCALITY_ITSELF && link == HALOPORT_LINK_LOCAL;
        } else if (ok) {
            others++;
            if (first_why == NULL) first_why = why;
            ok = locality == HALOPORT_LOCALITY_SAME_NODE && link == HALOPORT_LINK_STAGED &&
                 strstr(why, "routes given") != NULL &&
                 strstr(why, "same node; routes given: the first of [mpi, ipc] that serves it") != NULL;
        }
        if (!ok && as_filed) {
            as_filed = 0;
            snprintf(seen, sizeof seen, "neighbour %zu (rank %d): statuses %d %d, locality %d, link %d/%d, why '%s'",
                     i, (int)peer, (int)a, (int)b, (int)locality, (int)link, (int)routed, why ? why : "(NULL)");
        }
    }
    check("every other rank's neighbour takes mpi, the file's first within a node, saying why", as_filed, seen);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check("... and there are such neighbours", size == 1 || others > 0, "none");
    expect("every out-parameter NULL", haloport_exchange_route(exchange, 0, NULL, NULL, NULL), HALOPORT_STATUS_OK,
           NULL);
    char beyond[64];
    snprintf(beyond, sizeof beyond, "neighbour %zu: this rank has %zu neighbours", count, count);
    expect("a neighbour beyond the count", haloport_exchange_route(exchange, count, NULL, NULL, NULL),
           HALOPORT_STATUS_INVALID_INPUT, beyond);
    expect("a neighbour far beyond", haloport_exchange_route(exchange, (size_t)-1, NULL, NULL, NULL),
           HALOPORT_STATUS_INVALID_INPUT, "this rank has");

    /* The exchange runs with the file's settings, and the text lent out stays where it was. */
    size_t bytes = 0;
    expect("the field's size", haloport_exchange_field_bytes(exchange, 0, &bytes), HALOPORT_STATUS_OK, NULL);
    double *u = calloc(bytes, 1);
    haloport_field field = {u, bytes};
    expect("an exchange", haloport_exchange_exchange(exchange, &field, 1, NULL), HALOPORT_STATUS_OK, NULL);
    if (first_why != NULL) {
        const char *again = NULL;
        for (size_t i = 0; i < count && again != first_why; i++) haloport_exchange_route(exchange, i, NULL, NULL, &again);
        check("the why text stays valid until the exchange is freed", again == first_why && strstr(first_why, "routes given"),
              first_why);
    }
    expect("freeing the exchange", haloport_exchange_free(exchange), HALOPORT_STATUS_OK, NULL);
    expect("a route of a freed exchange", haloport_exchange_route(exchange, 0, NULL, NULL, NULL),
           HALOPORT_STATUS_INVALID_HANDLE, "already freed");
    expect("freeing the options", haloport_options_free(options), HALOPORT_STATUS_OK, NULL);
    expect("freeing the domain", haloport_domain_free(domain), HALOPORT_STATUS_OK, NULL);
    expect("freeing the backend", haloport_backend_free(backend), HALOPORT_STATUS_OK, NULL);

    free(u);
    remove(good);
    remove(other);
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d checks per rank, %d failed on all ranks\n", checks, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
