//! Verification (SPEC 5): the value every element carries, which elements unpack checks, and
//! the check itself for code that runs on the CPU (the host backend's kernels, the `mpi-only`
//! reference). The GPU kernels in `kernels-cu/hp_kernels.cuh` implement the same rules; the
//! constants both sides use come from `kernels-cu/haloport_shared.h`.
//!
//! The value of element i of block b, packed by rank r in global iteration `it`, is
//! `key * 2^21 + (i mod 2^21)` with `key = (1000 * (it + 1) + 100 * r + b) mod 2^31`: the
//! thesis's listing 3.4 value as a key, the element's index below it. It is an integer under
//! 2^52, so exact in f64, and differs between neighbouring elements, so a message that is one
//! element short, shifted, or left over from another iteration or rank cannot verify.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::shared::{self, hp_block_check};

/// Which elements unpack checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verify {
    /// Per block: the first and the last element, and one evenly spaced element per thread
    /// (the thesis's sample).
    #[default]
    Sample,
    /// Every element of every block: a cost that shows in the unpack times.
    Full,
}

impl Verify {
    /// The value kernels receive (`HP_VERIFY_*`).
    pub fn code(self) -> u32 {
        match self {
            Verify::Sample => shared::HP_VERIFY_SAMPLE,
            Verify::Full => shared::HP_VERIFY_FULL,
        }
    }

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Verify::Sample => "sample",
            Verify::Full => "full",
        }
    }
}

impl fmt::Display for Verify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Verify {
    type Err = Error;

    fn from_str(s: &str) -> Result<Verify, Error> {
        match s {
            "sample" => Ok(Verify::Sample),
            "full" => Ok(Verify::Full),
            _ => Err(Error::InvalidInput(format!(
                "unknown verification '{s}'; known: sample, full"
            ))),
        }
    }
}

/// The key of block `block` packed by `rank` in global iteration `iteration` (see the module
/// docs): the thesis's listing 3.4 value, reduced below 2^31.
pub fn value_key(iteration: u32, rank: i32, block: u32) -> u64 {
    (1000 * (u64::from(iteration) + 1) + 100 * u64::from(rank.unsigned_abs()) + u64::from(block))
        & shared::HP_VALUE_KEY_MASK as u64
}

/// The value pack writes into element `index` of `block`'s send buffer on `rank` in global
/// iteration `iteration`. The kernels compute the same integer.
pub fn packed_value(iteration: u32, rank: i32, block: u32, index: u64) -> f64 {
    let low = index & ((1_u64 << shared::HP_VALUE_INDEX_BITS) - 1);
    ((value_key(iteration, rank, block) << shared::HP_VALUE_INDEX_BITS) | low) as f64
}

/// Splits a value into (key, index) for error messages; `None` for a value no pack writes:
/// negative, fractional, too large, or with key 0 (zeroed memory: keys start at 1000).
pub fn decode_value(value: f64) -> Option<(u64, u64)> {
    if !(0.0..(1_u64 << 52) as f64).contains(&value) || value.fract() != 0.0 {
        return None;
    }
    let bits = value as u64;
    let low_mask = (1_u64 << shared::HP_VALUE_INDEX_BITS) - 1;
    let key = bits >> shared::HP_VALUE_INDEX_BITS;
    (key != 0).then_some((key, bits & low_mask))
}

/// The index the `thread`-th of `threads` checking threads looks at in a buffer of `elems`
/// elements: evenly spaced over the buffer (thesis listing 3.8, without its skipped tail).
pub fn checked_index(thread: u32, threads: u32, elems: u64) -> u64 {
    u64::from(thread) * elems / u64::from(threads.max(1))
}

/// How many checks unpack makes in a block of `elems` elements run by `threads` threads: the
/// number every block's check record must show after every iteration.
pub fn planned_checks(verify: Verify, threads: u32, elems: u64) -> u64 {
    match verify {
        Verify::Sample if elems == 0 => 0,
        Verify::Sample => u64::from(threads) + 2,
        Verify::Full => elems,
    }
}

/// Counts one check of element `index` in `record`: wrong when `found` differs from `want` in
/// any bit, and then remembered if it is the lowest wrong index so far.
pub fn note_check(record: &mut hp_block_check, index: u64, want: f64, found: f64) {
    record.checked += 1;
    if found.to_bits() != want.to_bits() {
        if record.wrong == 0 || index < record.first_index {
            record.first_index = index;
            record.first_expected = want;
            record.first_found = found;
        }
        record.wrong += 1;
    }
}

/// Adds the checks of `part` (one of several records covering the same block, e.g. one per
/// chunk or per GPU block) to `whole`: counts summed, the lowest wrong index kept with its values.
pub fn merge_checks(whole: &mut hp_block_check, part: &hp_block_check) {
    if part.wrong > 0 && (whole.wrong == 0 || part.first_index < whole.first_index) {
        whole.first_index = part.first_index;
        whole.first_expected = part.first_expected;
        whole.first_found = part.first_found;
    }
    whole.checked += part.checked;
    whole.wrong += part.wrong;
}

/// Checks a received block on the CPU by the kernels' rules: what the host backend's unpack and
/// the `mpi-only` reference run. `expected(index)` is the value the source packed there.
pub fn check_block(
    recv: &[f64],
    verify: Verify,
    threads: u32,
    expected: impl Fn(u64) -> f64,
) -> hp_block_check {
    let mut record = hp_block_check::default();
    let mut check =
        |index: u64| note_check(&mut record, index, expected(index), recv[index as usize]);
    let elems = recv.len() as u64;
    match verify {
        Verify::Full => (0..elems).for_each(&mut check),
        Verify::Sample if elems > 0 => {
            (0..threads).for_each(|t| check(checked_index(t, threads, elems)));
            check(0);
            check(elems - 1);
        }
        Verify::Sample => {}
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_exact_integers_distinct_per_element_block_rank_and_iteration() {
        assert_eq!(packed_value(0, 0, 0, 0), (1000_u64 << 21) as f64);
        assert_eq!(packed_value(2, 3, 26, 5), ((3326_u64 << 21) + 5) as f64);
        assert_ne!(packed_value(1, 0, 0, 0), packed_value(0, 0, 0, 0));
        assert_ne!(packed_value(0, 0, 0, 1), packed_value(0, 0, 0, 0));
        assert_ne!(packed_value(0, 1, 0, 0), packed_value(0, 0, 0, 0));
        // The largest iteration the protocol allows still gives an exact integer under 2^52.
        let v = packed_value(u32::MAX / 2, 1023, 1023, 1_299_999);
        assert!(v < (1_u64 << 52) as f64 && v.fract() == 0.0);
        assert_eq!(decode_value(v).map(|(_, i)| i), Some(1_299_999));
        assert_eq!(
            decode_value(packed_value(2, 3, 26, 5)),
            Some((value_key(2, 3, 26), 5))
        );
        assert_eq!(decode_value(-1.0), None);
        assert_eq!(decode_value(0.0), None, "zeroed memory is no packed value");
    }

    #[test]
    fn checked_indices_stay_inside_and_spread_over_the_buffer() {
        for elems in [1_u64, 15, 128, 130_000] {
            let idx: Vec<_> = (0..128).map(|t| checked_index(t, 128, elems)).collect();
            assert!(idx.iter().all(|&i| i < elems));
            assert_eq!(idx[0], 0);
            if elems >= 128 {
                assert!(idx[127] >= elems - elems / 128 - 1);
                assert!(idx.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }

    fn packed(elems: u64) -> Vec<f64> {
        (0..elems).map(|i| packed_value(4, 1, 2, i)).collect()
    }

    #[test]
    fn a_correct_block_passes_with_the_planned_number_of_checks() {
        for verify in [Verify::Sample, Verify::Full] {
            for elems in [1_u64, 15, 1000] {
                let c = check_block(&packed(elems), verify, 16, |i| packed_value(4, 1, 2, i));
                assert_eq!(c.wrong, 0);
                assert_eq!(u64::from(c.checked), planned_checks(verify, 16, elems));
            }
        }
    }

    #[test]
    fn a_message_one_element_short_fails_at_its_last_element() {
        // What a receive buffer holds when the sender sent elems - 1 elements: the last one is
        // still what the previous iteration left there.
        let mut recv = packed(1000);
        recv[999] = packed_value(3, 1, 2, 999);
        let c = check_block(&recv, Verify::Sample, 16, |i| packed_value(4, 1, 2, i));
        assert_eq!((c.wrong, c.first_index), (1, 999));
    }

    #[test]
    fn a_shifted_message_fails_everywhere_it_is_checked() {
        let mut recv = packed(1000);
        recv.rotate_right(1);
        let c = check_block(&recv, Verify::Sample, 16, |i| packed_value(4, 1, 2, i));
        assert_eq!(c.wrong, c.checked);
        assert_eq!(c.first_index, 0);
    }

    #[test]
    fn full_verification_finds_a_wrong_element_the_sample_misses() {
        let sampled: Vec<u64> = (0..16).map(|t| checked_index(t, 16, 1000)).collect();
        assert!(!sampled.contains(&501) && 501 != 999);
        let mut recv = packed(1000);
        recv[501] = -1.0;
        let sample = check_block(&recv, Verify::Sample, 16, |i| packed_value(4, 1, 2, i));
        assert_eq!(sample.wrong, 0);
        let full = check_block(&recv, Verify::Full, 16, |i| packed_value(4, 1, 2, i));
        assert_eq!(
            (full.wrong, full.first_index, full.first_found),
            (1, 501, -1.0)
        );
    }
}
