//! Command-line arguments (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use haloport::core::transport::{GpuAwareMpi, TransportKind};
use haloport::core::{Fault, PatternSource, Verify};
use haloport_thesis::measure::Protocol;
use haloport_thesis::strategy::ExchangeOptions;
use haloport_thesis::{Variant, Workload};

/// Halo exchange between GPUs over MPI, portable across CUDA and HIP. Run under mpirun.
#[derive(Debug, Parser)]
#[command(name = "haloport", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Backends built in, devices, coherence support, MPI library, toolchains.
    Info(InfoArgs),
    /// Run one variant of one strategy on one workload, verified and timed.
    Run(RunArgs),
    /// Run many variants on many workloads in one job, interleaved run by run, with the
    /// mpi-only floor; writes sweep.json and sweep.csv.
    Sweep(SweepArgs),
    /// Write a Markdown report with SVG plots and Chrome traces from a sweep (or run) result.
    Report(ReportArgs),
    /// Put result files from different machines, backends or vendors side by side.
    Compare(CompareArgs),
    /// Jacobi sweeps of a 27-point stencil on a 3-D grid over the job, halos exchanged by the
    /// library, verified bit-for-bit against one rank computing the whole grid.
    Stencil(StencilArgs),
    /// Throughput of the library's pack and unpack kernels on one device (the 6 faces of a
    /// local domain, strided ones included) beside the copy engine moving the same regions and
    /// the device's copy bandwidth; and the compiled exchange against the same kernels by hand.
    PackBench(PackBenchArgs),
    /// Compile one rank's halo-exchange plan of a job of any size, without MPI or a GPU:
    /// set-up time and memory, the neighbours, each message's size and route, and why.
    Plan(PlanArgs),
    /// Measure the exchange's routes and settings for a declaration on this machine (verified
    /// stencil runs, as `haloport stencil` takes them) and write what it chose, and why, to a
    /// routes file that `--routes FILE` and the library take.
    Tune(TuneArgs),
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The declaration and the run measured, as `haloport stencil` takes them (--transport,
    /// --variant and the settings tried are set by the tuning).
    #[command(flatten)]
    pub stencil: StencilArgs,
    /// The routes file to write (rank 0).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Threads per block to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128,256,512", value_parser = clap::value_parser!(u32).range(32..=1024))]
    pub try_threads: Vec<u32>,
    /// Elements per thread to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub try_elems_per_thread: Vec<u32>,
    /// Signalled blocks to try where a link is device-direct, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub try_signalled_blocks: Vec<u32>,
}

/// Where `haloport stencil` puts its fields (`FieldPlacement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// Each field placed for the box its steps run most: `interior` where the steps do not
    /// overlap (`--overlap`) and an f32 field's update then runs its lanes over the interior,
    /// `tiles` elsewhere.
    Auto,
    /// `Field::alloc`: the library's allocations, each field at its start.
    Library,
    /// The application's allocations, each field at its start, handed over with
    /// `Field::adopt` (as code with its own allocator would).
    Adopted,
    /// The application's allocations, each field placed so that the inner box's first cell
    /// (where the step's tiles start) sits on a 32-byte boundary, adopted.
    Tiles,
    /// The application's allocations, each field placed so that its interior's first cell
    /// sits on a 32-byte boundary, adopted: a box over the whole interior writes whole sectors
    /// (f32 compute alone at 512^3 84 % of the copy speed), the step's inner box does not.
    Interior,
}

impl PlacementArg {
    pub fn placement(self) -> haloport_stencil::FieldPlacement {
        use haloport_stencil::FieldPlacement;
        match self {
            PlacementArg::Auto => FieldPlacement::Auto,
            PlacementArg::Library => FieldPlacement::Library,
            PlacementArg::Adopted => FieldPlacement::Adopted,
            PlacementArg::Tiles => FieldPlacement::Tiles,
            PlacementArg::Interior => FieldPlacement::Interior,
        }
    }
}

/// Whether a stencil step overlaps its exchange (`haloport_stencil::Overlap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverlapArg {
    /// On, unless every neighbour of the rank is the rank itself (its exchange is then
    /// copies within the device).
    Auto,
    /// The inner box beside the exchange, the shell after it.
    On,
    /// The exchange, then the whole interior.
    Off,
}

impl OverlapArg {
    pub fn overlap(self) -> haloport_stencil::Overlap {
        use haloport_stencil::Overlap;
        match self {
            OverlapArg::Auto => Overlap::Auto,
            OverlapArg::On => Overlap::On,
            OverlapArg::Off => Overlap::Off,
        }
    }
}

/// The declaration of a domain, as `haloport stencil` and `haloport plan` take it.
#[derive(Debug, Args)]
pub struct DeclarationArgs {
    /// Global grid, NXxNYxNZ (x innermost).
    #[arg(long, value_parser = parse_grid, default_value = "64x64x64")]
    pub grid: [u64; 3],
    /// Process grid PXxPYxPZ; by default chosen as MPI_Dims_create does.
    #[arg(long, value_parser = parse_procs)]
    pub procs: Option<[u32; 3]>,
    /// Halo width (every dimension, both sides).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub halo: u32,
    /// Halo widths on the low side of each dimension, X,Y,Z (0 allowed: the stencil then takes
    /// a one-sided mean there), in place of --halo on that side.
    #[arg(long, value_parser = parse_pad)]
    pub halo_lo: Option<[u32; 3]>,
    /// Halo widths on the high side of each dimension, X,Y,Z, likewise.
    #[arg(long, value_parser = parse_pad)]
    pub halo_hi: Option<[u32; 3]>,
    /// Periodic dimensions: any of x, y, z (e.g. `xz`), or `none`.
    #[arg(long, value_parser = parse_periodic, default_value = "xyz")]
    pub periodic: [bool; 3],
    /// Element type: f32 or f64.
    #[arg(long = "type", value_parser = parse_elem, default_value = "f64")]
    pub elem: haloport::core::domain::ElemType,
    /// Fields exchanged together.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub fields: u32,
    /// One element type per field, e.g. `f32,f64` (in place of --type and --fields): fields of
    /// different types travel together, one message per neighbour.
    #[arg(long, value_parser = parse_elem_list)]
    pub types: Option<ElemTypes>,
    /// Interleaved components per cell of every field (a velocity `[x][y][z][3]`: 3); halos
    /// move whole cells.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub components: u32,
    /// Extra allocated cells after the high halo of each dimension, X,Y,Z (an application's
    /// aligned or pitched allocation); haloport neither reads nor writes them.
    #[arg(long, value_parser = parse_pad, default_value = "0,0,0")]
    pub pad: [u32; 3],
    /// The application's decomposition: a TOML (or .json) file giving where the parts start
    /// along each dimension, e.g. `x = [0, 7]`, `y = [0]`, `z = [0, 3, 6]` for a 2x1x3 process
    /// grid (6 ranks) whose parts the application chose.
    #[arg(long)]
    pub decomposition: Option<PathBuf>,
}

/// `--types`: one element type per field.
#[derive(Debug, Clone)]
pub struct ElemTypes(pub Vec<haloport::core::domain::ElemType>);

fn parse_elem_list(s: &str) -> Result<ElemTypes, String> {
    let types = s
        .split(',')
        .map(|t| parse_elem(t.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if types.is_empty() || types.len() > 64 {
        return Err(format!("'{s}': give 1 to 64 element types, e.g. f32,f64"));
    }
    Ok(ElemTypes(types))
}

impl DeclarationArgs {
    /// The declaration, with `neighbourhood`.
    ///
    /// # Errors
    /// A decomposition file that cannot be read or parsed.
    pub fn spec(
        &self,
        neighbourhood: haloport::core::domain::Neighbourhood,
    ) -> haloport::Result<haloport::core::domain::DomainSpec> {
        use haloport::core::domain::FieldShape;
        let types = self
            .types
            .as_ref()
            .map_or_else(|| vec![self.elem; self.fields as usize], |t| t.0.clone());
        let plain = self.types.is_none() && self.components == 1;
        Ok(haloport::core::domain::DomainSpec {
            grid: self.grid,
            procs: self.procs,
            periodic: self.periodic,
            halo: [self.halo; 3],
            elem: types[0],
            fields: types.len() as u32,
            layout: haloport::core::domain::Layout {
                halo_lo: self.halo_lo,
                halo_hi: self.halo_hi,
                pad: self.pad,
                neighbourhood,
                splits: self
                    .decomposition
                    .as_deref()
                    .map(haloport::core::domain::Splits::load)
                    .transpose()?,
                // One `--type` element per cell unless --types or --components say otherwise.
                fields: (!plain).then(|| {
                    types
                        .iter()
                        .map(|t| FieldShape {
                            elem_bytes: t.bytes(),
                            components: self.components,
                        })
                        .collect()
                }),
            },
        })
    }
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Ranks in the job.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub ranks: i32,
    /// The rank whose plan to compile.
    #[arg(long, default_value_t = 0)]
    pub rank: i32,
    #[command(flatten)]
    pub declaration: DeclarationArgs,
    /// Which neighbours fill the halos: faces (6), faces-edges (18) or all (26).
    #[arg(long, value_parser = parse_neighbourhood, default_value = "all")]
    pub neighbourhood: haloport::core::domain::Neighbourhood,
    /// Compile it this many times and report the median (the set-up time is microseconds).
    #[arg(long, default_value_t = 101, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// The transport whose routes to show (see `haloport stencil --transport`).
    #[arg(long, value_parser = parse_transport, default_value = "auto")]
    pub transport: TransportKind,
    /// A routes file written by `haloport tune` (the `auto` transport in its order).
    #[arg(long, value_name = "FILE")]
    pub routes: Option<PathBuf>,
    /// Ranks per node, consecutive ranks sharing one (by default every rank on one node).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    pub ranks_per_node: Option<i32>,
    /// The backend whose NCCL (RCCL) to look for: on the host backend only a routes file
    /// naming nccl asks for it.
    #[arg(long, value_enum, default_value = "cuda")]
    pub backend: BackendKind,
    /// Whether MPI takes device memory at both ends: `on` or `off` (`auto` is asked of the MPI
    /// library at run time; `plan` runs without MPI and takes it as off).
    #[arg(long, value_parser = parse_gpu_aware_mpi, default_value = "auto")]
    pub gpu_aware_mpi: GpuAwareMpi,
    /// Write the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A sweep directory (holding sweep.json or sweep.json.gz) or a result JSON file.
    pub input: PathBuf,
    /// Where to write report.md, the plots and traces (default: the input's directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more result files (or sweep directories); the first is the reference.
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,
    /// Also write compare.md and compare.svg into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Compare results that are not alike (unverified, other pattern, rank count or bytes per
    /// rank, a partial sweep) instead of refusing; each such row is marked MISMATCH.
    #[arg(long)]
    pub force: bool,
}

pub use haloport::foreign::BackendKind;

/// Which scaling `haloport stencil --scaling` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScalingMode {
    /// The same grid on every rank count.
    Strong,
    /// The same part per rank: the grid grows with the ranks.
    Weak,
}

impl ScalingMode {
    pub fn name(self) -> &'static str {
        match self {
            ScalingMode::Strong => "strong",
            ScalingMode::Weak => "weak",
        }
    }
}

/// How the stencil's update kernel walks its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StencilForm {
    /// Threads march along z, three planes of neighbours in registers (27- and 7-point, one
    /// component).
    March,
    /// A thread per point.
    Points,
}

impl StencilForm {
    pub fn name(self) -> &'static str {
        match self {
            StencilForm::March => "march",
            StencilForm::Points => "points",
        }
    }

    /// `hp_stencil_args.form`.
    pub fn code(self) -> u32 {
        match self {
            StencilForm::March => haloport::core::shared::HP_STENCIL_FORM_MARCH,
            StencilForm::Points => haloport::core::shared::HP_STENCIL_FORM_POINTS,
        }
    }
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also set up the halo exchange of the declaration (--grid and the rest, all 26
    /// neighbours) on --backend and print every rank's neighbours: the route each takes and why.
    #[arg(long)]
    pub neighbours: bool,
    #[command(flatten)]
    pub declaration: DeclarationArgs,
    /// The backend of the exchange --neighbours sets up.
    #[arg(long, value_enum, default_value = "host")]
    pub backend: BackendKind,
    /// The transport of that exchange (see `haloport stencil --transport`).
    #[arg(long, value_parser = parse_transport, default_value = "auto")]
    pub transport: TransportKind,
    /// Whether messages that travel by MPI go from device memory (see `haloport stencil`).
    #[arg(long, value_parser = parse_gpu_aware_mpi, default_value = "auto")]
    pub gpu_aware_mpi: GpuAwareMpi,
    /// A routes file written by `haloport tune` for that exchange.
    #[arg(long, value_name = "FILE")]
    pub routes: Option<PathBuf>,
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_pattern(s: &str) -> Result<PatternSource, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_gpu_aware_mpi(s: &str) -> Result<GpuAwareMpi, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_verify(s: &str) -> Result<Verify, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 86_400.0 => Ok(t),
        _ => Err(format!(
            "'{s}' is not a usable time-out: give seconds greater than 0 and at most 86400"
        )),
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Backend that runs the kernels and owns the memory.
    #[arg(long, value_enum, default_value = "host")]
    pub backend: BackendKind,
    /// Variant: base-{nb|bl}-{wait|test}[-nc], tq-{nb|bl}-{tq|pb}, tqm-{nb|bl}-{tq|pb}.
    #[arg(long, value_parser = parse_variant, default_value = "base-nb-wait")]
    pub variant: Variant,
    /// Workload: small, thesis-4, thesis-9, thesis-27, large.
    #[arg(long, value_parser = parse_workload, default_value = "thesis-9")]
    pub workload: Workload,
    /// Built-in pattern (pairwise, ring, mixed) or a pattern file (.toml or .json).
    #[arg(long, value_parser = parse_pattern, default_value = "pairwise")]
    pub pattern: PatternSource,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    #[command(flatten)]
    pub exchange: ExchangeArgs,
    /// How bytes travel: `mpi` (host-staged: the thesis's variants, lib-*-mpi) or `ipc`
    /// (device-direct within a node: ipc-base, ipc-tq, lib-*-ipc). Checked against the variant.
    #[arg(long, value_parser = parse_transport, default_value = "mpi")]
    pub transport: TransportKind,
    /// Write the result as JSON to this file (rank 0).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Inject a fault to test verification and time-outs: corrupt-recv=BLOCK, drop-send=BLOCK,
    /// short-send=BLOCK (the block is sent one element short).
    #[arg(long, value_parser = parse_fault)]
    pub inject: Option<Fault>,
}

/// Runs and iterations (thesis 4.2), shared by `run` and `sweep`.
#[derive(Debug, Args)]
pub struct ProtocolArgs {
    /// Iterations per run, warm-up included.
    #[arg(long, default_value_t = Protocol::default().iterations)]
    pub iters: u32,
    /// Warm-up iterations per run (not timed, still verified).
    #[arg(long, default_value_t = Protocol::default().warmup)]
    pub warmup: u32,
    /// Runs (a sweep interleaves them across variants and workloads).
    #[arg(long, default_value_t = Protocol::default().runs)]
    pub runs: u32,
}

impl ProtocolArgs {
    pub fn protocol(&self) -> Protocol {
        Protocol {
            iterations: self.iters,
            warmup: self.warmup,
            runs: self.runs,
        }
    }
}

/// How exchanges wait and poll, shared by `run` and `sweep`.
#[derive(Debug, Args)]
pub struct ExchangeArgs {
    /// Seconds any single wait may take before the run ends with a time-out error.
    #[arg(long, value_parser = parse_timeout, default_value = "10")]
    pub timeout: f64,
    /// Bytes between the taskqueue's per-block flags: 128 keeps each on its own cache line
    /// (thesis 3.6.3); 8 packs them densely. A multiple of 8.
    #[arg(long, default_value_t = 128)]
    pub flag_stride: u32,
    /// Pause between a taskqueue block's polls of its flags, nanoseconds (0: spin). The thesis
    /// found constant polling slowing flag propagation on AMD GPUs (4.6.2).
    #[arg(long, default_value_t = 0)]
    pub poll_backoff: u32,
    /// Which received elements unpack checks: `sample` (per block the first, the last and one
    /// per thread, the thesis's sample) or `full` (every element; its cost shows in unpack).
    #[arg(long, value_parser = parse_verify, default_value = "sample")]
    pub verify: Verify,
    /// Device-direct variants only: run iterations back to back, without the closing MPI
    /// barrier of the thesis protocol (receive slots are guarded by credit flags instead).
    #[arg(long)]
    pub no_barrier: bool,
    /// Device-direct variants: GPU blocks serving the largest pattern block (1 to 64); every
    /// chunk moves at most that block's share, so smaller blocks get fewer GPU blocks.
    #[arg(long, default_value_t = ExchangeOptions::default().ipc_chunks, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub ipc_chunks: u32,
    /// Library variants (`lib-*`): most GPU blocks serving one region of a signalled message
    /// (1 to 4096), as `haloport stencil --signalled-blocks`; where every message is
    /// device-direct, the costliest region gets this many and the others fewer, in proportion.
    #[arg(long, default_value_t = ExchangeOptions::default().lib_blocks, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub lib_blocks: u32,
}

impl ExchangeArgs {
    pub fn options(&self, fault: Option<Fault>) -> ExchangeOptions {
        ExchangeOptions {
            timeout: std::time::Duration::from_secs_f64(self.timeout),
            fault,
            flag_stride: self.flag_stride,
            poll_backoff_ns: self.poll_backoff,
            verify: self.verify,
            barrier: !self.no_barrier,
            ipc_chunks: self.ipc_chunks,
            lib_blocks: self.lib_blocks,
        }
    }
}

/// Variants named on the command line.
#[derive(Debug, Clone)]
pub struct VariantList(pub Vec<Variant>);

/// Workloads named on the command line.
#[derive(Debug, Clone)]
pub struct WorkloadList(pub Vec<Workload>);

/// Parses a variant list separated by commas: `all`, a strategy's name (every variant of it:
/// `baseline`, `taskqueue`, `device-direct`, `library`), or variant names.
pub fn parse_variant_list(s: &str) -> Result<VariantList, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let of_strategy: Vec<Variant> = Variant::all()
            .into_iter()
            .filter(|v| v.strategy() == item)
            .collect();
        match item {
            "all" => out.extend(Variant::all()),
            _ if !of_strategy.is_empty() => out.extend(of_strategy),
            name => out.push(parse_variant(name)?),
        }
    }
    out.retain(|v| *v != Variant::MpiOnly);
    let mut seen = Vec::new();
    out.retain(|v| {
        let new = !seen.contains(v);
        seen.push(*v);
        new
    });
    if out.is_empty() {
        return Err("no variants named".into());
    }
    Ok(VariantList(out))
}

/// Parses a workload list separated by commas.
pub fn parse_workload_list(s: &str) -> Result<WorkloadList, String> {
    let list: Vec<Workload> = s
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(parse_workload)
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err("no workloads named".into());
    }
    Ok(WorkloadList(list))
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Backend that runs the kernels and owns the memory.
    #[arg(long, value_enum, default_value = "host")]
    pub backend: BackendKind,
    /// Variants separated by commas: all, a strategy (baseline, taskqueue, device-direct,
    /// library), or variant names. The mpi-only floor is always added.
    #[arg(long, value_parser = parse_variant_list, default_value = "all")]
    pub variants: VariantList,
    /// Workloads separated by commas.
    #[arg(long, value_parser = parse_workload_list, default_value = "small,thesis-4,thesis-9,thesis-27,large")]
    pub workloads: WorkloadList,
    /// Built-in pattern or a pattern file.
    #[arg(long, value_parser = parse_pattern, default_value = "pairwise")]
    pub pattern: PatternSource,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    #[command(flatten)]
    pub exchange: ExchangeArgs,
    /// Directory for a new sweep (created if missing): its manifest, one file per finished run
    /// under cells/, then sweep.json and sweep.csv. An earlier sweep's files there are moved
    /// into DIR/replaced-<unix seconds>/.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "resume",
        conflicts_with = "resume"
    )]
    pub out: Option<PathBuf>,
    /// Finish the interrupted sweep in DIR: run only the runs missing from DIR/cells, then write
    /// sweep.json and sweep.csv. Alone (or with --quiet) it runs with the options the sweep's
    /// manifest recorded; other options given must be those that started it.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl SweepArgs {
    /// The sweep directory: `--out` or `--resume`.
    pub fn dir(&self) -> &std::path::Path {
        self.resume
            .as_deref()
            .or(self.out.as_deref())
            .unwrap_or_else(|| std::path::Path::new("."))
    }

    /// The variants to run: the mpi-only floor first, then those named, each once.
    pub fn variant_list(&self) -> Vec<Variant> {
        let mut list = vec![Variant::MpiOnly];
        for v in &self.variants.0 {
            if !list.contains(v) {
                list.push(*v);
            }
        }
        list
    }

    /// The workloads to run, each once, in the order first named; and the names given more
    /// than once (merged).
    pub fn workload_list(&self) -> (Vec<Workload>, Vec<Workload>) {
        let mut list = Vec::new();
        let mut repeated = Vec::new();
        for w in &self.workloads.0 {
            if !list.contains(w) {
                list.push(*w);
            } else if !repeated.contains(w) {
                repeated.push(*w);
            }
        }
        (list, repeated)
    }
}

/// Parses `AxBxC` into three positive numbers.
fn parse_triple<T: std::str::FromStr + PartialOrd + Default + Copy>(
    s: &str,
    what: &str,
) -> Result<[T; 3], String> {
    let parts: Vec<&str> = s.split(['x', 'X']).collect();
    let bad =
        || format!("'{s}' is not a {what}: give three positive numbers as AxBxC, e.g. 64x32x32");
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut out = [T::default(); 3];
    for (slot, part) in out.iter_mut().zip(&parts) {
        let v: T = part.trim().parse().map_err(|_| bad())?;
        if v <= T::default() {
            return Err(bad());
        }
        *slot = v;
    }
    Ok(out)
}

fn parse_grid(s: &str) -> Result<[u64; 3], String> {
    parse_triple(s, "grid")
}

fn parse_procs(s: &str) -> Result<[u32; 3], String> {
    parse_triple(s, "process grid")
}

/// `X,Y,Z`: cells per dimension (a padding, halo widths), each 0 or more.
fn parse_pad(s: &str) -> Result<[u32; 3], String> {
    let bad = || format!("'{s}': give three numbers of cells as X,Y,Z, e.g. 3,0,0");
    let parts: Vec<u32> = s
        .split(',')
        .map(|p| p.trim().parse::<u32>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    <[u32; 3]>::try_from(parts).map_err(|_| bad())
}

fn parse_stencil(s: &str) -> Result<haloport_stencil::Stencil, String> {
    match s {
        "7" => Ok(haloport_stencil::Stencil::Point7),
        "27" => Ok(haloport_stencil::Stencil::Point27),
        _ => Err(format!("'{s}' is not a stencil: 7 or 27")),
    }
}

fn parse_neighbourhood(s: &str) -> Result<haloport::core::domain::Neighbourhood, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

/// `x`, `xz`, `xyz`, ... or `none`.
fn parse_periodic(s: &str) -> Result<[bool; 3], String> {
    let mut periodic = [false; 3];
    if s == "none" {
        return Ok(periodic);
    }
    for c in s.chars() {
        let k = match c {
            'x' => 0,
            'y' => 1,
            'z' => 2,
            _ => {
                return Err(format!(
                    "'{s}' names no periodic dimensions: give any of x, y, z (e.g. xz), or none"
                ))
            }
        };
        periodic[k] = true;
    }
    Ok(periodic)
}

fn parse_halo_fault(s: &str) -> Result<haloport::core::halo::HaloFault, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

fn parse_elem(s: &str) -> Result<haloport::core::domain::ElemType, String> {
    s.parse().map_err(|e: haloport::Error| e.to_string())
}

#[derive(Debug, Args)]
pub struct StencilArgs {
    #[command(flatten)]
    pub declaration: DeclarationArgs,
    /// Jacobi steps.
    #[arg(long, default_value_t = 10)]
    pub steps: u32,
    /// 7 (the cell and its faces; the exchange then moves faces only) or 27 (all neighbours).
    #[arg(long, value_parser = parse_stencil, default_value = "27")]
    pub stencil: haloport_stencil::Stencil,
    /// Backend that runs the kernels and owns the memory.
    #[arg(long, value_enum, default_value = "host")]
    pub backend: BackendKind,
    /// Exchange strategy: `base` (pack everything, send; receive everything, unpack) or `tq`
    /// (send each neighbour's message once packed, unpack each as it arrives).
    #[arg(long, default_value = "base")]
    pub variant: String,
    /// How halos travel: `mpi` (host-staged, or GPU-aware MPI: --gpu-aware-mpi), `ipc`
    /// (device-direct within a node, MPI to other nodes), `nccl` (NCCL, RCCL on AMD, loaded
    /// at run time; `haloport info` says whether it is found) or `auto` (per neighbour: ipc
    /// within a node, nccl between nodes where every rank of a GPU backend loads it, else MPI).
    #[arg(long, value_parser = parse_transport, default_value = "mpi")]
    pub transport: TransportKind,
    /// Whether messages that travel by MPI go from device memory: `auto` (where the MPI library
    /// says it takes this backend's device memory; never on the host backend), `on`, `off`.
    #[arg(long, value_parser = parse_gpu_aware_mpi, default_value = "auto")]
    pub gpu_aware_mpi: GpuAwareMpi,
    /// A routes file written by `haloport tune`: the routes per kind of link in the order it
    /// measured (the `auto` transport in that order) and the settings it measured best; it
    /// overrides --transport, --variant, --threads, --elems-per-thread and --signalled-blocks.
    #[arg(long, value_name = "FILE")]
    pub routes: Option<PathBuf>,
    /// Seconds any single wait may take.
    #[arg(long, value_parser = parse_timeout, default_value = "10")]
    pub timeout: f64,
    /// Elements each thread of the pack and unpack kernels moves.
    #[arg(long, default_value_t = haloport::core::halo::HaloOptions::default().elems_per_thread, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub elems_per_thread: u32,
    /// Threads per GPU block of the pack and unpack kernels.
    #[arg(long, default_value_t = haloport::core::halo::HaloOptions::default().threads, value_parser = clap::value_parser!(u32).range(32..=1024))]
    pub threads: u32,
    /// Most GPU blocks serving one region of a signalled message (device-direct, or host-staged
    /// under `--variant tq`).
    #[arg(long, default_value_t = haloport::core::halo::HaloOptions::default().signalled_blocks, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub signalled_blocks: u32,
    /// Blocking exchanges timed after the steps (the exchange's share of a step).
    #[arg(long, default_value_t = 20)]
    pub exchange_reps: u32,
    /// How the update kernel walks its box: march (the 27- and 7-point stencils' threads march
    /// along z with their neighbourhood in registers) or points (a thread per point); the same
    /// bits either way, for benchmarks.
    #[arg(long, value_enum, default_value = "march")]
    pub stencil_form: StencilForm,
    /// Capture two steps (interior update, start, finish, shell update, twice) into a CUDA or
    /// HIP graph once and replay it for every pair of steps after the first two (which run
    /// uncaptured): no host call inside a replayed step. The steps without the exchange
    /// (compute alone) are replayed two to a graph of their own alike.
    /// Needs a GPU backend and every neighbour device-direct, over nccl, or the rank itself
    /// (MPI needs the CPU between pack and unpack).
    #[arg(long)]
    pub graph: bool,
    /// Update the shell's x and y slabs in launches of their own beside the inner box (as the
    /// z slabs are), instead of in the inner box's tiles once the halos are in (the default,
    /// where the kernel takes the field: f64, the 27-point stencil, one component, march form);
    /// for comparing the two.
    #[arg(long)]
    pub shell_launches: bool,
    /// Whether each step updates its inner box beside the exchange and then the shell (on),
    /// or runs the exchange first and then the whole interior in one wide box where the
    /// kernel allows (off). auto: on, unless every neighbour of the rank is the rank itself.
    #[arg(long, value_enum, default_value = "auto")]
    pub overlap: OverlapArg,
    /// Fused mode: each step's boundary update stores the cells the neighbours need straight
    /// into their halos (the device API of haloport_device.h), beside the inner box's update;
    /// no pack or unpack kernel runs for neighbours that are device-direct (ipc) or the rank
    /// itself; the others get an ordinary exchange once the boundary is written. Needs the
    /// library's allocations for the fields (--placement library or auto).
    #[arg(long, conflicts_with_all = ["adopt", "shell_launches"])]
    pub fused: bool,
    /// Run the stencil on 1, 2, 4, ... ranks of the job and all of them, one after the other:
    /// strong (the same grid every time) or weak (--grid is one rank's part); prints a table of
    /// each count's step, compute alone, exposed exchange and parallel efficiency.
    #[arg(long, value_enum)]
    pub scaling: Option<ScalingMode>,
    /// With --scaling: an SVG plot of the parallel efficiency and the step's parts.
    #[arg(long, value_name = "FILE", requires = "scaling")]
    pub plot: Option<PathBuf>,
    /// Inject a fault to show that a lost message ends in a time-out naming the halo:
    /// drop-send=DIR (e.g. +x, -y+z): every rank never delivers its message in that direction;
    /// setup-fails=RANK: that rank's set-up allocation fails (every rank must stop, none hang);
    /// no-peer-access=RANK: that rank's device reaches no other (ipc refuses; auto takes
    /// another route for its same-node neighbours).
    #[arg(long, value_parser = parse_halo_fault)]
    pub inject: Option<haloport::core::halo::HaloFault>,
    /// Where the fields live: the library's allocations, or the application's, adopted at
    /// their start or placed with the inner box's (tiles) or the interior's first cell on a
    /// 32-byte boundary (where the rows' length is a multiple of 16 bytes); auto: each field
    /// as the box its steps run most wants.
    #[arg(long, value_enum, default_value = "auto")]
    pub placement: PlacementArg,
    /// The same as --placement adopted.
    #[arg(long, conflicts_with = "placement")]
    pub adopt: bool,
    /// Checked mode: `finish` waits for its unpack and reports a failure on the device at once
    /// (instead of at the next call), at the cost of the unpack's overlap.
    #[arg(long)]
    pub checked: bool,
    /// Skip the comparison with one rank computing the whole grid (for grids too large to
    /// compute on one device); the result then says "verified": false.
    #[arg(long)]
    pub no_verify: bool,
    /// Write the result as JSON to this file (rank 0).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PackBenchArgs {
    /// Local domain (interior) of one rank, NXxNYxNZ.
    #[arg(long, value_parser = parse_grid, default_value = "64x64x64")]
    pub local: [u64; 3],
    /// Halo width (every dimension).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub halo: u32,
    /// Element type: f32 or f64.
    #[arg(long = "type", value_parser = parse_elem, default_value = "f64")]
    pub elem: haloport::core::domain::ElemType,
    /// Backend that runs the kernels.
    #[arg(long, value_enum, default_value = "host")]
    pub backend: BackendKind,
    /// Launches per timed measurement.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Measurements per figure (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Elements each thread of the region kernels moves.
    #[arg(long, default_value_t = haloport::core::halo::HaloOptions::default().elems_per_thread, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub elems_per_thread: u32,
    /// Threads per block of the region kernels.
    #[arg(long, default_value_t = haloport::core::halo::HaloOptions::default().threads, value_parser = clap::value_parser!(u32).range(32..=1024))]
    pub threads: u32,
    /// Run the full form of the region kernels where the plain one would serve (to compare).
    #[arg(long)]
    pub full_form: bool,
    /// Let the region kernels read their table from device memory where the launch's
    /// parameters would carry it (to compare).
    #[arg(long)]
    pub table_in_memory: bool,
    /// Write the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strategy_names_all_its_variants_once() {
        let names = |s: &str| -> Vec<String> {
            parse_variant_list(s)
                .expect("a valid list")
                .0
                .iter()
                .map(Variant::name)
                .collect()
        };
        assert_eq!(
            names("library"),
            ["lib-base-mpi", "lib-tq-mpi", "lib-base-ipc", "lib-tq-ipc"]
        );
        assert_eq!(names("device-direct,ipc-tq"), ["ipc-base", "ipc-tq"]);
        assert_eq!(names("taskqueue").len(), 8);
        assert_eq!(names("all").len(), Variant::all().len());
        assert!(parse_variant_list("lib-xx").is_err());
    }
}
