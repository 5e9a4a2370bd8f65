//! Fused mode on the host backend, used directly, on 1, 2 and 4 ranks of one node. Run by
//! `cargo test`, this program starts itself under `mpirun` and checks each rank's verdict;
//! each rank then runs the scenarios below. The application's "kernel" is this program writing
//! through the host twin of `kernels-cu/haloport_device.h` (`haloport_core::halo::fused`): on
//! the host backend device memory is this process's memory, as a GPU kernel's stores would be
//! the device's.
//!
//! - steps alternating two sets of two f64 fields: each step writes its set's interior and,
//!   through the descriptors, the neighbours' halos; after `fused_finish` every halo cell the
//!   plan receives holds its global cell's value for that step and field; over ipc (every
//!   neighbour stored into) and over host-staged MPI (every neighbour served by the ordinary
//!   exchange inside `fused_finish`);
//! - calls before `fuse` or for a set that does not exist are usage errors;
//! - a rank that leaves out its stores ends its neighbours' waits with a time-out naming the
//!   halo, reported by their next call (2 ranks).

#![allow(unsafe_code)] // the application's stores through the descriptors' raw addresses

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use haloport::core::domain::{DomainSpec, ElemType};
use haloport::core::halo::fused::{block_done, store_f64};
use haloport::core::halo::{Field, HaloExchange, HaloOptions};
use haloport::core::transport::TransportKind;
use haloport::core::{Backend, Error};
use haloport::host::HostBackend;
use mpi::topology::{Communicator, SimpleCommunicator};

type Scenario = fn(&HostBackend, &SimpleCommunicator) -> Result<(), String>;

const CHILD: &str = "HALOPORT_FUSED_MPI_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    common::scenarios::run_parent("fused_mpi", CHILD, &[1, 2, 4], &[])
}

fn child() -> ExitCode {
    let universe = mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let backend = HostBackend::new(0).expect("host backend");
    let scenarios: [(&str, Scenario); 3] = [
        ("steps", steps),
        ("refusals", refusals),
        ("a missing store", missing_store),
    ];
    for (name, scenario) in scenarios {
        if let Err(e) = scenario(&backend, &world) {
            println!("rank {} failed {name}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    }
    println!("rank passed");
    ExitCode::SUCCESS
}

fn spec(fields: u32) -> DomainSpec {
    DomainSpec {
        grid: [12, 10, 8],
        procs: None,
        periodic: [true, true, false],
        halo: [1, 2, 1],
        elem: ElemType::F64,
        fields,
        layout: Default::default(),
    }
}

fn options(transport: TransportKind, timeout: Duration) -> HaloOptions {
    HaloOptions {
        transport,
        timeout,
        ..HaloOptions::default()
    }
}

/// The value of global cell `g` of field `f` in step `step`.
fn value(g: [u64; 3], step: u32, f: usize) -> f64 {
    (g[0] + 100 * g[1] + 10_000 * g[2]) as f64 + 0.25 * f as f64 + 1_000_000.0 * f64::from(step)
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// One step of the application: its interior of set `set`'s fields written, each cell also
/// wherever the descriptors send it, then the whole interior reported as one block. With
/// `store` false, the stores into the neighbours are left out.
fn step(
    backend: &HostBackend,
    exchange: &mut HaloExchange<'_, HostBackend>,
    fields: &[Field<HostBackend>],
    set: usize,
    n: u32,
    store: bool,
) -> Result<(), Error> {
    let stream = backend.create_stream()?;
    exchange.fused_start(set, &stream)?;
    backend.stream_synchronize(&stream, deadline())?;
    let d = &exchange.plan().decomposition;
    let lo = d.halo.map(|h| h as u32);
    let hi = [0, 1, 2].map(|k| (d.halo[k] + d.local[k]) as u32);
    let descriptors = exchange.fused_descriptors(set)?.to_vec();
    for (f, field) in fields.iter().enumerate() {
        let base = field.device_addr() as *mut f64;
        for z in lo[2]..hi[2] {
            for y in lo[1]..hi[1] {
                for x in lo[0]..hi[0] {
                    let g = [0, 1, 2].map(|k| d.origin[k] + u64::from([x, y, z][k]) - d.halo[k]);
                    let v = value(g, n, f);
                    let at = u64::from(x) + d.alloc[0] * (u64::from(y) + d.alloc[1] * u64::from(z));
                    // SAFETY: the cell lies in the field's allocation; host memory.
                    unsafe { base.add(at as usize).write_volatile(v) };
                    if store {
                        // SAFETY: the descriptors lead into the neighbours' fields, opened
                        // for this process; only this rank writes those cells now.
                        unsafe { store_f64(&descriptors[f], [x, y, z], v) };
                    }
                }
            }
        }
        if store {
            // SAFETY: the counters are the neighbours' control words, opened for this process.
            unsafe { block_done(&descriptors[f], lo, hi) };
        }
    }
    exchange.fused_finish(set, &stream)?;
    backend.stream_synchronize(&stream, deadline())
}

/// Every halo cell the plan receives of set `fields` holds its global cell's value of step
/// `n`.
fn halos_right(
    exchange: &HaloExchange<'_, HostBackend>,
    fields: &[Field<HostBackend>],
    n: u32,
) -> Result<(), String> {
    let d = &exchange.plan().decomposition;
    let mut checked = 0;
    for nb in &exchange.plan().neighbours {
        let Some(recv) = d.halo_boxes(nb.direction).1 else {
            continue;
        };
        for (f, field) in fields.iter().enumerate() {
            let base = field.device_addr() as *const f64;
            for z in 0..recv.count[2] {
                for y in 0..recv.count[1] {
                    for x in 0..recv.count[0] {
                        let e = recv.offset
                            + x * recv.stride[0]
                            + y * recv.stride[1]
                            + z * recv.stride[2];
                        let idx = [
                            e % d.alloc[0],
                            e / d.alloc[0] % d.alloc[1],
                            e / (d.alloc[0] * d.alloc[1]),
                        ];
                        let g = [0, 1, 2].map(|k| {
                            let c = d.origin[k] as i64 + idx[k] as i64 - d.halo[k] as i64;
                            c.rem_euclid(d.grid[k] as i64) as u64
                        });
                        // SAFETY: the cell lies in the field's allocation; every store landed
                        // before fused_finish's wait ended.
                        let got = unsafe { base.add(e as usize).read_volatile() };
                        let want = value(g, n, f);
                        if got != want {
                            return Err(format!(
                                "rank {}: step {n} field {f} halo cell {idx:?} (global {g:?}, from the {:?} neighbour): {got}, expected {want}",
                                d.rank, nb.direction
                            ));
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    if checked == 0 && !exchange.plan().neighbours.is_empty() {
        return Err("no halo cell was checked".into());
    }
    Ok(())
}

fn steps(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    steps_over(backend, world, TransportKind::Ipc)?;
    steps_over(backend, world, TransportKind::Mpi)
}

fn steps_over(
    backend: &HostBackend,
    world: &SimpleCommunicator,
    transport: TransportKind,
) -> Result<(), String> {
    let spec = spec(2);
    let e = |e: Error| format!("over {transport}: {e}");
    let mut exchange = HaloExchange::new(
        backend,
        world,
        &spec,
        options(transport, Duration::from_secs(10)),
    )
    .map_err(e)?;
    let alloc =
        |exchange: &HaloExchange<'_, HostBackend>| -> Result<Vec<Field<HostBackend>>, String> {
            (0..2)
                .map(|k| Field::alloc_field(backend, exchange.plan(), k).map_err(e))
                .collect()
        };
    let (u, v) = (alloc(&exchange)?, alloc(&exchange)?);
    {
        let (ur, vr): (Vec<&Field<HostBackend>>, Vec<&Field<HostBackend>>) =
            (u.iter().collect(), v.iter().collect());
        exchange.fuse(&[&ur, &vr]).map_err(e)?;
    }
    for n in 0..6 {
        let set = (n % 2) as usize;
        let fields = if set == 0 { &u } else { &v };
        step(backend, &mut exchange, fields, set, n, true).map_err(e)?;
        halos_right(&exchange, fields, n).map_err(|m| format!("over {transport}: {m}"))?;
    }
    exchange.close().map_err(e)
}

fn refusals(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    let spec = spec(1);
    let stream = backend.create_stream().map_err(|e| e.to_string())?;
    let mut mpi = HaloExchange::new(
        backend,
        world,
        &spec,
        options(TransportKind::Mpi, Duration::from_secs(10)),
    )
    .map_err(|e| e.to_string())?;
    match mpi.fused_start(0, &stream) {
        Err(Error::Usage(m)) if m.contains("call fuse first") => {}
        other => return Err(format!("fused_start before fuse: {other:?}")),
    }
    let u = Field::alloc_field(backend, mpi.plan(), 0).map_err(|e| e.to_string())?;
    mpi.fuse(&[&[&u]]).map_err(|e| e.to_string())?;
    match mpi.fused_start(3, &stream) {
        Err(Error::Usage(m)) if m.contains("fused set 3 does not exist") => {}
        other => return Err(format!("fused_start of set 3: {other:?}")),
    }
    drop(mpi);
    Ok(())
}

fn missing_store(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    if world.size() != 2 {
        return Ok(());
    }
    let spec = spec(1);
    let timeout = Duration::from_millis(500);
    let mut exchange =
        HaloExchange::new(backend, world, &spec, options(TransportKind::Ipc, timeout))
            .map_err(|e| e.to_string())?;
    let u = vec![Field::alloc_field(backend, exchange.plan(), 0).map_err(|e| e.to_string())?];
    exchange.fuse(&[&[&u[0]]]).map_err(|e| e.to_string())?;
    // Rank 0 leaves out its stores in the second step: rank 1's wait gives up.
    let mut outcome = Ok(());
    for n in 0..3 {
        let store = !(world.rank() == 0 && n == 1);
        outcome = step(backend, &mut exchange, &u, 0, n, store);
        if outcome.is_err() {
            break;
        }
    }
    match (world.rank(), outcome) {
        (1, Err(Error::Timeout { what, .. }))
            if what.contains("the cells of the") && what.contains("halo with rank 0") => {}
        // Rank 0 left out its own periodic halo too (y has one process), or then waits for
        // rank 1's word in vain.
        (0, Err(Error::Timeout { what, .. })) if what.contains("halo with rank") => {}
        (r, other) => return Err(format!("rank {r}: {other:?}")),
    }
    // Closing after a time-out leaks the memory (logged), never hangs.
    drop(exchange);
    Ok(())
}
