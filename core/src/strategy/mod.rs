//! Strategies decide *when* to pack, send, wait and unpack (SPEC 4). They are generic over the
//! backend (`B: Backend`) and the transport (`T: Transport`), and reach into neither.
//!
//! One call of [`Strategy::iteration`] is one halo-exchange iteration: it returns when all
//! sends completed, all unpacking finished and every rank passed the closing barrier.

pub mod baseline;

use std::time::Duration;

use crate::backend::Coherence;
use crate::shared::{hp_block_check, hp_block_times};

pub use baseline::Baseline;

/// Faults a run can inject on purpose, to prove that checks and time-outs catch them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Overwrite element 0 of this block's receive buffer after it arrived and before unpack, on
    /// every rank, in every iteration: verification must report it.
    CorruptRecv {
        /// The block whose receive buffer is corrupted.
        block: usize,
    },
}

impl std::str::FromStr for Fault {
    type Err = crate::Error;

    /// `corrupt-recv=BLOCK`.
    fn from_str(s: &str) -> crate::Result<Fault> {
        let bad = || {
            crate::Error::InvalidInput(format!(
                "unknown fault '{s}'; known faults: corrupt-recv=BLOCK"
            ))
        };
        let (kind, arg) = s.split_once('=').ok_or_else(bad)?;
        match kind {
            "corrupt-recv" => Ok(Fault::CorruptRecv {
                block: arg.parse().map_err(|_| {
                    crate::Error::InvalidInput(format!(
                        "fault '{s}': '{arg}' is not a block number"
                    ))
                })?,
            }),
            _ => Err(bad()),
        }
    }
}

/// Options every strategy takes.
#[derive(Debug, Clone, Copy)]
pub struct ExchangeOptions {
    /// How long any single wait may take before the run ends with a time-out error.
    pub timeout: Duration,
    /// A fault to inject, if any.
    pub fault: Option<Fault>,
}

impl Default for ExchangeOptions {
    fn default() -> Self {
        ExchangeOptions {
            timeout: Duration::from_secs(10),
            fault: None,
        }
    }
}

/// One halo-exchange strategy, set up for one rank's pattern.
pub trait Strategy {
    /// Runs one iteration with global iteration number `iteration` (part of the packed values).
    ///
    /// # Errors
    /// Backend, MPI and time-out errors, naming the block and state where there is one.
    fn iteration(&mut self, iteration: u32) -> crate::Result<()>;

    /// Takes the last iteration's per-block check records (and resets them).
    fn take_checks(&mut self) -> Vec<hp_block_check>;

    /// The last iteration's per-block device timestamps.
    fn device_times(&self) -> Vec<hp_block_times>;

    /// Coherence of the send and receive buffers: (requested, served).
    fn buffer_coherence(&self) -> (Coherence, Coherence);
}
