//! The version: macros in the header for compile time, functions for what was linked.

use std::ffi::c_char;

/// Major version of the header.
pub const HALOPORT_VERSION_MAJOR: u32 = 0;
/// Minor version of the header.
pub const HALOPORT_VERSION_MINOR: u32 = 1;
/// Patch version of the header.
pub const HALOPORT_VERSION_PATCH: u32 = 0;
/// The header's version as `MAJOR * 10000 + MINOR * 100 + PATCH`.
pub const HALOPORT_VERSION_NUMBER: u32 = 100;

// The header's macros are literals (cbindgen cannot evaluate), so the build checks them.
const _: () = assert!(
    HALOPORT_VERSION_MAJOR == parse(env!("CARGO_PKG_VERSION_MAJOR"))
        && HALOPORT_VERSION_MINOR == parse(env!("CARGO_PKG_VERSION_MINOR"))
        && HALOPORT_VERSION_PATCH == parse(env!("CARGO_PKG_VERSION_PATCH"))
        && HALOPORT_VERSION_NUMBER
            == HALOPORT_VERSION_MAJOR * 10000
                + HALOPORT_VERSION_MINOR * 100
                + HALOPORT_VERSION_PATCH,
    "the header's version macros must equal the crate's version"
);

const fn parse(digits: &str) -> u32 {
    let bytes = digits.as_bytes();
    let (mut value, mut i) = (0, 0);
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

/// The linked library's version, `"MAJOR.MINOR.PATCH"`; a static string.
#[no_mangle]
pub extern "C" fn haloport_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The linked library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`, to compare with
/// `HALOPORT_VERSION_NUMBER` of the header compiled against.
#[no_mangle]
pub extern "C" fn haloport_version_number() -> u32 {
    HALOPORT_VERSION_NUMBER
}

/// The backends compiled into the library, comma-separated (`"host,cuda"`); a static string.
#[no_mangle]
pub extern "C" fn haloport_backends() -> *const c_char {
    static NAMES: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            std::ffi::CString::new(haloport::foreign::built_backends()).unwrap_or_default()
        })
        .as_ptr()
}
