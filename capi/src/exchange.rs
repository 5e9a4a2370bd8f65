//! The exchange handle: a declaration compiled for this rank of the caller's communicator,
//! run on the caller's fields and streams.

use std::ffi::{c_char, c_void, CString};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use haloport::core::halo::routes::Locality;
use haloport::core::halo::{HaloOptions, Link};
use haloport::foreign::{
    check_mpi, mpi_finalized, mpi_initialized, mpi_library_version, ForeignExchange, ForeignGraph,
    RawField, RawStream,
};

use crate::backend::BACKEND;
use crate::domain::DOMAIN;
use crate::handles::{null, read_array, write3, write_out, AtExit, Kind, Table};
use crate::options::OPTIONS_KIND;
use crate::status::{entry, Failure, HaloportStatus, Outcome};
use crate::{MPI_Comm, MPI_Fint};

/// A halo exchange: made (collectively) with `haloport_exchange_new`, run with
/// `haloport_exchange_exchange` or `_start` / `_finish` / `_wait`, ended with
/// `haloport_exchange_free`.
pub struct HaloportExchange {
    _opaque: [u8; 0],
}

/// A graph of captured exchanges: made by `haloport_exchange_end_capture`, replayed with
/// `haloport_exchange_replay`, freed with `haloport_graph_free`.
pub struct HaloportGraph {
    _opaque: [u8; 0],
}

/// One field of an exchange: the caller's allocation (halos and padding included).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HaloportField {
    /// The allocation's first cell: device memory of the backend's device (`cudaMalloc`,
    /// `hipMalloc`), host memory on the host backend.
    pub data: *mut c_void,
    /// Bytes allocated at `data`: at least `haloport_exchange_field_bytes`.
    pub bytes: usize,
}

/// How one neighbour's messages travel.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportLink {
    /// The neighbour is this rank (a periodic dimension of one process).
    Local = 0,
    /// Host-staged through MPI.
    Staged = 1,
    /// Device-direct into the neighbour's memory (IPC).
    Direct = 2,
    /// Through GPU-aware MPI, from device memory.
    DeviceMpi = 3,
    /// Through NCCL (RCCL).
    Nccl = 4,
}

impl From<Link> for HaloportLink {
    fn from(link: Link) -> HaloportLink {
        match link {
            Link::Local => HaloportLink::Local,
            Link::Staged => HaloportLink::Staged,
            Link::Direct => HaloportLink::Direct,
            Link::DeviceMpi => HaloportLink::DeviceMpi,
            Link::Nccl => HaloportLink::Nccl,
        }
    }
}

/// Where a neighbour is, seen from this rank.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloportLocality {
    /// The neighbour is this rank (a periodic dimension of one process).
    Itself = 0,
    /// Another rank on this rank's node.
    SameNode = 1,
    /// A rank on another node.
    OtherNode = 2,
    /// Another rank, not asked where (the `mpi` and `nccl` transports do not look).
    NotAsked = 3,
}

impl From<Locality> for HaloportLocality {
    fn from(locality: Locality) -> HaloportLocality {
        match locality {
            Locality::Itself => HaloportLocality::Itself,
            Locality::SameNode => HaloportLocality::SameNode,
            Locality::OtherNode => HaloportLocality::OtherNode,
            Locality::NotAsked => HaloportLocality::NotAsked,
        }
    }
}

/// An exchange as C holds it: the exchange, and the texts `haloport_exchange_route` lends out
/// (alive, at fixed addresses, until the exchange is freed).
pub(crate) struct CExchange {
    exchange: ForeignExchange,
    /// Each neighbour's route explained, in the plan's order.
    route_why: Vec<CString>,
}

impl CExchange {
    fn new(exchange: ForeignExchange) -> CExchange {
        let route_why = exchange
            .route_choices()
            .iter()
            .map(|c| CString::new(c.explained().replace('\0', " ")).unwrap_or_default())
            .collect();
        CExchange {
            exchange,
            route_why,
        }
    }
}

impl Deref for CExchange {
    type Target = ForeignExchange;

    fn deref(&self) -> &ForeignExchange {
        &self.exchange
    }
}

impl DerefMut for CExchange {
    fn deref_mut(&mut self) -> &mut ForeignExchange {
        &mut self.exchange
    }
}

thread_local! {
    static EXCHANGES: Table<CExchange> = Table::new("exchange", AtExit::LeaveAndSay);
    static GRAPHS: Table<ForeignGraph> = Table::new("graph", AtExit::LeaveAndSay);
}

pub(crate) const EXCHANGE: Kind<CExchange> = Kind {
    table: &EXCHANGES,
    name: "exchange",
};

const GRAPH: Kind<ForeignGraph> = Kind {
    table: &GRAPHS,
    name: "graph",
};

/// Compiles `domain` for this rank of `comm` and sets the exchange up (buffers, and with
/// `ipc` the same-node peers' memory). Collective over `comm`: every rank calls it with the
/// same declaration and options. `comm` is borrowed (haloport works on its own duplicate and
/// never frees it); a Cartesian communicator's dimensions become the process grid. `options`
/// may be NULL for the defaults.
///
/// Errors, the same on every rank: `HALOPORT_STATUS_INVALID_INPUT` for a declaration that
/// does not fit the job or differs between ranks, MPI not initialized, `MPI_COMM_NULL`; a rank
/// whose own set-up step failed returns its error, the others `HALOPORT_STATUS_OTHER_RANK`.
#[no_mangle]
pub extern "C" fn haloport_exchange_new(
    backend: *mut crate::HaloportBackend,
    comm: MPI_Comm,
    domain: *const crate::HaloportDomain,
    options: *const crate::HaloportOptions,
    out: *mut *mut HaloportExchange,
) -> HaloportStatus {
    entry("haloport_exchange_new", || {
        new_exchange(backend, comm, domain, options, out)
    })
}

/// `haloport_exchange_new` for Fortran: `comm` is the communicator's Fortran handle (an
/// `INTEGER`, or `comm%MPI_VAL` of `TYPE(MPI_Comm)`), converted with `MPI_Comm_f2c`.
#[no_mangle]
pub extern "C" fn haloport_exchange_new_f(
    backend: *mut crate::HaloportBackend,
    comm: MPI_Fint,
    domain: *const crate::HaloportDomain,
    options: *const crate::HaloportOptions,
    out: *mut *mut HaloportExchange,
) -> HaloportStatus {
    entry("haloport_exchange_new_f", || {
        mpi_running()?;
        // SAFETY: MPI is initialized; MPI_Comm_f2c accepts any integer (an invalid one gives
        // MPI_COMM_NULL or an invalid handle, which MPI_Comm_dup then reports).
        let comm = unsafe { mpi::ffi::RSMPI_Comm_f2c(comm) };
        new_exchange(backend, comm, domain, options, out)
    })
}

fn new_exchange(
    backend: *mut crate::HaloportBackend,
    comm: MPI_Comm,
    domain: *const crate::HaloportDomain,
    options: *const crate::HaloportOptions,
    out: *mut *mut HaloportExchange,
) -> Outcome {
    if out.is_null() {
        return Err(null("the exchange out-parameter"));
    }
    let backend = BACKEND.with(backend, |b| Ok(Arc::clone(b)))?;
    let spec = DOMAIN.with(domain, |d| d.spec())?;
    let options = if options.is_null() {
        HaloOptions::default()
    } else {
        OPTIONS_KIND.with(options, |o| Ok(*o))?
    };
    check_mpi(comm, None)?;
    // SAFETY: MPI is initialized; the header asks for a valid communicator that every rank
    // passes; haloport keeps only its own duplicate.
    let exchange = unsafe { ForeignExchange::new(backend, comm, &spec, options)? };
    EXCHANGE.insert(CExchange::new(exchange), out)
}

/// Refuses calls before `MPI_Init` or after `MPI_Finalize`, which MPI itself would abort on.
fn mpi_running() -> Outcome {
    if mpi_finalized() || !mpi_initialized() {
        return Err(Failure::invalid(format!(
            "MPI is not running in the MPI library haloport was built against ('{}'): call MPI_Init (or MPI_Init_thread) first, and MPI_Finalize only after haloport_exchange_free",
            mpi_library_version()
        )));
    }
    Ok(())
}

/// Ends the exchange: waits (bounded) for its last kernels, meets the other ranks with `ipc`
/// (collective then), frees its memory; the handle is dead afterwards, whatever the status.
/// NULL is allowed and does nothing. After `MPI_Finalize`, and for a handle whose call failed
/// inside haloport, nothing is torn down: the exchange is left to the process's exit with one
/// line on standard error. An exchange never freed is left so at its thread's exit.
#[no_mangle]
pub extern "C" fn haloport_exchange_free(exchange: *mut HaloportExchange) -> HaloportStatus {
    entry("haloport_exchange_free", || {
        if exchange.is_null() {
            return Ok(());
        }
        match EXCHANGE.remove(exchange)? {
            Ok(exchange) => Ok(exchange.exchange.close()?),
            Err(failed) => {
                haloport::foreign::log_line(
                    "an exchange whose call failed inside haloport was freed: left to the process's exit, not torn down",
                );
                std::mem::forget(failed);
                Ok(())
            }
        }
    })
}

/// Reads the caller's field array, once its length was compared with the declaration.
///
/// # Safety
/// `fields` is NULL or points to `count` readable values.
unsafe fn raw_fields(
    e: &ForeignExchange,
    fields: *const HaloportField,
    count: usize,
) -> Outcome<Vec<RawField>> {
    let declared = e.plan().spec.fields as usize;
    if count != declared {
        return Err(Failure::invalid(format!(
            "the exchange was declared with {declared} fields, {count} were given"
        )));
    }
    // SAFETY: forwarded; `count` is the declaration's, which the caller's array holds.
    let fields = unsafe { read_array(fields, count, "fields")? };
    Ok(fields
        .iter()
        .map(|f| RawField {
            addr: f.data as u64,
            bytes: f.bytes,
        })
        .collect())
}

/// Starts an exchange of the `count` fields (in the domain's order) on `stream` (a
/// `cudaStream_t` / `hipStream_t`; NULL: the default stream; ignored on the host backend):
/// queues the pack after the work queued on `stream` before, and sends. Work queued on
/// `stream` before `haloport_exchange_finish` must not write the cells sent nor touch halo
/// cells. On the host backend it returns once the pack is done.
///
/// The fields and the stream stay alive until `haloport_exchange_wait` (or `_run`) returned.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` for a field count, NULL or misaligned field or
/// size that does not fit the declaration; `HALOPORT_STATUS_USAGE` when already started; an
/// earlier exchange's failure on the device (`HALOPORT_STATUS_TIMEOUT`).
#[no_mangle]
pub extern "C" fn haloport_exchange_start(
    exchange: *mut HaloportExchange,
    fields: *const HaloportField,
    count: usize,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_start", || {
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the header asks for `count` fields.
            let fields = unsafe { raw_fields(e, fields, count)? };
            // SAFETY: the fields' and stream's contract is this function's (the header).
            unsafe { e.start(&fields, RawStream(stream as usize)) }.map_err(Into::into)
        })
    })
}

/// Finishes the started exchange: receives and queues the unpack on `stream` (NULL: the
/// default stream); work queued on `stream` afterwards sees the halos filled. On the host
/// backend it returns once the halos are filled.
///
/// Errors: `HALOPORT_STATUS_USAGE` without a started exchange; time-outs and MPI errors.
#[no_mangle]
pub extern "C" fn haloport_exchange_finish(
    exchange: *mut HaloportExchange,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_finish", || {
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the stream's contract is this function's (the header).
            unsafe { e.finish(RawStream(stream as usize)) }.map_err(Into::into)
        })
    })
}

/// Waits until the last exchange's kernels completed and reports what their waits on the
/// device ended in; afterwards its fields may be freed.
///
/// Errors: `HALOPORT_STATUS_TIMEOUT` naming the messages a wait gave up on.
#[no_mangle]
pub extern "C" fn haloport_exchange_wait(exchange: *mut HaloportExchange) -> HaloportStatus {
    entry("haloport_exchange_wait", || {
        EXCHANGE.with(exchange, |e| Ok(e.wait()?))
    })
}

/// One whole exchange: start, finish and wait. When it returns `HALOPORT_STATUS_OK`, every
/// field's halo cells hold their neighbours' values. Errors: as `haloport_exchange_start`.
#[no_mangle]
pub extern "C" fn haloport_exchange_exchange(
    exchange: *mut HaloportExchange,
    fields: *const HaloportField,
    count: usize,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_exchange", || {
        whole(exchange, fields, count, stream)
    })
}

/// The former name of `haloport_exchange_exchange`, kept for programs written against it.
#[deprecated(note = "call haloport_exchange_exchange")]
#[no_mangle]
pub extern "C" fn haloport_exchange_run(
    exchange: *mut HaloportExchange,
    fields: *const HaloportField,
    count: usize,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_run", || {
        whole(exchange, fields, count, stream)
    })
}

fn whole(
    exchange: *mut HaloportExchange,
    fields: *const HaloportField,
    count: usize,
    stream: *mut c_void,
) -> Outcome {
    EXCHANGE.with(exchange, |e| {
        // SAFETY: the header asks for `count` fields.
        let fields = unsafe { raw_fields(e, fields, count)? };
        // SAFETY: the fields' and stream's contract is this function's (the header).
        unsafe { e.exchange(&fields, RawStream(stream as usize)) }.map_err(Into::into)
    })
}

/// Begins capturing whole exchanges on `stream` (a `cudaStream_t` / `hipStream_t`, not the
/// default stream) into a graph: until `haloport_exchange_end_capture`, `_start` and `_finish`
/// on `stream`, and the application's kernels queued on it, are recorded, not run. Capture an
/// even number of exchanges (the receive slots alternate; a Jacobi code captures two steps).
/// Waits first for every kernel of earlier exchanges.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` naming the first neighbour whose messages go
/// through MPI (only device-direct, NCCL and local neighbours can be captured); `HALOPORT_STATUS_DEVICE` on the host backend (no graphs);
/// `HALOPORT_STATUS_USAGE` while capturing or between `_start` and `_finish`.
#[no_mangle]
pub extern "C" fn haloport_exchange_begin_capture(
    exchange: *mut HaloportExchange,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_begin_capture", || {
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the stream's contract is this function's (the header).
            unsafe { e.begin_capture(RawStream(stream as usize)) }.map_err(Into::into)
        })
    })
}

/// Ends the capture begun on `stream` (call it also after an error inside the capture) and
/// writes the graph to `out`; nothing captured has run. The fields captured stay allocated
/// while the graph may be replayed; free the graph with `haloport_graph_free`.
///
/// Errors: `HALOPORT_STATUS_USAGE` without a capture, an odd number of exchanges, or a capture
/// ended between `_start` and `_finish`; the error of a call inside the capture.
#[no_mangle]
pub extern "C" fn haloport_exchange_end_capture(
    exchange: *mut HaloportExchange,
    stream: *mut c_void,
    out: *mut *mut HaloportGraph,
) -> HaloportStatus {
    entry("haloport_exchange_end_capture", || {
        if out.is_null() {
            return Err(null("the graph out-parameter"));
        }
        let graph = EXCHANGE.with(exchange, |e| {
            // SAFETY: the stream's contract is this function's (the header).
            unsafe { e.end_capture(RawStream(stream as usize)) }.map_err(Failure::from)
        })?;
        GRAPH.insert(graph, out)
    })
}

/// Queues one replay of `graph` (captured from this exchange) on `stream`: its exchanges run,
/// each a new one, in one launch. `haloport_exchange_wait` waits for it.
///
/// Errors: `HALOPORT_STATUS_USAGE` for a graph of another exchange, while capturing, between
/// `_start` and `_finish`, or after an odd number of exchanges outside the graph since its
/// capture.
#[no_mangle]
pub extern "C" fn haloport_exchange_replay(
    exchange: *mut HaloportExchange,
    graph: *mut HaloportGraph,
    stream: *mut c_void,
) -> HaloportStatus {
    entry("haloport_exchange_replay", || {
        GRAPH.with(graph, |g| {
            EXCHANGE.with(exchange, |e| {
                // SAFETY: the stream's and the captured fields' contract is this function's.
                unsafe { e.replay(g, RawStream(stream as usize)) }.map_err(Into::into)
            })
        })
    })
}

/// Frees a graph. NULL is allowed and does nothing.
#[no_mangle]
pub extern "C" fn haloport_graph_free(graph: *mut HaloportGraph) -> HaloportStatus {
    entry("haloport_graph_free", || {
        if graph.is_null() {
            return Ok(());
        }
        GRAPH.free(graph)
    })
}

/// This rank's part of the grid: its interior extents `local[3]` and the global index of its
/// first interior cell `origin[3]`. Either may be NULL.
#[no_mangle]
pub extern "C" fn haloport_exchange_local(
    exchange: *const HaloportExchange,
    local: *mut u64,
    origin: *mut u64,
) -> HaloportStatus {
    entry("haloport_exchange_local", || {
        EXCHANGE.with(exchange, |e| {
            let d = &e.plan().decomposition;
            // SAFETY: the header asks for 3 writable values each, or NULL.
            unsafe {
                write3(local, d.local);
                write3(origin, d.origin);
            }
            Ok(())
        })
    })
}

/// How this rank's fields lie in memory, per dimension (x fastest): the allocated extents
/// `alloc[3]` (`halo_lo + local + halo_hi + pad`), the low halo widths `halo_lo[3]` (where the
/// interior starts), the high halo widths `halo_hi[3]` and the padding after them `pad[3]`.
/// Cell (i, j, k) of the interior is element
/// `((halo_lo[2] + k) * alloc[1] + halo_lo[1] + j) * alloc[0] + halo_lo[0] + i`, times the
/// field's components. Any of them may be NULL.
#[no_mangle]
pub extern "C" fn haloport_exchange_allocation(
    exchange: *const HaloportExchange,
    alloc: *mut u64,
    halo_lo: *mut u64,
    halo_hi: *mut u64,
    pad: *mut u64,
) -> HaloportStatus {
    entry("haloport_exchange_allocation", || {
        EXCHANGE.with(exchange, |e| {
            let a = e.allocation();
            // SAFETY: the header asks for 3 writable values each, or NULL.
            unsafe {
                write3(alloc, a.alloc);
                write3(halo_lo, a.halo_lo);
                write3(halo_hi, a.halo_hi);
                write3(pad, a.pad);
            }
            Ok(())
        })
    })
}

/// The process grid `procs[3]` and this rank's coordinates in it `coords[3]`. Either may be
/// NULL.
#[no_mangle]
pub extern "C" fn haloport_exchange_process_grid(
    exchange: *const HaloportExchange,
    procs: *mut u32,
    coords: *mut u32,
) -> HaloportStatus {
    entry("haloport_exchange_process_grid", || {
        EXCHANGE.with(exchange, |e| {
            let d = &e.plan().decomposition;
            // SAFETY: the header asks for 3 writable values each, or NULL.
            unsafe {
                write3(procs, d.procs);
                write3(coords, d.coords);
            }
            Ok(())
        })
    })
}

/// Bytes field `field` (0-based, in the domain's order) must have allocated.
#[no_mangle]
pub extern "C" fn haloport_exchange_field_bytes(
    exchange: *const HaloportExchange,
    field: usize,
    bytes: *mut usize,
) -> HaloportStatus {
    entry("haloport_exchange_field_bytes", || {
        EXCHANGE.with(exchange, |e| {
            let needed = usize::try_from(e.field_bytes(field)?)
                .map_err(|_| Failure::invalid("the field's size does not fit a size_t"))?;
            // SAFETY: the header asks for a writable value.
            unsafe { write_out(bytes, needed, "bytes") }
        })
    })
}

/// How many neighbours this rank exchanges with (at most 26).
#[no_mangle]
pub extern "C" fn haloport_exchange_neighbour_count(
    exchange: *const HaloportExchange,
    count: *mut usize,
) -> HaloportStatus {
    entry("haloport_exchange_neighbour_count", || {
        EXCHANGE.with(exchange, |e| {
            // SAFETY: the header asks for a writable value.
            unsafe { write_out(count, e.plan().neighbours.len(), "count") }
        })
    })
}

/// Neighbour `index` (below `haloport_exchange_neighbour_count`): its direction `direction[3]`
/// (each -1, 0 or 1), its rank in the communicator, and how its messages travel (`link`). Any
/// out-parameter may be NULL.
#[no_mangle]
pub extern "C" fn haloport_exchange_neighbour(
    exchange: *const HaloportExchange,
    index: usize,
    direction: *mut i32,
    rank: *mut i32,
    link: *mut HaloportLink,
) -> HaloportStatus {
    entry("haloport_exchange_neighbour", || {
        EXCHANGE.with(exchange, |e| {
            let neighbours = &e.plan().neighbours;
            let n = neighbours.get(index).ok_or_else(|| {
                Failure::invalid(format!(
                    "neighbour {index}: this rank has {} neighbours",
                    neighbours.len()
                ))
            })?;
            let travels = e
                .links()
                .get(index)
                .map_or(HaloportLink::Staged, |&l| l.into());
            // SAFETY: the header asks for writable values, or NULL.
            unsafe {
                write3(direction, n.direction.map(i32::from));
                if !rank.is_null() {
                    rank.write(n.rank);
                }
                if !link.is_null() {
                    link.write(travels);
                }
            }
            Ok(())
        })
    })
}

/// Neighbour `index`'s route (below `haloport_exchange_neighbour_count`, in the same order as
/// `haloport_exchange_neighbour`): where the neighbour is (`locality`), how its messages travel
/// (`link`, as `haloport_exchange_neighbour` gives it) and why (`why`: a NUL-terminated line
/// such as "same node; routes given: the first of [mpi, ipc] that serves it", followed by
/// " (passed over nccl: ...; gpu-mpi: ...)" where preferred routes could not serve the link).
/// The `why` string belongs to the exchange and stays valid until `haloport_exchange_free`.
/// Any out-parameter may be NULL.
///
/// Errors: `HALOPORT_STATUS_INVALID_INPUT` for an `index` beyond the neighbours.
#[no_mangle]
pub extern "C" fn haloport_exchange_route(
    exchange: *const HaloportExchange,
    index: usize,
    locality: *mut HaloportLocality,
    link: *mut HaloportLink,
    why: *mut *const c_char,
) -> HaloportStatus {
    entry("haloport_exchange_route", || {
        EXCHANGE.with(exchange, |e| {
            let choices = e.route_choices();
            let (choice, text) =
                choices
                    .get(index)
                    .zip(e.route_why.get(index))
                    .ok_or_else(|| {
                        Failure::invalid(format!(
                            "neighbour {index}: this rank has {} neighbours",
                            choices.len()
                        ))
                    })?;
            // SAFETY: the header asks for writable values, or NULL.
            unsafe {
                if !locality.is_null() {
                    locality.write(choice.locality.into());
                }
                if !link.is_null() {
                    link.write(choice.link.into());
                }
                if !why.is_null() {
                    why.write(text.as_ptr());
                }
            }
            Ok(())
        })
    })
}
