//! With the `kernels` feature (which haloport's `hip` feature turns on), three jobs:
//!
//! 1. Compiles the shared kernels (`kernels-cu/`, through `kernels-hip/haloport.hip` and
//!    `haloport_stencil.hip`, the two units side by side) with hipcc into an offload bundle per
//!    unit holding a code object per AMD target: `HALOPORT_HIP_ARCHS` (default
//!    `gfx906;gfx908;gfx90a`) plus newer targets the installed hipcc accepts (probed by compiling
//!    a one-line kernel for each, never by asking a GPU). `--offload-arch` is always explicit:
//!    without it Debian's hipcc runs `rocm_agent_enumerator`, which crashes without an AMD GPU.
//! 2. Generates the HIP runtime bindings with bindgen from the installed `hip_runtime_api.h`
//!    (`$HIP_PATH`, `$ROCM_PATH`, `hipconfig -p`, hipcc's root, `/opt/rocm`, `/usr`), allowlisting
//!    exactly what `src/ffi.rs` calls, and checks every constant of them against the header hipcc
//!    compiles with (a `static_assert` per constant): a mismatch stops the build. Pre-generated
//!    bindings (hip-runtime-sys 0.1.2) named attributes Debian's HIP 5.2 does not have.
//!    What the header lacks becomes a cfg: `haloport_hip_wall_clock_rate` when it has
//!    `hipDeviceAttributeWallClockRate`, `haloport_hip_module_cooperative` when it declares
//!    `hipModuleLaunchCooperativeKernel` (HIP 5.2 has neither).
//! 3. Links libamdhip64 from that installation.
//!
//! Toolchain discovery is `haloport-toolchain`'s (shared with haloport-cuda's build script).
//!
//! With `nvidia-layer` as well (haloport's `hip-nvidia`), the HIP backend runs on an NVIDIA GPU
//! through haloport's HIP-on-CUDA layer (`nvidia-layer/`), and jobs 1 and 3 change:
//!
//! 1. The kernels are nvcc's fatbins of the units of `kernels-cu/` (`haloport.cu`,
//!    `haloport_stencil.cu`) for `HALOPORT_CUDA_ARCHS` (default `80;90`, SASS for each plus PTX
//!    for the newest), the very images the CUDA backend embeds (the kernel cache compiles them
//!    once for both). Not the HIP entry: everything `kernels-hip/` adds is AMD's (`hp_amd.h`: amdgcn
//!    builtins, `s_memrealtime`, `s_sleep`, the kernarg segment), and HIP's own NVIDIA headers
//!    would take the same `__HIPCC__` branch and fail; on NVIDIA the shared sources' CUDA branch
//!    of `hp_compat.h` is what HIP-on-NVIDIA would compile. Same binary kernels on both
//!    backends, so a CUDA/HIP comparison on one GPU differs only in host code.
//! 2. The bindings also read `nvidia-layer/hipnv_extra.h`, which declares the one function
//!    HIP 5.2 lacks and the layer serves (`hipModuleLaunchCooperativeKernel`, newer HIP's
//!    signature), so the backend's cooperative-launch path is built and run.
//! 3. The layer is compiled with nvcc against the same HIP header into
//!    `OUT_DIR/libhaloport_hipnv.so` and linked in place of libamdhip64. It loads libcuda itself
//!    (dlopen), so binaries start without an NVIDIA driver and report no device.
//!
//! Under `cargo clippy` (`toolchain::only_checking`) nothing is linked or run: job 2 runs
//! without its constant check, and an empty image stands in for the kernels (no probing, no
//! hipcc or nvcc, no layer).

use std::collections::BTreeMap;
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use bindgen::callbacks::{EnumVariantValue, IntKind, ParseCallbacks};
use haloport_toolchain as toolchain;

const INSTALL_HINT: &str = "\
install hipcc and the HIP runtime headers, for example on Debian/Ubuntu:
    apt-get install hipcc libamdhip64-dev
(`bash ci/setup.sh` does this), or install ROCm and set ROCM_PATH, or point HIPCC at hipcc.";

/// Targets newer than the defaults, used when the installed hipcc knows them.
const NEWER: [&str; 3] = ["gfx942", "gfx1100", "gfx1030"];

/// The runtime functions `src/ffi.rs` calls. Those a header may lack are marked in
/// [`OPTIONAL`]; bindgen simply generates nothing for them.
const FUNCTIONS: &[&str] = &[
    "hipGetErrorName",
    "hipGetDeviceCount",
    "hipSetDevice",
    "hipGetDevice",
    "hipPointerGetAttribute",
    "hipMemGetAddressRange",
    "hipDeviceGetName",
    "hipDeviceGetAttribute",
    "hipDriverGetVersion",
    "hipRuntimeGetVersion",
    "hipMalloc",
    "hipMemset",
    "hipFree",
    "hipHostMalloc",
    "hipHostGetDevicePointer",
    "hipHostFree",
    "hipStreamCreateWithFlags",
    "hipDeviceGetStreamPriorityRange",
    "hipStreamCreateWithPriority",
    "hipStreamQuery",
    "hipStreamSynchronize",
    "hipStreamDestroy",
    "hipStreamWaitEvent",
    "hipStreamBeginCapture",
    "hipStreamEndCapture",
    "hipGraphInstantiate",
    "hipGraphDestroy",
    "hipGraphLaunch",
    "hipGraphExecDestroy",
    "hipEventCreate",
    "hipEventCreateWithFlags",
    "hipEventRecord",
    "hipEventQuery",
    "hipEventElapsedTime",
    "hipEventDestroy",
    "hipMemcpyHtoDAsync",
    "hipMemcpyDtoHAsync",
    "hipMemcpy3DAsync",
    "hipModuleLoadData",
    "hipModuleGetFunction",
    "hipModuleUnload",
    "hipModuleLaunchKernel",
    "hipModuleLaunchCooperativeKernel",
    "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
    "hipIpcGetMemHandle",
    "hipIpcOpenMemHandle",
    "hipIpcCloseMemHandle",
    "hipDeviceGetPCIBusId",
    "hipDeviceGetByPCIBusId",
    "hipDeviceCanAccessPeer",
];

/// Enums whose values haloport uses (generated as newtypes, so a code the runtime returns that
/// the header did not list is still a valid value, not undefined behaviour).
const ENUMS: &[&str] = &[
    "hipError_t",
    "hipDeviceAttribute_t",
    "hipMemcpyKind",
    "hipStreamCaptureMode",
    "hipPointer_attribute",
    "hipMemoryType",
];

/// Flag macros haloport passes, and the header's version (for messages).
const MACROS: &[&str] = &[
    "HIP_VERSION_MAJOR",
    "HIP_VERSION_MINOR",
    "HIP_VERSION_PATCH",
    "hipHostMallocPortable",
    "hipHostMallocMapped",
    "hipHostMallocCoherent",
    "hipHostMallocNonCoherent",
    "hipStreamNonBlocking",
    "hipEventDisableTiming",
    "hipIpcMemLazyEnablePeerAccess",
    "HIP_IPC_HANDLE_SIZE",
];

/// Constants `src/ffi.rs` needs; the build stops, naming the header, when one is missing.
const REQUIRED: &[&str] = &[
    "hipSuccess",
    "hipErrorNoDevice",
    "hipErrorInsufficientDriver",
    "hipErrorNotReady",
    "hipErrorOutOfMemory",
    "hipErrorInvalidValue",
    "hipErrorCooperativeLaunchTooLarge",
    "hipErrorInvalidDevice",
    "hipDeviceAttributeCanMapHostMemory",
    "hipDeviceAttributeCooperativeLaunch",
    "hipDeviceAttributeMultiprocessorCount",
    "hipDeviceAttributeWarpSize",
    "hipDeviceAttributeMaxThreadsPerBlock",
    "hipMemcpyDefault",
    "hipStreamCaptureModeRelaxed",
    "hipMemoryTypeHost",
    "hipMemoryTypeDevice",
    "HIP_POINTER_ATTRIBUTE_MEMORY_TYPE",
    "HIP_POINTER_ATTRIBUTE_IS_MANAGED",
    "HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
];

/// What haloport can do without: the constant or function, and the cfg set when present.
const OPTIONAL: &[(&str, &str)] = &[
    (
        "hipDeviceAttributeWallClockRate",
        "haloport_hip_wall_clock_rate",
    ),
    (
        "hipModuleLaunchCooperativeKernel",
        "haloport_hip_module_cooperative",
    ),
];

/// Records the value libclang gave every enumerator of [`ENUMS`] and every macro of [`MACROS`].
#[derive(Debug, Default)]
struct Values(Arc<Mutex<BTreeMap<String, i64>>>);

impl Values {
    fn insert(&self, name: &str, value: i64) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(name.to_owned(), value);
        }
    }
}

impl ParseCallbacks for Values {
    fn int_macro(&self, name: &str, value: i64) -> Option<IntKind> {
        if MACROS.contains(&name) {
            self.insert(name, value);
        }
        None
    }

    fn enum_variant_name(
        &self,
        enum_name: Option<&str>,
        variant: &str,
        value: EnumVariantValue,
    ) -> Option<String> {
        let in_enum = enum_name.is_some_and(|e| {
            ENUMS
                .iter()
                .any(|want| e == *want || e == format!("enum {want}"))
        });
        if in_enum {
            match value {
                EnumVariantValue::Signed(v) => self.insert(variant, v),
                EnumVariantValue::Unsigned(v) => self.insert(variant, v as i64),
                EnumVariantValue::Boolean(v) => self.insert(variant, i64::from(v)),
            }
        }
        None
    }
}

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

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // Canonical, so the kernel cache sees the same compile as the CUDA backend's.
    let shared = toolchain::canonical(manifest.join("../kernels-cu"));
    let amd = toolchain::canonical(manifest.join("../kernels-hip"));
    for file in toolchain::sources_in(&[&shared, &amd]).into_iter().chain([
        layer_dir(&manifest).join("hipnv.cpp"),
        layer_dir(&manifest).join("hipnv_map.h"),
        layer_dir(&manifest).join("hipnv_extra.h"),
    ]) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    for var in [
        "HIPCC",
        "ROCM_PATH",
        "HIP_PATH",
        "PATH",
        "HALOPORT_HIP_ARCHS",
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "VIRTUAL_ENV",
        "HALOPORT_CUDA_ARCHS",
        toolchain::CACHE_VAR,
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for (_, cfg) in OPTIONAL {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
    }
    if env::var_os("CARGO_FEATURE_KERNELS").is_none() {
        return;
    }
    if env::var_os("CARGO_FEATURE_NVIDIA_LAYER").is_some() {
        nvidia_layer(&manifest, &shared);
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
    // Under clippy nothing is linked or run: the bindings, but no kernels or compiler checks.
    let checking = toolchain::only_checking();
    let archs = if checking {
        default_architectures()
    } else {
        architectures(&hipcc, &out_dir)
    };
    // Under clippy compile_units leaves empty images in the bundles' place.
    compile_kernels(&hipcc, &archs, &shared, &amd, &out_dir);

    let root = hip_root(&hipcc);
    let values = generate_bindings(&root, None, &out_dir);
    if !checking {
        check_against_hipcc(&hipcc, &archs[0], &values, &out_dir);
    }

    let lib = root.join("lib");
    if lib.join("libamdhip64.so").exists() {
        println!("cargo:rustc-link-search=native={}", lib.display());
    }
    // Otherwise (Debian: /usr/lib/x86_64-linux-gnu) the linker's default paths find it.
    println!("cargo:rustc-link-lib=dylib=amdhip64");
    println!("cargo:rustc-cfg=haloport_kernels");
    println!("cargo:rustc-env=HALOPORT_HIP_ARCHS={}", archs.join(";"));
    println!("cargo:rustc-env=HALOPORT_HIPCC={}", hipcc.display());
    println!("cargo:rustc-env=HALOPORT_HIP_CHECK_ARCH={}", archs[0]);
    println!("cargo:rustc-env=HALOPORT_HIP_EXTRA_HEADER=");
    println!(
        "cargo:rustc-env=HALOPORT_HIP_HEADER={}",
        root.join("include/hip/hip_runtime_api.h").display()
    );
}

/// `HALOPORT_HIP_ARCHS`, or the defaults (without probing for newer targets).
fn default_architectures() -> Vec<String> {
    let archs = toolchain::arch_list(
        &env::var("HALOPORT_HIP_ARCHS").unwrap_or_else(|_| "gfx906;gfx908;gfx90a".into()),
    );
    if archs.is_empty() {
        fail("HALOPORT_HIP_ARCHS names no target");
    }
    archs
}

/// `HALOPORT_HIP_ARCHS`, or the defaults plus the newer targets this hipcc compiles for.
fn architectures(hipcc: &Path, out_dir: &Path) -> Vec<String> {
    let mut archs = default_architectures();
    if env::var_os("HALOPORT_HIP_ARCHS").is_none() {
        for arch in NEWER {
            if compiles_for(hipcc, arch, out_dir) {
                archs.push(arch.to_owned());
            } else {
                println!(
                    "cargo:warning=haloport-hip: {} does not compile for {arch}; left out",
                    hipcc.display()
                );
            }
        }
    }
    archs
}

/// hipcc's code objects of each kernel unit for `archs`, side by side, each an offload bundle
/// `<unit>.hsaco`; every kernel's scratch checked.
fn compile_kernels(hipcc: &Path, archs: &[String], shared: &Path, amd: &Path, out_dir: &Path) {
    let sources = toolchain::sources_in(&[shared, amd]);
    let outputs = toolchain::compile_units(
        "hipcc",
        &sources,
        |entry| out_dir.join(format!("{entry}.hsaco")),
        |entry, bundle| {
            let mut cmd = Command::new(hipcc);
            cmd.args(["--genco", "-O3", "-std=c++17"])
                .arg("-I")
                .arg(shared)
                .arg("-I")
                .arg(amd);
            for arch in archs {
                cmd.arg(format!("--offload-arch={arch}"));
            }
            cmd.arg("-Rpass-analysis=kernel-resource-usage");
            cmd.arg("-o")
                .arg(bundle)
                .arg(amd.join(format!("{entry}.hip")));
            cmd
        },
    );
    for output in outputs {
        check_scratch(&String::from_utf8_lossy(&output.stderr));
    }
}

/// The most scratch (private memory) per lane a kernel may use. Clang puts there what does not
/// fit in registers, and a copy of any by-value argument whose address is taken: 3 KiB per
/// lane for `hp_regions_args` read without `hp_args_in_place`. The kernels need at most 92 bytes
/// (`hp_unpack_regions` on gfx906, hipcc 5.2); a GPU we cannot run must not get the copy unseen.
const SCRATCH_LIMIT: u64 = 256;

/// Stops the build when a kernel uses more scratch than [`SCRATCH_LIMIT`] on some target,
/// naming it; warns when the compiler gave no resource remarks to check.
fn check_scratch(remarks: &str) {
    let scratch = toolchain::scratch_per_kernel(remarks);
    if scratch.is_empty() {
        println!(
            "cargo:warning=hipcc printed no kernel resource remarks: the kernels' scratch was not checked"
        );
        return;
    }
    let over: Vec<String> = scratch
        .iter()
        .filter(|(_, bytes)| *bytes > SCRATCH_LIMIT)
        .map(|(kernel, bytes)| format!("{kernel}: {bytes} bytes per lane"))
        .collect();
    if !over.is_empty() {
        eprintln!(
            "error: kernels use more than {SCRATCH_LIMIT} bytes of scratch per lane on some AMD target \
             (a by-value argument copied per thread? see hp_args_in_place in kernels-hip/hp_amd.h):\n  {}",
            over.join("\n  ")
        );
        std::process::exit(1);
    }
}

/// The HIP installation whose `include/hip/hip_runtime_api.h` the bindings come from.
fn hip_root(hipcc: &Path) -> PathBuf {
    let hipconfig = hipcc.with_file_name("hipconfig");
    let hipconfig = if hipconfig.is_file() {
        hipconfig
    } else {
        PathBuf::from("hipconfig")
    };
    let roots = toolchain::hip_roots(
        &|v| env::var(v).ok(),
        toolchain::hipconfig_prefix(&hipconfig),
        Some(hipcc),
    );
    toolchain::find_root(&roots, "include/hip/hip_runtime_api.h").unwrap_or_else(|tried| {
        eprintln!(
            "error: haloport's hip feature needs the HIP runtime headers, and none were found."
        );
        eprintln!("looked in:\n  {}", tried.join("\n  "));
        eprintln!("{INSTALL_HINT}");
        std::process::exit(1);
    })
}

/// Runs bindgen over the installed header into `OUT_DIR/hip_bindings.rs`, writes the values of
/// the constants it generated to `OUT_DIR/hip_header_values.rs` (for the tests), and sets the
/// cfgs of [`OPTIONAL`]. Returns the constants' values.
fn generate_bindings(root: &Path, extra: Option<&Path>, out_dir: &Path) -> BTreeMap<String, i64> {
    let include = root.join("include");
    let header = include.join("hip/hip_runtime_api.h");
    let values = Values::default();
    let recorded = Arc::clone(&values.0);
    let mut builder = bindgen::Builder::default()
        .header(header.display().to_string())
        .clang_arg(format!("-I{}", include.display()))
        .clang_arg("-D__HIP_PLATFORM_AMD__")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .parse_callbacks(Box::new(values))
        .allowlist_recursively(true)
        .size_t_is_usize(true)
        .prepend_enum_name(false)
        .generate_comments(false)
        .layout_tests(true);
    if let Some(extra) = extra {
        builder = builder.header(extra.display().to_string());
    }
    for f in FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    for e in ENUMS {
        builder = builder.allowlist_type(e).newtype_enum(e);
    }
    for m in MACROS {
        builder = builder.allowlist_var(m);
    }
    let bindings = builder.generate().unwrap_or_else(|e| {
        fail(&format!(
            "bindgen could not read {}: {e} (is libclang installed?)",
            header.display()
        ))
    });
    let text = bindings.to_string();
    std::fs::write(out_dir.join("hip_bindings.rs"), &text)
        .unwrap_or_else(|e| fail(&format!("writing hip_bindings.rs: {e}")));

    let values = recorded
        .lock()
        .map(|m| m.clone())
        .unwrap_or_else(|_| fail("bindgen's callback panicked"));
    let missing: Vec<&str> = REQUIRED
        .iter()
        .chain(MACROS)
        .filter(|name| !values.contains_key(**name))
        .copied()
        .collect();
    if !missing.is_empty() {
        fail(&format!(
            "{} lacks what haloport's HIP backend needs: {}",
            header.display(),
            missing.join(", ")
        ));
    }
    for (item, cfg) in OPTIONAL {
        let present = values.contains_key(*item) || text.contains(&format!("pub fn {item}("));
        if present {
            println!("cargo:rustc-cfg={cfg}");
        } else {
            println!(
                "cargo:warning=haloport-hip: {} has no {item}; built without it (see src/lib.rs)",
                header.display()
            );
        }
    }
    let mut table = String::from(
        "/// Every constant the HIP bindings hold, as libclang read it from the installed header.\n\
         pub(crate) const HEADER_VALUES: &[(&str, i64)] = &[\n",
    );
    for (name, value) in &values {
        table.push_str(&format!("    ({name:?}, {value}),\n"));
    }
    table.push_str("];\n");
    std::fs::write(out_dir.join("hip_header_values.rs"), table)
        .unwrap_or_else(|e| fail(&format!("writing hip_header_values.rs: {e}")));
    values
}

/// Stops the build unless hipcc, compiling against its own HIP headers, agrees with every
/// constant bindgen generated (two installations, or a header changed under the bindings).
fn check_against_hipcc(hipcc: &Path, arch: &str, values: &BTreeMap<String, i64>, out: &Path) {
    let constants: Vec<(String, i64)> = values.iter().map(|(n, v)| (n.clone(), *v)).collect();
    let source = toolchain::constant_check_source("hip/hip_runtime_api.h", &constants);
    let mut cmd = Command::new(hipcc);
    cmd.arg(format!("--offload-arch={arch}"))
        .arg("-Wno-unused-command-line-argument");
    if let Err(e) = toolchain::syntax_check(&mut cmd, &out.join("hip_constants_check.hip"), &source)
    {
        fail(&format!(
            "the HIP bindings generated from the installed hip_runtime_api.h disagree with the \
             headers hipcc compiles with (two HIP installations? set HIP_PATH to hipcc's):\n{e}"
        ));
    }
}

fn layer_dir(manifest: &Path) -> PathBuf {
    manifest.join("nvidia-layer")
}

/// The `nvidia-layer` build (see the file's docs): the CUDA fatbin of the shared kernels, the
/// bindings from HIP 5.2's header plus `hipnv_extra.h`, and the layer linked for libamdhip64.
fn nvidia_layer(manifest: &Path, shared: &Path) {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let search = toolchain::nvcc_search(manifest);
    let nvcc = toolchain::find_or_exit(
        &search,
        "hip-nvidia",
        "install the CUDA compiler (`bash ci/setup.sh` puts nvcc 13.0 into .venv), or point NVCC at nvcc.",
    );
    let archs = toolchain::cuda_archs();
    let sources = toolchain::sources_in(&[shared]);
    toolchain::compile_units(
        "nvcc",
        &sources,
        |entry| out_dir.join(format!("{entry}_nv.fatbin")),
        |entry, fatbin| {
            toolchain::fatbin_command(&nvcc, shared, entry, &archs, fatbin)
                .unwrap_or_else(|e| fail(&e))
        },
    );
    // Under clippy nothing is linked or run: the bindings, but no kernels, layer or checks.
    let checking = toolchain::only_checking();

    // The HIP header the bindings come from; hipcc's installation, as in the AMD build, so the
    // constants are checked against the same header hipcc compiles with.
    let hip_search = toolchain::Search {
        program: "hipcc",
        program_vars: &["HIPCC"],
        root_vars: &["ROCM_PATH", "HIP_PATH"],
        default_roots: &["/opt/rocm"],
        extra: Vec::new(),
    };
    let hipcc = toolchain::find_or_exit(&hip_search, "hip-nvidia", INSTALL_HINT);
    let root = hip_root(&hipcc);
    let layer = layer_dir(manifest);
    let values = generate_bindings(&root, Some(&layer.join("hipnv_extra.h")), &out_dir);
    let lib = out_dir.join("libhaloport_hipnv.so");
    if !checking {
        // A syntax check only: any AMD target reads the same header.
        check_against_hipcc(&hipcc, "gfx906", &values, &out_dir);
        build_layer(&nvcc, &root, &layer, &lib);
    }
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=dylib=haloport_hipnv");
    println!("cargo:rustc-cfg=haloport_kernels");
    let sm: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
    println!("cargo:rustc-env=HALOPORT_HIP_ARCHS={}", sm.join(";"));
    println!("cargo:rustc-env=HALOPORT_HIPCC={}", hipcc.display());
    println!("cargo:rustc-env=HALOPORT_HIP_CHECK_ARCH=gfx906");
    println!(
        "cargo:rustc-env=HALOPORT_HIP_EXTRA_HEADER={}",
        layer.join("hipnv_extra.h").display()
    );
    println!("cargo:rustc-env=HALOPORT_HIPNV_NVCC={}", nvcc.display());
    println!("cargo:rustc-env=HALOPORT_HIPNV_LIB={}", lib.display());
    println!(
        "cargo:rustc-env=HALOPORT_HIP_HEADER={}",
        root.join("include/hip/hip_runtime_api.h").display()
    );
}

/// Builds haloport's HIP-on-CUDA layer, `lib`, from `layer`'s sources with `nvcc` against the
/// HIP headers under `root`.
fn build_layer(nvcc: &Path, root: &Path, layer: &Path, lib: &Path) {
    let mut cmd = Command::new(nvcc);
    cmd.args(["-O2", "-std=c++17", "-shared", "-cudart", "none"])
        .arg("-Xcompiler")
        .arg("-fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror")
        .arg("-Xlinker")
        .arg("-soname=libhaloport_hipnv.so")
        .arg("-I")
        .arg(root.join("include"))
        .arg("-I")
        .arg(layer)
        .args(["-x", "c++"])
        .arg(layer.join("hipnv.cpp"))
        .arg("-o")
        .arg(lib)
        .arg("-ldl");
    toolchain::compile_or_exit(&mut cmd, "nvcc (the HIP-on-NVIDIA layer)");
}
