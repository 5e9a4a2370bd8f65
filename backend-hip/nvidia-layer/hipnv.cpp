/*
 * hipnv.cpp: haloport's HIP-on-CUDA layer. It exports exactly the HIP runtime functions
 * backend-hip/src/ffi.rs calls (the list in backend-hip/build.rs, FUNCTIONS), with the HIP 5.2
 * signatures and values the backend's bindings were generated from (hipnv_map.h), implemented on
 * the CUDA driver API. The HIP backend links it in place of libamdhip64 when built with its
 * `nvidia-layer` feature (haloport's `hip-nvidia`), so every line of the backend above the runtime
 * calls runs on an NVIDIA GPU. Evidence for the backend's code, never for AMD hardware.
 *
 * Driver: libcuda.so.1 is opened with dlopen on first use and every function is taken with
 * cuGetProcAddress at the ABI of the cuda.h compiled against (CUDA_VERSION), so the layer (and a
 * binary linking it) loads on machines without a driver; every call then answers
 * hipErrorInsufficientDriver, and hipGetDeviceCount says so too (cudart's
 * cudaErrorInsufficientDriver, which HIP on NVIDIA returns in that case).
 *
 * Devices and threads: HIP's current device is per thread, as a CUDA context is current per
 * thread. hipSetDevice retains the device's primary context (the one the CUDA runtime and the
 * CUDA backend use; never released: HIP keeps its devices for the life of the process) and makes
 * it current on the calling thread. A call that needs a context on a thread that set none uses
 * device 0, as HIP does.
 *
 * Errors: every CUDA result is mapped by hipnv_error (hipnv_map.h). One that has no HIP
 * counterpart becomes hipErrorUnknown, and the layer remembers (per thread) which CUDA result and
 * call it was, so that hipGetErrorName(hipErrorUnknown) names them instead of hiding them.
 *
 * Thread safety: loading the driver is once (pthread_once); the primary-context table is behind
 * a mutex; the rest holds no state.
 */
#include "hipnv_map.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define HIPNV_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

/* Every driver function the layer calls. The names are cuda.h's (some are macros for a
 * versioned symbol, e.g. cuMemAlloc -> cuMemAlloc_v2); cuGetProcAddress takes the base name and
 * CUDA_VERSION and returns the entry point of that ABI. */
#define HIPNV_DRIVER_FUNCTIONS(X)                                                       \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)              \
    X(cuCtxGetCurrent) X(cuMemAlloc) X(cuMemsetD8) X(cuMemFree) X(cuMemHostAlloc)         \
    X(cuMemHostGetDevicePointer) X(cuMemFreeHost) X(cuStreamCreate) X(cuStreamQuery)      \
    X(cuStreamSynchronize) X(cuStreamDestroy) X(cuStreamWaitEvent) X(cuEventCreate)       \
    X(cuEventRecord) X(cuEventQuery) X(cuEventElapsedTime) X(cuEventDestroy)              \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpy3DAsync) X(cuModuleLoadData)     \
    X(cuModuleGetFunction) X(cuModuleUnload) X(cuLaunchKernel) X(cuLaunchCooperativeKernel) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuIpcGetMemHandle)                 \
    X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) X(cuDeviceGetPCIBusId)                 \
    X(cuDeviceGetByPCIBusId) X(cuDeviceCanAccessPeer) X(cuGetErrorName)                \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags)        \
    X(cuGraphDestroy) X(cuGraphLaunch) X(cuGraphExecDestroy)                           \
    X(cuCtxGetStreamPriorityRange) X(cuStreamCreateWithPriority) X(cuCtxGetDevice)      \
    X(cuPointerGetAttribute) X(cuMemGetAddressRange)

struct Driver {
#define HIPNV_MEMBER(name) decltype(&::name) name = nullptr;
    HIPNV_DRIVER_FUNCTIONS(HIPNV_MEMBER)
#undef HIPNV_MEMBER
    /* hipSuccess once loaded and initialized; otherwise what every call answers. */
    hipError_t status = hipErrorNotInitialized;
};

Driver g_driver;
pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

typedef CUresult (*GetProcAddress)(const char*, void**, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult*);

void load_driver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        g_driver.status = hipErrorInsufficientDriver;
        return;
    }
    /* cuda.h maps cuGetProcAddress to its _v2 (CUDA 12.0 on); dlsym needs the real symbol. */
    auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
    if (get == nullptr) {
        g_driver.status = hipErrorInsufficientDriver;
        return;
    }
    bool complete = true;
#define HIPNV_LOAD(name)                                                                     \
    {                                                                                        \
        void* fn = nullptr;                                                                  \
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;         \
        CUresult r = get(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);       \
        if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) {    \
            complete = false;                                                                \
        } else {                                                                             \
            g_driver.name = reinterpret_cast<decltype(g_driver.name)>(fn);                   \
        }                                                                                    \
    }
    HIPNV_DRIVER_FUNCTIONS(HIPNV_LOAD)
#undef HIPNV_LOAD
    /* A driver older than the CUDA 13.0 ABI lacks some entry point: not usable. */
    if (!complete) {
        g_driver.status = hipErrorInsufficientDriver;
        return;
    }
    g_driver.status = hipnv_error(g_driver.cuInit(0));
}

/* The loaded driver, or nullptr with `*status` saying why not. */
const Driver* driver(hipError_t* status) {
    pthread_once(&g_driver_once, load_driver);
    *status = g_driver.status;
    return g_driver.status == hipSuccess ? &g_driver : nullptr;
}

/* The CUDA result behind the last hipErrorUnknown this thread got, and the call. */
thread_local char t_unknown[192];

/* Maps a CUDA result, remembering the one hipErrorUnknown stands for. */
hipError_t map(const Driver* d, CUresult r, const char* call) {
    hipError_t e = hipnv_error(r);
    if (e == hipErrorUnknown) {
        const char* name = nullptr;
        if (d->cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "unnamed";
        snprintf(t_unknown, sizeof t_unknown,
                 "hipErrorUnknown (haloport's HIP-on-NVIDIA layer: %s returned %s = %d)", call,
                 name, static_cast<int>(r));
    }
    return e;
}

#define HIPNV_DRIVER(d)                          \
    hipError_t hipnv_status_ = hipSuccess;       \
    const Driver* d = driver(&hipnv_status_);    \
    if (d == nullptr) return hipnv_status_;

#define HIPNV_CALL(d, call) map(d, d->call, #call)

/* Primary contexts retained so far, by ordinal. */
pthread_mutex_t g_contexts_lock = PTHREAD_MUTEX_INITIALIZER;
CUcontext g_contexts[64];

hipError_t set_device(const Driver* d, int ordinal) {
    int count = 0;
    hipError_t e = HIPNV_CALL(d, cuDeviceGetCount(&count));
    if (e != hipSuccess) return e;
    if (ordinal < 0 || ordinal >= count || ordinal >= 64) return hipErrorInvalidDevice;
    CUcontext ctx = nullptr;
    pthread_mutex_lock(&g_contexts_lock);
    if (g_contexts[ordinal] == nullptr) {
        CUdevice dev = 0;
        e = HIPNV_CALL(d, cuDeviceGet(&dev, ordinal));
        if (e == hipSuccess) e = HIPNV_CALL(d, cuDevicePrimaryCtxRetain(&g_contexts[ordinal], dev));
    }
    ctx = g_contexts[ordinal];
    pthread_mutex_unlock(&g_contexts_lock);
    if (e != hipSuccess) return e;
    return HIPNV_CALL(d, cuCtxSetCurrent(ctx));
}

/* Makes sure the calling thread has a context: device 0's when it set none (HIP's default). */
hipError_t context(const Driver* d) {
    CUcontext current = nullptr;
    hipError_t e = HIPNV_CALL(d, cuCtxGetCurrent(&current));
    if (e != hipSuccess || current != nullptr) return e;
    return set_device(d, 0);
}

#define HIPNV_CONTEXT(d)                       \
    HIPNV_DRIVER(d)                            \
    {                                          \
        hipError_t hipnv_ctx_ = context(d);    \
        if (hipnv_ctx_ != hipSuccess) return hipnv_ctx_; \
    }

/* HIP's ordinals are CUDA's: both enumerate the devices the driver exposes, in its order. */
hipError_t device(const Driver* d, int ordinal, CUdevice* out) {
    return HIPNV_CALL(d, cuDeviceGet(out, ordinal));
}

CUstream cu(hipStream_t s) { return reinterpret_cast<CUstream>(s); }
CUevent cu(hipEvent_t e) { return reinterpret_cast<CUevent>(e); }
CUfunction cu(hipFunction_t f) { return reinterpret_cast<CUfunction>(f); }
CUmodule cu(hipModule_t m) { return reinterpret_cast<CUmodule>(m); }
CUdeviceptr cu(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
CUgraph cu(hipGraph_t g) { return reinterpret_cast<CUgraph>(g); }
CUgraphExec cu(hipGraphExec_t g) { return reinterpret_cast<CUgraphExec>(g); }

static_assert(sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle),
              "HIP 5.2 and CUDA IPC handles are both 64 opaque bytes");

}  // namespace

/* ---------- errors and versions ---------- */

HIPNV_EXPORT const char* hipGetErrorName(hipError_t e) {
    if (e == hipErrorUnknown && t_unknown[0] != 0) return t_unknown;
    const char* name = hipnv_error_name(e);
    return name != nullptr ? name : "unrecognized hipError_t (haloport's HIP-on-NVIDIA layer)";
}

/* No device is hipErrorNoDevice, as HIP answers; no usable driver hipErrorInsufficientDriver. */
HIPNV_EXPORT hipError_t hipGetDeviceCount(int* count) {
    if (count == nullptr) return hipErrorInvalidValue;
    *count = 0;
    HIPNV_DRIVER(d)
    int n = 0;
    hipError_t e = HIPNV_CALL(d, cuDeviceGetCount(&n));
    if (e != hipSuccess) return e;
    *count = n;
    return n == 0 ? hipErrorNoDevice : hipSuccess;
}

HIPNV_EXPORT hipError_t hipSetDevice(int ordinal) {
    HIPNV_DRIVER(d)
    return set_device(d, ordinal);
}

/* The device of the thread's current context; device 0 where it has none, as HIP answers. */
HIPNV_EXPORT hipError_t hipGetDevice(int* ordinal) {
    if (ordinal == nullptr) return hipErrorInvalidValue;
    *ordinal = 0;
    HIPNV_DRIVER(d)
    CUcontext current = nullptr;
    hipError_t e = HIPNV_CALL(d, cuCtxGetCurrent(&current));
    if (e != hipSuccess || current == nullptr) return e;
    CUdevice dev = 0;
    e = HIPNV_CALL(d, cuCtxGetDevice(&dev));
    if (e == hipSuccess) *ordinal = dev;
    return e;
}

HIPNV_EXPORT hipError_t hipDeviceGetName(char* name, int len, hipDevice_t ordinal) {
    if (name == nullptr || len <= 0) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    CUdevice dev = 0;
    hipError_t e = device(d, ordinal, &dev);
    if (e != hipSuccess) return e;
    return HIPNV_CALL(d, cuDeviceGetName(name, len, dev));
}

HIPNV_EXPORT hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int ordinal) {
    if (value == nullptr) return hipErrorInvalidValue;
    CUdevice_attribute cu_attr;
    if (!hipnv_attribute(attr, &cu_attr)) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    CUdevice dev = 0;
    hipError_t e = device(d, ordinal, &dev);
    if (e != hipSuccess) return e;
    return HIPNV_CALL(d, cuDeviceGetAttribute(value, cu_attr, dev));
}

HIPNV_EXPORT hipError_t hipDriverGetVersion(int* version) {
    if (version == nullptr) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    return HIPNV_CALL(d, cuDriverGetVersion(version));
}

/* Not one-to-one: there is no HIP runtime here. HIP on NVIDIA answers the CUDA runtime's version;
 * the layer's runtime is the CUDA driver ABI it was compiled for (cuda.h's CUDA_VERSION, e.g.
 * 13000), which is what it asks cuGetProcAddress for. */
HIPNV_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
    if (version == nullptr) return hipErrorInvalidValue;
    *version = CUDA_VERSION;
    return hipSuccess;
}

/* ---------- memory ---------- */

HIPNV_EXPORT hipError_t hipMalloc(void** ptr, size_t bytes) {
    if (ptr == nullptr) return hipErrorInvalidValue;
    *ptr = nullptr;
    HIPNV_CONTEXT(d)
    CUdeviceptr p = 0;
    hipError_t e = HIPNV_CALL(d, cuMemAlloc(&p, bytes));
    if (e == hipSuccess) *ptr = reinterpret_cast<void*>(p);
    return e;
}

/* cuMemsetD8 is queued on the legacy default stream, as hipMemset is on the null stream; the
 * backend waits for that stream afterwards in both cases. */
HIPNV_EXPORT hipError_t hipMemset(void* dst, int value, size_t bytes) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemsetD8(cu(dst), static_cast<unsigned char>(value), bytes));
}

HIPNV_EXPORT hipError_t hipFree(void* ptr) {
    if (ptr == nullptr) return hipSuccess;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemFree(cu(ptr)));
}

/* See hipnv_host_alloc_flags: coherent and non-coherent are both CUDA's one (coherent) kind. */
HIPNV_EXPORT hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned int flags) {
    if (ptr == nullptr) return hipErrorInvalidValue;
    *ptr = nullptr;
    unsigned int cu_flags = 0;
    if (!hipnv_host_alloc_flags(flags, &cu_flags)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemHostAlloc(ptr, bytes, cu_flags));
}

HIPNV_EXPORT hipError_t hipHostGetDevicePointer(void** dev, void* host, unsigned int flags) {
    if (dev == nullptr || flags != 0) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUdeviceptr p = 0;
    hipError_t e = HIPNV_CALL(d, cuMemHostGetDevicePointer(&p, host, 0));
    if (e == hipSuccess) *dev = reinterpret_cast<void*>(p);
    return e;
}

HIPNV_EXPORT hipError_t hipHostFree(void* ptr) {
    if (ptr == nullptr) return hipSuccess;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemFreeHost(ptr));
}

/* ---------- streams and events ---------- */

HIPNV_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags) {
    if (stream == nullptr) return hipErrorInvalidValue;
    unsigned int cu_flags = 0;
    if (!hipnv_stream_flags(flags, &cu_flags)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUstream s = nullptr;
    hipError_t e = HIPNV_CALL(d, cuStreamCreate(&s, cu_flags));
    if (e == hipSuccess) *stream = reinterpret_cast<hipStream_t>(s);
    return e;
}

/* Priorities are not mapped: HIP on NVIDIA answers CUDA's range (in both, lower numbers are
 * greater priorities), and the backend creates streams only with a priority from that range (see
 * hipnv_map.h). The driver is always given both out-pointers; a null one of the caller's is
 * left alone. */
HIPNV_EXPORT hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
    HIPNV_CONTEXT(d)
    int lo = 0, hi = 0;
    hipError_t e = HIPNV_CALL(d, cuCtxGetStreamPriorityRange(&lo, &hi));
    if (e != hipSuccess) return e;
    if (least != nullptr) *least = lo;
    if (greatest != nullptr) *greatest = hi;
    return hipSuccess;
}

/* A priority outside the range is clamped into it, by the driver as by HIP. */
HIPNV_EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t* stream, unsigned int flags,
                                                    int priority) {
    if (stream == nullptr) return hipErrorInvalidValue;
    unsigned int cu_flags = 0;
    if (!hipnv_stream_flags(flags, &cu_flags)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUstream s = nullptr;
    hipError_t e = HIPNV_CALL(d, cuStreamCreateWithPriority(&s, cu_flags, priority));
    if (e == hipSuccess) *stream = reinterpret_cast<hipStream_t>(s);
    return e;
}

/* HIP's null stream is CUDA's legacy default stream (handle 0): both synchronize with the
 * other blocking streams of the device, neither with non-blocking ones. */
HIPNV_EXPORT hipError_t hipStreamQuery(hipStream_t s) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuStreamQuery(cu(s)));
}

HIPNV_EXPORT hipError_t hipStreamSynchronize(hipStream_t s) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuStreamSynchronize(cu(s)));
}

HIPNV_EXPORT hipError_t hipStreamDestroy(hipStream_t s) {
    if (s == nullptr) return hipErrorInvalidHandle;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuStreamDestroy(cu(s)));
}

HIPNV_EXPORT hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
    if (flags != 0) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuStreamWaitEvent(cu(s), cu(e), 0));
}

/* hipEventCreate's events record timing, as CU_EVENT_DEFAULT's do. */
HIPNV_EXPORT hipError_t hipEventCreate(hipEvent_t* event) {
    if (event == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUevent e = nullptr;
    hipError_t status = HIPNV_CALL(d, cuEventCreate(&e, CU_EVENT_DEFAULT));
    if (status == hipSuccess) *event = reinterpret_cast<hipEvent_t>(e);
    return status;
}

HIPNV_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
    if (event == nullptr) return hipErrorInvalidValue;
    unsigned int cu_flags = 0;
    if (!hipnv_event_flags(flags, &cu_flags)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUevent e = nullptr;
    hipError_t status = HIPNV_CALL(d, cuEventCreate(&e, cu_flags));
    if (status == hipSuccess) *event = reinterpret_cast<hipEvent_t>(e);
    return status;
}

HIPNV_EXPORT hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuEventRecord(cu(e), cu(s)));
}

HIPNV_EXPORT hipError_t hipEventQuery(hipEvent_t e) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuEventQuery(cu(e)));
}

HIPNV_EXPORT hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
    if (ms == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuEventElapsedTime(ms, cu(start), cu(stop)));
}

HIPNV_EXPORT hipError_t hipEventDestroy(hipEvent_t e) {
    if (e == nullptr) return hipErrorInvalidHandle;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuEventDestroy(cu(e)));
}

/* ---------- graphs ---------- */

/* cuStreamBeginCapture is cuda.h's name for cuStreamBeginCapture_v2 (the one with a mode), the
 * entry point cuGetProcAddress gives for CUDA_VERSION. The mode is mapped by hipnv_capture_mode;
 * an unknown one is refused before the driver is asked. */
HIPNV_EXPORT hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
    CUstreamCaptureMode cu_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (!hipnv_capture_mode(mode, &cu_mode)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuStreamBeginCapture(cu(s), cu_mode));
}

/* A stream not capturing is CUDA_ERROR_ILLEGAL_STATE, hence hipErrorIllegalState, as HIP answers
 * it; an invalidated capture hipErrorStreamCaptureInvalidated. *graph is null on any error. */
HIPNV_EXPORT hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* graph) {
    if (graph == nullptr) return hipErrorInvalidValue;
    *graph = nullptr;
    HIPNV_CONTEXT(d)
    CUgraph g = nullptr;
    hipError_t e = HIPNV_CALL(d, cuStreamEndCapture(cu(s), &g));
    if (e == hipSuccess) *graph = reinterpret_cast<hipGraph_t>(g);
    return e;
}

/* HIP 5.2's signature (error node and log buffer, no flags) on cuGraphInstantiateWithFlags with
 * no flags, which is what cuda.h's cuGraphInstantiate is. Not one-to-one: the driver reports no
 * error node or log through this entry point, so *error_node is set to null and the log to an
 * empty string, each when given; the error code says what failed. */
HIPNV_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph,
                                            hipGraphNode_t* error_node, char* log,
                                            size_t log_bytes) {
    if (exec == nullptr) return hipErrorInvalidValue;
    *exec = nullptr;
    if (error_node != nullptr) *error_node = nullptr;
    if (log != nullptr && log_bytes > 0) log[0] = 0;
    HIPNV_CONTEXT(d)
    CUgraphExec x = nullptr;
    hipError_t e = HIPNV_CALL(d, cuGraphInstantiateWithFlags(&x, cu(graph), 0));
    if (e == hipSuccess) *exec = reinterpret_cast<hipGraphExec_t>(x);
    return e;
}

/* A null graph is refused here, as HIP refuses it, rather than handed to the driver. */
HIPNV_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
    if (graph == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuGraphDestroy(cu(graph)));
}

HIPNV_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
    if (exec == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuGraphLaunch(cu(exec), cu(s)));
}

/* The driver frees an executable graph still in flight once it completes; the backend waits for
 * its last replay anyway, as HIP does not promise that (backend-hip/src/stream.rs). */
HIPNV_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
    if (exec == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuGraphExecDestroy(cu(exec)));
}

/* ---------- copies ---------- */

HIPNV_EXPORT hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t bytes,
                                           hipStream_t s) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemcpyHtoDAsync(cu(dst), src, bytes, cu(s)));
}

HIPNV_EXPORT hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t bytes,
                                           hipStream_t s) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemcpyDtoHAsync(dst, cu(src), bytes, cu(s)));
}

/* Linear memory only (arrays are refused); positions and widths in bytes, rows and slices in
 * rows, as hipMemcpy3DParms and CUDA_MEMCPY3D both define them for linear memory. */
HIPNV_EXPORT hipError_t hipMemcpy3DAsync(const hipMemcpy3DParms* p, hipStream_t s) {
    if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr)
        return hipErrorInvalidValue;
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    if (!hipnv_memcpy_kind(p->kind, &c.srcMemoryType, &c.dstMemoryType))
        return hipErrorInvalidMemcpyDirection;
    c.srcXInBytes = p->srcPos.x;
    c.srcY = p->srcPos.y;
    c.srcZ = p->srcPos.z;
    c.srcDevice = cu(p->srcPtr.ptr);
    c.srcPitch = p->srcPtr.pitch;
    c.srcHeight = p->srcPtr.ysize;
    c.dstXInBytes = p->dstPos.x;
    c.dstY = p->dstPos.y;
    c.dstZ = p->dstPos.z;
    c.dstDevice = cu(p->dstPtr.ptr);
    c.dstPitch = p->dstPtr.pitch;
    c.dstHeight = p->dstPtr.ysize;
    c.WidthInBytes = p->extent.width;
    c.Height = p->extent.height;
    c.Depth = p->extent.depth;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuMemcpy3DAsync(&c, cu(s)));
}

/* ---------- modules and launches ---------- */

/* Not one-to-one in what is loaded: on AMD the image is hipcc's offload bundle of gfx code
 * objects; here it is nvcc's fatbin of the same kernels (kernels-cu/, see backend-hip/build.rs),
 * which cuModuleLoadData takes as it is. */
HIPNV_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
    if (module == nullptr || image == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUmodule m = nullptr;
    hipError_t e = HIPNV_CALL(d, cuModuleLoadData(&m, image));
    if (e == hipSuccess) *module = reinterpret_cast<hipModule_t>(m);
    return e;
}

HIPNV_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t m, const char* name) {
    if (f == nullptr || name == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUfunction fn = nullptr;
    hipError_t e = HIPNV_CALL(d, cuModuleGetFunction(&fn, cu(m), name));
    if (e == hipSuccess) *f = reinterpret_cast<hipFunction_t>(fn);
    return e;
}

HIPNV_EXPORT hipError_t hipModuleUnload(hipModule_t m) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuModuleUnload(cu(m)));
}

HIPNV_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy,
                                              unsigned int gz, unsigned int bx, unsigned int by,
                                              unsigned int bz, unsigned int shared,
                                              hipStream_t s, void** params, void** extra) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuLaunchKernel(cu(f), gx, gy, gz, bx, by, bz, shared, cu(s), params,
                                        extra));
}

/* Not in HIP 5.2 (declared by hipnv_extra.h with newer HIP's signature). cuLaunchCooperativeKernel
 * guarantees what the backend needs from it: all blocks resident at once, or
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (hipErrorCooperativeLaunchTooLarge) without launching. */
HIPNV_EXPORT hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gx,
                                                         unsigned int gy, unsigned int gz,
                                                         unsigned int bx, unsigned int by,
                                                         unsigned int bz, unsigned int shared,
                                                         hipStream_t s, void** params) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuLaunchCooperativeKernel(cu(f), gx, gy, gz, bx, by, bz, shared, cu(s),
                                                   params));
}

HIPNV_EXPORT hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks,
                                                                          hipFunction_t f,
                                                                          int threads,
                                                                          size_t shared) {
    if (blocks == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, cu(f), threads,
                                                                     shared));
}

/* ---------- IPC and peers ---------- */

/* HIP 5.2's and CUDA's handles are both 64 opaque bytes (static_assert above): the CUDA handle
 * travels as the HIP one, byte for byte, and means something only to this layer on the other
 * side (a HIP handle from AMD's runtime would be refused there by cuIpcOpenMemHandle). */
HIPNV_EXPORT hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* handle, void* ptr) {
    if (handle == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUipcMemHandle h;
    hipError_t e = HIPNV_CALL(d, cuIpcGetMemHandle(&h, cu(ptr)));
    if (e == hipSuccess) memcpy(handle->reserved, h.reserved, sizeof h.reserved);
    return e;
}

HIPNV_EXPORT hipError_t hipIpcOpenMemHandle(void** ptr, hipIpcMemHandle_t handle,
                                            unsigned int flags) {
    if (ptr == nullptr) return hipErrorInvalidValue;
    unsigned int cu_flags = 0;
    if (!hipnv_ipc_open_flags(flags, &cu_flags)) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUipcMemHandle h;
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CUdeviceptr p = 0;
    hipError_t e = HIPNV_CALL(d, cuIpcOpenMemHandle(&p, h, cu_flags));
    if (e == hipSuccess) *ptr = reinterpret_cast<void*>(p);
    return e;
}

HIPNV_EXPORT hipError_t hipIpcCloseMemHandle(void* ptr) {
    HIPNV_CONTEXT(d)
    return HIPNV_CALL(d, cuIpcCloseMemHandle(cu(ptr)));
}

/* The attributes the backend asks (memory type, managed, device ordinal), each one int; the
 * memory type mapped to HIP 5.2's numbering (hipnv_memory_type). An address the driver does not
 * know is CUDA_ERROR_INVALID_VALUE, hence hipErrorInvalidValue, as HIP answers it. */
HIPNV_EXPORT hipError_t hipPointerGetAttribute(void* data, hipPointer_attribute attribute,
                                               hipDeviceptr_t ptr) {
    if (data == nullptr) return hipErrorInvalidValue;
    CUpointer_attribute cu_attr;
    if (!hipnv_pointer_attribute(attribute, &cu_attr)) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    int value = 0;
    hipError_t e = HIPNV_CALL(d, cuPointerGetAttribute(&value, cu_attr, cu(ptr)));
    if (e != hipSuccess) return e;
    if (attribute == HIP_POINTER_ATTRIBUTE_MEMORY_TYPE) {
        int hip_type = 0;
        if (!hipnv_memory_type(static_cast<CUmemorytype>(value), &hip_type)) return hipErrorUnknown;
        value = hip_type;
    }
    *static_cast<int*>(data) = value;
    return hipSuccess;
}

HIPNV_EXPORT hipError_t hipMemGetAddressRange(hipDeviceptr_t* base, size_t* size,
                                              hipDeviceptr_t ptr) {
    if (base == nullptr || size == nullptr) return hipErrorInvalidValue;
    HIPNV_CONTEXT(d)
    CUdeviceptr b = 0;
    hipError_t e = HIPNV_CALL(d, cuMemGetAddressRange(&b, size, cu(ptr)));
    if (e == hipSuccess) *base = reinterpret_cast<hipDeviceptr_t>(b);
    return e;
}

HIPNV_EXPORT hipError_t hipDeviceGetPCIBusId(char* id, int len, int ordinal) {
    if (id == nullptr || len <= 0) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    CUdevice dev = 0;
    hipError_t e = device(d, ordinal, &dev);
    if (e != hipSuccess) return e;
    return HIPNV_CALL(d, cuDeviceGetPCIBusId(id, len, dev));
}

/* An id this process does not see is CUDA_ERROR_INVALID_DEVICE, hence hipErrorInvalidDevice,
 * as HIP answers it. */
HIPNV_EXPORT hipError_t hipDeviceGetByPCIBusId(int* ordinal, const char* id) {
    if (ordinal == nullptr || id == nullptr) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    CUdevice dev = 0;
    hipError_t e = HIPNV_CALL(d, cuDeviceGetByPCIBusId(&dev, id));
    if (e != hipSuccess) return e;
    /* CUdevice is the ordinal's handle; find the ordinal rather than assume they are equal. */
    int count = 0;
    e = HIPNV_CALL(d, cuDeviceGetCount(&count));
    if (e != hipSuccess) return e;
    for (int i = 0; i < count; ++i) {
        CUdevice candidate = 0;
        e = HIPNV_CALL(d, cuDeviceGet(&candidate, i));
        if (e != hipSuccess) return e;
        if (candidate == dev) {
            *ordinal = i;
            return hipSuccess;
        }
    }
    return hipErrorInvalidDevice;
}

HIPNV_EXPORT hipError_t hipDeviceCanAccessPeer(int* can, int ordinal, int peer) {
    if (can == nullptr) return hipErrorInvalidValue;
    HIPNV_DRIVER(d)
    CUdevice dev = 0, other = 0;
    hipError_t e = device(d, ordinal, &dev);
    if (e == hipSuccess) e = device(d, peer, &other);
    if (e != hipSuccess) return e;
    return HIPNV_CALL(d, cuDeviceCanAccessPeer(can, dev, other));
}
