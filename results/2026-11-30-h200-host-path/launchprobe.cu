// Launch probe: what a kernel parameter's size, and an event record after the launch, cost
// from the host's call to the kernel's first store seen by the host (pinned flag round trip).
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
template <int N> struct P { unsigned long long *flag; unsigned long long epoch; unsigned char pad[N - 16]; };
template <int N> __global__ void k(P<N> p) {
    if (threadIdx.x == 0) {
        unsigned long long v = p.epoch + p.pad[blockIdx.x % (N - 16)] * 0ull;
        if (blockIdx.x == 0) asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p.flag), "l"(v) : "memory");
    }
}
static double now() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <int N> void run(int event, int blocks, cudaStream_t s, cudaEvent_t ev, volatile unsigned long long *h, unsigned long long *d) {
    P<N> p{}; p.flag = d;
    std::vector<double> l, r;
    static unsigned long long e = 0;
    for (int i = 0; i < 3000; i++) {
        p.epoch = ++e;
        double t0 = now();
        k<N><<<blocks, 16, 0, s>>>(p);
        if (event) CK(cudaEventRecord(ev, s));
        double t1 = now();
        while (*h != e) {}
        double t2 = now();
        if (i >= 200) { l.push_back(t1 - t0); r.push_back(t2 - t0); }
        double t3 = now(); while (now() - t3 < 5) {}
    }
    CK(cudaGetLastError());
    std::sort(l.begin(), l.end()); std::sort(r.begin(), r.end());
    printf("param %5d B event %d blocks %2d: launch(+event) returns %.2f us, first store seen %.2f us (p10 %.2f p90 %.2f)\n",
           N, event, blocks, l[l.size() / 2], r[r.size() / 2], r[r.size() / 10], r[r.size() * 9 / 10]);
}
int main() {
    CK(cudaSetDevice(0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev; CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    unsigned long long *h, *d;
    CK(cudaHostAlloc((void **)&h, 64, cudaHostAllocMapped)); *h = 0;
    CK(cudaHostGetDevicePointer((void **)&d, h, 0));
    for (int rep = 0; rep < 2; rep++) {
        for (int event = 0; event < 2; event++) {
            run<80>(event, 8, s, ev, h, d);
            run<256>(event, 8, s, ev, h, d);
            run<480>(event, 8, s, ev, h, d);
            run<880>(event, 8, s, ev, h, d);
            run<2048>(event, 8, s, ev, h, d);
            run<4096>(event, 8, s, ev, h, d);
        }
    }
    return 0;
}
