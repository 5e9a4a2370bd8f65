//! A cache of kernel compiles, so that nvcc and hipcc run once per set of inputs however many
//! builds need the kernels: the debug and release profiles, clippy's and the test build's
//! feature sets, the C ABI, the Python package and the HIP-on-CUDA layer (which compiles the
//! same fatbin as the CUDA backend) each run the GPU backends' build scripts anew.
//!
//! An entry is keyed by everything the compile reads: the compiler (its path, size and
//! modification time), its arguments and environment (with the output paths, which differ per
//! build, replaced by placeholders) and the path and contents of every source file. It holds
//! the output files and the compiler's messages (the HIP build reads its resource remarks), and
//! is written to a temporary folder and renamed into place, so builds running side by side never
//! see half an entry. The cache lives in `HALOPORT_KERNEL_CACHE`, else in the target directory
//! (`<target>/haloport-kernels`); `HALOPORT_KERNEL_CACHE=off` turns it off.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsStr;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::compile_or_exit;

/// The variable naming the cache folder (or `off`).
pub const CACHE_VAR: &str = "HALOPORT_KERNEL_CACHE";

/// Runs `cmd` (as [`compile_or_exit`] does) unless the cache holds an entry for the same
/// compiler, arguments and `sources`; then copies the entry's files to `outputs` and returns
/// its messages. A compile that ran is stored for the next build. Cache failures (a full disk,
/// a read-only folder) only cost the reuse, never the build.
pub fn compile_cached_or_exit(
    cmd: &mut Command,
    compiler: &str,
    sources: &[PathBuf],
    outputs: &[PathBuf],
) -> Output {
    compile_cached_in(cache_folder().as_deref(), cmd, compiler, sources, outputs)
}

/// [`compile_cached_or_exit`] with the cache in `folder` (`None`: no cache).
fn compile_cached_in(
    folder: Option<&Path>,
    cmd: &mut Command,
    compiler: &str,
    sources: &[PathBuf],
    outputs: &[PathBuf],
) -> Output {
    let Some(folder) = folder else {
        return compile_or_exit(cmd, compiler);
    };
    let entry = folder.join(format!("{:016x}", key(cmd, sources, outputs)));
    if let Some(output) = restore(&entry, outputs) {
        return output;
    }
    let output = compile_or_exit(cmd, compiler);
    store(folder, &entry, outputs, &output);
    output
}

/// `path` made absolute and free of `..` (so that a cache key names a file one way), or as it
/// is when that fails (the compile then says what is missing).
pub fn canonical(path: PathBuf) -> PathBuf {
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// Every file in `folders` (not their subfolders), sorted: the sources a kernel compile reads.
pub fn sources_in(folders: &[&Path]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = folders
        .iter()
        .filter_map(|f| std::fs::read_dir(f).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// `HALOPORT_KERNEL_CACHE`, else `<target>/haloport-kernels` from the build script's `OUT_DIR`
/// (`<target>/<profile>/build/<package>-<hash>/out`); `None` when off or not found.
fn cache_folder() -> Option<PathBuf> {
    match std::env::var_os(CACHE_VAR) {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => {
            let out_dir = PathBuf::from(std::env::var_os("OUT_DIR")?);
            target_of(&out_dir).map(|t| t.join("haloport-kernels"))
        }
    }
}

/// The target directory above a build script's `out_dir`: the parent of the profile folder
/// that holds `build/`.
fn target_of(out_dir: &Path) -> Option<PathBuf> {
    let build = out_dir
        .ancestors()
        .find(|a| a.file_name() == Some(OsStr::new("build")))?;
    Some(build.parent()?.parent()?.to_path_buf())
}

/// The entry's key: the compiler, its arguments (outputs as placeholders), environment and
/// working folder, and each source's path and contents (a missing source hashes as absent).
fn key(cmd: &Command, sources: &[PathBuf], outputs: &[PathBuf]) -> u64 {
    let mut h = DefaultHasher::new();
    // Canonical: the CUDA and HIP build scripts reach the same nvcc by different paths.
    let program = canonical(PathBuf::from(cmd.get_program()));
    program.hash(&mut h);
    if let Ok(meta) = std::fs::metadata(&program) {
        meta.len().hash(&mut h);
        meta.modified().ok().hash(&mut h);
    }
    for arg in cmd.get_args() {
        match outputs.iter().position(|o| o.as_os_str() == arg) {
            Some(i) => format!("<output {i}>").hash(&mut h),
            None => arg.hash(&mut h),
        }
    }
    for (name, value) in cmd.get_envs() {
        (name, value).hash(&mut h);
    }
    cmd.get_current_dir().hash(&mut h);
    for source in sources {
        source.hash(&mut h);
        std::fs::read(source).ok().hash(&mut h);
    }
    h.finish()
}

/// Copies an entry's files to `outputs` and returns its messages; `None` on a miss.
fn restore(entry: &Path, outputs: &[PathBuf]) -> Option<Output> {
    let stdout = std::fs::read(entry.join("stdout")).ok()?;
    let stderr = std::fs::read(entry.join("stderr")).ok()?;
    for (i, out) in outputs.iter().enumerate() {
        std::fs::copy(entry.join(format!("output-{i}")), out).ok()?;
    }
    Some(Output {
        status: success(),
        stdout,
        stderr,
    })
}

/// Stores a compile's outputs and messages as `entry`, through a temporary folder.
fn store(folder: &Path, entry: &Path, outputs: &[PathBuf], output: &Output) {
    let staging = folder.join(format!(
        "{}.{}.tmp",
        entry.file_name().and_then(OsStr::to_str).unwrap_or("entry"),
        std::process::id()
    ));
    let written = std::fs::create_dir_all(&staging).is_ok()
        && std::fs::write(staging.join("stdout"), &output.stdout).is_ok()
        && std::fs::write(staging.join("stderr"), &output.stderr).is_ok()
        && outputs
            .iter()
            .enumerate()
            .all(|(i, out)| std::fs::copy(out, staging.join(format!("output-{i}"))).is_ok());
    // Another build may have stored the same entry meanwhile: either copy serves.
    if !written || std::fs::rename(&staging, entry).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
}

#[cfg(unix)]
fn success() -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str, out: &Path) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script, "sh"]).arg(out);
        cmd
    }

    #[test]
    fn the_target_folder_is_found_above_out_dir() {
        let out = Path::new("/t/debug/build/haloport-cuda-0123/out");
        assert_eq!(target_of(out), Some(PathBuf::from("/t")));
        assert_eq!(target_of(Path::new("/elsewhere/out")), None);
    }

    #[test]
    fn keys_ignore_output_paths_and_follow_sources_and_arguments() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let source = dir.path().join("k.cu");
        std::fs::write(&source, "one").expect("write");
        let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
        let sources = [source.clone()];
        let key_of = |cmd: &Command, out: &PathBuf| key(cmd, &sources, std::slice::from_ref(out));
        let first = key_of(&shell("echo x > \"$1\"", &a), &a);
        assert_eq!(first, key_of(&shell("echo x > \"$1\"", &b), &b));
        assert_ne!(first, key_of(&shell("echo y > \"$1\"", &a), &a));
        std::fs::write(&source, "two").expect("write");
        assert_ne!(first, key_of(&shell("echo x > \"$1\"", &a), &a));
    }

    #[test]
    fn a_stored_compile_is_restored_with_its_messages_and_a_changed_source_misses() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = dir.path().join("cache");
        let source = dir.path().join("k.cu");
        std::fs::write(&source, "one").expect("write");
        let (first, second) = (dir.path().join("first.bin"), dir.path().join("second.bin"));
        let script = "date +%N > \"$1\"; echo remark >&2";
        let sources = [source.clone()];
        // Each compile writes the time it ran: a restored output repeats the first one's.
        let compile = |out: &PathBuf| {
            let output = compile_cached_in(
                Some(&cache),
                &mut shell(script, out),
                "sh",
                &sources,
                std::slice::from_ref(out),
            );
            let entries = std::fs::read_dir(&cache).map_or(0, |d| d.count());
            (output, entries)
        };
        let (made, entries) = compile(&first);
        assert!(
            made.status.success() && entries == 1,
            "the first compile is stored"
        );
        let (again, entries) = compile(&second);
        assert_eq!(
            entries, 1,
            "the same compile for another output path is a hit"
        );
        assert_eq!(again.stderr, b"remark\n");
        assert_eq!(
            std::fs::read(&first).expect("first output"),
            std::fs::read(&second).expect("restored output")
        );
        std::fs::write(&source, "two").expect("write");
        assert_eq!(compile(&second).1, 2, "a changed source misses");
    }
}
