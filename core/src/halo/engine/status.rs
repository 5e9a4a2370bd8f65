//! The status words the kernels and the CPU share: per message a packed and an arrived flag,
//! the kernels' outcome words, and the abort word that ends every waiting block.

use super::*;

/// Where the words of the pinned status block lie, in bytes: u32 pack outcomes and u32
/// unpack outcomes (one per message each), then the u64 abort flag (the source of the device's
/// copy, [`DeviceAbort`]), then u64 packed and u64 arrived flags (one per message each).
/// `8 * messages` keeps the u64s 8-byte aligned.
#[derive(Debug, Clone, Copy)]
pub(super) struct StatusLayout {
    pub(super) messages: usize,
}

impl StatusLayout {
    pub(super) fn abort(self) -> usize {
        8 * self.messages
    }

    pub(super) fn packed(self, i: usize) -> usize {
        self.abort() + 8 + 8 * i
    }

    pub(super) fn arrived(self, j: usize) -> usize {
        self.packed(self.messages + j)
    }

    pub(super) fn bytes(self) -> usize {
        self.arrived(self.messages)
    }
}

impl<B: Backend> MessageExchange<'_, B> {
    /// Copies the status block's abort word to the device's, where the waits poll it, and waits
    /// for the copy (bounded). A copy that fails or is late is only logged: the failure it
    /// follows is the error the caller gets, and every device wait ends by its own time-out.
    pub(super) fn raise_device_abort(&self) {
        let memory = &self.memory;
        let offset = self.status_layout().abort();
        // SAFETY: (1) the status block and the abort word live in `memory`, freed only in
        // `close` after every kernel and this copy completed (or leaked when that is not seen);
        // (2) kernels only read the abort word, and the CPU writes the source word only here,
        // once the exchange failed.
        let copied = unsafe {
            self.backend.copy_to_device_async(
                &memory.abort.word,
                0,
                &memory.status,
                offset,
                8,
                &memory.abort.stream,
            )
        }
        .and_then(|()| {
            let wait = self.options.timeout.min(std::time::Duration::from_secs(1));
            self.backend
                .stream_synchronize(&memory.abort.stream, deadline_in(wait))
        });
        if let Err(e) = copied {
            tracing::warn!(
                rank = self.rank,
                "raising the device's abort flag failed: {e}"
            );
        }
    }

    pub(super) fn status_layout(&self) -> StatusLayout {
        StatusLayout {
            messages: self.routes.len(),
        }
    }

    /// Byte offset of message `i`'s packed flag in the status block.
    pub(super) fn packed_flag(&self, i: usize) -> usize {
        self.status_layout().packed(i)
    }

    /// Byte offset of message `j`'s arrived flag in the status block.
    pub(super) fn arrived_flag(&self, j: usize) -> usize {
        self.status_layout().arrived(j)
    }

    /// Outcome word `index` (pack outcomes, then unpack outcomes) of the status block.
    pub(super) fn outcome_word(&self, index: usize) -> &AtomicU32 {
        // SAFETY: index < 2 * messages: inside the status allocation (StatusLayout), 4-byte
        // aligned (page-aligned base); it lives as long as &self; kernels access it only
        // atomically.
        unsafe { AtomicU32::from_ptr(self.memory.status.host_ptr().cast::<u32>().add(index)) }
    }

    /// The u64 flag at byte `offset` of the status block (from [`StatusLayout`]).
    pub(super) fn epoch_word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offsets from StatusLayout lie inside the allocation, 8-byte aligned
        // (page-aligned base); it lives as long as &self; kernels access it only atomically.
        unsafe { AtomicU64::from_ptr(self.memory.status.host_ptr().add(offset).cast::<u64>()) }
    }

    pub(super) fn check_status(&self) -> Result<()> {
        let n = self.routes.len();
        let mut stuck = Vec::new();
        for index in 0..2 * n {
            // A plain load first: on every call of every exchange, and almost always OK (a
            // locked swap of each word would cost a microsecond per call).
            let word = self.outcome_word(index);
            if word.load(Ordering::Acquire) == HP_MESSAGE_OK {
                continue;
            }
            let word = word.swap(HP_MESSAGE_OK, Ordering::AcqRel);
            if word == HP_MESSAGE_OK {
                continue;
            }
            let (i, side) = if index < n {
                (index, "sending to")
            } else {
                (index - n, "receiving from")
            };
            let entry = &self.entries[i];
            let why = match word {
                HP_MESSAGE_TIMED_OUT => "timed out on the device",
                HP_MESSAGE_ABORTED => "aborted",
                _ => "ended in an unknown state",
            };
            stuck.push(format!("{side} rank {} ({}) {why}", entry.peer, entry.name));
        }
        if stuck.is_empty() {
            return Ok(());
        }
        Err(Error::Timeout {
            rank: Some(self.rank),
            what: format!("in the halo exchange: {}", stuck.join("; ")),
            after: self.options.timeout,
        })
    }
}
