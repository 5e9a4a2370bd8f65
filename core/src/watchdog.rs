//! A time-out for calls that cannot be polled: a blocking `MPI_Send`, `MPI_Waitall`,
//! `MPI_Barrier` block inside the MPI library, so no loop of ours can give up on them.
//!
//! Before such a call the caller arms the watchdog with a deadline and a description; after it,
//! the guard disarms it. If a deadline passes while armed, the watchdog thread prints the
//! time-out (rank, what was awaited) and ends the process with [`TIMEOUT_EXIT_CODE`]; `mpirun`
//! then ends the other ranks. It never calls MPI itself, so MPI's thread level does not matter.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// Exit code of a process ended by the watchdog (as `timeout(1)` uses).
pub const TIMEOUT_EXIT_CODE: i32 = 124;

#[derive(Default)]
struct State {
    armed: Option<(Instant, Instant, String)>,
    shutdown: bool,
}

/// Ends the process when an armed deadline passes. Dropping it stops its thread.
pub struct Watchdog {
    shared: Arc<(Mutex<State>, Condvar)>,
    rank: i32,
    thread: Option<thread::JoinHandle<()>>,
}

/// Disarms the watchdog when dropped.
pub struct Armed<'a> {
    watchdog: &'a Watchdog,
}

impl Watchdog {
    /// Starts the watchdog thread for this rank.
    pub fn start(rank: i32) -> Watchdog {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let thread = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("haloport-watchdog".into())
                .spawn(move || watch(rank, &shared))
                .ok()
        };
        if thread.is_none() {
            tracing::warn!("rank {rank}: could not start the watchdog thread; blocking MPI calls have no time-out");
        }
        Watchdog {
            shared,
            rank,
            thread,
        }
    }

    /// Arms the watchdog until the returned guard is dropped.
    pub fn arm(&self, deadline: Instant, what: impl FnOnce() -> String) -> Armed<'_> {
        let (lock, cvar) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        state.armed = Some((Instant::now(), deadline, what()));
        cvar.notify_one();
        Armed { watchdog: self }
    }

    /// The rank this watchdog reports for.
    pub fn rank(&self) -> i32 {
        self.rank
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        let (lock, _) = &*self.watchdog.shared;
        lock.lock().unwrap_or_else(PoisonError::into_inner).armed = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.shared;
        lock.lock().unwrap_or_else(PoisonError::into_inner).shutdown = true;
        cvar.notify_one();
        if let Some(t) = self.thread.take() {
            // The thread only waits on the condvar; it ends promptly and cannot panic.
            let _ = t.join();
        }
    }
}

fn watch(rank: i32, shared: &(Mutex<State>, Condvar)) {
    let (lock, cvar) = shared;
    let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if state.shutdown {
            return;
        }
        let wait = match &state.armed {
            None => Duration::from_secs(3600),
            Some((since, deadline, what)) => {
                let now = Instant::now();
                if now >= *deadline {
                    eprintln!(
                        "error: rank {rank}: timed out after {:.1} s {what}; ending this rank",
                        now.duration_since(*since).as_secs_f64()
                    );
                    std::process::exit(TIMEOUT_EXIT_CODE);
                }
                *deadline - now
            }
        };
        state = cvar
            .wait_timeout(state, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
