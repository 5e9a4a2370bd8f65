//! Jobs where groups of ranks count as nodes (`HALOPORT_IPC_RANKS_PER_NODE`), and the links
//! their results record.

use super::{mpirun_with_env, read_json};

/// `haloport stencil ARGS` on 4 ranks in a row (16x8x8, 4 steps) where groups of 2 ranks count
/// as nodes; asserts it succeeded and verified and returns its result.
pub fn in_two_pretend_nodes(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("split.json");
    let mut all = vec![
        "stencil", "--grid", "16x8x8", "--procs", "4x1x1", "--steps", "4",
    ];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().expect("utf-8 path")]);
    let job = mpirun_with_env(4, &[("HALOPORT_IPC_RANKS_PER_NODE", "2")], &all);
    assert_eq!(job.code, Some(0), "{args:?}: {}", job.explain());
    let result = read_json(&json);
    assert_eq!(result["verified"], true, "{args:?}");
    result
}

/// Every rank of [`in_two_pretend_nodes`] reaches itself `local`, the other rank of its node
/// `within`, the ranks of the other node `between`.
pub fn assert_pretend_node_links(result: &serde_json::Value, within: &str, between: &str) {
    for rank in 0..4_i64 {
        let links = links_of(result, rank as usize);
        // Each rank reaches both ranks beside it in x: one of its node, one of the other.
        for peer in [(rank + 1) % 4, (rank + 3) % 4] {
            assert!(
                links.iter().any(|(p, _)| *p == peer),
                "rank {rank} to {peer}: {result}"
            );
        }
        for (peer, link) in links {
            let want = if peer == rank {
                "local"
            } else if peer / 2 == rank / 2 {
                within
            } else {
                between
            };
            assert_eq!(link, want, "rank {rank} to {peer}");
        }
    }
}

/// Every link each rank's result lists, as (peer, link name).
pub fn links_of(result: &serde_json::Value, rank: usize) -> Vec<(i64, String)> {
    result["links"][rank]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|l| Some((l["peer"].as_i64()?, l["link"].as_str()?.to_owned())))
        .collect()
}
