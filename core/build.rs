//! Turns `kernels-cu/haloport_shared.h`, the structs kernels and host share, into Rust types,
//! so their layout is written once (SPEC 1). Writes only to `OUT_DIR`.

use std::env;
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let header = manifest.join("../kernels-cu/haloport_shared.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let device = manifest.join("../kernels-cu/haloport_device.h");
    println!("cargo:rerun-if-changed={}", device.display());

    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .allowlist_type("hp_.*")
        .allowlist_var("HP_.*")
        .allowlist_type("haloport_fused.*")
        .allowlist_var("HALOPORT_FUSED_.*")
        .derive_default(true)
        .derive_debug(true)
        .derive_copy(true)
        .layout_tests(true)
        .generate()
        .unwrap_or_else(|e| {
            panic!(
                "bindgen could not read {}: {e}\n\
                 bindgen needs libclang: on Debian/Ubuntu `apt-get install libclang-dev`",
                header.display()
            )
        });
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("shared.rs");
    bindings
        .write_to_file(&out)
        .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
