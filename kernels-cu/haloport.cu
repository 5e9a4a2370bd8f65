/*
 * haloport.cu: the CUDA entry of the exchange's kernels (the thesis's and the library's). nvcc
 * compiles this file to a fatbin (sm_80, sm_90 and PTX) that backend-cuda embeds, beside the
 * stencil's (haloport_stencil.cu); everything it compiles comes from the shared sources it
 * includes.
 */
#include "hp_kernels.cuh"
#include "hp_regions.cuh"
