//! The shared conformance suite on the host backend, and host-specific checks.

use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    fn rank(&self) -> i32 {
        0
    }
    fn size(&self) -> i32 {
        1
    }
    fn prepare(&mut self, _blocks: usize) -> haloport_core::Result<()> {
        Ok(())
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
    fn barrier(&mut self, _: Instant) -> haloport_core::Result<()> {
        Ok(())
    }
}

#[test]
fn the_taskqueue_refuses_a_grid_that_cannot_be_resident_at_once() {
    use haloport_core::pattern::BuiltinPattern;
    use haloport_core::strategy::{ExchangeOptions, Taskqueue};
    use haloport_core::variant::{SendBuffers, SendMode, TaskPosting, TaskqueueOptions};

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
    use haloport_core::strategy::{ExchangeOptions, Taskqueue};
    use haloport_core::variant::{SendBuffers, SendMode, TaskPosting, TaskqueueOptions};

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
