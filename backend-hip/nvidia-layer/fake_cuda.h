/*
 * fake_cuda.h: what fake_cuda.cpp (a stand-in libcuda.so.1 for test_layer.cpp) records of the
 * layer's calls and answers back. Tests only.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <cuda.h>

struct FakeState {
    int devices = 1;
    CUresult next = CUDA_SUCCESS; /* answered by the fakes that answer it, then reset */
    unsigned int host_alloc_flags = 0;
    unsigned int stream_flags = 0;
    /* Stream priorities: the range the fake answers (lower is greater, as the driver's), and the
     * priority the last cuStreamCreateWithPriority got. */
    int priority_least = 0;
    int priority_greatest = -5;
    int stream_priority = 1;
    unsigned int event_flags = 0;
    unsigned int ipc_open_flags = 0;
    char ipc_open_reserved[64] = {0};
    CUDA_MEMCPY3D copy = {};
    int retained = 0;
    unsigned int launch_grid[3] = {0, 0, 0};
    unsigned int launch_block[3] = {0, 0, 0};
    /* Graphs: the stream capturing (null: none) and its mode; the flags instantiation got;
     * templates and executable graphs alive; the last replay's graph and stream. */
    CUstream capturing = nullptr;
    int capture_mode = -1;
    unsigned long long instantiate_flags = ~0ull;
    int graphs = 0;
    int execs = 0;
    CUgraphExec launched = nullptr;
    CUstream launched_on = nullptr;
};

#endif /* FAKE_CUDA_H */
