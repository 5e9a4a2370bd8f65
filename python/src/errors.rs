//! haloport's errors as Python exceptions. The classes live in `haloport/errors.py` (so that
//! `InvalidInputError` can also be a `ValueError`); this module only picks the class for each
//! [`ErrorKind`] the Rust library sorts its errors into, and builds the binding's own errors
//! (a wrong array, an unknown stream object) of the same classes.

use haloport::foreign::ErrorKind;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The Python class of `kind`, in `haloport.errors`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::Usage => "UsageError",
        ErrorKind::Timeout => "TimeoutError",
        ErrorKind::Verification => "VerificationError",
        ErrorKind::Device => "DeviceError",
        ErrorKind::Mpi => "MpiError",
        ErrorKind::OtherRank => "OtherRankError",
        ErrorKind::Internal => "InternalError",
    }
}

/// An exception of `kind`'s class carrying `message`.
pub fn raise(kind: ErrorKind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::with_gil(|py| {
        let class = py
            .import("haloport.errors")
            .and_then(|m| m.getattr(class_name(kind)))
            .and_then(|c| c.downcast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            // Only a broken installation gets here; the message still tells what failed.
            Err(e) => PyRuntimeError::new_err(format!(
                "{message} (and haloport.errors could not be imported: {e})"
            )),
        }
    })
}

/// The exception for an error of the Rust library.
pub fn from_rust(error: &haloport::Error) -> PyErr {
    raise(ErrorKind::of(error), error.to_string())
}

/// An [`InvalidInputError`](ErrorKind::InvalidInput): a value the caller got wrong.
pub fn invalid(message: impl Into<String>) -> PyErr {
    raise(ErrorKind::InvalidInput, message)
}

/// Results of the Rust library, with their errors as exceptions.
pub trait IntoPyResult<T> {
    /// `Ok` unchanged, `Err` as the exception of its kind.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for haloport::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(|e| from_rust(&e))
    }
}
