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
