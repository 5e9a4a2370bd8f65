/*
 * haloport_stencil.hip: the HIP entry of the stencil's kernels. hipcc compiles it to code
 * objects of their own, beside haloport.hip's (the exchange's kernels), and backend-hip embeds
 * both; hp_amd.h supplies what AMD does differently, as for the exchange.
 */
#include <hip/hip_runtime.h>
#include "hp_stencil.cuh"
