/* A stand-in for libnccl.so.2 in CI, where there is no GPU: exactly the NCCL calls
 * haloport-nccl loads (src/sys.rs FUNCTIONS), implemented over MPI on HOST memory, so that
 * the crate's grouping, polling, time-out and abort paths run under mpirun.
 *
 * - The communicator is MPI_COMM_WORLD: rank and nranks as given, which must be the world's.
 *   Its messages use tags derived from the unique id, so two communicators do not mix.
 * - ncclGetUniqueId: 128 random bytes.
 * - Creation: each rank sends a hello (the id's hash) to every other and receives theirs; on
 *   a non-blocking communicator (config->blocking == 0) ncclCommInitRankConfig returns
 *   ncclInProgress and ncclCommGetAsyncError tests the hellos; a blocking one waits.
 * - ncclSend/ncclRecv between ncclGroupStart and ncclGroupEnd are queued and posted at the
 *   outermost ncclGroupEnd (MPI_Isend/MPI_Irecv of bytes); a non-blocking communicator returns
 *   ncclInProgress until they complete (ncclCommGetAsyncError tests them), a blocking one
 *   waits. The stream argument is ignored: the transfer is done when the group is.
 * - ncclCommAbort cancels pending receives and frees pending sends; ncclCommDestroy waits for
 *   pending operations first.
 *
 * Faults, for tests, on the rank HALOPORT_NCCL_STANDIN_FAULT_RANK (default 1):
 * HALOPORT_NCCL_STANDIN_FAULT=init       creation fails (ncclSystemError) at once;
 *                             init-hang  creation never completes (no hello is sent);
 *                             send       sends are dropped (their peers' receives never
 *                                        complete);
 *                             async      ncclCommGetAsyncError reports ncclRemoteError after
 *                                        the first group;
 *                             unique-id  ncclGetUniqueId fails (ncclSystemError).
 * Build with -DHALOPORT_STANDIN_OMIT_ABORT to leave ncclCommAbort out (the missing-symbol test).
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* The values of nccl.h's enums and structs this file needs (NCCL 2.32.6). */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclTimeout = 8,
} ncclResult_t;
typedef struct {
    char internal[128];
} ncclUniqueId;
/* The start of ncclConfig_t: what the library reads first, and all this file reads. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
} ncclConfigHead;

enum { FAULT_NONE, FAULT_INIT, FAULT_INIT_HANG, FAULT_SEND, FAULT_ASYNC, FAULT_UNIQUE_ID };

typedef struct ncclComm {
    int rank, nranks, blocking, fault;
    int tag; /* hellos on tag, data on tag + 1 */
    uint64_t hash;
    ncclResult_t state; /* ncclInProgress while creating or a group runs; else a result */
    int groups;         /* groups completed, for the async fault */
    uint64_t *hellos;   /* one per peer */
    MPI_Request *requests;
    int *is_recv;
    int nrequests, capacity;
} *ncclComm_t;

static char last_error[512] = "";

static ncclResult_t fail(ncclResult_t code, const char *fmt, const char *detail, int a, int b) {
    snprintf(last_error, sizeof last_error, fmt, detail, a, b);
    return code;
}

EXPORT const char *ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "operation timed out";
    default: return "unknown result code";
    }
}

EXPORT const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_error;
}

/* 2.99.1: recognisably not a real NCCL. */
EXPORT ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(ncclInvalidArgument, "stand-in: %s", "ncclGetVersion: null", 0, 0);
    *version = 29901;
    return ncclSuccess;
}

static int world_ready(void) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

static int fault_here(int rank) {
    const char *f = getenv("HALOPORT_NCCL_STANDIN_FAULT");
    const char *r = getenv("HALOPORT_NCCL_STANDIN_FAULT_RANK");
    int fault_rank = r ? atoi(r) : 1;
    if (!f || rank != fault_rank) return FAULT_NONE;
    if (!strcmp(f, "init")) return FAULT_INIT;
    if (!strcmp(f, "init-hang")) return FAULT_INIT_HANG;
    if (!strcmp(f, "send")) return FAULT_SEND;
    if (!strcmp(f, "async")) return FAULT_ASYNC;
    if (!strcmp(f, "unique-id")) return FAULT_UNIQUE_ID;
    return FAULT_NONE;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(ncclInvalidArgument, "stand-in: %s", "ncclGetUniqueId: null", 0, 0);
    int rank = -1;
    if (world_ready()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (fault_here(rank) == FAULT_UNIQUE_ID)
        return fail(ncclSystemError, "stand-in: %s on rank %d",
                    "injected ncclGetUniqueId failure (HALOPORT_NCCL_STANDIN_FAULT=unique-id)", rank, 0);
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(id->internal, 1, sizeof id->internal, f) != sizeof id->internal) {
        if (f) fclose(f);
        return fail(ncclSystemError, "stand-in: %s", "cannot read /dev/urandom", 0, 0);
    }
    fclose(f);
    return ncclSuccess;
}

static int push_request(ncclComm_t comm, MPI_Request r, int is_recv) {
    if (comm->nrequests == comm->capacity) {
        int cap = comm->capacity ? 2 * comm->capacity : 16;
        MPI_Request *rq = realloc(comm->requests, cap * sizeof *rq);
        if (!rq) return -1;
        comm->requests = rq;
        int *ir = realloc(comm->is_recv, cap * sizeof *ir);
        if (!ir) return -1;
        comm->is_recv = ir;
        comm->capacity = cap;
    }
    comm->requests[comm->nrequests] = r;
    comm->is_recv[comm->nrequests] = is_recv;
    comm->nrequests++;
    return 0;
}

/* Tests (or, blocking, waits for) the pending requests; on completion the state becomes the
 * outcome of whatever was running (creation checks the hellos). */
static ncclResult_t progress(ncclComm_t comm, int wait) {
    if (comm->state != ncclInProgress) return comm->state;
    if (comm->nrequests > 0) {
        int done = 0;
        int rc = wait ? MPI_Waitall(comm->nrequests, comm->requests, MPI_STATUSES_IGNORE)
                      : MPI_Testall(comm->nrequests, comm->requests, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            comm->state = fail(ncclSystemError, "stand-in: %s failed on rank %d (%d)",
                               wait ? "MPI_Waitall" : "MPI_Testall", comm->rank, rc);
            return comm->state;
        }
        if (!wait && !done) return ncclInProgress;
        comm->nrequests = 0;
    }
    if (comm->fault == FAULT_INIT_HANG) return ncclInProgress;
    if (!comm->hellos) {
        /* A group completed. */
        comm->groups++;
        if (comm->fault == FAULT_ASYNC) {
            comm->state = fail(ncclRemoteError, "stand-in: %s on rank %d",
                               "injected asynchronous error (HALOPORT_NCCL_STANDIN_FAULT=async)",
                               comm->rank, 0);
            return comm->state;
        }
    } else {
        for (int p = 0; p < comm->nranks; p++) {
            if (p != comm->rank && comm->hellos[p] != comm->hash) {
                comm->state = fail(ncclInvalidUsage,
                                   "stand-in: %s: rank %d joined with another unique id than "
                                   "rank %d",
                                   "ncclCommInitRankConfig", p, comm->rank);
                return comm->state;
            }
        }
        free(comm->hellos);
        comm->hellos = NULL;
    }
    comm->state = ncclSuccess;
    return ncclSuccess;
}

static ncclResult_t init(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, int blocking) {
    if (!out) return fail(ncclInvalidArgument, "stand-in: %s", "null communicator pointer", 0, 0);
    *out = NULL;
    if (!world_ready())
        return fail(ncclInvalidUsage, "stand-in: %s", "MPI is not initialized", 0, 0);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (nranks != size || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument,
                    "stand-in: %s: rank %d of %d must be a rank of MPI_COMM_WORLD as it is",
                    "ncclCommInitRankConfig", rank, nranks);
    int fault = fault_here(rank);
    if (fault == FAULT_INIT)
        return fail(ncclSystemError, "stand-in: %s on rank %d (of %d)",
                    "injected creation failure (HALOPORT_NCCL_STANDIN_FAULT=init)", rank, nranks);
    ncclComm_t comm = calloc(1, sizeof *comm);
    if (!comm) return fail(ncclSystemError, "stand-in: %s", "out of memory", 0, 0);
    comm->rank = rank;
    comm->nranks = nranks;
    comm->blocking = blocking;
    comm->fault = fault;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < sizeof id.internal; i++) {
        h ^= (unsigned char)id.internal[i];
        h *= 1099511628211ull;
    }
    comm->hash = h;
    int tag_ub = 32767; /* the least MPI guarantees */
    comm->tag = 1000 + (int)(h % (uint64_t)((tag_ub - 1000) / 2)) * 2;
    comm->hellos = calloc(nranks, sizeof *comm->hellos);
    if (!comm->hellos) {
        free(comm);
        return fail(ncclSystemError, "stand-in: %s", "out of memory", 0, 0);
    }
    comm->state = ncclInProgress;
    for (int p = 0; p < nranks; p++) {
        if (p == rank) continue;
        MPI_Request r;
        if (MPI_Irecv(&comm->hellos[p], 8, MPI_BYTE, p, comm->tag, MPI_COMM_WORLD, &r) != MPI_SUCCESS ||
            push_request(comm, r, 1))
            return fail(ncclSystemError, "stand-in: %s on rank %d", "posting a hello", rank, 0);
        if (fault == FAULT_INIT_HANG) continue;
        if (MPI_Isend(&comm->hash, 8, MPI_BYTE, p, comm->tag, MPI_COMM_WORLD, &r) != MPI_SUCCESS ||
            push_request(comm, r, 0))
            return fail(ncclSystemError, "stand-in: %s on rank %d", "posting a hello", rank, 0);
    }
    *out = comm;
    return progress(comm, blocking);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                           int rank, void *config) {
    int blocking = 1;
    if (config) {
        const ncclConfigHead *c = config;
        if (c->magic != 0xcafebeef)
            return fail(ncclInvalidArgument, "stand-in: %s", "config not from NCCL_CONFIG_INITIALIZER", 0, 0);
        if (c->size < sizeof(ncclConfigHead))
            return fail(ncclInvalidArgument, "stand-in: %s (size %d)", "config too small", (int)c->size, 0);
        if (c->blocking == 0) blocking = 0;
    }
    return init(comm, nranks, id, rank, blocking);
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    return init(comm, nranks, id, rank, 1);
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    if (!comm || !state) return fail(ncclInvalidArgument, "stand-in: %s", "null argument", 0, 0);
    *state = progress(comm, 0);
    return ncclSuccess;
}

static void release(ncclComm_t comm) {
    free(comm->hellos);
    free(comm->requests);
    free(comm->is_recv);
    free(comm);
}

#ifndef HALOPORT_STANDIN_OMIT_ABORT
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    for (int i = 0; i < comm->nrequests; i++) {
        if (comm->requests[i] == MPI_REQUEST_NULL) continue;
        if (comm->is_recv[i]) {
            /* A receive can be cancelled; complete the cancellation so MPI forgets it. */
            MPI_Cancel(&comm->requests[i]);
            MPI_Wait(&comm->requests[i], MPI_STATUS_IGNORE);
        } else {
            /* A send completes on its own once its peer receives (or at MPI_Finalize). */
            MPI_Request_free(&comm->requests[i]);
        }
    }
    release(comm);
    return ncclSuccess;
}
#endif

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    ncclResult_t r = comm->state == ncclInProgress ? progress(comm, 1) : ncclSuccess;
    release(comm);
    return r == ncclInProgress ? ncclSuccess : r;
}

/* The group: operations queued by ncclSend/ncclRecv until the outermost ncclGroupEnd. */
typedef struct {
    ncclComm_t comm;
    void *buf;
    size_t bytes;
    int peer, is_recv;
} Op;
static Op *ops;
static int nops, ops_capacity, depth;

static size_t type_size(int datatype) {
    switch (datatype) {
    case 0: case 1: case 10: case 11: return 1; /* int8, uint8, fp8 x2 */
    case 6: case 9: return 2;                   /* half, bfloat16 */
    case 2: case 3: case 7: return 4;           /* int32, uint32, float */
    case 4: case 5: case 8: return 8;           /* int64, uint64, double */
    default: return 0;
    }
}

EXPORT ncclResult_t ncclGroupStart(void) {
    depth++;
    return ncclSuccess;
}

static ncclResult_t queue(ncclComm_t comm, void *buf, size_t count, int datatype, int peer,
                          int is_recv) {
    const char *call = is_recv ? "ncclRecv" : "ncclSend";
    if (!comm) return fail(ncclInvalidArgument, "stand-in: %s: null communicator", call, 0, 0);
    if (comm->state != ncclSuccess && comm->state != ncclInProgress)
        return fail(ncclInvalidUsage, "stand-in: %s on a failed communicator (rank %d)", call, comm->rank, 0);
    size_t size = type_size(datatype);
    if (!size) return fail(ncclInvalidArgument, "stand-in: %s: data type %d", call, datatype, 0);
    if (peer < 0 || peer >= comm->nranks)
        return fail(ncclInvalidArgument, "stand-in: %s: peer %d of %d", call, peer, comm->nranks);
    if (count * size > (size_t)0x7fffffff)
        return fail(ncclInvalidArgument, "stand-in: %s: more than 2^31 bytes", call, 0, 0);
    if (nops == ops_capacity) {
        int cap = ops_capacity ? 2 * ops_capacity : 16;
        Op *o = realloc(ops, cap * sizeof *o);
        if (!o) return fail(ncclSystemError, "stand-in: %s: out of memory", call, 0, 0);
        ops = o;
        ops_capacity = cap;
    }
    ops[nops++] = (Op){comm, buf, count * size, peer, is_recv};
    return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void);

EXPORT ncclResult_t ncclSend(const void *buf, size_t count, int datatype, int peer,
                             ncclComm_t comm, void *stream) {
    (void)stream;
    int alone = depth == 0;
    if (alone) ncclGroupStart();
    ncclResult_t r = queue(comm, (void *)buf, count, datatype, peer, 0);
    if (alone) {
        ncclResult_t e = ncclGroupEnd();
        return r != ncclSuccess ? r : e;
    }
    return r;
}

EXPORT ncclResult_t ncclRecv(void *buf, size_t count, int datatype, int peer, ncclComm_t comm,
                             void *stream) {
    (void)stream;
    int alone = depth == 0;
    if (alone) ncclGroupStart();
    ncclResult_t r = queue(comm, buf, count, datatype, peer, 1);
    if (alone) {
        ncclResult_t e = ncclGroupEnd();
        return r != ncclSuccess ? r : e;
    }
    return r;
}

EXPORT ncclResult_t ncclGroupEnd(void) {
    if (depth == 0) return fail(ncclInvalidUsage, "stand-in: %s", "ncclGroupEnd without ncclGroupStart", 0, 0);
    if (--depth > 0) return ncclSuccess;
    ncclResult_t result = ncclSuccess;
    /* Receives first, so that every send of the group finds its receive posted. */
    for (int pass = 1; pass >= 0; pass--) {
        for (int i = 0; i < nops; i++) {
            Op *o = &ops[i];
            if (o->is_recv != pass) continue;
            ncclComm_t c = o->comm;
            if (!o->is_recv && c->fault == FAULT_SEND) continue; /* dropped */
            MPI_Request r;
            int rc = o->is_recv
                         ? MPI_Irecv(o->buf, (int)o->bytes, MPI_BYTE, o->peer, c->tag + 1, MPI_COMM_WORLD, &r)
                         : MPI_Isend(o->buf, (int)o->bytes, MPI_BYTE, o->peer, c->tag + 1, MPI_COMM_WORLD, &r);
            if (rc != MPI_SUCCESS || push_request(c, r, o->is_recv)) {
                c->state = fail(ncclSystemError, "stand-in: %s on rank %d (%d)", "posting an operation", c->rank, rc);
                result = c->state;
                continue;
            }
            c->state = ncclInProgress;
        }
    }
    /* Each communicator of the group: wait (blocking) or report progress (non-blocking). */
    for (int i = 0; i < nops; i++) {
        ncclComm_t c = ops[i].comm;
        if (c->state != ncclInProgress) continue;
        ncclResult_t r = progress(c, c->blocking);
        if (result == ncclSuccess && r != ncclSuccess) result = r;
    }
    nops = 0;
    return result;
}
