/*
 * test_map.cpp: the layer's mappings, checked without a GPU (ci/hip-nvidia-test.sh builds and runs
 * it). Every error pair maps both ways and no two CUDA results share a HIP code by accident; the
 * HIP 5.2 numbers the backend's bindings hold are the ones compiled here; every flag, attribute,
 * copy kind and capture mode the backend passes maps to the CUDA value it means, and what the
 * layer does not serve is refused. Then, through the built library, what the calls answer on this
 * machine (no driver or no GPU must be an error code, never a crash). Exits non-zero on any
 * failure.
 */
#include "hipnv_map.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                \
        }                                                              \
    } while (0)

/* HIP 5.2's numbers (Debian's /usr/include/hip): the layer is compiled against the header the
 * bindings were generated from; a different HIP must show up here, not as a wrong code at run
 * time. */
static void hip_52_values() {
    CHECK(hipSuccess == 0);
    CHECK(hipErrorInvalidValue == 1);
    CHECK(hipErrorOutOfMemory == 2);
    CHECK(hipErrorInsufficientDriver == 35);
    CHECK(hipErrorNoDevice == 100);
    CHECK(hipErrorInvalidDevice == 101);
    CHECK(hipErrorNotReady == 600);
    CHECK(hipErrorCooperativeLaunchTooLarge == 720);
    CHECK(hipErrorUnknown == 999);
    CHECK(hipHostMallocPortable == 0x1);
    CHECK(hipHostMallocMapped == 0x2);
    CHECK(hipHostMallocCoherent == 0x40000000u);
    CHECK(hipHostMallocNonCoherent == 0x80000000u);
    CHECK(hipStreamNonBlocking == 0x1);
    CHECK(hipIpcMemLazyEnablePeerAccess == 0);
    CHECK(HIP_IPC_HANDLE_SIZE == 64 && sizeof(hipIpcMemHandle_t) == sizeof(CUipcMemHandle));
    CHECK(hipMemcpyDefault == 4);
    CHECK(hipStreamCaptureModeGlobal == 0 && hipStreamCaptureModeThreadLocal == 1 &&
          hipStreamCaptureModeRelaxed == 2);
    CHECK(hipErrorIllegalState == 401);
    CHECK(hipErrorStreamCaptureInvalidated == 901);
}

static void errors() {
    int pairs = 0;
#define PAIR(hip, cu)                                                      \
    CHECK(hipnv_error(cu) == hip);                                         \
    CHECK(hipnv_error_name(hip) != 0 && strcmp(hipnv_error_name(hip), #hip) == 0); \
    ++pairs;
    HIPNV_ERRORS(PAIR)
#undef PAIR
    /* No HIP code stands for two CUDA results (a table typo would), and no CUDA result twice. */
    const int hip_codes[] = {
#define HIP_OF(hip, cu) hip,
        HIPNV_ERRORS(HIP_OF)
#undef HIP_OF
    };
    const int cu_codes[] = {
#define CU_OF(hip, cu) cu,
        HIPNV_ERRORS(CU_OF)
#undef CU_OF
    };
    for (int i = 0; i < pairs; ++i) {
        for (int j = i + 1; j < pairs; ++j) {
            CHECK(hip_codes[i] != hip_codes[j]);
            CHECK(cu_codes[i] != cu_codes[j]);
        }
    }
    /* What the backend tells apart. */
    CHECK(hipnv_error(CUDA_ERROR_NOT_READY) == hipErrorNotReady);
    CHECK(hipnv_error(CUDA_ERROR_NO_DEVICE) == hipErrorNoDevice);
    CHECK(hipnv_error(CUDA_ERROR_INVALID_DEVICE) == hipErrorInvalidDevice);
    CHECK(hipnv_error(CUDA_ERROR_OUT_OF_MEMORY) == hipErrorOutOfMemory);
    CHECK(hipnv_error(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) == hipErrorCooperativeLaunchTooLarge);
    CHECK(hipnv_error(CUDA_ERROR_INVALID_VALUE) == hipErrorInvalidValue);
    /* No usable driver, and results HIP has no code for. */
    CHECK(hipnv_error(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) == hipErrorInsufficientDriver);
    CHECK(hipnv_error(CUDA_ERROR_STUB_LIBRARY) == hipErrorInsufficientDriver);
    CHECK(hipnv_error(CUDA_ERROR_MPS_CONNECTION_FAILED) == hipErrorUnknown);
    CHECK(hipnv_error(CUDA_ERROR_ILLEGAL_INSTRUCTION) == hipErrorUnknown);
    CHECK(strcmp(hipnv_error_name(hipErrorInsufficientDriver), "hipErrorInsufficientDriver") == 0);
    CHECK(hipnv_error_name(hipErrorRuntimeOther) == 0);
    printf("errors: %d HIP/CUDA pairs, each both ways\n", pairs);
}

static void flags() {
    unsigned int cu = 0xdead;
    CHECK(hipnv_host_alloc_flags(hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent, &cu));
    CHECK(cu == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    cu = 0xdead;
    CHECK(hipnv_host_alloc_flags(hipHostMallocMapped | hipHostMallocPortable | hipHostMallocNonCoherent, &cu));
    CHECK(cu == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CHECK(hipnv_host_alloc_flags(0, &cu) && cu == 0);
    CHECK(!hipnv_host_alloc_flags(hipHostMallocCoherent | hipHostMallocNonCoherent, &cu));
    CHECK(!hipnv_host_alloc_flags(hipHostMallocMapped | hipHostMallocWriteCombined, &cu));
    CHECK(!hipnv_host_alloc_flags(hipHostMallocNumaUser, &cu));

    CHECK(hipnv_stream_flags(hipStreamNonBlocking, &cu) && cu == CU_STREAM_NON_BLOCKING);
    CHECK(hipnv_stream_flags(hipStreamDefault, &cu) && cu == CU_STREAM_DEFAULT);
    CHECK(!hipnv_stream_flags(0x2, &cu));
    CHECK(hipnv_event_flags(hipEventDisableTiming, &cu) && cu == CU_EVENT_DISABLE_TIMING);
    CHECK(hipnv_event_flags(hipEventDefault, &cu) && cu == CU_EVENT_DEFAULT);
    CHECK(!hipnv_event_flags(hipEventBlockingSync, &cu));

    /* The one flag whose numbers differ: HIP 5.2's 0 is CUDA's 1. */
    CHECK(hipnv_ipc_open_flags(hipIpcMemLazyEnablePeerAccess, &cu) &&
          cu == CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS && cu == 1);
    CHECK(!hipnv_ipc_open_flags(0x1, &cu));

    CUmemorytype src, dst;
    CHECK(hipnv_memcpy_kind(hipMemcpyDefault, &src, &dst) && src == CU_MEMORYTYPE_UNIFIED &&
          dst == CU_MEMORYTYPE_UNIFIED);
    CHECK(!hipnv_memcpy_kind(hipMemcpyHostToDevice, &src, &dst));

    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    CHECK(hipnv_capture_mode(hipStreamCaptureModeRelaxed, &mode) &&
          mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    CHECK(hipnv_capture_mode(hipStreamCaptureModeThreadLocal, &mode) &&
          mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK(hipnv_capture_mode(hipStreamCaptureModeGlobal, &mode) &&
          mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK(!hipnv_capture_mode(static_cast<hipStreamCaptureMode>(3), &mode));
    CHECK(!hipnv_capture_mode(static_cast<hipStreamCaptureMode>(-1), &mode));
}

static void attributes() {
    CUdevice_attribute a;
    CHECK(hipnv_attribute(hipDeviceAttributeCanMapHostMemory, &a) && a == CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
    CHECK(hipnv_attribute(hipDeviceAttributeCooperativeLaunch, &a) && a == CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
    CHECK(hipnv_attribute(hipDeviceAttributeMultiprocessorCount, &a) && a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    CHECK(hipnv_attribute(hipDeviceAttributeWarpSize, &a) && a == CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    CHECK(hipnv_attribute(hipDeviceAttributeMaxThreadsPerBlock, &a) && a == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    /* Not served, so answered hipErrorInvalidValue (as HIP answers an attribute it lacks). */
    CHECK(!hipnv_attribute(hipDeviceAttributeClockRate, &a));
}

static void pointers() {
    CUpointer_attribute a;
    CHECK(hipnv_pointer_attribute(HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, &a) && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
    CHECK(hipnv_pointer_attribute(HIP_POINTER_ATTRIBUTE_IS_MANAGED, &a) && a == CU_POINTER_ATTRIBUTE_IS_MANAGED);
    CHECK(hipnv_pointer_attribute(HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &a) && a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
    CHECK(!hipnv_pointer_attribute(HIP_POINTER_ATTRIBUTE_BUFFER_ID, &a));
    /* CUDA counts memory types from 1, HIP 5.2 from 0. */
    int t = -1;
    CHECK(hipnv_memory_type(CU_MEMORYTYPE_HOST, &t) && t == hipMemoryTypeHost && t == 0);
    CHECK(hipnv_memory_type(CU_MEMORYTYPE_DEVICE, &t) && t == hipMemoryTypeDevice && t == 1);
    CHECK(hipnv_memory_type(CU_MEMORYTYPE_UNIFIED, &t) && t == hipMemoryTypeUnified);
    CHECK(!hipnv_memory_type(static_cast<CUmemorytype>(0), &t));
}

/* Through the built library: the answers on this machine. */
static void live() {
    int count = -1;
    hipError_t e = hipGetDeviceCount(&count);
    printf("hipGetDeviceCount: %s (%d), %d device(s)\n", hipGetErrorName(e), (int)e, count);
    if (e == hipSuccess) {
        CHECK(count > 0);
        return;
    }
    CHECK(e == hipErrorNoDevice || e == hipErrorInsufficientDriver);
    CHECK(count == 0);
    /* Every call answers the same code, never crashes. */
    void* p = (void*)0x1;
    CHECK(hipMalloc(&p, 16) == e && p == 0);
    CHECK(hipSetDevice(0) == e);
    int v = 0;
    CHECK(hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, 0) == e);
    /* Refused before the driver is asked. */
    CHECK(hipDeviceGetAttribute(&v, hipDeviceAttributeClockRate, 0) == hipErrorInvalidValue);
    CHECK(hipHostMalloc(&p, 16, hipHostMallocCoherent | hipHostMallocNonCoherent) == hipErrorInvalidValue);
    /* Stream priorities: the same code, the caller's values left alone. */
    int least = 7, greatest = 7;
    CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest) == e && least == 7 && greatest == 7);
    hipStream_t urgent = nullptr;
    CHECK(hipStreamCreateWithPriority(&urgent, hipStreamNonBlocking, -1) == e && urgent == 0);
    CHECK(hipStreamCreateWithPriority(&urgent, 0x2, -1) == hipErrorInvalidValue);
    /* The graph calls: the same code, or refused before the driver is asked. */
    hipStream_t s = reinterpret_cast<hipStream_t>(0x5);
    CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed) == e);
    CHECK(hipStreamBeginCapture(s, static_cast<hipStreamCaptureMode>(3)) == hipErrorInvalidValue);
    hipGraph_t g = reinterpret_cast<hipGraph_t>(0x1);
    CHECK(hipStreamEndCapture(s, &g) == e && g == 0);
    hipGraphExec_t x = reinterpret_cast<hipGraphExec_t>(0x1);
    hipGraphNode_t node = reinterpret_cast<hipGraphNode_t>(0x1);
    char log[4] = {'x', 'x', 'x', 'x'};
    CHECK(hipGraphInstantiate(&x, reinterpret_cast<hipGraph_t>(0x1), &node, log, sizeof log) == e);
    CHECK(x == 0 && node == 0 && log[0] == 0);
    CHECK(hipGraphLaunch(reinterpret_cast<hipGraphExec_t>(0x1), s) == e);
    CHECK(hipGraphExecDestroy(reinterpret_cast<hipGraphExec_t>(0x1)) == e);
    CHECK(hipGraphDestroy(reinterpret_cast<hipGraph_t>(0x1)) == e);
    CHECK(hipGraphExecDestroy(0) == hipErrorInvalidValue);
    CHECK(strcmp(hipGetErrorName((hipError_t)12345), "unrecognized hipError_t (haloport's HIP-on-NVIDIA layer)") == 0);
}

int main() {
    hip_52_values();
    errors();
    flags();
    attributes();
    pointers();
    live();
    if (failures != 0) {
        fprintf(stderr, "test_map: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_map: all checks passed\n");
    return 0;
}
