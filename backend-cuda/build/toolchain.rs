//! Transitional re-export: the toolchain helpers and their tests moved to the
//! `haloport-toolchain` crate (`core/toolchain/`), which the build scripts of haloport-cuda and
//! haloport-hip use as a build-dependency. `src/tests.rs` still `#[path]`-includes this file for
//! its `toolchain_discovery` tests, which now duplicate `haloport-toolchain`'s own; delete this
//! file (and the dev-dependency on haloport-toolchain) together with that module.

pub use haloport_toolchain::{arch_list, find, pip_nvcc_candidates, Search};
