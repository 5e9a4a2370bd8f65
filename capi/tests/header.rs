//! `include/haloport.h` is what cbindgen generates from this crate's source: the committed
//! header may not drift from the code. `HALOPORT_BLESS=1` rewrites it instead of comparing.

use std::path::Path;

#[test]
fn the_committed_header_matches_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("capi/cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let committed_path = crate_dir.join("include/haloport.h");
    if std::env::var_os("HALOPORT_BLESS").is_some() {
        std::fs::write(&committed_path, &generated).expect("writing include/haloport.h");
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "capi/include/haloport.h differs from what the code generates; regenerate it with\n  HALOPORT_BLESS=1 cargo test -p haloport-capi --test header\nand commit it"
    );
}
