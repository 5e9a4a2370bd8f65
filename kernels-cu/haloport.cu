/*
 * haloport.cu: the CUDA entry. nvcc compiles this file to a fatbin (sm_80, sm_90 and PTX) that
 * backend-cuda embeds; everything it compiles comes from the shared sources it includes.
 */
#include "hp_kernels.cuh"
#include "hp_regions.cuh"
