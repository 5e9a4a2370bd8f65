/* A CUPTI injection library (CUDA_INJECTION64_PATH): every kernel's start and end on the
 * GPU's clock (ns), its stream, grid and name, one line each, into
 * $KERNEL_TRACE_DIR/trace.<pid>. KERNEL_T: the newest kernel record the CUPTI header defines
 * (CUpti_ActivityKernel10 in CUDA 13.0). Build and use: bench/README.md. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static FILE *out;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *records) {
    *size = 16u << 20;
    *buffer = aligned_alloc(8, *size);
    *records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid) {
    CUpti_Activity *r = NULL;
    (void)ctx; (void)stream; (void)size;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            KERNEL_T *k = (KERNEL_T *)r;
            fprintf(out, "%llu %llu %u %u %s\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->streamId, k->gridX, k->name);
        }
    }
    fflush(out);
    free(buffer);
}

/* At exit: the records still buffered (nothing is left to report a failure to). */
static void flush(void) { (void)cuptiActivityFlushAll(1); }

int InitializeInjection(void) {
    char path[512];
    const char *dir = getenv("KERNEL_TRACE_DIR");
    snprintf(path, sizeof path, "%s/trace.%d", dir ? dir : "/tmp", (int)getpid());
    out = fopen(path, "w");
    if (!out) return 0;
    if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return 0;
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 0;
    atexit(flush);
    return 1;
}
