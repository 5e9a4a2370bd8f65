//! Variant names and what they select (SPEC 4): the strategy and its options.
//!
//! Names follow the thesis's figures: `base-{nb|bl}-{wait|test}[-nc]`, `tq-{nb|bl}-{tq|pb}`
//! (zero-copy taskqueue), `tqm-{nb|bl}-{tq|pb}` (memcpy taskqueue), the device-direct
//! `ipc-base` and `ipc-tq` (SPEC 12), and `lib-{base|tq}-{mpi|ipc}`, the thesis's blocks as the
//! payload of the library's halo exchange (SPEC 13). Parsing is the only way
//! from a user's string to a variant, so every output uses the same spelling.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use haloport_core::backend::Coherence;
use haloport_core::error::Error;
use haloport_core::halo::HaloStrategy;
pub use haloport_core::transport::TransportKind;

/// How sends are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SendMode {
    /// `MPI_Send`: returns when the send buffer may be reused.
    Blocking,
    /// `MPI_Isend`, completed by `MPI_Waitall` at the end of the iteration.
    NonBlocking,
}

/// How the baseline waits for its receives (thesis 3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitMode {
    /// One `MPI_Waitall` over all receive requests.
    WaitAll,
    /// A loop of `MPI_Testany` until every receive completed (thesis listing 3.11).
    TestAny,
}

/// The options of the baseline strategy (thesis table 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct BaselineOptions {
    /// Blocking or non-blocking sends.
    pub send: SendMode,
    /// Waitall or a Testany loop for the receives.
    pub wait: WaitMode,
    /// Coherence of the pinned send and receive buffers.
    pub buffers: Coherence,
}

/// How taskqueue blocks tell the CPU they packed (thesis 3.4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskPosting {
    /// One task queue: blocks append under a GPU-side lock with atomics; the CPU reads the head.
    Queue,
    /// One flag per block: no atomics; the CPU scans every block's flag.
    Channel,
}

/// Where taskqueue blocks pack (thesis 3.2.1, 3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SendBuffers {
    /// Straight into the pinned send buffer (zero-copy).
    ZeroCopy,
    /// Into device memory, between a CPU-issued H2D copy and a D2H copy on a per-block stream.
    Memcpy,
}

/// The options of the taskqueue strategy (thesis table 3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TaskqueueOptions {
    /// Blocking or non-blocking sends.
    pub send: SendMode,
    /// Task queue or per-block channel.
    pub tasks: TaskPosting,
    /// Zero-copy or memcpy send buffers.
    pub buffers: SendBuffers,
}

/// Which device-direct strategy (SPEC 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IpcMode {
    /// The device-direct baseline (thesis 3.3's shape): a pack kernel stores every chunk into
    /// its destination and raises its flag; an unpack kernel waits for each incoming chunk.
    Base,
    /// The GPU-only taskqueue (thesis 3.4 without the CPU): one persistent kernel; each block
    /// sends its chunk, then waits for its incoming one and unpacks it.
    Taskqueue,
}

/// The options of the device-direct strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct IpcOptions {
    /// Baseline or GPU-only taskqueue.
    pub mode: IpcMode,
}

/// The options of the library variants: the thesis's synthetic blocks as the payload of the
/// library's halo exchange (SPEC 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LibraryOptions {
    /// When host-staged messages move: `base` or `tq`.
    pub strategy: HaloStrategy,
    /// `mpi`, `ipc` (same-node peers device-direct, others through MPI) or `nccl`.
    pub transport: TransportKind,
}

/// One variant of one strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Variant {
    /// The baseline: pack kernel, MPI, unpack kernel (thesis 3.3).
    Baseline(BaselineOptions),
    /// The taskqueue: one persistent kernel calling back to the CPU (thesis 3.4, 3.5).
    Taskqueue(TaskqueueOptions),
    /// The reference floor: the same messages between host buffers, no GPU (`mpi-only`).
    MpiOnly,
    /// Device-direct within a node: kernels store into the peer's memory (SPEC 12).
    Ipc(IpcOptions),
    /// The library's halo exchange carrying the thesis's blocks (SPEC 13).
    Library(LibraryOptions),
}

impl Variant {
    /// Every exchange variant haloport implements (not the `mpi-only` reference), in the order
    /// outputs list them.
    pub fn all() -> Vec<Variant> {
        let mut all = Vec::new();
        for buffers in [Coherence::Coherent, Coherence::NonCoherent] {
            for send in [SendMode::NonBlocking, SendMode::Blocking] {
                for wait in [WaitMode::WaitAll, WaitMode::TestAny] {
                    all.push(Variant::Baseline(BaselineOptions {
                        send,
                        wait,
                        buffers,
                    }));
                }
            }
        }
        for buffers in [SendBuffers::ZeroCopy, SendBuffers::Memcpy] {
            for send in [SendMode::NonBlocking, SendMode::Blocking] {
                for tasks in [TaskPosting::Queue, TaskPosting::Channel] {
                    all.push(Variant::Taskqueue(TaskqueueOptions {
                        send,
                        tasks,
                        buffers,
                    }));
                }
            }
        }
        for mode in [IpcMode::Base, IpcMode::Taskqueue] {
            all.push(Variant::Ipc(IpcOptions { mode }));
        }
        for transport in [TransportKind::Mpi, TransportKind::Ipc] {
            for strategy in [HaloStrategy::Base, HaloStrategy::Taskqueue] {
                all.push(Variant::Library(LibraryOptions {
                    strategy,
                    transport,
                }));
            }
        }
        all
    }

    /// Variants run only where named (not in `all` nor a strategy's list), because they need
    /// what a machine may lack: the library over NCCL (`lib-base-nccl`, `lib-tq-nccl`), which
    /// needs NCCL or RCCL (on the host backend, a stand-in named by `HALOPORT_NCCL_LIBRARY`).
    pub fn by_name_only() -> Vec<Variant> {
        [HaloStrategy::Base, HaloStrategy::Taskqueue]
            .map(|strategy| {
                Variant::Library(LibraryOptions {
                    strategy,
                    transport: TransportKind::Nccl,
                })
            })
            .into()
    }

    /// True for the variants that may run back to back, without the thesis's closing
    /// barrier (their receive slots are guarded by credit flags): the device-direct ones.
    pub fn may_run_back_to_back(&self) -> bool {
        matches!(self, Variant::Ipc(_))
    }

    /// How this variant's bytes travel: `mpi` (host-staged) or `ipc` (device-direct).
    pub fn transport(&self) -> TransportKind {
        match self {
            Variant::Ipc(_) => TransportKind::Ipc,
            Variant::Library(o) => o.transport,
            _ => TransportKind::Mpi,
        }
    }

    /// Checks that `transport` can do what this variant needs: the device-direct variants'
    /// kernels start transfers themselves; every other variant's CPU starts them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming what the variant needs and what the transport is.
    pub fn check_transport(&self, transport: TransportKind) -> Result<(), Error> {
        let has = transport.capabilities();
        let (fits, needs) = match self {
            Variant::Ipc(_) => (has.gpu_initiated, "a GPU-initiated transport"),
            // The library chooses per peer; its variants name the transport they run over.
            Variant::Library(o) => (transport == o.transport, "the transport in its name"),
            _ => (
                has.host_initiated,
                "a transport whose transfers the CPU starts",
            ),
        };
        if fits {
            return Ok(());
        }
        let wants = self.transport();
        Err(Error::InvalidInput(format!(
            "variant {self} needs {needs}; {transport} is {}: give --transport {wants}",
            has.describe()
        )))
    }

    /// The name used on the command line and in every output.
    pub fn name(&self) -> String {
        let send_name = |send: SendMode| match send {
            SendMode::NonBlocking => "nb",
            SendMode::Blocking => "bl",
        };
        match self {
            Variant::MpiOnly => "mpi-only".to_owned(),
            Variant::Ipc(o) => match o.mode {
                IpcMode::Base => "ipc-base".to_owned(),
                IpcMode::Taskqueue => "ipc-tq".to_owned(),
            },
            Variant::Library(o) => format!("lib-{}-{}", o.strategy.name(), o.transport.name()),
            Variant::Taskqueue(o) => {
                let prefix = match o.buffers {
                    SendBuffers::ZeroCopy => "tq",
                    SendBuffers::Memcpy => "tqm",
                };
                let tasks = match o.tasks {
                    TaskPosting::Queue => "tq",
                    TaskPosting::Channel => "pb",
                };
                format!("{prefix}-{}-{tasks}", send_name(o.send))
            }
            Variant::Baseline(o) => {
                let send = send_name(o.send);
                let wait = match o.wait {
                    WaitMode::WaitAll => "wait",
                    WaitMode::TestAny => "test",
                };
                let nc = match o.buffers {
                    Coherence::NonCoherent => "-nc",
                    // Coherent; parsing offers no other kind.
                    _ => "",
                };
                format!("base-{send}-{wait}{nc}")
            }
        }
    }

    /// The strategy this variant belongs to: "baseline".
    pub fn strategy(&self) -> &'static str {
        match self {
            Variant::Baseline(_) => "baseline",
            Variant::Taskqueue(_) => "taskqueue",
            Variant::MpiOnly => "reference",
            Variant::Ipc(_) => "device-direct",
            Variant::Library(_) => "library",
        }
    }

    /// How this variant sends.
    pub fn send_mode(&self) -> SendMode {
        match self {
            Variant::Baseline(o) => o.send,
            Variant::Taskqueue(o) => o.send,
            // Device stores do not wait for the receiver: compared with non-blocking sends.
            Variant::MpiOnly | Variant::Ipc(_) | Variant::Library(_) => SendMode::NonBlocking,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Variant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl FromStr for Variant {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "mpi-only" {
            return Ok(Variant::MpiOnly);
        }
        Variant::all()
            .into_iter()
            .chain(Variant::by_name_only())
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let mut known: Vec<_> = Variant::all()
                    .iter()
                    .chain(&Variant::by_name_only())
                    .map(Variant::name)
                    .collect();
                known.push(Variant::MpiOnly.name());
                Error::InvalidInput(format!(
                    "unknown variant '{s}'; known variants: {}",
                    known.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_eight_baseline_eight_taskqueue_two_ipc_and_four_library_variants() {
        let names: Vec<_> = Variant::all().iter().map(Variant::name).collect();
        assert_eq!(names.len(), 22);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 22);
        assert_eq!(
            Variant::all()
                .iter()
                .filter(|v| v.transport() == TransportKind::Ipc)
                .map(Variant::name)
                .collect::<Vec<_>>(),
            vec!["ipc-base", "ipc-tq", "lib-base-ipc", "lib-tq-ipc"]
        );
        assert_eq!(
            Variant::all()
                .iter()
                .filter(|v| v.strategy() == "library")
                .map(Variant::name)
                .collect::<Vec<_>>(),
            vec!["lib-base-mpi", "lib-tq-mpi", "lib-base-ipc", "lib-tq-ipc"]
        );
        assert!(Variant::all()
            .iter()
            .filter(|v| v.may_run_back_to_back())
            .all(|v| matches!(v, Variant::Ipc(_))));
        assert!("lib-tq-ipc"
            .parse::<Variant>()
            .is_ok_and(|v| v.check_transport(TransportKind::Mpi).is_err()));
        for name in [
            "base-nb-wait",
            "base-bl-test-nc",
            "tq-nb-tq",
            "tq-bl-pb",
            "tqm-nb-pb",
            "tqm-bl-tq",
        ] {
            assert!(names.contains(&name.to_owned()), "{name}");
        }
        let strategies = Variant::all()
            .iter()
            .filter(|v| v.strategy() == "taskqueue")
            .count();
        assert_eq!(strategies, 8);
    }

    #[test]
    fn names_parse_back_to_their_options() {
        for v in Variant::all().into_iter().chain(Variant::by_name_only()) {
            assert_eq!(v.name().parse::<Variant>().ok(), Some(v));
        }
        let named: Vec<_> = Variant::by_name_only().iter().map(Variant::name).collect();
        assert_eq!(named, ["lib-base-nccl", "lib-tq-nccl"]);
        assert!(Variant::all().iter().all(|v| !named.contains(&v.name())));
        let Ok(Variant::Baseline(o)) = "base-bl-test-nc".parse::<Variant>() else {
            panic!("base-bl-test-nc must parse");
        };
        assert_eq!(o.send, SendMode::Blocking);
        assert_eq!(o.wait, WaitMode::TestAny);
        assert_eq!(o.buffers, Coherence::NonCoherent);
        let Ok(Variant::Taskqueue(t)) = "tqm-bl-pb".parse::<Variant>() else {
            panic!("tqm-bl-pb must parse");
        };
        assert_eq!(t.send, SendMode::Blocking);
        assert_eq!(t.tasks, TaskPosting::Channel);
        assert_eq!(t.buffers, SendBuffers::Memcpy);
    }

    #[test]
    fn unknown_variant_lists_the_known_ones() {
        let msg = "base-xx".parse::<Variant>().err().map(|e| e.to_string());
        let msg = msg.unwrap_or_default();
        assert!(msg.contains("unknown variant 'base-xx'"), "{msg}");
        assert!(msg.contains("base-nb-test"), "{msg}");
    }
}
