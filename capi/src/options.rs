//! The options handle: how an exchange runs.

use std::ffi::{c_char, CStr};
use std::path::PathBuf;
use std::time::Duration;

use haloport::core::halo::{HaloOptions, HaloStrategy, RoutesFile};
use haloport::core::transport::{GpuAwareMpi, TransportKind};

use crate::handles::{null, AtExit, Kind, Table};
use crate::status::{entry, Failure, HaloportStatus, Outcome};

/// How an exchange runs: transport, strategy, time-out, checked mode. Made with
/// `haloport_options_new` (defaults: `mpi`, `base`, 10 s, unchecked), freed with
/// `haloport_options_free`; an exchange copies it. Every rank gives the same options (the
/// time-out may differ).
pub struct HaloportOptions {
    _opaque: [u8; 0],
}

/// How messages travel.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportTransport {
    /// Every neighbour host-staged through MPI (works with any MPI, CUDA-aware or not).
    Mpi = 0,
    /// Neighbours on the same node device-direct (CUDA/HIP IPC), others through MPI.
    Ipc = 1,
    /// Every neighbour through NCCL (RCCL with the HIP backend), loaded at run time.
    Nccl = 2,
    /// Per neighbour: device-direct within a node, NCCL between nodes where every rank of a
    /// GPU backend loads it, otherwise through MPI.
    Auto = 3,
}

/// Whether messages that travel through MPI go from device memory (GPU-aware MPI).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportGpuAwareMpi {
    /// Where the MPI library says it takes the backend's device memory (never on the host
    /// backend).
    Auto = 0,
    /// Always (an MPI that cannot read device memory fails inside its calls).
    On = 1,
    /// Never: host-staged.
    Off = 2,
}

/// When host-staged messages move, relative to the pack and unpack kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportStrategy {
    /// Pack everything, then send; receive everything, then unpack.
    Base = 0,
    /// Send each neighbour's message as soon as it is packed; unpack each as it arrives.
    Taskqueue = 1,
}

thread_local! {
    static OPTIONS: Table<HaloOptions> = Table::new("options", AtExit::Drop);
}

pub(crate) const OPTIONS_KIND: Kind<HaloOptions> = Kind {
    table: &OPTIONS,
    name: "options",
};

/// Makes options with the defaults: `mpi`, `base`, a time-out of 10 s, unchecked.
#[no_mangle]
pub extern "C" fn haloport_options_new(out: *mut *mut HaloportOptions) -> HaloportStatus {
    entry("haloport_options_new", || {
        OPTIONS_KIND.insert(HaloOptions::default(), out)
    })
}

/// Frees an options handle. NULL is allowed and does nothing.
#[no_mangle]
pub extern "C" fn haloport_options_free(options: *mut HaloportOptions) -> HaloportStatus {
    entry("haloport_options_free", || {
        if !options.is_null() {
            OPTIONS_KIND.free(options)?;
        }
        Ok(())
    })
}

fn change(
    function: &str,
    options: *mut HaloportOptions,
    f: impl FnOnce(&mut HaloOptions) -> Outcome,
) -> HaloportStatus {
    entry(function, || OPTIONS_KIND.with(options, f))
}

/// Sets the transport: a `haloport_transport`.
#[no_mangle]
pub extern "C" fn haloport_options_set_transport(
    options: *mut HaloportOptions,
    transport: i32,
) -> HaloportStatus {
    change("haloport_options_set_transport", options, |o| {
        o.transport = match transport {
            0 => TransportKind::Mpi,
            1 => TransportKind::Ipc,
            2 => TransportKind::Nccl,
            3 => TransportKind::Auto,
            other => {
                return Err(Failure::invalid(format!(
                "unknown transport {other}; known: HALOPORT_TRANSPORT_MPI (0), _IPC (1), _NCCL (2), _AUTO (3)"
            )))
            }
        };
        Ok(())
    })
}

/// Sets whether messages that travel through MPI go from device memory: a
/// `haloport_gpu_aware_mpi`.
#[no_mangle]
pub extern "C" fn haloport_options_set_gpu_aware_mpi(
    options: *mut HaloportOptions,
    setting: i32,
) -> HaloportStatus {
    change("haloport_options_set_gpu_aware_mpi", options, |o| {
        o.gpu_aware_mpi = match setting {
            0 => GpuAwareMpi::Auto,
            1 => GpuAwareMpi::On,
            2 => GpuAwareMpi::Off,
            other => {
                return Err(Failure::invalid(format!(
                    "unknown GPU-aware MPI setting {other}; known: HALOPORT_GPU_AWARE_MPI_AUTO (0), _ON (1), _OFF (2)"
                )))
            }
        };
        Ok(())
    })
}

/// Sets the strategy: a `haloport_strategy`.
#[no_mangle]
pub extern "C" fn haloport_options_set_strategy(
    options: *mut HaloportOptions,
    strategy: i32,
) -> HaloportStatus {
    change("haloport_options_set_strategy", options, |o| {
        o.strategy = match strategy {
            0 => HaloStrategy::Base,
            1 => HaloStrategy::Taskqueue,
            other => {
                return Err(Failure::invalid(format!(
                    "unknown strategy {other}; known: HALOPORT_STRATEGY_BASE (0), _TASKQUEUE (1)"
                )))
            }
        };
        Ok(())
    })
}

/// Sets how long any single wait (MPI, a stream, a peer's signal) may take, in seconds.
#[no_mangle]
pub extern "C" fn haloport_options_set_timeout(
    options: *mut HaloportOptions,
    seconds: f64,
) -> HaloportStatus {
    change("haloport_options_set_timeout", options, |o| {
        o.timeout = Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|t| !t.is_zero() && t.as_secs() < 86_400)
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "time-out {seconds} s: give more than 0 and less than a day"
                ))
            })?;
        Ok(())
    })
}

/// Sets checked mode (non-zero: on): `finish` waits for its unpack and reports any failure on
/// the device itself, at the cost of overlapping the unpack with later work.
#[no_mangle]
pub extern "C" fn haloport_options_set_checked(
    options: *mut HaloportOptions,
    checked: i32,
) -> HaloportStatus {
    change("haloport_options_set_checked", options, |o| {
        o.checked = checked != 0;
        Ok(())
    })
}

/// Reads the routes file at `path` (a NUL-terminated file name, as `haloport tune` writes it:
/// schema `haloport-routes/1`) and applies it: the `auto` transport with the file's routes per
/// kind of link, and the settings it measured best (strategy, threads, elements per thread,
/// signalled blocks) where it carries them. Options set afterwards override it. The file is
/// read during this call; `path` is not kept. Every rank gives the same file's contents.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` for a file that cannot be read, is not JSON, has
/// another schema, repeats or misplaces a route, or settings out of range; the message names
/// the file and what is wrong. `HALOPORT_STATUS_NULL_ARGUMENT` for a NULL `path`.
#[no_mangle]
pub extern "C" fn haloport_options_set_routes_file(
    options: *mut HaloportOptions,
    path: *const c_char,
) -> HaloportStatus {
    change("haloport_options_set_routes_file", options, |o| {
        // SAFETY: the header asks for a NUL-terminated string, or NULL.
        let path = unsafe { path_of(path)? };
        *o = RoutesFile::read(&path)?.apply(*o);
        Ok(())
    })
}

/// A caller's file name: its bytes as they are on Unix, UTF-8 elsewhere.
///
/// # Safety
/// `path` is NULL or points to a NUL-terminated string, alive during the call.
unsafe fn path_of(path: *const c_char) -> Outcome<PathBuf> {
    if path.is_null() {
        return Err(null("the path"));
    }
    // SAFETY: non-null and NUL-terminated by this function's contract.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes)
            .map(PathBuf::from)
            .map_err(|_| Failure::invalid("the path is not UTF-8"))
    }
}
