//! Workloads: how many blocks, how many threads, how large each block's buffers are (SPEC 5,
//! thesis table 4.1), and the value every element carries.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use haloport_core::error::Error;

/// Elements of f64 per block in thesis table 4.1, blocks 0 to 26.
pub const THESIS_TABLE_4_1: [u64; 27] = [
    1, 15000, 30000, 45000, 60000, 75000, 90000, 105000, 120000, 5000, 20000, 35000, 50000, 65000,
    80000, 95000, 110000, 125000, 10000, 25000, 40000, 55000, 70000, 85000, 100000, 115000, 130000,
];

/// The named workloads of SPEC 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum Workload {
    /// 4 blocks x 16 threads, table sizes / 1000 (1, 15, 30, 45 elements).
    Small,
    /// Blocks 0-3 of table 4.1, 128 threads.
    Thesis4,
    /// Blocks 0-8 of table 4.1, 128 threads: the default.
    Thesis9,
    /// Blocks 0-26 of table 4.1, 128 threads.
    Thesis27,
    /// 27 blocks x 128 threads, table sizes x 10.
    Large,
}

impl Workload {
    /// Every named workload, smallest first.
    pub const ALL: [Workload; 5] = [
        Workload::Small,
        Workload::Thesis4,
        Workload::Thesis9,
        Workload::Thesis27,
        Workload::Large,
    ];

    /// The name used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Small => "small",
            Workload::Thesis4 => "thesis-4",
            Workload::Thesis9 => "thesis-9",
            Workload::Thesis27 => "thesis-27",
            Workload::Large => "large",
        }
    }

    /// Threads per block.
    pub fn threads(self) -> u32 {
        match self {
            Workload::Small => 16,
            _ => 128,
        }
    }

    /// Elements of f64 in each block's send (and receive) buffer.
    pub fn block_elems(self) -> Vec<u64> {
        let table = &THESIS_TABLE_4_1;
        match self {
            // 1 / 1000 would be zero; the thesis keeps block 0 at one element.
            Workload::Small => table[..4].iter().map(|&n| (n / 1000).max(1)).collect(),
            Workload::Thesis4 => table[..4].to_vec(),
            Workload::Thesis9 => table[..9].to_vec(),
            Workload::Thesis27 => table.to_vec(),
            Workload::Large => table.iter().map(|&n| n * 10).collect(),
        }
    }

    /// Number of blocks.
    pub fn blocks(self) -> usize {
        self.block_elems().len()
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Workload> for String {
    fn from(w: Workload) -> String {
        w.name().to_owned()
    }
}

impl FromStr for Workload {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                let known: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
                Error::InvalidInput(format!(
                    "unknown workload '{s}'; known workloads: {}",
                    known.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_workloads_have_the_table_sizes() {
        assert_eq!(Workload::Small.block_elems(), vec![1, 15, 30, 45]);
        assert_eq!(Workload::Small.threads(), 16);
        assert_eq!(Workload::Thesis9.block_elems().iter().sum::<u64>(), 540_001);
        assert_eq!(Workload::Thesis4.blocks(), 4);
        assert_eq!(Workload::Thesis27.blocks(), 27);
        assert_eq!(Workload::Thesis27.block_elems()[26], 130_000);
        assert_eq!(Workload::Large.block_elems()[0], 10);
        assert_eq!(Workload::Large.block_elems()[26], 1_300_000);
    }

    #[test]
    fn workload_names_round_trip_and_unknown_names_are_listed() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().ok(), Some(w));
        }
        let err = "thesis-8".parse::<Workload>().err().map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("unknown workload 'thesis-8'"), "{err}");
        assert!(err.contains("thesis-27"), "{err}");
    }
}
