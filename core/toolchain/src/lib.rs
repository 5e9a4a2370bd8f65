//! Build-script helpers shared by `haloport-cuda` and `haloport-hip`: finding a GPU compiler
//! (nvcc, hipcc) and the HIP installation whose headers the HIP bindings are generated from,
//! splitting architecture lists, and stopping the build with the full command line when a
//! compile fails.
//!
//! Only build scripts use it (as a `[build-dependencies]` entry), so it has no dependencies and
//! never queries a GPU. Every search reports every place it looked when it finds nothing, so the
//! build error can say so. Environment reads are injected (`var`), so the tests below need not
//! touch the process environment; everything here is single-threaded.

use std::path::{Path, PathBuf};
use std::process::Command;

mod cache;

/// The kernels' compilation units, by the name of their entry file (`.cu` in `kernels-cu/`,
/// `.hip` in `kernels-hip/`) and image; each is compiled on a thread of its own, side by side.
/// The order and names are those of `haloport_core::KernelUnit::ALL` (a test of the core checks).
pub const KERNEL_UNITS: [&str; 2] = ["haloport", "haloport_stencil"];

pub use cache::{canonical, compile_cached_or_exit, sources_in, CACHE_VAR};

/// Where to look for a compiler, in order.
pub struct Search<'a> {
    /// The program's file name, e.g. "nvcc".
    pub program: &'a str,
    /// Variables holding the program's full path, e.g. `NVCC`.
    pub program_vars: &'a [&'a str],
    /// Variables holding an installation root with `bin/<program>`, e.g. `CUDA_HOME`.
    pub root_vars: &'a [&'a str],
    /// Fixed installation roots tried after `PATH`, e.g. `/usr/local/cuda`.
    pub default_roots: &'a [&'a str],
    /// Further candidate files tried last (e.g. a pip-installed compiler in a virtualenv).
    pub extra: Vec<PathBuf>,
}

/// Where nvcc is looked for, for a build script of the crate at `manifest` (a directory beside
/// the workspace root's `.venv`): `NVCC`, `CUDA_HOME`/`CUDA_PATH`, `PATH`, `/usr/local/cuda`,
/// then a pip-installed nvcc in the repository's `.venv` or the active virtualenv.
pub fn nvcc_search(manifest: &std::path::Path) -> Search<'static> {
    let mut venvs = vec![manifest.join("../.venv")];
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        venvs.push(PathBuf::from(v));
    }
    Search {
        program: "nvcc",
        program_vars: &["NVCC"],
        root_vars: &["CUDA_HOME", "CUDA_PATH"],
        default_roots: &["/usr/local/cuda"],
        extra: pip_nvcc_candidates(&venvs),
    }
}

/// Looks for the program; on failure returns every candidate tried, in order.
///
/// `var` reads an environment variable (injected, so tests need not touch the process env).
pub fn find(
    search: &Search<'_>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, Vec<String>> {
    let mut tried = Vec::new();
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    for v in search.program_vars {
        match var(v) {
            Some(p) => candidates.push((format!("${v}"), PathBuf::from(p))),
            None => tried.push(format!("${v} (not set)")),
        }
    }
    for v in search.root_vars {
        match var(v) {
            Some(root) => candidates.push((
                format!("${v}/bin"),
                Path::new(&root).join("bin").join(search.program),
            )),
            None => tried.push(format!("${v} (not set)")),
        }
    }
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path) {
            candidates.push(("$PATH".into(), dir.join(search.program)));
        }
    }
    for root in search.default_roots {
        candidates.push((
            root.to_string(),
            Path::new(root).join("bin").join(search.program),
        ));
    }
    for extra in &search.extra {
        candidates.push(("pip".into(), extra.clone()));
    }
    for (origin, candidate) in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
        tried.push(format!("{} ({origin})", candidate.display()));
    }
    Err(tried)
}

/// pip-installed CUDA compilers (`nvidia-cuda-nvcc`) inside the virtualenvs at `venvs`:
/// `<venv>/lib/python3.*/site-packages/nvidia/cu*/bin/nvcc`.
pub fn pip_nvcc_candidates(venvs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for venv in venvs {
        let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = libs.flatten().map(|e| e.path()).collect();
        pythons.sort();
        for python in pythons {
            let nvidia = python.join("site-packages").join("nvidia");
            let Ok(kits) = std::fs::read_dir(&nvidia) else {
                continue;
            };
            let mut kits: Vec<PathBuf> = kits.flatten().map(|e| e.path()).collect();
            kits.sort();
            for kit in kits.into_iter().rev() {
                out.push(kit.join("bin").join("nvcc"));
            }
        }
    }
    out
}

/// Splits an architecture list such as "80;90" or "gfx906,gfx908" into its entries.
pub fn arch_list(spec: &str) -> Vec<String> {
    spec.split([';', ',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether this build script runs for `cargo clippy`, which only checks the crates: cargo then
/// names clippy-driver in `RUSTC_WORKSPACE_WRAPPER`. Nothing is linked or run, so the kernels'
/// image is never read: the build scripts leave an empty one ([`stand_in_image`]) instead of
/// compiling the kernels, minutes of nvcc and hipcc per clippy run in CI, every Rust item
/// (those under `cfg(haloport_kernels)` too) linted all the same. Cargo names the wrapper to
/// its own workspace's build scripts only, so clippy of a workspace that takes these crates as
/// path dependencies (`python/`'s) says so with [`CHECK_ONLY_VAR`]`=1`.
pub fn only_checking() -> bool {
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    println!("cargo:rerun-if-env-changed={CHECK_ONLY_VAR}");
    is_clippy(std::env::var_os("RUSTC_WORKSPACE_WRAPPER").as_deref())
        || asked_to_check_only(std::env::var_os(CHECK_ONLY_VAR).as_deref())
}

/// Set to `1`, the build scripts leave an empty kernel image, as under this workspace's
/// `cargo clippy` ([`only_checking`]); a binary built so has no kernels to run.
pub const CHECK_ONLY_VAR: &str = "HALOPORT_CHECK_ONLY";

/// Whether `value` (of [`CHECK_ONLY_VAR`]) asks for checking only: exactly `1`.
fn asked_to_check_only(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "1")
}

/// Whether `wrapper` (a `RUSTC_WORKSPACE_WRAPPER` value) is clippy's driver.
fn is_clippy(wrapper: Option<&std::ffi::OsStr>) -> bool {
    wrapper
        .and_then(|w| Path::new(w).file_name())
        .is_some_and(|name| name == "clippy-driver" || name == "clippy-driver.exe")
}

/// Writes an empty kernel image at `out`, where [`only_checking`] says no kernel is compiled.
pub fn stand_in_image(out: &Path) {
    if let Err(e) = std::fs::write(out, []) {
        eprintln!("error: could not write {}: {e}", out.display());
        std::process::exit(1);
    }
}

/// The CUDA architectures to build kernels for: `HALOPORT_CUDA_ARCHS` ("80;90" by default).
pub fn cuda_archs() -> Vec<String> {
    arch_list(&std::env::var("HALOPORT_CUDA_ARCHS").unwrap_or_else(|_| "80;90".into()))
}

/// The nvcc command that compiles `kernels/<entry>.cu` into the fatbin `out`: SASS for every
/// architecture of `archs` and PTX of the newest, so that newer GPUs can JIT it.
///
/// # Errors
/// A message when `archs` names no architecture.
pub fn fatbin_command(
    nvcc: &Path,
    kernels: &Path,
    entry: &str,
    archs: &[String],
    out: &Path,
) -> Result<Command, String> {
    let newest = archs
        .iter()
        .max_by_key(|a| a.parse::<u32>().unwrap_or(0))
        .ok_or("HALOPORT_CUDA_ARCHS names no architecture")?;
    let mut cmd = Command::new(nvcc);
    // --threads 0: one thread per architecture, as many as the machine has cores.
    cmd.args(["--fatbin", "-O3", "-std=c++17", "--threads", "0", "-I"])
        .arg(kernels);
    for arch in archs {
        cmd.arg("-gencode")
            .arg(format!("arch=compute_{arch},code=sm_{arch}"));
    }
    cmd.arg("-gencode")
        .arg(format!("arch=compute_{newest},code=compute_{newest}"));
    cmd.arg("-o")
        .arg(out)
        .arg(kernels.join(format!("{entry}.cu")));
    Ok(cmd)
}

/// Compiles every unit of [`KERNEL_UNITS`] side by side, a thread each (through the cache:
/// [`compile_cached_or_exit`]): `command(entry, out)` is the compile of the unit `entry` into
/// `out`, and `out_of(entry)` that path. Returns each compile's output, in the units' order.
/// Under `cargo clippy` ([`only_checking`]) empty images stand in and nothing is compiled.
pub fn compile_units(
    compiler: &str,
    sources: &[PathBuf],
    out_of: impl Fn(&str) -> PathBuf + Sync,
    command: impl Fn(&str, &Path) -> Command + Sync,
) -> Vec<std::process::Output> {
    if only_checking() {
        for entry in KERNEL_UNITS {
            stand_in_image(&out_of(entry));
        }
        return Vec::new();
    }
    std::thread::scope(|scope| {
        let compiles: Vec<_> = KERNEL_UNITS
            .iter()
            .map(|entry| {
                let (out_of, command) = (&out_of, &command);
                scope.spawn(move || {
                    let out = out_of(entry);
                    let mut cmd = command(entry, &out);
                    compile_cached_or_exit(&mut cmd, compiler, sources, &[out])
                })
            })
            .collect();
        compiles
            .into_iter()
            .map(|c| {
                c.join().unwrap_or_else(|_| {
                    eprintln!("error: a {compiler} compile's thread panicked");
                    std::process::exit(1)
                })
            })
            .collect()
    })
}

/// Runs a compile command; on failure stops the build with the full command line and the
/// compiler's output (STYLE: a kernel that fails to compile says exactly why). Returns the
/// output of a successful compile (its remarks, for instance).
pub fn compile_or_exit(cmd: &mut Command, compiler: &str) -> std::process::Output {
    let output = cmd.output().unwrap_or_else(|e| {
        eprintln!("error: could not run {cmd:?}: {e}");
        std::process::exit(1);
    });
    if !output.status.success() {
        eprintln!("error: {compiler} failed to compile haloport's kernels:\n{cmd:?}");
        eprintln!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::process::exit(1);
    }
    output
}

/// The scratch (private memory) per lane of each kernel in clang's
/// `-Rpass-analysis=kernel-resource-usage` remarks, in the order reported (once per target):
/// the value of each "ScratchSize [bytes/lane]: N" paired with the "Function Name: NAME" before
/// it.
pub fn scratch_per_kernel(remarks: &str) -> Vec<(String, u64)> {
    let after = |line: &str, key: &str| {
        line.split_once(key)
            .map(|(_, rest)| rest.split_whitespace().next().unwrap_or("").to_owned())
    };
    let mut kernel = None;
    let mut found = Vec::new();
    for line in remarks.lines() {
        if let Some(name) = after(line, "Function Name: ") {
            kernel = Some(name);
        } else if let Some(bytes) = after(line, "ScratchSize [bytes/lane]: ") {
            if let (Some(name), Ok(bytes)) = (kernel.take(), bytes.parse()) {
                found.push((name, bytes));
            }
        }
    }
    found
}

/// Finds the compiler or stops the build listing every place tried and how to install one.
pub fn find_or_exit(search: &Search<'_>, feature: &str, hint: &str) -> PathBuf {
    match find(search, &|v| std::env::var(v).ok()) {
        Ok(found) => found,
        Err(tried) => {
            eprintln!(
                "error: haloport's {feature} feature needs {} to compile its kernels, and none was found.",
                search.program
            );
            eprintln!("looked in:\n  {}", tried.join("\n  "));
            eprintln!("{hint}");
            std::process::exit(1);
        }
    }
}

/// Candidate HIP installation roots, in order: `$HIP_PATH`, `$ROCM_PATH`, the prefix
/// `hipconfig -p` printed (`hipconfig`), the root of the hipcc the kernels compile with
/// (`<root>/bin/hipcc`), `/opt/rocm`, `/usr` (Debian's packages). Each comes with where it came
/// from, for error messages.
pub fn hip_roots(
    var: &dyn Fn(&str) -> Option<String>,
    hipconfig: Option<String>,
    hipcc: Option<&Path>,
) -> Vec<(String, PathBuf)> {
    let mut roots = Vec::new();
    for v in ["HIP_PATH", "ROCM_PATH"] {
        if let Some(root) = var(v) {
            roots.push((format!("${v}"), PathBuf::from(root)));
        }
    }
    if let Some(prefix) = hipconfig {
        roots.push(("hipconfig -p".into(), PathBuf::from(prefix.trim())));
    }
    if let Some(root) = hipcc.and_then(Path::parent).and_then(Path::parent) {
        roots.push(("hipcc's root".into(), root.to_path_buf()));
    }
    for fixed in ["/opt/rocm", "/usr"] {
        roots.push((fixed.into(), PathBuf::from(fixed)));
    }
    roots
}

/// The first root holding `relative` (e.g. `include/hip/hip_runtime_api.h`); on failure every
/// place tried, in order.
pub fn find_root(roots: &[(String, PathBuf)], relative: &str) -> Result<PathBuf, Vec<String>> {
    let mut tried = Vec::new();
    for (origin, root) in roots {
        let candidate = root.join(relative);
        if candidate.is_file() {
            return Ok(root.clone());
        }
        tried.push(format!("{} ({origin})", candidate.display()));
    }
    Err(tried)
}

/// What `hipconfig -p` prints (the HIP installation prefix), or `None` when there is no
/// hipconfig or it fails.
pub fn hipconfig_prefix(hipconfig: &Path) -> Option<String> {
    let out = Command::new(hipconfig).arg("-p").output().ok()?;
    let prefix = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !prefix.is_empty()).then_some(prefix)
}

/// A C++ source that fails to compile unless every `(name, value)` holds in the included header:
/// one `static_assert` per constant, naming the constant and the value the bindings hold.
/// `haloport-hip` compiles it with the hipcc that builds its kernels, so bindings generated from
/// one HIP installation cannot silently disagree with another.
pub fn constant_check_source(include: &str, constants: &[(String, i64)]) -> String {
    let mut src = format!("#include <{include}>\n");
    for (name, value) in constants {
        src.push_str(&format!(
            "static_assert((long long)({name}) == {value}LL, \"{name}: haloport's bindings say {value}\");\n"
        ));
    }
    src
}

/// Compiles `source` with `cmd` plus `-fsyntax-only` (the source is written to `path` first);
/// `Err` holds the command line and the compiler's output.
pub fn syntax_check(cmd: &mut Command, path: &Path, source: &str) -> Result<(), String> {
    std::fs::write(path, source).map_err(|e| format!("writing {}: {e}", path.display()))?;
    cmd.arg("-fsyntax-only").arg(path);
    let output = cmd
        .output()
        .map_err(|e| format!("could not run {cmd:?}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd:?}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn only_clippy_s_driver_or_the_variable_at_1_counts_as_checking() {
        let clippy = std::ffi::OsStr::new("/root/.rustup/toolchains/stable/bin/clippy-driver");
        assert!(is_clippy(Some(clippy)));
        assert!(is_clippy(Some(std::ffi::OsStr::new("clippy-driver"))));
        for other in ["/usr/bin/sccache", "/opt/clippy-driver-wrapper", ""] {
            assert!(!is_clippy(Some(std::ffi::OsStr::new(other))), "{other}");
        }
        assert!(!is_clippy(None));
        assert!(asked_to_check_only(Some(std::ffi::OsStr::new("1"))));
        for other in ["0", "", "yes", " 1"] {
            assert!(
                !asked_to_check_only(Some(std::ffi::OsStr::new(other))),
                "{other}"
            );
        }
        assert!(!asked_to_check_only(None));
    }

    #[test]
    fn scratch_is_read_per_kernel_from_clangs_remarks() {
        let remarks = "\
x.cuh:447:1: remark: Function Name: hp_pack_regions_w8 [-Rpass-analysis=kernel-resource-usage]
    hp_pack_regions_w8(const hp_regions_args a) {
x.cuh:447:1: remark:     VGPRs: 54 [-Rpass-analysis=kernel-resource-usage]
x.cuh:447:1: remark:     ScratchSize [bytes/lane]: 3160 [-Rpass-analysis=kernel-resource-usage]
x.cuh:9:1: remark: Function Name: hp_stencil27 [-Rpass-analysis=kernel-resource-usage]
x.cuh:9:1: remark:     ScratchSize [bytes/lane]: 0 [-Rpass-analysis=kernel-resource-usage]
x.cuh:9:1: remark:     ScratchSize [bytes/lane]: 7 [-Rpass-analysis=kernel-resource-usage]
";
        assert_eq!(
            scratch_per_kernel(remarks),
            [
                ("hp_pack_regions_w8".to_owned(), 3160),
                ("hp_stencil27".to_owned(), 0)
            ],
            "one size per kernel name; a size without a name before it is not anyone's"
        );
        assert!(scratch_per_kernel("no remarks at all").is_empty());
    }

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(path, b"").expect("touch");
    }

    fn search(extra: Vec<PathBuf>) -> Search<'static> {
        Search {
            program: "nvcc",
            program_vars: &["NVCC"],
            root_vars: &["CUDA_HOME", "CUDA_PATH"],
            default_roots: &["/nonexistent/haloport-test-cuda"],
            extra,
        }
    }

    #[test]
    fn explicit_variables_win_over_path_and_pip() {
        let dir = tempfile::tempdir().expect("temp dir");
        let explicit = dir.path().join("explicit/nvcc");
        let home = dir.path().join("home");
        let on_path = dir.path().join("path");
        for p in [&explicit, &home.join("bin/nvcc"), &on_path.join("nvcc")] {
            touch(p);
        }
        let env: HashMap<&str, String> = [
            ("NVCC", explicit.display().to_string()),
            ("CUDA_HOME", home.display().to_string()),
            ("PATH", on_path.display().to_string()),
        ]
        .into();
        let get = |v: &str| env.get(v).cloned();
        assert_eq!(find(&search(vec![]), &get), Ok(explicit.clone()));
        let no_nvcc = |v: &str| if v == "NVCC" { None } else { get(v) };
        assert_eq!(find(&search(vec![]), &no_nvcc), Ok(home.join("bin/nvcc")));
        let path_only = |v: &str| if v == "PATH" { get(v) } else { None };
        assert_eq!(find(&search(vec![]), &path_only), Ok(on_path.join("nvcc")));
    }

    #[test]
    fn a_pip_installed_nvcc_is_found_in_a_virtualenv() {
        let dir = tempfile::tempdir().expect("temp dir");
        let nvcc = dir
            .path()
            .join("venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc");
        touch(&nvcc);
        let candidates = pip_nvcc_candidates(&[dir.path().join("venv")]);
        assert_eq!(find(&search(candidates), &|_| None), Ok(nvcc));
    }

    #[test]
    fn nothing_found_lists_every_place_tried() {
        let tried = find(
            &search(vec![PathBuf::from("/nonexistent/pip/nvcc")]),
            &|v| (v == "PATH").then(|| "/nonexistent/a:/nonexistent/b".to_owned()),
        )
        .expect_err("nothing to find");
        let all = tried.join("\n");
        for needle in [
            "$NVCC (not set)",
            "$CUDA_HOME (not set)",
            "/nonexistent/a/nvcc ($PATH)",
            "/nonexistent/haloport-test-cuda/bin/nvcc",
            "/nonexistent/pip/nvcc (pip)",
        ] {
            assert!(all.contains(needle), "missing {needle} in\n{all}");
        }
    }

    #[test]
    fn architecture_lists_split_on_common_separators() {
        assert_eq!(arch_list("80;90"), vec!["80", "90"]);
        assert_eq!(
            arch_list(" gfx906, gfx908 ;gfx90a "),
            vec!["gfx906", "gfx908", "gfx90a"]
        );
        assert!(arch_list(" ; ").is_empty());
    }

    #[test]
    fn hip_headers_are_found_in_the_documented_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let header = "include/hip/hip_runtime_api.h";
        let (env_root, config_root) = (dir.path().join("env"), dir.path().join("config"));
        touch(&config_root.join(header));
        let env: HashMap<&str, String> = [("ROCM_PATH", env_root.display().to_string())].into();
        let var = |v: &str| env.get(v).cloned();
        let hipcc = dir.path().join("cc/bin/hipcc");
        let roots = hip_roots(
            &var,
            Some(format!("{}\n", config_root.display())),
            Some(&hipcc),
        );
        let origins: Vec<&str> = roots.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(
            origins,
            [
                "$ROCM_PATH",
                "hipconfig -p",
                "hipcc's root",
                "/opt/rocm",
                "/usr"
            ]
        );
        assert_eq!(roots[2].1, dir.path().join("cc"));
        // $ROCM_PATH names a root without the header: the next candidate wins.
        assert_eq!(find_root(&roots, header), Ok(config_root.clone()));
        touch(&env_root.join(header));
        assert_eq!(find_root(&roots, header), Ok(env_root));
    }

    #[test]
    fn constant_checks_name_the_constant_and_its_value() {
        let src =
            constant_check_source("hip/hip_runtime_api.h", &[("hipErrorNoDevice".into(), 100)]);
        assert!(src.starts_with("#include <hip/hip_runtime_api.h>\n"));
        assert!(src.contains(
            "static_assert((long long)(hipErrorNoDevice) == 100LL, \"hipErrorNoDevice: haloport's bindings say 100\");"
        ));
    }

    #[test]
    fn no_hip_header_lists_every_place_tried() {
        let roots = vec![
            ("$HIP_PATH".to_owned(), PathBuf::from("/nonexistent/hip")),
            ("/opt/rocm".to_owned(), PathBuf::from("/nonexistent/rocm")),
        ];
        let tried = find_root(&roots, "include/hip/hip_runtime_api.h").expect_err("none there");
        assert_eq!(
            tried,
            [
                "/nonexistent/hip/include/hip/hip_runtime_api.h ($HIP_PATH)",
                "/nonexistent/rocm/include/hip/hip_runtime_api.h (/opt/rocm)",
            ]
        );
    }
}
