//! haloport-nccl over the stand-in library (`standin/nccl_standin.c`: the NCCL calls over MPI
//! on host memory), 2 ranks under `mpirun`. Each parent test builds the stand-in, points
//! `HALOPORT_NCCL_LIBRARY` at it and runs its `rank_*` twin as both ranks; each rank checks
//! its own outcome and prints "rank N: passed". What they prove:
//!
//! - `round_trip`: a communicator from MPI (unique id broadcast, non-blocking creation, the
//!   agreement) moves bytes both ways in one group, several messages of different sizes
//!   (a zero-byte one among them) each arriving whole and in order, twice, and closes cleanly;
//!   the library's version is the stand-in's (2.99.1);
//! - `init_failure_is_an_error_on_every_rank`: creation failing on rank 1 is an error on both
//!   ranks (rank 1: the library's own text; rank 0: a time-out, then the agreement naming
//!   rank 1), within the time-out plus a few seconds;
//! - `stalled_init_times_out`: a peer that never connects is a time-out on both ranks naming
//!   `ncclCommInitRankConfig`, within the time-out plus a few seconds;
//! - `stalled_peer_times_out_in_a_group`: a peer whose sends never arrive is a time-out naming
//!   `ncclGroupEnd` within the time-out plus a few seconds, the communicator is aborted and
//!   refuses more work; the other rank (whose receive completed) is unaffected, and a
//!   `wait_for` whose condition never comes true times out within its own time-out;
//! - `unique_id_failure_is_an_error_on_every_rank`: the root failing to make the id is its own
//!   error there and an error naming it, with its text, on the other rank;
//! - `async_error_is_reported`: an asynchronous error is reported with the library's error
//!   string and its last-error text, and the communicator refuses more work afterwards.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use haloport_nccl::{Communicator, Error, Flavour, Nccl};
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator as _;

/// The bound each rank's waits get in the fault tests.
const TIMEOUT: Duration = Duration::from_secs(3);
/// What "within the time-out plus a few seconds" allows on a loaded CI machine.
const SLACK: Duration = Duration::from_secs(4);

fn parent(name: &str, fault: Option<&str>) {
    parent_on(name, fault, "1");
}

fn parent_on(name: &str, fault: Option<&str>, fault_rank: &str) {
    let lib = common::build_standin(&[]);
    let lib = lib.to_str().expect("a UTF-8 path");
    let mut env = vec![("HALOPORT_NCCL_LIBRARY", lib)];
    if let Some(f) = fault {
        env.push(("HALOPORT_NCCL_STANDIN_FAULT", f));
        env.push(("HALOPORT_NCCL_STANDIN_FAULT_RANK", fault_rank));
    }
    common::two_ranks(name, &env, 60);
}

/// Runs `scenario` as a rank of the job; prints the verdict the parent counts.
fn rank(scenario: fn(&Arc<Nccl>, &SimpleCommunicator) -> Result<(), String>) {
    common::assert_child();
    let universe = mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    let r = world.rank();
    let nccl = Nccl::load(Flavour::Nccl).expect("the stand-in loads");
    match scenario(&nccl, &world) {
        Ok(()) => println!("rank {r}: passed"),
        Err(e) => println!("rank {r}: FAILED: {e}"),
    }
}

/// Prints a rank's error (for the job's log) and hands the result on.
fn show<T>(world: &SimpleCommunicator, result: Result<T, Error>) -> Result<T, Error> {
    if let Err(e) = &result {
        println!("rank {}: {e}", world.rank());
    }
    result
}

fn within(started: Instant, what: &str) -> Result<(), String> {
    let took = started.elapsed();
    if took < TIMEOUT || took > TIMEOUT + SLACK {
        return Err(format!(
            "{what} after {took:?}: expected between {TIMEOUT:?} and {:?}",
            TIMEOUT + SLACK
        ));
    }
    Ok(())
}

#[test]
fn round_trip() {
    parent("rank_round_trip", None);
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_round_trip() {
    rank(|nccl, world| {
        if nccl.version().to_string() != "2.99.1" {
            return Err(format!("version {} is not the stand-in's", nccl.version()));
        }
        let mut comm = Communicator::from_mpi(nccl, world, Duration::from_secs(20))
            .map_err(|e| format!("from_mpi: {e}"))?;
        let me = comm.rank();
        let peer = 1 - me;
        if comm.size() != 2 {
            return Err(format!("{} ranks", comm.size()));
        }
        let sizes = [1 << 20, 0, 7, 4096];
        let pattern = |from: usize, msg: usize, round: usize, i: usize| {
            (i.wrapping_mul(31) + from * 7 + msg * 13 + round * 101) as u8
        };
        for round in 0..2 {
            let send: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(m, &n)| (0..n).map(|i| pattern(me, m, round, i)).collect())
                .collect();
            let mut recv: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0xEE; n]).collect();
            comm.group(|g| {
                for (s, r) in send.iter().zip(recv.iter_mut()) {
                    // SAFETY: host buffers (the stand-in moves host memory), alive and
                    // untouched until the group returns, when the stand-in has completed them.
                    unsafe {
                        g.send(s.as_ptr().cast(), s.len(), peer, std::ptr::null_mut())?;
                        g.recv(r.as_mut_ptr().cast(), r.len(), peer, std::ptr::null_mut())?;
                    }
                }
                Ok(())
            })
            .map_err(|e| format!("group {round}: {e}"))?;
            for (m, got) in recv.iter().enumerate() {
                if let Some(i) = (0..got.len()).find(|&i| got[i] != pattern(peer, m, round, i)) {
                    return Err(format!(
                        "round {round}, message {m}: byte {i} is {}",
                        got[i]
                    ));
                }
            }
        }
        // A peer out of range is refused before NCCL sees it (and poisons the communicator,
        // which is why it comes last).
        let e = comm.group(|g| {
            // SAFETY: never reaches the library (the peer is refused first).
            unsafe { g.send([0u8; 1].as_ptr().cast(), 1, 2, std::ptr::null_mut()) }
        });
        match e {
            Err(Error::InvalidArgument(m)) if m.contains("peer 2") => {}
            other => return Err(format!("peer 2 gave {other:?}")),
        }
        match comm.poll_async_error() {
            Err(Error::Aborted(_)) => Ok(()),
            other => Err(format!("after a failed group: {other:?}")),
        }
    });
}

#[test]
fn init_failure_is_an_error_on_every_rank() {
    parent("rank_init_failure", Some("init"));
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_init_failure() {
    rank(|nccl, world| {
        let started = Instant::now();
        let result = Communicator::from_mpi(nccl, world, TIMEOUT);
        let took = started.elapsed();
        if let Err(e) = &result {
            println!("rank {}: {e}", world.rank());
        }
        if took > TIMEOUT + SLACK {
            return Err(format!("took {took:?}"));
        }
        match (world.rank(), result) {
            (
                1,
                Err(Error::PeerFailed {
                    ranks,
                    local: Some(local),
                    ..
                }),
            ) if ranks.contains(&1) => match *local {
                Error::Call { call, last, .. }
                    if call == "ncclCommInitRankConfig"
                        && last.contains("injected creation failure") =>
                {
                    Ok(())
                }
                other => Err(format!("rank 1's own error: {other}")),
            },
            (0, Err(Error::PeerFailed { ranks, local, .. })) if ranks.contains(&1) => {
                // Rank 0 waited for rank 1 until its time-out.
                match local.as_deref() {
                    Some(Error::Timeout { waited_for, .. })
                        if waited_for.contains("ncclCommInitRankConfig") =>
                    {
                        within(started, "rank 0's time-out")
                    }
                    other => Err(format!("rank 0's own outcome: {other:?}")),
                }
            }
            (r, other) => Err(format!("rank {r}: {other:?}")),
        }
    });
}

#[test]
fn stalled_init_times_out() {
    parent("rank_stalled_init", Some("init-hang"));
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_stalled_init() {
    rank(|nccl, world| {
        // The id by hand and the bare init (no agreement): the time-out alone ends the wait.
        let id = haloport_nccl::UniqueId::broadcast(nccl, world, 0).map_err(|e| e.to_string())?;
        let started = Instant::now();
        let result = Communicator::init(nccl, 2, world.rank() as usize, &id, TIMEOUT);
        if let Err(e) = &result {
            println!("rank {}: {e}", world.rank());
        }
        match result {
            Err(Error::Timeout { waited_for, .. })
                if waited_for.contains("ncclCommInitRankConfig") =>
            {
                within(started, "the time-out")
            }
            other => Err(format!("{other:?}")),
        }
    });
}

#[test]
fn stalled_peer_times_out_in_a_group() {
    parent("rank_stalled_peer", Some("send"));
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_stalled_peer() {
    rank(|nccl, world| {
        let mut comm = Communicator::from_mpi(nccl, world, TIMEOUT).map_err(|e| e.to_string())?;
        let peer = 1 - comm.rank();
        let send = vec![comm.rank() as u8 + 1; 1000];
        let mut recv = vec![0u8; 1000];
        let started = Instant::now();
        let result = comm.group(|g| {
            // SAFETY: host buffers alive until the group returns (completed or aborted).
            unsafe {
                g.send(send.as_ptr().cast(), send.len(), peer, std::ptr::null_mut())?;
                g.recv(
                    recv.as_mut_ptr().cast(),
                    recv.len(),
                    peer,
                    std::ptr::null_mut(),
                )
            }
        });
        if let Err(e) = &result {
            println!("rank {}: {e}", comm.rank());
        }
        match (comm.rank(), result) {
            // Rank 1's sends are dropped: rank 0 waits in vain.
            (0, Err(Error::Timeout { waited_for, .. })) if waited_for.contains("ncclGroupEnd") => {
                within(started, "the group's time-out")?;
                match comm.group(|_| Ok(())) {
                    Err(Error::Aborted(first)) if first.contains("time-out") => Ok(()),
                    other => Err(format!("after the time-out: {other:?}")),
                }
            }
            (1, Ok(())) if recv.iter().all(|&b| b == 1) => {
                // A stream that never finishes: `wait_for` gives up at its own time-out.
                comm.wait_for("the first wait", || true)
                    .map_err(|e| format!("a wait already done: {e}"))?;
                comm.set_timeout(Duration::from_secs(1));
                let started = Instant::now();
                match comm.wait_for("a stream that never finishes", || false) {
                    Err(Error::Timeout { waited_for, after })
                        if waited_for == "a stream that never finishes"
                            && after >= Duration::from_secs(1)
                            && started.elapsed() < Duration::from_secs(1) + SLACK => {}
                    other => return Err(format!("wait_for: {other:?}")),
                }
                match comm.close() {
                    Err(Error::Aborted(first)) if first.contains("never finishes") => Ok(()),
                    other => Err(format!("close after the time-out: {other:?}")),
                }
            }
            (r, other) => Err(format!("rank {r}: {other:?}, received {}", recv[0])),
        }
    });
}

#[test]
fn unique_id_failure_is_an_error_on_every_rank() {
    parent_on("rank_unique_id_failure", Some("unique-id"), "0");
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_unique_id_failure() {
    rank(
        |nccl, world| match (world.rank(), Communicator::from_mpi(nccl, world, TIMEOUT)) {
            (0, Err(Error::Call { call, last, .. }))
                if call == "ncclGetUniqueId"
                    && last.contains("injected ncclGetUniqueId failure") =>
            {
                Ok(())
            }
            (
                1,
                Err(Error::PeerFailed {
                    step,
                    ranks,
                    detail,
                    ..
                }),
            ) if step == "ncclGetUniqueId"
                && ranks == [0]
                && detail.contains("injected ncclGetUniqueId failure") =>
            {
                Ok(())
            }
            (r, other) => Err(format!("rank {r}: {other:?}")),
        },
    );
}

#[test]
fn async_error_is_reported() {
    parent("rank_async_error", Some("async"));
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_async_error() {
    rank(|nccl, world| {
        let mut comm = Communicator::from_mpi(nccl, world, Duration::from_secs(20))
            .map_err(|e| e.to_string())?;
        let peer = 1 - comm.rank();
        let send = [7u8; 16];
        let mut recv = [0u8; 16];
        let result = comm.group(|g| {
            // SAFETY: host buffers alive until the group returns.
            unsafe {
                g.send(send.as_ptr().cast(), 16, peer, std::ptr::null_mut())?;
                g.recv(recv.as_mut_ptr().cast(), 16, peer, std::ptr::null_mut())
            }
        });
        let result = show(world, result);
        match (comm.rank(), result) {
            (0, Ok(())) if recv == [7u8; 16] => comm.close().map_err(|e| e.to_string()),
            (1, Err(e @ Error::Call { code: 6, .. })) => {
                let text = e.to_string();
                if !text.contains("remote process exited or there was a network error")
                    || !text.contains("injected asynchronous error")
                {
                    return Err(format!("the error lacks the library's texts: {text}"));
                }
                match comm.poll_async_error() {
                    Err(Error::Aborted(first)) if first == text => Ok(()),
                    other => Err(format!("after the error: {other:?}")),
                }
            }
            (r, other) => Err(format!("rank {r}: {other:?}")),
        }
    });
}
