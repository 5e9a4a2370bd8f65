/*
 * The C ABI on a GPU as an application outside the project would use it. One check per run,
 * named by the first argument; prints one line per check and exits non-zero if one failed.
 *
 *   contexts    the application makes another CUDA context current between haloport's calls
 *               (its own context on the device; with a second GPU, that GPU's): each exchange
 *               fills every halo with the neighbours' values, and each call returns with the
 *               application's context current again.
 *   graph       two whole exchanges captured from C into a graph on the application's stream
 *               (transport IPC: every neighbour on the node), replayed; the halos hold the
 *               values of the interior as it was at each replay.
 *   misaligned  a field of two 4-byte components at 4 mod 8 is refused, naming the field.
 *   host        a host pointer given as a field of the CUDA backend is refused, naming it.
 *   never-free  one exchange, then MPI_Finalize with every handle still live: exits 0.
 *
 * Fields: a periodic 32x24x20 grid of doubles (4-byte x2 for `misaligned`), all 26 neighbours,
 * halos of 1, interior cell (x, y, z) = x + 1000 y + 1000000 z (plus 0.5 after a change).
 *
 * The application's CUDA calls go to the driver API, loaded from libcuda.so.1 at run time (as the
 * CUDA runtime itself does), so the program builds without a CUDA toolkit and runs with any
 * driver; its memory and stream belong to the device's primary context, which the CUDA runtime
 * and haloport share.
 *
 *   mpicxx -O2 foreign_checks.cpp $(pkg-config --cflags --libs haloport) -ldl -o foreign_checks
 *   mpirun -np 2 ./foreign_checks contexts
 */
#include <dlfcn.h>
#include <haloport.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

static int rank, failures;

static void report(const char *what, bool ok, const char *detail = "") {
    if (!ok) failures++;
    if (!ok || rank == 0) std::printf("rank %d: %s - %s%s%s\n", rank, ok ? "ok" : "FAIL", what, *detail ? ": " : "", detail);
    std::fflush(stdout);
}

/* The driver API the application uses, by the ABI of cuda.h (stable across CUDA versions). */
typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(int *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, int);
    CUresult (*CtxCreate)(CUcontext *, unsigned, int);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
} cu;

static bool load_driver() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return false;
    bool all = true;
    auto get = [&](auto &fn, const char *name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        all = all && fn != nullptr;
    };
    get(cu.Init, "cuInit");
    get(cu.DeviceGetCount, "cuDeviceGetCount");
    get(cu.DeviceGet, "cuDeviceGet");
    get(cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(cu.CtxCreate, "cuCtxCreate_v2");
    get(cu.CtxSetCurrent, "cuCtxSetCurrent");
    get(cu.CtxGetCurrent, "cuCtxGetCurrent");
    get(cu.MemAlloc, "cuMemAlloc_v2");
    get(cu.MemFree, "cuMemFree_v2");
    get(cu.MemcpyHtoD, "cuMemcpyHtoD_v2");
    get(cu.MemcpyDtoH, "cuMemcpyDtoH_v2");
    get(cu.StreamCreate, "cuStreamCreate");
    get(cu.StreamSynchronize, "cuStreamSynchronize");
    get(cu.StreamDestroy, "cuStreamDestroy_v2");
    return all;
}

#define CUDA(call)                                                                              \
    do {                                                                                        \
        CUresult e_ = (call);                                                                   \
        if (e_ != 0) {                                                                          \
            std::fprintf(stderr, "rank %d: %s failed: CUresult %d\n", rank, #call, e_);          \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                       \
        }                                                                                       \
    } while (0)

/* The primary context of each device: the application's (and the CUDA runtime's) context. */
static std::vector<CUcontext> primary;

/* cudaMalloc, cudaMemcpy, cudaFree as the runtime does them, in the device's primary context. */
static double *device_alloc(int device, size_t bytes) {
    CUDA(cu.CtxSetCurrent(primary[device]));
    CUdeviceptr p = 0;
    CUDA(cu.MemAlloc(&p, bytes));
    return reinterpret_cast<double *>(p);
}

/* A haloport call that must succeed; a failure ends the job (MPI_Abort) naming the call. */
#define HP(call)                                                                                \
    do {                                                                                        \
        haloport_status s_ = (call);                                                            \
        if (s_ != HALOPORT_STATUS_OK) {                                                         \
            std::fprintf(stderr, "rank %d: %s: %s: %s\n", rank, #call, haloport_status_name(s_), \
                         haloport_last_error());                                                \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                       \
        }                                                                                       \
    } while (0)

static const uint64_t GRID[3] = {32, 24, 20};

static double value(uint64_t x, uint64_t y, uint64_t z, double shift) {
    return (double)(x + 1000 * y + 1000000 * z) + shift;
}

struct Layout {
    uint64_t local[3], origin[3], alloc[3], halo_lo[3];
    size_t bytes;
};

static Layout layout_of(haloport_exchange *e) {
    Layout l;
    HP(haloport_exchange_local(e, l.local, l.origin));
    HP(haloport_exchange_allocation(e, l.alloc, l.halo_lo, NULL, NULL));
    HP(haloport_exchange_field_bytes(e, 0, &l.bytes));
    return l;
}

/* The field as it should be: the interior and every halo cell (periodic, all 26 neighbours) hold
   the value of their global cell. `interior_only` leaves the halos zero (the upload). */
static std::vector<double> expected(const Layout &l, double shift, bool interior_only) {
    std::vector<double> f(l.alloc[0] * l.alloc[1] * l.alloc[2], 0.0);
    for (uint64_t k = 0; k < l.alloc[2]; k++)
        for (uint64_t j = 0; j < l.alloc[1]; j++)
            for (uint64_t i = 0; i < l.alloc[0]; i++) {
                uint64_t at[3] = {i, j, k}, g[3];
                bool inside = true;
                for (int d = 0; d < 3; d++) {
                    long long c = (long long)at[d] - (long long)l.halo_lo[d];
                    inside = inside && c >= 0 && c < (long long)l.local[d];
                    long long n = (long long)GRID[d];
                    g[d] = (uint64_t)((((long long)l.origin[d] + c) % n + n) % n);
                }
                if (inside || !interior_only) f[(k * l.alloc[1] + j) * l.alloc[0] + i] = value(g[0], g[1], g[2], shift);
            }
    return f;
}

static haloport_exchange *make_exchange(haloport_backend *backend, uint32_t elem_bytes, uint32_t components,
                                        haloport_transport transport) {
    haloport_domain *domain;
    haloport_options *options;
    haloport_exchange *exchange;
    HP(haloport_domain_new(GRID, &domain)); /* periodic in x, y and z, halos of 1, all 26 */
    HP(haloport_domain_add_field(domain, elem_bytes, components));
    HP(haloport_options_new(&options));
    HP(haloport_options_set_transport(options, transport));
    HP(haloport_exchange_new(backend, MPI_COMM_WORLD, domain, options, &exchange));
    HP(haloport_options_free(options));
    HP(haloport_domain_free(domain));
    return exchange;
}

/* The device field compared cell by cell with `want`. */
static void check_cells(const char *what, const Layout &l, double *d_field, const std::vector<double> &want) {
    std::vector<double> got(l.alloc[0] * l.alloc[1] * l.alloc[2]);
    CUDA(cu.MemcpyDtoH(got.data(), reinterpret_cast<CUdeviceptr>(d_field), got.size() * sizeof(double)));
    size_t wrong = 0;
    for (size_t c = 0; c < got.size(); c++) wrong += got[c] != want[c];
    char detail[96];
    std::snprintf(detail, sizeof detail, "%zu of %zu cells wrong", wrong, got.size());
    report(what, wrong == 0, wrong ? detail : "");
}

/* Every cell, halos included, holds its global cell's value. */
static void check_field(const char *what, const Layout &l, double *d_field, double shift) {
    check_cells(what, l, d_field, expected(l, shift, false));
}

/* The application's context switch between calls, and the check that haloport gave it back. */
struct Switcher {
    CUcontext mine = nullptr, set = nullptr;
    int other_device = -1, device = 0;
    int calls = 0;
    /* Another context current: the application's own, or (every second call, with a second
       GPU) that GPU's primary context, as cudaSetDevice(other) leaves it. */
    void away() {
        calls++;
        set = other_device >= 0 && calls % 2 == 0 ? primary[other_device] : mine;
        CUDA(cu.CtxSetCurrent(set));
    }
    void back_and_check(const char *call) {
        CUcontext current = nullptr;
        CUDA(cu.CtxGetCurrent(&current));
        if (current != set) {
            char detail[160];
            std::snprintf(detail, sizeof detail, "after %s another context is current", call);
            report("the caller's context restored", false, detail);
        }
        CUDA(cu.CtxSetCurrent(primary[device])); /* the application's own work on its device */
    }
};

static int check_contexts(haloport_backend *backend, int device, CUstream stream) {
    Switcher s;
    s.device = device;
    if (primary.size() > 1) s.other_device = (device + 1) % (int)primary.size();
    /* cuCtxCreate makes a new context of the device current (the application's own). */
    int dev = 0;
    CUDA(cu.DeviceGet(&dev, device));
    CUDA(cu.CtxCreate(&s.mine, 0, dev));
    CUDA(cu.CtxSetCurrent(primary[device]));
    haloport_exchange *e = make_exchange(backend, 8, 1, HALOPORT_TRANSPORT_MPI);
    Layout l = layout_of(e);
    double *u = device_alloc(device, l.bytes);
    std::vector<double> start = expected(l, 0.0, true);
    for (int round = 0; round < 3; round++) {
        double shift = round * 0.5;
        start = expected(l, shift, true);
        CUDA(cu.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(u), start.data(), l.bytes));
        haloport_field f = {u, l.bytes};
        s.away();
        haloport_status st = haloport_exchange_start(e, &f, 1, stream);
        s.back_and_check("haloport_exchange_start");
        if (st != HALOPORT_STATUS_OK) { report("start with another context current", false, haloport_last_error()); break; }
        s.away();
        st = haloport_exchange_finish(e, stream);
        s.back_and_check("haloport_exchange_finish");
        if (st != HALOPORT_STATUS_OK) { report("finish with another context current", false, haloport_last_error()); break; }
        s.away();
        st = haloport_exchange_wait(e);
        s.back_and_check("haloport_exchange_wait");
        if (st != HALOPORT_STATUS_OK) { report("wait with another context current", false, haloport_last_error()); break; }
        CUDA(cu.StreamSynchronize(stream));
        check_field("halos filled while the application switched contexts between calls", l, u, shift);
    }
    s.away();
    haloport_status st = haloport_exchange_free(e);
    s.back_and_check("haloport_exchange_free");
    report("free with another context current", st == HALOPORT_STATUS_OK,
           st == HALOPORT_STATUS_OK ? "" : haloport_last_error());
    CUDA(cu.MemFree(reinterpret_cast<CUdeviceptr>(u)));
    char detail[96];
    std::snprintf(detail, sizeof detail, "%d calls, %s", s.calls,
                  s.other_device >= 0 ? "alternating its own context and another GPU's" : "its own context (one GPU)");
    report("every call returned with the caller's context current", failures == 0, detail);
    return 0;
}

static int check_graph(haloport_backend *backend, int device, CUstream stream) {
    haloport_exchange *e = make_exchange(backend, 8, 1, HALOPORT_TRANSPORT_IPC);
    Layout l = layout_of(e);
    double *u = device_alloc(device, l.bytes);
    std::vector<double> start = expected(l, 0.0, true);
    CUDA(cu.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(u), start.data(), l.bytes));
    haloport_field f = {u, l.bytes};
    haloport_graph *graph = NULL;
    HP(haloport_exchange_begin_capture(e, stream));
    for (int s = 0; s < 2; s++) {
        HP(haloport_exchange_start(e, &f, 1, stream));
        HP(haloport_exchange_finish(e, stream));
    }
    HP(haloport_exchange_end_capture(e, stream, &graph));
    report("two exchanges captured into a graph", graph != NULL);
    CUDA(cu.StreamSynchronize(stream));
    check_cells("nothing ran during the capture (the halos still zero)", l, u, start);
    for (int round = 0; round < 2; round++) {
        double shift = round * 0.5;
        start = expected(l, shift, true);
        CUDA(cu.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(u), start.data(), l.bytes));
        MPI_Barrier(MPI_COMM_WORLD);
        HP(haloport_exchange_replay(e, graph, stream));
        HP(haloport_exchange_wait(e));
        CUDA(cu.StreamSynchronize(stream));
        check_field("a replay filled the halos with the interior as it was", l, u, shift);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    HP(haloport_graph_free(graph));
    HP(haloport_exchange_free(e));
    CUDA(cu.MemFree(reinterpret_cast<CUdeviceptr>(u)));
    return 0;
}

static int check_refused(haloport_backend *backend, int device, bool host_pointer) {
    haloport_exchange *e = host_pointer ? make_exchange(backend, 8, 1, HALOPORT_TRANSPORT_MPI)
                                        : make_exchange(backend, 4, 2, HALOPORT_TRANSPORT_MPI);
    size_t bytes;
    HP(haloport_exchange_field_bytes(e, 0, &bytes));
    char *memory;
    if (host_pointer) {
        memory = (char *)std::calloc(bytes, 1);
    } else {
        memory = reinterpret_cast<char *>(device_alloc(device, bytes + 8));
    }
    haloport_field f = {host_pointer ? memory : memory + 4, bytes};
    haloport_status st = haloport_exchange_exchange(e, &f, 1, NULL);
    const char *message = haloport_last_error();
    if (host_pointer) {
        report("a host pointer refused", st == HALOPORT_STATUS_INVALID_INPUT && std::strstr(message, "field 0"),
               message);
        std::free(memory);
    } else {
        report("a field at 4 mod 8 for 8-byte words refused",
               st == HALOPORT_STATUS_INVALID_INPUT && std::strstr(message, "field 0 (4-byte x2") &&
                   std::strstr(message, "aligned to 8 bytes"),
               message);
        CUDA(cu.MemFree(reinterpret_cast<CUdeviceptr>(memory)));
    }
    /* The exchange still works after a refused call. */
    HP(haloport_exchange_free(e));
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *check = argc > 1 ? argv[1] : "";
    MPI_Comm node;
    int local_rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    if (!load_driver()) {
        std::fprintf(stderr, "rank %d: libcuda.so.1 or one of its functions not found: %s\n", rank, dlerror());
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    CUDA(cu.Init(0));
    int devices = 0;
    CUDA(cu.DeviceGetCount(&devices));
    for (int d = 0; d < devices; d++) {
        int dev = 0;
        CUcontext ctx = nullptr;
        CUDA(cu.DeviceGet(&dev, d));
        CUDA(cu.DevicePrimaryCtxRetain(&ctx, dev));
        primary.push_back(ctx);
    }
    int device = local_rank % devices;
    CUDA(cu.CtxSetCurrent(primary[device]));
    CUstream stream;
    CUDA(cu.StreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */));
    haloport_backend *backend;
    HP(haloport_backend_new(HALOPORT_BACKEND_KIND_CUDA, device, &backend));

    if (!std::strcmp(check, "contexts")) {
        check_contexts(backend, device, stream);
    } else if (!std::strcmp(check, "graph")) {
        check_graph(backend, device, stream);
    } else if (!std::strcmp(check, "misaligned") || !std::strcmp(check, "host")) {
        check_refused(backend, device, !std::strcmp(check, "host"));
    } else if (!std::strcmp(check, "never-free")) {
        haloport_exchange *e = make_exchange(backend, 8, 1, HALOPORT_TRANSPORT_IPC);
        Layout l = layout_of(e);
        double *u = device_alloc(device, l.bytes);
        std::vector<double> start = expected(l, 0.0, true);
        CUDA(cu.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(u), start.data(), l.bytes));
        haloport_field f = {u, l.bytes};
        HP(haloport_exchange_exchange(e, &f, 1, stream));
        check_field("an exchange before MPI_Finalize", l, u, 0.0);
        if (rank == 0) std::printf("never-free: MPI_Finalize with the exchange, backend and field live\n");
        std::fflush(stdout);
        MPI_Finalize();
        return failures ? 1 : 0; /* nothing freed: the handles end with the process */
    } else {
        if (rank == 0) std::fprintf(stderr, "usage: %s contexts|graph|misaligned|host|never-free\n", argv[0]);
        failures++;
    }
    HP(haloport_backend_free(backend));
    CUDA(cu.StreamDestroy(stream));
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s: %d failed checks on all ranks\n", check, total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
