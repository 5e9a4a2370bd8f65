//! The shared conformance suite on the host backend, and host-specific checks: streams and
//! events, occupancy limits, control-block flags, and IPC of device memory (within one process
//! and between two: the test binary runs itself as the second process).

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use haloport_core::DeviceMemory;

use super::*;

haloport_core::backend_conformance_tests!(HostBackend::new(0).ok());

#[test]
fn stream_and_event_queries_report_unfinished_work() {
    let backend = HostBackend::new(0).expect("host backend");
    let stream = backend.create_stream().expect("stream");
    let event = backend.create_event().expect("event");
    let (open, gate) = mpsc::channel::<()>();
    stream
        .enqueue(Box::new(move || gate.recv().map_err(|e| e.to_string())))
        .expect("enqueue");
    backend.record_event(&event, &stream).expect("record");
    assert!(
        !backend.stream_query(&stream).expect("query"),
        "stream reported idle while blocked"
    );
    assert!(
        !backend.event_query(&event).expect("query"),
        "event reported complete while blocked"
    );
    let soon = Instant::now() + Duration::from_millis(50);
    let err = backend
        .stream_synchronize(&stream, soon)
        .expect_err("must time out");
    assert!(err.to_string().contains("timed out"), "{err}");
    open.send(()).expect("open the gate");
    backend
        .event_synchronize(&event, Instant::now() + Duration::from_secs(10))
        .expect("event completes");
    assert!(backend.stream_query(&stream).expect("query"));
}

#[test]
fn work_runs_in_queue_order_and_errors_are_sticky() {
    let backend = HostBackend::new(0).expect("host backend");
    let stream = backend.create_stream().expect("stream");
    let (tx, rx) = mpsc::channel();
    for i in 0..100 {
        let tx = tx.clone();
        stream
            .enqueue(Box::new(move || tx.send(i).map_err(|e| e.to_string())))
            .expect("enqueue");
    }
    stream
        .enqueue(Box::new(|| Err("injected failure".into())))
        .expect("enqueue");
    let err = backend
        .stream_synchronize(&stream, Instant::now() + Duration::from_secs(10))
        .expect_err("the failure is reported");
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert!(backend.stream_query(&stream).is_err(), "the error stays");
    let order: Vec<i32> = rx.try_iter().collect();
    assert_eq!(order, (0..100).collect::<Vec<_>>());
}

#[test]
fn non_coherent_requests_are_served_as_coherent_and_say_so() {
    let backend = HostBackend::new(0).expect("host backend");
    let m = backend
        .alloc_pinned(100, Coherence::NonCoherent)
        .expect("alloc");
    assert_eq!(m.coherence_requested(), Coherence::NonCoherent);
    assert_eq!(m.coherence_served(), Coherence::Coherent);
}

/// A transport that moves nothing: enough to set strategies up without MPI.
struct NullTransport;

impl haloport_core::transport::Transport for NullTransport {
    fn name(&self) -> &'static str {
        "null"
    }
    fn capabilities(&self) -> haloport_core::transport::Capabilities {
        haloport_core::transport::Capabilities {
            host_initiated: true,
            gpu_initiated: false,
            device_buffers: false,
            stream_ordered: false,
        }
    }
    fn rank(&self) -> i32 {
        0
    }
    fn size(&self) -> i32 {
        1
    }
    fn barrier(&mut self, _: Instant) -> haloport_core::Result<()> {
        Ok(())
    }
}

impl haloport_core::transport::HostTransport for NullTransport {
    fn register<B: haloport_core::Backend>(
        &mut self,
        backend: &B,
        pattern: &haloport_core::RankPattern,
        coherence: Coherence,
    ) -> haloport_core::Result<haloport_core::exchange::ExchangeBuffers<B>> {
        haloport_core::exchange::ExchangeBuffers::new(backend, pattern, coherence)
    }
    fn post_recv(
        &mut self,
        _: usize,
        _: haloport_core::transport::HostRegion,
        _: i32,
    ) -> haloport_core::Result<()> {
        Ok(())
    }
    fn send(
        &mut self,
        _: usize,
        _: haloport_core::transport::HostRegion,
        _: i32,
        _: Instant,
    ) -> haloport_core::Result<()> {
        Ok(())
    }
    fn isend(
        &mut self,
        _: usize,
        _: haloport_core::transport::HostRegion,
        _: i32,
    ) -> haloport_core::Result<()> {
        Ok(())
    }
    fn wait_recvs(&mut self, _: Instant) -> haloport_core::Result<()> {
        Ok(())
    }
    fn test_any_recv(&mut self) -> haloport_core::Result<Option<usize>> {
        Ok(None)
    }
    fn pending_recvs(&self) -> usize {
        0
    }
    fn wait_sends(&mut self, _: Instant) -> haloport_core::Result<()> {
        Ok(())
    }
}

#[test]
fn the_taskqueue_refuses_a_grid_that_cannot_be_resident_at_once() {
    use haloport_core::pattern::BuiltinPattern;
    use haloport_thesis::strategy::{ExchangeOptions, Taskqueue};
    use haloport_thesis::variant::{SendBuffers, SendMode, TaskPosting, TaskqueueOptions};

    let backend = HostBackend::new(0)
        .expect("host backend")
        .with_max_resident_blocks(3);
    let pattern = BuiltinPattern::Ring
        .resolve(0, 1, &[8, 8, 8, 8])
        .expect("pattern");
    let options = TaskqueueOptions {
        send: SendMode::NonBlocking,
        tasks: TaskPosting::Channel,
        buffers: SendBuffers::ZeroCopy,
    };
    let result = Taskqueue::new(
        &backend,
        NullTransport,
        &pattern,
        128,
        options,
        ExchangeOptions::default(),
    );
    let err = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("the taskqueue kernel needs all 4 blocks of 128 threads resident at once")
            && err.contains("holds only 3"),
        "{err}"
    );
    let fits = HostBackend::new(0)
        .expect("host backend")
        .with_max_resident_blocks(4);
    assert!(Taskqueue::new(
        &fits,
        NullTransport,
        &pattern,
        128,
        options,
        ExchangeOptions::default()
    )
    .is_ok());
}

#[test]
fn the_taskqueue_refuses_a_flag_stride_that_is_not_a_multiple_of_8() {
    use haloport_core::pattern::BuiltinPattern;
    use haloport_thesis::strategy::{ExchangeOptions, Taskqueue};
    use haloport_thesis::variant::{SendBuffers, SendMode, TaskPosting, TaskqueueOptions};

    let backend = HostBackend::new(0).expect("host backend");
    let pattern = BuiltinPattern::Ring.resolve(0, 1, &[8]).expect("pattern");
    let options = TaskqueueOptions {
        send: SendMode::Blocking,
        tasks: TaskPosting::Queue,
        buffers: SendBuffers::Memcpy,
    };
    let exchange = ExchangeOptions {
        flag_stride: 12,
        ..ExchangeOptions::default()
    };
    let err = Taskqueue::new(&backend, NullTransport, &pattern, 16, options, exchange)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("flag stride 12 bytes: must be a multiple of 8"),
        "{err}"
    );
}

#[test]
fn control_block_flags_carry_epochs_so_nothing_needs_a_reset() {
    use haloport_core::control::ControlBlock;
    use haloport_core::shared::hp_exchange_args;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    let backend = HostBackend::new(0).expect("host backend");
    let control = ControlBlock::new(&backend, 4, 64).expect("control block");
    let args = control.kernel_args(hp_exchange_args::default(), 0, 7, 1, 0);
    // Write flags where the kernel would (host device addresses are host addresses).
    // SAFETY: every address below lies in the control block, aligned to the 64-byte stride.
    let flag =
        |base: u64, block: u64| unsafe { AtomicU32::from_ptr((base + 64 * block) as *mut u32) };
    // SAFETY: as above; queue entries are 8-byte aligned u64s.
    let entry = |slot: u64| unsafe { AtomicU64::from_ptr((args.tasks + 64 * slot) as *mut u64) };

    // Channel mode: block 2 posts its task for epoch 7; epoch 8 must not see it.
    flag(args.tasks, 2).store(7, Ordering::Release);
    assert!(
        control.channel_task(2, 7) && !control.channel_task(2, 8) && !control.channel_task(1, 7)
    );
    // Queue mode: slot 5 wraps to slot 1; an entry of epoch 6 is stale in epoch 7.
    entry(1).store((7_u64 << 32) | 4, Ordering::Release);
    assert_eq!(control.queue_task(5, 7), Some(3));
    entry(1).store((6_u64 << 32) | 4, Ordering::Release);
    assert_eq!(control.queue_task(5, 7), None);
    // Go flags and the abort flag reach the addresses the kernel reads.
    control.release_unpack(3, 7);
    control.release_pack(0, 7);
    control.raise_abort(7);
    assert_eq!(flag(args.unpack_go, 3).load(Ordering::Acquire), 7);
    assert_eq!(flag(args.pack_go, 0).load(Ordering::Acquire), 7);
    // SAFETY: the abort flag is a u32 in the control block.
    let abort = unsafe { AtomicU32::from_ptr(args.abort_flag as *mut u32) };
    assert_eq!(abort.load(Ordering::Acquire), 7);
    // States: what the kernel publishes is read back, and reset to "not started".
    flag(args.states, 1).store(haloport_core::shared::HP_TQ_WAIT_RECV, Ordering::Release);
    assert_eq!(control.state(1), haloport_core::shared::HP_TQ_WAIT_RECV);
    control.reset_states();
    assert_eq!(control.state(1), haloport_core::shared::HP_TQ_IDLE);
}

/// A flag in shared memory, as the `ipc` transport raises and observes them.
///
/// # Safety
/// 1. `addr + offset` is 4-byte aligned and lies inside a mapping that outlives the reference.
unsafe fn flag_at<'a>(addr: u64, offset: usize) -> &'a AtomicU32 {
    // SAFETY: the caller guarantees (1) alignment and a live mapping.
    unsafe { AtomicU32::from_ptr((addr as usize + offset) as *mut u32) }
}

#[test]
fn exported_device_memory_opens_as_the_same_pages() {
    let backend = HostBackend::new(0).expect("host backend");
    let owner = backend.alloc_device(10_000).expect("alloc");
    let handle = backend.export_ipc(&owner).expect("export");
    assert_eq!(handle.backend, "host");
    assert_eq!(handle.len, 10_000);
    assert_eq!(handle.bytes.len(), memory::IPC_HANDLE_BYTES);
    assert_eq!(handle.bytes[..4], std::process::id().to_le_bytes());
    let peer = backend.open_ipc(&handle).expect("open");
    assert_eq!(peer.len_bytes(), 10_000);
    assert_ne!(peer.device_addr(), owner.addr(), "two views");
    assert_eq!(peer.device_addr() % 4096, 0, "page-aligned");

    // SAFETY: both ranges lie inside their 10 000-byte mappings, which outlive the slices.
    let (mine, theirs) = unsafe {
        (
            std::slice::from_raw_parts_mut(owner.addr() as *mut u8, 10_000),
            std::slice::from_raw_parts(peer.device_addr() as *const u8, 10_000),
        )
    };
    assert!(
        theirs.iter().all(|&b| b == 0),
        "device memory starts zeroed"
    );
    for (i, b) in mine.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    assert_eq!(theirs, &*mine);

    // A sender thread stores data through the peer's view, then raises the flag with Release;
    // the owner observes the flag with Acquire and then sees the data.
    let peer_addr = peer.device_addr();
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: bytes 256..512 lie inside the peer mapping, alive for the scope.
            let data = unsafe { std::slice::from_raw_parts_mut((peer_addr + 256) as *mut u8, 256) };
            data.fill(0xA5);
            // SAFETY: offset 8192 is 4-byte aligned and inside the mapping.
            unsafe { flag_at(peer_addr, 8192) }.store(7, Ordering::Release);
        });
        // SAFETY: as above, through the owner's view.
        let flag = unsafe { flag_at(owner.addr(), 8192) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while flag.load(Ordering::Acquire) != 7 {
            assert!(Instant::now() < deadline, "flag never arrived");
            std::thread::yield_now();
        }
    });
    assert!(mine[256..512].iter().all(|&b| b == 0xA5));
}

#[test]
fn open_ipc_refuses_a_handle_of_another_backend() {
    let backend = HostBackend::new(0).expect("host backend");
    let handle = IpcHandle {
        backend: "cuda".into(),
        bytes: vec![0; 64],
        len: 4096,
    };
    let err = backend.open_ipc(&handle).err().expect("refused");
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("exported by the \"cuda\" backend")
            && msg.contains("opens only its own handles"),
        "{msg}"
    );
}

#[test]
fn open_ipc_of_a_handle_naming_nothing_is_an_error() {
    let backend = HostBackend::new(0).expect("host backend");
    let handle = |pid: u32, fd: i32, len: usize| {
        let mut bytes = pid.to_le_bytes().to_vec();
        bytes.extend_from_slice(&fd.to_le_bytes());
        IpcHandle {
            backend: "host".into(),
            bytes,
            len,
        }
    };
    let me = std::process::id();
    // A descriptor this process does not have.
    let msg = backend
        .open_ipc(&handle(me, 1_000_000, 64))
        .err()
        .expect("no such descriptor")
        .to_string();
    assert!(
        msg.contains("host: open failed with ENOENT") && msg.contains(&format!("/proc/{me}/fd/")),
        "{msg}"
    );
    // A process that cannot exist (above the kernel's pid_max).
    let msg = backend
        .open_ipc(&handle(4_000_000_000, 3, 64))
        .err()
        .expect("no such process")
        .to_string();
    assert!(msg.contains("open failed with ENOENT"), "{msg}");
    // A malformed handle, and one with an impossible descriptor.
    let mut short = handle(me, 3, 64);
    short.bytes.truncate(3);
    let msg = backend.open_ipc(&short).err().expect("short").to_string();
    assert!(msg.contains("has 8 bytes"), "{msg}");
    let msg = backend
        .open_ipc(&handle(me, -1, 64))
        .err()
        .expect("negative")
        .to_string();
    assert!(msg.contains("cannot exist"), "{msg}");
    // A descriptor of a file that is not device memory.
    let null = std::fs::File::open("/dev/null").expect("/dev/null");
    let msg = backend
        .open_ipc(&handle(me, null.as_raw_fd(), 64))
        .err()
        .expect("not device memory")
        .to_string();
    assert!(
        msg.contains("names /dev/null, not haloport device memory"),
        "{msg}"
    );
    // Device memory smaller than the handle says.
    let small = backend.alloc_device(100).expect("alloc");
    let mut big = backend.export_ipc(&small).expect("export");
    big.len = 1 << 20;
    let msg = backend.open_ipc(&big).err().expect("too big").to_string();
    assert!(
        msg.contains("holds 4096 bytes, the handle says 1048576"),
        "{msg}"
    );
}

#[test]
fn pinned_memory_cannot_be_exported() {
    let backend = HostBackend::new(0).expect("host backend");
    let pinned = backend
        .alloc_pinned(64, Coherence::Coherent)
        .expect("alloc");
    let msg = backend
        .export_ipc(&pinned)
        .expect_err("refused")
        .to_string();
    assert!(msg.contains("only device memory"), "{msg}");
}

#[test]
fn owner_and_peer_drop_in_either_order() {
    let backend = HostBackend::new(0).expect("host backend");
    for owner_first in [true, false] {
        for bytes in [0, 1, 4096, 3 * 4096 + 5] {
            let owner = backend.alloc_device(bytes).expect("alloc");
            let handle = backend.export_ipc(&owner).expect("export");
            let peer = backend.open_ipc(&handle).expect("open");
            assert_eq!(peer.len_bytes(), bytes);
            if owner_first {
                // SAFETY: offset 0 is aligned and inside the owner's mapping (at least a page).
                unsafe { flag_at(owner.addr(), 0) }.store(5, Ordering::Release);
                drop(owner);
                // The pages outlive the owner while the peer maps them.
                // SAFETY: offset 0 is aligned and inside the peer mapping (at least one byte,
                // mapped as a whole page).
                let flag = unsafe { flag_at(peer.device_addr(), 0) };
                assert_eq!(flag.load(Ordering::Acquire), 5);
                flag.store(6, Ordering::Release);
                drop(peer);
            } else {
                drop(peer);
                // SAFETY: offset 0 is aligned and inside the owner's mapping.
                let flag = unsafe { flag_at(owner.addr(), 0) };
                flag.store(9, Ordering::Release);
                assert_eq!(flag.load(Ordering::Acquire), 9);
                drop(owner);
            }
        }
    }
}

#[test]
fn every_host_rank_shares_one_device() {
    let backend = HostBackend::new(0).expect("host backend");
    let me = backend.device_identity().expect("identity");
    assert_eq!(
        me,
        DeviceIdentity {
            backend: "host".into(),
            id: "host".into()
        }
    );
    assert!(backend.can_access_peer(&me).expect("peer access"));
    let gpu = DeviceIdentity {
        backend: "cuda".into(),
        id: "0000:1B:00.0".into(),
    };
    assert!(!backend.can_access_peer(&gpu).expect("peer access"));
}

/// The handle the two-process test passes to its child: `PID,FD,LEN`.
const CHILD_HANDLE_VAR: &str = "HALOPORT_TEST_IPC_HANDLE";

#[test]
fn another_process_stores_into_exported_device_memory() {
    let backend = HostBackend::new(0).expect("host backend");
    let owner = backend.alloc_device(8192).expect("alloc");
    let handle = backend.export_ipc(&owner).expect("export");
    let fd = i32::from_le_bytes(handle.bytes[4..8].try_into().expect("4 bytes"));
    let addr = owner.addr();
    // SAFETY: offsets 0, 4 and 8 are aligned and inside the 8192-byte mapping, which outlives
    // the flags.
    let (hello, done, ack) = unsafe { (flag_at(addr, 0), flag_at(addr, 4), flag_at(addr, 8)) };
    hello.store(1, Ordering::Release);

    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "tests::ipc_child_stores_through_a_handle",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_HANDLE_VAR,
            format!("{},{fd},{}", std::process::id(), handle.len),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the child");

    // Both processes run: wait for the child's flag, check its data, acknowledge.
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.load(Ordering::Acquire) != 2 {
        if Instant::now() > deadline || child.try_wait().expect("child status").is_some() {
            break;
        }
        std::thread::yield_now();
    }
    let raised = done.load(Ordering::Acquire) == 2;
    if raised {
        ack.store(3, Ordering::Release);
    }
    let out = child.wait_with_output().expect("child output");
    let log = format!(
        "child stdout:\n{}\nchild stderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(raised, "the child never raised its flag\n{log}");
    assert!(out.status.success(), "child failed\n{log}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the helper did not run\n{log}"
    );
    // SAFETY: bytes 4096..8192 lie inside the mapping.
    let data = unsafe { std::slice::from_raw_parts((addr + 4096) as *const u8, 4096) };
    assert!(data.iter().all(|&b| b == 0x5C), "child's data missing");
}

/// Run by `another_process_stores_into_exported_device_memory` in a child process.
#[test]
#[ignore = "helper: another_process_stores_into_exported_device_memory runs it in a child"]
fn ipc_child_stores_through_a_handle() {
    let Ok(spec) = std::env::var(CHILD_HANDLE_VAR) else {
        println!("{CHILD_HANDLE_VAR} not set: nothing to do outside the two-process test");
        return;
    };
    let parts: Vec<&str> = spec.split(',').collect();
    let [pid, fd, len] = parts[..] else {
        panic!("{CHILD_HANDLE_VAR}={spec}: expected PID,FD,LEN");
    };
    let pid: u32 = pid.parse().expect("pid");
    let fd: i32 = fd.parse().expect("fd");
    let len: usize = len.parse().expect("len");
    assert_ne!(pid, std::process::id(), "must run in another process");
    let mut bytes = pid.to_le_bytes().to_vec();
    bytes.extend_from_slice(&fd.to_le_bytes());
    let backend = HostBackend::new(0).expect("host backend");
    let peer = backend
        .open_ipc(&IpcHandle {
            backend: "host".into(),
            bytes,
            len,
        })
        .expect("open the parent's device memory");
    let addr = peer.device_addr();
    // SAFETY: offsets 0, 4 and 8 are aligned and inside the parent's 8192-byte allocation.
    let (hello, done, ack) = unsafe { (flag_at(addr, 0), flag_at(addr, 4), flag_at(addr, 8)) };
    assert_eq!(hello.load(Ordering::Acquire), 1, "the parent's flag");
    // SAFETY: bytes 4096..8192 lie inside the mapping, which outlives the slice.
    let data = unsafe { std::slice::from_raw_parts_mut((addr + 4096) as *mut u8, 4096) };
    data.fill(0x5C);
    done.store(2, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(60);
    while ack.load(Ordering::Acquire) != 3 {
        assert!(Instant::now() < deadline, "the parent never acknowledged");
        std::thread::yield_now();
    }
}
