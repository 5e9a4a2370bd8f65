//! Bad input gets a clear message naming what was wrong and a non-zero exit: never a panic,
//! never a hang.

mod common;

use std::path::PathBuf;

use common::{alone, mpirun};

fn pattern_file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write pattern file");
    path
}

fn run_with_pattern(np: u32, path: &std::path::Path) -> common::Job {
    mpirun(
        np,
        &[
            "run",
            "--workload",
            "small",
            "--runs",
            "1",
            "--iters",
            "2",
            "--warmup",
            "1",
            "--pattern",
            path.to_str().expect("utf-8 path"),
        ],
    )
}

#[test]
fn unknown_names_are_refused_with_the_known_ones_listed() {
    alone(&["run", "--variant", "base-xx-wait"]).assert_fails_with(
        2,
        "unknown variant 'base-xx-wait'; known variants: base-nb-wait",
    );
    alone(&["run", "--workload", "thesis-8"]).assert_fails_with(
        2,
        "unknown workload 'thesis-8'; known workloads: small, thesis-4",
    );
    alone(&["run", "--pattern", "star"]).assert_fails_with(
        2,
        "unknown pattern 'star': not a built-in (pairwise, ring, mixed) and no such file",
    );
    alone(&["run", "--backend", "metal"]).assert_fails_with(2, "invalid value 'metal'");
    alone(&["run", "--inject", "explode=1"]).assert_fails_with(2, "unknown fault 'explode=1'");
    alone(&["run", "--timeout", "0"]).assert_fails_with(
        2,
        "'0' is not a usable time-out: give seconds greater than 0 and at most 86400",
    );
    alone(&["run", "--verify", "some"])
        .assert_fails_with(2, "unknown verification 'some'; known: sample, full");
    alone(&["run", "--lib-blocks", "0"]).assert_fails_with(2, "'--lib-blocks <LIB_BLOCKS>'");
    let dir = tempfile::tempdir().expect("temp dir");
    let dir_name = dir.path().to_str().expect("utf-8 path");
    alone(&["run", "--pattern", dir_name]).assert_fails_with(
        2,
        &format!("pattern '{dir_name}' is a directory; give a built-in pattern or a pattern file"),
    );
}

/// Refused before any exchange runs: the summary line of a run never appears.
fn refused_before_work(job: &common::Job, needle: &str) {
    job.assert_fails_with(2, needle);
    assert!(
        !job.stdout.contains("haloport run:"),
        "work was done before the refusal; {}",
        job.explain()
    );
}

#[test]
fn a_fault_naming_a_block_that_does_not_exist_is_refused() {
    let job = mpirun(
        2,
        &[
            "run",
            "--workload",
            "small",
            "--inject",
            "drop-send=4",
            "--runs",
            "1",
        ],
    );
    refused_before_work(
        &job,
        "--inject drop-send=4: block 4 does not exist; the pattern has blocks 0 to 3",
    );
}

#[test]
fn runs_and_iterations_too_many_to_record_are_refused() {
    let job = mpirun(2, &["run", "--runs", "100000000", "--iters", "13"]);
    refused_before_work(
        &job,
        "--runs 100000000 x --iters 13 = 1300000000 iterations: more than the 100000000 one measurement records",
    );
}

#[test]
fn a_json_path_that_cannot_be_written_is_refused_before_running() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no-such-dir").join("result.json");
    let missing = missing.to_str().expect("utf-8 path");
    let job = mpirun(
        2,
        &[
            "run",
            "--workload",
            "small",
            "--runs",
            "1",
            "--json",
            missing,
        ],
    );
    refused_before_work(&job, &format!("--json {missing}: cannot be written"));
    let as_dir = dir.path().to_str().expect("utf-8 path");
    let job = mpirun(
        2,
        &[
            "run",
            "--workload",
            "small",
            "--runs",
            "1",
            "--json",
            as_dir,
        ],
    );
    refused_before_work(
        &job,
        &format!("--json {as_dir}: is a directory, not a file"),
    );
}

#[test]
fn usage_errors_are_printed_once_per_job() {
    let job = mpirun(2, &["run", "--variant", "nope"]);
    job.assert_fails_with(2, "unknown variant 'nope'");
    assert_eq!(
        job.stderr.matches("unknown variant 'nope'").count(),
        1,
        "{}",
        job.explain()
    );
}

#[test]
fn protocol_without_a_measured_iteration_is_refused() {
    mpirun(2, &["run", "--iters", "3", "--warmup", "3"])
        .assert_fails_with(2, "--iters 3 with --warmup 3 leaves no measured iteration");
    mpirun(2, &["run", "--runs", "0"]).assert_fails_with(2, "--runs must be at least 1");
}

#[test]
fn builtin_patterns_that_do_not_fit_the_job_are_refused() {
    mpirun(3, &["run", "--pattern", "pairwise", "--runs", "1"]).assert_fails_with(
        2,
        "pattern 'pairwise' pairs ranks 0<->1, 2<->3, ... and needs an even number of ranks, not 3",
    );
}

#[test]
fn a_pattern_file_that_does_not_parse_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = pattern_file(
        &dir,
        "broken.toml",
        "[[rank]]\nrank = 0\nblocks = [ { dest = 1, source = ",
    );
    run_with_pattern(2, &toml).assert_fails_with(2, "broken.toml: not valid pattern TOML");
    let json = pattern_file(
        &dir,
        "broken.json",
        "{\"rank\": [ {\"rank\": 0, \"blocks\": [ }",
    );
    run_with_pattern(2, &json).assert_fails_with(2, "broken.json: not valid pattern JSON");
    let unknown = pattern_file(
        &dir,
        "typo.toml",
        "[[rank]]\nrank = 0\nblocks = [ { dest = 1, sauce = 1 } ]\n",
    );
    run_with_pattern(2, &unknown).assert_fails_with(2, "unknown field `sauce`");
}

#[test]
fn a_pattern_file_naming_a_missing_rank_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = pattern_file(
        &dir,
        "far.toml",
        "[[rank]]\nrank = 0\nblocks = [ { dest = 5, source = 1, elems = 4 } ]\n\
         [[rank]]\nrank = 1\nblocks = [ { dest = 0, source = 0, elems = 4 } ]\n",
    );
    run_with_pattern(2, &path).assert_fails_with(
        2,
        "rank 0 block 0 sends to rank 5, which does not exist in a job of 2 ranks",
    );
}

#[test]
fn a_pattern_file_with_a_zero_sized_block_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = pattern_file(
        &dir,
        "zero.toml",
        "[[rank]]\nrank = 0\nblocks = [ { dest = 1, source = 1, elems = 0 } ]\n\
         [[rank]]\nrank = 1\nblocks = [ { dest = 0, source = 0, elems = 0 } ]\n",
    );
    run_with_pattern(2, &path).assert_fails_with(2, "block 0 has zero elements");
}

#[test]
fn a_pattern_file_whose_sizes_do_not_match_names_rank_block_and_sizes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = pattern_file(
        &dir,
        "mismatch.json",
        r#"{ "ranks": 2, "rank": [
              { "rank": 0, "blocks": [ { "dest": 1, "source": 1, "elems": 10 },
                                       { "dest": 1, "source": 1, "elems": 20 } ] },
              { "rank": 1, "blocks": [ { "dest": 0, "source": 0, "elems": 10 },
                                       { "dest": 0, "source": 0, "elems": 25 } ] } ] }"#,
    );
    run_with_pattern(2, &path).assert_fails_with(
        2,
        "rank 0 block 1 sends 20 elements to rank 1, but rank 1 block 1 receives 25 elements",
    );
}

#[test]
fn a_pattern_file_whose_peers_disagree_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = pattern_file(
        &dir,
        "crossed.toml",
        "[[rank]]\nrank = 0\nblocks = [ { dest = 1, source = 2 } ]\n\
         [[rank]]\nrank = 1\nblocks = [ { dest = 2, source = 0 } ]\n\
         [[rank]]\nrank = 2\nblocks = [ { dest = 1, source = 1 } ]\n",
    );
    run_with_pattern(3, &path).assert_fails_with(
        2,
        "rank 0 block 0 receives from rank 2, but rank 2 block 0 sends to rank 1",
    );
}

#[test]
fn a_valid_pattern_file_runs_and_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = pattern_file(
        &dir,
        "custom.toml",
        "ranks = 2\n[[rank]]\nrank = 0\nblocks = [ { dest = 1, source = 1, elems = 7 }, { dest = 1, source = 1 } ]\n\
         [[rank]]\nrank = 1\nblocks = [ { dest = 0, source = 0, elems = 7 }, { dest = 0, source = 0 } ]\n",
    );
    let job = run_with_pattern(2, &path);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    assert!(job.stdout.contains("verified: true"), "{}", job.explain());
}

/// Runs wherever this binary lacks a GPU backend; `ci/test.sh` also runs it in a host-only
/// build, so CI exercises it even though its main build has every backend.
#[test]
fn a_backend_not_built_in_is_refused() {
    let missing = if !cfg!(feature = "cuda") {
        "cuda"
    } else if !cfg!(feature = "hip") {
        "hip"
    } else {
        println!(
            "SKIPPED: a_backend_not_built_in_is_refused: every backend is built in (ci/test.sh runs it again in a host-only build)"
        );
        return;
    };
    alone(&[
        "run",
        "--backend",
        missing,
        "--pattern",
        "ring",
        "--runs",
        "1",
    ])
    .assert_fails_with(
        2,
        &format!("the {missing} backend is not available in this build"),
    );
}

#[test]
fn info_reports_backends_mpi_and_rank_mapping() {
    let job = mpirun(2, &["info"]);
    assert_eq!(job.code, Some(0), "{}", job.explain());
    for needle in [
        "backends built in: host",
        "MPI library: ",
        "rank 0 on",
        "rank 1 on",
        "(local rank 1)",
        "pinned memory offered: coherent",
    ] {
        assert!(
            job.stdout.contains(needle),
            "missing '{needle}'; {}",
            job.explain()
        );
    }
}
