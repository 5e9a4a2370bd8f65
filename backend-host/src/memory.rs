//! Host memory standing in for device memory and for pinned host memory.
//!
//! Both are page-aligned, zeroed heap allocations; on the host backend a "device address" is
//! the host address. Host memory is always coherent: a request for non-coherent memory is served
//! as coherent and reported as such, as the CUDA backend does.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use haloport_core::{Coherence, DeviceMemory, Error, PinnedMemory, Result};

const PAGE: usize = 4096;

/// One page-aligned, zeroed allocation, freed on drop.
pub struct HostAllocation {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
    requested: Coherence,
}

// SAFETY: the allocation is exclusively owned; concurrent access is ordered by streams and
// by the callers' protocols, as for memory on a real device.
unsafe impl Send for HostAllocation {}

impl HostAllocation {
    pub(crate) fn new(bytes: usize, requested: Coherence, kind: &'static str) -> Result<Self> {
        // Zero-byte allocations are legal in the trait; give them a page so pointers stay valid.
        let layout =
            Layout::from_size_align(bytes.max(1), PAGE).map_err(|_| Error::OutOfMemory {
                backend: "host",
                bytes,
                kind,
            })?;
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(Error::OutOfMemory {
            backend: "host",
            bytes,
            kind,
        })?;
        Ok(HostAllocation {
            ptr,
            len: bytes,
            layout,
            requested,
        })
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Checks that `[offset, offset + bytes)` lies inside this allocation.
    pub(crate) fn check_range(&self, offset: usize, bytes: usize, what: &str) -> Result<()> {
        haloport_core::backend::check_range("host", what, offset, bytes, self.len)
    }
}

impl Drop for HostAllocation {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with this layout by alloc_zeroed and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl DeviceMemory for HostAllocation {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn device_addr(&self) -> u64 {
        self.addr()
    }
}

impl PinnedMemory for HostAllocation {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn host_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn device_addr(&self) -> u64 {
        self.addr()
    }

    fn coherence_requested(&self) -> Coherence {
        self.requested
    }

    fn coherence_served(&self) -> Coherence {
        Coherence::Coherent
    }
}
