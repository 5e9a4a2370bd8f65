//! Collective set-up steps: every rank contributes a value, every rank gets all of them.
//!
//! Used before any exchange (pattern validation) and after one (gathering results), where
//! messages are few and small, so values travel as JSON. A rank that failed locally contributes
//! its error instead of a value; every rank then sees the same failures and fails alike, so no
//! rank is left waiting in a collective.

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::pattern::{validate_global, RankPattern};

mod bounded;

pub use bounded::{all_gather_until, barrier_until, lockstep_until, receive_until, send_until};

#[derive(Serialize, Deserialize)]
enum Contribution<T> {
    Ok(T),
    Err(String),
}

/// Gathers one value (or this rank's error) from every rank onto every rank.
///
/// # Errors
/// When any rank contributed an error: `on_error(rank, message)` of the lowest such rank, the
/// same on every rank.
pub fn all_gather<T>(
    comm: &SimpleCommunicator,
    mine: std::result::Result<T, String>,
    on_error: impl Fn(i32, String) -> Error,
) -> Result<Vec<T>>
where
    T: Serialize + DeserializeOwned,
{
    let bytes = encode_contribution(mine)?;
    let len = i32::try_from(bytes.len())
        .map_err(|_| Error::InvalidInput("a set-up message over 2 GiB".into()))?;
    let mut lens = vec![0_i32; comm.size() as usize];
    comm.all_gather_into(&len, &mut lens[..]);
    let (displs, total) = displacements(&lens);
    let mut all = vec![0_u8; total];
    {
        let mut partition = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        comm.all_gather_varcount_into(&bytes[..], &mut partition);
    }
    decode_contributions(&all, &lens, &displs, on_error)
}

/// One rank's value (or error), as it travels.
fn encode_contribution<T: Serialize>(mine: std::result::Result<T, String>) -> Result<Vec<u8>> {
    let contribution = match mine {
        Ok(v) => Contribution::Ok(v),
        Err(e) => Contribution::Err(e),
    };
    serde_json::to_vec(&contribution)
        .map_err(|e| Error::InvalidInput(format!("encoding a set-up message: {e}")))
}

/// Where each rank's part starts in a gather of `lens` bytes from each rank, and their total.
fn displacements(lens: &[i32]) -> (Vec<i32>, usize) {
    let displs = lens
        .iter()
        .scan(0_i32, |at, &l| {
            let d = *at;
            *at = at.saturating_add(l);
            Some(d)
        })
        .collect();
    (displs, lens.iter().map(|&l| l.max(0) as usize).sum())
}

/// Every rank's value from the gathered bytes `all` (rank r's at `displs[r]`, `lens[r]` long),
/// or the lowest failing rank's error through `on_error`.
fn decode_contributions<T: DeserializeOwned>(
    all: &[u8],
    lens: &[i32],
    displs: &[i32],
    on_error: impl Fn(i32, String) -> Error,
) -> Result<Vec<T>> {
    let mut values = Vec::with_capacity(lens.len());
    for (r, (&d, &l)) in displs.iter().zip(lens).enumerate() {
        let slice = all
            .get(d.max(0) as usize..(d.max(0) as usize).saturating_add(l.max(0) as usize))
            .ok_or_else(|| Error::InvalidInput(format!("rank {r}'s set-up message is cut")))?;
        let c: Contribution<T> = serde_json::from_slice(slice)
            .map_err(|e| Error::InvalidInput(format!("decoding rank {r}'s set-up message: {e}")))?;
        match c {
            Contribution::Ok(v) => values.push(v),
            Contribution::Err(e) => return Err(on_error(r as i32, e)),
        }
    }
    Ok(values)
}

/// The collective pattern check of SPEC 3: every rank contributes its resolved pattern (or the
/// error resolving it), then every rank checks all of them, so all ranks agree on the verdict
/// before any exchange runs.
///
/// # Errors
/// [`Error::InvalidPattern`] (or the resolving rank's error), identical on every rank.
pub fn agree_on_pattern(
    comm: &SimpleCommunicator,
    mine: Result<RankPattern>,
) -> Result<Vec<RankPattern>> {
    let mine = mine.map_err(|e| e.to_string());
    let all = all_gather(comm, mine, |_, msg| {
        // The message already names the rank and the file or block.
        Error::InvalidPattern(msg.trim_start_matches("invalid pattern: ").to_owned())
    })?;
    validate_global(&all)?;
    Ok(all)
}

/// After a step that can fail on some ranks only (an allocation, opening a peer's memory): every
/// rank learns whether all succeeded before any of them enters another collective. A rank that
/// failed gets its own error back (its kind kept); the others get [`Error::OtherRank`] naming
/// the lowest failed rank and its message. Collective over `comm`; each rank sends and keeps
/// O(1) data (a reduction, then one broadcast only when some rank failed), however many ranks
/// the job has.
///
/// # Errors
/// As described; MPI errors.
pub fn agree<T>(comm: &SimpleCommunicator, step: &str, mine: Result<T>) -> Result<T> {
    let message = mine.as_ref().err().map(|e| format!("{step}: {e}"));
    match first_with(comm, message)? {
        None => mine,
        Some((rank, message)) => match mine {
            Err(e) => Err(e),
            Ok(_) => Err(Error::OtherRank { rank, message }),
        },
    }
}

/// The lowest rank that has `Some` message, and that message, the same on every rank; `None`
/// when no rank has one. Collective over `comm`, O(1) data per rank.
///
/// # Errors
/// MPI errors (reported by the MPI library's handler).
pub fn first_with(
    comm: &SimpleCommunicator,
    mine: Option<String>,
) -> Result<Option<(i32, String)>> {
    let candidate = if mine.is_some() {
        comm.rank()
    } else {
        i32::MAX
    };
    let mut first = i32::MAX;
    comm.all_reduce_into(&candidate, &mut first, SystemOperation::min());
    if first == i32::MAX {
        return Ok(None);
    }
    let text = if comm.rank() == first {
        mine.unwrap_or_default()
    } else {
        String::new()
    };
    Ok(Some((first, broadcast_string(comm, first, text)?)))
}

/// `text` of rank `root`, on every rank of `comm`. Collective over `comm`.
///
/// # Errors
/// [`Error::InvalidInput`] when the text is over 2 GiB or not UTF-8.
pub fn broadcast_string(comm: &SimpleCommunicator, root: i32, text: String) -> Result<String> {
    let mut len = i32::try_from(text.len())
        .map_err(|_| Error::InvalidInput("a set-up message over 2 GiB".into()))?;
    let sender = comm.process_at_rank(root);
    sender.broadcast_into(&mut len);
    let mut bytes = if comm.rank() == root {
        text.into_bytes()
    } else {
        vec![0_u8; len.max(0) as usize]
    };
    sender.broadcast_into(&mut bytes[..]);
    String::from_utf8(bytes)
        .map_err(|e| Error::InvalidInput(format!("a set-up message is not UTF-8: {e}")))
}
