//! What the thesis benchmark reads of an exchange it runs (its `lib-*` variants): the synthetic
//! payload's iteration and checks, device timestamps, and a closing barrier. Outside the timed
//! region; code that only exchanges never calls these.

use super::*;

impl<B: Backend> MessageExchange<'_, B> {
    /// Sets the global iteration the next exchange's synthetic values are made of.
    pub fn set_iteration(&mut self, iteration: u32) {
        self.iteration = iteration;
    }

    /// Sets which elements a synthetic unpack checks (every one unless told).
    pub fn set_verify(&mut self, verify: Verify) {
        self.verify = verify;
    }

    /// Whether the region kernels of later exchanges stamp each grid block's start and end
    /// (`hp_regions_args.times`). Off unless told; off, a stamp costs the kernels one branch
    /// on a parameter. The records are allocated at the next [`Self::start`], for its tables;
    /// launches captured into a graph, and those of the plain form, stamp nothing.
    pub fn record_device_times(&mut self, on: bool) {
        self.record_times = on;
    }

    /// True once an exchange was started.
    pub fn has_run(&self) -> bool {
        self.in_flight != InFlight::Never
    }

    /// An MPI barrier over the exchange's ranks, bounded by `deadline`.
    ///
    /// # Errors
    /// MPI and time-out errors.
    pub fn barrier(&mut self, deadline: Instant) -> Result<()> {
        self.mpi.barrier(deadline)
    }

    /// Synthetic payload: per entry, what the last exchange's unpack found in the incoming
    /// message (folded over its grid blocks; all zero for an entry that receives nothing), and
    /// zeroes the records so a later exchange's missing unpack shows as no checks.
    ///
    /// # Errors
    /// [`Error::Internal`] while kernels may still run (call after [`Self::wait`]) or without
    /// a synthetic exchange run.
    pub fn take_checks(&mut self) -> Result<Vec<hp_block_check>> {
        if !matches!(self.in_flight, InFlight::Finished { pending: false, .. }) {
            return Err(Error::Internal(
                "check records read while the exchange's kernels may still run".into(),
            ));
        }
        let (Some(checks), Some(tables)) =
            (&self.memory.checks, self.memory.tables.get(&self.current))
        else {
            return Err(Error::Internal("no synthetic exchange has run".into()));
        };
        let ptr = checks.host_ptr().cast::<hp_block_check>();
        let grid = tables.unpack[0].blocks as usize;
        // SAFETY: the records hold `grid` entries (allocated for this table's grid); no kernel
        // writes them: the last unpack was seen complete (checked above).
        let records = unsafe {
            let taken = std::slice::from_raw_parts(ptr, grid).to_vec();
            std::ptr::write_bytes(ptr, 0, grid);
            taken
        };
        Ok(tables
            .unpack_ranges
            .iter()
            .map(|range| {
                let mut folded = hp_block_check::default();
                let Some((first, count)) = *range else {
                    return folded;
                };
                for c in &records[first as usize..(first + count) as usize] {
                    merge_checks(&mut folded, c);
                }
                folded
            })
            .collect())
    }

    /// Synthetic payload, device times recorded ([`Self::record_device_times`]): per entry,
    /// the last exchange's stamps folded over the grid blocks of its outgoing message
    /// (`pack_*`) and of its incoming one (`unpack_*`): the earliest start and the latest end
    /// of each, zero for a direction the entry does not travel or a block that never stamped.
    /// Zeroes the records, so that a later exchange's block that never ran shows as zero.
    ///
    /// # Errors
    /// [`Error::Internal`] while kernels may still run (call after [`Self::wait`]), or
    /// without a synthetic exchange run with device times recorded (fields' regions may be
    /// paired across entries: their grid blocks are not per entry).
    pub fn take_device_times(&mut self) -> Result<Vec<hp_block_times>> {
        if !matches!(self.in_flight, InFlight::Finished { pending: false, .. }) {
            return Err(Error::Internal(
                "timestamps read while the exchange's kernels may still run".into(),
            ));
        }
        let (Payload::Synthetic, Some(times), Some(tables)) = (
            self.payload,
            &self.memory.times,
            self.memory.tables.get(&self.current),
        ) else {
            return Err(Error::Internal(
                "no synthetic exchange has run with device times recorded".into(),
            ));
        };
        let ptr = times.host_ptr().cast::<hp_block_times>();
        let grid = times.len_bytes() / size_of::<hp_block_times>();
        // SAFETY: the allocation holds `grid` records; no kernel writes them: the last unpack
        // was seen complete (checked above), and its pack before it.
        let records = unsafe {
            let taken = std::slice::from_raw_parts(ptr, grid).to_vec();
            std::ptr::write_bytes(ptr, 0, grid);
            taken
        };
        // The earliest start and the latest end over a message's grid blocks, (0, 0) without
        // one; a block that never stamped its start keeps the start at zero.
        let fold = |range: Option<(u32, u32)>, stamps: fn(&hp_block_times) -> (u64, u64)| {
            let Some((first, count)) = range else {
                return (0, 0);
            };
            records
                .get(first as usize..(first + count) as usize)
                .unwrap_or_default()
                .iter()
                .map(stamps)
                .reduce(|(s, e), (t, f)| (s.min(t), e.max(f)))
                .unwrap_or_default()
        };
        Ok(tables
            .pack_ranges
            .iter()
            .zip(&tables.unpack_ranges)
            .map(|(&pack, &unpack)| {
                let (pack_start, pack_end) = fold(pack, |t| (t.pack_start, t.pack_end));
                let (unpack_start, unpack_end) = fold(unpack, |t| (t.unpack_start, t.unpack_end));
                hp_block_times {
                    pack_start,
                    pack_end,
                    unpack_start,
                    unpack_end,
                }
            })
            .collect())
    }
}
