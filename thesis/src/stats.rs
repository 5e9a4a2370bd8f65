//! Statistics of iteration times (SPEC 6): mean, median, standard deviation, min and max.

use serde::Serialize;

/// Summary of a sample of times, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Values summarised.
    pub count: usize,
    /// Median: the middle value, or the mean of the two middle values.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
    pub stddev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The median of `values`; `None` when there are none or any is not finite.
pub fn median(values: &[f64]) -> Option<f64> {
    Summary::of(values).map(|s| s.median)
}

impl Summary {
    /// Summarises `values`; `None` when there are none or any is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let stddev = if n < 2 {
            0.0
        } else {
            (sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        };
        Some(Summary {
            count: n,
            median,
            mean,
            stddev,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).expect("non-empty");
        assert_eq!(s.count, 4);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.mean, 2.5);
        assert!((s.stddev - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 4.0));
        let odd = Summary::of(&[5.0, 1.0, 9.0]).expect("non-empty");
        assert_eq!(odd.median, 5.0);
    }

    #[test]
    fn single_value_has_zero_spread_and_empty_has_no_summary() {
        let s = Summary::of(&[7.0]).expect("non-empty");
        assert_eq!((s.median, s.stddev), (7.0, 0.0));
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }
}
