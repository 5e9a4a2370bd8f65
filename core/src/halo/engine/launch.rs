//! Queuing the region kernels: the pack and the unpack of a set of fields, or the one launch
//! that does both where every message is device-direct, with their parameters.

use super::*;

impl<B: Backend> MessageExchange<'_, B> {
    /// Queues the pack (or unpack) of tables `set` for the current epoch.
    pub(super) fn launch(&self, set: usize, pack: bool, stream: &B::Stream) -> Result<()> {
        let tables = self.memory.tables.at(set);
        let slot = (self.epoch & 1) as usize;
        let table = if pack {
            &tables.pack[slot]
        } else {
            &tables.unpack[slot]
        };
        if table.regions.is_empty() {
            return Ok(());
        }
        // The plain form has no message or check table (no region signals or is synthetic).
        let plain = table.form == HP_REGIONS_PLAIN;
        let memory = table.memory.device_addr();
        let args = hp_regions_args {
            messages: if plain {
                0
            } else {
                memory + std::mem::size_of_val(table.regions.as_slice()) as u64
            },
            status: self.memory.status.device_addr()
                + if pack {
                    0
                } else {
                    4 * self.routes.len() as u64
                },
            num_regions: table.regions.len() as u32,
            form: table.form,
            ..self.region_args(memory, table.blocks, !pack && !plain, !plain)
        }
        .with_inline_table(&table.regions);
        let dims = LaunchDims {
            blocks: table.blocks,
            threads: self.options.threads,
        };
        let launch = if pack {
            Launch::PackRegions(&args)
        } else {
            Launch::UnpackRegions(&args)
        };
        // SAFETY: (1) the tables, counters, status words and own mailbox live in `self`; the
        // fields are kept alive by `in_use` until the unpack is seen complete; peers' mailboxes
        // stay mapped (`_share`) and allocated until every rank passed the closing barrier of
        // `drop`; host staging, check records and timestamps live in `self`. (2) The tables
        // were built from the entries' layouts, every range inside its allocation; the check
        // records hold one per unpack grid block, the timestamps one per grid block (checked
        // in `region_args`). (3) The CPU touches staging only between kernels (see
        // `staged_region`), check records and timestamps only once the last unpack was seen
        // complete, and flags only atomically.
        unsafe { self.backend.launch(launch, dims, stream) }
    }

    /// Queues the one launch of `fused`, the table [`Self::fused_table`] found for the current
    /// epoch, on `stream`; returns its done words ([`MessageExchange::done_words`]'s address and
    /// count). The callers look the table up once: a look-up costs about 0.1 us on the launch's
    /// path (results/HISTORY.md: h200-small-floor).
    pub(super) fn launch_fused(
        &self,
        fused: &FusedTable<B>,
        stream: &B::Stream,
    ) -> Result<(usize, u32)> {
        // What changes between exchanges (as `region_args` sets it, outside a capture); the rest
        // was set with the table.
        let mut args = fused.args.borrow_mut();
        args.epoch = self.epoch;
        args.iteration = self.iteration;
        args.verify = self.verify.code();
        args.checks = self.checks_addr(true);
        args.times = self.times_addr(fused.blocks, true);
        let dims = LaunchDims {
            blocks: fused.blocks,
            threads: self.options.threads,
        };
        // SAFETY: as for `launch`: the pack's and the unpack's tables in one, the unpack
        // messages' status words after the pack ones (as an unpack launch's `status` is), a
        // grid of the larger side's blocks (each side's blocks number from 0, so check records
        // and timestamps index as in two launches), a done word per grid block in the table.
        unsafe {
            self.backend
                .launch(Launch::ExchangeRegions(&args), dims, stream)?;
        }
        Ok((fused.done.host_ptr() as usize, fused.blocks))
    }

    /// What every region launch of the current epoch carries over a table at `memory` of
    /// `blocks` grid blocks: the abort flag, time-out, epoch and payload, the check records
    /// where `checks` (an unpack of the full form) and the timestamps where `stamps` (the full
    /// form) and they are on.
    pub(super) fn region_args(
        &self,
        memory: u64,
        blocks: u32,
        checks: bool,
        stamps: bool,
    ) -> hp_regions_args {
        hp_regions_args {
            regions: memory,
            abort_flag: self.memory.abort.word.device_addr(),
            timeout_ticks: (self.options.timeout.as_secs_f64()
                * self.backend.device_info().timer_hz as f64) as u64,
            checks: self.checks_addr(checks),
            times: self.times_addr(blocks, stamps),
            elem_bytes: self.word,
            epoch: self.epoch,
            epoch_base: self.capture.as_ref().map_or(0, |c| c.base.device_addr()),
            iteration: self.iteration,
            verify: self.verify.code(),
            ..hp_regions_args::default()
        }
    }

    /// `hp_regions_args.checks` of a launch: the check records where `checks` (an unpack of
    /// the full form) and they are allocated.
    pub(super) fn checks_addr(&self, checks: bool) -> u64 {
        match &self.memory.checks {
            Some(records) if checks => records.device_addr(),
            _ => 0,
        }
    }

    /// `hp_regions_args.times` of a launch of `blocks` grid blocks: the timestamps where
    /// `stamps` (the full form) and they are on. A graph's launches stamp nothing (its replays
    /// would all write one exchange's records); nor does a grid larger than the records (a set
    /// of fields whose tables came after they were allocated).
    pub(super) fn times_addr(&self, blocks: u32, stamps: bool) -> u64 {
        match &self.memory.times {
            Some(times)
                if self.record_times
                    && stamps
                    && self.capture.is_none()
                    && blocks as usize * size_of::<hp_block_times>() <= times.len_bytes() =>
            {
                times.device_addr()
            }
            _ => 0,
        }
    }
}
