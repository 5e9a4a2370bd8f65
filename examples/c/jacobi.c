/*
 * A 7-point Jacobi solver in plain C on haloport's host backend: the application's own arrays
 * (malloc), its own loops, haloport filling the halos through the C ABI. Verified bit-for-bit
 * against one rank computing the whole grid.
 *
 *   mpicc jacobi.c $(pkg-config --cflags --libs haloport) -o jacobi
 *   mpirun -np 4 ./jacobi [nx ny nz steps]
 */
#include <haloport.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ends the job on any failure, naming the call and haloport's message. */
#define CHECK(call)                                                                        \
    do {                                                                                   \
        haloport_status status_ = (call);                                                  \
        if (status_ != HALOPORT_STATUS_OK) {                                               \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, haloport_last_error(),        \
                    haloport_status_name(status_));                                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

static double initial(uint64_t x, uint64_t y, uint64_t z) {
    return (double)((x * 7 + y * 13 + z * 29) % 101) / 101.0;
}

/* One step over the cells [lo, hi) of a periodic or haloed array of extents a[3]: each cell
 * becomes the mean of itself and its 6 face neighbours, summed in one fixed order. */
static void step(const double *u, double *v, const uint64_t a[3], const uint64_t lo[3],
                 const uint64_t hi[3], int wrap) {
    for (uint64_t z = lo[2]; z < hi[2]; z++)
        for (uint64_t y = lo[1]; y < hi[1]; y++)
            for (uint64_t x = lo[0]; x < hi[0]; x++) {
#define AT(i, j, k) u[((k) * a[1] + (j)) * a[0] + (i)]
                uint64_t xm = wrap ? (x + a[0] - 1) % a[0] : x - 1, xp = wrap ? (x + 1) % a[0] : x + 1;
                uint64_t ym = wrap ? (y + a[1] - 1) % a[1] : y - 1, yp = wrap ? (y + 1) % a[1] : y + 1;
                uint64_t zm = wrap ? (z + a[2] - 1) % a[2] : z - 1, zp = wrap ? (z + 1) % a[2] : z + 1;
                double s = AT(x, y, z);
                s += AT(xm, y, z);
                s += AT(xp, y, z);
                s += AT(x, ym, z);
                s += AT(x, yp, z);
                s += AT(x, y, zm);
                s += AT(x, y, zp);
                v[(z * a[1] + y) * a[0] + x] = s / 7.0;
#undef AT
            }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    uint64_t grid[3] = {40, 36, 32};
    int steps = 10;
    if (argc == 5) {
        for (int k = 0; k < 3; k++) grid[k] = strtoull(argv[1 + k], NULL, 10);
        steps = atoi(argv[4]);
    }
    if (haloport_version_number() != HALOPORT_VERSION_NUMBER) {
        fprintf(stderr, "linked haloport %s, compiled against %d\n", haloport_version(),
                HALOPORT_VERSION_NUMBER);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* Declare: periodic everywhere, one halo cell, faces only (a 7-point stencil reads no
     * edge or corner), one field of doubles. */
    haloport_backend *backend;
    haloport_domain *domain;
    haloport_exchange *exchange;
    const int32_t periodic[3] = {1, 1, 1};
    const uint32_t one[3] = {1, 1, 1};
    CHECK(haloport_backend_new(HALOPORT_BACKEND_KIND_HOST, 0, &backend));
    CHECK(haloport_domain_new(grid, &domain));
    CHECK(haloport_domain_set_periodic(domain, periodic));
    CHECK(haloport_domain_set_halo(domain, one, one));
    CHECK(haloport_domain_set_neighbourhood(domain, HALOPORT_NEIGHBOURHOOD_FACES));
    CHECK(haloport_domain_add_field(domain, sizeof(double), 1));
    CHECK(haloport_exchange_new(backend, MPI_COMM_WORLD, domain, NULL, &exchange));
    CHECK(haloport_domain_free(domain));
    CHECK(haloport_backend_free(backend));

    uint64_t local[3], origin[3], alloc[3], halo_lo[3];
    size_t bytes;
    CHECK(haloport_exchange_local(exchange, local, origin));
    CHECK(haloport_exchange_allocation(exchange, alloc, halo_lo, NULL, NULL));
    CHECK(haloport_exchange_field_bytes(exchange, 0, &bytes));
    double *u = calloc(bytes, 1), *v = calloc(bytes, 1);
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++)
                u[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x] =
                    initial(origin[0] + x, origin[1] + y, origin[2] + z);

    const uint64_t hi[3] = {halo_lo[0] + local[0], halo_lo[1] + local[1], halo_lo[2] + local[2]};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        haloport_field field = {u, bytes};
        CHECK(haloport_exchange_exchange(exchange, &field, 1, NULL));
        step(u, v, alloc, halo_lo, hi, 0);
        double *t = u;
        u = v;
        v = t;
    }
    double per_step = (MPI_Wtime() - t0) / steps;
    CHECK(haloport_exchange_free(exchange));

    /* The reference: this rank computes the whole grid alone, and compares its part. */
    uint64_t cells = grid[0] * grid[1] * grid[2];
    double *ru = malloc(cells * sizeof(double)), *rv = malloc(cells * sizeof(double));
    for (uint64_t z = 0; z < grid[2]; z++)
        for (uint64_t y = 0; y < grid[1]; y++)
            for (uint64_t x = 0; x < grid[0]; x++) ru[(z * grid[1] + y) * grid[0] + x] = initial(x, y, z);
    const uint64_t zero[3] = {0, 0, 0};
    for (int s = 0; s < steps; s++) {
        step(ru, rv, grid, zero, grid, 1);
        double *t = ru;
        ru = rv;
        rv = t;
    }
    long mismatches = 0;
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++) {
                double got = u[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x];
                double want = ru[((origin[2] + z) * grid[1] + origin[1] + y) * grid[0] + origin[0] + x];
                if (memcmp(&got, &want, sizeof got) != 0) mismatches++;
            }
    long total;
    MPI_Allreduce(&mismatches, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d ranks, %llux%llux%llu, %d steps of the C solver on the host backend: %.1f us per step\n",
               ranks, (unsigned long long)grid[0], (unsigned long long)grid[1],
               (unsigned long long)grid[2], steps, per_step * 1e6);
        if (total == 0)
            printf("verified: bit-for-bit equal to one rank computing the whole grid\n");
        else
            printf("MISMATCH: %ld cells differ from one rank computing the whole grid\n", total);
    }
    free(u);
    free(v);
    free(ru);
    free(rv);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
