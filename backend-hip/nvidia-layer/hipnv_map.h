/*
 * hipnv_map.h: every value haloport's HIP backend passes to or receives from the HIP runtime,
 * mapped explicitly between HIP 5.2's definitions (the header the backend's bindings were
 * generated from, read here with the AMD platform's definitions, as bindgen read it) and the
 * CUDA driver API's. Nothing is assumed equal: where the numbers happen to agree (most error
 * codes) the table still names both sides, and where they differ (hipIpcMemLazyEnablePeerAccess
 * is 0 in HIP 5.2, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is 1) only the table makes it right.
 * Inline and free of state, so the unit test (test_map.cpp) checks exactly what the layer uses.
 */
#ifndef HIPNV_MAP_H
#define HIPNV_MAP_H

/* nvcc defines __NVCC__ even for host code, which makes hip_common.h choose the NVIDIA platform
 * headers (they do not build with CUDA 13). The layer implements the AMD platform's API: its
 * types and values are what the backend's bindings hold. */
#undef __NVCC__
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <cuda.h>

#include "hipnv_extra.h"

/* The HIP error codes the layer returns, each with the CUDA driver result it stands for. A CUDA
 * result not listed becomes hipErrorUnknown (the layer keeps the CUDA name for
 * hipGetErrorName: see hipnv.cpp). HIP's aliases (hipErrorMemoryAllocation = OutOfMemory, ...)
 * are the same numbers and are not listed twice. */
#define HIPNV_ERRORS(X)                                                                   \
    X(hipSuccess, CUDA_SUCCESS)                                                           \
    X(hipErrorInvalidValue, CUDA_ERROR_INVALID_VALUE)                                     \
    X(hipErrorOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY)                                      \
    X(hipErrorNotInitialized, CUDA_ERROR_NOT_INITIALIZED)                                 \
    X(hipErrorDeinitialized, CUDA_ERROR_DEINITIALIZED)                                    \
    X(hipErrorProfilerDisabled, CUDA_ERROR_PROFILER_DISABLED)                             \
    X(hipErrorNoDevice, CUDA_ERROR_NO_DEVICE)                                             \
    X(hipErrorInvalidDevice, CUDA_ERROR_INVALID_DEVICE)                                   \
    X(hipErrorInvalidImage, CUDA_ERROR_INVALID_IMAGE)                                     \
    X(hipErrorInvalidContext, CUDA_ERROR_INVALID_CONTEXT)                                 \
    X(hipErrorContextAlreadyCurrent, CUDA_ERROR_CONTEXT_ALREADY_CURRENT)                  \
    X(hipErrorMapFailed, CUDA_ERROR_MAP_FAILED)                                           \
    X(hipErrorUnmapFailed, CUDA_ERROR_UNMAP_FAILED)                                       \
    X(hipErrorArrayIsMapped, CUDA_ERROR_ARRAY_IS_MAPPED)                                  \
    X(hipErrorAlreadyMapped, CUDA_ERROR_ALREADY_MAPPED)                                   \
    X(hipErrorNoBinaryForGpu, CUDA_ERROR_NO_BINARY_FOR_GPU)                               \
    X(hipErrorAlreadyAcquired, CUDA_ERROR_ALREADY_ACQUIRED)                               \
    X(hipErrorNotMapped, CUDA_ERROR_NOT_MAPPED)                                           \
    X(hipErrorNotMappedAsArray, CUDA_ERROR_NOT_MAPPED_AS_ARRAY)                           \
    X(hipErrorNotMappedAsPointer, CUDA_ERROR_NOT_MAPPED_AS_POINTER)                       \
    X(hipErrorECCNotCorrectable, CUDA_ERROR_ECC_UNCORRECTABLE)                            \
    X(hipErrorUnsupportedLimit, CUDA_ERROR_UNSUPPORTED_LIMIT)                             \
    X(hipErrorContextAlreadyInUse, CUDA_ERROR_CONTEXT_ALREADY_IN_USE)                     \
    X(hipErrorPeerAccessUnsupported, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)                  \
    /* PTX the driver cannot JIT (too new for it): the kernel file is unusable. */        \
    X(hipErrorInvalidKernelFile, CUDA_ERROR_INVALID_PTX)                                  \
    X(hipErrorInvalidGraphicsContext, CUDA_ERROR_INVALID_GRAPHICS_CONTEXT)                \
    X(hipErrorInvalidSource, CUDA_ERROR_INVALID_SOURCE)                                   \
    X(hipErrorFileNotFound, CUDA_ERROR_FILE_NOT_FOUND)                                    \
    X(hipErrorSharedObjectSymbolNotFound, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)      \
    X(hipErrorSharedObjectInitFailed, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)               \
    X(hipErrorOperatingSystem, CUDA_ERROR_OPERATING_SYSTEM)                               \
    X(hipErrorInvalidHandle, CUDA_ERROR_INVALID_HANDLE)                                   \
    X(hipErrorIllegalState, CUDA_ERROR_ILLEGAL_STATE)                                     \
    X(hipErrorNotFound, CUDA_ERROR_NOT_FOUND)                                             \
    X(hipErrorNotReady, CUDA_ERROR_NOT_READY)                                             \
    X(hipErrorIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS)                                 \
    X(hipErrorLaunchOutOfResources, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)                   \
    X(hipErrorLaunchTimeOut, CUDA_ERROR_LAUNCH_TIMEOUT)                                   \
    X(hipErrorPeerAccessAlreadyEnabled, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)           \
    X(hipErrorPeerAccessNotEnabled, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)                   \
    X(hipErrorSetOnActiveProcess, CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)                      \
    X(hipErrorContextIsDestroyed, CUDA_ERROR_CONTEXT_IS_DESTROYED)                        \
    X(hipErrorAssert, CUDA_ERROR_ASSERT)                                                  \
    X(hipErrorHostMemoryAlreadyRegistered, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)     \
    X(hipErrorHostMemoryNotRegistered, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)             \
    X(hipErrorLaunchFailure, CUDA_ERROR_LAUNCH_FAILED)                                    \
    X(hipErrorCooperativeLaunchTooLarge, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)         \
    X(hipErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED)                                     \
    X(hipErrorStreamCaptureUnsupported, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)            \
    X(hipErrorStreamCaptureInvalidated, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)            \
    X(hipErrorStreamCaptureMerge, CUDA_ERROR_STREAM_CAPTURE_MERGE)                        \
    X(hipErrorStreamCaptureUnmatched, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)                \
    X(hipErrorStreamCaptureUnjoined, CUDA_ERROR_STREAM_CAPTURE_UNJOINED)                  \
    X(hipErrorStreamCaptureIsolation, CUDA_ERROR_STREAM_CAPTURE_ISOLATION)                \
    X(hipErrorStreamCaptureImplicit, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)                  \
    X(hipErrorCapturedEvent, CUDA_ERROR_CAPTURED_EVENT)                                   \
    X(hipErrorStreamCaptureWrongThread, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)           \
    X(hipErrorGraphExecUpdateFailure, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)               \
    X(hipErrorUnknown, CUDA_ERROR_UNKNOWN)

/* HIP codes the layer returns on its own, with no CUDA result behind them:
 *   hipErrorInsufficientDriver  libcuda.so.1 cannot be loaded or lacks a function the layer needs
 *                               (no NVIDIA driver, or one older than CUDA 13.0), or cuInit says
 *                               the driver does not match (what cudart calls
 *                               cudaErrorInsufficientDriver, and HIP on NVIDIA returns then).
 *   hipErrorInvalidValue        a HIP flag, attribute or copy kind the layer does not serve. */
#define HIPNV_OWN_ERRORS(X) X(hipErrorInsufficientDriver)

/* The CUDA result behind a HIP error, for the test's round trip. */
static inline hipError_t hipnv_error(CUresult r) {
    switch (r) {
#define HIPNV_CASE(hip, cu) \
    case cu:                \
        return hip;
        HIPNV_ERRORS(HIPNV_CASE)
#undef HIPNV_CASE
        /* The driver and libcuda disagree, or the GPU needs a newer driver: no usable driver. */
        case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        case CUDA_ERROR_STUB_LIBRARY:
            return hipErrorInsufficientDriver;
        default:
            return hipErrorUnknown;
    }
}

/* HIP's name of a code the layer returns, or NULL for one it never returns. */
static inline const char* hipnv_error_name(hipError_t e) {
    switch (e) {
#define HIPNV_NAME(hip, cu) \
    case hip:               \
        return #hip;
        HIPNV_ERRORS(HIPNV_NAME)
#undef HIPNV_NAME
#define HIPNV_OWN_NAME(hip) \
    case hip:               \
        return #hip;
        HIPNV_OWN_ERRORS(HIPNV_OWN_NAME)
#undef HIPNV_OWN_NAME
        default:
            return 0;
    }
}

/* The device attributes the backend reads. Any other is hipErrorInvalidValue, as HIP answers an
 * attribute it does not know (the backend's wall-clock query relies on exactly that answer).
 *
 * Wall-clock rate, not one-to-one: HIP 5.2 has no hipDeviceAttributeWallClockRate, so the backend
 * never asks for it here, and the layer does not invent one. On this platform the kernels are the
 * CUDA fatbin, whose timer is %globaltimer in nanoseconds: the backend takes that 1 GHz from the
 * kernel image (kernels::FIXED_TIMER_HZ), not from the runtime. hipDeviceAttributeClockRate (the
 * SM clock, which varies) is deliberately not served as a stand-in. */
static inline int hipnv_attribute(hipDeviceAttribute_t a, CUdevice_attribute* out) {
    switch (a) {
        case hipDeviceAttributeCanMapHostMemory:
            *out = CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
            return 1;
        case hipDeviceAttributeCooperativeLaunch:
            *out = CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH;
            return 1;
        case hipDeviceAttributeMultiprocessorCount:
            *out = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
            return 1;
        /* 32 on NVIDIA: the kernels must not assume AMD's 64, and here they run at 32. */
        case hipDeviceAttributeWarpSize:
            *out = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
            return 1;
        case hipDeviceAttributeMaxThreadsPerBlock:
            *out = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
            return 1;
        default:
            return 0;
    }
}

/* The pointer attributes the backend asks, to CUDA's (the same names; HIP 5.2 numbers them as
 * CUDA does, but the table does not rely on it). Each is one int on both sides. */
static inline int hipnv_pointer_attribute(hipPointer_attribute a, CUpointer_attribute* out) {
    switch (a) {
        case HIP_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *out = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
            return 1;
        case HIP_POINTER_ATTRIBUTE_IS_MANAGED:
            *out = CU_POINTER_ATTRIBUTE_IS_MANAGED;
            return 1;
        case HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *out = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
            return 1;
        default:
            return 0;
    }
}

/* CUDA's memory types to HIP 5.2's hipMemoryType. Not one-to-one in numbers: CUDA counts from 1
 * (host 1, device 2, array 3, unified 4), HIP 5.2 from 0 (host 0, device 1, array 2, unified 3).
 * Managed memory is CUDA's unified type here; the backend asks HIP_POINTER_ATTRIBUTE_IS_MANAGED
 * for it. */
static inline int hipnv_memory_type(CUmemorytype t, int* out) {
    switch (t) {
        case CU_MEMORYTYPE_HOST:
            *out = hipMemoryTypeHost;
            return 1;
        case CU_MEMORYTYPE_DEVICE:
            *out = hipMemoryTypeDevice;
            return 1;
        case CU_MEMORYTYPE_ARRAY:
            *out = hipMemoryTypeArray;
            return 1;
        case CU_MEMORYTYPE_UNIFIED:
            *out = hipMemoryTypeUnified;
            return 1;
        default:
            return 0;
    }
}

/* hipHostMalloc flags to cuMemHostAlloc flags; 0 when a flag is not served (the caller answers
 * hipErrorInvalidValue).
 *
 * Not one-to-one: CUDA has one kind of page-locked memory, coherent with the device while
 * kernels run (system-scope atomics and fences order CPU and GPU accesses). hipHostMallocCoherent
 * and hipHostMallocNonCoherent both get it: non-coherent memory promises less (contents defined
 * only at synchronization points), so coherent memory keeps every promise non-coherent memory
 * makes, but any speed difference AMD shows between the two (thesis 3.2.1) cannot show here.
 * Asking for both is refused, as HIP refuses it. Write-combined memory is refused: haloport never
 * asks for it (the CPU reads what it receives). */
static inline int hipnv_host_alloc_flags(unsigned int hip, unsigned int* cu) {
    const unsigned int known =
        hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent | hipHostMallocNonCoherent;
    if ((hip & ~known) != 0) return 0;
    if ((hip & hipHostMallocCoherent) && (hip & hipHostMallocNonCoherent)) return 0;
    unsigned int flags = 0;
    if (hip & hipHostMallocPortable) flags |= CU_MEMHOSTALLOC_PORTABLE;
    if (hip & hipHostMallocMapped) flags |= CU_MEMHOSTALLOC_DEVICEMAP;
    *cu = flags;
    return 1;
}

/* hipStreamCreateWithFlags and hipStreamCreateWithPriority flags: hipStreamDefault (0) and
 * hipStreamNonBlocking. A stream priority is the one value passed through unmapped, and assumes
 * nothing: the layer's hipDeviceGetStreamPriorityRange answers the driver's own range, and the
 * backend passes back a number from it. */
static inline int hipnv_stream_flags(unsigned int hip, unsigned int* cu) {
    if (hip == hipStreamDefault) {
        *cu = CU_STREAM_DEFAULT;
        return 1;
    }
    if (hip == hipStreamNonBlocking) {
        *cu = CU_STREAM_NON_BLOCKING;
        return 1;
    }
    return 0;
}

/* hipEventCreateWithFlags flags: hipEventDefault (0) and hipEventDisableTiming, the only ones
 * haloport passes. */
static inline int hipnv_event_flags(unsigned int hip, unsigned int* cu) {
    if (hip == hipEventDefault) {
        *cu = CU_EVENT_DEFAULT;
        return 1;
    }
    if (hip == hipEventDisableTiming) {
        *cu = CU_EVENT_DISABLE_TIMING;
        return 1;
    }
    return 0;
}

/* hipIpcOpenMemHandle flags. HIP 5.2 defines hipIpcMemLazyEnablePeerAccess as 0 (its only flag,
 * and its default); CUDA's CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is 1 and cuIpcOpenMemHandle requires
 * it. The numbers differ: only this mapping makes the HIP call mean what it says. */
static inline int hipnv_ipc_open_flags(unsigned int hip, unsigned int* cu) {
    if (hip == hipIpcMemLazyEnablePeerAccess) {
        *cu = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS;
        return 1;
    }
    return 0;
}

/* hipMemcpy3DAsync's kind. The backend passes only hipMemcpyDefault (the runtime finds where
 * each address lies), which is CUDA's unified addressing: both sides CU_MEMORYTYPE_UNIFIED.
 * Other kinds are refused rather than half-served. */
static inline int hipnv_memcpy_kind(hipMemcpyKind kind, CUmemorytype* src, CUmemorytype* dst) {
    if (kind != hipMemcpyDefault) return 0;
    *src = CU_MEMORYTYPE_UNIFIED;
    *dst = CU_MEMORYTYPE_UNIFIED;
    return 1;
}

/* hipStreamBeginCapture's mode. HIP's three modes are CUDA's three, with the same meaning
 * (global, thread-local, relaxed: which other calls the capture forbids meanwhile); the numbers
 * happen to agree, and are mapped by name all the same. The backend passes only relaxed. A value
 * HIP 5.2 does not define is refused. */
static inline int hipnv_capture_mode(hipStreamCaptureMode hip, CUstreamCaptureMode* cu) {
    switch (hip) {
        case hipStreamCaptureModeGlobal:
            *cu = CU_STREAM_CAPTURE_MODE_GLOBAL;
            return 1;
        case hipStreamCaptureModeThreadLocal:
            *cu = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            return 1;
        case hipStreamCaptureModeRelaxed:
            *cu = CU_STREAM_CAPTURE_MODE_RELAXED;
            return 1;
        default:
            return 0;
    }
}

#endif /* HIPNV_MAP_H */
