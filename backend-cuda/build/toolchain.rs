//! Finding a GPU compiler (nvcc, hipcc) for the backends' build scripts.
//!
//! Shared by `backend-cuda/build.rs` and `backend-hip/build.rs` (through `#[path]`) and unit
//! tested in `haloport-cuda`. Never queries a GPU. Reports every place it looked when it finds
//! nothing, so the build error can say so.

// Shared by two build scripts (and tested in haloport-cuda): each uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Runs a compile command; on failure stops the build with the full command line and the
/// compiler's output (STYLE: a kernel that fails to compile says exactly why).
pub fn compile_or_exit(cmd: &mut Command, compiler: &str) {
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
