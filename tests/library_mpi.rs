//! The library on several ranks, used directly (no CLI), on the host backend. Run by
//! `cargo test`, this program starts itself under `mpirun -np 2` (and 3) and checks each
//! rank's verdict; each rank then runs the scenarios below:
//!
//! - every neighbourhood (faces, faces and edges, all), with and without padding, fills exactly
//!   the halo cells it promises and touches neither the others nor the padding;
//! - fields of different shapes (f64, a 3-component f32 vector, 4 bytes, complex f64; f16 x 3
//!   beside a lone byte) travel together, every byte of every halo cell right; elements of 3
//!   bytes are refused;
//! - a Cartesian communicator made with `reorder = true`, and a raw `MPI_Comm` (a split of the
//!   world), both exchange correctly, and a Cartesian periodicity that contradicts the
//!   declaration fails every rank with the same error;
//! - a device-side failure (a dropped device-direct message) is reported by the next `start`
//!   at the latest, as a time-out, and every later call returns a time-out again;
//! - in checked mode, `finish` itself reports it;
//! - `close` returns Ok on every rank of an `ipc` exchange whose ranks span two "nodes";
//! - capturing into a graph is refused with host-staged neighbours (naming one) and by the
//!   host backend, and the exchange works on afterwards;
//! - the bounded gathers (`all_gather_until`, `send_until`, `receive_until`) deliver every
//!   value, and give up with a time-out naming what they did where a rank stays away.

#![allow(unsafe_code)] // a raw MPI_Comm, as a C or Fortran caller hands it over

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use haloport::core::backend::{download_bytes, upload_bytes};
use haloport::core::domain::{DomainSpec, ElemType};
use haloport::core::halo::{Field, HaloExchange, HaloFault, HaloOptions, Link};
use haloport::core::transport::TransportKind;
use haloport::core::{Backend, Error};
use haloport::host::HostBackend;
use mpi::raw::AsRaw;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

/// One scenario, run by every rank.
type Scenario = fn(&HostBackend, &SimpleCommunicator) -> Result<(), String>;

const CHILD: &str = "HALOPORT_LIBRARY_MPI_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    common::scenarios::run_parent(
        "library_mpi",
        CHILD,
        &[2, 3],
        &[("HALOPORT_IPC_RANKS_PER_NODE", "2")],
    )
}

fn child() -> ExitCode {
    let universe = mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let rank = world.rank();
    let backend = HostBackend::new(0).expect("host backend");
    let scenarios: [(&str, Scenario); 8] = [
        ("communicators", communicators),
        ("graph refusals", graph_refusals),
        ("layouts", layouts),
        ("field shapes", field_shapes),
        ("device failure", device_failure),
        ("checked finish", checked_finish),
        ("symmetric close", symmetric_close),
        ("bounded gathers", bounded_gathers),
    ];
    let only = std::env::var("HALOPORT_LIBRARY_MPI_ONLY").ok();
    for (name, scenario) in scenarios {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        if let Err(e) = scenario(&backend, &world) {
            println!("rank {rank}: {name}: FAILED: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("rank {rank}: rank passed");
    ExitCode::SUCCESS
}

fn spec(grid: [u64; 3], periodic: [bool; 3]) -> DomainSpec {
    DomainSpec {
        grid,
        procs: None,
        periodic,
        halo: [1, 1, 1],
        elem: ElemType::F64,
        fields: 1,
        layout: Default::default(),
    }
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// One exchange of a field whose interior cells hold their global linear index; true when
/// every halo cell that has a neighbour holds the global index of the cell it mirrors.
fn exchange_is_right(
    backend: &HostBackend,
    exchange: &mut HaloExchange<'_, HostBackend>,
) -> Result<bool, String> {
    let plan = exchange.plan().clone();
    let d = &plan.decomposition;
    let g = plan.spec.grid;
    let linear = |c: [i64; 3]| -> Option<f64> {
        let w: Vec<i64> = (0..3)
            .map(|k| {
                if plan.spec.periodic[k] {
                    c[k].rem_euclid(g[k] as i64)
                } else {
                    c[k]
                }
            })
            .collect();
        if (0..3).any(|k| w[k] < 0 || w[k] >= g[k] as i64) {
            return None; // outside a non-periodic boundary: never written
        }
        Some((w[0] + g[0] as i64 * (w[1] + g[1] as i64 * w[2])) as f64)
    };
    // Per cell: how many dimensions it lies outside the interior in, and whether it is
    // padding (past the high halo), which no exchange may touch.
    let outside = |at: [u64; 3]| {
        (0..3)
            .filter(|&k| at[k] < d.halo[k] || at[k] >= d.halo[k] + d.local[k])
            .count()
    };
    let padding = |at: [u64; 3]| (0..3).any(|k| at[k] >= d.halo[k] + d.local[k] + d.halo_hi[k]);
    const UNFILLED: f64 = -1.0;
    const PADDING: f64 = -3.0;
    let n = d.alloc_elems() as usize;
    let mut values = vec![UNFILLED; n];
    for z in 0..d.alloc[2] {
        for y in 0..d.alloc[1] {
            for x in 0..d.alloc[0] {
                let at = [x, y, z];
                let i = d.index(at) as usize;
                if padding(at) {
                    values[i] = PADDING;
                } else if outside(at) == 0 {
                    values[i] = linear(d.global_of(at)).unwrap_or(-2.0);
                }
            }
        }
    }
    let reach = plan.spec.layout.neighbourhood.reach();
    let field = Field::alloc(backend, &plan).map_err(|e| e.to_string())?;
    let memory = field.device_memory().ok_or("an allocated field")?;
    let stream = backend.create_stream().map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    upload_bytes(backend, memory, &bytes, &stream, deadline()).map_err(|e| e.to_string())?;
    exchange
        .exchange(&[&field], &stream)
        .map_err(|e| e.to_string())?;
    let got =
        download_bytes(backend, memory, n * 8, &stream, deadline()).map_err(|e| e.to_string())?;
    let got: Vec<f64> = got
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    for z in 0..d.alloc[2] {
        for y in 0..d.alloc[1] {
            for x in 0..d.alloc[0] {
                let at = [x, y, z];
                let have = got[d.index(at) as usize];
                let want = if padding(at) {
                    PADDING
                } else if outside(at) > reach {
                    // A halo cell the neighbourhood leaves unfilled (an edge or a corner).
                    UNFILLED
                } else {
                    // Filled, except past a non-periodic boundary.
                    linear(d.global_of(at)).unwrap_or(UNFILLED)
                };
                if outside(at) > 0 && have != want {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

fn layouts(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    use haloport::core::domain::{Layout, Neighbourhood};
    // Every neighbourhood, with and without padding, over both transports: the halo cells each
    // fills hold their neighbours' values, those it leaves (edges, corners) and the padding
    // are untouched.
    for neighbourhood in [
        Neighbourhood::Faces,
        Neighbourhood::FacesEdges,
        Neighbourhood::All,
    ] {
        // Symmetric halos of 1, no padding; padding; halo widths that differ by side, a zero
        // side among them.
        for (pad, halo_lo, halo_hi) in [
            ([0, 0, 0], None, None),
            ([3, 1, 2], None, None),
            ([1, 0, 2], Some([2, 0, 1]), Some([1, 2, 1])),
        ] {
            for transport in [TransportKind::Mpi, TransportKind::Ipc] {
                let mut s = spec([4 * world.size() as u64, 5, 3], [true, true, false]);
                s.layout = Layout {
                    halo_lo,
                    halo_hi,
                    pad,
                    neighbourhood,
                    splits: None,
                    fields: None,
                };
                let options = HaloOptions {
                    transport,
                    ..HaloOptions::default()
                };
                let mut exchange =
                    HaloExchange::new(backend, world, &s, options).map_err(|e| e.to_string())?;
                // x and y both ways (z is not periodic, one part), and the xy edges.
                let want = match neighbourhood {
                    Neighbourhood::Faces => 4,
                    Neighbourhood::FacesEdges | Neighbourhood::All => 8,
                };
                if exchange.plan().neighbours.len() != want {
                    return Err(format!(
                        "{neighbourhood:?}: {} neighbours, expected {want}",
                        exchange.plan().neighbours.len()
                    ));
                }
                if !exchange_is_right(backend, &mut exchange)? {
                    return Err(format!(
                        "wrong halos with {neighbourhood:?}, padding {pad:?}, halos {halo_lo:?} / {halo_hi:?}, {transport:?}"
                    ));
                }
                exchange.close().map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

fn field_shapes(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    use haloport::core::domain::{FieldShape, Layout};
    let shape = |elem_bytes, components| FieldShape {
        elem_bytes,
        components,
    };
    // f64, a 3-component f32 vector, 4 bytes, a complex f64 (moved in 4-byte words); and a
    // 3-component f16, a lone byte, an f64 (moved byte by byte): one message per neighbour;
    // every byte of every halo cell must be its mirror's.
    let configurations = [
        vec![shape(8, 1), shape(4, 3), shape(1, 4), shape(16, 1)],
        vec![shape(2, 3), shape(1, 1), shape(8, 1)],
    ];
    for (shapes, transport) in configurations
        .iter()
        .flat_map(|c| [(c, TransportKind::Mpi), (c, TransportKind::Ipc)])
    {
        let mut s = spec([4 * world.size() as u64, 5, 3], [true, true, false]);
        s.fields = shapes.len() as u32;
        s.layout = Layout {
            fields: Some(shapes.to_vec()),
            pad: [1, 0, 1],
            ..Layout::default()
        };
        let options = HaloOptions {
            transport,
            ..HaloOptions::default()
        };
        let mut exchange =
            HaloExchange::new(backend, world, &s, options).map_err(|e| e.to_string())?;
        let plan = exchange.plan().clone();
        let d = &plan.decomposition;
        let g = s.grid;
        // A byte of cell `c` (global, wrapped where periodic) of field `f`.
        let byte = |c: [i64; 3], f: usize, b: usize| -> Option<u8> {
            let mut w = [0_i64; 3];
            for k in 0..3 {
                w[k] = if s.periodic[k] {
                    c[k].rem_euclid(g[k] as i64)
                } else {
                    c[k]
                };
                if !(0..g[k] as i64).contains(&w[k]) {
                    return None;
                }
            }
            let i = w[0] + g[0] as i64 * (w[1] + g[1] as i64 * w[2]);
            Some((i as usize * 31 + f * 7 + b * 3 + 1) as u8)
        };
        let interior =
            |at: [u64; 3]| (0..3).all(|k| at[k] >= d.halo[k] && at[k] < d.halo[k] + d.local[k]);
        let stream = backend.create_stream().map_err(|e| e.to_string())?;
        let mut cell_bytes = Vec::new();
        let mut fields = Vec::new();
        for (f, sh) in shapes.iter().enumerate() {
            let cb = sh.cell_bytes() as usize;
            let field = Field::alloc_field(backend, &plan, f).map_err(|e| e.to_string())?;
            let mut bytes = vec![0xEE_u8; d.alloc_elems() as usize * cb];
            for z in 0..d.alloc[2] {
                for y in 0..d.alloc[1] {
                    for x in 0..d.alloc[0] {
                        let at = [x, y, z];
                        if interior(at) {
                            let i = d.index(at) as usize * cb;
                            for b in 0..cb {
                                bytes[i + b] = byte(d.global_of(at), f, b).unwrap_or(0);
                            }
                        }
                    }
                }
            }
            let memory = field.device_memory().ok_or("an allocated field")?;
            upload_bytes(backend, memory, &bytes, &stream, deadline())
                .map_err(|e| e.to_string())?;
            fields.push(field);
            cell_bytes.push(cb);
        }
        let refs: Vec<&Field<HostBackend>> = fields.iter().collect();
        exchange
            .exchange(&refs, &stream)
            .map_err(|e| e.to_string())?;
        for (f, field) in fields.iter().enumerate() {
            let cb = cell_bytes[f];
            let memory = field.device_memory().ok_or("an allocated field")?;
            let got = download_bytes(
                backend,
                memory,
                d.alloc_elems() as usize * cb,
                &stream,
                deadline(),
            )
            .map_err(|e| e.to_string())?;
            for z in 0..d.alloc[2] {
                for y in 0..d.alloc[1] {
                    for x in 0..d.alloc[0] {
                        let at = [x, y, z];
                        if interior(at) {
                            continue;
                        }
                        let padding =
                            (0..3).any(|k| at[k] >= d.halo[k] + d.local[k] + d.halo_hi[k]);
                        let i = d.index(at) as usize * cb;
                        for b in 0..cb {
                            let want = if padding {
                                0xEE
                            } else {
                                byte(d.global_of(at), f, b).unwrap_or(0xEE)
                            };
                            if got[i + b] != want {
                                return Err(format!(
                                    "{transport:?}: field {f} cell {at:?} byte {b}: {} (expected {want})",
                                    got[i + b]
                                ));
                            }
                        }
                    }
                }
            }
        }
        exchange.close().map_err(|e| e.to_string())?;
    }
    // An element size no type has is refused, alike on every rank.
    let mut s = spec([4 * world.size() as u64, 5, 3], [true, true, false]);
    s.layout.fields = Some(vec![shape(3, 1)]);
    match HaloExchange::new(backend, world, &s, HaloOptions::default()) {
        Err(Error::InvalidInput(m)) if m.contains("elements are 1, 2, 4, 8 or 16 bytes") => Ok(()),
        Err(e) => Err(format!("3-byte elements gave another error: {e}")),
        Ok(_) => Err("3-byte elements were accepted".into()),
    }
}

fn communicators(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    let size = world.size();
    let periodic = [true, false, true];
    // Cartesian, reordered: the decomposition follows its topology.
    let cart = world
        .create_cartesian_communicator(&[size, 1, 1], &periodic, true)
        .ok_or("not in the Cartesian communicator")?;
    let s = spec([4 * size as u64, 5, 3], periodic);
    let mut exchange =
        HaloExchange::new(backend, &cart, &s, HaloOptions::default()).map_err(|e| e.to_string())?;
    let coords = cart.rank_to_coordinates(cart.rank());
    if exchange.plan().decomposition.coords[0] as i32 != coords[0] {
        return Err(format!(
            "the plan's coordinates {:?} are not the communicator's {coords:?}",
            exchange.plan().decomposition.coords
        ));
    }
    if !exchange_is_right(backend, &mut exchange)? {
        return Err("wrong halos over the Cartesian communicator".into());
    }
    exchange.close().map_err(|e| e.to_string())?;
    // A declaration that contradicts the topology: the same error on every rank.
    let wrong = spec([4 * size as u64, 5, 3], [false, false, true]);
    match HaloExchange::new(backend, &cart, &wrong, HaloOptions::default()) {
        Err(Error::InvalidInput(m)) if m.contains("differs from the Cartesian communicator") => {}
        Err(e) => return Err(format!("the wrong periodicity gave another error: {e}")),
        Ok(_) => return Err("the wrong periodicity was accepted".into()),
    }
    // A raw MPI_Comm (a split of the world, reversed), borrowed: haloport works on its own
    // duplicate and never frees it, so the split is still usable afterwards.
    let split = world
        .split_by_color_with_key(Color::with_value(0), size - world.rank())
        .ok_or("not in the split")?;
    let s = spec([3 * size as u64, 4, 4], [true, true, true]);
    // SAFETY: a valid intra-communicator, alive during the call; every rank calls.
    let mut exchange =
        unsafe { HaloExchange::with_raw_comm(backend, split.as_raw(), &s, HaloOptions::default()) }
            .map_err(|e| e.to_string())?;
    if !exchange_is_right(backend, &mut exchange)? {
        return Err("wrong halos over a raw MPI_Comm".into());
    }
    exchange.close().map_err(|e| e.to_string())?;
    split.barrier(); // still a live communicator
    Ok(())
}

/// An `ipc` exchange over every rank in which every rank drops its +x message, so every
/// rank's -x unpack waits on the device (or, from another "node", on the CPU) and gives up
/// after 0.5 s; `checked` as given.
fn failing_exchange<'b>(
    backend: &'b HostBackend,
    world: &SimpleCommunicator,
    checked: bool,
) -> Result<HaloExchange<'b, HostBackend>, String> {
    let options = HaloOptions {
        transport: TransportKind::Ipc,
        timeout: Duration::from_millis(500),
        fault: Some(HaloFault::DropSend {
            direction: [1, 0, 0],
        }),
        checked,
        ..HaloOptions::default()
    };
    let s = spec([4 * world.size() as u64, 4, 4], [true, true, true]);
    HaloExchange::new(backend, world, &s, options).map_err(|e| e.to_string())
}

fn device_failure(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    let mut exchange = failing_exchange(backend, world, false)?;
    let plan = exchange.plan().clone();
    let field = Field::alloc(backend, &plan).map_err(|e| e.to_string())?;
    let stream = backend.create_stream().map_err(|e| e.to_string())?;
    // A host-staged message (between "nodes") times out on the CPU, in finish; a
    // device-direct one only on the device, after start and finish returned: the next start
    // must report it.
    let mut report = exchange
        .start(&[&field], &stream)
        .and_then(|()| exchange.finish(&stream));
    if report.is_ok() {
        std::thread::sleep(Duration::from_millis(1500));
        report = exchange.start(&[&field], &stream);
    }
    match report {
        Err(Error::Timeout { .. }) => {}
        other => {
            return Err(format!(
                "the failure was not reported as a time-out: {other:?}"
            ))
        }
    }
    // Every later call returns a time-out again (the kind kept).
    match exchange.start(&[&field], &stream) {
        Err(Error::Timeout { what, .. }) if what.contains("failed earlier") => {}
        other => return Err(format!("a later call returned {other:?}")),
    }
    match exchange.wait() {
        Err(Error::Timeout { .. }) => {}
        other => return Err(format!("wait after the failure returned {other:?}")),
    }
    drop(exchange);
    world.barrier();
    Ok(())
}

fn checked_finish(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    // As `device_failure`, in checked mode: `finish` itself waits for its unpack and reports.
    let mut exchange = failing_exchange(backend, world, true)?;
    let field = Field::alloc(backend, exchange.plan()).map_err(|e| e.to_string())?;
    let stream = backend.create_stream().map_err(|e| e.to_string())?;
    exchange
        .start(&[&field], &stream)
        .map_err(|e| format!("start: {e}"))?;
    match exchange.finish(&stream) {
        Err(Error::Timeout { .. }) => {}
        other => return Err(format!("a checked finish returned {other:?}")),
    }
    drop(exchange);
    world.barrier();
    Ok(())
}

fn graph_refusals(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    let stream = backend.create_stream().map_err(|e| e.to_string())?;
    let s = spec([4 * world.size() as u64, 4, 4], [true, true, true]);
    // Host-staged neighbours cannot be captured: refused, naming one (a rank and a direction).
    let mut staged =
        HaloExchange::new(backend, world, &s, HaloOptions::default()).map_err(|e| e.to_string())?;
    match staged.begin_capture(&stream) {
        Err(Error::InvalidInput(m)) if m.contains("host-staged") && m.contains("with rank ") => {}
        other => return Err(format!("capturing host-staged messages returned {other:?}")),
    }
    match staged.end_capture(&stream) {
        Err(Error::Usage(m)) if m.contains("without begin_capture") => {}
        other => return Err(format!("end_capture without a capture returned {other:?}")),
    }
    // Device-direct neighbours can be, but the host backend has no graphs: refused by the
    // backend (with 3 ranks on two "nodes", every rank has a host-staged neighbour too), and
    // the exchange still works.
    let options = HaloOptions {
        transport: TransportKind::Ipc,
        ..HaloOptions::default()
    };
    let mut direct = HaloExchange::new(backend, world, &s, options).map_err(|e| e.to_string())?;
    let some_staged = direct.links().contains(&Link::Staged);
    match (direct.begin_capture(&stream), some_staged) {
        (
            Err(Error::Unsupported {
                backend: "host",
                what,
            }),
            false,
        ) if what.contains("graphs") => {}
        (Err(Error::InvalidInput(m)), true) if m.contains("host-staged") => {}
        other => return Err(format!("capturing on the host backend returned {other:?}")),
    }
    if !exchange_is_right(backend, &mut direct)? || !exchange_is_right(backend, &mut staged)? {
        return Err("wrong halos after a refused capture".into());
    }
    drop((staged, direct));
    world.barrier();
    Ok(())
}

fn symmetric_close(backend: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    // Two "nodes" of 2 ranks (HALOPORT_IPC_RANKS_PER_NODE=2): with 3 ranks, rank 2 has no
    // device-direct link, yet every rank enters the closing barrier and none times out
    // (generous: a loaded CI machine runs three ranks on two cores).
    let options = HaloOptions {
        transport: TransportKind::Ipc,
        timeout: Duration::from_secs(10),
        ..HaloOptions::default()
    };
    let s = spec([4 * world.size() as u64, 4, 4], [true, false, false]);
    let mut exchange = HaloExchange::new(backend, world, &s, options).map_err(|e| e.to_string())?;
    if !exchange_is_right(backend, &mut exchange)? {
        return Err("wrong halos over mixed links".into());
    }
    let started = Instant::now();
    exchange
        .close()
        .map_err(|e| format!("close after {:?}: {e}", started.elapsed()))
}

/// The gathers after a run: with every rank, every value arrives; where the last rank stays
/// away, the others give up after their deadline with a time-out naming the gather. On a
/// duplicate of the world, leaked at the end: the skipped collective stays pending on it.
fn bounded_gathers(_: &HostBackend, world: &SimpleCommunicator) -> Result<(), String> {
    use haloport::core::collective::{all_gather_until, receive_until, send_until};
    let comm = world.duplicate();
    let (rank, last) = (comm.rank(), comm.size() - 1);
    let on_error = |r: i32, m: String| Error::InvalidInput(format!("rank {r}: {m}"));
    let all = all_gather_until(&comm, Ok(rank * 10), on_error, deadline(), "all ranks")
        .map_err(|e| e.to_string())?;
    let want: Vec<i32> = (0..comm.size()).map(|r| r * 10).collect();
    if all != want {
        return Err(format!("gathered {all:?}, expected {want:?}"));
    }
    if rank == 1 {
        send_until(&comm, 0, vec![1, 2, 3], deadline(), "to rank 0").map_err(|e| e.to_string())?;
    }
    if rank == 0 {
        let got =
            receive_until(&comm, 1, 3, deadline(), "from rank 1").map_err(|e| e.to_string())?;
        if got != [1, 2, 3] {
            return Err(format!("received {got:?}, expected [1, 2, 3]"));
        }
    }
    let soon = || Instant::now() + Duration::from_millis(300);
    let timed_out = |result: Result<(), Error>, what: &str| match result {
        Err(Error::Timeout { what: said, .. }) if said.contains(what) => Ok(()),
        other => Err(format!(
            "{what}: expected a time-out naming it, got {other:?}"
        )),
    };
    if rank != last {
        let skipped = all_gather_until(&comm, Ok(rank), on_error, soon(), "the skipped gather");
        timed_out(skipped.map(drop), "the skipped gather")?;
    }
    if rank == 0 {
        let unsent = receive_until(&comm, last, 8, soon(), "the message never sent");
        timed_out(unsent.map(drop), "the message never sent")?;
    }
    // Pending requests name it (and their leaked buffers): it must never be freed.
    std::mem::forget(comm);
    world.barrier();
    Ok(())
}
