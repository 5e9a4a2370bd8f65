//! A Jacobi solver on a 3-D grid with haloport's halo exchange, verified against one rank.
//!
//! ```text
//! cargo build --release --example jacobi
//! mpirun -np 4 target/release/examples/jacobi
//! ```
//!
//! Each rank owns a part of a 48x40x32 grid (periodic in x and z, fixed boundary in y), with a
//! halo of one cell, in f32. Every step exchanges the halos while the inner cells are updated,
//! then updates the cells next to the halos: [`run_jacobi`] shows the loop, with
//! `HaloExchange::start`, `finish` and `wait` around the two stencil sweeps. Rank 0 then
//! computes the same steps alone over the whole grid and compares every bit.
//!
//! The same runs on a GPU: build with `--features cuda` and open `haloport::cuda::CudaBackend`
//! instead of the host backend.

use std::process::ExitCode;

use haloport::core::domain::{DomainSpec, ElemType};
use haloport::core::halo::HaloOptions;
use haloport::host::HostBackend;
use haloport_stencil::{run_jacobi, run_reference, FieldPlacement, JacobiConfig, Overlap};
use haloport_thesis::stats::median;
use mpi::topology::Communicator;

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    match solve(&world) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

fn solve(world: &mpi::topology::SimpleCommunicator) -> haloport::Result<()> {
    // One device per rank of a node; the host backend's "device" is this process's memory.
    let backend = HostBackend::new(world.split_shared(0).rank() as usize)?;
    let config = JacobiConfig {
        stencil: Default::default(), // 27-point; Stencil::Point7 reads faces only
        spec: DomainSpec {
            grid: [48, 40, 32],
            procs: None, // chosen by MPI_Dims_create
            periodic: [true, false, true],
            halo: [1, 1, 1],
            elem: ElemType::F32,
            fields: 2,
            layout: Default::default(),
        },
        steps: 20,
        options: HaloOptions::default(), // host-staged MPI; `ipc` goes device-direct
        exchange_reps: 5,
        compute_steps: 0,
        form: haloport::core::shared::HP_STENCIL_FORM_MARCH,
        // Each field placed for the box its steps run most (the step's tiles, or without
        // overlap the f32 lanes over the interior); Library: Field::alloc.
        fields: FieldPlacement::Auto,
        graph: false, // true: two steps captured into a CUDA/HIP graph, replayed (GPU backends)
        shell_launches: false, // true: the shell's x and y slabs in launches of their own
        // Beside the exchange unless every neighbour is this rank; On, Off to choose.
        overlap: Overlap::Auto,
        fused: false, // true: the boundary stores the neighbours' halos (device-direct only)
    };
    let run = run_jacobi(&backend, world, &config)?;
    if let Some(fields) = run.gathered {
        let reference = run_reference(&backend, &config)?;
        let [px, py, pz] = run.plan.decomposition.procs;
        println!(
            "{px}x{py}x{pz} ranks, {} steps, median step {:.1} us, checksum {:016x}",
            config.steps,
            1e6 * median(&run.step_seconds).unwrap_or(0.0),
            fields.checksum()
        );
        match fields.first_difference(&reference) {
            None => println!("verified: bit-for-bit equal to one rank computing the whole grid"),
            Some(diff) => {
                return Err(haloport::Error::VerificationFailed(diff));
            }
        }
    }
    Ok(())
}
