//! Device memory and mapped pinned host memory on HIP, freed on drop.
//!
//! Pinned memory is `hipHostMalloc(Mapped | Portable | Coherent or NonCoherent)`: page-locked,
//! mapped into the device (kernels use the address `hipHostGetDevicePointer` gives), never
//! write-combined. Unlike CUDA, AMD really serves non-coherent memory: its contents are defined
//! only at synchronization points (the baseline's use, thesis 3.3.2).

use haloport_core::{Coherence, DeviceMemory, PinnedMemory, Result};

use crate::ffi;

/// `hipMalloc`ed memory.
pub struct HipDeviceMemory {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

// SAFETY: the allocation is exclusively owned; HIP device memory may be used from any thread.
unsafe impl Send for HipDeviceMemory {}

impl HipDeviceMemory {
    pub(crate) fn new(bytes: usize) -> Result<Self> {
        Ok(HipDeviceMemory {
            ptr: ffi::malloc_zeroed(bytes)?,
            len: bytes,
        })
    }
}

impl Drop for HipDeviceMemory {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipMalloc and is freed once, after the streams using it (their
        // Drop waits for their work).
        if let Err(e) = unsafe { ffi::free(self.ptr) } {
            tracing::error!("{e}");
        }
    }
}

impl DeviceMemory for HipDeviceMemory {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn device_addr(&self) -> u64 {
        self.ptr as u64
    }
}

/// `hipHostMalloc`ed, device-mapped memory of the coherence asked for.
pub struct HipPinnedMemory {
    host: *mut u8,
    device: u64,
    len: usize,
    coherence: Coherence,
}

// SAFETY: the allocation is exclusively owned; HIP pinned memory may be used from any thread.
unsafe impl Send for HipPinnedMemory {}

impl HipPinnedMemory {
    pub(crate) fn new(bytes: usize, coherence: Coherence) -> Result<Self> {
        let (host, device) = ffi::host_malloc_mapped(bytes, coherence != Coherence::NonCoherent)?;
        Ok(HipPinnedMemory {
            host,
            device,
            len: bytes,
            coherence,
        })
    }
}

impl Drop for HipPinnedMemory {
    fn drop(&mut self) {
        // SAFETY: host came from hipHostMalloc and is freed once, after the streams using it.
        if let Err(e) = unsafe { ffi::host_free(self.host) } {
            tracing::error!("{e}");
        }
    }
}

impl PinnedMemory for HipPinnedMemory {
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
        self.coherence
    }

    /// HIP allocates what was asked for.
    fn coherence_served(&self) -> Coherence {
        self.coherence
    }
}
