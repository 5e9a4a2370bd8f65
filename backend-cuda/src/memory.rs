//! Device memory, mapped pinned host memory and other processes' device memory (opened from
//! IPC handles) on CUDA, freed or unmapped on drop.
//!
//! Pinned memory is `cuMemHostAlloc(PORTABLE | DEVICEMAP)`: page-locked, mapped into the device
//! (kernels use the address `cuMemHostGetDevicePointer` gives), portable across contexts, and
//! deliberately not write-combined, since the CPU reads flags and buffers from it. CUDA has no
//! non-coherent pinned memory: a non-coherent request is served as coherent and says so.
//!
//! ## IPC
//! Device memory is exported with `cuIpcGetMemHandle` on its base: every [`CudaDeviceMemory`]
//! is one whole `cuMemAlloc` allocation, which is what a CUDA IPC handle names (SPEC 11).
//! Another process maps it with `cuIpcOpenMemHandle(LAZY_ENABLE_PEER_ACCESS)` as a
//! [`CudaPeerMemory`], unmapped with `cuIpcCloseMemHandle` on drop; the owner frees the memory,
//! and must not before every peer has closed it (the transport orders teardown). CUDA never
//! opens a handle in the process that exported it: the handles this process exported are kept
//! (while their allocations live) so that opening one is refused up front, naming the cause,
//! instead of the driver's ambiguous `CUDA_ERROR_INVALID_CONTEXT`. That list is the only state
//! shared between threads here, behind a mutex.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use haloport_core::{Coherence, DeviceMemory, Error, IpcHandle, PinnedMemory, Result};

use crate::ffi;
use crate::Context;

/// A CUDA IPC handle's bytes.
type HandleBytes = [u8; ffi::IPC_HANDLE_SIZE];

/// The IPC handles this process exported (shared with the other GPU backend, in core).
pub(crate) type ExportedHandles = haloport_core::backend::ExportedHandles<{ ffi::IPC_HANDLE_SIZE }>;

/// This process's exported handles.
static EXPORTED: ExportedHandles = ExportedHandles::new();

/// The bytes of a CUDA IPC handle, once `handle` is shown to be one: made by this backend and
/// as long as `CUipcMemHandle`.
///
/// # Errors
/// [`Error::InvalidInput`] naming the backend that made it or its length.
pub(crate) fn ipc_handle_bytes(handle: &IpcHandle) -> Result<HandleBytes> {
    handle.vendor_bytes("cuda", "CUipcMemHandle")
}

/// `cuMemAlloc`ed memory: always a whole allocation, so it can be exported.
pub struct CudaDeviceMemory {
    ptr: ffi::CUdeviceptr,
    len: usize,
    /// Whether [`CudaDeviceMemory::export_ipc`] recorded it in [`EXPORTED`].
    exported: AtomicBool,
    _ctx: Arc<Context>,
}

impl CudaDeviceMemory {
    pub(crate) fn new(ctx: &Arc<Context>, bytes: usize) -> Result<Self> {
        let ptr = ffi::mem_alloc_zeroed(bytes)?;
        tracing::debug!("cuMemAlloc: {bytes} bytes at {ptr:#x}");
        Ok(CudaDeviceMemory {
            ptr,
            len: bytes,
            exported: AtomicBool::new(false),
            _ctx: Arc::clone(ctx),
        })
    }

    /// The IPC handle of this allocation, for other processes of the node.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn export_ipc(&self) -> Result<IpcHandle> {
        let bytes = ffi::ipc_get_mem_handle(self.ptr, self.len)?;
        EXPORTED.record(self.ptr, bytes);
        self.exported.store(true, Ordering::Relaxed);
        Ok(IpcHandle {
            backend: "cuda".into(),
            bytes: bytes.to_vec(),
            len: self.len,
        })
    }
}

impl Drop for CudaDeviceMemory {
    fn drop(&mut self) {
        if self.exported.load(Ordering::Relaxed) {
            EXPORTED.forget(self.ptr);
        }
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

/// Another process's device memory, mapped into this context by `cuIpcOpenMemHandle`: kernels
/// of this process store into it; dropping it unmaps it (the owner frees the memory).
pub struct CudaPeerMemory {
    ptr: ffi::CUdeviceptr,
    len: usize,
    _ctx: Arc<Context>,
}

impl CudaPeerMemory {
    /// Opens `handle`, made by another process's [`CudaDeviceMemory::export_ipc`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a handle of another backend, of the wrong length, or exported
    /// by this very process; the driver's error otherwise.
    pub(crate) fn open(ctx: &Arc<Context>, handle: &IpcHandle) -> Result<Self> {
        let bytes = ipc_handle_bytes(handle)?;
        if EXPORTED.contains(&bytes) {
            return Err(Error::InvalidInput(format!(
                "cuda: this IPC handle names {} bytes of device memory this process exported \
                 itself; CUDA opens a handle only in another process (cuIpcOpenMemHandle would \
                 fail with CUDA_ERROR_INVALID_CONTEXT): use the allocation directly",
                handle.len
            )));
        }
        let ptr = ffi::ipc_open_mem_handle(&bytes, handle.len)?;
        tracing::debug!(
            "cuIpcOpenMemHandle: another process's {} bytes mapped at {ptr:#x}",
            handle.len
        );
        Ok(CudaPeerMemory {
            ptr,
            len: handle.len,
            _ctx: Arc::clone(ctx),
        })
    }
}

impl std::fmt::Debug for CudaPeerMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaPeerMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for CudaPeerMemory {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuIpcOpenMemHandle and is closed once; streams using it were
        // synchronized when they were dropped (CudaStream's Drop), and transports drop streams
        // first.
        if let Err(e) = unsafe { ffi::ipc_close_mem_handle(self.ptr) } {
            tracing::error!("{e}");
        }
    }
}

impl DeviceMemory for CudaPeerMemory {
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
