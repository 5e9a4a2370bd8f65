//! Which route carries a link's bytes: the name users and results give a transport.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::Capabilities;
use crate::error::Error;

/// How bytes travel between two ranks (SPEC 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    /// Host-staged: pinned host buffers handed to MPI; works between any ranks.
    Mpi,
    /// Device-direct within a node: kernels store into the peer's device memory opened by IPC.
    Ipc,
    /// NCCL (RCCL on AMD), loaded at run time: grouped sends and receives of device buffers
    /// queued on the exchange's stream, between any ranks.
    Nccl,
    /// Per neighbour, by capability: device-direct within a node (as `Ipc`), NCCL between
    /// nodes where every rank loads it on a GPU backend, otherwise MPI (GPU-aware where both
    /// ends take device memory).
    Auto,
}

impl TransportKind {
    /// Whether same-node neighbours are device-direct (`Ipc`, `Auto`).
    pub fn within_node(self) -> bool {
        matches!(self, TransportKind::Ipc | TransportKind::Auto)
    }
}

impl TransportKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Mpi => "mpi",
            TransportKind::Ipc => "ipc",
            TransportKind::Nccl => "nccl",
            TransportKind::Auto => "auto",
        }
    }

    /// What the transport can do (its implementations answer with this).
    pub fn capabilities(self) -> Capabilities {
        match self {
            TransportKind::Mpi => Capabilities {
                host_initiated: true,
                gpu_initiated: false,
                device_buffers: false,
                stream_ordered: false,
            },
            TransportKind::Ipc => Capabilities {
                host_initiated: false,
                gpu_initiated: true,
                device_buffers: true,
                stream_ordered: false,
            },
            TransportKind::Nccl => Capabilities {
                host_initiated: true,
                gpu_initiated: false,
                device_buffers: true,
                stream_ordered: true,
            },
            TransportKind::Auto => Capabilities {
                host_initiated: true,
                gpu_initiated: true,
                device_buffers: true,
                stream_ordered: false,
            },
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransportKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "mpi" => Ok(TransportKind::Mpi),
            "ipc" => Ok(TransportKind::Ipc),
            "nccl" => Ok(TransportKind::Nccl),
            "auto" => Ok(TransportKind::Auto),
            _ => Err(Error::InvalidInput(format!(
                "unknown transport '{s}'; known transports: mpi (host-staged), ipc (device-direct within a node), nccl (NCCL or RCCL, loaded at run time), auto (per neighbour: ipc within a node, nccl between nodes where it loads, else MPI)"
            ))),
        }
    }
}
