//! Every CUDA driver call haloport makes, each checked and named (STYLE: vendor calls happen
//! only here). The other files build RAII types on these functions.
//!
//! The driver library is loaded at run time (cudarc's dynamic loading): [`driver_present`] must
//! be true before any other function here is called, or cudarc panics.

use std::ffi::{c_int, c_uint, c_void, CStr};

use cudarc::driver::sys;
use haloport_core::{Error, LaunchDims, Result};

pub use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

/// Turns a driver return code into a [`Result`], naming the call and what haloport was doing.
///
/// # Errors
/// [`Error::Backend`] for anything but `CUDA_SUCCESS`; [`Error::OutOfMemory`]-like codes keep
/// their CUDA name so the message says what happened.
pub fn check(
    call: &'static str,
    code: sys::CUresult,
    context: impl FnOnce() -> String,
) -> Result<()> {
    if code == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(Error::Backend {
        backend: "cuda",
        call,
        code: code as i64,
        name: error_name(code),
        context: context(),
    })
}

fn error_name(code: sys::CUresult) -> String {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string, or fails for unknown codes.
    let ok = unsafe { sys::cuGetErrorName(code, &mut name) };
    if ok != sys::CUresult::CUDA_SUCCESS || name.is_null() {
        return format!("{code:?}");
    }
    // SAFETY: the driver returned a NUL-terminated static string.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// True when the CUDA driver library (libcuda) can be loaded. Without it no other call here may
/// be made (SPEC 11: cudarc panics on first use when libcuda is absent).
pub fn driver_present() -> bool {
    // SAFETY: only probes for the library file; loads nothing it keeps.
    unsafe { sys::is_culib_present() }
}

/// `cuInit(0)`.
pub fn init() -> Result<()> {
    // SAFETY: cuInit has no pointer arguments; the library is present (caller checked).
    check("cuInit", unsafe { sys::cuInit(0) }, String::new)
}

/// `cuDeviceGetCount`.
pub fn device_count() -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: n is a valid out-pointer.
    let code = unsafe { sys::cuDeviceGetCount(&mut n) };
    check("cuDeviceGetCount", code, String::new)?;
    Ok(n.max(0) as usize)
}

/// `cuDeviceGet`.
pub fn device(ordinal: usize) -> Result<CUdevice> {
    let mut dev: CUdevice = 0;
    // SAFETY: dev is a valid out-pointer.
    let code = unsafe { sys::cuDeviceGet(&mut dev, ordinal as c_int) };
    check("cuDeviceGet", code, || format!("opening device {ordinal}"))?;
    Ok(dev)
}

/// `cuDeviceGetName`.
pub fn device_name(dev: CUdevice) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: buf holds 256 chars, as passed.
    let code = unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) };
    check("cuDeviceGetName", code, String::new)?;
    // SAFETY: the driver NUL-terminates within the buffer.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// `cuDeviceGetAttribute`.
pub fn attribute(dev: CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: v is a valid out-pointer.
    let code = unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) };
    check("cuDeviceGetAttribute", code, || format!("reading {attr:?}"))?;
    Ok(v)
}

/// `cuDriverGetVersion`, as "major.minor".
pub fn driver_version() -> Result<String> {
    let mut v: c_int = 0;
    // SAFETY: v is a valid out-pointer.
    let code = unsafe { sys::cuDriverGetVersion(&mut v) };
    check("cuDriverGetVersion", code, String::new)?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// `cuDevicePrimaryCtxRetain` then `cuCtxSetCurrent`.
pub fn retain_primary_context(dev: CUdevice) -> Result<CUcontext> {
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: ctx is a valid out-pointer; dev came from cuDeviceGet.
    let code = unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) };
    check("cuDevicePrimaryCtxRetain", code, || format!("device {dev}"))?;
    // SAFETY: ctx was just retained.
    let code = unsafe { sys::cuCtxSetCurrent(ctx) };
    check("cuCtxSetCurrent", code, || format!("device {dev}"))?;
    Ok(ctx)
}

/// `cuCtxSetCurrent`.
///
/// # Safety
/// 1. `ctx` is a live context (retained and not yet released).
pub unsafe fn set_current(ctx: CUcontext) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuCtxSetCurrent(ctx) };
    check("cuCtxSetCurrent", code, String::new)
}

/// `cuDevicePrimaryCtxRelease`.
pub fn release_primary_context(dev: CUdevice) -> Result<()> {
    // SAFETY: no pointers; releasing a retained primary context.
    let code = unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) };
    check("cuDevicePrimaryCtxRelease", code, String::new)
}

/// `cuMemAlloc` of `bytes`, zeroed with `cuMemsetD8`.
pub fn mem_alloc_zeroed(bytes: usize) -> Result<CUdeviceptr> {
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: ptr is a valid out-pointer; a current context exists (backend invariant).
    let code = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) };
    if code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::OutOfMemory {
            backend: "cuda",
            bytes,
            kind: "device memory",
        });
    }
    check("cuMemAlloc", code, || {
        format!("allocating {bytes} bytes of device memory")
    })?;
    // SAFETY: ptr points at bytes.max(1) bytes of device memory just allocated.
    let code = unsafe { sys::cuMemsetD8_v2(ptr, 0, bytes) };
    if let Err(e) = check("cuMemsetD8", code, || "zeroing new device memory".into()) {
        // SAFETY: ptr was allocated above and is freed once.
        unsafe { sys::cuMemFree_v2(ptr) };
        return Err(e);
    }
    Ok(ptr)
}

/// `cuMemFree`.
///
/// # Safety
/// 1. `ptr` came from [`mem_alloc_zeroed`] and is freed once, after all work using it completed.
pub unsafe fn mem_free(ptr: CUdeviceptr) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    check("cuMemFree", unsafe { sys::cuMemFree_v2(ptr) }, String::new)
}

/// `cuMemHostAlloc(bytes, PORTABLE | DEVICEMAP)`: page-locked, mapped, never write-combined
/// (the CPU reads it), then `cuMemHostGetDevicePointer` for the kernels' address.
pub fn host_alloc_mapped(bytes: usize) -> Result<(*mut u8, CUdeviceptr)> {
    let mut host: *mut c_void = std::ptr::null_mut();
    let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
    // SAFETY: host is a valid out-pointer; a current context exists (backend invariant).
    let code = unsafe { sys::cuMemHostAlloc(&mut host, bytes.max(1), flags as c_uint) };
    if code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::OutOfMemory {
            backend: "cuda",
            bytes,
            kind: "pinned host memory",
        });
    }
    check("cuMemHostAlloc", code, || {
        format!("allocating {bytes} bytes of mapped pinned memory")
    })?;
    let mut dev: CUdeviceptr = 0;
    // SAFETY: host was allocated with DEVICEMAP just above.
    let code = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
    if let Err(e) = check("cuMemHostGetDevicePointer", code, || {
        "mapping pinned memory".into()
    }) {
        // SAFETY: host was allocated above and is freed once.
        unsafe { sys::cuMemFreeHost(host) };
        return Err(e);
    }
    // SAFETY: host points at bytes.max(1) writable bytes.
    unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
    Ok((host.cast(), dev))
}

/// `cuMemFreeHost`.
///
/// # Safety
/// 1. `host` came from [`host_alloc_mapped`] and is freed once, after all work using it completed.
pub unsafe fn host_free(host: *mut u8) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuMemFreeHost(host.cast()) };
    check("cuMemFreeHost", code, String::new)
}

/// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: no implicit synchronization with the legacy stream.
pub fn stream_create() -> Result<CUstream> {
    let mut s: CUstream = std::ptr::null_mut();
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint;
    // SAFETY: s is a valid out-pointer.
    let code = unsafe { sys::cuStreamCreate(&mut s, flags) };
    check("cuStreamCreate", code, String::new)?;
    Ok(s)
}

/// `cuStreamQuery`: `Ok(true)` when idle, `Ok(false)` while work is pending.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_query(s: CUstream) -> Result<bool> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { sys::cuStreamQuery(s) } {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        code => check("cuStreamQuery", code, String::new).map(|()| true),
    }
}

/// `cuStreamSynchronize`.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_synchronize(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuStreamSynchronize(s) };
    check("cuStreamSynchronize", code, String::new)
}

/// `cuStreamDestroy`.
///
/// # Safety
/// 1. `s` is a live stream, destroyed once.
pub unsafe fn stream_destroy(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuStreamDestroy_v2(s) };
    check("cuStreamDestroy", code, String::new)
}

/// `cuEventCreate(CU_EVENT_DEFAULT)`: with timing.
pub fn event_create() -> Result<CUevent> {
    let mut e: CUevent = std::ptr::null_mut();
    // SAFETY: e is a valid out-pointer.
    let code = unsafe { sys::cuEventCreate(&mut e, 0) };
    check("cuEventCreate", code, String::new)?;
    Ok(e)
}

/// `cuEventRecord`.
///
/// # Safety
/// 1. `e` and `s` are live and belong to the current context.
pub unsafe fn event_record(e: CUevent, s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuEventRecord(e, s) };
    check("cuEventRecord", code, String::new)
}

/// `cuEventQuery`: `Ok(true)` when complete.
///
/// # Safety
/// 1. `e` is a live event.
pub unsafe fn event_query(e: CUevent) -> Result<bool> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { sys::cuEventQuery(e) } {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        code => check("cuEventQuery", code, String::new).map(|()| true),
    }
}

/// `cuEventElapsedTime`, milliseconds.
///
/// # Safety
/// 1. Both events are live.
pub unsafe fn event_elapsed_ms(start: CUevent, end: CUevent) -> Result<f32> {
    let mut ms = 0.0_f32;
    // SAFETY: ms is a valid out-pointer; events live by contract.
    let code = unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) };
    check("cuEventElapsedTime", code, String::new)?;
    Ok(ms)
}

/// `cuEventDestroy`.
///
/// # Safety
/// 1. `e` is a live event, destroyed once.
pub unsafe fn event_destroy(e: CUevent) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuEventDestroy_v2(e) };
    check("cuEventDestroy", code, String::new)
}

/// `cuMemcpyHtoDAsync`.
///
/// # Safety
/// 1. `src` is valid for `bytes` reads and `dst` for `bytes` writes until the copy completes.
/// 2. `s` is a live stream.
pub unsafe fn memcpy_htod_async(
    dst: CUdeviceptr,
    src: *const u8,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, s) };
    check("cuMemcpyHtoDAsync", code, || format!("{bytes} bytes"))
}

/// `cuMemcpyDtoHAsync`.
///
/// # Safety
/// As [`memcpy_htod_async`], directions swapped.
pub unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, s) };
    check("cuMemcpyDtoHAsync", code, || format!("{bytes} bytes"))
}

/// `cuModuleLoadData`.
///
/// # Safety
/// 1. `image` points at a complete fatbin/cubin/PTX image, 8-byte aligned.
pub unsafe fn module_load_data(image: *const u8) -> Result<CUmodule> {
    let mut m: CUmodule = std::ptr::null_mut();
    // SAFETY: forwarded from this function's contract; m is a valid out-pointer.
    let code = unsafe { sys::cuModuleLoadData(&mut m, image.cast()) };
    check("cuModuleLoadData", code, || {
        "loading haloport's kernels".into()
    })?;
    Ok(m)
}

/// `cuModuleGetFunction`.
///
/// # Safety
/// 1. `m` is a live module.
pub unsafe fn module_function(m: CUmodule, name: &CStr) -> Result<CUfunction> {
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: m is live by contract; name is NUL-terminated; f is a valid out-pointer.
    let code = unsafe { sys::cuModuleGetFunction(&mut f, m, name.as_ptr()) };
    check("cuModuleGetFunction", code, || {
        format!("looking up kernel {name:?}")
    })?;
    Ok(f)
}

/// `cuModuleUnload`.
///
/// # Safety
/// 1. `m` is a live module, unloaded once, with no kernel of it running.
pub unsafe fn module_unload(m: CUmodule) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuModuleUnload(m) };
    check("cuModuleUnload", code, String::new)
}

/// `cuLaunchKernel` of a kernel taking one argument by value.
///
/// # Safety
/// 1. `f` is a live function whose only parameter has the type and layout of `*arg`.
/// 2. Every address inside `*arg` satisfies `Backend::launch`'s contract.
/// 3. `s` is a live stream.
pub unsafe fn launch_one_arg(
    f: CUfunction,
    dims: LaunchDims,
    s: CUstream,
    arg: *const c_void,
    what: &str,
) -> Result<()> {
    let mut params = [arg.cast_mut()];
    // SAFETY: forwarded from this function's contract; the driver copies the argument before
    // returning, so `params` and `*arg` need only live through the call.
    let code = unsafe {
        sys::cuLaunchKernel(
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
    check("cuLaunchKernel", code, || {
        format!(
            "launching {what} with {} blocks x {} threads",
            dims.blocks, dims.threads
        )
    })
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
///
/// # Safety
/// 1. `f` is a live function.
pub unsafe fn occupancy_per_sm(f: CUfunction, threads: u32) -> Result<u32> {
    let mut n: c_int = 0;
    // SAFETY: f is live by contract; n is a valid out-pointer.
    let code =
        unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, threads as c_int, 0) };
    check("cuOccupancyMaxActiveBlocksPerMultiprocessor", code, || {
        format!("{threads} threads per block")
    })?;
    Ok(n.max(0) as u32)
}

/// The device attributes haloport reads.
pub use sys::CUdevice_attribute as Attribute;
