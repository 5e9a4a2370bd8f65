//! Finding and opening NCCL or RCCL at run time, so that a binary built here runs (and says why
//! the route is missing) where neither is installed.
//!
//! Where each flavour is looked for, in order: the path in its variable
//! (`HALOPORT_NCCL_LIBRARY` / `HALOPORT_RCCL_LIBRARY`) alone when set, else the sonames
//! `libnccl.so.2`, `libnccl.so` / `librccl.so.1`, `librccl.so` through the dynamic loader
//! (`LD_LIBRARY_PATH`, the cache). Every symbol the crate calls is looked up by name before the
//! function table is filled, so a missing one is reported by name.
//!
//! [`Nccl`] is immutable after loading and shared (`Arc`) by the communicators made from it;
//! it is `Send + Sync`, as the library's entry points may be called from any thread.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::{result, sys};

/// Which library: NVIDIA's NCCL or AMD's RCCL (same API, same symbol names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// NVIDIA NCCL (`libnccl.so.2`).
    Nccl,
    /// AMD RCCL (`librccl.so.1`), the same API over HIP streams.
    Rccl,
}

impl Flavour {
    /// The variable that names the library's path, overriding the search.
    pub fn variable(self) -> &'static str {
        match self {
            Flavour::Nccl => "HALOPORT_NCCL_LIBRARY",
            Flavour::Rccl => "HALOPORT_RCCL_LIBRARY",
        }
    }

    /// The names tried through the dynamic loader when the variable is unset.
    pub fn sonames(self) -> &'static [&'static str] {
        match self {
            Flavour::Nccl => &["libnccl.so.2", "libnccl.so"],
            Flavour::Rccl => &["librccl.so.1", "librccl.so"],
        }
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavour::Nccl => "NCCL",
            Flavour::Rccl => "RCCL",
        })
    }
}

/// A library version, decoded from `ncclGetVersion`'s code (`NCCL_VERSION(X,Y,Z)`: `X*1000 +
/// Y*100 + Z` up to 2.8, `X*10000 + Y*100 + Z` from 2.9 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl Version {
    /// Decodes a version code.
    pub fn from_code(code: u32) -> Version {
        if code < 20900 {
            Version {
                major: code / 1000,
                minor: code % 1000 / 100,
                patch: code % 100,
            }
        } else {
            Version {
                major: code / 10000,
                minor: code % 10000 / 100,
                patch: code % 100,
            }
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// An opened NCCL or RCCL: its function table, where it came from and its version.
pub struct Nccl {
    lib: sys::NcclLibrary,
    flavour: Flavour,
    path: String,
    version: Version,
}

impl fmt::Debug for Nccl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nccl")
            .field("flavour", &self.flavour)
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

impl Nccl {
    /// Finds and opens `flavour` (see the module's documentation for where it looks) and asks
    /// its version.
    ///
    /// # Errors
    /// [`Error::LibraryNotFound`] listing every candidate and the loader's answer;
    /// [`Error::MissingSymbol`] naming the first symbol the library lacks; [`Error::Call`] when
    /// `ncclGetVersion` fails.
    ///
    /// Vendor: ncclGetVersion.
    pub fn load(flavour: Flavour) -> Result<Arc<Nccl>> {
        let candidates: Vec<String> = match std::env::var(flavour.variable()) {
            Ok(path) if !path.is_empty() => vec![path],
            _ => flavour.sonames().iter().map(|s| s.to_string()).collect(),
        };
        let from_variable = std::env::var_os(flavour.variable()).is_some_and(|v| !v.is_empty());
        let mut tried = Vec::new();
        for name in candidates {
            match Self::load_from(flavour, &name) {
                Ok(nccl) => return Ok(nccl),
                Err(Error::LibraryNotFound { tried: mut t, .. }) => {
                    if from_variable {
                        for entry in &mut t {
                            entry.0 = format!("{}={}", flavour.variable(), entry.0);
                        }
                    }
                    tried.append(&mut t)
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::LibraryNotFound { flavour, tried })
    }

    /// Opens `flavour` from `path` (a path, or a name for the dynamic loader to search).
    ///
    /// # Errors
    /// As [`Nccl::load`], with `path` the only candidate.
    pub fn load_from(flavour: Flavour, path: &str) -> Result<Arc<Nccl>> {
        // SAFETY: opening a library runs its initialisers. NCCL's and RCCL's (and the stand-in's)
        // only set up their own state; the caller chose the path (variable or soname), which is
        // the trust decision any dlopen of a vendor library makes.
        let library =
            unsafe { libloading::Library::new(path) }.map_err(|e| Error::LibraryNotFound {
                flavour,
                tried: vec![(path.to_string(), e.to_string())],
            })?;
        for symbol in sys::FUNCTIONS {
            // SAFETY: only the symbol's address is looked up (typed as an opaque pointer, never
            // called or dereferenced here).
            if let Err(e) = unsafe { library.get::<*const ()>(symbol.as_bytes()) } {
                return Err(Error::MissingSymbol {
                    flavour,
                    library: path.to_string(),
                    symbol,
                    detail: e.to_string(),
                });
            }
        }
        // SAFETY: every symbol exists (checked above); the generated table types each with its
        // signature from nccl.h, which NCCL 2.x and RCCL keep for these calls.
        let lib = unsafe { sys::NcclLibrary::from_library(library) }.map_err(|e| {
            Error::MissingSymbol {
                flavour,
                library: path.to_string(),
                symbol: "(one of FUNCTIONS)",
                detail: e.to_string(),
            }
        })?;
        let code = result::version(&lib)?;
        let version = Version::from_code(u32::try_from(code).unwrap_or(0));
        tracing::debug!(%flavour, path, %version, "loaded");
        Ok(Arc::new(Nccl {
            lib,
            flavour,
            path: path.to_string(),
            version,
        }))
    }

    /// Which library this is.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The name or path it was opened under.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Its version (`ncclGetVersion`).
    pub fn version(&self) -> Version {
        self.version
    }

    /// The raw function table, for the checked calls in [`crate::result`].
    pub fn sys(&self) -> &sys::NcclLibrary {
        &self.lib
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_both_encodings() {
        assert_eq!(Version::from_code(2708).to_string(), "2.7.8");
        assert_eq!(Version::from_code(21805).to_string(), "2.18.5");
        assert_eq!(Version::from_code(23206).to_string(), "2.32.6");
    }

    #[test]
    fn a_library_that_is_not_there_is_an_error_naming_it() {
        let e =
            Nccl::load_from(Flavour::Rccl, "/nonexistent/librccl.so.1").expect_err("no such file");
        let text = e.to_string();
        assert!(
            text.starts_with("RCCL not found: /nonexistent/librccl.so.1: "),
            "{text}"
        );
    }
}
