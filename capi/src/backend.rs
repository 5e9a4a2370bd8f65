//! The backend handle: one device of one kind, opened for this process.

use std::sync::Arc;

use haloport::foreign::{BackendKind, ForeignBackend};

use crate::handles::Kind;
use crate::status::{entry, Failure, HaloportStatus};

/// A backend: one device, opened with `haloport_backend_new`, freed with
/// `haloport_backend_free`. Exchanges keep what they need of it: it may be freed before them.
pub struct HaloportBackend {
    _opaque: [u8; 0],
}

/// Which backend runs the exchange.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportBackendKind {
    /// The CPU: host memory, host threads; streams are ignored.
    Host = 0,
    /// NVIDIA GPUs through CUDA.
    Cuda = 1,
    /// AMD GPUs through HIP.
    Hip = 2,
}

thread_local! {
    static BACKENDS: crate::handles::Table<Arc<ForeignBackend>> = crate::handles::Table::new("backend", crate::handles::AtExit::Leave);
}

pub(crate) const BACKEND: Kind<Arc<ForeignBackend>> = Kind {
    table: &BACKENDS,
    name: "backend",
};

/// Opens device `device` (modulo the number of devices; a rank's index on its node is the
/// usual choice) of backend `kind` (a `haloport_backend_kind`). On CUDA the device's primary
/// context is made current on this thread: the context the CUDA runtime uses, so the caller's
/// `cudaMalloc`'d memory and streams are this backend's.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` for an unknown kind, a kind this library was built
/// without (`haloport_backends()`), or a negative device; `HALOPORT_STATUS_DEVICE` when there is
/// no such device or haloport's kernels do not load on it.
#[no_mangle]
pub extern "C" fn haloport_backend_new(
    kind: i32,
    device: i32,
    out: *mut *mut HaloportBackend,
) -> HaloportStatus {
    entry("haloport_backend_new", || {
        let kind = match kind {
            0 => BackendKind::Host,
            1 => BackendKind::Cuda,
            2 => BackendKind::Hip,
            other => {
                return Err(Failure::invalid(format!(
                    "unknown backend kind {other}; known: HALOPORT_BACKEND_KIND_HOST (0), _CUDA (1), _HIP (2)"
                )))
            }
        };
        let device = usize::try_from(device)
            .map_err(|_| Failure::invalid(format!("device {device} is negative")))?;
        // Shared with the exchanges made from it, all on this thread (the tables are per
        // thread); `haloport::foreign` takes an Arc.
        #[allow(clippy::arc_with_non_send_sync)]
        let backend = Arc::new(ForeignBackend::open(kind, device)?);
        BACKEND.insert(backend, out)
    })
}

/// Frees a backend handle; exchanges made from it keep working. NULL is allowed and does
/// nothing.
#[no_mangle]
pub extern "C" fn haloport_backend_free(backend: *mut HaloportBackend) -> HaloportStatus {
    entry("haloport_backend_free", || {
        if !backend.is_null() {
            BACKEND.free(backend)?;
        }
        Ok(())
    })
}
