#!/usr/bin/env python3
"""The issue's plain CuPy probes of the 27-point Jacobi update (issue 23, SPEC 18), in f64 and f32,
beside a device-to-device copy of the field, on the device in use: one thread per cell; one thread
per (x, y) column marching all of z; one marching z over chunks of 16 planes, two cells per thread
(x and x + 32), blocks of 32 x 8. Interior n^3 of a field of (n + 2)^3, halos of width 1. Each
kernel's output is checked against the one-thread-per-cell kernel's over the whole interior, and
that one against NumPy on a small grid. Prints the median of `--reps` timed runs (CUDA events).
usage: probe.py [--n 512] [--reps 15]"""
import argparse
import statistics

import cupy as cp
import numpy as np

SOURCE = r"""
template <typename T>
__device__ T plane_sum(const T* p, long ax) {
    return ((p[-ax - 1] + p[-ax] + p[-ax + 1]) + (p[-1] + p[0] + p[1])) + (p[ax - 1] + p[ax] + p[ax + 1]);
}
template <typename T>
__global__ void per_cell(const T* in, T* out, int n) {
    const long a = n + 2, plane = a * a;
    const int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
    const int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
    const int z = blockIdx.z + 1;
    if (x > n || y > n) return;
    const T* p = in + x + a * (y + a * (long)z);
    out[x + a * (y + a * (long)z)] =
        (plane_sum(p - plane, a) + plane_sum(p, a) + plane_sum(p + plane, a)) / T(27);
}
template <typename T>
__global__ void column(const T* in, T* out, int n) {
    const long a = n + 2, plane = a * a;
    const int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
    const int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (x > n || y > n) return;
    const T* p = in + x + a * y;
    T* o = out + x + a * y;
    T lo = plane_sum(p, a), mid = plane_sum(p + plane, a);
    for (int z = 1; z <= n; ++z) {
        const T hi = plane_sum(p + (z + 1) * plane, a);
        o[z * plane] = (lo + mid + hi) / T(27);
        lo = mid;
        mid = hi;
    }
}
template <typename T>
__global__ void chunked(const T* in, T* out, int n) {
    const long a = n + 2, plane = a * a;
    const int x0 = blockIdx.x * 64 + threadIdx.x + 1;
    const int y = blockIdx.y * 8 + threadIdx.y + 1;
    const int z0 = blockIdx.z * 16 + 1;
    const int z1 = min(z0 + 16, n + 1);
    if (y > n || x0 > n) return;
    /* The two cells x0 and x0 + 32 side by side through the chunk's planes. */
    const bool two = x0 + 32 <= n;
    const T* p = in + x0 + a * y;
    T* o = out + x0 + a * y;
    T lo[2], mid[2];
    for (int c = 0; c < 2; ++c) {
        lo[c] = two || c == 0 ? plane_sum(p + 32 * c + (z0 - 1) * plane, a) : T(0);
        mid[c] = two || c == 0 ? plane_sum(p + 32 * c + z0 * plane, a) : T(0);
    }
    for (int z = z0; z < z1; ++z) {
        for (int c = 0; c < 2; ++c) {
            if (c == 1 && !two) break;
            const T hi = plane_sum(p + 32 * c + (z + 1) * plane, a);
            o[32 * c + z * plane] = (lo[c] + mid[c] + hi) / T(27);
            lo[c] = mid[c];
            mid[c] = hi;
        }
    }
}
"""


def kernels(ctype):
    names = [f"{k}<{ctype}>" for k in ("per_cell", "column", "chunked")]
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=names)
    return {name.split("<")[0]: module.get_function(name) for name in names}


def launch(kernels, name, src, dst, n):
    if name == "per_cell":
        kernels[name](((n + 31) // 32, (n + 7) // 8, n), (32, 8, 1), (src, dst, np.int32(n)))
    elif name == "column":
        kernels[name](((n + 31) // 32, (n + 7) // 8, 1), (32, 8, 1), (src, dst, np.int32(n)))
    else:
        kernels[name](((n + 63) // 64, (n + 7) // 8, (n + 15) // 16), (32, 8, 1), (src, dst, np.int32(n)))


def timed(run, reps):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    run()
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    return statistics.median(times)


def reference(field):
    a = field
    inner = sum(
        a[1 + dz : a.shape[0] - 1 + dz, 1 + dy : a.shape[1] - 1 + dy, 1 + dx : a.shape[2] - 1 + dx]
        for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
    )
    return inner / 27


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    print(f"device {props['name'].decode()}, n = {args.n}, {args.reps} runs, median us")
    ok = True
    for dtype, ctype in ((np.float64, "double"), (np.float32, "float")):
        ks = kernels(ctype)
        tol = 1e-12 if dtype == np.float64 else 2e-5
        small = 34
        host = np.random.default_rng(1).random((small + 2,) * 3).astype(dtype)
        out = cp.zeros_like(cp.asarray(host))
        launch(ks, "per_cell", cp.asarray(host), out, small)
        err = np.abs(cp.asnumpy(out)[1:-1, 1:-1, 1:-1] - reference(host)).max()
        ok &= bool(err <= tol)
        print(f"{ctype}: per_cell against NumPy on {small}^3: max difference {err:.2e}")
        n = args.n
        src = cp.random.default_rng(2).random((n + 2,) * 3, dtype=dtype)
        want = cp.zeros_like(src)
        launch(ks, "per_cell", src, want, n)
        copy_dst = cp.empty_like(src)
        copy_us = timed(lambda: cp.copyto(copy_dst, src), args.reps)
        print(f"{ctype}: copy of the field {copy_us:.1f}")
        for name in ("per_cell", "column", "chunked"):
            dst = cp.zeros_like(src)
            us = timed(lambda: launch(ks, name, src, dst, n), args.reps)
            err = float(cp.abs(dst[1:-1, 1:-1, 1:-1] - want[1:-1, 1:-1, 1:-1]).max())
            ok &= err <= tol
            print(f"{ctype}: {name} {us:.1f} ({100 * copy_us / us:.0f} % of the copy speed), "
                  f"max difference from per_cell {err:.2e}")
        del src, want, copy_dst, dst
        cp.get_default_memory_pool().free_all_blocks()
    print("verified" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
