//! haloport as a library for halo code (SPEC 13): declare a 3-D domain, compile it once into a
//! plan, exchange the halos of your own device fields as often as you like.
//!
//! - [`DomainSpec`](crate::domain::DomainSpec) declares the global grid, the process grid
//!   (given, or chosen like `MPI_Dims_create`), periodicity, halo widths, the element type and
//!   the number of fields exchanged together.
//! - [`HaloPlan`](crate::domain::HaloPlan) is the compiled declaration: this rank's part and up
//!   to 26 neighbour regions (faces, edges, corners), each a flattened subarray.
//! - [`Field`] is one field in device memory: allocated through the backend or adopted from
//!   the caller's own allocation.
//! - [`HaloExchange`] runs the plan: [`HaloExchange::exchange`] blocks;
//!   [`HaloExchange::start`] / [`HaloExchange::finish`] order the exchange on the caller's
//!   stream so that interior work can overlap it.
//!
//! Routes are chosen per neighbour ([`Link`], [`routes`]): host-staged MPI anywhere, GPU-aware
//! MPI and NCCL from device memory, device-direct stores into a same-node peer's memory with
//! `ipc`, and for a periodic neighbour that is the rank itself a copy straight into the halo;
//! `auto` picks per neighbour by capability, or in the order a routes file measured
//! ([`RoutesFile`]).

pub(crate) mod engine;
mod exchange;
mod field;
pub mod fused;
pub(crate) mod fused_exchange;
mod fused_unmapped;
pub(crate) mod layout;
pub mod routes;
mod setup;

pub use engine::ExchangeGraph;
pub use exchange::{resolve_procs, HaloExchange, HaloFault, HaloOptions, HaloStrategy};
pub use field::{describe_field, describe_shape, Field};
pub use layout::{direction_name, Link};
pub use routes::{RouteChoice, RouteOrder, RoutesFile};
pub use setup::RankSetup;

/// The message-level exchange [`HaloExchange`] is built on, open to other payloads: a
/// [`Payload`](messages::Payload) says what each message's regions are (a field's halo regions,
/// or the thesis benchmark's synthetic blocks, whose `lib-*` variants run through it).
pub mod messages {
    pub use super::engine::{MessageExchange, Messages, Payload};
    pub use super::field::FieldMemory;
    pub use super::layout::{Entry, EntryName, EntryTable, RankEntries, Side};
}
