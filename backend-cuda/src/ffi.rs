//! Every CUDA driver call haloport makes (STYLE: vendor calls happen only here). Calls go
//! through cudarc's checked `result` layer; the few it lacks go through `sys`, each saying why.
//! [`check`] is the one conversion from cudarc's `DriverError` to haloport's error: it names the
//! call, the driver's name for the code and what haloport was doing. The other files build RAII
//! types on these functions.
//!
//! ## Opening the driver
//! cudarc loads libcuda at run time and, on its first call, resolves the whole symbol table of
//! the CUDA version this build was generated for ([`REQUIRED_DRIVER_VERSION`], cudarc's
//! `cuda-NNNNN` feature), panicking when no library is found or when the driver lacks one
//! symbol (any driver older than that version). [`open_driver`] therefore opens libcuda itself
//! first (libloading, the names cudarc tries, in its order), asks it only `cuDriverGetVersion`,
//! and turns an absent or too old driver into an error. No other function here may be called
//! before [`open_driver`] returned `Ok`: `lib.rs` calls it first in `device_count`, the one way
//! to a device.
//!
//! ## Threading
//! Nothing here keeps state but the driver probe, computed once. Handles may be used from any
//! thread on which their context is current.

use std::ffi::{c_int, c_uint, c_void, CString};
use std::sync::OnceLock;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use haloport_core::{Error, LaunchDims, Result};

pub use sys::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUgraphExec, CUmodule, CUstream,
};

/// The device attributes haloport reads.
pub use sys::CUdevice_attribute as Attribute;

/// The oldest CUDA driver this build can use, as drivers number versions (1000 * major +
/// 10 * minor): the version cudarc's bindings were generated for, chosen by its `cuda-NNNNN`
/// feature in Cargo.toml. cudarc resolves every symbol of that version when it loads libcuda.
pub const REQUIRED_DRIVER_VERSION: i32 = sys::CUDA_VERSION as i32;

/// Turns a cudarc result into haloport's, naming the call and what haloport was doing.
///
/// # Errors
/// [`Error::Backend`] with the code's name, e.g. `CUDA_ERROR_INVALID_VALUE`. The name is the
/// `CUresult` variant's, the same string `cuGetErrorName` gives, taken without a driver call so
/// that reporting an error never needs the driver (or cudarc's loader) to work.
pub fn check<T>(
    call: &'static str,
    result: std::result::Result<T, DriverError>,
    context: impl FnOnce() -> String,
) -> Result<T> {
    result.map_err(|DriverError(code)| Error::Backend {
        backend: "cuda",
        call,
        code: code as i64,
        name: format!("{code:?}"),
        context: context(),
    })
}

/// `major.minor` of a driver version number, e.g. 12040 -> "12.4".
pub fn version_string(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// What looking for libcuda found, before cudarc touches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DriverProbe {
    /// No candidate name could be opened.
    Absent { tried: Vec<String> },
    /// A library opened but did not tell its version.
    Unusable { library: String, reason: String },
    /// A library opened and reported `version`.
    Found { library: String, version: i32 },
}

/// Admits a probed driver if it is at least `needed`, returning its version.
///
/// # Errors
/// [`Error::NoDevice`] without a usable libcuda; [`Error::Unsupported`] naming both versions
/// when the driver is older than `needed`.
pub(crate) fn admit(probe: &DriverProbe, needed: i32) -> Result<i32> {
    match probe {
        DriverProbe::Absent { tried } => Err(Error::NoDevice {
            backend: "cuda",
            reason: format!(
                "no CUDA driver (libcuda) on this machine: none of the {} names cudarc tries \
                 ({} ... {}) loads from the library path",
                tried.len(),
                tried.first().map_or("", String::as_str),
                tried.last().map_or("", String::as_str),
            ),
        }),
        DriverProbe::Unusable { library, reason } => Err(Error::NoDevice {
            backend: "cuda",
            reason: format!("the CUDA driver {library} is unusable: {reason}"),
        }),
        DriverProbe::Found { version, .. } if *version < needed => Err(Error::Unsupported {
            backend: "cuda",
            what: format!(
                "CUDA driver {} is older than {}, which this build of haloport needs \
                 (update the driver, or build haloport for an older CUDA)",
                version_string(*version),
                version_string(needed)
            ),
        }),
        DriverProbe::Found { version, .. } => Ok(*version),
    }
}

/// The library names cudarc 0.18 tries, in its order (its `get_lib_name_candidates` is private):
/// the probe must open the file cudarc will open.
pub(crate) fn library_candidates() -> Vec<String> {
    use std::env::consts::{DLL_PREFIX as P, DLL_SUFFIX as S};
    let (major, minor) = (
        REQUIRED_DRIVER_VERSION / 1000,
        (REQUIRED_DRIVER_VERSION % 1000) / 10,
    );
    let w = usize::BITS;
    ["cuda", "nvcuda"]
        .iter()
        .flat_map(|l| {
            [
                format!("{P}{l}{S}"),
                format!("{P}{l}{w}{S}"),
                format!("{P}{l}{w}_{major}{S}"),
                format!("{P}{l}{w}_{major}{minor}{S}"),
                format!("{P}{l}{w}_{major}{minor}_0{S}"),
                format!("{P}{l}{w}_{major}0_{minor}{S}"),
                format!("{P}{l}{w}_10{S}"),
                format!("{P}{l}{w}_11{S}"),
                format!("{P}{l}{w}_{major}0_0{S}"),
                format!("{P}{l}{w}_9{S}"),
                format!("{P}{l}{S}.{major}"),
                format!("{P}{l}{S}.11"),
                format!("{P}{l}{S}.10"),
                format!("{P}{l}{S}.1"),
            ]
        })
        .collect()
}

/// Opens the first candidate that loads (as cudarc does) and asks its version. The library is
/// returned so that it stays loaded: cudarc opens the same file next.
fn probe_driver() -> (DriverProbe, Option<libloading::Library>) {
    let tried = library_candidates();
    for name in &tried {
        // SAFETY: loading libcuda runs only the driver's own initializers, as any CUDA program
        // (and cudarc, next) does.
        let Ok(lib) = (unsafe { libloading::Library::new(name) }) else {
            continue;
        };
        // cuDriverGetVersion exists in every driver since CUDA 2.2 and needs no cuInit. Its
        // CUresult is a C enum, i.e. an int; read as c_int so an unknown code is no UB.
        type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
        // SAFETY: GetVersion is cuDriverGetVersion's C signature (cuda.h).
        let get = match unsafe { lib.get::<GetVersion>(b"cuDriverGetVersion\0") } {
            Ok(get) => get,
            Err(e) => {
                let library = name.clone();
                return (
                    DriverProbe::Unusable {
                        library,
                        reason: format!("no cuDriverGetVersion ({e})"),
                    },
                    Some(lib),
                );
            }
        };
        let mut version: c_int = 0;
        // SAFETY: version is a valid out-pointer; the symbol lives while lib does.
        let code = unsafe { get(&mut version) };
        let probe = if code == sys::CUresult::CUDA_SUCCESS as c_int {
            DriverProbe::Found {
                library: name.clone(),
                version,
            }
        } else {
            // The toolkit's link-time stand-in for libcuda answers every call with this code.
            let stub = if code == sys::CUresult::CUDA_ERROR_STUB_LIBRARY as c_int {
                " (the CUDA toolkit's stub, not a driver)"
            } else {
                ""
            };
            DriverProbe::Unusable {
                library: name.clone(),
                reason: format!("cuDriverGetVersion failed with code {code}{stub}"),
            }
        };
        return (probe, Some(lib));
    }
    (DriverProbe::Absent { tried }, None)
}

/// Finds libcuda, checks that it is at least [`REQUIRED_DRIVER_VERSION`], then lets cudarc load
/// it. Returns the driver's version (1000 * major + 10 * minor). Cheap after the first call.
///
/// # Errors
/// [`Error::NoDevice`] when there is no usable libcuda; [`Error::Unsupported`] when it is too
/// old. Neither panics (SPEC 11; issue 9).
///
/// Vendor: cuDriverGetVersion.
pub fn open_driver() -> Result<i32> {
    static PROBE: OnceLock<(DriverProbe, Option<libloading::Library>)> = OnceLock::new();
    static CUDARC_LOADS: OnceLock<bool> = OnceLock::new();
    let (probe, _library) = PROBE.get_or_init(probe_driver);
    let version = admit(probe, REQUIRED_DRIVER_VERSION)?;
    // SAFETY: the first library cudarc can open is the one just admitted, new enough to have
    // every symbol cudarc resolves, so its loader finds them all and does not panic.
    if !*CUDARC_LOADS.get_or_init(|| unsafe { sys::is_culib_present() }) {
        return Err(Error::NoDevice {
            backend: "cuda",
            reason: format!("cudarc could not load the CUDA driver ({probe:?})"),
        });
    }
    Ok(version)
}

/// `cuInit(0)`. [`open_driver`] must have returned `Ok` first.
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_NO_DEVICE`.
pub fn init() -> Result<()> {
    check("cuInit", result::init(), String::new)
}

/// `cuDeviceGetCount`.
///
/// # Errors
/// The driver's error.
pub fn device_count() -> Result<usize> {
    let n = check("cuDeviceGetCount", result::device::get_count(), String::new)?;
    Ok(n.max(0) as usize)
}

/// `cuDeviceGet`.
///
/// # Errors
/// The driver's error, e.g. for an ordinal beyond the device count.
pub fn device(ordinal: usize) -> Result<CUdevice> {
    let ordinal_c = c_int::try_from(ordinal).map_err(|_| {
        Error::InvalidInput(format!("cuda: device ordinal {ordinal} is out of range"))
    })?;
    check("cuDeviceGet", result::device::get(ordinal_c), || {
        format!("opening device {ordinal}")
    })
}

/// `cuDeviceGetName`.
///
/// # Errors
/// The driver's error.
pub fn device_name(dev: CUdevice) -> Result<String> {
    check("cuDeviceGetName", result::device::get_name(dev), || {
        format!("device {dev}")
    })
}

/// `cuDeviceGetAttribute`.
///
/// # Errors
/// The driver's error.
pub fn attribute(dev: CUdevice, attr: Attribute) -> Result<i32> {
    // SAFETY: a CUdevice is an ordinal the driver checks (CUDA_ERROR_INVALID_DEVICE otherwise);
    // haloport gets them only from cuDeviceGet (`device`).
    let value = unsafe { result::device::get_attribute(dev, attr) };
    check("cuDeviceGetAttribute", value, || {
        format!("reading {attr:?} of device {dev}")
    })
}

/// `cuDevicePrimaryCtxRetain` then `cuCtxSetCurrent`; releases the context again if it cannot
/// be made current.
///
/// # Errors
/// The driver's error.
pub fn retain_primary_context(dev: CUdevice) -> Result<CUcontext> {
    // SAFETY: dev came from cuDeviceGet (`device`).
    let retained = unsafe { result::primary_ctx::retain(dev) };
    let ctx = check("cuDevicePrimaryCtxRetain", retained, || {
        format!("device {dev}")
    })?;
    // SAFETY: ctx was just retained and is live.
    let current = unsafe { result::ctx::set_current(ctx) };
    if let Err(e) = check("cuCtxSetCurrent", current, || format!("device {dev}")) {
        if let Err(release) = release_primary_context(dev) {
            tracing::error!("{release}");
        }
        return Err(e);
    }
    Ok(ctx)
}

/// `cuCtxSetCurrent`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `ctx` is a live context (retained and not yet released).
pub unsafe fn set_current(ctx: CUcontext) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::ctx::set_current(ctx) };
    check("cuCtxSetCurrent", done, || {
        "making haloport's context current".into()
    })
}

/// `cuCtxGetCurrent`: the calling thread's current context (null for none), as a number.
///
/// # Errors
/// The driver's error.
pub fn current_context() -> Result<usize> {
    let current = result::ctx::get_current();
    let ctx = check("cuCtxGetCurrent", current, || {
        "asking which context the thread has current".into()
    })?;
    Ok(ctx.map_or(0, |c| c as usize))
}

/// `cuCtxSetCurrent` of a context [`current_context`] returned (0: none): gives the thread
/// back the context it had before haloport's call.
///
/// # Errors
/// The driver's error.
pub fn restore_context(previous: usize) -> Result<()> {
    // SAFETY: `previous` was the thread's current context when haloport's call began; the
    // application keeps its own contexts alive across its calls into haloport (null is
    // allowed: it unbinds the thread).
    let done = unsafe { result::ctx::set_current(previous as CUcontext) };
    check("cuCtxSetCurrent", done, || {
        "making the application's context current again".into()
    })
}

/// Where `addr` lies, as `cuPointerGetAttributes` says: a zero memory type for an address
/// the driver does not know (pageable host memory, a dangling pointer), which the call
/// reports without an error.
#[derive(Debug, Clone, Copy, Default)]
pub struct PointerInfo {
    /// `CUmemorytype` (0: unknown to the driver; 1 host, 2 device, 3 array, 4 unified).
    pub memory_type: u32,
    /// The device the memory belongs to (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`).
    pub device: i32,
    /// Managed memory (`cudaMallocManaged`): device kernels may use it wherever it lives.
    pub managed: bool,
    /// The allocation's first address and size.
    pub range_start: CUdeviceptr,
    pub range_size: usize,
}

/// `CU_MEMORYTYPE_DEVICE`, as [`PointerInfo::memory_type`] holds it.
pub const MEMORY_TYPE_DEVICE: u32 = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;

/// `cuPointerGetAttributes` of memory type, device ordinal, managed and the allocation's range.
///
/// # Errors
/// The driver's error.
pub fn pointer_info(addr: u64) -> Result<PointerInfo> {
    use sys::CUpointer_attribute as A;
    let mut info = PointerInfo::default();
    let mut managed: c_int = 0;
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        A::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut data: [*mut c_void; 5] = [
        (&raw mut info.memory_type).cast(),
        (&raw mut info.device).cast(),
        (&raw mut managed).cast(),
        (&raw mut info.range_start).cast(),
        (&raw mut info.range_size).cast(),
    ];
    // SAFETY: five attributes, each with an out-pointer of the type the driver writes for it
    // (unsigned int, int, bool as int, CUdeviceptr, size_t); the call reads `addr` as a
    // number only. cudarc's result layer lacks this call.
    let code = unsafe {
        sys::cuPointerGetAttributes(
            attrs.len() as c_uint,
            attrs.as_mut_ptr(),
            data.as_mut_ptr(),
            addr as CUdeviceptr,
        )
    };
    check("cuPointerGetAttributes", code.result(), || {
        format!("asking where address {addr:#x} lies")
    })?;
    info.managed = managed != 0;
    Ok(info)
}

/// `cuDevicePrimaryCtxRelease`.
///
/// # Errors
/// The driver's error.
pub fn release_primary_context(dev: CUdevice) -> Result<()> {
    // SAFETY: dev came from cuDeviceGet; the driver refuses a release without a retain.
    let released = unsafe { result::primary_ctx::release(dev) };
    check("cuDevicePrimaryCtxRelease", released, || {
        format!("device {dev}")
    })
}

/// `cuMemAlloc` of `bytes` (at least 1), zeroed with `cuMemsetD8` before returning.
///
/// # Errors
/// [`Error::OutOfMemory`]; the driver's error.
pub fn mem_alloc_zeroed(bytes: usize) -> Result<CUdeviceptr> {
    // SAFETY: a current context exists (backend invariant); the memory is zeroed below before
    // anyone reads it.
    let ptr = match unsafe { result::malloc_sync(bytes.max(1)) } {
        Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
            return Err(Error::OutOfMemory {
                backend: "cuda",
                bytes,
                kind: "device memory",
            })
        }
        other => check("cuMemAlloc", other, || {
            format!("allocating {bytes} bytes of device memory")
        })?,
    };
    // cuMemsetD8 on device memory returns before it completes and runs on the legacy stream,
    // which haloport's non-blocking streams do not wait for: without waiting here a kernel or
    // copy on them could see the memory before it is zero. Waiting on the legacy stream (not
    // cuCtxSynchronize) leaves a running persistent kernel alone.
    // SAFETY: ptr points at bytes.max(1) bytes just allocated, freed by no one yet.
    let memset = unsafe { result::memset_d8_sync(ptr, 0, bytes) };
    let zeroed =
        check("cuMemsetD8", memset, || "zeroing new device memory".into()).and_then(|()| {
            // SAFETY: the null stream is the legacy stream, always valid in a current context.
            let synced = unsafe { result::stream::synchronize(result::stream::null()) };
            check("cuStreamSynchronize", synced, || {
                "waiting for the legacy stream to zero new device memory".into()
            })
        });
    if let Err(e) = zeroed {
        // SAFETY: ptr was allocated above and is freed once; the failed memset no longer runs
        // (its stream was synchronized, or it failed to queue).
        if let Err(free) = unsafe { mem_free(ptr) } {
            tracing::error!("{free}");
        }
        return Err(e);
    }
    Ok(ptr)
}

/// `cuMemFree`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `ptr` came from [`mem_alloc_zeroed`] and is freed once, after all work using it completed.
pub unsafe fn mem_free(ptr: CUdeviceptr) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    check("cuMemFree", unsafe { result::memory_free(ptr) }, || {
        "freeing device memory".into()
    })
}

/// `cuMemHostAlloc(bytes, PORTABLE | DEVICEMAP)`: page-locked, mapped, never write-combined
/// (the CPU reads it), zeroed, then `cuMemHostGetDevicePointer` for the kernels' address.
///
/// # Errors
/// [`Error::OutOfMemory`]; the driver's error.
pub fn host_alloc_mapped(bytes: usize) -> Result<(*mut u8, CUdeviceptr)> {
    let flags = (sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP) as c_uint;
    // SAFETY: a current context exists (backend invariant); the memory is zeroed below before
    // anyone reads it.
    let host = match unsafe { result::malloc_host(bytes.max(1), flags) } {
        Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
            return Err(Error::OutOfMemory {
                backend: "cuda",
                bytes,
                kind: "pinned host memory",
            })
        }
        other => check("cuMemHostAlloc", other, || {
            format!("allocating {bytes} bytes of mapped pinned memory")
        })?,
    };
    let mut dev: CUdeviceptr = 0;
    // Raw sys call: cudarc's result layer has no cuMemHostGetDevicePointer.
    // SAFETY: host was allocated with DEVICEMAP just above; dev is a valid out-pointer.
    let code = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
    if let Err(e) = check("cuMemHostGetDevicePointer", code.result(), || {
        "mapping pinned memory".into()
    }) {
        // SAFETY: host was allocated above, is unused and freed once.
        if let Err(free) = unsafe { host_free(host.cast()) } {
            tracing::error!("{free}");
        }
        return Err(e);
    }
    // SAFETY: host points at bytes.max(1) writable bytes no device work knows of yet; the CPU
    // writes them synchronously, so no stream ordering is involved.
    unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
    Ok((host.cast(), dev))
}

/// `cuMemFreeHost`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `host` came from [`host_alloc_mapped`] and is freed once, after all work using it completed.
pub unsafe fn host_free(host: *mut u8) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::free_host(host.cast()) };
    check("cuMemFreeHost", done, || "freeing pinned memory".into())
}

/// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: no implicit synchronization with the legacy stream.
///
/// # Errors
/// The driver's error.
pub fn stream_create() -> Result<CUstream> {
    let stream = result::stream::create(result::stream::StreamKind::NonBlocking);
    check("cuStreamCreate", stream, || "creating a stream".into())
}

/// `cuCtxGetStreamPriorityRange`, then `cuStreamCreateWithPriority(CU_STREAM_NON_BLOCKING)`
/// at the greatest priority of the current context (the numerically lowest value: lower
/// numbers are greater priorities; streams made by [`stream_create`] have the default, 0).
///
/// # Errors
/// The driver's error.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html> (cuStreamCreateWithPriority).
pub fn stream_create_urgent() -> Result<CUstream> {
    let (mut least, mut greatest): (c_int, c_int) = (0, 0);
    // Raw sys call: cudarc 0.18's result layer has no stream priorities.
    // SAFETY: both are valid out-pointers; a current context exists (backend invariant).
    let code = unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) };
    check("cuCtxGetStreamPriorityRange", code.result(), || {
        "asking the context's stream priorities".into()
    })?;
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint;
    let mut stream: CUstream = std::ptr::null_mut();
    // Raw sys call: cudarc 0.18's result layer has no stream priorities.
    // SAFETY: stream is a valid out-pointer; a current context exists (backend invariant).
    let code = unsafe { sys::cuStreamCreateWithPriority(&mut stream, flags, greatest) };
    check("cuStreamCreateWithPriority", code.result(), || {
        format!("creating a stream of priority {greatest} (least {least})")
    })?;
    Ok(stream)
}

/// `cuStreamQuery`: `Ok(true)` when idle, `Ok(false)` while work is pending.
///
/// # Errors
/// The driver's error, e.g. from a kernel that faulted.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_query(s: CUstream) -> Result<bool> {
    // Raw sys call: cudarc's result layer has no cuStreamQuery.
    // SAFETY: forwarded from this function's contract.
    match unsafe { sys::cuStreamQuery(s) } {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        code => check("cuStreamQuery", code.result(), || "polling a stream".into()).map(|()| true),
    }
}

/// `cuStreamSynchronize`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `s` is a live stream.
pub unsafe fn stream_synchronize(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::stream::synchronize(s) };
    check("cuStreamSynchronize", done, || {
        "waiting for a stream".into()
    })
}

/// `cuStreamDestroy`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `s` is a live stream, destroyed once.
pub unsafe fn stream_destroy(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::stream::destroy(s) };
    check("cuStreamDestroy", done, || "destroying a stream".into())
}

/// `cuStreamWaitEvent`: work queued on `s` afterwards waits for `e`'s last record.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `s` and `e` are live and belong to the current context.
pub unsafe fn stream_wait_event(s: CUstream, e: CUevent) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done =
        unsafe { result::stream::wait_event(s, e, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) };
    check("cuStreamWaitEvent", done, || {
        "ordering a stream after an event".into()
    })
}

/// `cuEventCreate(CU_EVENT_DEFAULT)`: with timing.
///
/// # Errors
/// The driver's error.
pub fn event_create() -> Result<CUevent> {
    let event = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT);
    check("cuEventCreate", event, || "creating an event".into())
}

/// `cuEventCreate(CU_EVENT_DISABLE_TIMING)`: a completion marker.
///
/// # Errors
/// The driver's error.
pub fn event_create_marker() -> Result<CUevent> {
    let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
    check("cuEventCreate", event, || "creating a marker event".into())
}

/// `cuEventRecord`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `e` and `s` are live and belong to the current context.
pub unsafe fn event_record(e: CUevent, s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::event::record(e, s) };
    check("cuEventRecord", done, || "recording an event".into())
}

/// `cuEventQuery`: `Ok(true)` when complete, `Ok(false)` while work before it is pending.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `e` is a live event.
pub unsafe fn event_query(e: CUevent) -> Result<bool> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { result::event::query(e) } {
        Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
        other => check("cuEventQuery", other, || "polling an event".into()).map(|()| true),
    }
}

/// `cuEventElapsedTime`, milliseconds.
///
/// # Errors
/// The driver's error, e.g. when an event has not completed.
///
/// # Safety
/// 1. Both events are live.
pub unsafe fn event_elapsed_ms(start: CUevent, end: CUevent) -> Result<f32> {
    // SAFETY: forwarded from this function's contract.
    let ms = unsafe { result::event::elapsed(start, end) };
    check("cuEventElapsedTime", ms, || "timing two events".into())
}

/// `cuEventDestroy`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `e` is a live event, destroyed once.
pub unsafe fn event_destroy(e: CUevent) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::event::destroy(e) };
    check("cuEventDestroy", done, || "destroying an event".into())
}

/// `cuStreamBeginCapture(CU_STREAM_CAPTURE_MODE_RELAXED)`: work queued on `s` is captured
/// into a graph until [`stream_end_capture`], not run. Relaxed: other streams of the process
/// may still allocate and synchronize meanwhile (an exchange uploading a new region table).
///
/// # Errors
/// The driver's error, e.g. for a stream already capturing.
///
/// # Safety
/// 1. `s` is a live stream of the current context, not the legacy default stream.
pub unsafe fn stream_begin_capture(s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe {
        result::stream::begin_capture(s, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
    };
    check("cuStreamBeginCapture", done, || {
        "starting to capture a stream into a graph".into()
    })
}

/// `cuStreamEndCapture`, then `cuGraphInstantiate` of what was captured (the template graph
/// destroyed once instantiated). Ends the capture whether or not instantiation succeeds.
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` when a call during the
/// capture was not capturable.
///
/// # Safety
/// 1. `s` is a live stream capturing since [`stream_begin_capture`].
pub unsafe fn stream_end_capture(s: CUstream) -> Result<CUgraphExec> {
    // SAFETY: forwarded from this function's contract.
    let graph = unsafe { result::stream::end_capture(s) };
    let graph = check("cuStreamEndCapture", graph, || {
        "ending the capture of a stream".into()
    })?;
    if graph.is_null() {
        return Err(Error::Internal(
            "the capture of a stream gave no graph".into(),
        ));
    }
    // Each kernel node keeps the priority of the stream it was captured on (without the flag
    // every node takes the priority of the stream the graph is launched into): a step's small
    // kernels on the urgent stream (the exchange's, the stencil's ready word) then start
    // while the inner box's blocks still wait for SMs, as they do outside a graph.
    let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        as u64
        | sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY as u64;
    let mut exec = std::mem::MaybeUninit::uninit();
    // SAFETY: `graph` is the live graph the capture gave; destroyed once, below; `exec` is
    // written before it is read (on success).
    let exec = unsafe { sys::cuGraphInstantiateWithFlags(exec.as_mut_ptr(), graph, flags) }
        .result()
        // SAFETY: the call succeeded, so it wrote `exec`.
        .map(|()| unsafe { exec.assume_init() });
    // SAFETY: the instantiated graph no longer needs its template.
    let destroyed = unsafe { result::graph::destroy(graph) };
    let exec = check("cuGraphInstantiate", exec, || {
        "instantiating a captured graph".into()
    })?;
    check("cuGraphDestroy", destroyed, || {
        "destroying a captured graph's template".into()
    })?;
    Ok(exec)
}

/// `cuGraphLaunch`: one replay of `g` on `s`, after the work queued there before.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `g` and `s` are live and belong to the current context.
/// 2. Everything the graph's nodes touch is valid until the replay completes.
pub unsafe fn graph_launch(g: CUgraphExec, s: CUstream) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::graph::launch(g, s) };
    check("cuGraphLaunch", done, || "replaying a graph".into())
}

/// `cuGraphExecDestroy`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `g` is live and destroyed once; replays already queued complete first (the driver's
///    rule for destroying an executable graph).
pub unsafe fn graph_destroy(g: CUgraphExec) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::graph::exec_destroy(g) };
    check("cuGraphExecDestroy", done, || "destroying a graph".into())
}

/// `cuMemcpyHtoDAsync`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `src` is non-null and valid for `bytes` reads, `dst` for `bytes` writes, until the copy
///    completes.
/// 2. Nothing else writes either range, or reads `dst`, until the copy completes.
/// 3. `s` is a live stream of the current context.
pub unsafe fn memcpy_htod_async(
    dst: CUdeviceptr,
    src: *const u8,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: by 1 and 2 the range is valid and unchanged while this shared slice lives (this
    // call only); the driver reads it later, still covered by 1 and 2.
    let src = unsafe { std::slice::from_raw_parts(src, bytes) };
    // SAFETY: forwarded from this function's contract.
    let queued = unsafe { result::memcpy_htod_async(dst, src, s) };
    check("cuMemcpyHtoDAsync", queued, || {
        format!("queueing a copy of {bytes} bytes to the device")
    })
}

/// `cuMemcpyDtoHAsync`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `dst` is non-null and valid for `bytes` writes, `src` for `bytes` reads, until the copy
///    completes.
/// 2. Nothing else accesses `dst`, or writes `src`, until the copy completes.
/// 3. `s` is a live stream of the current context.
pub unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> Result<()> {
    // SAFETY: by 1 and 2 the range is valid and exclusively the copy's while this slice lives
    // (this call only); the driver writes it later, still covered by 1 and 2.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, bytes) };
    // SAFETY: forwarded from this function's contract.
    let queued = unsafe { result::memcpy_dtoh_async(dst, src, s) };
    check("cuMemcpyDtoHAsync", queued, || {
        format!("queueing a copy of {bytes} bytes to the host")
    })
}

/// `cuMemcpy3DAsync` between two unified (device) addresses.
///
/// Both sides are `CU_MEMORYTYPE_UNIFIED`, not `CU_MEMORYTYPE_DEVICE`: haloport's device
/// addresses may be device memory, the device address of mapped pinned host memory (under
/// unified addressing the same as its host address) or another process's memory opened by
/// IPC, and with UNIFIED the driver looks up where each lies and picks the copy's direction
/// (device to device, to or from the host), as `cudaMemcpyDefault` does. DEVICE would claim
/// pinned host memory is device memory, which the driver does not document as valid. UNIFIED
/// needs a context with unified addressing (`CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING`, which
/// the backend checks first).
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_INVALID_VALUE` for a pitch above the device's limit.
///
/// # Safety
/// 1. The rows `copy` reads from `src` and writes at `dst` are valid device memory of the
///    current context (or mapped into it) until the copy completes.
/// 2. Nothing else writes the rows read, or touches the rows written, until the copy
///    completes.
/// 3. `s` is a live stream of the current context.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuMemcpy3DAsync).
pub unsafe fn memcpy_3d_async(copy: &haloport_core::Copy3d, s: CUstream) -> Result<()> {
    let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED;
    let params = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: unified,
        srcHost: std::ptr::null(),
        srcDevice: copy.src,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: copy.src_pitch,
        srcHeight: copy.src_rows,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: unified,
        dstHost: std::ptr::null_mut(),
        dstDevice: copy.dst,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: copy.dst_pitch,
        dstHeight: copy.dst_rows,
        WidthInBytes: copy.width,
        Height: copy.height,
        Depth: copy.depth,
    };
    // Raw sys call: cudarc 0.18's result layer has no 3-D copies.
    // SAFETY: params is a complete CUDA_MEMCPY3D the driver reads during the call; the memory
    // it names satisfies this function's contract.
    let code = unsafe { sys::cuMemcpy3DAsync_v2(&params, s) };
    check("cuMemcpy3DAsync", code.result(), || {
        format!("queueing a 3-D copy of {copy}")
    })
}

/// `cuModuleLoadData`.
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_NO_BINARY_FOR_GPU`.
///
/// # Safety
/// 1. `image` points at a complete fatbin/cubin/PTX image, 8-byte aligned, that outlives the
///    call.
pub unsafe fn module_load_data(image: *const u8) -> Result<CUmodule> {
    // SAFETY: forwarded from this function's contract.
    let module = unsafe { result::module::load_data(image.cast()) };
    check("cuModuleLoadData", module, || {
        "loading haloport's kernels".into()
    })
}

/// `cuModuleGetFunction`.
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_NOT_FOUND`.
///
/// # Safety
/// 1. `m` is a live module.
pub unsafe fn module_function(m: CUmodule, name: CString) -> Result<CUfunction> {
    let what = format!("looking up kernel {name:?}");
    // SAFETY: forwarded from this function's contract.
    let f = unsafe { result::module::get_function(m, name) };
    check("cuModuleGetFunction", f, || what)
}

/// `cuModuleUnload`.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `m` is a live module, unloaded once, with no kernel of it running.
pub unsafe fn module_unload(m: CUmodule) -> Result<()> {
    // SAFETY: forwarded from this function's contract.
    let done = unsafe { result::module::unload(m) };
    check("cuModuleUnload", done, || {
        "unloading haloport's kernels".into()
    })
}

/// How a kernel is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchKind {
    /// `cuLaunchKernel`: blocks run as the device finds room.
    Plain,
    /// `cuLaunchCooperativeKernel`: the driver launches only if every block can be resident at
    /// once, for kernels whose blocks wait for each other.
    Cooperative,
}

/// What a launch did.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launched {
    /// Queued on the stream.
    Queued,
    /// A cooperative launch the driver refused because the grid cannot be resident at once
    /// (`CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`); the caller says which kernel and device.
    TooLargeToBeCoresident,
}

/// `cuLaunchKernel` or `cuLaunchCooperativeKernel` of a kernel taking one argument by value,
/// `dims.blocks` x `dims.threads`, no dynamic shared memory.
///
/// # Errors
/// The driver's error, naming `what` and the dimensions.
///
/// # Safety
/// 1. `f` is a live function whose only parameter has the type and layout of `*arg`.
/// 2. Every address inside `*arg` satisfies `Backend::launch`'s contract.
/// 3. `s` is a live stream of the current context.
pub unsafe fn launch_one_arg(
    f: CUfunction,
    dims: LaunchDims,
    s: CUstream,
    arg: *const c_void,
    what: &str,
    kind: LaunchKind,
) -> Result<Launched> {
    let mut params = [arg.cast_mut()];
    let (grid, block) = ((dims.blocks, 1, 1), (dims.threads, 1, 1));
    // SAFETY: forwarded from this function's contract; the driver copies the argument before
    // returning, so `params` and `*arg` need only live through the call.
    let (call, launched) = unsafe {
        match kind {
            LaunchKind::Plain => (
                "cuLaunchKernel",
                result::launch_kernel(f, grid, block, 0, s, &mut params),
            ),
            LaunchKind::Cooperative => (
                "cuLaunchCooperativeKernel",
                result::launch_cooperative_kernel(f, grid, block, 0, s, &mut params),
            ),
        }
    };
    match launched {
        Err(DriverError(sys::CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)) => {
            Ok(Launched::TooLargeToBeCoresident)
        }
        other => check(call, other, || {
            format!(
                "launching {what} with {} blocks x {} threads",
                dims.blocks, dims.threads
            )
        })
        .map(|()| Launched::Queued),
    }
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`, without dynamic shared memory.
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `f` is a live function.
pub unsafe fn occupancy_per_sm(f: CUfunction, threads: u32) -> Result<u32> {
    let threads_c = c_int::try_from(threads).map_err(|_| {
        Error::InvalidInput(format!("cuda: {threads} threads per block is out of range"))
    })?;
    // SAFETY: forwarded from this function's contract.
    let n = unsafe { result::occupancy::max_active_block_per_multiprocessor(f, threads_c, 0) };
    let n = check("cuOccupancyMaxActiveBlocksPerMultiprocessor", n, || {
        format!("{threads} threads per block")
    })?;
    Ok(n.max(0) as u32)
}

/// Size of a CUDA IPC memory handle in bytes (`CU_IPC_HANDLE_SIZE`, 64).
pub const IPC_HANDLE_SIZE: usize = sys::CU_IPC_HANDLE_SIZE as usize;

// The handle travels as bytes: the struct must be exactly its reserved array.
const _: () = assert!(std::mem::size_of::<sys::CUipcMemHandle>() == IPC_HANDLE_SIZE);

/// `cuIpcGetMemHandle`: the opaque handle of the allocation `ptr` lies in, as bytes. The handle
/// names the whole allocation (SPEC 11), so `ptr` should be an allocation's base, as every
/// [`mem_alloc_zeroed`] pointer is; `len` is only for messages.
///
/// # Errors
/// The driver's error, e.g. `CUDA_ERROR_INVALID_VALUE` for an address it did not allocate with
/// `cuMemAlloc` (pooled or managed memory).
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuIpcGetMemHandle).
pub fn ipc_get_mem_handle(ptr: CUdeviceptr, len: usize) -> Result<[u8; IPC_HANDLE_SIZE]> {
    let mut handle = sys::CUipcMemHandle {
        reserved: [0; IPC_HANDLE_SIZE],
    };
    // Raw sys call: cudarc 0.18's result layer has no IPC calls.
    // SAFETY: handle is a valid out-pointer for one CUipcMemHandle; the driver validates ptr.
    let code = unsafe { sys::cuIpcGetMemHandle(&mut handle, ptr) };
    check("cuIpcGetMemHandle", code.result(), || {
        format!("exporting {len} bytes of device memory at {ptr:#x}")
    })?;
    Ok(handle.reserved.map(|c| c as u8))
}

/// `cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)`: maps another process's allocation
/// into the current context (enabling peer access to its device when needed) and returns its
/// address here. `len` is only for messages.
///
/// # Errors
/// The driver's error. `CUDA_ERROR_INVALID_CONTEXT` is also what CUDA answers for a handle this
/// very process exported, and the message says so.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuIpcOpenMemHandle).
pub fn ipc_open_mem_handle(bytes: &[u8; IPC_HANDLE_SIZE], len: usize) -> Result<CUdeviceptr> {
    let handle = sys::CUipcMemHandle {
        reserved: bytes.map(|b| b as std::ffi::c_char),
    };
    let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as c_uint;
    let mut ptr: CUdeviceptr = 0;
    // Raw sys call: cudarc 0.18's result layer has no IPC calls.
    // SAFETY: ptr is a valid out-pointer; the handle is passed by value and the driver refuses
    // one it does not know; a current context exists (backend invariant).
    let code = unsafe { sys::cuIpcOpenMemHandle_v2(&mut ptr, handle, flags) };
    let same_process = code == sys::CUresult::CUDA_ERROR_INVALID_CONTEXT;
    check("cuIpcOpenMemHandle", code.result(), || {
        format!(
            "opening another process's {len} bytes of device memory{}",
            if same_process {
                " (CUDA answers this for a handle exported by this same process, which it never \
                 opens: use the allocation directly)"
            } else {
                ""
            }
        )
    })?;
    Ok(ptr)
}

/// `cuIpcCloseMemHandle`: unmaps memory [`ipc_open_mem_handle`] mapped (the owner frees it).
///
/// # Errors
/// The driver's error.
///
/// # Safety
/// 1. `ptr` came from [`ipc_open_mem_handle`] and is closed once.
/// 2. No kernel or copy that uses the mapping is queued or running.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuIpcCloseMemHandle).
pub unsafe fn ipc_close_mem_handle(ptr: CUdeviceptr) -> Result<()> {
    // Raw sys call: cudarc 0.18's result layer has no IPC calls.
    // SAFETY: forwarded from this function's contract.
    let code = unsafe { sys::cuIpcCloseMemHandle(ptr) };
    check("cuIpcCloseMemHandle", code.result(), || {
        format!("unmapping another process's device memory at {ptr:#x}")
    })
}

/// `cuDeviceGetPCIBusId`: the device's PCI bus id, e.g. `0000:1B:00.0`.
///
/// # Errors
/// The driver's error.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuDeviceGetPCIBusId).
pub fn device_pci_bus_id(dev: CUdevice) -> Result<String> {
    // The driver writes at most len chars including the NUL; the last one stays 0 regardless.
    let mut buf: [std::ffi::c_char; 64] = [0; 64];
    let len = (buf.len() - 1) as c_int;
    // Raw sys call: cudarc 0.18's result layer has no cuDeviceGetPCIBusId.
    // SAFETY: buf holds len + 1 chars; dev came from cuDeviceGet (`device`).
    let code = unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), len, dev) };
    check("cuDeviceGetPCIBusId", code.result(), || {
        format!("naming device {dev}")
    })?;
    let bytes = buf.map(|c| c as u8);
    let id = std::ffi::CStr::from_bytes_until_nul(&bytes).map_err(|_| Error::Backend {
        backend: "cuda",
        call: "cuDeviceGetPCIBusId",
        code: 0,
        name: "unterminated".into(),
        context: format!("naming device {dev}"),
    })?;
    Ok(id.to_string_lossy().into_owned())
}

/// `cuDeviceGetByPCIBusId`: the device with that PCI bus id, or `Ok(None)` when this process
/// does not see it (`CUDA_ERROR_INVALID_DEVICE`: another node, or hidden by
/// `CUDA_VISIBLE_DEVICES`).
///
/// # Errors
/// [`Error::InvalidInput`] for an id holding a NUL; the driver's other errors (e.g.
/// `CUDA_ERROR_INVALID_VALUE` for a malformed id).
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html> (cuDeviceGetByPCIBusId).
pub fn device_by_pci_bus_id(id: &str) -> Result<Option<CUdevice>> {
    let c_id = CString::new(id)
        .map_err(|_| Error::InvalidInput(format!("cuda: PCI bus id {id:?} holds a NUL")))?;
    let mut dev: CUdevice = 0;
    // Raw sys call: cudarc 0.18's result layer has no cuDeviceGetByPCIBusId.
    // SAFETY: dev is a valid out-pointer; c_id is NUL-terminated and outlives the call.
    match unsafe { sys::cuDeviceGetByPCIBusId(&mut dev, c_id.as_ptr()) } {
        sys::CUresult::CUDA_ERROR_INVALID_DEVICE => Ok(None),
        code => check("cuDeviceGetByPCIBusId", code.result(), || {
            format!("finding device {id}")
        })
        .map(|()| Some(dev)),
    }
}

/// `cuDeviceCanAccessPeer`: whether kernels on `dev` can access memory on `peer`. The driver
/// answers no for `dev == peer`: callers treat one device as reachable themselves.
///
/// # Errors
/// The driver's error.
///
/// Vendor: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PEER__ACCESS.html> (cuDeviceCanAccessPeer).
pub fn can_access_peer(dev: CUdevice, peer: CUdevice) -> Result<bool> {
    let mut can: c_int = 0;
    // Raw sys call: cudarc 0.18's result layer has no cuDeviceCanAccessPeer.
    // SAFETY: can is a valid out-pointer; the driver checks both ordinals.
    let code = unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) };
    check("cuDeviceCanAccessPeer", code.result(), || {
        format!("asking whether device {dev} can access device {peer}")
    })?;
    Ok(can != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(version: i32) -> DriverProbe {
        DriverProbe::Found {
            library: "libcuda.so.1".into(),
            version,
        }
    }

    #[test]
    fn this_build_needs_the_cuda_version_of_its_cudarc_feature() {
        // Cargo.toml enables cudarc's cuda-13000: keep this test in step when it changes.
        assert_eq!(REQUIRED_DRIVER_VERSION, 13000);
        assert_eq!(version_string(REQUIRED_DRIVER_VERSION), "13.0");
        assert_eq!(version_string(12040), "12.4");
        assert_eq!(version_string(12090), "12.9");
        assert_eq!(version_string(13010), "13.1");
    }

    #[test]
    fn an_older_driver_is_refused_naming_both_versions() {
        let e = admit(&found(12040), 13000).expect_err("12.4 < 13.0");
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "cuda: unsupported: CUDA driver 12.4 is older than 13.0, which this build of \
             haloport needs (update the driver, or build haloport for an older CUDA)"
        );
        assert!(admit(&found(12090), 13000).is_err());
    }

    #[test]
    fn the_same_or_a_newer_driver_is_admitted() {
        assert_eq!(admit(&found(13000), 13000).ok(), Some(13000));
        assert_eq!(admit(&found(13010), 13000).ok(), Some(13010));
        assert_eq!(admit(&found(12040), 12040).ok(), Some(12040));
    }

    #[test]
    fn no_or_a_broken_driver_is_no_device() {
        let absent = DriverProbe::Absent {
            tried: vec!["libcuda.so".into(), "libcuda.so.1".into()],
        };
        let e = admit(&absent, 13000).expect_err("absent");
        assert!(matches!(e, Error::NoDevice { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("the 2 names cudarc tries (libcuda.so ... libcuda.so.1)"),
            "{e}"
        );
        let broken = DriverProbe::Unusable {
            library: "libcuda.so".into(),
            reason: "no cuDriverGetVersion".into(),
        };
        let e = admit(&broken, 13000).expect_err("broken");
        assert!(matches!(e, Error::NoDevice { .. }), "{e:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_probe_tries_cudarcs_names_in_cudarcs_order() {
        let names = library_candidates();
        assert_eq!(names[0], "libcuda.so");
        let one = names.iter().position(|n| n == "libcuda.so.1");
        let major = names.iter().position(|n| n == "libcuda.so.13");
        assert!(major.is_some() && one.is_some() && major < one, "{names:?}");
        assert_eq!(names.len(), 28);
    }

    #[test]
    fn driver_errors_name_the_call_the_code_and_the_context() {
        let failed: std::result::Result<(), DriverError> =
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        let e = check("cuMemAlloc", failed, || "allocating 8 bytes".into()).expect_err("failed");
        assert_eq!(
            e.to_string(),
            "cuda: cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY (2) while allocating 8 bytes"
        );
        let ok: std::result::Result<u8, DriverError> = Ok(7);
        assert_eq!(check("cuInit", ok, || unreachable!()).ok(), Some(7));
    }
}
