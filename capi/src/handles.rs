//! Handles: what C holds is a number dressed as a pointer, never an address, so that a freed,
//! forged or foreign handle is recognised and refused instead of dereferenced. Each thread has
//! its own table (a CUDA context is current on the thread that opened the backend); numbers are
//! never reused, and a process-wide note of which thread made each live handle lets a call from
//! another thread name the owner.
//!
//! A call that panics inside its object marks the handle failed: the object may be in any state,
//! so every later call but `_free` is refused, and `_free` leaks it rather than tear down what
//! the panic left half done. At thread exit (the main thread's after `main` returned, typically
//! after `MPI_Finalize`) exchanges and graphs never freed are left to the process with one line
//! on standard error: tearing them down would call MPI after `MPI_Finalize`, or enter a
//! collective the other ranks never enter. Backends are left too, silently (their teardown
//! calls the device driver, which may be ending with the process); declarations and options,
//! plain memory, are dropped.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::LocalKey;

use haloport::foreign::{log_line, OwnerThread};

use crate::status::{panic_message, Failure, HaloportStatus, Outcome};

/// Handle numbers, process-wide, so that a handle of another thread or another kind is never
/// taken for one of this table.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x4841_0000);

/// The thread that made each live handle, process-wide: read only to word a refusal.
static OWNERS: Mutex<Option<HashMap<usize, OwnerThread>>> = Mutex::new(None);

fn note_owner(number: usize) {
    if let Ok(mut owners) = OWNERS.lock() {
        owners
            .get_or_insert_with(HashMap::new)
            .insert(number, OwnerThread::current());
    }
}

fn forget_owner(number: usize) {
    if let Ok(mut owners) = OWNERS.lock() {
        if let Some(owners) = owners.as_mut() {
            owners.remove(&number);
        }
    }
}

fn owner_of(number: usize) -> Option<OwnerThread> {
    OWNERS
        .lock()
        .ok()
        .and_then(|owners| owners.as_ref().and_then(|o| o.get(&number).cloned()))
}

/// One live object, and why it may no longer be used.
struct Entry<T> {
    object: T,
    /// The call that panicked inside the object and its message.
    failed: Option<String>,
}

/// What becomes of the objects never freed when their thread ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtExit {
    /// Dropped: plain memory, nothing to call.
    Drop,
    /// Left to the process, silently.
    Leave,
    /// Left to the process, with one line on standard error.
    LeaveAndSay,
}

/// The live objects of one kind on this thread.
pub struct Table<T> {
    live: RefCell<HashMap<usize, Entry<T>>>,
    name: &'static str,
    at_exit: AtExit,
}

impl<T> Table<T> {
    /// An empty table of handles called `name` in messages.
    pub fn new(name: &'static str, at_exit: AtExit) -> Table<T> {
        Table {
            live: RefCell::new(HashMap::new()),
            name,
            at_exit,
        }
    }
}

impl<T> Drop for Table<T> {
    /// Objects never freed at thread exit (see the module's front page).
    fn drop(&mut self) {
        let live = std::mem::take(self.live.get_mut());
        for number in live.keys() {
            forget_owner(*number);
        }
        if live.is_empty() || self.at_exit == AtExit::Drop {
            return;
        }
        if self.at_exit == AtExit::LeaveAndSay {
            log_line(&format!(
                "{} {} handle(s) never freed on a thread that ended: left to the process's exit, not torn down (free them before MPI_Finalize)",
                live.len(),
                self.name
            ));
        }
        std::mem::forget(live);
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
        note_owner(number);
        self.table.with(|t| {
            t.live.borrow_mut().insert(
                number,
                Entry {
                    object,
                    failed: None,
                },
            )
        });
        // SAFETY: `out` is non-null and, by the caller's contract (the header), writable.
        unsafe { out.write(number as *mut H) };
        Ok(())
    }

    /// Runs `f` on the object behind `handle`; a panic inside `f` marks the handle failed
    /// (and goes on to the entry point's boundary).
    pub fn with<H, R>(&self, handle: *const H, f: impl FnOnce(&mut T) -> Outcome<R>) -> Outcome<R> {
        let number = self.number(handle)?;
        self.table.with(|t| {
            let mut live = t.live.borrow_mut();
            let entry = live.get_mut(&number).ok_or_else(|| self.stale(number))?;
            if let Some(why) = &entry.failed {
                return Err(self.failed(why));
            }
            match catch_unwind(AssertUnwindSafe(|| f(&mut entry.object))) {
                Ok(outcome) => outcome,
                Err(panic) => {
                    entry.failed = Some(panic_message(&*panic));
                    resume_unwind(panic)
                }
            }
        })
    }

    /// Takes the object behind `handle` out of the table: the handle is dead from here on.
    /// `Err` holds the object of a failed handle, which the caller leaks.
    pub fn remove<H>(&self, handle: *const H) -> Outcome<Result<T, T>> {
        let number = self.number(handle)?;
        let entry = self
            .table
            .with(|t| t.live.borrow_mut().remove(&number))
            .ok_or_else(|| self.stale(number))?;
        forget_owner(number);
        Ok(match entry.failed {
            None => Ok(entry.object),
            Some(_) => Err(entry.object),
        })
    }

    /// [`Self::remove`], dropping the object; a failed one is leaked with a line on standard
    /// error.
    pub fn free<H>(&self, handle: *const H) -> Outcome {
        match self.remove(handle)? {
            Ok(object) => drop(object),
            Err(object) => {
                log_line(&format!(
                    "a {} handle whose call failed inside haloport was freed: its memory is left to the process",
                    self.name
                ));
                std::mem::forget(object);
            }
        }
        Ok(())
    }

    fn number<H>(&self, handle: *const H) -> Outcome<usize> {
        if handle.is_null() {
            return Err(null(&format!("the {} handle", self.name)));
        }
        Ok(handle as usize)
    }

    fn stale(&self, number: usize) -> Failure {
        if let Some(owner) = owner_of(number).filter(|o| !o.is_current()) {
            return Failure::new(
                HaloportStatus::Usage,
                format!(
                    "the {} handle was created on thread {} and can be used only there (this call came from thread {})",
                    self.name,
                    owner.name(),
                    OwnerThread::current().name()
                ),
            );
        }
        Failure::new(
            HaloportStatus::InvalidHandle,
            format!(
                "the {} handle is not live: already freed, or never created by haloport_{}_new",
                self.name, self.name
            ),
        )
    }

    fn failed(&self, why: &str) -> Failure {
        Failure::new(
            HaloportStatus::Internal,
            format!(
                "the {} handle is unusable: an earlier call on it failed inside haloport ({why}); free it",
                self.name
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::entry;

    thread_local! {
        static NUMBERS: Table<u32> = Table::new("number", AtExit::Drop);
    }

    const NUMBER: Kind<u32> = Kind {
        table: &NUMBERS,
        name: "number",
    };

    fn new_number(value: u32) -> *mut u8 {
        let mut handle: *mut u8 = std::ptr::null_mut();
        assert!(NUMBER.insert(value, &mut handle).is_ok());
        assert!(!handle.is_null());
        handle
    }

    #[test]
    fn a_handle_whose_call_panicked_refuses_every_later_call_but_free() {
        let handle = new_number(7);
        let status = entry("haloport_number_poke", || {
            NUMBER.with(handle, |_| -> Outcome { panic!("a poke went wrong") })
        });
        assert_eq!(status, HaloportStatus::Internal);
        let Err(refused) = NUMBER.with(handle, |n| Ok(*n)) else {
            panic!("a handle whose call panicked was used again");
        };
        assert_eq!(refused.status(), HaloportStatus::Internal);
        assert!(
            refused.message().contains("the number handle is unusable")
                && refused.message().contains("a poke went wrong"),
            "{}",
            refused.message()
        );
        assert!(NUMBER.free(handle).is_ok(), "a failed handle can be freed");
        let Err(gone) = NUMBER.with(handle, |n| Ok(*n)) else {
            panic!("a freed handle was used");
        };
        assert_eq!(gone.status(), HaloportStatus::InvalidHandle);
    }

    #[test]
    fn a_handle_that_did_not_panic_stays_usable() {
        let handle = new_number(3);
        assert!(NUMBER.with(handle, |n| Ok(*n)).is_ok_and(|n| n == 3));
        let Err(_) = NUMBER.with(handle, |_| -> Outcome {
            Err(Failure::invalid("bad input"))
        }) else {
            panic!("the error was lost");
        };
        assert!(NUMBER.with(handle, |n| Ok(*n)).is_ok_and(|n| n == 3));
        assert!(NUMBER.free(handle).is_ok());
    }

    #[test]
    fn a_handle_used_on_another_thread_names_the_thread_that_made_it() {
        let handle = new_number(5) as usize;
        let refused = std::thread::Builder::new()
            .name("worker".into())
            .spawn(move || match NUMBER.with(handle as *const u8, |n| Ok(*n)) {
                Ok(_) => (HaloportStatus::Ok, String::new()),
                Err(f) => (f.status(), f.message().to_string()),
            })
            .expect("a thread starts")
            .join()
            .expect("the thread ends");
        assert_eq!(refused.0, HaloportStatus::Usage, "{}", refused.1);
        assert!(
            refused
                .1
                .contains("the number handle was created on thread")
                && refused.1.contains("'worker'"),
            "{}",
            refused.1
        );
        assert!(NUMBER.free(handle as *const u8).is_ok());
    }

    #[test]
    fn objects_never_freed_are_left_to_the_process_at_thread_exit() {
        struct Loud(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Loud {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        thread_local! {
            static LOUD: Table<Loud> = Table::new("loud", AtExit::LeaveAndSay);
        }
        const LOUD_KIND: Kind<Loud> = Kind {
            table: &LOUD,
            name: "loud",
        };
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&dropped);
        std::thread::spawn(move || {
            let mut handle: *mut u8 = std::ptr::null_mut();
            assert!(LOUD_KIND.insert(Loud(seen), &mut handle).is_ok());
        })
        .join()
        .expect("the thread ends");
        assert!(
            !dropped.load(Ordering::SeqCst),
            "an object never freed was torn down at its thread's exit"
        );
    }
}
