//! The real NCCL on GPUs: 2 ranks under `mpirun`, each on its own device (device `rank % count`,
//! so one GPU serves both), a communicator from MPI, one group sending and receiving device
//! buffers of several sizes on a stream, waited for through `wait_for` (an event on the stream,
//! async errors polled), every byte checked on the host.
//!
//! Runs only with `HALOPORT_NCCL_GPU=1` (else it prints "SKIPPED"): CI has no GPU. On one GPU,
//! `HALOPORT_NCCL_GPU_SPLIT_HOSTS=1` gives each rank its own `NCCL_HOSTID`, so that NCCL takes
//! the ranks for two nodes rather than refusing a duplicate GPU; add `NCCL_P2P_DISABLE=1
//! NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo` to go through its network
//! transport. Variables starting with `NCCL_` are handed to the ranks. See nccl/README.md.

mod common;

use std::ffi::c_void;
use std::time::Duration;

use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
use haloport_nccl::{Communicator, Flavour, Nccl};
use mpi::traits::Communicator as _;

#[test]
fn nccl_round_trip_on_gpus() {
    if std::env::var("HALOPORT_NCCL_GPU").as_deref() != Ok("1") {
        println!("SKIPPED: the NCCL GPU smoke runs with HALOPORT_NCCL_GPU=1 (on a GPU machine)");
        return;
    }
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("NCCL_") || k.starts_with("HALOPORT_NCCL"))
        .collect();
    env.sort();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let text = common::two_ranks("rank_gpu_round_trip", &env, 300);
    print!("{text}");
}

#[test]
#[ignore = "a rank of an MPI job: run by its parent test under mpirun"]
fn rank_gpu_round_trip() {
    common::assert_child();
    if std::env::var("HALOPORT_NCCL_GPU_SPLIT_HOSTS").as_deref() == Ok("1") {
        // Before MPI and NCCL start threads that may read the environment; the rank from the
        // variable Open MPI's launcher sets (MPI is not initialized yet).
        let r = std::env::var("OMPI_COMM_WORLD_RANK")
            .or_else(|_| std::env::var("PMI_RANK"))
            .expect("mpirun sets OMPI_COMM_WORLD_RANK or PMI_RANK");
        std::env::set_var("NCCL_HOSTID", format!("haloport-nccl-smoke-{r}"));
    }
    let universe = mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    let r = world.rank();
    match round_trip(&world) {
        Ok(summary) => {
            println!("rank {r}: {summary}");
            println!("rank {r}: passed");
        }
        Err(e) => println!("rank {r}: FAILED: {e}"),
    }
}

fn round_trip(world: &mpi::topology::SimpleCommunicator) -> Result<String, String> {
    let me = world.rank() as usize;
    let peer = 1 - me;
    // cudarc panics when it cannot load the driver: ask the loader first, for an error instead.
    // SAFETY: opening the CUDA driver runs only its own initialisers.
    unsafe { libloading::Library::new("libcuda.so.1") }
        .map_err(|e| format!("no CUDA driver: {e}"))?;
    let devices = CudaContext::device_count().map_err(|e| format!("CUDA: {e}"))?;
    if devices < 1 {
        return Err("no CUDA device".into());
    }
    let device = me % devices as usize;
    let ctx = CudaContext::new(device).map_err(|e| format!("device {device}: {e}"))?;
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let nccl = Nccl::load(Flavour::Nccl).map_err(|e| e.to_string())?;
    let mut comm = Communicator::from_mpi(&nccl, world, Duration::from_secs(120))
        .map_err(|e| format!("communicator: {e}"))?;
    let sizes = [64 << 20, 1, 4096, 3 << 20];
    let pattern = |from: usize, m: usize, i: usize| (i.wrapping_mul(29) + from * 5 + m * 11) as u8;
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for (m, &n) in sizes.iter().enumerate() {
        let host: Vec<u8> = (0..n).map(|i| pattern(me, m, i)).collect();
        sends.push(stream.clone_htod(&host).map_err(|e| e.to_string())?);
        recvs.push(stream.alloc_zeros::<u8>(n).map_err(|e| e.to_string())?);
    }
    stream.synchronize().map_err(|e| e.to_string())?;
    let raw_stream = stream.cu_stream() as *mut c_void;
    {
        let mut guards = Vec::new();
        let mut ptrs = Vec::new();
        for (s, r) in sends.iter().zip(recvs.iter_mut()) {
            let (sp, sg) = s.device_ptr(&stream);
            let (rp, rg) = r.device_ptr_mut(&stream);
            ptrs.push((sp, rp));
            guards.push((sg, rg));
        }
        comm.group(|g| {
            for (&(sp, rp), &n) in ptrs.iter().zip(sizes.iter()) {
                // SAFETY: device buffers of `n` bytes on this rank's device, kept alive (and
                // untouched) until the event recorded after the group has completed below;
                // `raw_stream` is a live stream of the same context.
                unsafe {
                    g.send(sp as *const c_void, n, peer, raw_stream)?;
                    g.recv(rp as *mut c_void, n, peer, raw_stream)?;
                }
            }
            Ok(())
        })
        .map_err(|e| format!("group: {e}"))?;
        let event = stream.record_event(None).map_err(|e| e.to_string())?;
        comm.wait_for("the round trip on the stream", || event.is_complete())
            .map_err(|e| e.to_string())?;
        drop(guards);
    }
    for (m, r) in recvs.iter().enumerate() {
        let got = stream.clone_dtoh(r).map_err(|e| e.to_string())?;
        if let Some(i) = (0..got.len()).find(|&i| got[i] != pattern(peer, m, i)) {
            return Err(format!("message {m}: byte {i} is {}", got[i]));
        }
    }
    let summary = format!(
        "{} {} on device {device} of {devices}: {} bytes each way verified",
        nccl.flavour(),
        nccl.version(),
        sizes.iter().sum::<usize>()
    );
    comm.close().map_err(|e| format!("close: {e}"))?;
    Ok(summary)
}
