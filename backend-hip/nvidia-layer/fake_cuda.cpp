/*
 * fake_cuda.cpp: a stand-in libcuda.so.1 for test_layer.cpp, so the layer's plumbing runs without
 * a GPU: loading the driver through cuGetProcAddress_v2, contexts, and what each HIP call hands the
 * driver (flags, stream priorities, the 3-D copy's fields, IPC handle bytes, the capture mode) and
 * makes of what it answers, including a stream capture's state (begin, end, instantiate, launch,
 * destroy). Each fake
 * records its arguments in `fake_state` and answers what the test put there. Never a real driver.
 */
#include "fake_cuda.h"

#include <string.h>

extern "C" {

__attribute__((visibility("default"))) FakeState fake_state;

static thread_local CUcontext current = nullptr;
static char primary_context;  /* its address is the one context */
static char host_memory[4096];

static CUresult answer() {
    CUresult r = fake_state.next;
    fake_state.next = CUDA_SUCCESS;
    return r;
}

static CUresult fInit(unsigned int) { return CUDA_SUCCESS; }
static CUresult fDriverGetVersion(int* v) { *v = 13000; return CUDA_SUCCESS; }
static CUresult fDeviceGetCount(int* n) { *n = fake_state.devices; return CUDA_SUCCESS; }
static CUresult fDeviceGet(CUdevice* d, int ordinal) {
    if (ordinal < 0 || ordinal >= fake_state.devices) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
static CUresult fDeviceGetName(char* name, int len, CUdevice) {
    strncpy(name, "Fake GPU", len);
    return CUDA_SUCCESS;
}
static CUresult fDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
    *v = a == CU_DEVICE_ATTRIBUTE_WARP_SIZE ? 32 : 1;
    return CUDA_SUCCESS;
}
static CUresult fPrimaryCtxRetain(CUcontext* c, CUdevice) {
    ++fake_state.retained;
    *c = reinterpret_cast<CUcontext>(&primary_context);
    return CUDA_SUCCESS;
}
static CUresult fCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
static CUresult fCtxGetCurrent(CUcontext* c) { *c = current; return CUDA_SUCCESS; }
static CUresult fCtxGetDevice(CUdevice* d) {
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *d = 0;
    return CUDA_SUCCESS;
}
/* Device memory is [0x1000, 0x1000 + 4096) of device 0 (what fMemAlloc hands out); anything else
 * the fake driver does not know. */
static bool fake_device_memory(CUdeviceptr p) { return p >= 0x1000 && p < 0x2000; }
static CUresult fPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
    if (!fake_device_memory(p)) return CUDA_ERROR_INVALID_VALUE;
    int* v = static_cast<int*>(data);
    switch (a) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *v = CU_MEMORYTYPE_DEVICE; return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *v = 0; return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *v = 0; return CUDA_SUCCESS;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}
static CUresult fMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
    if (!fake_device_memory(p)) return CUDA_ERROR_NOT_FOUND;
    *base = 0x1000;
    *size = 4096;
    return CUDA_SUCCESS;
}
static CUresult fMemAlloc(CUdeviceptr* p, size_t) { *p = 0x1000; return answer(); }
static CUresult fMemsetD8(CUdeviceptr, unsigned char, size_t) { return CUDA_SUCCESS; }
static CUresult fMemFree(CUdeviceptr) { return CUDA_SUCCESS; }
static CUresult fMemHostAlloc(void** p, size_t, unsigned int flags) {
    fake_state.host_alloc_flags = flags;
    *p = host_memory;
    return CUDA_SUCCESS;
}
static CUresult fMemHostGetDevicePointer(CUdeviceptr* d, void* h, unsigned int) {
    *d = reinterpret_cast<CUdeviceptr>(h);
    return CUDA_SUCCESS;
}
static CUresult fMemFreeHost(void*) { return CUDA_SUCCESS; }
static CUresult fStreamCreate(CUstream* s, unsigned int flags) {
    fake_state.stream_flags = flags;
    *s = reinterpret_cast<CUstream>(0x5);
    return CUDA_SUCCESS;
}
static CUresult fCtxGetStreamPriorityRange(int* least, int* greatest) {
    CUresult r = answer();
    if (r != CUDA_SUCCESS) return r;
    *least = fake_state.priority_least;
    *greatest = fake_state.priority_greatest;
    return CUDA_SUCCESS;
}
static CUresult fStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
    fake_state.stream_flags = flags;
    fake_state.stream_priority = priority;
    CUresult r = answer();
    if (r != CUDA_SUCCESS) return r;
    *s = reinterpret_cast<CUstream>(0x6);
    return CUDA_SUCCESS;
}
static CUresult fStreamQuery(CUstream) { return answer(); }
static CUresult fStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
static CUresult fStreamDestroy(CUstream) { return CUDA_SUCCESS; }
static CUresult fStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
static CUresult fEventCreate(CUevent* e, unsigned int flags) {
    fake_state.event_flags = flags;
    *e = reinterpret_cast<CUevent>(0x7);
    return CUDA_SUCCESS;
}
static CUresult fEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
static CUresult fEventQuery(CUevent) { return answer(); }
static CUresult fEventElapsedTime(float* ms, CUevent, CUevent) { *ms = 1.5f; return CUDA_SUCCESS; }
static CUresult fEventDestroy(CUevent) { return CUDA_SUCCESS; }
static CUresult fMemcpyHtoDAsync(CUdeviceptr, const void*, size_t, CUstream) { return CUDA_SUCCESS; }
static CUresult fMemcpyDtoHAsync(void*, CUdeviceptr, size_t, CUstream) { return CUDA_SUCCESS; }
static CUresult fMemcpy3DAsync(const CUDA_MEMCPY3D* c, CUstream) {
    fake_state.copy = *c;
    return CUDA_SUCCESS;
}
static CUresult fModuleLoadData(CUmodule* m, const void*) {
    *m = reinterpret_cast<CUmodule>(0x9);
    return CUDA_SUCCESS;
}
static CUresult fModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
    if (strcmp(name, "hp_pack") != 0) return CUDA_ERROR_NOT_FOUND;
    *f = reinterpret_cast<CUfunction>(0xb);
    return CUDA_SUCCESS;
}
static CUresult fModuleUnload(CUmodule) { return CUDA_SUCCESS; }
static CUresult fLaunchKernel(CUfunction, unsigned int gx, unsigned int gy, unsigned int gz,
                              unsigned int bx, unsigned int by, unsigned int bz, unsigned int,
                              CUstream, void**, void**) {
    unsigned int g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    memcpy(fake_state.launch_grid, g, sizeof g);
    memcpy(fake_state.launch_block, b, sizeof b);
    return CUDA_SUCCESS;
}
static CUresult fLaunchCooperativeKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                                         unsigned int, unsigned int, unsigned int, unsigned int,
                                         CUstream, void**) {
    return answer();
}
static CUresult fOccupancy(int* n, CUfunction, int, size_t) { *n = 4; return CUDA_SUCCESS; }
static CUresult fIpcGetMemHandle(CUipcMemHandle* h, CUdeviceptr) {
    for (int i = 0; i < 64; ++i) h->reserved[i] = static_cast<char>(i);
    return CUDA_SUCCESS;
}
static CUresult fIpcOpenMemHandle(CUdeviceptr* p, CUipcMemHandle h, unsigned int flags) {
    fake_state.ipc_open_flags = flags;
    memcpy(fake_state.ipc_open_reserved, h.reserved, 64);
    *p = 0x2000;
    return CUDA_SUCCESS;
}
static CUresult fIpcCloseMemHandle(CUdeviceptr) { return CUDA_SUCCESS; }
static CUresult fDeviceGetPCIBusId(char* id, int len, CUdevice) {
    strncpy(id, "0000:c1:00.0", len);
    return CUDA_SUCCESS;
}
static CUresult fDeviceGetByPCIBusId(CUdevice* d, const char* id) {
    if (strcmp(id, "0000:c1:00.0") != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
static CUresult fDeviceCanAccessPeer(int* can, CUdevice, CUdevice) { *can = 0; return CUDA_SUCCESS; }
/* Capture as the driver does it for one stream: beginning twice or ending without a begin is
 * CUDA_ERROR_ILLEGAL_STATE; an ending answered with an error (fake_state.next, e.g. an
 * invalidated capture) ends the capture and gives no graph. */
static char graph_template, graph_exec;  /* their addresses are the one graph and exec */
static CUresult fStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
    if (fake_state.capturing != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    fake_state.capturing = s;
    fake_state.capture_mode = static_cast<int>(mode);
    return CUDA_SUCCESS;
}
static CUresult fStreamEndCapture(CUstream s, CUgraph* g) {
    *g = nullptr;
    if (fake_state.capturing == nullptr || fake_state.capturing != s) return CUDA_ERROR_ILLEGAL_STATE;
    fake_state.capturing = nullptr;
    CUresult r = answer();
    if (r != CUDA_SUCCESS) return r;
    ++fake_state.graphs;
    *g = reinterpret_cast<CUgraph>(&graph_template);
    return CUDA_SUCCESS;
}
static CUresult fGraphInstantiateWithFlags(CUgraphExec* x, CUgraph g, unsigned long long flags) {
    fake_state.instantiate_flags = flags;
    if (g != reinterpret_cast<CUgraph>(&graph_template)) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = answer();
    if (r != CUDA_SUCCESS) return r;
    ++fake_state.execs;
    *x = reinterpret_cast<CUgraphExec>(&graph_exec);
    return CUDA_SUCCESS;
}
static CUresult fGraphDestroy(CUgraph) {
    --fake_state.graphs;
    return CUDA_SUCCESS;
}
static CUresult fGraphLaunch(CUgraphExec x, CUstream s) {
    fake_state.launched = x;
    fake_state.launched_on = s;
    return answer();
}
static CUresult fGraphExecDestroy(CUgraphExec) {
    --fake_state.execs;
    return CUDA_SUCCESS;
}
static CUresult fGetErrorName(CUresult r, const char** name) {
    *name = r == CUDA_ERROR_MPS_CONNECTION_FAILED ? "CUDA_ERROR_MPS_CONNECTION_FAILED" : "other";
    return CUDA_SUCCESS;
}

struct Entry {
    const char* name;
    void* fn;
};
static const Entry table[] = {
    {"cuInit", (void*)fInit},
    {"cuDriverGetVersion", (void*)fDriverGetVersion},
    {"cuDeviceGetCount", (void*)fDeviceGetCount},
    {"cuDeviceGet", (void*)fDeviceGet},
    {"cuDeviceGetName", (void*)fDeviceGetName},
    {"cuDeviceGetAttribute", (void*)fDeviceGetAttribute},
    {"cuDevicePrimaryCtxRetain", (void*)fPrimaryCtxRetain},
    {"cuCtxSetCurrent", (void*)fCtxSetCurrent},
    {"cuCtxGetCurrent", (void*)fCtxGetCurrent},
    {"cuMemAlloc", (void*)fMemAlloc},
    {"cuMemsetD8", (void*)fMemsetD8},
    {"cuMemFree", (void*)fMemFree},
    {"cuMemHostAlloc", (void*)fMemHostAlloc},
    {"cuMemHostGetDevicePointer", (void*)fMemHostGetDevicePointer},
    {"cuMemFreeHost", (void*)fMemFreeHost},
    {"cuStreamCreate", (void*)fStreamCreate},
    {"cuStreamQuery", (void*)fStreamQuery},
    {"cuStreamSynchronize", (void*)fStreamSynchronize},
    {"cuStreamDestroy", (void*)fStreamDestroy},
    {"cuStreamWaitEvent", (void*)fStreamWaitEvent},
    {"cuEventCreate", (void*)fEventCreate},
    {"cuEventRecord", (void*)fEventRecord},
    {"cuEventQuery", (void*)fEventQuery},
    {"cuEventElapsedTime", (void*)fEventElapsedTime},
    {"cuEventDestroy", (void*)fEventDestroy},
    {"cuMemcpyHtoDAsync", (void*)fMemcpyHtoDAsync},
    {"cuMemcpyDtoHAsync", (void*)fMemcpyDtoHAsync},
    {"cuMemcpy3DAsync", (void*)fMemcpy3DAsync},
    {"cuModuleLoadData", (void*)fModuleLoadData},
    {"cuModuleGetFunction", (void*)fModuleGetFunction},
    {"cuModuleUnload", (void*)fModuleUnload},
    {"cuLaunchKernel", (void*)fLaunchKernel},
    {"cuLaunchCooperativeKernel", (void*)fLaunchCooperativeKernel},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void*)fOccupancy},
    {"cuIpcGetMemHandle", (void*)fIpcGetMemHandle},
    {"cuIpcOpenMemHandle", (void*)fIpcOpenMemHandle},
    {"cuIpcCloseMemHandle", (void*)fIpcCloseMemHandle},
    {"cuDeviceGetPCIBusId", (void*)fDeviceGetPCIBusId},
    {"cuDeviceGetByPCIBusId", (void*)fDeviceGetByPCIBusId},
    {"cuDeviceCanAccessPeer", (void*)fDeviceCanAccessPeer},
    {"cuGetErrorName", (void*)fGetErrorName},
    {"cuStreamBeginCapture", (void*)fStreamBeginCapture},
    {"cuStreamEndCapture", (void*)fStreamEndCapture},
    {"cuGraphInstantiateWithFlags", (void*)fGraphInstantiateWithFlags},
    {"cuGraphDestroy", (void*)fGraphDestroy},
    {"cuGraphLaunch", (void*)fGraphLaunch},
    {"cuGraphExecDestroy", (void*)fGraphExecDestroy},
    {"cuCtxGetStreamPriorityRange", (void*)fCtxGetStreamPriorityRange},
    {"cuStreamCreateWithPriority", (void*)fStreamCreateWithPriority},
    {"cuCtxGetDevice", (void*)fCtxGetDevice},
    {"cuPointerGetAttribute", (void*)fPointerGetAttribute},
    {"cuMemGetAddressRange", (void*)fMemGetAddressRange},
};

/* The real driver's entry point (CUDA 12.0 on), by which the layer finds everything else. The
 * version asked for must be the layer's CUDA_VERSION. */
__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** fn, int version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
    if (version != CUDA_VERSION || flags != CU_GET_PROC_ADDRESS_DEFAULT) return CUDA_ERROR_INVALID_VALUE;
    for (const Entry& e : table) {
        if (strcmp(e.name, symbol) == 0) {
            *fn = e.fn;
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    *fn = nullptr;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
}
