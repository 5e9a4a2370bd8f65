//! Collective set-up steps: every rank contributes a value, every rank gets all of them.
//!
//! Used before any exchange (pattern validation) and after one (gathering results), where
//! messages are few and small, so values travel as JSON. A rank that failed locally contributes
//! its error instead of a value; every rank then sees the same failures and fails alike, so no
//! rank is left waiting in a collective.

use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::pattern::{validate_global, RankPattern};

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
    let contribution = match mine {
        Ok(v) => Contribution::Ok(v),
        Err(e) => Contribution::Err(e),
    };
    let bytes = serde_json::to_vec(&contribution)
        .map_err(|e| Error::InvalidInput(format!("encoding a set-up message: {e}")))?;
    let len = i32::try_from(bytes.len())
        .map_err(|_| Error::InvalidInput("a set-up message over 2 GiB".into()))?;
    let mut lens = vec![0_i32; comm.size() as usize];
    comm.all_gather_into(&len, &mut lens[..]);
    let displs: Vec<i32> = lens
        .iter()
        .scan(0_i32, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let total = lens.iter().map(|&l| l as usize).sum();
    let mut all = vec![0_u8; total];
    {
        let mut partition = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        comm.all_gather_varcount_into(&bytes[..], &mut partition);
    }
    let mut values = Vec::with_capacity(lens.len());
    for (r, (&d, &l)) in displs.iter().zip(&lens).enumerate() {
        let slice = &all[d as usize..(d + l) as usize];
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
/// the lowest failed rank and its message. Collective over `comm`.
///
/// # Errors
/// As described; MPI errors.
pub fn agree<T>(comm: &SimpleCommunicator, step: &str, mine: Result<T>) -> Result<T> {
    let verdict = match &mine {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("{step}: {e}")),
    };
    let verdicts = all_gather(comm, Ok(verdict), |r, msg| Error::OtherRank {
        rank: r,
        message: msg,
    })?;
    let value = mine?;
    match verdicts
        .into_iter()
        .enumerate()
        .find_map(|(r, v)| v.err().map(|m| (r, m)))
    {
        Some((rank, message)) => Err(Error::OtherRank {
            rank: rank as i32,
            message,
        }),
        None => Ok(value),
    }
}
