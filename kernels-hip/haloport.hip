/*
 * haloport.hip: the HIP entry of the exchange's kernels. hipcc compiles this file to code objects
 * for the AMD targets backend-hip embeds, beside the stencil's (haloport_stencil.hip); the
 * kernels themselves are the shared sources of kernels-cu/ (included,
 * not copied), with hp_amd.h supplying what AMD does differently.
 */
#include <hip/hip_runtime.h>
#include "hp_kernels.cuh"
#include "hp_regions.cuh"
