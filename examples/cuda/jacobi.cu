/*
 * A CUDA C++ Jacobi solver that owns everything but the halo exchange: its own kernels, its
 * own cudaMalloc'd fields, its own non-default stream and its own Cartesian communicator.
 * haloport fills the halos through the C ABI; the halo_lo update overlaps the exchange
 * (between haloport_exchange_start and _finish), the cells next to the halos follow it.
 * Verified bit-for-bit against one rank computing the whole grid (on the CPU, same arithmetic).
 *
 *   nvcc -O2 -fmad=false jacobi.cu $(pkg-config --cflags --libs haloport) \
 *        $(mpicxx --showme:compile) $(mpicxx --showme:link) -o jacobi
 *   mpirun -np 2 ./jacobi --transport ipc --grid 64 48 40 --steps 20
 *
 * The arithmetic, grid and periodicity are those of examples/app_kernel.rs (the same solver
 * through the Rust API), so their times per step compare.
 */
#include <cuda_runtime.h>
#include <haloport.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        haloport_status status_ = (call);                                                    \
        if (status_ != HALOPORT_STATUS_OK) {                                                 \
            std::fprintf(stderr, "%s failed: %s (%s)\n", #call, haloport_last_error(),      \
                         haloport_status_name(status_));                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                    \
        }                                                                                    \
    } while (0)

#define CUDA(call)                                                                           \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                    \
        }                                                                                    \
    } while (0)

/* The application's kernel: one thread per halo_lo cell; `shell` picks the cells next to
 * the halos (1) or the others (0). The mean of the cell and its 6 face neighbours. */
__global__ void app_jacobi(const double *u, double *v, long long ax, long long ay, long long lx,
                           long long ly, long long lz, int shell) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= lx * ly * lz) return;
    long long x = i % lx, y = (i / lx) % ly, z = i / (lx * ly);
    int inner = x > 0 && x + 1 < lx && y > 0 && y + 1 < ly && z > 0 && z + 1 < lz;
    if (inner == shell) return;
    long long sy = ax, sz = ax * ay;
    long long c = (x + 1) + sy * (y + 1) + sz * (z + 1);
    v[c] = (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) * (1.0 / 7.0);
}

static double initial(unsigned long long x, unsigned long long y, unsigned long long z) {
    return (double)((x * 7 + y * 13 + z * 17) % 23) * 0.25;
}

/* The same step on the CPU over a whole grid with a zero halo of 1 in y and wrap-around in x
 * and z: the reference. `a` holds (nx)(ny + 2)(nz) cells, y offset by 1. */
static void reference_step(const std::vector<double> &u, std::vector<double> &v, const unsigned long long n[3]) {
    unsigned long long ax = n[0], ay = n[1] + 2;
    for (unsigned long long z = 0; z < n[2]; z++)
        for (unsigned long long y = 1; y <= n[1]; y++)
            for (unsigned long long x = 0; x < n[0]; x++) {
                auto at = [&](unsigned long long i, unsigned long long j, unsigned long long k) {
                    return u[(k * ay + j) * ax + i];
                };
                unsigned long long xm = (x + n[0] - 1) % n[0], xp = (x + 1) % n[0];
                unsigned long long zm = (z + n[2] - 1) % n[2], zp = (z + 1) % n[2];
                v[(z * ay + y) * ax + x] = (at(x, y, z) + at(xm, y, z) + at(xp, y, z) + at(x, y - 1, z) +
                                            at(x, y + 1, z) + at(x, y, zm) + at(x, y, zp)) *
                                           (1.0 / 7.0);
            }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    unsigned long long grid[3] = {64, 48, 40};
    int steps = 20;
    int transport = HALOPORT_TRANSPORT_MPI;
    for (int a = 1; a < argc; a++) {
        if (!std::strcmp(argv[a], "--grid") && a + 3 < argc) {
            for (int k = 0; k < 3; k++) grid[k] = std::strtoull(argv[++a], nullptr, 10);
        } else if (!std::strcmp(argv[a], "--steps") && a + 1 < argc) {
            steps = std::atoi(argv[++a]);
        } else if (!std::strcmp(argv[a], "--transport") && a + 1 < argc) {
            transport = !std::strcmp(argv[++a], "ipc") ? HALOPORT_TRANSPORT_IPC : HALOPORT_TRANSPORT_MPI;
        } else {
            std::fprintf(stderr, "usage: %s [--grid NX NY NZ] [--steps N] [--transport mpi|ipc]\n", argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    /* The application's communicator: Cartesian, reordered; haloport follows its topology. */
    int ranks, dims[3] = {0, 0, 0};
    const int periods[3] = {1, 0, 1};
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Dims_create(ranks, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 1, &cart);
    int rank;
    MPI_Comm_rank(cart, &rank);
    MPI_Comm node;
    MPI_Comm_split_type(cart, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank, devices;
    MPI_Comm_rank(node, &local_rank);
    CUDA(cudaGetDeviceCount(&devices));
    CUDA(cudaSetDevice(local_rank % devices));

    /* The application's stream, not the default one. */
    cudaStream_t stream;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    haloport_backend *backend;
    haloport_domain *domain;
    haloport_options *options;
    haloport_exchange *exchange;
    const uint64_t extents[3] = {grid[0], grid[1], grid[2]};
    const int32_t periodic[3] = {1, 0, 1};
    CHECK(haloport_backend_new(HALOPORT_BACKEND_KIND_CUDA, local_rank, &backend));
    CHECK(haloport_domain_new(extents, &domain));
    CHECK(haloport_domain_set_periodic(domain, periodic));
    CHECK(haloport_domain_add_field(domain, sizeof(double), 1));
    CHECK(haloport_options_new(&options));
    CHECK(haloport_options_set_transport(options, transport));
    CHECK(haloport_exchange_new(backend, cart, domain, options, &exchange));

    uint64_t local[3], origin[3], alloc[3], halo_lo[3];
    size_t bytes;
    CHECK(haloport_exchange_local(exchange, local, origin));
    CHECK(haloport_exchange_allocation(exchange, alloc, halo_lo, NULL, NULL));
    CHECK(haloport_exchange_field_bytes(exchange, 0, &bytes));
    size_t cells = bytes / sizeof(double);
    std::vector<double> host(cells, 0.0);
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++)
                host[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x] =
                    initial(origin[0] + x, origin[1] + y, origin[2] + z);
    double *u, *v;
    CUDA(cudaMalloc(&u, bytes));
    CUDA(cudaMalloc(&v, bytes));
    CUDA(cudaMemcpyAsync(u, host.data(), bytes, cudaMemcpyHostToDevice, stream));
    CUDA(cudaMemcpyAsync(v, host.data(), bytes, cudaMemcpyHostToDevice, stream));
    CUDA(cudaStreamSynchronize(stream));

    long long n = (long long)(local[0] * local[1] * local[2]);
    int threads = 256;
    unsigned blocks = (unsigned)((n + threads - 1) / threads);
    /* The time per step: after a warm-up step (the exchange's first use of a field builds its
       region tables), from a barrier to the stream's synchronization after the last step. */
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        if (s == 1) {
            CHECK(haloport_exchange_wait(exchange));
            CUDA(cudaStreamSynchronize(stream));
            MPI_Barrier(cart);
            t0 = MPI_Wtime();
        }
        haloport_field field = {u, bytes};
        CHECK(haloport_exchange_start(exchange, &field, 1, stream));
        app_jacobi<<<blocks, threads, 0, stream>>>(u, v, alloc[0], alloc[1], local[0], local[1], local[2], 0);
        CUDA(cudaGetLastError());
        CHECK(haloport_exchange_finish(exchange, stream));
        app_jacobi<<<blocks, threads, 0, stream>>>(u, v, alloc[0], alloc[1], local[0], local[1], local[2], 1);
        CUDA(cudaGetLastError());
        double *t = u;
        u = v;
        v = t;
    }
    CHECK(haloport_exchange_wait(exchange));
    CUDA(cudaStreamSynchronize(stream));
    double per_step = steps > 1 ? (MPI_Wtime() - t0) / (steps - 1) : 0.0;
    CUDA(cudaMemcpy(host.data(), u, bytes, cudaMemcpyDeviceToHost));
    CHECK(haloport_exchange_free(exchange));
    CHECK(haloport_options_free(options));
    CHECK(haloport_domain_free(domain));
    CHECK(haloport_backend_free(backend));
    CUDA(cudaFree(u));
    CUDA(cudaFree(v));
    CUDA(cudaStreamDestroy(stream));

    /* The reference on the CPU: the whole grid, y padded by one zero row on each side. */
    unsigned long long ay = grid[1] + 2;
    std::vector<double> ru(grid[0] * ay * grid[2], 0.0), rv;
    for (unsigned long long z = 0; z < grid[2]; z++)
        for (unsigned long long y = 0; y < grid[1]; y++)
            for (unsigned long long x = 0; x < grid[0]; x++) ru[(z * ay + y + 1) * grid[0] + x] = initial(x, y, z);
    rv = ru;
    for (int s = 0; s < steps; s++) {
        reference_step(ru, rv, grid);
        ru.swap(rv);
    }
    long mismatches = 0;
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++) {
                double got = host[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x];
                double want = ru[((origin[2] + z) * ay + origin[1] + y + 1) * grid[0] + origin[0] + x];
                if (std::memcmp(&got, &want, sizeof got) != 0) mismatches++;
            }
    long total;
    MPI_Allreduce(&mismatches, &total, 1, MPI_LONG, MPI_SUM, cart);
    if (rank == 0) {
        std::printf("%d ranks (%dx%dx%d, Cartesian), %d steps (the first a warm-up) of the application's own CUDA kernels on its own stream, "
                    "through the C ABI over %s: %.1f us per step\n",
                    ranks, dims[0], dims[1], dims[2], steps, transport == HALOPORT_TRANSPORT_IPC ? "ipc" : "mpi",
                    per_step * 1e6);
        if (total == 0)
            std::printf("verified: bit-for-bit equal to one rank computing the whole grid\n");
        else
            std::printf("MISMATCH: %ld cells differ from one rank computing the whole grid\n", total);
    }
    MPI_Comm_free(&node);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
