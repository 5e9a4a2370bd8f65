//! The raw layer: bindings generated from `nccl.h` (NCCL 2.32.6, the PyPI `nvidia-nccl-cu13`
//! wheel) by `nccl/gen-bindings.sh` and committed as `sys/nccl.rs`, plus the few things the
//! generator cannot write: the list of loaded symbols, the library names each flavour is looked
//! up under, and `NCCL_CONFIG_INITIALIZER`.
//!
//! The generated [`NcclLibrary`] is a struct of function pointers that libloading fills from the
//! opened library, every symbol required. Enums are newtypes (`ncclResult_t(u32)`), so a code
//! a newer library returns that this header does not list is a value, not undefined behaviour.
//! `cudaStream_t` is an opaque pointer: RCCL's `hipStream_t` has the same representation.
//!
//! Nothing here checks a return code; [`crate::result`] does.

/// What `gen-bindings.sh` generated (see the file's first line for the NCCL version).
#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    unreachable_pub,
    // Generated: bindgen's wrappers call the function pointers without inner `unsafe` blocks
    // or safety comments; the crate's own code never calls them without one.
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
mod generated {
    include!("sys/nccl.rs");
}

pub use generated::*;

/// Every symbol [`NcclLibrary`] loads: the same list as `gen-bindings.sh`'s `FUNCTIONS`. Each
/// is looked up by name first, so that a missing one is reported by name (see
/// [`crate::Nccl::load`]).
pub const FUNCTIONS: [&str; 13] = [
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRankConfig",
    "ncclCommInitRank",
    "ncclCommDestroy",
    "ncclCommAbort",
    "ncclCommGetAsyncError",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclSend",
    "ncclRecv",
    "ncclGetErrorString",
    "ncclGetLastError",
];

/// `NCCL_CONFIG_UNDEF_INT` (`INT_MIN`): "let the library choose".
pub const NCCL_CONFIG_UNDEF_INT: i32 = i32::MIN;

/// `NCCL_CONFIG_INITIALIZER` of the header the bindings came from: the size, magic and version
/// the library checks, every other field undefined (the library's default).
///
/// A library older than the header reads only the first `min(size, its own size)` bytes and
/// takes fields newer than the `version` given from its defaults (NCCL `parseCommConfig`), and
/// fields are only ever appended, so one initializer serves every 2.x library from 2.14 on;
/// RCCL's `ncclConfig_t` starts with the same fields.
pub fn config_initializer() -> ncclConfig_t {
    const U: i32 = NCCL_CONFIG_UNDEF_INT;
    let null = std::ptr::null();
    // Every field named: a regenerated header with new fields fails to compile here until this
    // initializer is brought up to date with the header's NCCL_CONFIG_INITIALIZER.
    ncclConfig_t {
        size: std::mem::size_of::<ncclConfig_t>(),
        magic: NCCL_API_MAGIC,
        version: NCCL_VERSION_CODE,
        blocking: U,
        cgaClusterSize: U,
        minCTAs: U,
        maxCTAs: U,
        netName: null,
        splitShare: U,
        trafficClass: U,
        commName: null,
        collnetEnable: U,
        CTAPolicy: U,
        shrinkShare: U,
        nvlsCTAs: U,
        nChannelsPerNetPeer: U,
        nvlinkCentricSched: U,
        graphUsageMode: U,
        numRmaCtx: U,
        maxP2pPeers: U,
        graphStreamOrdering: U,
        launchOrderImplicit: U,
        numRmaSig: U,
        rmaEagerInit: U,
        hostCftMode: U,
        nvlsHostMode: U,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loaded_symbol_is_in_the_generated_bindings_and_no_other() {
        let generated = include_str!("sys/nccl.rs");
        let loaded: Vec<&str> = generated
            .lines()
            .filter_map(|l| l.trim().strip_prefix("let "))
            .filter(|l| l.contains("__library.get(b\""))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let mut want = FUNCTIONS.to_vec();
        want.sort_unstable();
        let mut have = loaded.clone();
        have.sort_unstable();
        assert_eq!(want, have);
    }

    #[test]
    fn the_initializer_has_the_headers_size_magic_and_version() {
        let c = config_initializer();
        assert_eq!(c.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!(c.magic, 0xcafe_beef);
        assert_eq!(c.version, 23206);
        assert_eq!(c.blocking, i32::MIN);
        assert!(c.netName.is_null() && c.commName.is_null());
        assert_eq!(std::mem::size_of::<ncclUniqueId>(), 128);
    }
}
