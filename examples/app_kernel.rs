//! A Jacobi solver whose update is the application's own kernel, launched on the application's
//! own stream, on a Cartesian communicator of its own, with haloport exchanging the halos of
//! the application's own allocations between `start` and `finish`. Verified bit-for-bit
//! against one rank computing the whole grid with the same kernel.
//!
//! ```text
//! cargo build --release --example app_kernel                  # host backend (no GPU)
//! mpirun -np 4 target/release/examples/app_kernel
//! cargo build --release --features cuda --example app_kernel  # NVIDIA GPUs
//! mpirun -np 2 target/release/examples/app_kernel --backend cuda --transport ipc
//! ```
//!
//! What haloport does not own here, the application does:
//! - the stream: on CUDA a cudarc stream, adopted with `CudaStream::from_raw` (haloport never
//!   destroys it); on the host backend a stream whose work the application queues with
//!   `HostStream::enqueue`, as it would launch a kernel;
//! - the kernel: on CUDA a 7-point average compiled by NVRTC at run time and launched with
//!   cudarc; on the host backend the same arithmetic in a closure;
//! - the fields: cudarc allocations (CUDA) or boxed slices (host), adopted with `Field::adopt`;
//! - the communicator: `MPI_Cart_create` with `reorder = true`, whose topology haloport follows.
//!
//! The time per step is measured as `examples/cuda/jacobi.cu` measures it: after a warm-up step
//! (the exchange's first use of a field builds its region tables; NVRTC and module loading are
//! done before), from a barrier to the synchronization of the application's stream after the
//! last step; set-up and the download of the result are outside it.

use std::cell::RefCell;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use haloport::core::domain::{dims_create, Decomposition, DomainSpec, ElemType};
use haloport::core::halo::{Field, HaloExchange, HaloOptions};
use haloport::core::transport::TransportKind;
use haloport::{Backend, Error, Result};
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

#[derive(Parser)]
struct Args {
    /// host, or cuda (needs a build with `--features cuda`).
    #[arg(long, default_value = "host")]
    backend: String,
    /// mpi (host-staged) or ipc (device-direct between ranks of a node).
    #[arg(long, default_value = "mpi")]
    transport: String,
    /// Global grid, XxYxZ.
    #[arg(long, default_value = "40x36x32")]
    grid: String,
    /// Steps, the first a warm-up outside the time per step.
    #[arg(long, default_value_t = 12)]
    steps: u32,
}

/// What the application brings, on one backend: its stream (as haloport sees it), its
/// allocations, and its kernel.
trait App {
    type B: Backend;
    fn backend(&self) -> &Self::B;
    /// The application's stream, which its kernels and haloport's exchange share.
    fn stream(&self) -> &<Self::B as Backend>::Stream;
    /// A zeroed allocation of `elems` f64 the application owns; its device address.
    fn alloc(&self, elems: usize) -> Result<u64>;
    /// Writes `values` to the allocation at `addr`, after the stream's work.
    fn upload(&self, addr: u64, values: &[f64]) -> Result<()>;
    /// Reads `elems` values of the allocation at `addr`, after the stream's work.
    fn download(&self, addr: u64, elems: usize) -> Result<Vec<f64>>;
    /// Waits until the work queued on the stream so far completed.
    fn synchronize(&self) -> Result<()>;
    /// Queues the update of `u` into `v` on the stream: the cells that read no halo
    /// (`shell == false`), or the others.
    fn update(&self, u: u64, v: u64, d: &Decomposition, shell: bool) -> Result<()>;
}

fn main() -> ExitCode {
    let args = Args::parse();
    let Some(universe) = mpi::initialize() else {
        eprintln!("MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let outcome = match args.backend.as_str() {
        "host" => haloport::host::HostBackend::new(world.split_shared(0).rank() as usize)
            .and_then(|backend| run(&host::HostApp::new(backend)?, &world, &args)),
        #[cfg(feature = "cuda")]
        "cuda" => cuda::CudaApp::new(world.split_shared(0).rank() as usize)
            .and_then(|app| run(&app, &world, &args)),
        other => Err(Error::InvalidInput(format!(
            "unknown or not built-in backend '{other}' (this build has: host{})",
            if cfg!(feature = "cuda") { ", cuda" } else { "" }
        ))),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

/// Solves on a Cartesian communicator over every rank, then with one rank alone, and compares
/// each rank's part of the two results.
fn run<A: App>(app: &A, world: &SimpleCommunicator, args: &Args) -> Result<()> {
    let grid = parse_grid(&args.grid)?;
    let transport: TransportKind = args.transport.parse()?;
    let periodic = [true, false, true];
    let procs = dims_create(world.size() as u32);
    let cart = world
        .create_cartesian_communicator(&procs.map(|p| p as i32), &periodic, true)
        .ok_or_else(|| Error::Internal("this rank is not in the Cartesian communicator".into()))?;
    let (d, mine, step) = solve(app, &cart, grid, periodic, args.steps, transport)?;
    let (_, reference, _) = solve(
        app,
        &SimpleCommunicator::self_comm(),
        grid,
        periodic,
        args.steps,
        transport,
    )?;
    let mut wrong = 0_u64;
    // The reference's interior is the whole grid, x fastest.
    let at = |g: [u64; 3]| (g[0] + grid[0] * (g[1] + grid[1] * g[2])) as usize;
    for (i, g) in interior(&d).enumerate() {
        if mine[i].to_bits() != reference[at(g)].to_bits() {
            wrong += 1;
        }
    }
    let mut total = 0_u64;
    cart.all_reduce_into(&wrong, &mut total, SystemOperation::sum());
    if cart.rank() == 0 {
        let [px, py, pz] = d.procs;
        println!(
            "{} ranks ({px}x{py}x{pz}, Cartesian), {} steps of the application's own kernel on its own stream (the first a warm-up), {} backend over {}: {:.1} us per step",
            cart.size(),
            args.steps,
            app.backend().name(),
            transport.name(),
            step.as_secs_f64() * 1e6
        );
    }
    if total != 0 {
        return Err(Error::VerificationFailed(format!(
            "{total} cells differ from one rank computing the whole grid"
        )));
    }
    if cart.rank() == 0 {
        println!("verified: bit-for-bit equal to one rank computing the whole grid");
    }
    Ok(())
}

/// The Jacobi steps on `comm`; this rank's part, its interior after the last step, and the
/// mean time per step after the first (zero with fewer than two steps).
fn solve<A: App, C: Communicator>(
    app: &A,
    comm: &C,
    grid: [u64; 3],
    periodic: [bool; 3],
    steps: u32,
    transport: TransportKind,
) -> Result<(Decomposition, Vec<f64>, Duration)> {
    let spec = DomainSpec {
        grid,
        procs: None, // the Cartesian communicator's
        periodic,
        halo: [1, 1, 1],
        elem: ElemType::F64,
        fields: 1,
        layout: Default::default(),
    };
    let options = HaloOptions {
        transport,
        ..HaloOptions::default()
    };
    let mut exchange = HaloExchange::new(app.backend(), comm, &spec, options)?;
    let plan = exchange.plan().clone();
    let d = plan.decomposition.clone();
    let elems = d.alloc_elems() as usize;
    // Interior cells from their global coordinates; halos zero (the non-periodic y boundary
    // stays so).
    let mut initial = vec![0.0_f64; elems];
    for g in interior(&d) {
        initial[local_index(&d, g)] = ((g[0] * 7 + g[1] * 13 + g[2] * 17) % 23) as f64 * 0.25;
    }
    let (u, v) = (app.alloc(elems)?, app.alloc(elems)?);
    app.upload(u, &initial)?;
    app.upload(v, &initial)?;
    // SAFETY: (1) u and v are device addresses of this backend holding `elems` f64; (2) the
    // application keeps them until after `exchange.close()` below; (3) the application's
    // kernels touch no halo cell, and write no cell the exchange sends while one runs (the
    // interior update between start and finish writes the other field).
    let (fu, fv) = unsafe {
        (
            Field::adopt(u, elems * 8, &plan)?,
            Field::adopt(v, elems * 8, &plan)?,
        )
    };
    let mut t0 = Instant::now();
    for step in 0..steps {
        if step == 1 {
            // The warm-up step done everywhere: the clock starts together on every rank.
            exchange.wait()?;
            app.synchronize()?;
            comm.barrier();
            t0 = Instant::now();
        }
        let (a, from, to) = if step % 2 == 0 {
            (&fu, u, v)
        } else {
            (&fv, v, u)
        };
        exchange.start(&[a], app.stream())?;
        app.update(from, to, &d, false)?; // overlaps the exchange
        exchange.finish(app.stream())?;
        app.update(from, to, &d, true)?; // reads the halos just filled
    }
    exchange.wait()?;
    app.synchronize()?;
    let step = match steps {
        0 | 1 => Duration::ZERO,
        n => t0.elapsed() / (n - 1),
    };
    let last = if steps % 2 == 0 { u } else { v };
    let all = app.download(last, elems)?;
    exchange.close()?;
    let mine = interior(&d).map(|g| all[local_index(&d, g)]).collect();
    Ok((d, mine, step))
}

/// Global coordinates of this rank's interior cells, x fastest.
fn interior(d: &Decomposition) -> impl Iterator<Item = [u64; 3]> + '_ {
    let [ox, oy, oz] = d.origin;
    (0..d.local[2]).flat_map(move |z| {
        (0..d.local[1]).flat_map(move |y| (0..d.local[0]).map(move |x| [ox + x, oy + y, oz + z]))
    })
}

/// Index in this rank's allocation of the interior cell at global `g`.
fn local_index(d: &Decomposition, g: [u64; 3]) -> usize {
    d.index([0, 1, 2].map(|k| g[k] - d.origin[k] + d.halo[k])) as usize
}

fn parse_grid(s: &str) -> Result<[u64; 3]> {
    let parts: Vec<u64> = s.split('x').filter_map(|p| p.parse().ok()).collect();
    match parts[..] {
        [x, y, z] if x > 0 && y > 0 && z > 0 => Ok([x, y, z]),
        _ => Err(Error::InvalidInput(format!(
            "grid '{s}': expected XxYxZ, e.g. 40x36x32"
        ))),
    }
}

/// The update of one cell at allocated index `c` (strides `sy`, `sz`): the mean of it and its
/// six face neighbours, summed in this order by both kernels.
fn mean7(u: &[f64], c: usize, sy: usize, sz: usize) -> f64 {
    (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) * (1.0 / 7.0)
}

/// The host backend: the application's "device memory" is its own boxed slices, its kernel a
/// closure queued on the stream.
mod host {
    use super::*;
    use haloport::host::{HostBackend, HostStream};

    pub struct HostApp {
        backend: HostBackend,
        stream: HostStream,
        memory: RefCell<Vec<Box<[f64]>>>,
    }

    impl HostApp {
        pub fn new(backend: HostBackend) -> Result<HostApp> {
            let stream = backend.create_stream()?;
            Ok(HostApp {
                backend,
                stream,
                memory: RefCell::new(Vec::new()),
            })
        }

        fn sync(&self) -> Result<()> {
            self.backend
                .stream_synchronize(&self.stream, Instant::now() + Duration::from_secs(30))
        }
    }

    impl App for HostApp {
        type B = HostBackend;

        fn backend(&self) -> &HostBackend {
            &self.backend
        }

        fn stream(&self) -> &HostStream {
            &self.stream
        }

        fn alloc(&self, elems: usize) -> Result<u64> {
            let mut slice = vec![0.0_f64; elems].into_boxed_slice();
            let addr = slice.as_mut_ptr() as u64;
            self.memory.borrow_mut().push(slice);
            Ok(addr)
        }

        fn upload(&self, addr: u64, values: &[f64]) -> Result<()> {
            self.sync()?;
            // SAFETY: addr is one of our slices, at least values.len() long; the stream is
            // idle, so nothing else touches it.
            unsafe {
                std::ptr::copy_nonoverlapping(values.as_ptr(), addr as *mut f64, values.len())
            };
            Ok(())
        }

        fn download(&self, addr: u64, elems: usize) -> Result<Vec<f64>> {
            self.sync()?;
            // SAFETY: as in upload.
            Ok(unsafe { std::slice::from_raw_parts(addr as *const f64, elems) }.to_vec())
        }

        fn synchronize(&self) -> Result<()> {
            self.sync()
        }

        fn update(&self, u: u64, v: u64, d: &Decomposition, shell: bool) -> Result<()> {
            let (a, l, h) = (d.alloc.map(|n| n as usize), d.local.map(|n| n as usize), 1);
            let n = a[0] * a[1] * a[2];
            self.stream.enqueue(move || {
                // SAFETY: u and v are the application's slices of n f64 each, alive until
                // after the stream drained; the stream runs this alone, and the exchange's
                // kernels ordered with it touch other cells (Field::adopt's contract).
                let (src, dst) = unsafe {
                    (
                        std::slice::from_raw_parts(u as *const f64, n),
                        std::slice::from_raw_parts_mut(v as *mut f64, n),
                    )
                };
                let (sy, sz) = (a[0], a[0] * a[1]);
                for z in 0..l[2] {
                    for y in 0..l[1] {
                        for x in 0..l[0] {
                            let inner = [x, y, z].iter().zip(l).all(|(&c, n)| c > 0 && c + 1 < n);
                            if inner == shell {
                                continue;
                            }
                            let c = (x + h) + sy * (y + h) + sz * (z + h);
                            dst[c] = mean7(src, c, sy, sz);
                        }
                    }
                }
                Ok(())
            })
        }
    }
}

/// NVIDIA GPUs: the application's context, stream, allocations and NVRTC-compiled kernel
/// through cudarc; haloport adopts the stream.
#[cfg(feature = "cuda")]
mod cuda {
    use std::sync::Arc;

    use super::*;
    use cudarc::driver::{
        CudaContext, CudaFunction, CudaSlice, CudaStream as AppStream, DevicePtr, LaunchConfig,
        PushKernelArg,
    };
    use haloport::cuda::{CudaBackend, CudaStream};

    /// The application's kernel, the same arithmetic as [`mean7`].
    const KERNEL: &str = r#"
extern "C" __global__ void app_jacobi(const double* u, double* v, long long ax, long long ay,
                                      long long lx, long long ly, long long lz, int shell) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= lx * ly * lz) return;
    long long x = i % lx, y = (i / lx) % ly, z = i / (lx * ly);
    int inner = x > 0 && x + 1 < lx && y > 0 && y + 1 < ly && z > 0 && z + 1 < lz;
    if (inner == shell) return;
    long long sy = ax, sz = ax * ay;
    long long c = (x + 1) + sy * (y + 1) + sz * (z + 1);
    v[c] = (u[c] + u[c - 1] + u[c + 1] + u[c - sy] + u[c + sy] + u[c - sz] + u[c + sz]) *
           (1.0 / 7.0);
}
"#;

    fn driver(e: impl std::fmt::Display) -> Error {
        Error::Internal(format!("the application's CUDA call failed: {e}"))
    }

    pub struct CudaApp {
        // Field order is drop order: haloport's view of the stream before the stream.
        hp_stream: CudaStream,
        memory: RefCell<Vec<CudaSlice<f64>>>,
        function: CudaFunction,
        stream: Arc<AppStream>,
        _ctx: Arc<CudaContext>,
        backend: CudaBackend,
    }

    impl CudaApp {
        pub fn new(local_rank: usize) -> Result<CudaApp> {
            // haloport first: it checks for a driver before cudarc loads one.
            let backend = CudaBackend::new(local_rank)?;
            let ctx = CudaContext::new(backend.device_info().ordinal).map_err(driver)?;
            let stream = ctx.new_stream().map_err(driver)?;
            let ptx = cudarc::nvrtc::compile_ptx(KERNEL).map_err(driver)?;
            let function = ctx
                .load_module(ptx)
                .and_then(|m| m.load_function("app_jacobi"))
                .map_err(driver)?;
            // SAFETY: (1) a live stream of the backend's device, in its primary context
            // (cudarc's CudaContext retains the primary context); (2) `stream` outlives
            // `hp_stream` (field order), and every exchange on it is waited for before the
            // app is dropped; (3) the kernels queued between start and finish write no halo
            // and no cell the exchange sends.
            let hp_stream = unsafe { CudaStream::from_raw(&backend, stream.cu_stream()) };
            Ok(CudaApp {
                hp_stream,
                memory: RefCell::new(Vec::new()),
                function,
                stream,
                _ctx: ctx,
                backend,
            })
        }

        /// Which of the application's allocations starts at `addr`.
        fn find(&self, addr: u64) -> Result<usize> {
            self.memory
                .borrow()
                .iter()
                .position(|s| s.device_ptr(&self.stream).0 == addr)
                .ok_or_else(|| Error::Internal(format!("no allocation at {addr:#x}")))
        }
    }

    impl App for CudaApp {
        type B = CudaBackend;

        fn backend(&self) -> &CudaBackend {
            &self.backend
        }

        fn stream(&self) -> &CudaStream {
            &self.hp_stream
        }

        fn alloc(&self, elems: usize) -> Result<u64> {
            let slice = self.stream.alloc_zeros::<f64>(elems).map_err(driver)?;
            let addr = slice.device_ptr(&self.stream).0;
            self.memory.borrow_mut().push(slice);
            Ok(addr)
        }

        fn upload(&self, addr: u64, values: &[f64]) -> Result<()> {
            let at = self.find(addr)?;
            let mut memory = self.memory.borrow_mut();
            let slice = &mut memory[at];
            self.stream.memcpy_htod(values, slice).map_err(driver)?;
            self.stream.synchronize().map_err(driver)
        }

        fn download(&self, addr: u64, elems: usize) -> Result<Vec<f64>> {
            let memory = self.memory.borrow();
            let slice = &memory[self.find(addr)?];
            let values = self
                .stream
                .clone_dtoh(&slice.slice(..elems))
                .map_err(driver)?;
            self.stream.synchronize().map_err(driver)?;
            Ok(values)
        }

        fn synchronize(&self) -> Result<()> {
            self.stream.synchronize().map_err(driver)
        }

        fn update(&self, u: u64, v: u64, d: &Decomposition, shell: bool) -> Result<()> {
            let [ax, ay, _] = d.alloc.map(|n| n as i64);
            let [lx, ly, lz] = d.local.map(|n| n as i64);
            let cells = (lx * ly * lz) as u32;
            let shell = i32::from(shell);
            let mut launch = self.stream.launch_builder(&self.function);
            launch
                .arg(&u)
                .arg(&v)
                .arg(&ax)
                .arg(&ay)
                .arg(&lx)
                .arg(&ly)
                .arg(&lz)
                .arg(&shell);
            // 256 threads per block, as examples/cuda/jacobi.cu launches the same kernel.
            let config = LaunchConfig {
                grid_dim: (cells.div_ceil(256), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: u and v are the application's allocations of the local array with halos
            // (alloc extents), every index the kernel forms lies inside it.
            unsafe { launch.launch(config) }.map(drop).map_err(driver)
        }
    }
}
