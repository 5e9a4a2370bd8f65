//! The one error type of haloport's libraries.
//!
//! Variants are the things a caller cannot foresee or must handle differently: bad input
//! (pattern, workload, variant), a failed vendor or MPI call (named, with its code), a time-out
//! (naming rank, block and state), and capabilities a backend lacks. Messages name the call and
//! the context, so the CLI can print them as they are.

use std::time::Duration;

/// Result with haloport's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in haloport's libraries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The exchange pattern is malformed or inconsistent between ranks (SPEC 3).
    #[error("invalid pattern: {0}")]
    InvalidPattern(String),

    /// A pattern file could not be read or parsed.
    #[error("pattern file {path}: {reason}")]
    PatternFile {
        /// The file as the user named it.
        path: String,
        /// What was wrong, from the parser where it had something to say.
        reason: String,
    },

    /// A name or number given by the user is not one haloport knows.
    #[error("{0}")]
    InvalidInput(String),

    /// The API was called out of order: `start` twice without `finish`, `finish` without
    /// `start`, an exchange used after it failed.
    #[error("usage: {0}")]
    Usage(String),

    /// Another rank failed a step every rank takes together (set-up, a collective check), so
    /// this rank stopped too rather than wait for it in the next collective.
    #[error("rank {rank} failed: {message}")]
    OtherRank {
        /// The lowest rank that failed.
        rank: i32,
        /// What it reported.
        message: String,
    },

    /// A broken internal invariant (a bug in haloport, or memory the protocol relies on was
    /// overwritten). Concerns one rank, which aborts the job.
    #[error("internal error: {0}")]
    Internal(String),

    /// Unpack found wrong values: the exchange ran but delivered wrong data.
    #[error("verification failed: {0}")]
    VerificationFailed(String),

    /// A vendor call (CUDA, HIP, host runtime) returned an error.
    #[error("{backend}: {call} failed with {name} ({code}){}", context_suffix(.context))]
    Backend {
        /// Which backend: "cuda", "hip", "host".
        backend: &'static str,
        /// The call that failed, e.g. `cuMemHostAlloc`.
        call: &'static str,
        /// The vendor's numeric code.
        code: i64,
        /// The vendor's name for the code.
        name: String,
        /// What haloport was doing.
        context: String,
    },

    /// An MPI call returned an error code.
    #[error("MPI: {call} failed with code {code}: {message}{}", context_suffix(.context))]
    Mpi {
        /// The MPI function, e.g. `MPI_Irecv`.
        call: &'static str,
        /// The MPI error code.
        code: i32,
        /// `MPI_Error_string` of the code.
        message: String,
        /// What haloport was doing, e.g. "posting the receive of block 3 from rank 1".
        context: String,
    },

    /// A wait did not finish in time. Names where it was stuck.
    #[error("{}timed out after {:.1} s {what}", rank_prefix(*.rank), .after.as_secs_f64())]
    Timeout {
        /// The rank that gave up, where known (backends do not know ranks; strategies add them).
        rank: Option<i32>,
        /// What it was waiting for, including the block and state where there is one.
        what: String,
        /// The wait's limit: its time-out, or the time from its start to its deadline (a wait
        /// ends at its first check past the limit, later on a loaded machine; the limit is
        /// what the user set and what a report can repeat).
        after: Duration,
    },

    /// The backend cannot do what was asked (e.g. a coherence kind, a kernel it lacks).
    #[error("{backend}: unsupported: {what}")]
    Unsupported {
        /// Which backend.
        backend: &'static str,
        /// What it lacks.
        what: String,
    },

    /// The backend was built without its compiled kernels, or they do not load on this device.
    #[error("{backend}: kernels unavailable: {reason}")]
    KernelsUnavailable {
        /// Which backend.
        backend: &'static str,
        /// Why.
        reason: String,
    },

    /// The device ran out of memory.
    #[error("{backend}: out of memory allocating {bytes} bytes of {kind}")]
    OutOfMemory {
        /// Which backend.
        backend: &'static str,
        /// Bytes asked for.
        bytes: usize,
        /// "device memory", "pinned host memory".
        kind: &'static str,
    },

    /// No device of this backend is present, or its driver is missing.
    #[error("{backend}: no device: {reason}")]
    NoDevice {
        /// Which backend.
        backend: &'static str,
        /// What the driver said.
        reason: String,
    },

    /// Writing or reading a result file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

fn rank_prefix(rank: Option<i32>) -> String {
    rank.map(|r| format!("rank {r}: ")).unwrap_or_default()
}

fn context_suffix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" while {context}")
    }
}

impl Error {
    /// Names the rank in a time-out that did not know it yet.
    pub fn on_rank(self, rank: i32) -> Error {
        match self {
            Error::Timeout {
                rank: None,
                what,
                after,
            } => Error::Timeout {
                rank: Some(rank),
                what,
                after,
            },
            other => other,
        }
    }

    /// The same error again, of the same kind, with `prefix` before its message: what an
    /// object that failed earlier returns from every later call, so that a time-out stays a
    /// time-out and a device error a device error.
    pub fn again(&self, prefix: &str) -> Error {
        let more = |m: &str| format!("{prefix}{m}");
        match self {
            Error::InvalidPattern(m) => Error::InvalidPattern(more(m)),
            Error::PatternFile { path, reason } => Error::PatternFile {
                path: path.clone(),
                reason: more(reason),
            },
            Error::InvalidInput(m) => Error::InvalidInput(more(m)),
            Error::Usage(m) => Error::Usage(more(m)),
            Error::OtherRank { rank, message } => Error::OtherRank {
                rank: *rank,
                message: more(message),
            },
            Error::Internal(m) => Error::Internal(more(m)),
            Error::VerificationFailed(m) => Error::VerificationFailed(more(m)),
            Error::Backend {
                backend,
                call,
                code,
                name,
                context,
            } => Error::Backend {
                backend,
                call,
                code: *code,
                name: name.clone(),
                context: more(context),
            },
            Error::Mpi {
                call,
                code,
                message,
                context,
            } => Error::Mpi {
                call,
                code: *code,
                message: message.clone(),
                context: more(context),
            },
            Error::Timeout { rank, what, after } => Error::Timeout {
                rank: *rank,
                what: more(what),
                after: *after,
            },
            Error::Unsupported { backend, what } => Error::Unsupported {
                backend,
                what: more(what),
            },
            Error::KernelsUnavailable { backend, reason } => Error::KernelsUnavailable {
                backend,
                reason: more(reason),
            },
            Error::OutOfMemory {
                backend,
                bytes,
                kind,
            } => Error::OutOfMemory {
                backend,
                bytes: *bytes,
                kind,
            },
            Error::NoDevice { backend, reason } => Error::NoDevice {
                backend,
                reason: more(reason),
            },
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), more(&source.to_string())),
            },
        }
    }

    /// True for errors every rank detects alike (bad input, a pattern checked collectively):
    /// one rank reports them and all ranks exit cleanly. Other errors concern one rank, which
    /// reports them and aborts the job.
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            Error::InvalidPattern(_)
                | Error::PatternFile { .. }
                | Error::InvalidInput(_)
                | Error::VerificationFailed(_)
        )
    }
}
