//! NCCL (RCCL on AMD) as a route: which library serves a backend, and whether it loads here.
//! The exchange's use of it is in the engine (`halo::engine::nccl`); the library itself is
//! loaded at run time by `haloport-nccl`, so a binary runs where it is missing and says why.

use haloport_nccl::{Flavour, Nccl};

/// Which library serves `backend`: RCCL for HIP, NCCL otherwise (the host backend through a
/// stand-in named by `HALOPORT_NCCL_LIBRARY`, as CI runs it).
pub fn flavour(backend: &str) -> Flavour {
    if backend == "hip" {
        Flavour::Rccl
    } else {
        Flavour::Nccl
    }
}

/// The library serving `backend` as `haloport info` prints it ("NCCL 2.28.3 at libnccl.so.2"),
/// or why it does not load.
pub fn probe(backend: &str) -> Result<String, String> {
    let flavour = flavour(backend);
    Nccl::load(flavour)
        .map(|nccl| format!("{flavour} {} at {}", nccl.version(), nccl.path()))
        .map_err(|e| e.to_string())
}
