//! Records build provenance for `haloport info` and every result file: the git revision, the
//! backends compiled in, the toolchain and profile. Writes only environment variables.

use std::env;
use std::process::Command;

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    let git = command_output("git", &["rev-parse", "--short=12", "HEAD"]).map_or_else(
        || "unknown".to_owned(),
        |rev| {
            let dirty =
                command_output("git", &["status", "--porcelain", "--untracked-files=no"]).is_some();
            if dirty {
                format!("{rev}-dirty")
            } else {
                rev
            }
        },
    );
    let features: Vec<&str> = ["host", "cuda", "hip"]
        .into_iter()
        .filter(|f| env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase())).is_some())
        .collect();
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = command_output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    let profile = env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    let target = env::var("TARGET").unwrap_or_else(|_| "unknown".into());

    println!("cargo:rustc-env=HALOPORT_GIT_REV={git}");
    println!("cargo:rustc-env=HALOPORT_BACKENDS={}", features.join(","));
    println!("cargo:rustc-env=HALOPORT_RUSTC={rustc_version}");
    println!("cargo:rustc-env=HALOPORT_PROFILE={profile}");
    println!("cargo:rustc-env=HALOPORT_TARGET={target}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
