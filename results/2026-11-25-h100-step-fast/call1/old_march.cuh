/* Rows y - 1 .. y + 2 (the last only when the thread has two rows) of one plane, columns x - 1
 * .. x + 1, from `p` at (x, y) of that plane. */
template <typename T>
__device__ __forceinline__ void old_march_load(T (&plane)[12], const T* p, int64_t ax, bool two) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        if (r < 3 || two) {
            const T* row = p + (int64_t)(r - 1) * ax;
            plane[3 * r] = row[-1];
            plane[3 * r + 1] = row[0];
            plane[3 * r + 2] = row[1];
        } else {
            plane[3 * r] = plane[3 * r + 1] = plane[3 * r + 2] = T(0);
        }
    }
}

/* The 27 points around row `r0` + 1 of the middle plane, summed in hp_stencil27_as's order (dz,
 * dy, dx, each from -1; from 0). */
template <typename T>
__device__ __forceinline__ T old_march_sum(const T (&lo)[12], const T (&mid)[12], const T (&hi)[12],
                                          int r0) {
    T sum = T(0);
#pragma unroll
    for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) sum += lo[3 * (r0 + dy) + dx];
    }
#pragma unroll
    for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) sum += mid[3 * (r0 + dy) + dx];
    }
#pragma unroll
    for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) sum += hi[3 * (r0 + dy) + dx];
    }
    return sum;
}

/* The full 27-point stencil over one component, marching in z (HP_STENCIL_FORM_MARCH): tiles of
 * 32 x (blockDim.x / 32 * HP_MARCH_ROWS) x HP_MARCH_Z points, a block per tile, blocks striding
 * over tiles. A thread keeps planes z - 1, z, z + 1 of its neighbourhood in registers and loads
 * one new plane per step: 6 loads per point (two rows a thread), where the point form does 27.
 * The sums are hp_stencil27_as's, in its order: the same bits. */
template <typename T>
__device__ __forceinline__ void old_stencil27_march(const hp_stencil_args& a) {
    const T* __restrict__ in = (const T*)a.in;
    T* __restrict__ out = (T*)a.out;
    const int64_t ax = (int64_t)a.alloc[0];
    const int64_t plane = (int64_t)(a.alloc[0] * a.alloc[1]);
    const uint64_t rows = (uint64_t)(blockDim.x / HP_MARCH_X) * HP_MARCH_ROWS;
    const uint64_t bx = a.end[0] - a.begin[0], by = a.end[1] - a.begin[1],
                   bz = a.end[2] - a.begin[2];
    const uint64_t tiles_x = (bx + HP_MARCH_X - 1) / HP_MARCH_X;
    const uint64_t tiles_y = (by + rows - 1) / rows;
    const uint64_t tiles = tiles_x * tiles_y * ((bz + HP_MARCH_Z - 1) / HP_MARCH_Z);
    const uint64_t tx = threadIdx.x % HP_MARCH_X, ty = threadIdx.x / HP_MARCH_X;
    const T scale = T(1) / T(27u);
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t rest = t / tiles_x;
        const uint64_t x = a.begin[0] + (t % tiles_x) * HP_MARCH_X + tx;
        const uint64_t y = a.begin[1] + (rest % tiles_y) * rows + ty * HP_MARCH_ROWS;
        if (x >= a.end[0] || y >= a.end[1]) continue;
        const bool two = y + 1 < a.end[1];
        const uint64_t z0 = a.begin[2] + (rest / tiles_y) * HP_MARCH_Z;
        const uint64_t z1 = z0 + HP_MARCH_Z < a.end[2] ? z0 + HP_MARCH_Z : a.end[2];
        const T* p = in + (x + a.alloc[0] * (y + a.alloc[1] * (z0 - 1)));
        T* o = out + (x + a.alloc[0] * (y + a.alloc[1] * z0));
        T lo[12], mid[12], hi[12];
        old_march_load(lo, p, ax, two);
        old_march_load(mid, p + plane, ax, two);
        p += 2 * plane;
        for (uint64_t z = z0; z < z1; ++z, p += plane, o += plane) {
            old_march_load(hi, p, ax, two);
            o[0] = old_march_sum(lo, mid, hi, 0) * scale;
            if (two) o[ax] = old_march_sum(lo, mid, hi, 1) * scale;
#pragma unroll
            for (int i = 0; i < 12; ++i) {
                lo[i] = mid[i];
                mid[i] = hi[i];
            }
        }
    }
}

