//! haloport-thesis: the benchmark of Vanecek's thesis on haloport's library.
//!
//! The thesis's exchange [strategies](strategy) (baseline, taskqueue, the device-direct
//! variants and the library's own exchange as a payload), their [variants](variant) and
//! [workloads](workload), the measurement protocol ([measure], [stats], [timeline]) and the
//! instrumentation that reaches it ([observe]), and [pack-bench](packbench), the throughput
//! of the library's region kernels. The strategies are generic over the
//! [`Backend`] trait, so they run unchanged on CUDA, HIP and the host
//! backend; they use the library (`haloport-core`) as any application would.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod measure;
pub mod observe;
pub mod packbench;
pub mod stats;
pub mod strategy;
pub mod timeline;
pub mod variant;
pub mod workload;

pub use haloport_core::{Backend, Error, Result};
pub use observe::{BlockChecks, Discard, Observer};
pub use strategy::{ExchangeOptions, Strategy};
pub use variant::Variant;
pub use workload::Workload;
