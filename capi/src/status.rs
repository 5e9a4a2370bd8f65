//! Status codes, the last error's message, and the one wrapper every exported function runs
//! its body in: errors become a status and a message, panics are caught at the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use haloport::foreign::ErrorKind;
use haloport::Error;

/// What a call of the library ended in. Every function returns one; on anything but
/// `HALOPORT_STATUS_OK`, `haloport_last_error()` says what went wrong.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportStatus {
    /// Success.
    Ok = 0,
    /// A declaration, option, value or field the caller got wrong.
    InvalidInput = 1,
    /// A required pointer argument was NULL.
    NullArgument = 2,
    /// A handle that is not live on this thread: already freed, never created, or created on
    /// another thread.
    InvalidHandle = 3,
    /// A call out of order: finish without start, start twice.
    Usage = 4,
    /// A wait that gave up: a peer that never sent, a device that never finished.
    Timeout = 5,
    /// Received data that is not what was sent.
    Verification = 6,
    /// The GPU, its driver or haloport's kernels failed or are missing.
    Device = 7,
    /// An MPI call failed.
    Mpi = 8,
    /// Another rank failed a step that every rank takes (set-up): this rank's call failed too.
    OtherRank = 9,
    /// A fault inside haloport (a caught panic among them): please report it.
    Internal = 10,
}

impl HaloportStatus {
    fn of(error: &Error) -> HaloportStatus {
        match ErrorKind::of(error) {
            ErrorKind::InvalidInput => HaloportStatus::InvalidInput,
            ErrorKind::Usage => HaloportStatus::Usage,
            ErrorKind::Timeout => HaloportStatus::Timeout,
            ErrorKind::Verification => HaloportStatus::Verification,
            ErrorKind::Device => HaloportStatus::Device,
            ErrorKind::Mpi => HaloportStatus::Mpi,
            ErrorKind::OtherRank => HaloportStatus::OtherRank,
            ErrorKind::Internal => HaloportStatus::Internal,
        }
    }

    /// The status's name, as the header spells it.
    pub fn name(self) -> &'static std::ffi::CStr {
        match self {
            HaloportStatus::Ok => c"HALOPORT_STATUS_OK",
            HaloportStatus::InvalidInput => c"HALOPORT_STATUS_INVALID_INPUT",
            HaloportStatus::NullArgument => c"HALOPORT_STATUS_NULL_ARGUMENT",
            HaloportStatus::InvalidHandle => c"HALOPORT_STATUS_INVALID_HANDLE",
            HaloportStatus::Usage => c"HALOPORT_STATUS_USAGE",
            HaloportStatus::Timeout => c"HALOPORT_STATUS_TIMEOUT",
            HaloportStatus::Verification => c"HALOPORT_STATUS_VERIFICATION",
            HaloportStatus::Device => c"HALOPORT_STATUS_DEVICE",
            HaloportStatus::Mpi => c"HALOPORT_STATUS_MPI",
            HaloportStatus::OtherRank => c"HALOPORT_STATUS_OTHER_RANK",
            HaloportStatus::Internal => c"HALOPORT_STATUS_INTERNAL",
        }
    }
}

/// A failure of one call: the status it returns and the message `haloport_last_error` gives.
pub struct Failure {
    status: HaloportStatus,
    message: String,
}

impl Failure {
    pub fn new(status: HaloportStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(HaloportStatus::InvalidInput, message)
    }

    /// The status the call returns.
    #[cfg(test)]
    pub fn status(&self) -> HaloportStatus {
        self.status
    }

    /// The message `haloport_last_error` gives.
    #[cfg(test)]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure::new(HaloportStatus::of(&error), error.to_string())
    }
}

pub type Outcome<T = ()> = Result<T, Failure>;

thread_local! {
    /// The message of this thread's last call that did not return `HALOPORT_STATUS_OK`.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs the body of exported function `function`: its failure, or a panic inside it, becomes
/// a status and this thread's last error message (prefixed with the function's name).
pub fn entry(function: &str, body: impl FnOnce() -> Outcome) -> HaloportStatus {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return HaloportStatus::Ok,
        Ok(Err(failure)) => failure,
        Err(panic) => Failure::new(
            HaloportStatus::Internal,
            format!(
                "internal error (caught at the C boundary): {}",
                panic_message(&*panic)
            ),
        ),
    };
    let message = format!("{function}: {}", failure.message).replace('\0', " ");
    LAST_ERROR.with(|last| {
        *last.borrow_mut() = CString::new(message).unwrap_or_default();
    });
    failure.status
}

/// What a caught panic said.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The message of the last call on this thread that did not return `HALOPORT_STATUS_OK`
/// (empty if none did). The string belongs to the library and stays valid until the next
/// failing call on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn haloport_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// The name of `status` (`"HALOPORT_STATUS_TIMEOUT"`), or `"unknown status"`; a static string.
#[no_mangle]
pub extern "C" fn haloport_status_name(status: i32) -> *const c_char {
    let known = [
        HaloportStatus::Ok,
        HaloportStatus::InvalidInput,
        HaloportStatus::NullArgument,
        HaloportStatus::InvalidHandle,
        HaloportStatus::Usage,
        HaloportStatus::Timeout,
        HaloportStatus::Verification,
        HaloportStatus::Device,
        HaloportStatus::Mpi,
        HaloportStatus::OtherRank,
        HaloportStatus::Internal,
    ];
    known
        .into_iter()
        .find(|s| *s as i32 == status)
        .map_or(c"unknown status".as_ptr(), |s| s.name().as_ptr())
}
