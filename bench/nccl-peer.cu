// NCCL's grouped send/recv of haloport's named workloads, beside `haloport sweep`: two ranks,
// one GPU each, every pattern block one ncclSend and one ncclRecv to the peer inside one
// ncclGroupStart/End, the same messages `haloport sweep --pattern pairwise` moves. Each
// iteration fills the send buffer with values that name the sender, the iteration and the
// element (a kernel), exchanges, and checks every received element (a kernel counting
// mismatches on the device), so NCCL pays what haloport's variants pay: pack, move, unpack with
// a check. Two protocols:
//   barrier:      each iteration is timed alone and ends with cudaStreamSynchronize and
//                 MPI_Barrier (the protocol of `haloport sweep`);
//   back-to-back: ITERS iterations queued without a host wait between them, one synchronize at
//                 the end; the run's time divided by ITERS (the `--no-barrier` figure).
// Prints one CSV line per workload and protocol: the median, minimum and maximum over RUNS runs
// (of ITERS timed iterations each, after WARMUP untimed ones) and whether every check passed;
// with --json FILE, rank 0 also writes them as JSON (schema haloport-bench/1, bench/README.md).
// Exit 0 only if every element of every iteration arrived right.
//
// Build (the GPU machine: nvcc, OpenMPI, NCCL and its header):
//   nvcc -O2 -arch=native bench/nccl-peer.cu $(mpicxx --showme:compile) $(mpicxx --showme:link) \
//       -lnccl -o nccl-peer
// Run: mpirun -np 2 nccl-peer [--workloads small,thesis-9,thesis-27,large] [--runs 20]
//        [--iters 10] [--warmup 3] [--timeout 120] [--json FILE]
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CUDA(call)                                                                        \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) {                                                              \
            fprintf(stderr, "nccl-peer: %s failed: %s (%s:%d)\n", #call,                       \
                    cudaGetErrorString(err_), __FILE__, __LINE__);                              \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                       \
        }                                                                                       \
    } while (0)
#define CHECK_NCCL(call)                                                                        \
    do {                                                                                        \
        ncclResult_t err_ = (call);                                                             \
        if (err_ != ncclSuccess) {                                                              \
            fprintf(stderr, "nccl-peer: %s failed: %s (%s:%d)\n", #call,                       \
                    ncclGetErrorString(err_), __FILE__, __LINE__);                              \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                       \
        }                                                                                       \
    } while (0)
#define CHECK_MPI(call)                                                                         \
    do {                                                                                        \
        int err_ = (call);                                                                      \
        if (err_ != MPI_SUCCESS) {                                                              \
            fprintf(stderr, "nccl-peer: %s failed with MPI error %d (%s:%d)\n", #call, err_,    \
                    __FILE__, __LINE__);                                                        \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                       \
        }                                                                                       \
    } while (0)

// Elements of f64 per block of the thesis workloads (haloport's THESIS_TABLE_4_1).
static const long kTable[27] = {1,      15000,  30000,  45000,  60000,  75000,  90000,
                                105000, 120000, 5000,   20000,  35000,  50000,  65000,
                                80000,  95000,  110000, 125000, 10000,  25000,  40000,
                                55000,  70000,  85000,  100000, 115000, 130000};

// The blocks of a named workload, as haloport defines them; empty if unknown.
static std::vector<long> block_elems(const std::string &name) {
    std::vector<long> v;
    if (name == "small") {
        for (int b = 0; b < 4; b++) v.push_back(std::max(kTable[b] / 1000, 1L));
    } else if (name == "thesis-4" || name == "thesis-9" || name == "thesis-27") {
        int n = name == "thesis-4" ? 4 : name == "thesis-9" ? 9 : 27;
        v.assign(kTable, kTable + n);
    } else if (name == "large") {
        for (int b = 0; b < 27; b++) v.push_back(kTable[b] * 10);
    }
    return v;
}

// Exact in f64 (below 2^53): the sender's rank, the iteration and the element's index.
__host__ __device__ static double value_of(int rank, int iter, long i) {
    return (double)(rank + 1) * 1e12 + (double)(iter % 4096) * 1e8 + (double)i;
}

__global__ void fill(double *send, long n, int rank, int iter) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        send[i] = value_of(rank, iter, i);
}

__global__ void check(const double *recv, long n, int peer, int iter, unsigned long long *wrong) {
    unsigned long long mine = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        mine += recv[i] != value_of(peer, iter, i);
    if (mine) atomicAdd(wrong, mine);
}

static void on_alarm(int) {
    static const char msg[] = "nccl-peer: timed out (--timeout); a rank is stuck in NCCL or MPI\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(4);
}

struct Options {
    std::vector<std::string> workloads{"small", "thesis-9", "thesis-27", "large"};
    int runs = 20, iters = 10, warmup = 3, timeout = 120;
    std::string json;  // empty: no JSON file
};

static bool parse(int argc, char **argv, Options &o, std::string &why) {
    for (int a = 1; a < argc; a++) {
        std::string flag = argv[a];
        if (a + 1 >= argc) { why = "option " + flag + " needs a value"; return false; }
        std::string value = argv[++a];
        if (flag == "--workloads") {
            o.workloads.clear();
            size_t start = 0;
            while (start <= value.size()) {
                size_t comma = value.find(',', start);
                std::string w = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                if (block_elems(w).empty()) { why = "unknown workload '" + w + "'"; return false; }
                o.workloads.push_back(w);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else if (flag == "--json") {
            o.json = value;
        } else if (flag == "--runs" || flag == "--iters" || flag == "--warmup" || flag == "--timeout") {
            char *end = nullptr;
            long n = strtol(value.c_str(), &end, 10);
            if (*end || n < (flag == "--warmup" ? 0 : 1) || n > 100000) {
                why = "option " + flag + " takes a count, not '" + value + "'";
                return false;
            }
            (flag == "--runs" ? o.runs : flag == "--iters" ? o.iters : flag == "--warmup" ? o.warmup : o.timeout) = (int)n;
        } else {
            why = "unknown option '" + flag + "'";
            return false;
        }
    }
    return true;
}

struct Exchange {
    std::vector<long> blocks;
    long total = 0;
    double *send = nullptr, *recv = nullptr;
    unsigned long long *wrong = nullptr;
    int rank = 0, peer = 0;
    ncclComm_t comm;
    cudaStream_t stream;

    void iteration(int iter) {
        const int threads = 256, grid = (int)std::min((total + threads - 1) / threads, 1056L);
        fill<<<grid, threads, 0, stream>>>(send, total, rank, iter);
        CHECK_CUDA(cudaGetLastError());
        CHECK_NCCL(ncclGroupStart());
        long offset = 0;
        for (long n : blocks) {
            CHECK_NCCL(ncclSend(send + offset, n, ncclDouble, peer, comm, stream));
            CHECK_NCCL(ncclRecv(recv + offset, n, ncclDouble, peer, comm, stream));
            offset += n;
        }
        CHECK_NCCL(ncclGroupEnd());
        check<<<grid, threads, 0, stream>>>(recv, total, peer, iter, wrong);
        CHECK_CUDA(cudaGetLastError());
    }
};

// One workload under one protocol, as the JSON's `results` rows hold it.
struct Row {
    std::string workload;
    bool barrier;
    size_t blocks;
    long bytes;
    double median_us, min_us, max_us;
    long checked;
    unsigned long long wrong;
};

// `s` as a JSON string.
static std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += (char)c;
        } else if (c < 0x20) {
            char escaped[8];
            snprintf(escaped, sizeof escaped, "\\u%04x", (unsigned)c);
            out += escaped;
        } else {
            out += (char)c;
        }
    }
    return out + "\"";
}

// MPI_Get_library_version's first line, as haloport's result files record it.
static std::string mpi_library() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown";
    std::string s(text, len);
    size_t end = s.find_first_of("\n\r");
    if (end != std::string::npos) s.resize(end);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
    return s;
}

// The result in schema haloport-bench/1 (bench/README.md); false if it cannot be written.
static bool write_json(FILE *f, const Options &o, int ranks, int nccl_version, const std::vector<Row> &rows,
                       bool all_right) {
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    if (MPI_Get_processor_name(host, &len) != MPI_SUCCESS) len = 0;
    int device;
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    fprintf(f, "{\n  \"schema\": \"haloport-bench/1\",\n  \"command\": \"nccl-peer\",\n");
    fprintf(f, "  \"host\": %s,\n", json_string(std::string(host, len)).c_str());
    fprintf(f, "  \"mpi_library\": %s,\n", json_string(mpi_library()).c_str());
    fprintf(f, "  \"backend\": \"cuda\",\n  \"device\": %s,\n", json_string(prop.name).c_str());
    fprintf(f, "  \"nccl_version\": %d,\n  \"ranks\": %d,\n  \"pattern\": \"pairwise\",\n", nccl_version, ranks);
    fprintf(f, "  \"iterations\": %d,\n  \"warmup\": %d,\n  \"runs\": %d,\n", o.iters + o.warmup, o.warmup, o.runs);
    fprintf(f, "  \"variants\": [\"nccl\"],\n  \"workloads\": [");
    for (size_t i = 0; i < o.workloads.size(); i++)
        fprintf(f, "%s%s", i ? ", " : "", json_string(o.workloads[i]).c_str());
    fprintf(f, "],\n  \"verified\": %s,\n  \"results\": [", all_right ? "true" : "false");
    for (size_t i = 0; i < rows.size(); i++) {
        const Row &r = rows[i];
        fprintf(f,
                "%s\n    {\"variant\": \"nccl\", \"strategy\": \"nccl\", \"transport\": \"nccl\", "
                "\"barrier\": %s, \"workload\": %s, \"blocks\": %zu, \"bytes_per_direction\": %ld, "
                "\"runs\": %d, \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, "
                "\"checked\": %ld, \"wrong\": %llu, \"verified\": %s}",
                i ? "," : "", r.barrier ? "true" : "false", json_string(r.workload).c_str(), r.blocks,
                r.bytes, o.runs, r.median_us, r.min_us, r.max_us, r.checked, r.wrong,
                r.wrong == 0 && r.checked > 0 ? "true" : "false");
    }
    fprintf(f, "\n  ]\n}\n");
    return fflush(f) == 0 && !ferror(f);
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    Options o;
    std::string why;
    if (size != 2 || !parse(argc, argv, o, why)) {
        if (rank == 0)
            fprintf(stderr, "nccl-peer: %s\n", size != 2 ? "needs exactly 2 ranks (mpirun -np 2)" : why.c_str());
        MPI_Finalize();
        return 2;
    }
    // The JSON file opened before anything runs, so that a path that cannot be written fails
    // at once rather than after the measurements.
    FILE *json = nullptr;
    int json_ok = 1;
    if (rank == 0 && !o.json.empty()) {
        json = fopen(o.json.c_str(), "w");
        if (!json) {
            fprintf(stderr, "nccl-peer: --json %s: cannot be written: %s\n", o.json.c_str(), strerror(errno));
            json_ok = 0;
        }
    }
    CHECK_MPI(MPI_Bcast(&json_ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!json_ok) {
        MPI_Finalize();
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(o.timeout);

    int devices;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    CHECK_CUDA(cudaSetDevice(rank % devices));
    ncclUniqueId id;
    if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    Exchange x;
    x.rank = rank;
    x.peer = 1 - rank;
    CHECK_NCCL(ncclCommInitRank(&x.comm, size, id, rank));
    CHECK_CUDA(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&x.wrong, sizeof *x.wrong));
    int version;
    CHECK_NCCL(ncclGetVersion(&version));
    if (rank == 0) {
        printf("# NCCL %d, %d ranks on %d visible GPUs (rank r on GPU r %% %d), runs %d, iters %d, warm-up %d\n",
               version, size, devices, devices, o.runs, o.iters, o.warmup);
        printf("workload,protocol,messages,bytes_per_direction,runs,median_us,min_us,max_us,checked_elements,wrong_elements,verified\n");
    }
    bool all_right = true;
    std::vector<Row> rows;
    int iter = 0;
    for (const std::string &w : o.workloads) {
        x.blocks = block_elems(w);
        x.total = 0;
        for (long n : x.blocks) x.total += n;
        CHECK_CUDA(cudaMalloc(&x.send, x.total * sizeof(double)));
        CHECK_CUDA(cudaMalloc(&x.recv, x.total * sizeof(double)));
        for (int back_to_back = 0; back_to_back < 2; back_to_back++) {
            CHECK_CUDA(cudaMemsetAsync(x.wrong, 0, sizeof *x.wrong, x.stream));
            std::vector<double> times;
            long checked = 0;
            for (int run = 0; run < o.runs; run++) {
                for (int i = 0; i < o.warmup; i++) x.iteration(iter++);
                CHECK_CUDA(cudaStreamSynchronize(x.stream));
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                if (back_to_back) {
                    double t0 = MPI_Wtime();
                    for (int i = 0; i < o.iters; i++) x.iteration(iter++);
                    CHECK_CUDA(cudaStreamSynchronize(x.stream));
                    times.push_back((MPI_Wtime() - t0) * 1e6 / o.iters);
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                } else {
                    for (int i = 0; i < o.iters; i++) {
                        double t0 = MPI_Wtime();
                        x.iteration(iter++);
                        CHECK_CUDA(cudaStreamSynchronize(x.stream));
                        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                        times.push_back((MPI_Wtime() - t0) * 1e6);
                    }
                }
                checked += (long)(o.warmup + o.iters) * x.total;
            }
            unsigned long long wrong = 0;
            CHECK_CUDA(cudaMemcpyAsync(&wrong, x.wrong, sizeof wrong, cudaMemcpyDeviceToHost, x.stream));
            CHECK_CUDA(cudaStreamSynchronize(x.stream));
            // Rank 0 reports both ranks' checks and the slower rank's times (every iteration
            // ends at a barrier, so both ranks measure nearly the same).
            unsigned long long wrong_all = 0;
            long checked_all = 0;
            CHECK_MPI(MPI_Reduce(&wrong, &wrong_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Reduce(&checked, &checked_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
            std::vector<double> slowest(times.size());
            CHECK_MPI(MPI_Reduce(times.data(), slowest.data(), (int)times.size(), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
            if (rank == 0) {
                bool right = wrong_all == 0;
                all_right = all_right && right;
                rows.push_back(Row{w, !back_to_back, x.blocks.size(), x.total * 8L, median(slowest),
                                   *std::min_element(slowest.begin(), slowest.end()),
                                   *std::max_element(slowest.begin(), slowest.end()), checked_all, wrong_all});
                printf("%s,%s,%zu,%ld,%d,%.1f,%.1f,%.1f,%ld,%llu,%s\n", w.c_str(),
                       back_to_back ? "back-to-back" : "barrier", x.blocks.size(), x.total * 8L,
                       o.runs, median(slowest), *std::min_element(slowest.begin(), slowest.end()),
                       *std::max_element(slowest.begin(), slowest.end()), checked_all, wrong_all,
                       right ? "true" : "false");
                fflush(stdout);
            }
        }
        CHECK_CUDA(cudaFree(x.send));
        CHECK_CUDA(cudaFree(x.recv));
    }
    int verdict = all_right ? 0 : 1;
    if (json) {
        bool written = write_json(json, o, size, version, rows, all_right);
        if (fclose(json) != 0 || !written) {
            fprintf(stderr, "nccl-peer: --json %s: could not be written completely\n", o.json.c_str());
            verdict = 1;
        }
    }
    CHECK_MPI(MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK_NCCL(ncclCommDestroy(x.comm));
    CHECK_CUDA(cudaFree(x.wrong));
    CHECK_CUDA(cudaStreamDestroy(x.stream));
    alarm(0);
    MPI_Finalize();
    if (rank == 0) printf("nccl-peer: %s\n", verdict == 0 ? "every element verified" : "WRONG ELEMENTS RECEIVED");
    return verdict;
}
