/*
 * test_layer.cpp: the layer's plumbing against fake_cuda.cpp (a stand-in libcuda.so.1 found through
 * LD_LIBRARY_PATH; ci/hip-nvidia-test.sh builds both). What each HIP call hands the driver and
 * makes of its answer: the one device, contexts set on first use, hipHostMalloc and IPC flags,
 * stream priorities, the 3-D copy's fields, a graph captured, instantiated, replayed and destroyed (and the capture
 * errors), error codes mapped and an unmapped one named. Exits non-zero on failure.
 */
#include "hipnv_map.h"
#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
            ++failures;                                                           \
        }                                                                         \
    } while (0)

int main() {
    /* The layer dlopens the same library: this handle reaches the fake's state. */
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    FakeState* fake = lib ? static_cast<FakeState*>(dlsym(lib, "fake_state")) : nullptr;
    if (fake == nullptr) {
        fprintf(stderr, "test_layer: the fake libcuda.so.1 is not on LD_LIBRARY_PATH\n");
        return 1;
    }
    int n = 0;
    CHECK(hipGetDeviceCount(&n) == hipSuccess && n == 1);
    fake->devices = 0;
    CHECK(hipGetDeviceCount(&n) == hipErrorNoDevice && n == 0);
    fake->devices = 1;

    /* A call needing a context on a thread that set none uses device 0 (one retain, kept). */
    void* p = nullptr;
    CHECK(hipMalloc(&p, 64) == hipSuccess && p == reinterpret_cast<void*>(0x1000));
    CHECK(fake->retained == 1);
    CHECK(hipSetDevice(0) == hipSuccess && fake->retained == 1);
    CHECK(hipSetDevice(1) == hipErrorInvalidDevice);
    int ordinal = -1;
    CHECK(hipGetDevice(&ordinal) == hipSuccess && ordinal == 0);

    /* Where an address lies: device memory of device 0 in its allocation, memory type in HIP
     * 5.2's numbering; an unknown address is hipErrorInvalidValue, as HIP answers it. */
    int attr = -1;
    void* in_alloc = reinterpret_cast<void*>(0x1010);
    CHECK(hipPointerGetAttribute(&attr, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, in_alloc) == hipSuccess &&
          attr == hipMemoryTypeDevice);
    CHECK(hipPointerGetAttribute(&attr, HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL, in_alloc) == hipSuccess &&
          attr == 0);
    CHECK(hipPointerGetAttribute(&attr, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, &attr) == hipErrorInvalidValue);
    CHECK(hipPointerGetAttribute(&attr, HIP_POINTER_ATTRIBUTE_BUFFER_ID, in_alloc) == hipErrorInvalidValue);
    hipDeviceptr_t base = nullptr;
    size_t size = 0;
    CHECK(hipMemGetAddressRange(&base, &size, in_alloc) == hipSuccess &&
          base == reinterpret_cast<void*>(0x1000) && size == 4096);
    fake->next = CUDA_ERROR_OUT_OF_MEMORY;
    CHECK(hipMalloc(&p, 64) == hipErrorOutOfMemory && p == nullptr);

    char name[64] = {0};
    CHECK(hipDeviceGetName(name, sizeof name, 0) == hipSuccess && strcmp(name, "Fake GPU") == 0);
    int v = 0;
    CHECK(hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, 0) == hipSuccess && v == 32);
    CHECK(hipRuntimeGetVersion(&v) == hipSuccess && v == CUDA_VERSION);

    void* host = nullptr;
    void* dev = nullptr;
    CHECK(hipHostMalloc(&host, 16, hipHostMallocMapped | hipHostMallocPortable |
                                       hipHostMallocNonCoherent) == hipSuccess);
    CHECK(fake->host_alloc_flags == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CHECK(hipHostGetDevicePointer(&dev, host, 0) == hipSuccess && dev == host);
    CHECK(hipHostFree(host) == hipSuccess);

    hipStream_t s = nullptr;
    CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking) == hipSuccess);
    CHECK(fake->stream_flags == CU_STREAM_NON_BLOCKING);
    fake->next = CUDA_ERROR_NOT_READY;
    CHECK(hipStreamQuery(s) == hipErrorNotReady);
    CHECK(hipStreamQuery(s) == hipSuccess);

    /* Stream priorities: the driver's range as it is, and a priority from it handed back
     * unchanged with the flags mapped; on an error the caller's values are left alone. */
    int least = 7, greatest = 7;
    CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest) == hipSuccess);
    CHECK(least == fake->priority_least && greatest == fake->priority_greatest);
    greatest = 7;
    CHECK(hipDeviceGetStreamPriorityRange(nullptr, &greatest) == hipSuccess);
    CHECK(greatest == fake->priority_greatest);
    least = greatest = 7;
    fake->next = CUDA_ERROR_INVALID_CONTEXT;
    CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest) == hipErrorInvalidContext);
    CHECK(least == 7 && greatest == 7);
    hipStream_t urgent = nullptr;
    fake->stream_flags = 0;
    CHECK(hipStreamCreateWithPriority(&urgent, hipStreamNonBlocking, fake->priority_greatest) ==
          hipSuccess);
    CHECK(urgent == reinterpret_cast<hipStream_t>(0x6));
    CHECK(fake->stream_flags == CU_STREAM_NON_BLOCKING);
    CHECK(fake->stream_priority == fake->priority_greatest);
    fake->next = CUDA_ERROR_OUT_OF_MEMORY;
    urgent = nullptr;
    CHECK(hipStreamCreateWithPriority(&urgent, hipStreamNonBlocking, -1) == hipErrorOutOfMemory);
    CHECK(urgent == nullptr);
    /* Refused before the driver is asked: flags HIP 5.2 does not define, no stream pointer. */
    fake->stream_priority = 1;
    CHECK(hipStreamCreateWithPriority(&urgent, 0x2, -1) == hipErrorInvalidValue);
    CHECK(hipStreamCreateWithPriority(nullptr, hipStreamNonBlocking, -1) == hipErrorInvalidValue);
    CHECK(fake->stream_priority == 1);

    /* A CUDA result HIP has no code for: hipErrorUnknown, named with the CUDA result and call. */
    hipEvent_t e = nullptr;
    CHECK(hipEventCreate(&e) == hipSuccess);
    CHECK(fake->event_flags == CU_EVENT_DEFAULT);
    hipEvent_t marker = nullptr;
    CHECK(hipEventCreateWithFlags(&marker, hipEventDisableTiming) == hipSuccess);
    CHECK(fake->event_flags == CU_EVENT_DISABLE_TIMING);
    CHECK(hipEventCreateWithFlags(&marker, 0x40) == hipErrorInvalidValue);
    fake->next = CUDA_ERROR_MPS_CONNECTION_FAILED;
    hipError_t unknown = hipEventQuery(e);
    CHECK(unknown == hipErrorUnknown);
    const char* why = hipGetErrorName(unknown);
    CHECK(strstr(why, "CUDA_ERROR_MPS_CONNECTION_FAILED") != nullptr);
    CHECK(strstr(why, "cuEventQuery") != nullptr);
    CHECK(strcmp(hipGetErrorName(hipErrorNotReady), "hipErrorNotReady") == 0);

    hipMemcpy3DParms c;
    memset(&c, 0, sizeof c);
    c.srcPos = hipPos{8, 2, 3};
    c.srcPtr = hipPitchedPtr{reinterpret_cast<void*>(0x1000), 512, 64, 100};
    c.dstPos = hipPos{0, 0, 0};
    c.dstPtr = hipPitchedPtr{reinterpret_cast<void*>(0x8000), 64, 64, 10};
    c.extent = hipExtent{64, 10, 4};
    c.kind = hipMemcpyDefault;
    CHECK(hipMemcpy3DAsync(&c, s) == hipSuccess);
    const CUDA_MEMCPY3D& k = fake->copy;
    CHECK(k.srcMemoryType == CU_MEMORYTYPE_UNIFIED && k.dstMemoryType == CU_MEMORYTYPE_UNIFIED);
    CHECK(k.srcDevice == 0x1000 && k.srcXInBytes == 8 && k.srcY == 2 && k.srcZ == 3);
    CHECK(k.srcPitch == 512 && k.srcHeight == 100);
    CHECK(k.dstDevice == 0x8000 && k.dstPitch == 64 && k.dstHeight == 10);
    CHECK(k.WidthInBytes == 64 && k.Height == 10 && k.Depth == 4);
    c.kind = hipMemcpyHostToDevice;
    CHECK(hipMemcpy3DAsync(&c, s) == hipErrorInvalidMemcpyDirection);

    hipModule_t m = nullptr;
    hipFunction_t f = nullptr;
    static const char image[8] = {0};
    CHECK(hipModuleLoadData(&m, image) == hipSuccess);
    CHECK(hipModuleGetFunction(&f, m, "hp_pack") == hipSuccess);
    CHECK(hipModuleGetFunction(&f, m, "hp_missing") == hipErrorNotFound);
    CHECK(hipModuleGetFunction(&f, m, "hp_pack") == hipSuccess);
    CHECK(hipModuleLaunchKernel(f, 9, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr) == hipSuccess);
    CHECK(fake->launch_grid[0] == 9 && fake->launch_block[0] == 128);
    fake->next = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    CHECK(hipModuleLaunchCooperativeKernel(f, 9999, 1, 1, 1024, 1, 1, 0, s, nullptr) ==
          hipErrorCooperativeLaunchTooLarge);
    CHECK(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&v, f, 128, 0) == hipSuccess && v == 4);
    CHECK(hipModuleUnload(m) == hipSuccess);

    /* IPC: the handle's bytes travel unchanged both ways; HIP 5.2's lazy flag (0) is CUDA's 1. */
    hipIpcMemHandle_t h;
    CHECK(hipIpcGetMemHandle(&h, reinterpret_cast<void*>(0x1000)) == hipSuccess);
    CHECK(h.reserved[0] == 0 && h.reserved[63] == 63);
    void* opened = nullptr;
    CHECK(hipIpcOpenMemHandle(&opened, h, hipIpcMemLazyEnablePeerAccess) == hipSuccess);
    CHECK(fake->ipc_open_flags == CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CHECK(memcmp(fake->ipc_open_reserved, h.reserved, 64) == 0);
    CHECK(opened == reinterpret_cast<void*>(0x2000));
    CHECK(hipIpcOpenMemHandle(&opened, h, 1) == hipErrorInvalidValue);
    CHECK(hipIpcCloseMemHandle(opened) == hipSuccess);

    /* Graphs: capture (relaxed is CUDA's relaxed), end, instantiate with no flags (HIP 5.2's
     * error node and log cleared), replay, destroy; then the errors the driver answers, mapped. */
    CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed) == hipSuccess);
    CHECK(fake->capturing == reinterpret_cast<CUstream>(s));
    CHECK(fake->capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed) == hipErrorIllegalState);
    hipGraph_t g = nullptr;
    CHECK(hipStreamEndCapture(s, &g) == hipSuccess && g != nullptr && fake->graphs == 1);
    CHECK(fake->capturing == nullptr);
    hipGraphExec_t x = nullptr;
    hipGraphNode_t node = reinterpret_cast<hipGraphNode_t>(0x1);
    char log[16];
    memset(log, 'x', sizeof log);
    CHECK(hipGraphInstantiate(&x, g, &node, log, sizeof log) == hipSuccess);
    CHECK(x != nullptr && fake->execs == 1 && fake->instantiate_flags == 0);
    CHECK(node == nullptr && log[0] == 0 && log[1] == 'x');
    CHECK(hipGraphDestroy(g) == hipSuccess && fake->graphs == 0);
    CHECK(hipGraphLaunch(x, s) == hipSuccess);
    CHECK(fake->launched == reinterpret_cast<CUgraphExec>(x));
    CHECK(fake->launched_on == reinterpret_cast<CUstream>(s));
    fake->next = CUDA_ERROR_LAUNCH_FAILED;
    CHECK(hipGraphLaunch(x, s) == hipErrorLaunchFailure);
    CHECK(hipGraphExecDestroy(x) == hipSuccess && fake->execs == 0);
    /* Ending a capture never begun: the driver's CUDA_ERROR_ILLEGAL_STATE, HIP's code, no graph. */
    g = reinterpret_cast<hipGraph_t>(0x1);
    CHECK(hipStreamEndCapture(s, &g) == hipErrorIllegalState && g == nullptr);
    /* An invalidated capture ends, gives no graph, and says why. */
    CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) == hipSuccess);
    CHECK(fake->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    fake->next = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    g = reinterpret_cast<hipGraph_t>(0x1);
    CHECK(hipStreamEndCapture(s, &g) == hipErrorStreamCaptureInvalidated && g == nullptr);
    CHECK(fake->capturing == nullptr && fake->graphs == 0);
    /* A refused instantiation: no executable graph, the optional arguments may be absent. */
    CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal) == hipSuccess);
    CHECK(fake->capture_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK(hipStreamEndCapture(s, &g) == hipSuccess && fake->graphs == 1);
    fake->next = CUDA_ERROR_OUT_OF_MEMORY;
    x = reinterpret_cast<hipGraphExec_t>(0x1);
    CHECK(hipGraphInstantiate(&x, g, nullptr, nullptr, 0) == hipErrorOutOfMemory && x == nullptr);
    CHECK(fake->execs == 0);
    CHECK(hipGraphDestroy(g) == hipSuccess && fake->graphs == 0);
    /* Refused before the driver is asked: a mode HIP 5.2 does not define, null handles. */
    fake->capture_mode = -1;
    CHECK(hipStreamBeginCapture(s, static_cast<hipStreamCaptureMode>(3)) == hipErrorInvalidValue);
    CHECK(fake->capture_mode == -1 && fake->capturing == nullptr);
    CHECK(hipStreamEndCapture(s, nullptr) == hipErrorInvalidValue);
    CHECK(hipGraphInstantiate(nullptr, g, nullptr, nullptr, 0) == hipErrorInvalidValue);
    CHECK(hipGraphDestroy(nullptr) == hipErrorInvalidValue);
    CHECK(hipGraphLaunch(nullptr, s) == hipErrorInvalidValue);
    CHECK(hipGraphExecDestroy(nullptr) == hipErrorInvalidValue);

    char id[32] = {0};
    CHECK(hipDeviceGetPCIBusId(id, sizeof id, 0) == hipSuccess && strcmp(id, "0000:c1:00.0") == 0);
    CHECK(hipDeviceGetByPCIBusId(&v, "0000:c1:00.0") == hipSuccess && v == 0);
    CHECK(hipDeviceGetByPCIBusId(&v, "fffe:fe:1f.7") == hipErrorInvalidDevice);
    float ms = 0;
    CHECK(hipEventElapsedTime(&ms, e, e) == hipSuccess && ms == 1.5f);
    CHECK(hipEventDestroy(e) == hipSuccess && hipStreamDestroy(s) == hipSuccess);

    if (failures != 0) {
        fprintf(stderr, "test_layer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_layer: all checks passed (the layer against a fake libcuda)\n");
    return 0;
}
