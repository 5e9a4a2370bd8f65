//! Build provenance, recorded by `build.rs` and written into every result file.

use serde::Serialize;

/// How this binary was built.
#[derive(Debug, Clone, Serialize)]
pub struct Provenance {
    /// haloport's version.
    pub version: &'static str,
    /// Git revision (`-dirty` when tracked files had changes), or "unknown".
    pub git: &'static str,
    /// Backends compiled in, comma-separated.
    pub backends: &'static str,
    /// The Rust compiler.
    pub rustc: &'static str,
    /// Cargo profile.
    pub profile: &'static str,
    /// Target triple.
    pub target: &'static str,
    /// What the HIP backend runs on in this build: AMD's runtime, or haloport's HIP-on-NVIDIA
    /// layer (SPEC 19: such results are evidence for the backend's code, not for AMD
    /// hardware); "not built" without the hip feature.
    pub hip_platform: &'static str,
}

/// This binary's provenance.
pub fn provenance() -> Provenance {
    Provenance {
        version: env!("CARGO_PKG_VERSION"),
        git: env!("HALOPORT_GIT_REV"),
        backends: env!("HALOPORT_BACKENDS"),
        rustc: env!("HALOPORT_RUSTC"),
        profile: env!("HALOPORT_PROFILE"),
        target: env!("HALOPORT_TARGET"),
        hip_platform: hip_platform(),
    }
}

fn hip_platform() -> &'static str {
    #[cfg(feature = "hip")]
    {
        haloport_hip::PLATFORM
    }
    #[cfg(not(feature = "hip"))]
    {
        "not built"
    }
}
