//! Compiles the shared kernels (`kernels-cu/`) with nvcc into one fatbin per compilation unit
//! (`haloport_toolchain::KERNEL_UNITS`, side by side), SASS for each architecture in
//! `HALOPORT_CUDA_ARCHS` (default `80;90`) plus PTX for the newest, and leaves them in
//! `OUT_DIR` for `include_bytes!`. Only with the `kernels` feature (which haloport's `cuda`
//! feature turns on): without it the crate builds without nvcc and reports at run time that it
//! has no kernels. Under `cargo clippy` an empty image stands in (`only_checking`: nothing is
//! linked or run). Never queries a GPU. Finding nvcc is `haloport-toolchain`'s job (shared with
//! `haloport-hip`'s build script).

use std::env;
use std::path::PathBuf;

use haloport_toolchain as toolchain;

const INSTALL_HINT: &str = "\
install the CUDA compiler, for example from pip into the repository's virtualenv:
    python3 -m venv .venv && .venv/bin/pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \\
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85
(`bash ci/setup.sh` does exactly this), or install the CUDA toolkit, or point NVCC at nvcc.";

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // Canonical, so the kernel cache sees the same compile as the HIP-on-CUDA layer's.
    let kernels = toolchain::canonical(manifest.join("../kernels-cu"));
    let sources = toolchain::sources_in(&[&kernels]);
    println!("cargo:rerun-if-changed={}", kernels.display());
    for file in &sources {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    for var in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
        "VIRTUAL_ENV",
        "HALOPORT_CUDA_ARCHS",
        toolchain::CACHE_VAR,
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if env::var_os("CARGO_FEATURE_KERNELS").is_none() {
        return;
    }

    let search = toolchain::nvcc_search(&manifest);
    let nvcc = toolchain::find_or_exit(&search, "cuda", INSTALL_HINT);

    let archs = toolchain::cuda_archs();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    toolchain::compile_units(
        "nvcc",
        &sources,
        |entry| out_dir.join(format!("{entry}.fatbin")),
        |entry, out| {
            toolchain::fatbin_command(&nvcc, &kernels, entry, &archs, out).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(1);
            })
        },
    );
    println!("cargo:rustc-cfg=haloport_kernels");
    println!("cargo:rustc-env=HALOPORT_NVCC={}", nvcc.display());
    println!("cargo:rustc-env=HALOPORT_CUDA_ARCHS={}", archs.join(";"));
}
