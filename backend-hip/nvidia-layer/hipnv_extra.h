/*
 * hipnv_extra.h: the one HIP runtime function haloport's HIP backend calls that Debian's HIP 5.2
 * header does not declare, declared as newer HIP (ROCm 6.x hip_runtime_api.h) does, with the same
 * parameter list. Only the HIP-on-NVIDIA build reads it (bindgen, beside hip_runtime_api.h, and
 * the layer, which implements it on cuLaunchCooperativeKernel): with it, the backend's
 * `launch_cooperative` path (cfg haloport_hip_module_cooperative), which no HIP 5.2 build
 * compiles, is built and run. The AMD build never sees this file.
 */
#ifndef HIPNV_EXTRA_H
#define HIPNV_EXTRA_H

#include <hip/hip_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX,
                                            unsigned int gridDimY, unsigned int gridDimZ,
                                            unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes,
                                            hipStream_t stream, void** kernelParams);

#ifdef __cplusplus
}
#endif

#endif /* HIPNV_EXTRA_H */
