//! A rank's entries (what it sends to and receives from each peer) and where their messages
//! live, computed from its entries alone, so that a peer can compute the same addresses for it
//! (device-direct stores go straight into them).
//!
//! Outgoing message i carries every field's send region of entry i (field after field),
//! incoming message j every field's receive region of entry j. A rank's *mailbox* (device
//! memory, exported to same-node peers) holds two receive slots (epoch parity: an exchange
//! never overwrites what the peer still unpacks) and then the flags: arrival flag j per
//! incoming message, credit flag i per outgoing message.

use serde::Serialize;

use crate::domain::{HaloPlan, Neighbour, Subarray};

/// One entry of a rank's exchange: what it sends to and receives from one peer (either may be
/// absent). The peer's entry for this rank with the matching tag holds the other ends. Plain
/// data: set-up copies a part's entries to each neighbour of the same extents in one move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The peer's rank (may be this rank).
    pub peer: i32,
    /// Tag of the outgoing message, and of the incoming one.
    pub send_tag: i32,
    pub recv_tag: i32,
    /// The region of each field sent, and received.
    pub send: Option<Subarray>,
    pub recv: Option<Subarray>,
    /// How errors name the entry, e.g. `+x halo`.
    pub name: EntryName,
}

/// How errors name an entry, formatted only when one is reported (a rank sets up its
/// neighbours' entries too, and names them never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryName {
    /// A halo exchange's neighbour in this direction: `+x halo`.
    Halo([i8; 3]),
    /// A pattern's block: `block 3`.
    Block(usize),
}

impl std::fmt::Display for EntryName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryName::Halo(d) => write!(f, "{} halo", direction_name(*d)),
            EntryName::Block(b) => write!(f, "block {b}"),
        }
    }
}

/// One direction of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Send,
    Recv,
}

impl Entry {
    /// The entries of a halo plan: one per neighbour, both ways.
    pub fn of_plan(plan: &HaloPlan) -> Vec<Entry> {
        Entry::of_neighbours(&plan.neighbours)
    }

    /// The entries of a plan's neighbours.
    pub fn of_neighbours(neighbours: &[Neighbour]) -> Vec<Entry> {
        neighbours
            .iter()
            .map(|n| Entry {
                peer: n.rank,
                send_tag: n.send_tag,
                recv_tag: n.recv_tag,
                send: n.send,
                recv: n.recv,
                name: EntryName::Halo(n.direction),
            })
            .collect()
    }

    /// True when something travels on `side`.
    pub fn has(&self, side: Side) -> bool {
        match side {
            Side::Send => self.send.is_some(),
            Side::Recv => self.recv.is_some(),
        }
    }

    fn elems(&self, side: Side) -> u64 {
        match side {
            Side::Send => self.send.map_or(0, |s| s.elems()),
            Side::Recv => self.recv.map_or(0, |s| s.elems()),
        }
    }
}

/// Bytes between flags (apart, so peers storing them do not share a line).
pub(crate) const FLAG_STRIDE: u64 = 64;

/// Message starts are aligned to this many bytes.
const ALIGN: u64 = 256;

/// How one neighbour's messages travel (SPEC 12's per-peer choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Link {
    /// The neighbour is this rank (a periodic dimension with one process): pack stores into
    /// this rank's own receive slot, unpack reads it, ordered by the stream.
    Local,
    /// Host-staged MPI: pack stores into pinned host memory, MPI carries it.
    Staged,
    /// Device-direct: pack stores into the peer's receive slot (IPC) and raises its flag.
    Direct,
}

impl Link {
    /// Name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Link::Local => "local",
            Link::Staged => "mpi",
            Link::Direct => "ipc",
        }
    }
}

/// The byte layout of one rank's messages and flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mailbox {
    /// Bytes reserved for message i, outgoing and incoming (the larger): every field's region,
    /// rounded up to 8 bytes (MPI carries whole f64 words).
    pub message_bytes: Vec<u64>,
    /// Bytes of one cell over all fields: what one element of a region takes in a message.
    pub elem_bytes: u64,
    /// Start of message i inside a receive slot, and inside the send staging.
    pub offsets: Vec<u64>,
    /// Bytes of one receive slot (and of the send staging).
    pub slot_bytes: u64,
}

impl Mailbox {
    /// The layout of the messages of `entries`, one region per field, of cells of `cells`
    /// bytes each (per field).
    ///
    /// # Errors
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) when the sizes overflow 64 bits
    /// (checked, never wrapped).
    pub fn of(entries: &[Entry], cells: &[u64]) -> crate::Result<Mailbox> {
        let overflow = || {
            crate::Error::InvalidInput(format!(
                "the halo messages of {} fields of cells of {cells:?} bytes overflow 64-bit byte sizes",
                cells.len()
            ))
        };
        let elem_bytes = cells
            .iter()
            .try_fold(0_u64, |sum, &c| sum.checked_add(c))
            .ok_or_else(overflow)?;
        let round = |bytes: u64, to: u64| bytes.checked_next_multiple_of(to);
        let message_bytes: Vec<u64> = entries
            .iter()
            .map(|n| {
                let elems = n.elems(Side::Send).max(n.elems(Side::Recv));
                elems
                    .checked_mul(elem_bytes)
                    .and_then(|b| round(b, 8))
                    .ok_or_else(overflow)
            })
            .collect::<crate::Result<_>>()?;
        let mut offsets = Vec::with_capacity(message_bytes.len());
        let mut at: u64 = 0;
        for &bytes in &message_bytes {
            offsets.push(at);
            at = round(bytes, ALIGN)
                .and_then(|b| at.checked_add(b))
                .ok_or_else(overflow)?;
        }
        let slot_bytes = at.max(ALIGN);
        // The whole mailbox (two slots and the flags) must be addressable too.
        slot_bytes
            .checked_mul(2)
            .and_then(|b| b.checked_add(2 * (offsets.len() as u64 + 1) * FLAG_STRIDE))
            .ok_or_else(overflow)?;
        Ok(Mailbox {
            message_bytes,
            elem_bytes,
            offsets,
            slot_bytes,
        })
    }

    /// Bytes of `entry`'s message on `side`, rounded up to 8 (what MPI carries).
    pub fn side_bytes(&self, entry: &Entry, side: Side) -> u64 {
        (entry.elems(side) * self.elem_bytes).div_ceil(8) * 8
    }

    /// Bytes of the whole mailbox: two slots, then 2 flags per message.
    pub fn bytes(&self) -> u64 {
        2 * self.slot_bytes + 2 * self.offsets.len().max(1) as u64 * FLAG_STRIDE
    }

    /// Address of incoming message `j` in receive slot `slot` of a mailbox at `base`.
    pub fn recv_addr(&self, base: u64, slot: u32, j: usize) -> u64 {
        base + u64::from(slot) * self.slot_bytes + self.offsets[j]
    }

    /// Address of incoming message `j`'s arrival flag.
    pub fn arrival_flag(&self, base: u64, j: usize) -> u64 {
        base + 2 * self.slot_bytes + j as u64 * FLAG_STRIDE
    }

    /// Address of outgoing message `i`'s credit flag.
    pub fn credit_flag(&self, base: u64, i: usize) -> u64 {
        base + 2 * self.slot_bytes + (self.offsets.len() + i) as u64 * FLAG_STRIDE
    }
}

/// The entry among `entries` that receives what rank `from` sends with tag `tag`.
pub(crate) fn receiving_entry(entries: &[Entry], from: i32, tag: i32) -> Option<usize> {
    entries
        .iter()
        .position(|n| n.peer == from && n.recv_tag == tag && n.recv.is_some())
}

/// The entry among `entries` that sends to rank `to` with tag `tag`.
pub(crate) fn sending_entry(entries: &[Entry], to: i32, tag: i32) -> Option<usize> {
    entries
        .iter()
        .position(|n| n.peer == to && n.send_tag == tag && n.send.is_some())
}

/// A direction as text: `+x`, `-x+y`, `+x-y+z`.
pub fn direction_name(d: [i8; 3]) -> String {
    let mut name = String::new();
    for (k, axis) in ["x", "y", "z"].iter().enumerate() {
        match d[k] {
            -1 => name.push_str(&format!("-{axis}")),
            1 => name.push_str(&format!("+{axis}")),
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{DomainSpec, ElemType};

    fn spec(procs: [u32; 3], periodic: [bool; 3]) -> DomainSpec {
        DomainSpec {
            grid: [12, 10, 9],
            procs: Some(procs),
            periodic,
            halo: [1, 2, 1],
            elem: ElemType::F32,
            fields: 3,
            layout: Default::default(),
        }
    }

    #[test]
    fn every_message_has_a_receiver_with_the_same_size() {
        for (procs, periodic) in [
            ([2, 2, 1], [true, false, true]),
            ([3, 1, 2], [false, true, false]),
            ([1, 1, 1], [true, true, true]),
            ([2, 1, 1], [true, true, false]),
        ] {
            let spec = spec(procs, periodic);
            let ranks = (procs[0] * procs[1] * procs[2]) as i32;
            let plans: Vec<Vec<Entry>> = (0..ranks)
                .map(|r| Entry::of_plan(&HaloPlan::compile(&spec, ranks, r).expect("plan")))
                .collect();
            let cells = spec.cell_sizes();
            let layout = |entries: &[Entry]| Mailbox::of(entries, &cells).expect("layout");
            for (me, plan) in plans.iter().enumerate() {
                let mine = layout(plan);
                assert_eq!(mine.offsets.len(), plan.len());
                for (i, n) in plan.iter().enumerate() {
                    let peer = &plans[n.peer as usize];
                    let j =
                        receiving_entry(peer, me as i32, n.send_tag).expect("a receiving entry");
                    assert_eq!(
                        layout(peer).message_bytes[j],
                        mine.message_bytes[i],
                        "{procs:?} rank {me} entry {i}"
                    );
                    assert_eq!(
                        layout(peer).side_bytes(&peer[j], Side::Recv),
                        mine.side_bytes(n, Side::Send)
                    );
                    assert_eq!(sending_entry(plan, n.peer, n.send_tag), Some(i));
                    assert!(mine.offsets[i] % ALIGN == 0);
                }
                let base = 1 << 20;
                let last = plan.len().saturating_sub(1);
                assert!(mine.credit_flag(base, last) + 4 <= base + mine.bytes());
                assert!(
                    mine.recv_addr(base, 1, last) + mine.message_bytes.last().copied().unwrap_or(0)
                        <= mine.arrival_flag(base, 0)
                );
            }
        }
    }

    #[test]
    fn directions_are_named_by_their_axes() {
        assert_eq!(direction_name([1, 0, 0]), "+x");
        assert_eq!(direction_name([-1, 1, 0]), "-x+y");
        assert_eq!(direction_name([1, -1, 1]), "+x-y+z");
    }
}
