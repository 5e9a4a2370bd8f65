//! Which device is current on a thread. An application may switch devices between haloport's
//! calls (`cudaSetDevice`, CuPy's `with Device(n)`) and call from threads of its own: every
//! call of an exchange makes its backend's device current for its duration
//! ([`Backend::enter`](super::Backend::enter)) and then gives the thread back what it had.

use crate::error::Result;

/// What [`Backend::enter`](super::Backend::enter) made current; dropping it makes the thread's
/// previous device (context) current again.
#[must_use = "the backend's device is current only while the guard lives"]
pub struct Current {
    restore: Option<Restore>,
}

struct Restore {
    /// The previous context or device, as the backend numbers it.
    previous: usize,
    /// Makes `previous` current again.
    set: fn(usize) -> Result<()>,
}

impl Current {
    /// Nothing was switched: the backend's device was current already, or the backend has no
    /// devices.
    pub fn unchanged() -> Current {
        Current { restore: None }
    }

    /// The backend switched the thread away from `previous`; dropping the guard calls
    /// `set(previous)`.
    pub fn switched_from(previous: usize, set: fn(usize) -> Result<()>) -> Current {
        Current {
            restore: Some(Restore { previous, set }),
        }
    }

    /// Whether entering switched the thread's device.
    pub fn switched(&self) -> bool {
        self.restore.is_some()
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        if let Some(Restore { previous, set }) = self.restore.take() {
            if let Err(e) = set(previous) {
                tracing::error!("making the application's device current again: {e}");
            }
        }
    }
}
