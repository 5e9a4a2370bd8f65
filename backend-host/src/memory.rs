//! Host memory standing in for device memory, for pinned host memory, and for another
//! process's device memory opened from an IPC handle.
//!
//! On the host backend a "device address" is the host address. Host memory is always coherent:
//! a request for non-coherent memory is served as coherent and reported as such, as the CUDA
//! backend does.
//!
//! ## Device memory is shared memory
//! The `ipc` transport (SPEC 12) has each rank store straight into its peers' receive buffers
//! and flags, which live in device memory. So device memory is memory every process of the node
//! can map: an anonymous shared-memory file (`memfd_create`, named [`MEMFD_NAME`]) sized to
//! whole pages and mapped `MAP_SHARED`, zeroed and page-aligned. The [`HostAllocation`] keeps
//! the file open for its whole life; its IPC handle is this process's id and the file's
//! descriptor ([`HostAllocation::ipc_handle`]), and another process opens
//! `/proc/PID/fd/FD` and maps the same pages ([`HostPeerMemory::open`]). Each device
//! allocation holds one file descriptor.
//!
//! Pinned host memory is a page-aligned, zeroed heap allocation: no other process opens it.
//!
//! ## Visibility and lifetime
//! Every mapping of the file addresses the same physical pages, so what one process stores
//! another loads, under the language's memory model: flags are atomics (`AtomicU32`, Release
//! to raise, Acquire to observe), which also order the plain stores of the data they guard.
//! The pages live while any mapping or descriptor does: the owner dropping its allocation
//! while a peer still maps it (or the reverse) frees nothing the other still uses. Writes into
//! an allocation its owner has dropped are lost, never a fault.
//!
//! ## Freed device memory is detectable
//! Freeing device memory releases its pages but keeps its addresses reserved and
//! inaccessible (a `PROT_NONE` mapping) for the last [`FREED_REMEMBERED`] allocations, so no
//! other mapping can take their place meanwhile. The region kernels refuse to run on a field
//! or buffer inside one, failing their stream with a "use after free" error instead (any other
//! touch faults). On a GPU such a kernel would corrupt whatever took the memory's place; here
//! the mistake shows, which is how the tests prove that no sequence of calls lets the exchange
//! touch memory the program already freed.
//!
//! ## Threading
//! Allocations are `Send`; concurrent access from several threads (stream workers, kernel
//! blocks, the CPU) is ordered by streams and by the callers' flag protocols, as for memory on
//! a real device.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::VecDeque;
use std::ffi::CStr;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

use haloport_core::{Coherence, DeviceMemory, Error, IpcHandle, PinnedMemory, Result};

use crate::ffi;

const PAGE: usize = 4096;

/// How many freed device allocations [`freed_at`] remembers.
pub const FREED_REMEMBERED: usize = 4096;

/// Address ranges `[start, end)` of device allocations freed lately, oldest first, each
/// still reserved (so no other mapping lies there).
static FREED: Mutex<VecDeque<(u64, u64)>> = Mutex::new(VecDeque::new());

fn freed() -> std::sync::MutexGuard<'static, VecDeque<(u64, u64)>> {
    FREED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when `addr` lies in device memory this process freed lately (its reservation still
/// held, so nothing else can lie there).
pub(crate) fn freed_at(addr: u64) -> bool {
    addr != 0 && freed().iter().any(|&(a, b)| (a..b).contains(&addr))
}

/// The name of the shared-memory files behind device memory: `/proc/PID/fd/FD` of one of them
/// reads `/memfd:haloport-device-memory (deleted)`, which [`HostPeerMemory::open`] checks so
/// that a stale or wrong handle cannot map some other file.
pub const MEMFD_NAME: &CStr = c"haloport-device-memory";

/// Length of the host backend's [`IpcHandle::bytes`]: the exporting process's id (`u32`) then
/// the descriptor of its shared-memory file (`i32`), both little-endian.
pub const IPC_HANDLE_BYTES: usize = 8;

/// Where an allocation's bytes come from.
enum Backing {
    /// `alloc_zeroed` with this layout (pinned host memory).
    Heap { layout: Layout },
    /// A `MAP_SHARED` mapping of `map_len` bytes of `file`, which stays open so that other
    /// processes can open it (device memory).
    Shared { file: File, map_len: usize },
}

/// One page-aligned, zeroed allocation, freed on drop: device memory (a shared mapping other
/// processes of the node can open) or pinned host memory (a heap allocation).
pub struct HostAllocation {
    ptr: NonNull<u8>,
    len: usize,
    requested: Coherence,
    backing: Backing,
}

// SAFETY: the allocation is exclusively owned; concurrent access is ordered by streams and
// by the callers' protocols, as for memory on a real device.
unsafe impl Send for HostAllocation {}

/// `bytes` rounded up to whole pages, at least one page (zero-byte allocations are legal in the
/// trait; a page keeps their pointers valid).
fn whole_pages(bytes: usize) -> Option<usize> {
    bytes.max(1).checked_next_multiple_of(PAGE)
}

impl HostAllocation {
    /// A zeroed, page-aligned heap allocation (pinned host memory).
    pub(crate) fn heap(bytes: usize, requested: Coherence, kind: &'static str) -> Result<Self> {
        let oom = || Error::OutOfMemory {
            backend: "host",
            bytes,
            kind,
        };
        let layout = Layout::from_size_align(bytes.max(1), PAGE).map_err(|_| oom())?;
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(oom)?;
        Ok(HostAllocation {
            ptr,
            len: bytes,
            requested,
            backing: Backing::Heap { layout },
        })
    }

    /// A zeroed, page-aligned shared mapping other processes of the node can open (device
    /// memory).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the size overflows or `mmap` finds no memory;
    /// [`Error::Backend`] naming `memfd_create`, `ftruncate` or `mmap` otherwise.
    pub(crate) fn shared(bytes: usize, kind: &'static str) -> Result<Self> {
        let oom = || Error::OutOfMemory {
            backend: "host",
            bytes,
            kind,
        };
        let map_len = whole_pages(bytes).ok_or_else(oom)?;
        let context = || format!("allocating {bytes} bytes of {kind}");
        let file = ffi::memfd_create(MEMFD_NAME, context)?;
        ffi::ftruncate(&file, map_len, context)?;
        let ptr = ffi::mmap_shared(&file, map_len, context).map_err(|e| match e {
            Error::Backend { code, .. } if code == i64::from(libc::ENOMEM) => oom(),
            other => other,
        })?;
        Ok(HostAllocation {
            ptr,
            len: bytes,
            requested: Coherence::Coherent,
            backing: Backing::Shared { file, map_len },
        })
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Checks that `[offset, offset + bytes)` lies inside this allocation.
    pub(crate) fn check_range(&self, offset: usize, bytes: usize, what: &str) -> Result<()> {
        haloport_core::backend::check_range("host", what, offset, bytes, self.len)
    }

    /// The handle another process of the node opens with [`HostPeerMemory::open`]: this
    /// process's id and the descriptor of the allocation's shared-memory file
    /// ([`IPC_HANDLE_BYTES`]), valid while the allocation lives.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for pinned host memory, which is not shared.
    pub(crate) fn ipc_handle(&self) -> Result<IpcHandle> {
        let Backing::Shared { file, .. } = &self.backing else {
            return Err(Error::InvalidInput(
                "host: export_ipc: the allocation is pinned host memory, a heap allocation no \
                 other process can open; only device memory (alloc_device) can be exported"
                    .into(),
            ));
        };
        let mut bytes = Vec::with_capacity(IPC_HANDLE_BYTES);
        bytes.extend_from_slice(&std::process::id().to_le_bytes());
        bytes.extend_from_slice(&file.as_raw_fd().to_le_bytes());
        Ok(IpcHandle {
            backend: "host".into(),
            bytes,
            len: self.len,
        })
    }
}

impl Drop for HostAllocation {
    fn drop(&mut self) {
        match &self.backing {
            Backing::Heap { layout } => {
                // SAFETY: ptr was allocated with this layout by alloc_zeroed and is freed once.
                unsafe { dealloc(self.ptr.as_ptr(), *layout) }
            }
            Backing::Shared { map_len, .. } => {
                // SAFETY: ptr and map_len are the mapping `shared` made, released only here;
                // the allocation is dropped, so no reference into it remains, and Backend's
                // contracts keep queued work from outliving it. The file closes afterwards
                // with the field.
                if let Err(e) = unsafe { ffi::quarantine(self.ptr, *map_len) } {
                    tracing::error!("host: freeing device memory: {e}");
                    // SAFETY: as above; without a reservation, the range is simply unmapped.
                    if let Err(e) = unsafe { ffi::munmap(self.ptr, *map_len) } {
                        tracing::error!("host: freeing device memory: {e}");
                    }
                    return;
                }
                let start = self.addr();
                let mut freed = freed();
                freed.push_back((start, start + *map_len as u64));
                if freed.len() > FREED_REMEMBERED {
                    if let Some((a, b)) = freed.pop_front() {
                        if let Some(at) = NonNull::new(a as *mut u8) {
                            // SAFETY: a reservation this code made (quarantine above), which
                            // nothing can touch; released once, here.
                            if let Err(e) = unsafe { ffi::munmap(at, (b - a) as usize) } {
                                tracing::error!("host: releasing freed addresses: {e}");
                            }
                        }
                    }
                }
            }
        }
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

/// Another process's device memory, mapped into this one from its [`IpcHandle`]: kernels and
/// the CPU of this process store into it at [`DeviceMemory::device_addr`] (a host address,
/// different from the owner's). Dropping it unmaps this process's view; the owner frees the
/// memory.
pub struct HostPeerMemory {
    ptr: NonNull<u8>,
    len: usize,
    map_len: usize,
}

// SAFETY: the mapping is owned by this value alone; concurrent access to the shared pages is
// ordered by the transport's flag protocol (atomics), as for a GPU's peer memory.
unsafe impl Send for HostPeerMemory {}

impl HostPeerMemory {
    /// Opens device memory another process of this node exported: `/proc/PID/fd/FD` of the
    /// handle, checked to be haloport device memory of at least the handle's size, mapped
    /// `MAP_SHARED`. The process that exported it must still hold the allocation, and this
    /// process must be allowed to inspect it (same user; the kernel's ptrace read-access rules).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a handle of another backend, a malformed handle, or one whose
    /// descriptor names a file that is not haloport device memory (or is smaller than the
    /// handle says); [`Error::Backend`] naming `open`, `readlink`, `fstat` or `mmap` and errno
    /// otherwise (`ENOENT`: the process has exited or freed the allocation; `EACCES`: another
    /// user's process).
    pub(crate) fn open(handle: &IpcHandle) -> Result<Self> {
        if handle.backend != "host" {
            return Err(Error::InvalidInput(format!(
                "host: open_ipc: the handle was exported by the {:?} backend; the host backend \
                 opens only its own handles",
                handle.backend
            )));
        }
        let (pid, fd) = decode(&handle.bytes)?;
        let path = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        let what = || {
            format!(
                "opening {} bytes of device memory exported by process {pid} as {}",
                handle.len,
                path.display()
            )
        };
        let file = ffi::open_read_write(&path, what)?;
        // Check what was opened, not what the path named a moment earlier.
        let opened = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let target = ffi::read_link(&opened, what)?;
        let prefix = format!("/memfd:{}", MEMFD_NAME.to_string_lossy());
        if !target.to_string_lossy().starts_with(&prefix) {
            return Err(Error::InvalidInput(format!(
                "host: open_ipc: {} names {}, not haloport device memory (a stale handle, or \
                 one meant for another process)",
                path.display(),
                target.display()
            )));
        }
        let map_len = handle.len.max(1);
        let size = ffi::file_len(&file, what)?;
        if size < map_len as u64 {
            return Err(Error::InvalidInput(format!(
                "host: open_ipc: {} holds {size} bytes, the handle says {}",
                path.display(),
                handle.len
            )));
        }
        let ptr = ffi::mmap_shared(&file, map_len, what)?;
        // The mapping keeps the pages alive; this process's descriptor closes here.
        Ok(HostPeerMemory {
            ptr,
            len: handle.len,
            map_len,
        })
    }
}

/// The exporting process's id and descriptor from a host handle's bytes.
fn decode(bytes: &[u8]) -> Result<(u32, i32)> {
    let malformed = || {
        Error::InvalidInput(format!(
            "host: open_ipc: a host IPC handle has {IPC_HANDLE_BYTES} bytes (process id and \
             descriptor), this one {}",
            bytes.len()
        ))
    };
    let bytes: [u8; IPC_HANDLE_BYTES] = bytes.try_into().map_err(|_| malformed())?;
    let [p0, p1, p2, p3, f0, f1, f2, f3] = bytes;
    let pid = u32::from_le_bytes([p0, p1, p2, p3]);
    let fd = i32::from_le_bytes([f0, f1, f2, f3]);
    if pid == 0 || fd < 0 {
        return Err(Error::InvalidInput(format!(
            "host: open_ipc: the handle names process {pid}, descriptor {fd}, which cannot exist"
        )));
    }
    Ok((pid, fd))
}

impl Drop for HostPeerMemory {
    fn drop(&mut self) {
        // SAFETY: ptr and map_len are the mapping `open` made, unmapped only here; the value
        // is dropped, so no reference into it remains, and the transport keeps kernels that
        // store into it from outliving it (Backend::launch's contract, 1).
        if let Err(e) = unsafe { ffi::munmap(self.ptr, self.map_len) } {
            tracing::error!("host: unmapping a peer's device memory: {e}");
        }
    }
}

impl DeviceMemory for HostPeerMemory {
    fn len_bytes(&self) -> usize {
        self.len
    }

    fn device_addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }
}
