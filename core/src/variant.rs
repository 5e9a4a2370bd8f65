//! Variant names and what they select (SPEC 4): the strategy and its options.
//!
//! Names follow the thesis's figures: `base-{nb|bl}-{wait|test}[-nc]`. Parsing is the only way
//! from a user's string to a variant, so every output uses the same spelling.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::backend::Coherence;
use crate::error::Error;

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

/// One variant of one strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Variant {
    /// The baseline: pack kernel, MPI, unpack kernel (thesis 3.3).
    Baseline(BaselineOptions),
}

impl Variant {
    /// Every variant haloport implements, in the order outputs list them.
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
        all
    }

    /// The name used on the command line and in every output.
    pub fn name(&self) -> String {
        match self {
            Variant::Baseline(o) => {
                let send = match o.send {
                    SendMode::NonBlocking => "nb",
                    SendMode::Blocking => "bl",
                };
                let wait = match o.wait {
                    WaitMode::WaitAll => "wait",
                    WaitMode::TestAny => "test",
                };
                let nc = match o.buffers {
                    Coherence::NonCoherent => "-nc",
                    Coherence::Coherent => "",
                };
                format!("base-{send}-{wait}{nc}")
            }
        }
    }

    /// The strategy this variant belongs to: "baseline".
    pub fn strategy(&self) -> &'static str {
        match self {
            Variant::Baseline(_) => "baseline",
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
        Variant::all()
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let known: Vec<_> = Variant::all().iter().map(Variant::name).collect();
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
    fn there_are_eight_baseline_variants_with_distinct_names() {
        let names: Vec<_> = Variant::all().iter().map(Variant::name).collect();
        assert_eq!(names.len(), 8);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 8);
        assert!(names.contains(&"base-nb-wait".to_owned()));
        assert!(names.contains(&"base-bl-test-nc".to_owned()));
    }

    #[test]
    fn names_parse_back_to_their_options() {
        for v in Variant::all() {
            assert_eq!(v.name().parse::<Variant>().ok(), Some(v));
        }
        let Ok(Variant::Baseline(o)) = "base-bl-test-nc".parse::<Variant>() else {
            panic!("base-bl-test-nc must parse");
        };
        assert_eq!(o.send, SendMode::Blocking);
        assert_eq!(o.wait, WaitMode::TestAny);
        assert_eq!(o.buffers, Coherence::NonCoherent);
    }

    #[test]
    fn unknown_variant_lists_the_known_ones() {
        let msg = "base-xx".parse::<Variant>().err().map(|e| e.to_string());
        let msg = msg.unwrap_or_default();
        assert!(msg.contains("unknown variant 'base-xx'"), "{msg}");
        assert!(msg.contains("base-nb-test"), "{msg}");
    }
}
