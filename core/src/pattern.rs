//! Exchange patterns: which block goes where, and how large it is (SPEC 3).
//!
//! A pattern is per rank: a list of blocks, each with a size (elements of f64), a destination
//! and a source rank. Block b always sends to block b of its destination and receives from
//! block b of its source; the MPI tag is the block id. Each rank resolves its own
//! [`RankPattern`] (from a built-in or a file); [`validate_global`] then checks all ranks'
//! patterns together, after the ranks exchanged them (see `transport::mpi::allgather_patterns`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Largest number of elements in one block: one MPI message of f64 counts at most `i32::MAX`.
pub const MAX_BLOCK_ELEMS: u64 = i32::MAX as u64;

/// Most blocks one rank's pattern may have (one GPU block per pattern block).
pub const MAX_BLOCKS: usize = 1024;

/// One block of one rank's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSpec {
    /// Elements of f64 in the block's send buffer and in its receive buffer.
    pub elems: u64,
    /// Rank the send buffer goes to.
    pub dest: i32,
    /// Rank the receive buffer comes from.
    pub source: i32,
}

/// The blocks of one rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPattern {
    /// The rank this pattern belongs to.
    pub rank: i32,
    /// Block b of this rank is `blocks[b]`.
    pub blocks: Vec<BlockSpec>,
}

/// The built-in patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinPattern {
    /// Every block exchanges with the partner rank: 0<->1, 2<->3, ... Needs an even number of ranks.
    Pairwise,
    /// Every block sends to rank+1 and receives from rank-1 (modulo the number of ranks).
    Ring,
    /// Thesis figure 2.6: block 0 pairwise, block 1 to rank+1, the last block to rank-1; the
    /// blocks between cycle through pairwise, to rank+1, to rank-1 (block b by b % 3).
    /// Needs an even number of ranks (for its pairwise blocks).
    Mixed,
}

impl BuiltinPattern {
    /// Every built-in pattern.
    pub const ALL: [BuiltinPattern; 3] = [
        BuiltinPattern::Pairwise,
        BuiltinPattern::Ring,
        BuiltinPattern::Mixed,
    ];

    /// The name used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinPattern::Pairwise => "pairwise",
            BuiltinPattern::Ring => "ring",
            BuiltinPattern::Mixed => "mixed",
        }
    }

    /// This rank's blocks, with the given sizes.
    ///
    /// # Errors
    /// [`Error::InvalidPattern`] when the pattern cannot be laid on `ranks` ranks (pairwise
    /// blocks need an even number of ranks).
    pub fn resolve(self, rank: i32, ranks: i32, elems: &[u64]) -> Result<RankPattern> {
        if ranks < 1 || rank < 0 || rank >= ranks {
            return Err(Error::InvalidPattern(format!(
                "rank {rank} is not one of {ranks} ranks"
            )));
        }
        let n = elems.len();
        let pairwise_needed = match self {
            BuiltinPattern::Pairwise => true,
            BuiltinPattern::Ring => false,
            BuiltinPattern::Mixed => n > 0,
        };
        if pairwise_needed && ranks % 2 != 0 {
            return Err(Error::InvalidPattern(format!(
                "pattern '{}' pairs ranks 0<->1, 2<->3, ... and needs an even number of ranks, not {ranks}",
                self.name()
            )));
        }
        let pair = rank ^ 1;
        let next = (rank + 1) % ranks;
        let prev = (rank + ranks - 1) % ranks;
        let pairwise = (pair, pair);
        let forward = (next, prev);
        let backward = (prev, next);
        let blocks = elems
            .iter()
            .enumerate()
            .map(|(b, &elems)| {
                let (dest, source) = match self {
                    BuiltinPattern::Pairwise => pairwise,
                    BuiltinPattern::Ring => forward,
                    BuiltinPattern::Mixed => match b {
                        0 => pairwise,
                        1 => forward,
                        _ if b == n - 1 => backward,
                        _ => [pairwise, forward, backward][b % 3],
                    },
                };
                BlockSpec {
                    elems,
                    dest,
                    source,
                }
            })
            .collect();
        Ok(RankPattern { rank, blocks })
    }
}

impl fmt::Display for BuiltinPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a run's pattern comes from: a built-in name or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternSource {
    /// A built-in pattern over the workload's block sizes.
    Builtin(BuiltinPattern),
    /// A TOML or JSON pattern file (see [`PatternFile`]).
    File(PathBuf),
}

impl PatternSource {
    /// The name used in outputs: the built-in's name or the file's path.
    pub fn name(&self) -> String {
        match self {
            PatternSource::Builtin(b) => b.name().to_owned(),
            PatternSource::File(p) => p.display().to_string(),
        }
    }

    /// Resolves this rank's blocks; `workload_elems` gives sizes where the source gives none.
    ///
    /// # Errors
    /// [`Error::PatternFile`] or [`Error::InvalidPattern`] naming what is wrong.
    pub fn resolve(&self, rank: i32, ranks: i32, workload_elems: &[u64]) -> Result<RankPattern> {
        let pattern = match self {
            PatternSource::Builtin(b) => b.resolve(rank, ranks, workload_elems)?,
            PatternSource::File(path) => {
                PatternFile::load(path)?.resolve(path, rank, ranks, workload_elems)?
            }
        };
        validate_local(&pattern, ranks)?;
        Ok(pattern)
    }
}

impl FromStr for PatternSource {
    type Err = Error;

    /// A built-in name, or else a path to a pattern file (which must exist).
    fn from_str(s: &str) -> Result<Self> {
        if let Some(b) = BuiltinPattern::ALL.into_iter().find(|b| b.name() == s) {
            return Ok(PatternSource::Builtin(b));
        }
        let path = PathBuf::from(s);
        if path.is_file() {
            return Ok(PatternSource::File(path));
        }
        if path.is_dir() {
            return Err(Error::InvalidInput(format!(
                "pattern '{s}' is a directory; give a built-in pattern or a pattern file (.toml or .json)"
            )));
        }
        let known: Vec<_> = BuiltinPattern::ALL.iter().map(|b| b.name()).collect();
        Err(Error::InvalidInput(format!(
            "unknown pattern '{s}': not a built-in ({}) and no such file",
            known.join(", ")
        )))
    }
}

/// A pattern file, TOML or JSON (by extension; `.json` is JSON, anything else TOML):
///
/// ```toml
/// ranks = 2                    # optional: the number of ranks the file is written for
/// [[rank]]
/// rank = 0
/// blocks = [ { dest = 1, source = 1, elems = 100 }, { dest = 1, source = 1 } ]
/// [[rank]]
/// rank = 1
/// blocks = [ { dest = 0, source = 0, elems = 100 }, { dest = 0, source = 0 } ]
/// ```
///
/// A block without `elems` takes the workload's size for its index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternFile {
    /// Ranks the file is written for; when present it must equal the job's size.
    #[serde(default)]
    pub ranks: Option<i32>,
    /// One entry per rank.
    pub rank: Vec<PatternFileRank>,
}

/// One rank's entry in a [`PatternFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternFileRank {
    /// The rank.
    pub rank: i32,
    /// Its blocks, block 0 first.
    pub blocks: Vec<PatternFileBlock>,
}

/// One block in a [`PatternFile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternFileBlock {
    /// Rank the block's send buffer goes to.
    pub dest: i32,
    /// Rank the block's receive buffer comes from.
    pub source: i32,
    /// Elements of f64; the workload's size for this block when absent.
    #[serde(default)]
    pub elems: Option<u64>,
}

impl PatternFile {
    /// Reads and parses a pattern file.
    ///
    /// # Errors
    /// [`Error::PatternFile`] with the parser's message (line and column where it has them).
    pub fn load(path: &Path) -> Result<PatternFile> {
        let fail = |reason: String| Error::PatternFile {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_json {
            serde_json::from_str(&text).map_err(|e| fail(format!("not valid pattern JSON: {e}")))
        } else {
            toml::from_str(&text).map_err(|e| fail(format!("not valid pattern TOML: {e}")))
        }
    }

    /// This rank's blocks from the file.
    ///
    /// # Errors
    /// [`Error::PatternFile`] when the file is written for another number of ranks, names a
    /// rank twice or not at all, or leaves a size undetermined.
    pub fn resolve(
        &self,
        path: &Path,
        rank: i32,
        ranks: i32,
        workload_elems: &[u64],
    ) -> Result<RankPattern> {
        let fail = |reason: String| Error::PatternFile {
            path: path.display().to_string(),
            reason,
        };
        if let Some(file_ranks) = self.ranks {
            if file_ranks != ranks {
                return Err(fail(format!(
                    "written for {file_ranks} ranks, but the job has {ranks}"
                )));
            }
        }
        let mut entries = BTreeMap::new();
        for entry in &self.rank {
            if entry.rank < 0 || entry.rank >= ranks {
                return Err(fail(format!(
                    "has an entry for rank {}, which does not exist in a job of {ranks} ranks",
                    entry.rank
                )));
            }
            if entries.insert(entry.rank, entry).is_some() {
                return Err(fail(format!("has two entries for rank {}", entry.rank)));
            }
        }
        let entry = entries
            .get(&rank)
            .ok_or_else(|| fail(format!("has no entry for rank {rank}")))?;
        let blocks = entry
            .blocks
            .iter()
            .enumerate()
            .map(|(b, block)| {
                let elems = block.elems.or_else(|| workload_elems.get(b).copied());
                let elems = elems.ok_or_else(|| {
                    fail(format!(
                        "rank {rank} block {b} has no elems and the workload has only {} blocks",
                        workload_elems.len()
                    ))
                })?;
                Ok(BlockSpec {
                    elems,
                    dest: block.dest,
                    source: block.source,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RankPattern { rank, blocks })
    }
}

/// Checks what one rank can check alone: sizes and rank numbers.
///
/// # Errors
/// [`Error::InvalidPattern`] naming the rank, block and what is wrong.
pub fn validate_local(pattern: &RankPattern, ranks: i32) -> Result<()> {
    let r = pattern.rank;
    if pattern.blocks.is_empty() {
        return Err(Error::InvalidPattern(format!("rank {r} has no blocks")));
    }
    if pattern.blocks.len() > MAX_BLOCKS {
        return Err(Error::InvalidPattern(format!(
            "rank {r} has {} blocks; at most {MAX_BLOCKS} are supported",
            pattern.blocks.len()
        )));
    }
    for (b, block) in pattern.blocks.iter().enumerate() {
        if block.elems == 0 {
            return Err(Error::InvalidPattern(format!(
                "rank {r} block {b} has zero elements; every block needs at least one"
            )));
        }
        if block.elems > MAX_BLOCK_ELEMS {
            return Err(Error::InvalidPattern(format!(
                "rank {r} block {b} has {} elements; one MPI message holds at most {MAX_BLOCK_ELEMS}",
                block.elems
            )));
        }
        for (role, peer) in [("sends to", block.dest), ("receives from", block.source)] {
            if peer < 0 || peer >= ranks {
                return Err(Error::InvalidPattern(format!(
                    "rank {r} block {b} {role} rank {peer}, which does not exist in a job of {ranks} ranks (0..{})",
                    ranks - 1
                )));
            }
        }
    }
    Ok(())
}

/// Checks all ranks' patterns together: every send has a matching receive of the same size and
/// every receive a matching send. `patterns[r]` must be rank r's pattern.
///
/// # Errors
/// [`Error::InvalidPattern`] naming the first mismatch found: rank, block and sizes.
pub fn validate_global(patterns: &[RankPattern]) -> Result<()> {
    let ranks = patterns.len() as i32;
    for (r, p) in patterns.iter().enumerate() {
        if p.rank != r as i32 {
            return Err(Error::InvalidPattern(format!(
                "pattern of rank {r} claims to be rank {}",
                p.rank
            )));
        }
        validate_local(p, ranks)?;
    }
    for p in patterns {
        let r = p.rank;
        for (b, block) in p.blocks.iter().enumerate() {
            let dest = &patterns[block.dest as usize];
            match dest.blocks.get(b) {
                None => {
                    return Err(Error::InvalidPattern(format!(
                        "rank {r} block {b} sends to rank {}, which has only {} blocks",
                        block.dest,
                        dest.blocks.len()
                    )))
                }
                Some(other) if other.source != r => {
                    return Err(Error::InvalidPattern(format!(
                        "rank {r} block {b} sends to rank {}, but rank {} block {b} receives from rank {}",
                        block.dest, block.dest, other.source
                    )))
                }
                Some(other) if other.elems != block.elems => {
                    return Err(Error::InvalidPattern(format!(
                        "rank {r} block {b} sends {} elements to rank {}, but rank {} block {b} receives {} elements",
                        block.elems, block.dest, block.dest, other.elems
                    )))
                }
                Some(_) => {}
            }
            let source = &patterns[block.source as usize];
            match source.blocks.get(b) {
                None => {
                    return Err(Error::InvalidPattern(format!(
                        "rank {r} block {b} receives from rank {}, which has only {} blocks",
                        block.source,
                        source.blocks.len()
                    )))
                }
                Some(other) if other.dest != r => {
                    return Err(Error::InvalidPattern(format!(
                        "rank {r} block {b} receives from rank {}, but rank {} block {b} sends to rank {}",
                        block.source, block.source, other.dest
                    )))
                }
                // Sizes of matched pairs were compared from the sending side above.
                Some(_) => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_ranks(p: BuiltinPattern, ranks: i32, elems: &[u64]) -> Vec<RankPattern> {
        (0..ranks)
            .map(|r| p.resolve(r, ranks, elems).expect("built-in resolves"))
            .collect()
    }

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn builtins_are_consistent_on_even_rank_counts() {
        let elems = [1, 15, 30, 45, 60, 75, 90, 105, 120];
        for p in BuiltinPattern::ALL {
            for ranks in [2, 4, 6, 8] {
                let all = all_ranks(p, ranks, &elems);
                validate_global(&all).unwrap_or_else(|e| panic!("{p} on {ranks}: {e}"));
            }
        }
        for ranks in [1, 3, 5] {
            validate_global(&all_ranks(BuiltinPattern::Ring, ranks, &elems))
                .unwrap_or_else(|e| panic!("ring on {ranks}: {e}"));
        }
    }

    #[test]
    fn pairwise_pairs_neighbours_and_ring_goes_forward() {
        let p = BuiltinPattern::Pairwise
            .resolve(2, 4, &[7])
            .expect("resolves");
        assert_eq!(
            p.blocks[0],
            BlockSpec {
                elems: 7,
                dest: 3,
                source: 3
            }
        );
        let r = BuiltinPattern::Ring.resolve(3, 4, &[7]).expect("resolves");
        assert_eq!(
            r.blocks[0],
            BlockSpec {
                elems: 7,
                dest: 0,
                source: 2
            }
        );
    }

    #[test]
    fn mixed_follows_thesis_figure_2_6() {
        let p = BuiltinPattern::Mixed
            .resolve(1, 4, &[1; 9])
            .expect("resolves");
        assert_eq!(
            (p.blocks[0].dest, p.blocks[0].source),
            (0, 0),
            "block 0 pairwise"
        );
        assert_eq!(
            (p.blocks[1].dest, p.blocks[1].source),
            (2, 0),
            "block 1 to rank+1"
        );
        assert_eq!(
            (p.blocks[8].dest, p.blocks[8].source),
            (0, 2),
            "last block to rank-1"
        );
        assert_eq!(
            (p.blocks[3].dest, p.blocks[3].source),
            (0, 0),
            "3 % 3 == 0: pairwise"
        );
    }

    #[test]
    fn pairwise_on_odd_rank_counts_is_refused() {
        let msg = message(BuiltinPattern::Pairwise.resolve(0, 3, &[1]));
        assert!(msg.contains("even number of ranks, not 3"), "{msg}");
    }

    #[test]
    fn zero_sizes_and_missing_ranks_are_named() {
        let mut p = BuiltinPattern::Ring
            .resolve(0, 2, &[4, 4])
            .expect("resolves");
        p.blocks[1].elems = 0;
        let msg = message(validate_local(&p, 2));
        assert!(msg.contains("rank 0 block 1 has zero elements"), "{msg}");
        p.blocks[1].elems = 4;
        p.blocks[0].dest = 5;
        let msg = message(validate_local(&p, 2));
        assert!(
            msg.contains("rank 0 block 0 sends to rank 5, which does not exist"),
            "{msg}"
        );
    }

    #[test]
    fn size_mismatch_names_both_sides() {
        let mut all = all_ranks(BuiltinPattern::Pairwise, 2, &[10, 20]);
        all[1].blocks[1].elems = 21;
        let msg = message(validate_global(&all));
        assert!(
            msg.contains("rank 0 block 1 sends 20 elements to rank 1, but rank 1 block 1 receives 21 elements"),
            "{msg}"
        );
    }

    #[test]
    fn unmatched_send_is_named() {
        let mut all = all_ranks(BuiltinPattern::Ring, 3, &[10]);
        all[0].blocks[0].dest = 2;
        let msg = message(validate_global(&all));
        assert!(
            msg.contains("rank 0 block 0 sends to rank 2, but rank 2 block 0 receives from rank 1"),
            "{msg}"
        );
    }

    #[test]
    fn fewer_blocks_on_the_peer_is_named() {
        let mut all = all_ranks(BuiltinPattern::Pairwise, 2, &[10, 20]);
        all[1].blocks.pop();
        let msg = message(validate_global(&all));
        assert!(
            msg.contains("rank 0 block 1 sends to rank 1, which has only 1 blocks"),
            "{msg}"
        );
    }

    #[test]
    fn pattern_files_parse_in_toml_and_json_alike() {
        let toml_text = r#"
            ranks = 2
            [[rank]]
            rank = 0
            blocks = [ { dest = 1, source = 1, elems = 3 }, { dest = 1, source = 1 } ]
            [[rank]]
            rank = 1
            blocks = [ { dest = 0, source = 0, elems = 3 }, { dest = 0, source = 0 } ]
        "#;
        let from_toml: PatternFile = toml::from_str(toml_text).expect("valid TOML");
        let json = serde_json::to_string(&from_toml).expect("serializes");
        let from_json: PatternFile = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(from_toml, from_json);
        let path = Path::new("p.toml");
        let all: Vec<_> = (0..2)
            .map(|r| from_toml.resolve(path, r, 2, &[1, 99]).expect("resolves"))
            .collect();
        assert_eq!(all[1].blocks[1].elems, 99, "size taken from the workload");
        validate_global(&all).expect("consistent");
    }

    #[test]
    fn pattern_file_errors_are_named() {
        let file = PatternFile {
            ranks: Some(4),
            rank: vec![],
        };
        let msg = message(file.resolve(Path::new("p.toml"), 0, 2, &[1]));
        assert!(
            msg.contains("written for 4 ranks, but the job has 2"),
            "{msg}"
        );
        let file = PatternFile {
            ranks: None,
            rank: vec![PatternFileRank {
                rank: 0,
                blocks: vec![PatternFileBlock {
                    dest: 0,
                    source: 0,
                    elems: None,
                }],
            }],
        };
        let msg = message(file.resolve(Path::new("p.toml"), 1, 2, &[1]));
        assert!(msg.contains("has no entry for rank 1"), "{msg}");
        let msg = message(file.resolve(Path::new("p.toml"), 0, 1, &[]));
        assert!(msg.contains("rank 0 block 0 has no elems"), "{msg}");
        let bad: std::result::Result<PatternFile, _> =
            toml::from_str("[[rank]]\nrank = 0\nblocks = [ { dest = 1, sauce = 1 } ]");
        assert!(bad.is_err());
    }
}
