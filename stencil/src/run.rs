//! One run of the stencil: the declaration checked, the fields and streams set up, then the
//! timed phases one after another (steps with the exchange, blocking exchanges, the result
//! gathered, steps without the exchange, copies at the device's copy speed).

use super::*;

/// Runs `config` on `comm`; rank 0 gathers the final fields. Collective over `comm`.
///
/// # Errors
/// The exchange's set-up errors ([`Error::InvalidInput`] for a declaration that does not fit
/// the job), and backend, MPI and time-out errors.
pub fn run_jacobi<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    config: &JacobiConfig,
) -> Result<JacobiRun> {
    // The same plan the exchange compiles (a declaration that does not fit fails alike on
    // every rank, here or in the exchange's collective check).
    let spec = checked_spec(config, comm)?;
    let shape = config.stencil.shape(spec.halo_lo(), spec.halo_hi());
    let plan = HaloPlan::compile(&spec, comm.size(), comm.rank())?;
    let d = &plan.decomposition;
    let kinds = FieldKind::of(&spec)?;
    let (inner, shell) = boxes(d, shape);
    // Each field's launch: its element type and components.
    let launches: Vec<hp_stencil_args> = kinds
        .iter()
        .map(|kind| hp_stencil_args {
            alloc: d.alloc,
            elem_bytes: kind.elem.bytes(),
            shape,
            components: kind.components,
            form: config.form,
            ..hp_stencil_args::default()
        })
        .collect();
    check_fused(config)?;
    // Known from the plan: a neighbour travels as a local copy exactly where it is this rank.
    // A fused step always runs its boundary beside the inner box.
    let overlap = config.fused || config.overlap.overlaps(alone(&plan));
    let placements: Vec<FieldPlacement> = launches
        .iter()
        .map(|kind| match config.fused {
            true => FieldPlacement::Library,
            false => config.fields.resolve(kind, d, &inner, overlap),
        })
        .collect();
    // The application's own allocations (`own`) when it adopts its fields: declared before
    // the exchange and the streams, so they are freed after both (the exchange waits for its
    // kernels, the streams drain), as `Field::adopt`'s contract asks.
    let (u, v, own) = alloc_fields(backend, comm, &plan, &kinds, &placements)?;
    let setup_started = Instant::now();
    let mut exchange = HaloExchange::new(backend, comm, &spec, config.options)?;
    let setup_seconds = setup_started.elapsed().as_secs_f64();
    let fused = if config.fused {
        let sets: [Vec<&Field<B>>; 2] = [u.iter().collect(), v.iter().collect()];
        exchange.fuse(&[&sets[0], &sets[1]])?;
        let quiet = exchange
            .fused_descriptors(0)?
            .first()
            .copied()
            .unwrap_or_default();
        let first = |f: &[Field<B>]| f.first().map_or(0, Field::device_addr);
        Some(FusedSteps::new(
            d,
            &inner,
            &quiet,
            [first(&u), first(&v)],
            &launches,
        ))
    } else {
        None
    };
    let deadline = || haloport_core::backend::deadline_in(config.options.timeout);
    // Declared before the streams, which are drained before they are freed.
    let shell_words = if config.fused {
        // The fused step's inner box leaves its shell to the fused kernel.
        launches.iter().map(|_| None).collect()
    } else {
        alloc_shell_words(backend, comm, &launches, &inner, config)?
    };
    let in_tiles: Vec<Option<(u64, u32)>> = shell_words
        .iter()
        .map(|w| w.as_ref().map(|(m, capacity)| (m.device_addr(), *capacity)))
        .collect();
    let halos_in: Vec<Option<HalosIn>> = launches
        .iter()
        .zip(u.iter().zip(&v))
        .zip(&in_tiles)
        .map(|((kind, (a, b)), words)| {
            let addrs = [a.device_addr(), b.device_addr()];
            words
                .is_none()
                .then(|| HalosIn::of(kind, addrs, &interior_box(d), &inner))
                .flatten()
        })
        .collect();
    let slab_sides = halos_in
        .iter()
        .flatten()
        .map(|h| h.slabs.len())
        .max()
        .unwrap_or(0);
    // Declared after the fields, so that on any early return they are dropped (and drained of
    // the sweeps queued on them) before the fields are freed.
    let slabs = fused.as_ref().map_or(0, FusedSteps::slabs).max(shell.len());
    let streams = StepStreams::new(backend, slabs, slab_sides, config.fused)?;
    let stream = &streams.stream;
    for f in 0..kinds.len() {
        let initial = local_initial(d, kinds[f], f as u32);
        for field in [&u[f], &v[f]] {
            upload_bytes_at(backend, storage(field, &own)?, &initial, stream, deadline())?;
        }
    }
    for (memory, _) in shell_words.iter().flatten() {
        let zeros = vec![0; memory.len_bytes()];
        upload_bytes(backend, memory, &zeros, stream, deadline())?;
    }
    // How each neighbour's messages travel: fixed when the exchange was set up.
    let routes = exchange.route_choices().to_vec();
    let step = streams.step(
        backend, &launches, inner, &shell, &in_tiles, &halos_in, overlap,
    );
    let step = Step {
        fused: fused.as_ref(),
        ..step
    };
    if fused.is_some() {
        // The first step's halos: later steps' come from the step before.
        let first: Vec<&Field<B>> = u.iter().collect();
        exchange.exchange(&first, stream)?;
    }
    // Step s reads u and writes v when s is even, the other way round when odd.
    let pairs = [(&u, &v), (&v, &u)];
    let step_seconds = timed_steps(&step, &mut exchange, comm, config, pairs)?;
    // The steps alternate the shell's word sets from set 0: the last step's list is in set
    // (steps - 1) % 2.
    let listed_in_steps = shell_listed(backend, &shell_words, config.steps, stream, deadline())?;
    let last = pairs[config.steps as usize % 2].0;
    let last_refs: Vec<&Field<B>> = last.iter().collect();
    let mut exchange_seconds = Vec::with_capacity(config.exchange_reps as usize);
    for _ in 0..config.exchange_reps {
        let t0 = Instant::now();
        exchange.exchange(&last_refs, stream)?;
        exchange_seconds.push(t0.elapsed().as_secs_f64());
    }
    let one_launch = (config.exchange_reps > 0).then(|| exchange.ran_in_one_launch());
    drop(exchange);
    let last: Vec<(&B::DeviceMemory, usize)> = last
        .iter()
        .map(|f| storage(f, &own))
        .collect::<Result<_>>()?;
    // Rank 0 takes the ranks' parts one after another: a part may wait for all before it.
    let ranks = u32::try_from(comm.size()).unwrap_or(1).max(1);
    let gather_deadline =
        || haloport_core::backend::deadline_in(config.options.timeout.saturating_mul(ranks));
    let gathered = gather(backend, comm, &spec, d, &last, stream, gather_deadline)?;
    // The fields' values no longer matter: the same updates again, without the exchange.
    if config.compute_steps > 0 {
        barrier_until(
            comm,
            gather_deadline(),
            "before the steps without the exchange",
        )?;
    }
    let (compute_seconds, compute_replayed) =
        timed_compute(&step, comm, config, pairs, gather_deadline)?;
    let copy_seconds = timed_copies(backend, comm, config, (&u, &v), stream, gather_deadline)?;
    let (inner_kernel, lanes_padding) = inner_kernel(
        &launches[0],
        (&u[0], &v[0]),
        &inner,
        shell_words[0].is_some(),
    );
    let inner_rows_padding = sector_rows_padding(config.fields, &launches[0], d, &inner, overlap)
        .or(lanes_padding.map(|cells| RowsPadding {
            cells,
            multiple: u64::from(haloport_core::shared::HP_LANES_POINTS),
        }));
    // Without overlap the halos are in before every update: no tile waits for them.
    let shell_tiles = shell_words
        .iter()
        .flatten()
        .next()
        .filter(|_| step.overlap)
        .map(|(_, capacity)| ShellTilesListed {
            capacity: *capacity,
            last_step: listed_in_steps.unwrap_or(0),
        });
    Ok(JacobiRun {
        plan,
        routes,
        one_launch,
        shell_tiles,
        inner_kernel,
        fused_update: fused.as_ref().map(FusedSteps::update),
        inner_rows_padding,
        step_seconds,
        exchange_seconds,
        compute_seconds,
        compute_replayed,
        overlapped: step.overlap,
        placements,
        copy_seconds,
        setup_seconds,
        gathered,
    })
}

/// Refuses what fused mode cannot run: fields the application placed (fused mode maps the
/// library's allocations into the neighbours), and a step without overlap.
fn check_fused(config: &JacobiConfig) -> Result<()> {
    if !config.fused {
        return Ok(());
    }
    if !matches!(
        config.fields,
        FieldPlacement::Auto | FieldPlacement::Library
    ) {
        return Err(Error::InvalidInput(format!(
            "fused mode maps the fields into the neighbours: they must be the library's allocations (fields 'library' or 'auto', not '{}')",
            config.fields.name()
        )));
    }
    if config.overlap == Overlap::Off {
        return Err(Error::InvalidInput(
            "fused mode updates the boundary beside the inner box: overlap 'off' does not apply"
                .into(),
        ));
    }
    Ok(())
}

/// The declaration of `config` on `comm`'s ranks, refused where the stencil reads halos it
/// leaves unfilled.
fn checked_spec(config: &JacobiConfig, comm: &SimpleCommunicator) -> Result<DomainSpec> {
    let spec = resolve_procs(&config.spec, comm)?;
    if config.stencil == Stencil::Point27 && spec.layout.neighbourhood != Neighbourhood::All {
        return Err(Error::InvalidInput(format!(
            "the 27-point stencil reads edge and corner neighbours; the neighbourhood '{}' leaves their halos unfilled (use --stencil 7, or neighbourhood all)",
            spec.layout.neighbourhood.name()
        )));
    }
    Ok(spec)
}

/// One of each field.
type Fields<B> = Vec<Field<B>>;

/// The application's allocations behind adopted fields.
type Own<B> = Vec<<B as Backend>::DeviceMemory>;

/// Per field, the control words of its shell tiles and their list capacity.
type ShellWords<B> = Vec<Option<(<B as Backend>::DeviceMemory, u32)>>;

/// Two of each field (`u` and `v`), where `placements` says: the library's allocations, or
/// the application's (returned third, to outlive the exchange) adopted at the placed cell.
/// Collective: a rank whose allocation fails must not leave the others in the exchange's
/// set-up.
fn alloc_fields<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    plan: &HaloPlan,
    kinds: &[FieldKind],
    placements: &[FieldPlacement],
) -> Result<(Fields<B>, Fields<B>, Own<B>)> {
    let d = &plan.decomposition;
    let mut own = Vec::new();
    let mut field = |f: usize| -> Result<Field<B>> {
        if placements[f] == FieldPlacement::Library {
            return Field::alloc_field(backend, plan, f);
        }
        let cell = placements[f].cell(d);
        let cell_bytes = kinds[f].cell_bytes();
        let bytes = d.alloc_elems() as usize * cell_bytes;
        let slack = if cell.is_some() {
            PLACEMENT as usize
        } else {
            0
        };
        let memory = backend.alloc_device(bytes + slack)?;
        let at = memory.device_addr();
        let offset = cell.map_or(0, |c| placement(d, cell_bytes as u64, c, at));
        // SAFETY: (1) a device address of this backend, valid for `bytes` bytes from `offset`;
        // (2) the caller keeps `own` until after the exchange and the streams are dropped;
        // (3) only the exchange touches halo cells, and the sweeps are ordered with it on one
        // stream.
        let adopted = unsafe { Field::adopt(at + offset, bytes, plan)? };
        own.push(memory);
        Ok(adopted)
    };
    let allocated = (|| {
        let mut u = Vec::with_capacity(kinds.len());
        let mut v = Vec::with_capacity(kinds.len());
        for f in 0..kinds.len() {
            u.push(field(f)?);
            v.push(field(f)?);
        }
        Ok((u, v))
    })();
    let (u, v) = agree(comm, "allocating the stencil's fields", allocated)?;
    Ok((u, v, own))
}

/// Per field, the control words of an inner box that takes the shell's x and y slabs into its
/// tiles (where the kernel does and `config` does not keep them as launches), and their list
/// capacity. Collective, as [`alloc_fields`].
fn alloc_shell_words<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    launches: &[hp_stencil_args],
    inner: &CellBox,
    config: &JacobiConfig,
) -> Result<ShellWords<B>> {
    let shell_words = launches
        .iter()
        .map(|kind| {
            let probe = hp_stencil_args {
                begin: inner.map(|[b, _]| b),
                end: inner.map(|[_, e]| e),
                ..*kind
            };
            match ShellTiles::of(&probe, STENCIL_THREADS) {
                Some(tiles) if !config.shell_launches => {
                    let capacity = u32::try_from(tiles.capacity()).map_err(|_| {
                        Error::InvalidInput(format!(
                            "{} shell tiles do not fit the kernel's list",
                            tiles.capacity()
                        ))
                    })?;
                    let words = (HP_SHELL_LIST + 2 * capacity) as usize;
                    let memory = backend.alloc_device(words * 4)?;
                    Ok(Some((memory, capacity)))
                }
                _ => Ok(None),
            }
        })
        .collect::<Result<Vec<_>>>();
    agree(comm, "allocating the stencil's shell words", shell_words)
}

/// The streams and markers a step runs on. The step's stream carries the exchange, urgent;
/// the inner box has a stream of its own, and each of the shell's slabs too (alone, a thin
/// slab fills few of the device's SMs). In fused mode the slabs are the exchange (their stores
/// are what the neighbours wait for), so their streams are urgent too: their blocks take SMs as
/// the inner box's free them instead of queueing behind all of them.
struct StepStreams<B: Backend> {
    stream: B::Stream,
    inner_stream: B::Stream,
    inner_fork: B::Event,
    inner_join: B::Event,
    side: Vec<B::Stream>,
    fork: B::Event,
    joins: Vec<B::Event>,
    halos_in_side: Vec<B::Stream>,
    halos_in_joins: Vec<B::Event>,
}

impl<B: Backend> StepStreams<B> {
    /// Streams for `slabs` shell slabs (urgent where `urgent_slabs`) and `slab_sides` slabs
    /// of an update without the exchange.
    fn new(backend: &B, slabs: usize, slab_sides: usize, urgent_slabs: bool) -> Result<Self> {
        let streams = |n: usize| -> Result<Vec<B::Stream>> {
            (0..n).map(|_| backend.create_stream()).collect()
        };
        let slab_streams = |n: usize| -> Result<Vec<B::Stream>> {
            match urgent_slabs {
                true => (0..n).map(|_| backend.create_urgent_stream()).collect(),
                false => streams(n),
            }
        };
        let markers = |n: usize| -> Result<Vec<B::Event>> {
            (0..n).map(|_| backend.create_marker()).collect()
        };
        Ok(StepStreams {
            stream: backend.create_urgent_stream()?,
            inner_stream: backend.create_stream()?,
            inner_fork: backend.create_marker()?,
            inner_join: backend.create_marker()?,
            side: slab_streams(slabs)?,
            fork: backend.create_marker()?,
            joins: markers(slabs)?,
            halos_in_side: streams(slab_sides)?,
            halos_in_joins: markers(slab_sides)?,
        })
    }

    /// The step that queues its updates on these streams.
    #[allow(clippy::too_many_arguments)]
    fn step<'a>(
        &'a self,
        backend: &'a B,
        launches: &'a [hp_stencil_args],
        inner: CellBox,
        shell: &'a [(usize, CellBox)],
        in_tiles: &'a [Option<(u64, u32)>],
        halos_in: &'a [Option<HalosIn>],
        overlap: bool,
    ) -> Step<'a, B> {
        Step {
            backend,
            launches,
            inner,
            shell,
            in_tiles,
            queued: std::cell::Cell::new(0),
            stream: &self.stream,
            inner_stream: &self.inner_stream,
            inner_fork: &self.inner_fork,
            inner_join: &self.inner_join,
            side: &self.side,
            fork: &self.fork,
            joins: &self.joins,
            halos_in,
            halos_in_side: &self.halos_in_side,
            halos_in_joins: &self.halos_in_joins,
            overlap,
            fused: None,
        }
    }
}

/// The steps with the exchange, each timed from its queueing to its stream's end (a graph's
/// replay as two steps of half its time). With [`JacobiConfig::graph`], two steps are
/// captured first; the first two steps and an odd last one run outside the graph, so graph
/// and plain exchanges mix in every run (the first replay moves the graph's epochs on past
/// them).
fn timed_steps<B: Backend>(
    step: &Step<'_, B>,
    exchange: &mut HaloExchange<'_, B>,
    comm: &SimpleCommunicator,
    config: &JacobiConfig,
    pairs: [StepFields<'_, B>; 2],
) -> Result<Vec<f64>> {
    let deadline = || haloport_core::backend::deadline_in(config.options.timeout);
    let mut graph = if config.graph {
        Some(step.capture(comm, exchange, pairs)?)
    } else {
        None
    };
    let mut step_seconds = Vec::with_capacity(config.steps as usize);
    let mut done = 0;
    while done < config.steps {
        let t0 = Instant::now();
        let ran = match graph.as_mut() {
            Some(graph) if done >= 2 && done + 2 <= config.steps => {
                exchange.replay(graph, step.stream)?;
                2
            }
            _ => {
                step.queue(exchange, pairs[done as usize % 2])?;
                1
            }
        };
        // The exchange's kernels first (a wait that gave up on the device is reported here,
        // naming the halo), then the shell sweep queued after them.
        exchange.wait()?;
        step.backend.stream_synchronize(step.stream, deadline())?;
        let seconds = t0.elapsed().as_secs_f64() / f64::from(ran);
        step_seconds.extend(std::iter::repeat_n(seconds, ran as usize));
        done += ran;
    }
    Ok(step_seconds)
}

/// The steps without the exchange ([`JacobiConfig::compute_steps`]), timed as
/// [`timed_steps`]'s, and how many of them were replayed from a graph. Every rank starts each
/// timed step together, as in a step with the exchange: ranks that share a device compute
/// side by side, not one alone while another gathers or waits. Steps replayed from a graph
/// are compared with steps with the exchange replayed alike (two to a graph), so that what a
/// graph saves in launches does not count as exchange.
fn timed_compute<B: Backend>(
    step: &Step<'_, B>,
    comm: &SimpleCommunicator,
    config: &JacobiConfig,
    pairs: [StepFields<'_, B>; 2],
    deadline: impl Fn() -> Instant,
) -> Result<(Vec<f64>, u32)> {
    let backend = step.backend;
    let graph = if config.graph && config.compute_steps >= 2 {
        Some(step.capture_compute(comm, pairs)?)
    } else {
        None
    };
    let mut compute_seconds = Vec::with_capacity(config.compute_steps as usize);
    let (mut done, mut replayed) = (0, 0);
    while done < config.compute_steps {
        lockstep_until(comm, deadline(), "before a step without the exchange")?;
        let t0 = Instant::now();
        let ran = match graph.as_ref() {
            Some(graph) if done + 2 <= config.compute_steps => {
                // SAFETY: the graph's launches name the fields and shell words, which outlive
                // the synchronization below.
                unsafe { backend.launch_graph(graph, step.stream)? };
                replayed += 2;
                2
            }
            _ => {
                step.compute(pairs[done as usize % 2])?;
                1
            }
        };
        backend.stream_synchronize(step.stream, deadline())?;
        let seconds = t0.elapsed().as_secs_f64() / f64::from(ran);
        compute_seconds.extend(std::iter::repeat_n(seconds, ran as usize));
        done += ran;
    }
    Ok((compute_seconds, replayed))
}

/// Copies every field of `u` to `v` by the copy engine, [`JacobiConfig::compute_steps`] times,
/// each timed (every rank starting together): a step reads one field and writes the other,
/// so this is the time a step's traffic takes at the device's copy speed, in the same run.
fn timed_copies<B: Backend>(
    backend: &B,
    comm: &SimpleCommunicator,
    config: &JacobiConfig,
    (u, v): StepFields<'_, B>,
    stream: &B::Stream,
    deadline: impl Fn() -> Instant,
) -> Result<Vec<f64>> {
    let mut copy_seconds = Vec::with_capacity(config.compute_steps as usize);
    for _ in 0..config.compute_steps {
        lockstep_until(comm, deadline(), "before a copy of the fields")?;
        let t0 = Instant::now();
        for (a, b) in u.iter().zip(v) {
            let copy = Copy3d {
                src: a.device_addr(),
                src_pitch: a.len_bytes(),
                src_rows: 1,
                dst: b.device_addr(),
                dst_pitch: b.len_bytes(),
                dst_rows: 1,
                width: a.len_bytes(),
                height: 1,
                depth: 1,
            };
            // SAFETY: both fields hold len_bytes() bytes of this backend's device memory and
            // outlive the synchronization below; nothing else runs on them meanwhile.
            unsafe { backend.copy_3d_async(&copy, stream)? };
        }
        backend.stream_synchronize(stream, deadline())?;
        copy_seconds.push(t0.elapsed().as_secs_f64());
    }
    Ok(copy_seconds)
}
