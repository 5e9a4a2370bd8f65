//! GPU-aware MPI: whether the MPI library takes this backend's device memory in its calls, so
//! that a message moves from the GPU without a copy through pinned host memory.
//!
//! Asked at run time, in this order: MPI 4.1's `mpi_memory_alloc_kinds` info of the
//! communicator (a kind such as `cuda:device` or `rocm:device`), then the vendor extensions
//! `MPIX_Query_cuda_support` / `MPIX_Query_rocm_support` / `MPIX_Query_hip_support`, looked up
//! by name in the running process (an MPI library built without them simply lacks the
//! symbol), else no. [`GpuAwareMpi`] forces the answer either way. On the host backend the
//! fields' memory is host memory, which every MPI takes.

// MPI's info calls and the extensions' symbols, looked up at run time.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;
use std::str::FromStr;

use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use mpi::traits::AsRaw;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Whether host-staged routes give MPI device buffers instead (GPU-aware MPI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuAwareMpi {
    /// Where MPI says it takes the backend's device memory ([`MpiDeviceSupport`]); never on
    /// the host backend, whose device memory is host memory either way.
    #[default]
    Auto,
    /// Always: for an MPI that takes device memory without saying so, and on the host backend
    /// (plain MPI on the exchange's own buffers, as CI runs it). An MPI that cannot read
    /// device memory fails inside its calls.
    On,
    /// Never: every message between nodes is host-staged.
    Off,
}

impl GpuAwareMpi {
    /// `auto`, `on`, `off`.
    pub fn name(self) -> &'static str {
        match self {
            GpuAwareMpi::Auto => "auto",
            GpuAwareMpi::On => "on",
            GpuAwareMpi::Off => "off",
        }
    }
}

impl fmt::Display for GpuAwareMpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GpuAwareMpi {
    type Err = Error;

    fn from_str(s: &str) -> Result<GpuAwareMpi> {
        match s {
            "auto" => Ok(GpuAwareMpi::Auto),
            "on" => Ok(GpuAwareMpi::On),
            "off" => Ok(GpuAwareMpi::Off),
            _ => Err(Error::InvalidInput(format!(
                "unknown GPU-aware MPI setting '{s}'; known: auto (where MPI says it takes device memory), on, off"
            ))),
        }
    }
}

/// What the MPI library says about device memory of one backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpiDeviceSupport {
    /// MPI takes the backend's device memory in its calls.
    pub available: bool,
    /// How that was found (the info key's value, the extension asked, or why not).
    pub how: String,
}

/// The memory kinds (MPI 4.1) and extension functions that mean device memory of `backend`.
fn device_names(backend: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match backend {
        "cuda" => Some((&["cuda:device"], &["MPIX_Query_cuda_support"])),
        "hip" => Some((
            &["rocm:device", "hip:device"],
            &["MPIX_Query_rocm_support", "MPIX_Query_hip_support"],
        )),
        _ => None,
    }
}

/// Asks the MPI library behind `comm` whether it takes `backend`'s device memory ("cuda",
/// "hip"; "host" memory every MPI takes).
pub fn query(backend: &str, comm: &SimpleCommunicator) -> MpiDeviceSupport {
    let Some((kinds, extensions)) = device_names(backend) else {
        return MpiDeviceSupport {
            available: true,
            how: format!("the {backend} backend's memory is host memory"),
        };
    };
    let mut asked = Vec::new();
    match memory_alloc_kinds(comm) {
        Some(value) => {
            if let Some(kind) = kinds
                .iter()
                .find(|k| value.split(',').any(|v| v.trim() == **k))
            {
                return MpiDeviceSupport {
                    available: true,
                    how: format!("mpi_memory_alloc_kinds lists {kind} ({value})"),
                };
            }
            asked.push(format!("mpi_memory_alloc_kinds is {value}"));
        }
        None => asked.push("no mpi_memory_alloc_kinds info (MPI before 4.1)".into()),
    }
    for name in extensions {
        match extension(name) {
            Some(1) => {
                return MpiDeviceSupport {
                    available: true,
                    how: format!("{name}() returns 1"),
                }
            }
            Some(answer) => asked.push(format!("{name}() returns {answer}")),
            None => asked.push(format!("no {name}")),
        }
    }
    MpiDeviceSupport {
        available: false,
        how: asked.join("; "),
    }
}

/// The `mpi_memory_alloc_kinds` info of `comm`, if the library sets it.
fn memory_alloc_kinds(comm: &SimpleCommunicator) -> Option<String> {
    // SAFETY: a constant handle the MPI library defines, read only.
    let mut info: ffi::MPI_Info = unsafe { ffi::RSMPI_INFO_NULL };
    // SAFETY: comm is a live communicator; info is a valid out-handle.
    if unsafe { ffi::MPI_Comm_get_info(comm.as_raw(), &mut info) } != 0 {
        return None;
    }
    let key = CString::new("mpi_memory_alloc_kinds").ok()?;
    let mut value = vec![0 as c_char; 1024];
    let mut flag: c_int = 0;
    // SAFETY: info came from MPI_Comm_get_info; value holds 1024 chars and MPI writes at most
    // valuelen (1023) of them plus the NUL.
    let code = unsafe {
        ffi::MPI_Info_get(
            info,
            key.as_ptr(),
            (value.len() - 1) as c_int,
            value.as_mut_ptr(),
            &mut flag,
        )
    };
    // SAFETY: a handle MPI_Comm_get_info returned, freed once.
    unsafe { ffi::MPI_Info_free(&mut info) };
    if code != 0 || flag == 0 {
        return None;
    }
    // SAFETY: MPI NUL-terminated the value within the buffer.
    Some(
        unsafe { CStr::from_ptr(value.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Calls the MPI extension `name` (`int MPIX_Query_*_support(void)`) where the running process
/// has it.
fn extension(name: &str) -> Option<c_int> {
    let symbol = CString::new(name).ok()?;
    // SAFETY: dlsym over the process's loaded objects with a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) };
    if found.is_null() {
        return None;
    }
    // SAFETY: the MPI extensions of this name take nothing and return an int (Open MPI's
    // mpi-ext.h, MPICH's mpi_proto.h); MPI is initialized (a communicator exists).
    let query: extern "C" fn() -> c_int = unsafe { std::mem::transmute(found) };
    Some(query())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_name_themselves() {
        for s in [GpuAwareMpi::Auto, GpuAwareMpi::On, GpuAwareMpi::Off] {
            assert_eq!(s.name().parse::<GpuAwareMpi>().ok(), Some(s));
        }
        let e = "yes".parse::<GpuAwareMpi>().expect_err("refused");
        assert!(
            e.to_string()
                .contains("unknown GPU-aware MPI setting 'yes'"),
            "{e}"
        );
    }

    #[test]
    fn each_gpu_backend_names_its_memory_kinds_and_extensions() {
        let (kinds, ext) = device_names("cuda").expect("cuda");
        assert_eq!(
            (kinds, ext),
            (&["cuda:device"][..], &["MPIX_Query_cuda_support"][..])
        );
        let (kinds, ext) = device_names("hip").expect("hip");
        assert!(kinds.contains(&"rocm:device") && ext.contains(&"MPIX_Query_rocm_support"));
        assert!(device_names("host").is_none());
    }
}
