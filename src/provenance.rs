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
    }
}
