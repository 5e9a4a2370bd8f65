//! Closing an exchange: symmetric on every rank, and memory a kernel may still use is never
//! freed (`drop` without `close` leaks it, with a log line, rather than free it early).

use super::*;

impl<B: Backend> MessageExchange<'_, B> {
    /// Ends the exchange: waits (bounded) for its last kernels, then, when it was set up with
    /// `ipc`, for every rank at a barrier (a peer may still store a credit into our mailbox;
    /// every rank of an `ipc` exchange enters it, whatever links it got), and frees its
    /// memory. What cannot be shown unused (the memory kernels touch, the fields they used) is
    /// leaked rather than freed. Collective over the exchange's ranks with `ipc`.
    ///
    /// # Errors
    /// Time-out and backend errors of the waits, MPI errors of the barrier; the memory is
    /// leaked then.
    pub fn close(&mut self) -> Result<()> {
        if matches!(self.health, Health::Closed) {
            return Ok(());
        }
        // Dropped from whichever thread, with whichever device the application made current.
        let _current = match self.backend.enter() {
            Ok(current) => current,
            Err(e) => {
                self.health = Health::Closed;
                std::mem::forget(std::mem::take(&mut self.in_use));
                return Err(e.again("closing a halo exchange (its memory is leaked: its device could not be made current): "));
            }
        };
        self.health = Health::Closed;
        let leak = |this: &mut Self, e: Error| {
            std::mem::forget(std::mem::take(&mut this.in_use));
            Err(e.again("closing a halo exchange (its memory is leaked, so no kernel or peer can use freed memory): "))
        };
        if let Err(e) = self.kernels_done() {
            return leak(self, e);
        }
        // A one launch's blocks raise their done words before their last flag's store has landed
        // in a peer's memory (`hp_regions_block`): the launch's end, not its words, says it has.
        let deadline = deadline_in(self.options.timeout);
        if let Err(e) = self.backend.event_synchronize(&self.last_unpack, deadline) {
            return leak(self, e);
        }
        // Fused mode's last signal, after the application's stores that came before it.
        if let Some(fused) = &self.memory.fused {
            if let Err(e) = fused.wait(self.backend) {
                return leak(self, e);
            }
        }
        // A copy raising the device's abort word that was not seen complete.
        let abort_stream = &self.memory.abort.stream;
        let deadline = deadline_in(self.options.timeout);
        if let Err(e) = self.backend.stream_synchronize(abort_stream, deadline) {
            return leak(self, e);
        }
        if self.options.transport.within_node() {
            // Ranks arrive after their own kernels' waits (each up to twice the time-out).
            let deadline = deadline_in(self.options.timeout.saturating_mul(3));
            if let Err(e) = self.mpi.barrier(deadline) {
                return leak(self, e);
            }
        }
        self.in_use.clear();
        // SAFETY: dropped once (`closed` is set above); no kernel of ours uses it (the last
        // one queued is complete) and no peer stores into it any more (every rank passed the
        // barrier after its last exchange). Peers' mappings go first (field order).
        unsafe { ManuallyDrop::drop(&mut self.memory) };
        Ok(())
    }
}

impl<B: Backend> Drop for MessageExchange<'_, B> {
    /// [`MessageExchange::close`], logging what it could not do.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("{e}");
        }
    }
}
