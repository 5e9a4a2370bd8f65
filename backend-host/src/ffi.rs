//! Every operating-system call the host backend makes (STYLE: vendor calls happen only here).
//!
//! The host backend's "vendor" is Linux: device memory is an anonymous shared-memory file
//! (`memfd_create`, sized with `ftruncate`) mapped with `mmap(MAP_SHARED)`, and another process
//! of the node opens it through `/proc/PID/fd/FD` (`open`, `fstat`, `readlink`) and maps it
//! in turn. Calls the standard library wraps (`open`, `ftruncate`, `fstat`, `readlink`) go
//! through it; `memfd_create`, `mmap` and `munmap`, which it lacks, go through `libc`.
//!
//! [`os_error`] is the one conversion from an OS error to haloport's: it names the call, the
//! errno (number and symbolic name) and what haloport was doing.
//!
//! ## Threading
//! Nothing here keeps state; every function may be called from any thread.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use haloport_core::{Error, Result};

/// Turns an OS error into haloport's, naming the call and what haloport was doing.
///
/// The name is errno's symbolic name (`ENOENT`) where this file knows it, the system's
/// description otherwise; the code is errno's number (-1 when the error carried none).
pub fn os_error(call: &'static str, err: &io::Error, context: impl FnOnce() -> String) -> Error {
    let code = err.raw_os_error().unwrap_or(-1);
    Error::Backend {
        backend: "host",
        call,
        code: i64::from(code),
        name: errno_name(code).map_or_else(|| err.to_string(), str::to_owned),
        context: context(),
    }
}

/// Symbolic names of the errno values the calls here document.
pub fn errno_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ELOOP => "ELOOP",
        libc::EOVERFLOW => "EOVERFLOW",
        _ => return None,
    })
}

/// Creates an anonymous shared-memory file of size 0, closed on `exec` (another process opens
/// it through `/proc`, not by inheriting it). Its contents read as zero until written.
///
/// # Errors
/// [`Error::Backend`] naming `memfd_create` (e.g. `EMFILE`: too many open files).
///
/// OS: memfd_create(2).
pub fn memfd_create(name: &CStr, context: impl FnOnce() -> String) -> Result<File> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call; the flags are valid.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error(
            "memfd_create",
            &io::Error::last_os_error(),
            context,
        ));
    }
    // SAFETY: `fd` is a descriptor memfd_create just opened; nothing else owns or closes it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Sets the size of `file` to `len` bytes; new bytes read as zero.
///
/// # Errors
/// [`Error::Backend`] naming `ftruncate`.
///
/// OS: ftruncate(2).
pub fn ftruncate(file: &File, len: usize, context: impl FnOnce() -> String) -> Result<()> {
    file.set_len(len as u64)
        .map_err(|e| os_error("ftruncate", &e, context))
}

/// Opens `path` for reading and writing (for `/proc/PID/fd/FD`: a new open file description
/// of the file that descriptor names, with this process's permissions checked).
///
/// # Errors
/// [`Error::Backend`] naming `open`.
///
/// OS: open(2) with `O_RDWR | O_CLOEXEC`.
pub fn open_read_write(path: &Path, context: impl FnOnce() -> String) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| os_error("open", &e, context))
}

/// The size of `file` in bytes.
///
/// # Errors
/// [`Error::Backend`] naming `fstat`.
///
/// OS: fstat(2).
pub fn file_len(file: &File, context: impl FnOnce() -> String) -> Result<u64> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| os_error("fstat", &e, context))
}

/// What the symbolic link `path` points to (for `/proc/PID/fd/FD`: the file's name, e.g.
/// `/memfd:NAME (deleted)`).
///
/// # Errors
/// [`Error::Backend`] naming `readlink`.
///
/// OS: readlink(2).
pub fn read_link(path: &Path, context: impl FnOnce() -> String) -> Result<PathBuf> {
    std::fs::read_link(path).map_err(|e| os_error("readlink", &e, context))
}

/// Maps the first `len` bytes of `file` readable and writable, shared with every other
/// mapping of the file (in this process or another). The mapping is page-aligned and stays
/// valid after `file` is closed, until [`munmap`].
///
/// Bytes of the mapping past the file's end raise SIGBUS when touched: callers map no more
/// than the file's size.
///
/// # Errors
/// [`Error::Backend`] naming `mmap` (e.g. `ENOMEM`, `ENODEV` for a file that cannot be mapped).
///
/// OS: mmap(2) with `PROT_READ | PROT_WRITE`, `MAP_SHARED`.
pub fn mmap_shared(
    file: &File,
    len: usize,
    context: impl FnOnce() -> String,
) -> Result<NonNull<u8>> {
    // SAFETY: a null hint lets the kernel choose an address, so no existing mapping is touched;
    // `file` is an open descriptor for the duration of the call.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_error("mmap", &io::Error::last_os_error(), context));
    }
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| Error::Internal("host: mmap returned null".into()))
}

/// Removes a mapping made by [`mmap_shared`].
///
/// # Errors
/// [`Error::Backend`] naming `munmap`.
///
/// # Safety
/// 1. `ptr` and `len` are exactly those of one mapping [`mmap_shared`] returned, not yet
///    unmapped.
/// 2. Nothing touches the mapping afterwards: no reference into it lives on, and no queued
///    copy or kernel still reads or writes it.
///
/// OS: munmap(2).
pub unsafe fn munmap(ptr: NonNull<u8>, len: usize) -> Result<()> {
    // SAFETY: the caller guarantees (1) that this is a live mapping of `len` bytes and (2) that
    // nothing uses it afterwards.
    if unsafe { libc::munmap(ptr.as_ptr().cast(), len) } != 0 {
        let err = io::Error::last_os_error();
        return Err(os_error("munmap", &err, || {
            format!("unmapping {len} bytes at {:#x}", ptr.as_ptr() as usize)
        }));
    }
    Ok(())
}

/// Replaces the mapping of `len` bytes at `ptr` with an inaccessible reservation
/// (`PROT_NONE`, no memory behind it): its pages are released, yet no other mapping can be
/// placed at these addresses until [`munmap`] releases the reservation too.
///
/// # Errors
/// [`Error::Backend`] naming `mmap`.
///
/// # Safety
/// 1. `ptr` and `len` describe a live mapping of this process, made by [`mmap_shared`].
/// 2. Nothing touches the mapping afterwards (a touch of the reservation faults).
///
/// OS: mmap(2) with `PROT_NONE`, `MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE`.
pub unsafe fn quarantine(ptr: NonNull<u8>, len: usize) -> Result<()> {
    // SAFETY: MAP_FIXED replaces exactly the caller's own mapping (1), which nothing uses
    // any more (2).
    let got = unsafe {
        libc::mmap(
            ptr.as_ptr().cast(),
            len,
            libc::PROT_NONE,
            libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if got == libc::MAP_FAILED {
        return Err(os_error("mmap", &io::Error::last_os_error(), || {
            format!(
                "reserving {len} freed bytes at {:#x}",
                ptr.as_ptr() as usize
            )
        }));
    }
    Ok(())
}
