//! One module per subcommand.

pub mod exchange;
pub mod info;
pub mod packbench;
pub mod plan;
pub mod report;
pub mod run;
pub mod scaling;
pub mod stencil;
pub mod sweep;
pub mod tune;

use mpi::topology::{Communicator, SimpleCommunicator};

/// This rank's index among the ranks of its node (an MPI shared-memory split), which picks its
/// device: `local_rank % device_count` (SPEC 2).
pub fn local_rank(world: &SimpleCommunicator) -> usize {
    world.split_shared(0).rank() as usize
}

/// MPI library version string, or why it is unknown.
pub fn mpi_library() -> String {
    mpi::environment::library_version()
        .map(|s| {
            s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// This process's host name as MPI knows it.
pub fn host_name() -> String {
    mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into())
}
