//! The fused step (`JacobiConfig::fused`): the update stores each cell a neighbour needs
//! straight into the neighbour's halo (`kernels-cu/haloport_device.h`); no pack or unpack
//! runs.
//!
//! A step from `cur` into `next`: on the step's stream `fused_start` of `next`'s set (this
//! rank is done reading `next`'s halos, and waits until each neighbour is); the update; then
//! `fused_finish` (every cell of `next`'s halos arrived). The next step reads them. Where the
//! whole interior marches in f64 tiles ([`fused_marches`]), the update is one launch over it
//! per field, its boundary tiles storing into the neighbours as they go. Otherwise the inner
//! box runs on its own stream and the boundary's slabs, each on a side stream as urgent as the
//! step's, in the point form ([`Launch::StencilFused`]).
//!
//! Why one launch where it can: in kernel traces of two ranks sharing a GPU, a launch that
//! fills the device held it until its last wave was dispatched, priorities notwithstanding, so
//! the slabs the neighbour waits for ran after both ranks' inner boxes
//! (`docs/fused.md#the-stencils-fused-step-haloport-stencil---fused`).

use super::*;

/// The boxes a fused step updates.
enum FusedBoxes {
    /// The interior, where every field's update of it marches in f64 tiles: one launch over it
    /// per field.
    Interior(CellBox),
    /// Otherwise: the inner box and the slabs around it.
    Slabs {
        /// The cells no neighbour needs whose stencil reads no halo: updated as in any step.
        inner: CellBox,
        /// The rest of the interior, in slabs, each with the dimension it closes: updated by
        /// the fused kernel. Halos wider than the stencil's reach make it thicker than the
        /// shell.
        shell: Vec<(usize, CellBox)>,
    },
}

/// The boxes of a fused step and which fused set each field pair is.
pub(crate) struct FusedSteps {
    boxes: FusedBoxes,
    /// The first field's address of each fused set: set 0 holds `u`, set 1 `v`.
    pub(crate) sets: [u64; 2],
}

impl FusedSteps {
    /// The whole interior of `d` when each of `launches` (a field's update) marches over it
    /// in f64 tiles; else the boxes of the interior around `inner` (the stencil's inner box)
    /// less the cells a neighbour needs (`quiet`: the descriptor's `quiet_lo` and `quiet_hi`).
    pub(crate) fn new(
        d: &Decomposition,
        inner: &CellBox,
        quiet: &haloport_fused,
        sets: [u64; 2],
        launches: &[hp_stencil_args],
    ) -> Self {
        let interior = interior_box(d);
        let marches = |kind: &hp_stencil_args| {
            let args = hp_stencil_args {
                begin: interior.map(|[lo, _]| lo),
                end: interior.map(|[_, hi]| hi),
                ..*kind
            };
            fused_marches(&args, STENCIL_THREADS)
        };
        if !launches.is_empty() && launches.iter().all(marches) {
            return FusedSteps {
                boxes: FusedBoxes::Interior(interior),
                sets,
            };
        }
        let mut fused_inner: CellBox = std::array::from_fn(|k| {
            let lo = inner[k][0].max(u64::from(quiet.quiet_lo[k]));
            let hi = inner[k][1].min(u64::from(quiet.quiet_hi[k]));
            [lo, hi.max(lo)]
        });
        if fused_inner.iter().any(|[lo, hi]| lo >= hi) {
            fused_inner = [[0, 0]; 3];
        }
        FusedSteps {
            boxes: FusedBoxes::Slabs {
                shell: shell_around(&interior, &fused_inner),
                inner: fused_inner,
            },
            sets,
        }
    }

    /// How its steps update the interior.
    pub(crate) fn update(&self) -> FusedUpdate {
        match self.boxes {
            FusedBoxes::Interior(_) => FusedUpdate::Interior,
            FusedBoxes::Slabs { .. } => FusedUpdate::Slabs,
        }
    }

    /// The side streams its slabs take.
    pub(crate) fn slabs(&self) -> usize {
        match &self.boxes {
            FusedBoxes::Interior(_) => 0,
            FusedBoxes::Slabs { shell, .. } => shell.len(),
        }
    }

    /// The fused set the fields `next` form.
    fn set_of<B: Backend>(&self, next: &[Field<B>]) -> Result<usize> {
        let first = next.first().map(Field::device_addr);
        self.sets
            .iter()
            .position(|&s| Some(s) == first)
            .ok_or_else(|| Error::Internal("a fused step's fields are neither set".into()))
    }
}

impl<B: Backend> Step<'_, B> {
    /// Queues one fused step from `cur` into `next` (the module's docs).
    pub(crate) fn queue_fused(
        &self,
        exchange: &mut HaloExchange<'_, B>,
        (cur, next): StepFields<'_, B>,
        fused: &FusedSteps,
    ) -> Result<()> {
        let set = fused.set_of(next)?;
        let (inner, shell) = match &fused.boxes {
            FusedBoxes::Interior(interior) => {
                let descriptors = exchange.fused_start(set, self.stream)?;
                self.fused_update((cur, next), &descriptors, interior, self.stream)?;
                return exchange.fused_finish(set, self.stream);
            }
            FusedBoxes::Slabs { inner, shell } => (inner, shell),
        };
        self.fork_inner()?;
        for ((a, b), kind) in cur.iter().zip(next).zip(self.launches) {
            sweep(self.backend, kind, a, b, inner, self.inner_stream)?;
        }
        let descriptors = exchange.fused_start(set, self.stream)?;
        let slabs: Vec<_> = shell
            .iter()
            .filter(|(_, slab)| slab.iter().all(|[lo, hi]| lo < hi))
            .collect();
        if slabs.len() > self.side.len() {
            return Err(Error::Internal("more slabs than side streams".into()));
        }
        let lanes = self.side.iter().zip(self.joins);
        self.fan_out(lanes.take(slabs.len()), |i, side| {
            let (_, slab) = slabs[i];
            self.fused_update((cur, next), &descriptors, slab, side)
        })?;
        self.join_inner()?;
        exchange.fused_finish(set, self.stream)
    }

    /// Queues the fused update of `cell_box` of each field pair on `stream`, storing through
    /// the field's descriptor ([`fused_dims`]: a block per tile).
    fn fused_update(
        &self,
        (cur, next): StepFields<'_, B>,
        descriptors: &[u64],
        cell_box: &CellBox,
        stream: &B::Stream,
    ) -> Result<()> {
        for (((a, b), kind), &descriptor) in
            cur.iter().zip(next).zip(self.launches).zip(descriptors)
        {
            let args = hp_stencil_args {
                in_: a.device_addr(),
                out: b.device_addr(),
                begin: cell_box.map(|[lo, _]| lo),
                end: cell_box.map(|[_, hi]| hi),
                fused: descriptor,
                ..*kind
            };
            let dims = fused_dims(&args, STENCIL_THREADS);
            // SAFETY: as in `sweep`; the descriptor and the neighbours' fields it leads to live
            // as long as the exchange's fused mode, which outlives the steps.
            unsafe {
                self.backend
                    .launch(Launch::StencilFused(&args), dims, stream)?
            };
        }
        Ok(())
    }
}
