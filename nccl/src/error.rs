//! The crate's one error type. Every variant names what failed and where, so that a caller
//! (`haloport info`, the nccl transport) can print it as the reason a route is missing or a
//! step failed; none of them is ever a panic.

use std::time::Duration;

use crate::Flavour;

/// What went wrong loading or using NCCL/RCCL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No candidate library could be opened; `tried` holds each name or path with the loader's
    /// answer (`dlerror`).
    #[error("{flavour} not found: {}", tried.iter().map(|(n, e)| format!("{n}: {e}")).collect::<Vec<_>>().join("; "))]
    LibraryNotFound {
        /// Which library was looked for.
        flavour: Flavour,
        /// Each candidate tried, in order, with why it failed.
        tried: Vec<(String, String)>,
    },
    /// The library opened but lacks a symbol this crate calls.
    #[error("{flavour} at {library} lacks the symbol {symbol}: {detail}")]
    MissingSymbol {
        /// Which library.
        flavour: Flavour,
        /// The name or path it was opened under.
        library: String,
        /// The first missing symbol.
        symbol: &'static str,
        /// The loader's answer (`dlerror`).
        detail: String,
    },
    /// A call returned an error code.
    #[error(
        "{call} failed: {name} ({code}){}{}",
        last_error(last),
        context_of(context)
    )]
    Call {
        /// The call, e.g. `ncclGroupEnd`.
        call: &'static str,
        /// Its `ncclResult_t`.
        code: u32,
        /// `ncclGetErrorString(code)`.
        name: String,
        /// `ncclGetLastError` at the time (may be empty).
        last: String,
        /// What this crate was doing, e.g. "rank 1 of 2".
        context: String,
    },
    /// A non-blocking operation did not finish within its time-out; the communicator has been
    /// aborted.
    #[error("time-out after {after:?} waiting for {waited_for}")]
    Timeout {
        /// What was waited for, e.g. "ncclCommInitRankConfig (rank 0 of 2) to connect".
        waited_for: String,
        /// The time-out that passed (the communicator's).
        after: Duration,
    },
    /// Other ranks failed a collective set-up step this rank passed (or also failed); the
    /// local communicator, if any, has been aborted.
    #[error("{step} failed on rank(s) {ranks:?}{}{}", last_error(detail), local.as_ref().map(|e| format!("; here: {e}")).unwrap_or_default())]
    PeerFailed {
        /// The step, e.g. "communicator set-up".
        step: &'static str,
        /// Every rank where it failed.
        ranks: Vec<i32>,
        /// What the failing rank said, where it could tell (may be empty).
        detail: String,
        /// This rank's own error, when it failed too.
        local: Option<Box<Error>>,
    },
    /// The communicator was aborted after an earlier error; it takes no more work.
    #[error("the communicator was aborted after an earlier error: {0}")]
    Aborted(String),
    /// An argument out of range (a rank, a size).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

fn last_error(last: &str) -> String {
    if last.is_empty() {
        String::new()
    } else {
        format!(": {last}")
    }
}

fn context_of(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" ({context})")
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
