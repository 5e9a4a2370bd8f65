//! `haloport pack-bench`: the library's pack and unpack kernels against the copy engine and
//! the device's copy bandwidth, on rank 0's device (SPEC 13's speed targets).

use haloport::core::{Backend, Error};
use haloport::provenance::{provenance, Provenance};
use haloport_thesis::packbench::{run_pack_bench, PackBenchConfig, PackBenchResult};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::Serialize;

use crate::cli::PackBenchArgs;
use crate::commands::exchange::{check_writable, dispatch, write_json, OnBackend};
use crate::commands::local_rank;

#[derive(Serialize)]
struct Output<'a> {
    /// The schema of the benchmarks' JSON ([`BENCH_SCHEMA`](haloport_cli::results::BENCH_SCHEMA)).
    schema: &'static str,
    command: &'static str,
    provenance: Provenance,
    backend: &'static str,
    device: String,
    local: [u64; 3],
    halo: u32,
    #[serde(rename = "type")]
    elem: String,
    reps: u32,
    runs: u32,
    elems_per_thread: u32,
    threads: u32,
    full_form: bool,
    table_in_memory: bool,
    verified: bool,
    #[serde(flatten)]
    result: &'a PackBenchResult,
}

pub fn run(world: &SimpleCommunicator, args: &PackBenchArgs) -> anyhow::Result<()> {
    if world.size() != 1 {
        return Err(Error::InvalidInput(format!(
            "pack-bench measures one device: run it without mpirun or with -np 1 (this job has {} ranks)",
            world.size()
        ))
        .into());
    }
    check_writable(world, args.json.as_deref())?;
    dispatch(args.backend, local_rank(world), Bench { args })
}

struct Bench<'a> {
    args: &'a PackBenchArgs,
}

impl OnBackend for Bench<'_> {
    fn run<B: Backend>(self, backend: &B) -> anyhow::Result<()> {
        let args = self.args;
        let config = PackBenchConfig {
            local: args.local,
            halo: args.halo,
            elem: args.elem,
            reps: args.reps,
            runs: args.runs,
            elems_per_thread: args.elems_per_thread,
            threads: args.threads,
            full_form: args.full_form,
            table_in_memory: args.table_in_memory,
        };
        let result = run_pack_bench(backend, &SimpleCommunicator::self_comm(), &config)?;
        let [nx, ny, nz] = args.local;
        println!(
            "pack-bench {nx}x{ny}x{nz} {} halo {} on {} ({}), {} threads per block, {} elements per thread, {} form, table {}, median of {} runs x {} reps",
            args.elem,
            args.halo,
            backend.name(),
            backend.device_info().name,
            args.threads,
            args.elems_per_thread,
            if args.full_form { "full" } else { "chosen" },
            if args.table_in_memory {
                "in device memory"
            } else {
                "in the launch's parameters where it fits"
            },
            args.runs,
            args.reps
        );
        println!(
            "  device copy bandwidth (best measured): {:.1} GB/s",
            result.device_gbs
        );
        for row in &result.rows {
            println!(
                "  {:<72} {:>10.1} us {:>9.1} GB/s {:>6.1} % of the device's",
                row.what,
                row.median_us,
                row.gbs,
                100.0 * row.gbs / result.device_gbs
            );
        }
        println!(
            "  exchange of all 26 regions (own periodic neighbour): plan {:.1} us, same kernels by hand {:.1} us, ratio {:.4}",
            result.plan_exchange_us,
            result.hand_exchange_us,
            result.plan_exchange_us / result.hand_exchange_us
        );
        println!(
            "  the same kernels by hand with an event recorded after each exchange: {:.1} us",
            result.hand_event_exchange_us
        );
        let check = &result.check;
        println!(
            "  verified: {} (the 6-face kernels on known values: {} packed elements, then all {} elements of the field after the unpack, compared with the host's; {} wrong)",
            check.verified(),
            check.packed,
            check.field,
            check.wrong
        );
        if let Some(path) = &args.json {
            let output = Output {
                schema: haloport_cli::results::BENCH_SCHEMA,
                command: "pack-bench",
                provenance: provenance(),
                backend: backend.name(),
                device: backend.device_info().name.clone(),
                local: args.local,
                halo: args.halo,
                elem: args.elem.to_string(),
                reps: args.reps,
                runs: args.runs,
                elems_per_thread: args.elems_per_thread,
                threads: args.threads,
                full_form: args.full_form,
                table_in_memory: args.table_in_memory,
                verified: result.check.verified(),
                result: &result,
            };
            write_json(path, &output, true)?;
        }
        if !check.verified() {
            return Err(Error::VerificationFailed(format!(
                "the 6-face pack and unpack kernels: {} of {} comparisons wrong",
                check.wrong,
                check.packed + check.field
            ))
            .into());
        }
        Ok(())
    }
}
