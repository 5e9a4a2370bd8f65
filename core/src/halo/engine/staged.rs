//! Host-staged progress: the CPU moves each host-staged message between the pack and the
//! unpack, sending it once its pack is seen done and raising its arrival flag once it is in.

use super::*;

impl<B: Backend> MessageExchange<'_, B> {
    /// True when the injected fault drops outgoing message `i` (never a local one).
    pub(super) fn dropped(&self, i: usize) -> bool {
        self.dropped == Some(i) && self.routes[i].link != Link::Local
    }

    /// The host-staged messages that go (`Send`) or come (`Recv`), by entry.
    pub(super) fn staged(&self, side: Side) -> Vec<usize> {
        (0..self.routes.len())
            .filter(|&i| self.routes[i].link.through_mpi() && self.entries[i].has(side))
            .collect()
    }

    pub(super) fn send(&mut self, i: usize) -> Result<()> {
        if self.dropped(i) {
            return Ok(());
        }
        let region = self.staged_region(Side::Send, i);
        let dest = self.entries[i].peer;
        self.mpi.isend(i, region, dest)
    }

    /// Taskqueue: sends each host-staged message once the pack kernel raised its packed flag.
    pub(super) fn send_each_when_packed(&mut self, deadline: Instant) -> Result<()> {
        let mut waiting = self.staged(Side::Send);
        let since = Instant::now();
        while !waiting.is_empty() {
            let mut still = Vec::with_capacity(waiting.len());
            for i in waiting {
                if self.epoch_word(self.packed_flag(i)).load(Ordering::Acquire) == self.epoch {
                    self.send(i)?;
                } else {
                    still.push(i);
                }
            }
            waiting = still;
            if !waiting.is_empty() && Instant::now() >= deadline {
                return Err(self.stuck(
                    "packed on the device",
                    &waiting,
                    deadline.saturating_duration_since(since),
                ));
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// Waits for every host-staged message, raising each one's arrived flag as MPI delivers it:
    /// the taskqueue's unpack waits for these flags; under the baseline they only tell a
    /// time-out which messages never came.
    pub(super) fn raise_each_on_arrival(&mut self, deadline: Instant) -> Result<()> {
        let since = Instant::now();
        while self.mpi.pending_recvs() > 0 {
            if let Some(j) = self.mpi.test_any_recv()? {
                self.epoch_word(self.arrived_flag(j))
                    .store(self.epoch, Ordering::Release);
                continue;
            }
            if Instant::now() >= deadline {
                let pending: Vec<usize> = self
                    .staged(Side::Recv)
                    .into_iter()
                    .filter(|&j| {
                        self.epoch_word(self.arrived_flag(j))
                            .load(Ordering::Acquire)
                            != self.epoch
                    })
                    .collect();
                return Err(self.stuck(
                    "received",
                    &pending,
                    deadline.saturating_duration_since(since),
                ));
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// A time-out after `limit` naming the messages that were not `what` in time.
    pub(super) fn stuck(
        &self,
        what: &str,
        messages: &[usize],
        limit: std::time::Duration,
    ) -> Error {
        let named: Vec<String> = messages
            .iter()
            .map(|&i| {
                let n = &self.entries[i];
                format!("{} (rank {})", n.name, n.peer)
            })
            .collect();
        Error::Timeout {
            rank: Some(self.rank),
            what: format!(
                "in the halo exchange: host-staged messages not {what}: {}",
                named.join(", ")
            ),
            after: limit,
        }
    }

    /// Entry `i`'s outgoing (`Send`) or incoming (`Recv`) message where MPI moves it: the
    /// pinned staging, or the device staging for GPU-aware MPI (an address MPI reads and
    /// writes as device memory; the CPU never touches it).
    pub(super) fn staged_region(&self, side: Side, i: usize) -> HostRegion {
        let staging = &self.memory.staging;
        let (owner, host): (Arc<dyn Send + Sync>, *mut u8) = match (self.routes[i].link, side) {
            (Link::DeviceMpi, Side::Send) => {
                let at = lock::<B::DeviceMemory>(&staging.device_send).device_addr();
                (staging.device_send.clone(), at as usize as *mut u8)
            }
            (Link::DeviceMpi, Side::Recv) => {
                let at = lock::<B::DeviceMemory>(&staging.device_recv).device_addr();
                (staging.device_recv.clone(), at as usize as *mut u8)
            }
            (_, Side::Send) => (staging.send.clone(), staging.send_host),
            (_, Side::Recv) => (staging.recv.clone(), staging.recv_host),
        };
        let bytes = self.layout.side_bytes(&self.entries[i], side);
        // SAFETY: (1) message i's bytes lie inside the staging allocation (Mailbox layout, one
        // slot), 8-byte aligned (offsets are 256-aligned, sizes rounded to 8), alive as long
        // as `owner`; (2) the CPU hands it to MPI only between the kernels that touch it: a
        // send after the pack was seen complete, a receive before the pack launch and after
        // the previous unpack was seen complete.
        unsafe {
            HostRegion::new(
                host.wrapping_add(self.layout.offsets[i] as usize)
                    .cast::<f64>(),
                (bytes / 8) as usize,
                owner,
            )
        }
    }
}
