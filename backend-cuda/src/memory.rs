//! Device memory and mapped pinned host memory on CUDA, freed on drop.
//!
//! Pinned memory is `cuMemHostAlloc(PORTABLE | DEVICEMAP)`: page-locked, mapped into the device
//! (kernels use the address `cuMemHostGetDevicePointer` gives), portable across contexts, and
//! deliberately not write-combined, since the CPU reads flags and buffers from it. CUDA has no
//! non-coherent pinned memory: a non-coherent request is served as coherent and says so.

use std::sync::Arc;

use haloport_core::{Coherence, DeviceMemory, PinnedMemory, Result};

use crate::ffi;
use crate::Context;

/// `cuMemAlloc`ed memory.
pub struct CudaDeviceMemory {
    ptr: ffi::CUdeviceptr,
    len: usize,
    _ctx: Arc<Context>,
}

impl CudaDeviceMemory {
    pub(crate) fn new(ctx: &Arc<Context>, bytes: usize) -> Result<Self> {
        Ok(CudaDeviceMemory {
            ptr: ffi::mem_alloc_zeroed(bytes)?,
            len: bytes,
            _ctx: Arc::clone(ctx),
        })
    }
}

impl Drop for CudaDeviceMemory {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc and is freed once; streams using it were synchronized
        // when they were dropped (CudaStream's Drop), and strategies drop streams first.
        if let Err(e) = unsafe { ffi::mem_free(self.ptr) } {
            tracing::error!("{e}");
        }
    }
}

impl DeviceMemory for CudaDeviceMemory {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn device_addr(&self) -> u64 {
        self.ptr
    }
}

/// `cuMemHostAlloc`ed, device-mapped memory.
pub struct CudaPinnedMemory {
    host: *mut u8,
    device: ffi::CUdeviceptr,
    len: usize,
    requested: Coherence,
    _ctx: Arc<Context>,
}

// SAFETY: the allocation is exclusively owned; CUDA pinned memory may be used from any thread.
unsafe impl Send for CudaPinnedMemory {}

impl CudaPinnedMemory {
    pub(crate) fn new(ctx: &Arc<Context>, bytes: usize, requested: Coherence) -> Result<Self> {
        let (host, device) = ffi::host_alloc_mapped(bytes)?;
        Ok(CudaPinnedMemory {
            host,
            device,
            len: bytes,
            requested,
            _ctx: Arc::clone(ctx),
        })
    }
}

impl Drop for CudaPinnedMemory {
    fn drop(&mut self) {
        // SAFETY: host came from cuMemHostAlloc and is freed once, after the streams using it.
        if let Err(e) = unsafe { ffi::host_free(self.host) } {
            tracing::error!("{e}");
        }
    }
}

impl PinnedMemory for CudaPinnedMemory {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn host_ptr(&self) -> *mut u8 {
        self.host
    }

    fn device_addr(&self) -> u64 {
        self.device
    }

    fn coherence_requested(&self) -> Coherence {
        self.requested
    }

    fn coherence_served(&self) -> Coherence {
        Coherence::Coherent
    }
}
