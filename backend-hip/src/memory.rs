//! Device memory, mapped pinned host memory and other processes' device memory (opened from
//! IPC handles) on HIP, freed or unmapped on drop.
//!
//! Pinned memory is `hipHostMalloc(Mapped | Portable | Coherent or NonCoherent)`: page-locked,
//! mapped into the device (kernels use the address `hipHostGetDevicePointer` gives), never
//! write-combined. Unlike CUDA, AMD really serves non-coherent memory: its contents are defined
//! only at synchronization points (the baseline's use, thesis 3.3.2). Through the HIP-on-NVIDIA
//! layer a non-coherent request is served as coherent, and [`served`] says so.
//!
//! ## IPC
//! Device memory is exported with `hipIpcGetMemHandle` on its base: every [`HipDeviceMemory`]
//! is one whole `hipMalloc` allocation, which is what an IPC handle names (SPEC 11). Another
//! process maps it with `hipIpcOpenMemHandle(hipIpcMemLazyEnablePeerAccess)` as a
//! [`HipPeerMemory`], unmapped with `hipIpcCloseMemHandle` on drop; the owner frees the memory,
//! and must not before every peer has closed it (the transport orders teardown). HIP, like CUDA,
//! refuses to open a handle in the process that exported it: the handles this process exported
//! are kept (while their allocations live) so that opening one is refused up front, naming the
//! cause. That list is the only state shared between threads here, behind a mutex.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use haloport_core::{Coherence, DeviceMemory, Error, IpcHandle, PinnedMemory, Result};

use crate::ffi;

/// A HIP IPC handle's bytes.
type HandleBytes = [u8; ffi::IPC_HANDLE_SIZE];

/// The IPC handles this process exported (shared with the other GPU backend, in core).
pub(crate) type ExportedHandles = haloport_core::backend::ExportedHandles<{ ffi::IPC_HANDLE_SIZE }>;

/// This process's exported handles.
static EXPORTED: ExportedHandles = ExportedHandles::new();

/// The bytes of a HIP IPC handle, once `handle` is shown to be one: made by this backend and as
/// long as `hipIpcMemHandle_t`.
///
/// # Errors
/// [`Error::InvalidInput`] naming the backend that made it or its length.
pub(crate) fn ipc_handle_bytes(handle: &IpcHandle) -> Result<HandleBytes> {
    handle.vendor_bytes("hip", "hipIpcMemHandle_t")
}

/// `hipMalloc`ed memory: always a whole allocation, so it can be exported.
pub struct HipDeviceMemory {
    ptr: *mut c_void,
    len: usize,
    /// Whether [`HipDeviceMemory::export_ipc`] recorded it in [`EXPORTED`].
    exported: AtomicBool,
}

// SAFETY: the allocation is exclusively owned; HIP device memory may be used from any thread.
unsafe impl Send for HipDeviceMemory {}

impl HipDeviceMemory {
    pub(crate) fn new(bytes: usize) -> Result<Self> {
        Ok(HipDeviceMemory {
            ptr: ffi::malloc_zeroed(bytes)?,
            len: bytes,
            exported: AtomicBool::new(false),
        })
    }

    /// The IPC handle of this allocation, for other processes of the node.
    ///
    /// # Errors
    /// The runtime's error.
    pub(crate) fn export_ipc(&self) -> Result<IpcHandle> {
        let bytes = ffi::ipc_get_mem_handle(self.ptr, self.len)?;
        EXPORTED.record(self.ptr as u64, bytes);
        self.exported.store(true, Ordering::Relaxed);
        Ok(IpcHandle {
            backend: "hip".into(),
            bytes: bytes.to_vec(),
            len: self.len,
        })
    }
}

impl Drop for HipDeviceMemory {
    fn drop(&mut self) {
        if self.exported.load(Ordering::Relaxed) {
            EXPORTED.forget(self.ptr as u64);
        }
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

/// Another process's device memory, mapped into this one by `hipIpcOpenMemHandle`: kernels of
/// this process store into it; dropping it unmaps it (the owner frees the memory).
pub struct HipPeerMemory {
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: the mapping is exclusively owned; HIP device addresses may be used from any thread.
unsafe impl Send for HipPeerMemory {}

impl HipPeerMemory {
    /// Opens `handle`, made by another process's [`HipDeviceMemory::export_ipc`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a handle of another backend, of the wrong length, or exported
    /// by this very process; the runtime's error otherwise.
    pub(crate) fn open(handle: &IpcHandle) -> Result<Self> {
        let bytes = ipc_handle_bytes(handle)?;
        if EXPORTED.contains(&bytes) {
            return Err(Error::InvalidInput(format!(
                "hip: this IPC handle names {} bytes of device memory this process exported \
                 itself; HIP opens a handle only in another process (hipIpcOpenMemHandle): use \
                 the allocation directly",
                handle.len
            )));
        }
        Ok(HipPeerMemory {
            ptr: ffi::ipc_open_mem_handle(&bytes, handle.len)?,
            len: handle.len,
        })
    }
}

impl std::fmt::Debug for HipPeerMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipPeerMemory")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for HipPeerMemory {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipIpcOpenMemHandle and is closed once, after the streams using
        // it (their Drop waits for their work), which transports drop first.
        if let Err(e) = unsafe { ffi::ipc_close_mem_handle(self.ptr) } {
            tracing::error!("{e}");
        }
    }
}

impl DeviceMemory for HipPeerMemory {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn device_addr(&self) -> u64 {
        self.ptr as u64
    }
}

/// The kind of pinned memory the runtime really serves when `asked` is requested. AMD's runtime
/// serves both kinds. The HIP-on-NVIDIA layer serves non-coherent as coherent: CUDA has one kind
/// (`nvidia-layer/hipnv_map.h`), which keeps every promise non-coherent memory makes.
pub(crate) fn served(asked: Coherence) -> Coherence {
    if cfg!(feature = "nvidia-layer") {
        Coherence::Coherent
    } else {
        asked
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

    /// The kind asked for on AMD; coherent through the HIP-on-NVIDIA layer (CUDA has one kind).
    fn coherence_served(&self) -> Coherence {
        served(self.coherence)
    }
}
