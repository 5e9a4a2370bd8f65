/*
 * haloport_stencil.cu: the CUDA entry of the stencil's kernels. nvcc compiles it to a fatbin of
 * its own, beside haloport.cu's (the exchange's kernels), and backend-cuda embeds both.
 */
#include "hp_stencil.cuh"
