//! Every HIP runtime call haloport makes, each checked and named (STYLE: vendor calls happen
//! only here). The other files build RAII types on these functions.

use std::ffi::{c_int, c_uint, c_void, CStr};

use haloport_core::{Error, LaunchDims, Result};
use hip_sys::hiprt as sys;

pub use sys::{hipEvent_t, hipFunction_t, hipModule_t, hipStream_t};

/// Turns a HIP return code into a [`Result`], naming the call and what haloport was doing.
///
/// # Errors
/// [`Error::Backend`] for anything but `hipSuccess`.
pub fn check(
    call: &'static str,
    code: sys::hipError_t,
    context: impl FnOnce() -> String,
) -> Result<()> {
    if code == sys::hipError_t::hipSuccess {
        return Ok(());
    }
    Err(Error::Backend {
        backend: "hip",
        call,
        code: code as i64,
        name: error_name(code),
        context: context(),
    })
}

fn error_name(code: sys::hipError_t) -> String {
    // SAFETY: hipGetErrorName returns a static string for every code.
    let name = unsafe { sys::hipGetErrorName(code) };
    if name.is_null() {
        return format!("{code:?}");
    }
    // SAFETY: the runtime returned a NUL-terminated static string.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// `hipGetDeviceCount`; `hipErrorNoDevice` (no AMD GPU or driver) is `Ok(0)`.
pub fn device_count() -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: n is a valid out-pointer.
    let code = unsafe { sys::hipGetDeviceCount(&mut n) };
    if code == sys::hipError_t::hipErrorNoDevice {
        return Ok(0);
    }
    check("hipGetDeviceCount", code, String::new)?;
    Ok(n.max(0) as usize)
}

/// `hipSetDevice`.
pub fn set_device(ordinal: usize) -> Result<()> {
    // SAFETY: no pointers.
    let code = unsafe { sys::hipSetDevice(ordinal as c_int) };
    check("hipSetDevice", code, || format!("device {ordinal}"))
}

/// `hipDeviceGetName`.
pub fn device_name(ordinal: usize) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: buf holds 256 chars, as passed.
    let code =
        unsafe { sys::hipDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, ordinal as c_int) };
    check("hipDeviceGetName", code, || format!("device {ordinal}"))?;
    // SAFETY: the runtime NUL-terminates within the buffer.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// `hipDeviceGetAttribute`.
pub fn attribute(ordinal: usize, attr: sys::hipDeviceAttribute_t) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: v is a valid out-pointer.
    let code = unsafe { sys::hipDeviceGetAttribute(&mut v, attr, ordinal as c_int) };
    check("hipDeviceGetAttribute", code, || {
        format!("reading {attr:?}")
    })?;
    Ok(v)
}

/// `hipDriverGetVersion`.
pub fn driver_version() -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: v is a valid out-pointer.
    let code = unsafe { sys::hipDriverGetVersion(&mut v) };
    check("hipDriverGetVersion", code, String::new)?;
    Ok(v)
}

/// `hipMalloc` of `bytes`, zeroed with `hipMemset`.
pub fn malloc_zeroed(bytes: usize) -> Result<*mut c_void> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: ptr is a valid out-pointer; the device is set (backend invariant).
    let code = unsafe { sys::hipMalloc(&mut ptr, bytes.max(1)) };
    if code == sys::hipError_t::hipErrorOutOfMemory {
        return Err(Error::OutOfMemory {
            backend: "hip",
            bytes,
            kind: "device memory",
        });
    }
    check("hipMalloc", code, || {
        format!("allocating {bytes} bytes of device memory")
    })?;
    // SAFETY: ptr points at bytes.max(1) bytes of device memory just allocated.
    let code = unsafe { sys::hipMemset(ptr, 0, bytes) };
    if let Err(e) = check("hipMemset", code, || "zeroing new device memory".into()) {
        // SAFETY: ptr was allocated above and is freed once.
        unsafe { sys::hipFree(ptr) };
        return Err(e);
    }
    Ok(ptr)
}

/// `hipFree`.
///
/// # Safety
/// 1. `ptr` came from [`malloc_zeroed`] and is freed once, after all work using it completed.
pub unsafe fn free(ptr: *mut c_void) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipFree(ptr) };
    check("hipFree", code, String::new)
}

/// `hipHostMalloc(bytes, Mapped | Portable | Coherent or NonCoherent)`, then
/// `hipHostGetDevicePointer` for the kernels' address. Never write-combined.
pub fn host_malloc_mapped(bytes: usize, coherent: bool) -> Result<(*mut u8, u64)> {
    let kind = if coherent {
        sys::hipHostMallocCoherent
    } else {
        sys::hipHostMallocNonCoherent
    };
    let flags = sys::hipHostMallocMapped | sys::hipHostMallocPortable | kind;
    let mut host: *mut c_void = std::ptr::null_mut();
    // SAFETY: host is a valid out-pointer.
    let code = unsafe { sys::hipHostMalloc(&mut host, bytes.max(1), flags as c_uint) };
    if code == sys::hipError_t::hipErrorOutOfMemory {
        return Err(Error::OutOfMemory {
            backend: "hip",
            bytes,
            kind: "pinned host memory",
        });
    }
    check("hipHostMalloc", code, || {
        format!(
            "allocating {bytes} bytes of mapped {} pinned memory",
            if coherent { "coherent" } else { "non-coherent" }
        )
    })?;
    let mut dev: *mut c_void = std::ptr::null_mut();
    // SAFETY: host was allocated with the Mapped flag just above.
    let code = unsafe { sys::hipHostGetDevicePointer(&mut dev, host, 0) };
    if let Err(e) = check("hipHostGetDevicePointer", code, || {
        "mapping pinned memory".into()
    }) {
        // SAFETY: host was allocated above and is freed once.
        unsafe { sys::hipHostFree(host) };
        return Err(e);
    }
    // SAFETY: host points at bytes.max(1) writable bytes.
    unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
    Ok((host.cast(), dev as u64))
}

/// `hipHostFree`.
///
/// # Safety
/// 1. `host` came from [`host_malloc_mapped`] and is freed once, after all work using it completed.
pub unsafe fn host_free(host: *mut u8) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipHostFree(host.cast()) };
    check("hipHostFree", code, String::new)
}

/// `hipStreamCreateWithFlags(hipStreamNonBlocking)`.
pub fn stream_create() -> Result<hipStream_t> {
    let mut s: hipStream_t = std::ptr::null_mut();
    // SAFETY: s is a valid out-pointer.
    let code = unsafe { sys::hipStreamCreateWithFlags(&mut s, sys::hipStreamNonBlocking) };
    check("hipStreamCreateWithFlags", code, String::new)?;
    Ok(s)
}

/// `hipStreamQuery`: `Ok(true)` when idle.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_query(s: hipStream_t) -> Result<bool> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { sys::hipStreamQuery(s) } {
        sys::hipError_t::hipErrorNotReady => Ok(false),
        code => check("hipStreamQuery", code, String::new).map(|()| true),
    }
}

/// `hipStreamSynchronize`.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_synchronize(s: hipStream_t) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipStreamSynchronize(s) };
    check("hipStreamSynchronize", code, String::new)
}

/// `hipStreamDestroy`.
///
/// # Safety
/// 1. `s` is a live stream, destroyed once.
pub unsafe fn stream_destroy(s: hipStream_t) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipStreamDestroy(s) };
    check("hipStreamDestroy", code, String::new)
}

/// `hipEventCreate`.
pub fn event_create() -> Result<hipEvent_t> {
    let mut e: hipEvent_t = std::ptr::null_mut();
    // SAFETY: e is a valid out-pointer.
    let code = unsafe { sys::hipEventCreate(&mut e) };
    check("hipEventCreate", code, String::new)?;
    Ok(e)
}

/// `hipEventRecord`.
///
/// # Safety
/// 1. `e` and `s` are live.
pub unsafe fn event_record(e: hipEvent_t, s: hipStream_t) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipEventRecord(e, s) };
    check("hipEventRecord", code, String::new)
}

/// `hipEventQuery`: `Ok(true)` when complete.
///
/// # Safety
/// 1. `e` is a live event.
pub unsafe fn event_query(e: hipEvent_t) -> Result<bool> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { sys::hipEventQuery(e) } {
        sys::hipError_t::hipErrorNotReady => Ok(false),
        code => check("hipEventQuery", code, String::new).map(|()| true),
    }
}

/// `hipEventElapsedTime`, milliseconds.
///
/// # Safety
/// 1. Both events are live.
pub unsafe fn event_elapsed_ms(start: hipEvent_t, end: hipEvent_t) -> Result<f32> {
    let mut ms = 0.0_f32;
    // SAFETY: ms is a valid out-pointer; events live by contract.
    let code = unsafe { sys::hipEventElapsedTime(&mut ms, start, end) };
    check("hipEventElapsedTime", code, String::new)?;
    Ok(ms)
}

/// `hipEventDestroy`.
///
/// # Safety
/// 1. `e` is a live event, destroyed once.
pub unsafe fn event_destroy(e: hipEvent_t) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipEventDestroy(e) };
    check("hipEventDestroy", code, String::new)
}

/// `hipMemcpyHtoDAsync`.
///
/// # Safety
/// 1. `src` is valid for `bytes` reads and `dst` for `bytes` writes until the copy completes.
/// 2. `s` is a live stream.
pub unsafe fn memcpy_htod_async(
    dst: u64,
    src: *const u8,
    bytes: usize,
    s: hipStream_t,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code =
        unsafe { sys::hipMemcpyHtoDAsync(dst as *mut c_void, src.cast_mut().cast(), bytes, s) };
    check("hipMemcpyHtoDAsync", code, || format!("{bytes} bytes"))
}

/// `hipMemcpyDtoHAsync`.
///
/// # Safety
/// As [`memcpy_htod_async`], directions swapped.
pub unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: u64,
    bytes: usize,
    s: hipStream_t,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipMemcpyDtoHAsync(dst.cast(), src as *mut c_void, bytes, s) };
    check("hipMemcpyDtoHAsync", code, || format!("{bytes} bytes"))
}

/// `hipModuleLoadData`.
///
/// # Safety
/// 1. `image` points at a complete code object or offload bundle, 8-byte aligned.
pub unsafe fn module_load_data(image: *const u8) -> Result<hipModule_t> {
    let mut m: hipModule_t = std::ptr::null_mut();
    // SAFETY: forwarded from this function's contract; m is a valid out-pointer.
    let code = unsafe { sys::hipModuleLoadData(&mut m, image.cast()) };
    check("hipModuleLoadData", code, || {
        "loading haloport's kernels".into()
    })?;
    Ok(m)
}

/// `hipModuleGetFunction`.
///
/// # Safety
/// 1. `m` is a live module.
pub unsafe fn module_function(m: hipModule_t, name: &CStr) -> Result<hipFunction_t> {
    let mut f: hipFunction_t = std::ptr::null_mut();
    // SAFETY: m is live by contract; name is NUL-terminated; f is a valid out-pointer.
    let code = unsafe { sys::hipModuleGetFunction(&mut f, m, name.as_ptr()) };
    check("hipModuleGetFunction", code, || {
        format!("looking up kernel {name:?}")
    })?;
    Ok(f)
}

/// `hipModuleUnload`.
///
/// # Safety
/// 1. `m` is a live module, unloaded once, with no kernel of it running.
pub unsafe fn module_unload(m: hipModule_t) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::hipModuleUnload(m) };
    check("hipModuleUnload", code, String::new)
}

/// `hipModuleLaunchKernel` of a kernel taking one argument by value.
///
/// # Safety
/// 1. `f` is a live function whose only parameter has the type and layout of `*arg`.
/// 2. Every address inside `*arg` satisfies `Backend::launch`'s contract.
/// 3. `s` is a live stream.
pub unsafe fn launch_one_arg(
    f: hipFunction_t,
    dims: LaunchDims,
    s: hipStream_t,
    arg: *const c_void,
    what: &str,
) -> Result<()> {
    let mut params = [arg.cast_mut()];
    // SAFETY: forwarded from this function's contract; the driver copies the argument before
    // returning, so `params` and `*arg` need only live through the call.
    let code = unsafe {
        sys::hipModuleLaunchKernel(
            f,
            dims.blocks,
            1,
            1,
            dims.threads,
            1,
            1,
            0,
            s,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check("hipModuleLaunchKernel", code, || {
        format!(
            "launching {what} with {} blocks x {} threads",
            dims.blocks, dims.threads
        )
    })
}

/// `hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`.
///
/// # Safety
/// 1. `f` is a live function.
pub unsafe fn occupancy_per_cu(f: hipFunction_t, threads: u32) -> Result<u32> {
    let mut n: c_int = 0;
    // SAFETY: f is live by contract; n is a valid out-pointer.
    let code = unsafe {
        sys::hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, threads as c_int, 0)
    };
    check(
        "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
        code,
        || format!("{threads} threads per block"),
    )?;
    Ok(n.max(0) as u32)
}

/// The device attributes haloport reads.
pub use sys::hipDeviceAttribute_t as Attribute;
