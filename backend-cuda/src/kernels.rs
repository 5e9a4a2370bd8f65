//! The kernel images nvcc built from `kernels-cu/` (see `build.rs`), one per compilation unit
//! ([`KernelUnit`]), embedded in the binary.

use haloport_core::KernelUnit;

/// The fatbin of `unit` (SASS for each architecture built, plus PTX), 8-byte aligned as the
/// driver wants, or `None` when this crate was built without its `kernels` feature.
pub fn image(unit: KernelUnit) -> Option<&'static [u8]> {
    #[cfg(haloport_kernels)]
    {
        #[repr(C, align(8))]
        struct Aligned<T: ?Sized>(T);
        static EXCHANGE: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
            env!("OUT_DIR"),
            "/haloport.fatbin"
        )));
        static STENCIL: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
            env!("OUT_DIR"),
            "/haloport_stencil.fatbin"
        )));
        Some(match unit {
            KernelUnit::Exchange => &EXCHANGE.0,
            KernelUnit::Stencil => &STENCIL.0,
        })
    }
    #[cfg(not(haloport_kernels))]
    {
        let _ = unit;
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

/// The embedded images' contents, e.g. "sm_80, sm_90, PTX compute_90 (2 units)" (every unit
/// is built for the same architectures), or why there are none.
pub fn describe() -> String {
    let units = KernelUnit::ALL.len();
    match image(KernelUnit::Exchange).map(fatbin_entries) {
        None => "none (built without the kernels feature)".into(),
        Some(Err(e)) => format!("unreadable fatbin ({e})"),
        Some(Ok(entries)) => format!(
            "{} ({units} units)",
            entries
                .iter()
                .map(|e| match e {
                    FatbinEntry::Sass(a) => format!("sm_{a}"),
                    FatbinEntry::Ptx(a) => format!("PTX compute_{a}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What one entry of a fatbin holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatbinEntry {
    /// Machine code (an ELF cubin) for `sm_<arch>`.
    Sass(u32),
    /// PTX for `compute_<arch>`, JIT-compiled by the driver for newer devices.
    Ptx(u32),
}

/// Lists a fatbin's entries from its headers (the layout nvcc writes: a 16-byte header with
/// magic 0xBA55ED50 and payload size, then entries each with kind, header size, payload size
/// and architecture).
///
/// # Errors
/// A message when the image is not a well-formed fatbin.
pub fn fatbin_entries(image: &[u8]) -> Result<Vec<FatbinEntry>, String> {
    let u16_at = |o: usize| {
        image
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |o: usize| {
        image
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        image.get(o..o + 8).map(|b| {
            let mut a = [0_u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    if u32_at(0) != Some(0xBA55_ED50) {
        return Err("no fatbin magic".into());
    }
    let header = u16_at(6).ok_or("truncated header")? as usize;
    let size = u64_at(8).ok_or("truncated header")? as usize;
    let end = header
        .checked_add(size)
        .filter(|&e| e <= image.len())
        .ok_or("size beyond image")?;
    let mut entries = Vec::new();
    let mut at = header;
    while at < end {
        let kind = u16_at(at).ok_or("truncated entry")?;
        let entry_header = u32_at(at + 4).ok_or("truncated entry")? as usize;
        let payload = u64_at(at + 8).ok_or("truncated entry")? as usize;
        let arch = u32_at(at + 28).ok_or("truncated entry")?;
        entries.push(match kind {
            1 => FatbinEntry::Ptx(arch),
            2 => FatbinEntry::Sass(arch),
            other => return Err(format!("unknown entry kind {other}")),
        });
        at = at
            .checked_add(entry_header)
            .and_then(|a| a.checked_add(payload))
            .ok_or("entry size overflows")?;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_a_fatbin() {
        assert!(fatbin_entries(b"not a fatbin at all").is_err());
        assert!(
            fatbin_entries(&[0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0, 255, 0, 0, 0, 0, 0, 0, 0])
                .is_err()
        );
    }

    /// CI builds the cuda feature: the embedded image must hold SASS for every architecture
    /// asked for and PTX for the newest (SPEC 9).
    #[cfg(haloport_kernels)]
    #[test]
    fn the_embedded_fatbins_hold_sass_for_each_arch_and_ptx() {
        for unit in KernelUnit::ALL {
            fatbin_holds_sass_for_each_arch_and_ptx(unit);
        }
    }

    #[cfg(haloport_kernels)]
    fn fatbin_holds_sass_for_each_arch_and_ptx(unit: KernelUnit) {
        let image = image(unit).expect("built with kernels");
        let entries = fatbin_entries(image).expect("a well-formed fatbin");
        let archs: Vec<u32> = architectures()
            .split(';')
            .filter_map(|a| a.parse().ok())
            .collect();
        assert!(!archs.is_empty());
        for arch in &archs {
            assert!(
                entries.contains(&FatbinEntry::Sass(*arch)),
                "no sm_{arch} in {entries:?}"
            );
        }
        let newest = archs.iter().max().copied().unwrap_or(0);
        assert!(
            entries.contains(&FatbinEntry::Ptx(newest)),
            "no PTX in {entries:?}"
        );
        println!(
            "embedded fatbin of {unit:?}: {} bytes, {entries:?}",
            image.len()
        );
    }

    /// Every kernel the backend looks up is in every cubin of its unit's image: its name,
    /// NUL-terminated (an ELF string table entry), appears at least once per SASS entry.
    /// Catches a kernel added to `Kernel::ALL` but not to its unit's sources without a GPU (nvcc leaves fatbins uncompressed
    /// unless asked; a compressed one would fail here and say so).
    #[cfg(haloport_kernels)]
    #[test]
    fn every_kernel_is_in_every_cubin_of_its_unit() {
        for kernel in haloport_core::Kernel::ALL {
            let image = image(kernel.unit()).expect("built with kernels");
            let cubins = fatbin_entries(image)
                .expect("a well-formed fatbin")
                .iter()
                .filter(|e| matches!(e, FatbinEntry::Sass(_)))
                .count();
            let name = format!("{}\0", kernel.symbol());
            let found = image
                .windows(name.len())
                .filter(|w| *w == name.as_bytes())
                .count();
            assert!(
                found >= cubins,
                "{} appears {found} times in {cubins} cubins (is the fatbin compressed?)",
                kernel.symbol()
            );
        }
    }
}
