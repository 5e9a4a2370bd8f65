//! Streams and events on host threads.
//!
//! A stream is a worker thread fed by a channel: work runs in the order it was queued, one item
//! at a time, and `submitted`/`completed` counters make stream queries truthful. An error in an
//! item is sticky, like a device error: it is reported by the next query or synchronize of that
//! stream. An event is recorded by queueing a marker: it completes, with a timestamp, when the
//! worker reaches it, after the marker was counted as completed, so that a stream whose last
//! item is a completed event's marker already queries as idle. Dropping a stream lets its queued work finish, then joins the worker.
//!
//! The application queues its own work with [`HostStream::enqueue`]: the host backend's
//! counterpart of launching one's own kernel on a GPU stream, ordered with haloport's
//! exchange exactly as a kernel would be.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use haloport_core::{Error, Result};

/// The longest a stream waits for an event of another stream ([`HostEvent::wait_work`]).
pub const STREAM_WAIT_LIMIT: Duration = Duration::from_secs(600);

pub(crate) type Work = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

/// What the worker runs: work, or an event's marker, which cannot fail and completes the
/// event only once the stream counts it as done.
enum Item {
    Work(Work),
    Marker(Box<dyn FnOnce() + Send>),
}

#[derive(Default)]
struct Progress {
    submitted: u64,
    completed: u64,
    error: Option<String>,
}

#[derive(Default)]
struct Shared {
    progress: Mutex<Progress>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An in-order work queue served by one thread.
pub struct HostStream {
    sender: Option<mpsc::Sender<Item>>,
    shared: Arc<Shared>,
    worker: Option<thread::JoinHandle<()>>,
}

fn sticky(error: &Option<String>) -> Result<()> {
    match error {
        Some(e) => Err(Error::Backend {
            backend: "host",
            call: "stream work",
            code: 1,
            name: e.clone(),
            context: String::new(),
        }),
        None => Ok(()),
    }
}

/// A time-out of a wait that began at `since` with `deadline` (its limit, not its overshoot).
fn timeout(since: Instant, deadline: Instant, what: &str) -> Error {
    Error::Timeout {
        rank: None,
        what: what.to_owned(),
        after: deadline.saturating_duration_since(since),
    }
}

impl HostStream {
    pub(crate) fn new() -> Result<HostStream> {
        let (sender, receiver) = mpsc::channel::<Item>();
        let shared = Arc::new(Shared::default());
        let worker_shared = Arc::clone(&shared);
        let worker = thread::Builder::new()
            .name("haloport-host-stream".into())
            .spawn(move || {
                for item in receiver {
                    let (result, marker) = match item {
                        Item::Work(work) => (work(), None),
                        Item::Marker(marker) => (Ok(()), Some(marker)),
                    };
                    {
                        let mut p = worker_shared.lock();
                        p.completed += 1;
                        if let Err(e) = result {
                            p.error.get_or_insert(e);
                        }
                        worker_shared.changed.notify_all();
                    }
                    if let Some(marker) = marker {
                        marker();
                    }
                }
            })
            .map_err(|e| Error::Backend {
                backend: "host",
                call: "thread::spawn",
                code: i64::from(e.raw_os_error().unwrap_or(0)),
                name: e.to_string(),
                context: "starting a stream's worker thread".into(),
            })?;
        Ok(HostStream {
            sender: Some(sender),
            shared,
            worker: Some(worker),
        })
    }

    /// Queues the application's own `work` (the host backend's kernel launch): it runs on the
    /// stream's thread after everything queued before it, and work queued after it (haloport's
    /// pack or unpack, an event) runs after it returns. An `Err` is sticky, like a device
    /// error: the next query or synchronize of this stream reports it.
    ///
    /// # Errors
    /// [`Error::Backend`] when the stream's worker has stopped.
    pub fn enqueue<F>(&self, work: F) -> Result<()>
    where
        F: FnOnce() -> std::result::Result<(), String> + Send + 'static,
    {
        self.send(Item::Work(Box::new(work)))
    }

    /// The stream's identity: the address of its shared state.
    pub(crate) fn id(&self) -> u64 {
        Arc::as_ptr(&self.shared) as u64
    }

    fn send(&self, item: Item) -> Result<()> {
        let mut p = self.shared.lock();
        let sent = self.sender.as_ref().map(|s| s.send(item));
        match sent {
            Some(Ok(())) => {
                p.submitted += 1;
                Ok(())
            }
            _ => Err(Error::Backend {
                backend: "host",
                call: "stream enqueue",
                code: 2,
                name: "stream worker has stopped".into(),
                context: String::new(),
            }),
        }
    }

    pub(crate) fn query(&self) -> Result<bool> {
        let p = self.shared.lock();
        sticky(&p.error)?;
        Ok(p.completed == p.submitted)
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        let since = Instant::now();
        let mut p = self.shared.lock();
        while p.completed < p.submitted {
            let now = Instant::now();
            if now >= deadline {
                return Err(timeout(
                    since,
                    deadline,
                    &format!(
                        "waiting for a host stream ({} of {} queued items done)",
                        p.completed, p.submitted
                    ),
                ));
            }
            p = self
                .shared
                .changed
                .wait_timeout(p, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        sticky(&p.error)
    }
}

impl Drop for HostStream {
    fn drop(&mut self) {
        self.sender = None;
        if let Some(worker) = self.worker.take() {
            if worker.join().is_err() {
                tracing::error!("host: a stream worker panicked");
            }
        }
    }
}

#[derive(Default)]
struct EventState {
    /// Incremented by every record; a marker completes only the record that queued it.
    generation: u64,
    reached: Option<Instant>,
    recorded: bool,
    /// The latest generation whose marker was reached (records complete in order per stream,
    /// but a later record on another stream may complete first).
    completed: u64,
}

#[derive(Default)]
struct EventShared {
    state: Mutex<EventState>,
    changed: Condvar,
}

impl EventShared {
    fn lock(&self) -> MutexGuard<'_, EventState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A marker on a stream, with the time its stream reached it.
#[derive(Default)]
pub struct HostEvent {
    shared: Arc<EventShared>,
}

impl HostEvent {
    pub(crate) fn record(&self, stream: &HostStream) -> Result<()> {
        let generation = {
            let mut s = self.shared.lock();
            s.generation += 1;
            s.reached = None;
            s.recorded = true;
            s.generation
        };
        let shared = Arc::clone(&self.shared);
        stream.send(Item::Marker(Box::new(move || {
            let mut s = shared.lock();
            s.completed = s.completed.max(generation);
            if s.generation == generation {
                s.reached = Some(Instant::now());
            }
            shared.changed.notify_all();
        })))
    }

    /// Like cuEventQuery: an event never recorded counts as complete.
    pub(crate) fn query(&self) -> bool {
        let s = self.shared.lock();
        !s.recorded || s.reached.is_some()
    }

    pub(crate) fn synchronize(&self, deadline: Instant) -> Result<()> {
        let since = Instant::now();
        let mut s = self.shared.lock();
        while s.recorded && s.reached.is_none() {
            let now = Instant::now();
            if now >= deadline {
                return Err(timeout(since, deadline, "waiting for a host event"));
            }
            s = self
                .shared
                .changed
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(())
    }

    /// Work for another stream that waits until this event's current record completes
    /// (cuStreamWaitEvent's semantics). It gives up after [`STREAM_WAIT_LIMIT`] with an error
    /// that stays on the waiting stream: a cycle of streams waiting on each other ends instead
    /// of hanging.
    pub(crate) fn wait_work(&self) -> Work {
        let shared = Arc::clone(&self.shared);
        let generation = shared.lock().generation;
        Box::new(move || {
            let since = Instant::now();
            let mut s = shared.lock();
            while s.completed < generation {
                let waited = since.elapsed();
                if waited >= STREAM_WAIT_LIMIT {
                    return Err(format!(
                        "a stream waited {:.0} s for an event recorded on another stream",
                        waited.as_secs_f64()
                    ));
                }
                s = shared
                    .changed
                    .wait_timeout(s, STREAM_WAIT_LIMIT - waited)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            Ok(())
        })
    }

    pub(crate) fn reached(&self) -> Option<Instant> {
        self.shared.lock().reached
    }
}
