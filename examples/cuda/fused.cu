/*
 * Fused mode from CUDA C++: a 7-point Jacobi on a periodic 3-D grid whose own boundary kernel
 * stores each boundary cell it computes straight into the neighbours' halos
 * (haloport_device.h), so no pack or unpack runs. haloport allocates the two fields (they are
 * mapped into the neighbours) and signals around the application's kernels:
 *
 *   haloport_exchange_fused_start(v)     the neighbours are done reading v's halos
 *   boundary kernel: v = stencil(u)      + haloport_box_store_f64 into the neighbours' halos
 *                                          of v, through the messages its block's box feeds
 *                                          (haloport_box_begin), + haloport_box_done
 *   interior kernel: v = stencil(u)      (cells no neighbour needs)
 *   haloport_exchange_fused_finish(v)    every cell of v's halos arrived
 *
 * One ordinary haloport_exchange_exchange fills u's halos before the first step. Every rank
 * checks its part bit for bit against the whole grid computed on the CPU with the same
 * arithmetic, prints PASS or FAIL, and exits non-zero on a mismatch. Fused mode needs every
 * neighbour device-direct (transport ipc, every rank on one node) or the rank itself.
 *
 *   nvcc -O2 -fmad=false fused.cu $(pkg-config --cflags --libs haloport) \
 *        $(mpicxx --showme:compile) $(mpicxx --showme:link) -o fused
 *   mpirun -np 2 ./fused --grid 64 48 40 --steps 20
 */
#include <cuda_runtime.h>
#include <haloport.h> /* includes haloport_device.h */
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

/* One block's box of boundary cells, in allocated indices: [lo, hi). */
struct Tile {
    uint32_t lo[3], hi[3];
};

/* The mean of cell c and its 6 face neighbours (the same order on the CPU). */
__device__ __forceinline__ double stencil(const double *u, long long c, long long sy, long long sz) {
    return (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) * (1.0 / 7.0);
}

/* One block per tile of the boundary (the interior's outermost layer of cells, which the
 * neighbours need): each thread computes some of its cells, writes them and stores them into
 * the neighbours' halos; then every thread of the block reports the tile's cells. */
__global__ void boundary(const haloport_fused *out, const Tile *tiles, const double *u, double *v,
                         long long ax, long long ay) {
    __shared__ haloport_box_targets targets;
    const Tile t = tiles[blockIdx.x];
    haloport_box_begin(out, t.lo, t.hi, &targets);
    uint32_t ex = t.hi[0] - t.lo[0], ey = t.hi[1] - t.lo[1], ez = t.hi[2] - t.lo[2];
    for (uint32_t i = threadIdx.x; i < ex * ey * ez; i += blockDim.x) {
        uint32_t x = t.lo[0] + i % ex, y = t.lo[1] + (i / ex) % ey, z = t.lo[2] + i / (ex * ey);
        long long c = x + ax * (y + ay * (long long)z);
        double value = stencil(u, c, ax, ax * ay);
        v[c] = value;
        haloport_box_store_f64(&targets, x, y, z, value);
    }
    haloport_box_done(&targets);
}

/* The cells inside the boundary layer: one thread each; no neighbour needs them. */
__global__ void interior(const double *u, double *v, long long ax, long long ay, long long nx, long long ny,
                         long long nz) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= nx * ny * nz) return;
    /* Allocated indices: the halo (1) and the boundary layer (1) before the first such cell. */
    long long x = 2 + i % nx, y = 2 + (i / nx) % ny, z = 2 + i / (nx * ny);
    long long c = x + ax * (y + ay * z);
    v[c] = stencil(u, c, ax, ax * ay);
}

static double initial(unsigned long long x, unsigned long long y, unsigned long long z) {
    return (double)((x * 7 + y * 13 + z * 17) % 23) * 0.25;
}

/* The same step on the CPU over the whole periodic grid: the reference. */
static void reference_step(const std::vector<double> &u, std::vector<double> &v, const unsigned long long n[3]) {
    auto at = [&](unsigned long long x, unsigned long long y, unsigned long long z) {
        return u[(z * n[1] + y) * n[0] + x];
    };
    for (unsigned long long z = 0; z < n[2]; z++)
        for (unsigned long long y = 0; y < n[1]; y++)
            for (unsigned long long x = 0; x < n[0]; x++) {
                unsigned long long xm = (x + n[0] - 1) % n[0], xp = (x + 1) % n[0];
                unsigned long long ym = (y + n[1] - 1) % n[1], yp = (y + 1) % n[1];
                unsigned long long zm = (z + n[2] - 1) % n[2], zp = (z + 1) % n[2];
                v[(z * n[1] + y) * n[0] + x] = (at(x, y, z) + at(xm, y, z) + at(xp, y, z) + at(x, ym, z) +
                                                at(x, yp, z) + at(x, y, zm) + at(x, y, zp)) *
                                               (1.0 / 7.0);
            }
}

/* The boundary layer of a part of n cells (each n[k] >= 3) starting at allocated index 1, as
 * six disjoint boxes (the z faces whole, the y faces between them, the x faces between those),
 * each cut into tiles of at most 16 x 16 cells across its wide dimensions. */
static std::vector<Tile> boundary_tiles(const uint64_t n[3]) {
    std::vector<Tile> tiles;
    auto add = [&](uint32_t lo0, uint32_t lo1, uint32_t lo2, uint32_t hi0, uint32_t hi1, uint32_t hi2) {
        const uint32_t lo[3] = {lo0, lo1, lo2}, hi[3] = {hi0, hi1, hi2};
        const uint32_t step = 16;
        for (uint32_t z = lo[2]; z < hi[2]; z += step)
            for (uint32_t y = lo[1]; y < hi[1]; y += step)
                for (uint32_t x = lo[0]; x < hi[0]; x += step) {
                    Tile t = {{x, y, z},
                              {x + step < hi[0] ? x + step : hi[0], y + step < hi[1] ? y + step : hi[1],
                               z + step < hi[2] ? z + step : hi[2]}};
                    tiles.push_back(t);
                }
    };
    const uint32_t nx = (uint32_t)n[0], ny = (uint32_t)n[1], nz = (uint32_t)n[2];
    add(1, 1, 1, 1 + nx, 1 + ny, 2);                  /* z = first */
    add(1, 1, nz, 1 + nx, 1 + ny, nz + 1);            /* z = last */
    add(1, 1, 2, 1 + nx, 2, nz);                      /* y = first, between the z faces */
    add(1, ny, 2, 1 + nx, ny + 1, nz);                /* y = last */
    add(1, 2, 2, 2, ny, nz);                          /* x = first, between the y faces */
    add(nx, 2, 2, nx + 1, ny, nz);                    /* x = last */
    return tiles;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    unsigned long long grid[3] = {64, 48, 40};
    int steps = 20;
    for (int a = 1; a < argc; a++) {
        if (!std::strcmp(argv[a], "--grid") && a + 3 < argc) {
            for (int k = 0; k < 3; k++) grid[k] = std::strtoull(argv[++a], nullptr, 10);
        } else if (!std::strcmp(argv[a], "--steps") && a + 1 < argc) {
            steps = std::atoi(argv[++a]);
        } else {
            std::fprintf(stderr, "usage: %s [--grid NX NY NZ] [--steps N]\n", argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank, devices;
    MPI_Comm_rank(node, &local_rank);
    CUDA(cudaGetDeviceCount(&devices));
    CUDA(cudaSetDevice(local_rank % devices));
    cudaStream_t stream;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    /* Periodic everywhere, halos of 1, the 6 face neighbours (a 7-point stencil), one f64
     * field; device-direct between the ranks of this node. */
    haloport_backend *backend;
    haloport_domain *domain;
    haloport_options *options;
    haloport_exchange *exchange;
    const uint64_t extents[3] = {grid[0], grid[1], grid[2]};
    const int32_t periodic[3] = {1, 1, 1};
    CHECK(haloport_backend_new(HALOPORT_BACKEND_KIND_CUDA, local_rank, &backend));
    CHECK(haloport_domain_new(extents, &domain));
    CHECK(haloport_domain_set_periodic(domain, periodic));
    CHECK(haloport_domain_set_neighbourhood(domain, HALOPORT_NEIGHBOURHOOD_FACES));
    CHECK(haloport_domain_add_field(domain, sizeof(double), 1));
    CHECK(haloport_options_new(&options));
    CHECK(haloport_options_set_transport(options, HALOPORT_TRANSPORT_IPC));
    CHECK(haloport_exchange_new(backend, MPI_COMM_WORLD, domain, options, &exchange));

    uint64_t local[3], origin[3], alloc[3], halo_lo[3];
    size_t bytes;
    CHECK(haloport_exchange_local(exchange, local, origin));
    CHECK(haloport_exchange_allocation(exchange, alloc, halo_lo, NULL, NULL));
    CHECK(haloport_exchange_field_bytes(exchange, 0, &bytes));
    int small = local[0] < 3 || local[1] < 3 || local[2] < 3, any_small;
    MPI_Allreduce(&small, &any_small, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_small) {
        if (rank == 0)
            std::fprintf(stderr, "FAIL: every rank's part must be at least 3 cells wide in x, y and z; grid %llux%llux%llu over %d ranks is too small\n",
                         grid[0], grid[1], grid[2], ranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* The two fields, allocated by haloport: set 0 is u, set 1 is v. */
    void *fields[2];
    CHECK(haloport_exchange_fuse(exchange, 2, fields));
    double *field[2] = {(double *)fields[0], (double *)fields[1]};

    std::vector<double> host(bytes / sizeof(double), 0.0);
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++)
                host[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x] =
                    initial(origin[0] + x, origin[1] + y, origin[2] + z);
    CUDA(cudaMemcpyAsync(field[0], host.data(), bytes, cudaMemcpyHostToDevice, stream));
    /* u's halos, once, by an ordinary exchange; afterwards every step's stores fill them. */
    haloport_field u0 = {field[0], bytes};
    CHECK(haloport_exchange_exchange(exchange, &u0, 1, stream));

    std::vector<Tile> tiles = boundary_tiles(local);
    Tile *device_tiles;
    CUDA(cudaMalloc(&device_tiles, tiles.size() * sizeof(Tile)));
    CUDA(cudaMemcpyAsync(device_tiles, tiles.data(), tiles.size() * sizeof(Tile), cudaMemcpyHostToDevice, stream));
    long long inner = (long long)((local[0] - 2) * (local[1] - 2) * (local[2] - 2));
    const int threads = 256;
    unsigned inner_blocks = (unsigned)((inner + threads - 1) / threads);

    /* The time per step: after a warm-up step, from a barrier to the stream's synchronization
     * after the last step. */
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        if (s == 1) {
            CUDA(cudaStreamSynchronize(stream));
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        int from = s % 2, to = 1 - from;
        const void *out = NULL;
        CHECK(haloport_exchange_fused_start(exchange, (size_t)to, stream, &out));
        boundary<<<(unsigned)tiles.size(), threads, 0, stream>>>((const haloport_fused *)out, device_tiles,
                                                                 field[from], field[to], alloc[0], alloc[1]);
        CUDA(cudaGetLastError());
        if (inner > 0) {
            interior<<<inner_blocks, threads, 0, stream>>>(field[from], field[to], alloc[0], alloc[1],
                                                           local[0] - 2, local[1] - 2, local[2] - 2);
            CUDA(cudaGetLastError());
        }
        CHECK(haloport_exchange_fused_finish(exchange, (size_t)to, stream));
    }
    CUDA(cudaStreamSynchronize(stream));
    /* Reports a wait on the device that gave up (naming the neighbour and halo). */
    CHECK(haloport_exchange_wait(exchange));
    double per_step = steps > 1 ? (MPI_Wtime() - t0) / (steps - 1) : 0.0;
    CUDA(cudaMemcpy(host.data(), field[steps % 2], bytes, cudaMemcpyDeviceToHost));
    CUDA(cudaFree(device_tiles));
    /* Frees the fields haloport allocated too. */
    CHECK(haloport_exchange_free(exchange));
    CHECK(haloport_options_free(options));
    CHECK(haloport_domain_free(domain));
    CHECK(haloport_backend_free(backend));
    CUDA(cudaStreamDestroy(stream));

    /* The reference: the whole grid on the CPU. */
    std::vector<double> ru(grid[0] * grid[1] * grid[2]), rv(ru.size());
    for (unsigned long long z = 0; z < grid[2]; z++)
        for (unsigned long long y = 0; y < grid[1]; y++)
            for (unsigned long long x = 0; x < grid[0]; x++) ru[(z * grid[1] + y) * grid[0] + x] = initial(x, y, z);
    for (int s = 0; s < steps; s++) {
        reference_step(ru, rv, grid);
        ru.swap(rv);
    }
    long mismatches = 0;
    for (uint64_t z = 0; z < local[2]; z++)
        for (uint64_t y = 0; y < local[1]; y++)
            for (uint64_t x = 0; x < local[0]; x++) {
                double got = host[((halo_lo[2] + z) * alloc[1] + halo_lo[1] + y) * alloc[0] + halo_lo[0] + x];
                double want = ru[((origin[2] + z) * grid[1] + origin[1] + y) * grid[0] + origin[0] + x];
                if (std::memcmp(&got, &want, sizeof got) != 0) mismatches++;
            }
    long total;
    MPI_Allreduce(&mismatches, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        std::printf("%d ranks, grid %llux%llux%llu, %d steps (the first a warm-up) in fused mode: the application's "
                    "boundary kernel stores into the neighbours' halos; %.1f us per step\n",
                    ranks, grid[0], grid[1], grid[2], steps, per_step * 1e6);
        if (total == 0)
            std::printf("PASS: bit-for-bit equal to one rank computing the whole grid\n");
        else
            std::printf("FAIL: %ld cells differ from one rank computing the whole grid\n", total);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
