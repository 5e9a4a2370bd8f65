//! Timelines as Chrome trace JSON (the Trace Event Format; opens in Perfetto and
//! chrome://tracing): one process per rank, one thread per block plus one for the CPU; pack and
//! unpack as complete events, CPU events as instant events; iterations laid end to end.

use std::path::Path;

use serde_json::{json, Value};

use crate::report::load::Entry;

/// The trace events for every rank's last-run timeline of `entry`.
pub fn events(entry: &Entry) -> Vec<Value> {
    let mut out = Vec::new();
    for (rank, timeline) in entry.timelines.iter().enumerate() {
        out.push(json!({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": format!("rank {rank}")}}));
        out.push(json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "CPU"}}));
        let blocks = timeline.iter().map(|it| it.blocks.len()).max().unwrap_or(0);
        for b in 0..blocks {
            out.push(json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": b + 1, "args": {"name": format!("block {b}")}}));
        }
        let mut offset = 0.0;
        for it in timeline {
            out.push(json!({"name": format!("iteration {}", it.iteration), "ph": "X", "pid": rank, "tid": 0,
                            "ts": offset, "dur": it.duration_us, "cat": "iteration"}));
            for (b, p) in it.blocks.iter().enumerate() {
                for (name, span) in [("pack", p.pack_us), ("unpack", p.unpack_us)] {
                    out.push(
                        json!({"name": name, "ph": "X", "pid": rank, "tid": b + 1, "cat": "gpu",
                                    "ts": offset + span[0], "dur": (span[1] - span[0]).max(0.0)}),
                    );
                }
            }
            for e in &it.cpu {
                let tid = e.block.map_or(0, |b| b as usize + 1);
                out.push(json!({"name": format!("{:?}", e.kind), "ph": "i", "s": "t", "pid": rank, "tid": tid,
                                "ts": offset + e.at_us, "cat": "cpu"}));
            }
            offset += it.duration_us;
        }
    }
    out
}

/// Writes the trace of `entry` to `path`; `Ok(false)` when it has no timeline.
///
/// # Errors
/// The file cannot be written.
pub fn write(entry: &Entry, path: &Path) -> anyhow::Result<bool> {
    if entry.timelines.iter().all(Vec::is_empty) {
        return Ok(false);
    }
    let trace = json!({
        "displayTimeUnit": "ns",
        "otherData": {"variant": entry.variant, "workload": entry.workload},
        "traceEvents": events(entry),
    });
    std::fs::write(path, serde_json::to_string(&trace)?)?;
    Ok(true)
}
