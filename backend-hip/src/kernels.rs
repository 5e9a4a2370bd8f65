//! The kernel images hipcc built from `kernels-cu/` through `kernels-hip/` (see `build.rs`), one
//! per compilation unit ([`KernelUnit`]), embedded in the binary: each a clang offload bundle
//! with one code object per AMD target. With the `nvidia-layer` feature, nvcc's fatbins of the
//! same `kernels-cu/` units (the CUDA backend's images; `build.rs` says why not the HIP entries),
//! which the layer's `hipModuleLoadData` hands to `cuModuleLoadData`.

use haloport_core::KernelUnit;

/// The offload bundle of `unit` (with `nvidia-layer`: the fatbin), 8-byte aligned, or `None`
/// when this crate was built without its `kernels` feature.
pub fn image(unit: KernelUnit) -> Option<&'static [u8]> {
    #[cfg(haloport_kernels)]
    {
        #[repr(C, align(8))]
        struct Aligned<T: ?Sized>(T);
        #[cfg(feature = "nvidia-layer")]
        static IMAGES: [&Aligned<[u8]>; 2] = [
            &Aligned(*include_bytes!(concat!(
                env!("OUT_DIR"),
                "/haloport_nv.fatbin"
            ))),
            &Aligned(*include_bytes!(concat!(
                env!("OUT_DIR"),
                "/haloport_stencil_nv.fatbin"
            ))),
        ];
        #[cfg(not(feature = "nvidia-layer"))]
        static IMAGES: [&Aligned<[u8]>; 2] = [
            &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/haloport.hsaco"))),
            &Aligned(*include_bytes!(concat!(
                env!("OUT_DIR"),
                "/haloport_stencil.hsaco"
            ))),
        ];
        Some(&IMAGES[unit.index()].0)
    }
    #[cfg(not(haloport_kernels))]
    {
        let _ = unit;
        None
    }
}

/// The rate of the kernels' `hp_timer()` where the image fixes it, whatever the runtime says:
/// with `nvidia-layer` the kernels are the CUDA branch of `kernels-cu/hp_compat.h`, whose timer
/// is `%globaltimer` in nanoseconds (1 GHz, as the CUDA backend reports). `None` on AMD, where
/// `wall_clock64()`'s rate is the device's (see the crate docs' "Timer").
pub const FIXED_TIMER_HZ: Option<u64> = if cfg!(feature = "nvidia-layer") {
    Some(1_000_000_000)
} else {
    None
};

/// The targets the image was built for, e.g. "gfx906;gfx908;gfx90a" (with `nvidia-layer`:
/// "sm_80;sm_90"), or "none".
pub fn architectures() -> &'static str {
    #[cfg(haloport_kernels)]
    {
        env!("HALOPORT_HIP_ARCHS")
    }
    #[cfg(not(haloport_kernels))]
    {
        "none"
    }
}

/// One entry of an offload bundle: its target triple and the size of its code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// e.g. `hipv4-amdgcn-amd-amdhsa--gfx906`, or the host entry `host-x86_64-unknown-linux`.
    pub triple: String,
    /// Bytes of the code object.
    pub size: u64,
}

impl BundleEntry {
    /// The AMD target (`gfx906`), for device entries.
    pub fn gfx(&self) -> Option<&str> {
        self.triple
            .rsplit("--")
            .next()
            .filter(|t| t.starts_with("gfx"))
            .map(|t| t.split(':').next().unwrap_or(t))
    }
}

/// Lists an offload bundle's entries from its header ("__CLANG_OFFLOAD_BUNDLE__", entry count,
/// then per entry offset, size, triple length and triple; all little-endian u64).
///
/// # Errors
/// A message when the image is not a well-formed bundle.
pub fn bundle_entries(image: &[u8]) -> Result<Vec<BundleEntry>, String> {
    const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
    let u64_at = |o: usize| {
        image.get(o..o + 8).map(|b| {
            let mut a = [0_u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    if !image.starts_with(MAGIC) {
        return Err("no offload-bundle magic".into());
    }
    let count = u64_at(MAGIC.len()).ok_or("truncated header")?;
    let mut at = MAGIC.len() + 8;
    let mut entries = Vec::new();
    for _ in 0..count {
        let offset = u64_at(at).ok_or("truncated entry")?;
        let size = u64_at(at + 8).ok_or("truncated entry")?;
        let len = u64_at(at + 16).ok_or("truncated entry")? as usize;
        let triple = image
            .get(at + 24..at + 24 + len)
            .ok_or("truncated triple")?;
        if offset
            .checked_add(size)
            .is_none_or(|end| end > image.len() as u64)
        {
            return Err("entry beyond the image".into());
        }
        entries.push(BundleEntry {
            triple: String::from_utf8_lossy(triple).into_owned(),
            size,
        });
        at += 24 + len;
    }
    Ok(entries)
}

/// The magic number nvcc's fatbins open with (little-endian).
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// The embedded exchange image's code objects, e.g. "gfx906 (13 kB), gfx908 (13 kB)" (with
/// `nvidia-layer`: "CUDA fatbin of kernels-cu for sm_80;sm_90 (250 kB)"), or why there are none;
/// the stencil's image is built for the same targets.
pub fn describe() -> String {
    if cfg!(feature = "nvidia-layer") {
        return match image(KernelUnit::Exchange) {
            None => "none (built without the kernels feature)".into(),
            Some(i) if i.get(..4) != Some(&FATBIN_MAGIC.to_le_bytes()[..]) => {
                "unreadable fatbin (no fatbin magic)".into()
            }
            Some(i) => format!(
                "CUDA fatbin of kernels-cu for {} (+PTX, {} kB; the CUDA backend's kernels)",
                architectures(),
                i.len().div_ceil(1024)
            ),
        };
    }
    match image(KernelUnit::Exchange).map(bundle_entries) {
        None => "none (built without the kernels feature)".into(),
        Some(Err(e)) => format!("unreadable bundle ({e})"),
        Some(Ok(entries)) => entries
            .iter()
            .filter_map(|e| {
                e.gfx()
                    .map(|g| format!("{g} ({} kB)", e.size.div_ceil(1024)))
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_a_bundle() {
        assert!(bundle_entries(b"ELF not a bundle").is_err());
        let mut truncated = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
        truncated.extend_from_slice(&3_u64.to_le_bytes());
        assert!(bundle_entries(&truncated).is_err());
    }

    #[test]
    fn targets_are_read_from_triples() {
        let e = BundleEntry {
            triple: "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-".into(),
            size: 1,
        };
        assert_eq!(e.gfx(), Some("gfx90a"));
        let host = BundleEntry {
            triple: "host-x86_64-unknown-linux".into(),
            size: 0,
        };
        assert_eq!(host.gfx(), None);
    }

    /// CI builds the hip feature: the bundle must hold a non-empty code object for every target
    /// asked for (SPEC 9). Prints the sizes for the record.
    #[cfg(all(haloport_kernels, not(feature = "nvidia-layer")))]
    #[test]
    fn the_embedded_bundles_hold_a_code_object_per_target() {
        for unit in KernelUnit::ALL {
            let image = image(unit).expect("built with kernels");
            let entries = bundle_entries(image).expect("a well-formed bundle");
            for arch in architectures().split(';') {
                let entry = entries.iter().find(|e| e.gfx() == Some(arch));
                assert!(
                    entry.is_some_and(|e| e.size > 0),
                    "no code object for {arch} in {unit:?}'s {entries:?}"
                );
            }
            for e in &entries {
                println!(
                    "embedded code object of {unit:?}: {} ({} bytes)",
                    e.triple, e.size
                );
            }
        }
    }

    /// Every kernel the backend looks up is in every code object of its unit's bundle: its
    /// name, NUL-terminated (an ELF string table entry), appears at least once per AMD target.
    /// Catches a kernel added to `Kernel::ALL` but not to its unit's sources (or compiled out)
    /// without a GPU.
    #[cfg(all(haloport_kernels, not(feature = "nvidia-layer")))]
    #[test]
    fn every_kernel_is_in_every_code_object_of_its_unit() {
        for kernel in haloport_core::Kernel::ALL {
            let image = image(kernel.unit()).expect("built with kernels");
            let targets = bundle_entries(image)
                .expect("a well-formed bundle")
                .iter()
                .filter(|e| e.gfx().is_some())
                .count();
            let name = format!("{}\0", kernel.symbol());
            let found = image
                .windows(name.len())
                .filter(|w| *w == name.as_bytes())
                .count();
            assert!(
                found >= targets,
                "{} appears {found} times in {targets} code objects",
                kernel.symbol()
            );
        }
    }

    /// With `nvidia-layer`: the image is a fatbin and every kernel the backend looks up is in
    /// the cubin of every architecture (its NUL-terminated name once per `sm_` target at least;
    /// nvcc leaves fatbins uncompressed unless asked).
    #[cfg(all(haloport_kernels, feature = "nvidia-layer"))]
    #[test]
    fn the_embedded_fatbins_hold_every_kernel_per_architecture() {
        let archs = architectures().split(';').count();
        for kernel in haloport_core::Kernel::ALL {
            let image = image(kernel.unit()).expect("built with kernels");
            assert_eq!(image.get(..4), Some(&FATBIN_MAGIC.to_le_bytes()[..]));
            let name = format!("{}\0", kernel.symbol());
            let found = image
                .windows(name.len())
                .filter(|w| *w == name.as_bytes())
                .count();
            assert!(
                found >= archs,
                "{} appears {found} times for {archs} architectures",
                kernel.symbol()
            );
        }
        assert_eq!(FIXED_TIMER_HZ, Some(1_000_000_000));
        println!("embedded: {}", describe());
    }
}
