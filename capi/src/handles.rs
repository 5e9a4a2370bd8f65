//! Handles: what C holds is a number dressed as a pointer, never an address, so that a freed,
//! forged or foreign handle is recognised and refused instead of dereferenced. Each thread has
//! its own table (a CUDA context is current on the thread that opened the backend); numbers are
//! never reused.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::LocalKey;

use crate::status::{Failure, HaloportStatus, Outcome};

/// Handle numbers, process-wide, so that a handle of another thread or another kind is never
/// taken for one of this table.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x4841_0000);

/// The live objects of one kind on this thread.
pub struct Table<T> {
    live: RefCell<HashMap<usize, T>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            live: RefCell::new(HashMap::new()),
        }
    }
}

/// One kind of handle: its table and its name in messages.
pub struct Kind<T: 'static> {
    pub table: &'static LocalKey<Table<T>>,
    pub name: &'static str,
}

impl<T: 'static> Kind<T> {
    /// Stores `object` and writes its handle to `out`.
    pub fn insert<H>(&self, object: T, out: *mut *mut H) -> Outcome {
        if out.is_null() {
            return Err(null(&format!("the {} out-parameter", self.name)));
        }
        let number = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        self.table
            .with(|t| t.live.borrow_mut().insert(number, object));
        // SAFETY: `out` is non-null and, by the caller's contract (the header), writable.
        unsafe { out.write(number as *mut H) };
        Ok(())
    }

    /// Runs `f` on the object behind `handle`.
    pub fn with<H, R>(&self, handle: *const H, f: impl FnOnce(&mut T) -> Outcome<R>) -> Outcome<R> {
        let number = self.number(handle)?;
        self.table.with(|t| {
            let mut live = t.live.borrow_mut();
            let object = live.get_mut(&number).ok_or_else(|| self.stale())?;
            f(object)
        })
    }

    /// Takes the object behind `handle` out of the table: the handle is dead from here on.
    pub fn remove<H>(&self, handle: *const H) -> Outcome<T> {
        let number = self.number(handle)?;
        self.table
            .with(|t| t.live.borrow_mut().remove(&number))
            .ok_or_else(|| self.stale())
    }

    fn number<H>(&self, handle: *const H) -> Outcome<usize> {
        if handle.is_null() {
            return Err(null(&format!("the {} handle", self.name)));
        }
        Ok(handle as usize)
    }

    fn stale(&self) -> Failure {
        Failure::new(
            HaloportStatus::InvalidHandle,
            format!(
                "the {} handle is not live on this thread: already freed, never created by haloport_{}_new, or created on another thread",
                self.name, self.name
            ),
        )
    }
}

/// The failure for a NULL pointer where one is required.
pub fn null(what: &str) -> Failure {
    Failure::new(HaloportStatus::NullArgument, format!("{what} is NULL"))
}

/// Reads `n` values from a caller's array.
///
/// # Safety
/// `ptr` is NULL or points to `n` readable values.
pub unsafe fn read_array<T: Copy>(ptr: *const T, n: usize, what: &str) -> Outcome<Vec<T>> {
    if ptr.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, and `n` readable values by this function's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) }.to_vec())
}

/// Reads a caller's array of three values (x, y, z).
///
/// # Safety
/// `ptr` is NULL or points to 3 readable values.
pub unsafe fn read3<T: Copy + Default>(ptr: *const T, what: &str) -> Outcome<[T; 3]> {
    // SAFETY: forwarded.
    let v = unsafe { read_array(ptr, 3, what)? };
    Ok([v[0], v[1], v[2]])
}

/// Writes three values (x, y, z) to a caller's array, if it gave one.
///
/// # Safety
/// `ptr` is NULL or points to 3 writable values.
pub unsafe fn write3<T: Copy>(ptr: *mut T, values: [T; 3]) {
    if !ptr.is_null() {
        // SAFETY: non-null, 3 writable values by this function's contract.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), ptr, 3) };
    }
}

/// Writes one value to a caller's out-parameter.
///
/// # Safety
/// `ptr` is NULL or writable.
pub unsafe fn write_out<T>(ptr: *mut T, value: T, what: &str) -> Outcome {
    if ptr.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null and writable by this function's contract.
    unsafe { ptr.write(value) };
    Ok(())
}
