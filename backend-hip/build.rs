//! Compiles the shared kernels (`kernels-cu/`, through `kernels-hip/haloport.hip`) with hipcc
//! into one offload bundle holding a code object per AMD target: `HALOPORT_HIP_ARCHS` (default
//! `gfx906;gfx908;gfx90a`) plus newer targets the installed hipcc accepts (probed by compiling a
//! one-line kernel for each, never by asking a GPU). Only with the `kernels` feature (which
//! haloport's `hip` feature turns on). `--offload-arch` is always explicit: without it Debian's
//! hipcc runs `rocm_agent_enumerator`, which crashes on machines without an AMD GPU. Finding
//! hipcc is `haloport-toolchain`'s job (shared with haloport-cuda's build script).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use haloport_toolchain as toolchain;

const INSTALL_HINT: &str = "\
install hipcc, for example on Debian/Ubuntu:
    apt-get install hipcc libamdhip64-dev
(`bash ci/setup.sh` does this), or install ROCm and set ROCM_PATH, or point HIPCC at hipcc.";

/// Targets newer than the defaults, used when the installed hipcc knows them.
const NEWER: [&str; 3] = ["gfx942", "gfx1100", "gfx1030"];

fn compiles_for(hipcc: &Path, arch: &str, scratch: &Path) -> bool {
    let src = scratch.join("probe.hip");
    if std::fs::write(&src, "__global__ void probe() {}\n").is_err() {
        return false;
    }
    Command::new(hipcc)
        .args(["--genco", &format!("--offload-arch={arch}"), "-o"])
        .arg(scratch.join(format!("probe-{arch}.hsaco")))
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let shared = manifest.join("../kernels-cu");
    let amd = manifest.join("../kernels-hip");
    for file in [
        shared.join("hp_kernels.cuh"),
        shared.join("hp_compat.h"),
        shared.join("haloport_shared.h"),
        amd.join("haloport.hip"),
        amd.join("hp_amd.h"),
    ] {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    for var in [
        "HIPCC",
        "ROCM_PATH",
        "HIP_PATH",
        "PATH",
        "HALOPORT_HIP_ARCHS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if env::var_os("CARGO_FEATURE_KERNELS").is_none() {
        return;
    }
    let search = toolchain::Search {
        program: "hipcc",
        program_vars: &["HIPCC"],
        root_vars: &["ROCM_PATH", "HIP_PATH"],
        default_roots: &["/opt/rocm"],
        extra: Vec::new(),
    };
    let hipcc = toolchain::find_or_exit(&search, "hip", INSTALL_HINT);
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut archs = toolchain::arch_list(
        &env::var("HALOPORT_HIP_ARCHS").unwrap_or_else(|_| "gfx906;gfx908;gfx90a".into()),
    );
    if archs.is_empty() {
        eprintln!("error: HALOPORT_HIP_ARCHS names no target");
        std::process::exit(1);
    }
    if env::var_os("HALOPORT_HIP_ARCHS").is_none() {
        for arch in NEWER {
            if compiles_for(&hipcc, arch, &out_dir) {
                archs.push(arch.to_owned());
            } else {
                println!(
                    "cargo:warning=haloport-hip: {} does not compile for {arch}; left out",
                    hipcc.display()
                );
            }
        }
    }
    let bundle = out_dir.join("haloport.hsaco");
    let mut cmd = Command::new(&hipcc);
    cmd.args(["--genco", "-O3", "-std=c++17"])
        .arg("-I")
        .arg(&shared)
        .arg("-I")
        .arg(&amd);
    for arch in &archs {
        cmd.arg(format!("--offload-arch={arch}"));
    }
    cmd.arg("-o").arg(&bundle).arg(amd.join("haloport.hip"));
    toolchain::compile_or_exit(&mut cmd, "hipcc");
    println!("cargo:rustc-cfg=haloport_kernels");
    println!("cargo:rustc-env=HALOPORT_HIP_ARCHS={}", archs.join(";"));
}
