//! A rank's entries (what it sends to and receives from each peer) and where their messages
//! live, computed from its entries alone, so that a peer can compute the same addresses for it
//! (device-direct stores go straight into them).
//!
//! Outgoing message i carries every field's send region of entry i (field after field),
//! incoming message j every field's receive region of entry j. A rank's *mailbox* (device
//! memory, exported to same-node peers) holds two receive slots (epoch parity: an exchange
//! never overwrites what the peer still unpacks) and then the flags: arrival flag j per
//! incoming message, credit flag i per outgoing message.
//!
//! An [`EntryTable`] holds the entries of a rank and of each rank it exchanges with, sharing
//! what ranks of the same extents have in common.

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use crate::domain::HaloPlan;
use crate::domain::{Neighbour, Subarray};

/// One entry of a rank's exchange: what it sends to and receives from one peer (either may be
/// absent). The peer's entry for this rank with the matching tag holds the other ends. Plain
/// data: set-up copies a part's entries to each neighbour of the same extents in one move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The peer's rank (may be this rank).
    pub peer: i32,
    /// Tag of the outgoing message, and of the incoming one.
    pub send_tag: i32,
    /// Tag of the incoming message.
    pub recv_tag: i32,
    /// The region of each field sent, and received.
    pub send: Option<Subarray>,
    /// The region of each field received.
    pub recv: Option<Subarray>,
    /// How errors name the entry, e.g. `+x halo`.
    pub name: EntryName,
}

/// How errors name an entry, formatted only when one is reported (a rank sets up its
/// neighbours' entries too, and names them never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryName {
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
pub enum Side {
    /// What this rank sends.
    Send,
    /// What this rank receives.
    Recv,
}

impl Entry {
    /// The entries of a halo plan: one per neighbour, both ways (what tests compare set-up's
    /// [`EntryTable`] with).
    #[cfg(test)]
    pub fn of_plan(plan: &HaloPlan) -> Vec<Entry> {
        plan.neighbours.iter().map(Entry::of_neighbour).collect()
    }

    /// The entry of one of a plan's neighbours.
    pub fn of_neighbour(n: &Neighbour) -> Entry {
        Entry {
            peer: n.rank,
            send_tag: n.send_tag,
            recv_tag: n.recv_tag,
            send: n.send,
            recv: n.recv,
            name: EntryName::Halo(n.direction),
        }
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

/// The entries of a rank and of each rank it exchanges with, by rank: what an exchange's
/// set-up reads of every peer (a peer's entries give the layout of the mailbox it stores
/// into, and which of its messages pairs with each of ours).
///
/// Ranks whose parts have the same extents have the same entries but for their peers (one
/// list in an evenly split grid, at most 8 in a halo exchange), so the table holds each
/// distinct list once, as a *form* whose peers it ignores, and per rank which entries of a
/// form it has and with which peers: 8 bytes an entry rather than an entry's 160, in three
/// allocations for all ranks. A rank's set-up writes only that much per neighbour.
///
/// Invariant: `ranks` increases strictly, and every item indexes `forms`.
#[derive(Debug, Clone, Default)]
pub struct EntryTable {
    /// Every form's entries, form after form.
    forms: Vec<Entry>,
    /// The known ranks in increasing order, each with the end of its items (its start is the
    /// previous rank's end).
    ranks: Vec<(i32, usize)>,
    /// Every known rank's entries, rank after rank: an index into `forms`, and the peer.
    items: Vec<(u32, i32)>,
}

impl EntryTable {
    /// An empty table with room for `forms` entries of forms, `ranks` ranks and `items`
    /// entries of ranks.
    pub fn with_capacity(forms: usize, ranks: usize, items: usize) -> EntryTable {
        EntryTable {
            forms: Vec::with_capacity(forms),
            ranks: Vec::with_capacity(ranks),
            items: Vec::with_capacity(items),
        }
    }

    /// Adds a form, `entries` (their peers are never read), and returns the index of its first
    /// entry: what [`EntryTable::push`] adds to an index within it.
    ///
    /// # Panics
    /// When the table would hold more than `u32::MAX` entries of forms.
    pub fn add_form(&mut self, entries: impl IntoIterator<Item = Entry>) -> usize {
        let first = self.forms.len();
        self.forms.extend(entries);
        assert!(
            u32::try_from(self.forms.len()).is_ok(),
            "more than u32::MAX entries of forms"
        );
        first
    }

    /// Adds `rank`'s entries, each an entry of a form (its index in the table, as
    /// [`EntryTable::add_form`] gives them) with its peer.
    ///
    /// # Panics
    /// When `rank` is not greater than every rank added before it. An index that is not that
    /// of an entry of a form panics where the entry is read.
    pub fn push(&mut self, rank: i32, entries: impl IntoIterator<Item = (usize, i32)>) {
        assert!(
            self.ranks.last().is_none_or(|&(last, _)| last < rank),
            "rank {rank} added out of order"
        );
        // An index past the forms' entries panics where it is read; one within them is below
        // `forms.len()`, which add_form keeps within u32.
        let items = entries.into_iter().map(|(i, peer)| (i as u32, peer));
        self.items.extend(items);
        self.ranks.push((rank, self.items.len()));
    }

    /// Adds `rank`'s `entries` as a form of their own.
    ///
    /// # Panics
    /// Those of [`EntryTable::push`] and [`EntryTable::add_form`].
    pub fn push_list(&mut self, rank: i32, entries: &[Entry]) {
        let first = self.add_form(entries.iter().copied());
        let peers = entries.iter().enumerate().map(|(i, e)| (first + i, e.peer));
        self.push(rank, peers);
    }

    /// The table narrowed to the messages between each known rank and the peers `keep` gives
    /// it (`keep(rank)`): each rank's entries with such a peer, ranks left with none kept
    /// empty.
    pub(crate) fn narrowed(&self, keep: impl Fn(i32) -> Vec<i32>) -> EntryTable {
        let mut out = EntryTable::with_capacity(0, self.ranks.len(), 0);
        for (rank, entries) in self.iter() {
            let peers = keep(rank);
            let kept: Vec<Entry> = entries.iter().filter(|e| peers.contains(&e.peer)).collect();
            out.push_list(rank, &kept);
        }
        out
    }

    /// The entries of `rank`, when known.
    pub fn get(&self, rank: i32) -> Option<RankEntries<'_>> {
        let k = self.ranks.binary_search_by_key(&rank, |&(r, _)| r).ok()?;
        Some(self.rank_entries(k))
    }

    /// Every known rank and its entries, in increasing rank.
    pub fn iter(&self) -> impl Iterator<Item = (i32, RankEntries<'_>)> {
        (0..self.ranks.len()).map(|k| (self.ranks[k].0, self.rank_entries(k)))
    }

    fn rank_entries(&self, k: usize) -> RankEntries<'_> {
        let start = k.checked_sub(1).map_or(0, |p| self.ranks[p].1);
        RankEntries {
            forms: &self.forms,
            items: &self.items[start..self.ranks[k].1],
        }
    }
}

/// One rank's entries in an [`EntryTable`], in order.
#[derive(Debug, Clone, Copy)]
pub struct RankEntries<'a> {
    forms: &'a [Entry],
    items: &'a [(u32, i32)],
}

impl<'a> RankEntries<'a> {
    /// The entries, each made whole (its form's entry with this rank's peer).
    pub fn iter(self) -> impl Iterator<Item = Entry> + 'a {
        let forms = self.forms;
        self.items.iter().map(move |&(i, peer)| Entry {
            peer,
            ..forms[i as usize]
        })
    }

    /// The entries, made whole, in a vector of their own.
    pub fn to_vec(self) -> Vec<Entry> {
        self.iter().collect()
    }
}

/// Bytes between flags (apart, so peers storing them do not share a line).
pub(crate) const FLAG_STRIDE: u64 = 64;

/// Message starts are aligned to this many bytes.
const ALIGN: u64 = 256;

/// How one neighbour's messages travel (SPEC 12's per-peer choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Link {
    /// The neighbour is this rank (a periodic dimension with one process): the pack copies
    /// each message straight into the halo it fills, nothing to unpack (field payloads whose
    /// halo has the message's shape, as every plan's does); otherwise it stores into this
    /// rank's own receive slot and the unpack reads it, ordered by the stream.
    #[serde(rename = "local")]
    Local,
    /// Host-staged MPI: pack stores into pinned host memory, MPI carries it.
    #[serde(rename = "mpi")]
    Staged,
    /// Device-direct: pack stores into the peer's receive slot (IPC) and raises its flag.
    #[serde(rename = "ipc")]
    Direct,
    /// GPU-aware MPI: pack stores into device memory, MPI carries it from there
    /// ([`GpuAwareMpi`](crate::transport::GpuAwareMpi)); the CPU moves it as for `Staged`.
    #[serde(rename = "gpu-mpi")]
    DeviceMpi,
    /// NCCL (RCCL): pack stores into device memory, a grouped send and receive queued on the
    /// exchange's stream carries it, the unpack follows on the stream.
    #[serde(rename = "nccl")]
    Nccl,
}

impl Link {
    /// Name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Link::Local => "local",
            Link::Staged => "mpi",
            Link::Direct => "ipc",
            Link::DeviceMpi => "gpu-mpi",
            Link::Nccl => "nccl",
        }
    }

    /// Every route, in the order `auto` prefers them within a node (`local` first).
    pub const ALL: [Link; 5] = [
        Link::Local,
        Link::Direct,
        Link::Nccl,
        Link::DeviceMpi,
        Link::Staged,
    ];

    /// The CPU hands the message to MPI between pack and unpack (`Staged`, `DeviceMpi`).
    pub fn through_mpi(self) -> bool {
        matches!(self, Link::Staged | Link::DeviceMpi)
    }

    /// The message lies in the exchange's device staging between pack and unpack
    /// (`DeviceMpi`, `Nccl`).
    pub fn device_staged(self) -> bool {
        matches!(self, Link::DeviceMpi | Link::Nccl)
    }
}

impl std::str::FromStr for Link {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Link> {
        Link::ALL.into_iter().find(|l| l.name() == s).ok_or_else(|| {
            crate::Error::InvalidInput(format!(
                "unknown route '{s}'; known: ipc (device-direct within a node), nccl (NCCL or RCCL), gpu-mpi (MPI from device memory), mpi (host-staged MPI), local (the rank itself)"
            ))
        })
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
    pub fn of<E: Borrow<Entry>>(
        entries: impl IntoIterator<Item = E>,
        cells: &[u64],
    ) -> crate::Result<Mailbox> {
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
            .into_iter()
            .map(|n| {
                let n = n.borrow();
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
pub(crate) fn receiving_entry<E: Borrow<Entry>>(
    entries: impl IntoIterator<Item = E>,
    from: i32,
    tag: i32,
) -> Option<usize> {
    entries.into_iter().position(|n| {
        let n = n.borrow();
        n.peer == from && n.recv_tag == tag && n.recv.is_some()
    })
}

/// The entry among `entries` that sends to rank `to` with tag `tag`.
pub(crate) fn sending_entry<E: Borrow<Entry>>(
    entries: impl IntoIterator<Item = E>,
    to: i32,
    tag: i32,
) -> Option<usize> {
    entries.into_iter().position(|n| {
        let n = n.borrow();
        n.peer == to && n.send_tag == tag && n.send.is_some()
    })
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
    fn a_table_gives_each_rank_its_entries_whether_listed_or_sharing_a_form() {
        let spec = spec([3, 1, 2], [true, false, true]);
        let plans: Vec<Vec<Entry>> = (0..6)
            .map(|r| Entry::of_plan(&HaloPlan::compile(&spec, 6, r).expect("plan")))
            .collect();
        let mut table = EntryTable::default();
        table.push_list(0, &plans[0]);
        // Rank 2's entries as those of rank 0's form (the same extents, and the same
        // directions present) with its own peers.
        assert_eq!(plans[2].len(), plans[0].len());
        table.push(2, plans[2].iter().enumerate().map(|(i, e)| (i, e.peer)));
        table.push_list(5, &plans[5]);
        for r in [0, 2, 5] {
            let entries = table.get(r).expect("a known rank");
            assert_eq!(entries.to_vec(), plans[r as usize], "rank {r}");
        }
        assert!(table.get(1).is_none() && table.get(4).is_none() && table.get(6).is_none());
        let known: Vec<i32> = table.iter().map(|(r, _)| r).collect();
        assert_eq!(known, [0, 2, 5]);
    }

    #[test]
    #[should_panic(expected = "out of order")]
    fn a_table_refuses_ranks_out_of_order() {
        let mut table = EntryTable::default();
        table.push(3, []);
        table.push(2, []);
    }

    #[test]
    fn directions_are_named_by_their_axes() {
        assert_eq!(direction_name([1, 0, 0]), "+x");
        assert_eq!(direction_name([-1, 1, 0]), "-x+y");
        assert_eq!(direction_name([1, -1, 1]), "+x-y+z");
    }
}
