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
    /// Never send this block, on every rank: its receivers must end with a time-out error
    /// naming the block, not hang.
    DropSend {
        /// The block whose send is never posted.
        block: usize,
    },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::CorruptRecv { block } => write!(f, "corrupt-recv={block}"),
            Fault::DropSend { block } => write!(f, "drop-send={block}"),
        }
    }
}

impl std::str::FromStr for Fault {
    type Err = crate::Error;

    /// `corrupt-recv=BLOCK` or `drop-send=BLOCK`.
    fn from_str(s: &str) -> crate::Result<Fault> {
        let bad = || {
            crate::Error::InvalidInput(format!(
                "unknown fault '{s}'; known faults: corrupt-recv=BLOCK, drop-send=BLOCK"
            ))
        };
        let (kind, arg) = s.split_once('=').ok_or_else(bad)?;
        let block = arg.parse().map_err(|_| {
            crate::Error::InvalidInput(format!("fault '{s}': '{arg}' is not a block number"))
        });
        match kind {
            "corrupt-recv" => Ok(Fault::CorruptRecv { block: block? }),
            "drop-send" => Ok(Fault::DropSend { block: block? }),
            _ => Err(bad()),
        }
    }
}

/// Options every strategy takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExchangeOptions {
    /// How long any single wait may take before the run ends with a time-out error.
    pub timeout: Duration,
    /// A fault to inject, if any.
    pub fault: Option<Fault>,
}

impl ExchangeOptions {
    /// True when the fault options say block `block`'s send must not be posted.
    pub fn drops_send(&self, block: usize) -> bool {
        self.fault == Some(Fault::DropSend { block })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_bad_ones_are_named() {
        assert_eq!(
            "drop-send=3".parse::<Fault>().ok(),
            Some(Fault::DropSend { block: 3 })
        );
        assert_eq!(
            "corrupt-recv=0".parse::<Fault>().ok(),
            Some(Fault::CorruptRecv { block: 0 })
        );
        let msg = |s: &str| {
            s.parse::<Fault>()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(msg("drop-send=x").contains("'x' is not a block number"));
        assert!(msg("explode=1").contains("unknown fault 'explode=1'"));
        let options = ExchangeOptions {
            fault: Some(Fault::DropSend { block: 2 }),
            ..ExchangeOptions::default()
        };
        assert!(options.drops_send(2) && !options.drops_send(1));
        for fault in [
            Fault::DropSend { block: 4 },
            Fault::CorruptRecv { block: 1 },
        ] {
            assert_eq!(fault.to_string().parse::<Fault>().ok(), Some(fault));
        }
    }
}
