/*
 * haloport.hip: the HIP entry. hipcc compiles this file to code objects for the AMD targets
 * backend-hip embeds; the kernels themselves are the shared sources of kernels-cu/ (included,
 * not copied), with hp_amd.h supplying what AMD does differently.
 */
#include <hip/hip_runtime.h>
#include "hp_kernels.cuh"
#include "hp_regions.cuh"
