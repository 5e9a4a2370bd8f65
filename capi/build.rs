//! The shared library's soname: `libhaloport.so.MAJOR.MINOR` while the major version is 0
//! (as cargo-c names it; every 0.x minor release may break the ABI), `libhaloport.so.MAJOR`
//! afterwards.

fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let soname = if major == "0" {
        format!("libhaloport.so.0.{minor}")
    } else {
        format!("libhaloport.so.{major}")
    };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }
}
