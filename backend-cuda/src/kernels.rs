//! The kernel image nvcc built from `kernels-cu/` (see `build.rs`), embedded in the binary.

/// The fatbin (SASS for each architecture built, plus PTX), 8-byte aligned as the driver wants,
/// or `None` when this crate was built without its `kernels` feature.
pub fn image() -> Option<&'static [u8]> {
    #[cfg(haloport_kernels)]
    {
        #[repr(C, align(8))]
        struct Aligned<T: ?Sized>(T);
        static IMAGE: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
            env!("OUT_DIR"),
            "/haloport.fatbin"
        )));
        Some(&IMAGE.0)
    }
    #[cfg(not(haloport_kernels))]
    {
        None
    }
}

/// The architectures the image holds SASS for, e.g. "80;90", or "none".
pub fn architectures() -> &'static str {
    #[cfg(haloport_kernels)]
    {
        env!("HALOPORT_CUDA_ARCHS")
    }
    #[cfg(not(haloport_kernels))]
    {
        "none"
    }
}
