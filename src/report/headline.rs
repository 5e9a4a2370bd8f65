//! The headline numbers of a sweep (thesis tables 4.2-4.5): per workload and variant, the median
//! time per iteration, the speedup over the fastest baseline of the same send kind, and the
//! efficiency against the `mpi-only` floor.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use haloport_thesis::variant::SendMode;
use haloport_thesis::Variant;
use serde::Serialize;

/// What the headline needs of one (variant, workload) result.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Median time per iteration, microseconds.
    pub median_us: f64,
    /// Standard deviation, microseconds.
    pub stddev_us: f64,
    /// Verification verdict.
    pub verified: bool,
}

/// One row of the headline table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeadlineRow {
    /// Workload name.
    pub workload: String,
    /// Variant name.
    pub variant: String,
    /// Median time per iteration, microseconds.
    pub median_us: f64,
    /// Standard deviation, microseconds.
    pub stddev_us: f64,
    /// The fastest baseline of the same send kind on this workload (the reference, 1.0).
    pub reference: Option<String>,
    /// Reference median / this median: above 1 is faster than the reference.
    pub speedup: Option<f64>,
    /// `mpi-only` median / this median: the share of the host MPI floor this variant reaches.
    pub efficiency: Option<f64>,
    /// Verification verdict.
    pub verified: bool,
}

fn send_kind(variant: &str) -> Option<SendMode> {
    match variant.parse::<Variant>() {
        Ok(Variant::MpiOnly) | Err(_) => None,
        Ok(v) => Some(v.send_mode()),
    }
}

/// Computes the headline rows, in the order the results come, per workload.
pub fn headline(results: &[Measured]) -> Vec<HeadlineRow> {
    let mut fastest: HashMap<(&str, SendMode), (&str, f64)> = HashMap::new();
    let mut floor: BTreeMap<&str, f64> = BTreeMap::new();
    for r in results {
        if r.variant == "mpi-only" {
            floor.insert(&r.workload, r.median_us);
        } else if r.variant.starts_with("base-") {
            if let Some(kind) = send_kind(&r.variant) {
                let entry = fastest
                    .entry((&r.workload, kind))
                    .or_insert((&r.variant, r.median_us));
                if r.median_us < entry.1 {
                    *entry = (&r.variant, r.median_us);
                }
            }
        }
    }
    results
        .iter()
        .map(|r| {
            let reference = send_kind(&r.variant)
                .and_then(|kind| fastest.get(&(r.workload.as_str(), kind)).copied());
            HeadlineRow {
                workload: r.workload.clone(),
                variant: r.variant.clone(),
                median_us: r.median_us,
                stddev_us: r.stddev_us,
                reference: reference.map(|(name, _)| name.to_owned()),
                speedup: reference.map(|(_, t)| t / r.median_us),
                efficiency: floor.get(r.workload.as_str()).map(|f| f / r.median_us),
                verified: r.verified,
            }
        })
        .collect()
}

/// The headline as a Markdown table.
pub fn markdown(rows: &[HeadlineRow]) -> String {
    let mut out = String::from(
        "| workload | variant | median us | stddev us | speedup vs fastest baseline (same send kind) | efficiency vs mpi-only | verified |\n\
         | --- | --- | ---: | ---: | ---: | ---: | --- |\n",
    );
    for r in rows {
        let speedup = match (&r.speedup, &r.reference) {
            (Some(s), Some(name)) if name == &r.variant => format!("{s:.3} (reference)"),
            (Some(s), Some(name)) => format!("{s:.3} (vs {name})"),
            _ => "-".to_owned(),
        };
        let efficiency = r
            .efficiency
            .map_or_else(|| "-".to_owned(), |e| format!("{:.1} %", 100.0 * e));
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {speedup} | {efficiency} | {} |",
            r.workload, r.variant, r.median_us, r.stddev_us, r.verified
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(variant: &str, workload: &str, median_us: f64) -> Measured {
        Measured {
            variant: variant.into(),
            workload: workload.into(),
            median_us,
            stddev_us: 1.0,
            verified: true,
        }
    }

    #[test]
    fn speedups_are_against_the_fastest_baseline_of_the_same_send_kind() {
        let rows = headline(&[
            m("mpi-only", "w", 50.0),
            m("base-nb-wait", "w", 100.0),
            m("base-nb-test", "w", 90.0),
            m("base-bl-wait", "w", 120.0),
            m("tq-nb-pb", "w", 80.0),
            m("tq-bl-pb", "w", 100.0),
        ]);
        let row = |v: &str| rows.iter().find(|r| r.variant == v).expect("row");
        assert_eq!(row("tq-nb-pb").reference.as_deref(), Some("base-nb-test"));
        assert!((row("tq-nb-pb").speedup.expect("speedup") - 90.0 / 80.0).abs() < 1e-12);
        assert_eq!(row("tq-bl-pb").reference.as_deref(), Some("base-bl-wait"));
        assert!((row("tq-bl-pb").speedup.expect("speedup") - 1.2).abs() < 1e-12);
        assert_eq!(row("base-nb-test").speedup, Some(1.0));
        assert!((row("tq-nb-pb").efficiency.expect("floor") - 0.625).abs() < 1e-12);
        assert_eq!(row("mpi-only").speedup, None);
    }

    #[test]
    fn workloads_do_not_mix() {
        let rows = headline(&[
            m("base-nb-wait", "a", 10.0),
            m("base-nb-wait", "b", 20.0),
            m("tq-nb-tq", "b", 10.0),
        ]);
        assert_eq!(rows[2].speedup, Some(2.0));
        assert_eq!(rows[2].efficiency, None, "no mpi-only on b");
    }

    #[test]
    fn the_markdown_table_marks_the_reference() {
        let table = markdown(&headline(&[
            m("mpi-only", "w", 50.0),
            m("base-nb-wait", "w", 100.0),
            m("tq-nb-pb", "w", 80.0),
        ]));
        let golden = "\
| workload | variant | median us | stddev us | speedup vs fastest baseline (same send kind) | efficiency vs mpi-only | verified |
| --- | --- | ---: | ---: | ---: | ---: | --- |
| w | mpi-only | 50.0 | 1.0 | - | 100.0 % | true |
| w | base-nb-wait | 100.0 | 1.0 | 1.000 (reference) | 50.0 % | true |
| w | tq-nb-pb | 80.0 | 1.0 | 1.250 (vs base-nb-wait) | 62.5 % | true |
";
        assert_eq!(table, golden);
    }
}
