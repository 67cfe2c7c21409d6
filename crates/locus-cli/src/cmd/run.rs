//! `locus run BENCH ...`: run a benchmark with the `threads` engine on this machine
//! (synthetic topologies and presets become virtual nodes over the host's CPUs).

use locus::Config;

use crate::args::{config_parser, Bench, Bind, Control, SharedArg, Size};
use crate::cmd::execute::{execute_traced, Job};
use crate::cmd::{topology, Failure};

/// Options of `locus run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    pub bench: Bench,
    /// Scheduling configuration (see docs/guide.md, "Choosing a configuration").
    #[arg(long, value_parser = config_parser(), default_value = "dsa-opt")]
    pub config: Config,
    /// `host`, `NxC`, `NxC:d,...`, `NxC:@FILE` or a preset; models run on virtual nodes.
    #[arg(long, value_name = "SPEC", default_value = "host")]
    pub topology: String,
    /// Number of worker threads (default: one per CPU of the topology).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        allow_negative_numbers = true
    )]
    pub threads: Option<u32>,
    /// Which CPUs fewer workers than CPUs take: `spread` (one per node in turn) or
    /// `close` (node after node).
    #[arg(long, value_enum, default_value = "spread")]
    pub bind: Bind,
    /// For `--config shm-base`: where the shared data go, `interleave` (page by page
    /// over the nodes, the default) or `first-touch` (each page on the node of the
    /// first task touching it).
    #[arg(long, value_enum, value_name = "PLACEMENT")]
    pub shared: Option<SharedArg>,
    /// For `--config home`: workers per steal vicinity (1: no stealing; default: all
    /// the workers).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        allow_negative_numbers = true
    )]
    pub vicinity: Option<u32>,
    /// Sequential or parallel control program.
    #[arg(long, value_enum, default_value = "seq")]
    pub control: Control,
    /// Whether the memory pools ask the kernel for transparent huge pages on their
    /// chunks of 2 MiB or more (`madvise(MADV_HUGEPAGE)`; shared data never takes
    /// them).
    #[arg(
        long,
        value_name = "ON|OFF",
        default_value = "off",
        action = clap::ArgAction::Set,
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::PossibleValuesParser::new(["on", "off"]),
            |v: String| v == "on"
        )
    )]
    pub huge_pages: bool,
    /// Problem size.
    #[command(flatten)]
    pub size: Size,
    /// Recorded graphs: `--replay`, `--replay-placement`.
    #[command(flatten)]
    pub recorded: crate::args::Replay,
    /// Print one JSON report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a Chrome trace of the run to FILE (`.json`, or `.json.gz` compressed; open
    /// it at https://ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Run as one rank of an MPI program, under `mpirun` (jacobi-2d, cholesky,
    /// random-dag): every rank runs one runtime, rank 0 verifies and reports (needs the
    /// `mpi` feature; docs/guide.md, "Distributed runs"). Without --topology, each rank
    /// has --threads workers (default 2) plus its communication worker.
    #[arg(long)]
    pub distributed: bool,
}

/// Runs the benchmark and prints its report.
pub fn main(args: &Args) -> Result<(), Failure> {
    if args.distributed {
        return distributed(args);
    }
    let topology = topology(&args.topology)?;
    execute_traced(
        Job {
            bench: args.bench,
            config: args.config,
            topology,
            threads: args.threads,
            bind: args.bind,
            shared: args.shared,
            vicinity: args.vicinity,
            huge_pages: args.huge_pages,
            control: args.control,
            size: &args.size,
            json: args.json,
            replay: args.recorded.replay,
            replay_placement: args.recorded.placement,
        },
        None,
        args.trace.as_deref(),
    )
}

/// `--distributed`: this process is one rank of an MPI program (crate `locus-mpi`).
#[cfg(feature = "mpi")]
fn distributed(args: &Args) -> Result<(), Failure> {
    use clap::ValueEnum;
    let refused = |option: &str| {
        Err(Failure::Usage(format!(
            "{option}: not for a distributed run, which would ignore it"
        )))
    };
    let s = &args.size;
    if args.trace.is_some() {
        return refused("--trace");
    }
    if args.recorded.replay {
        return refused("--replay");
    }
    if args.bind != crate::args::Bind::Spread {
        return refused("--bind");
    }
    if args.shared.is_some() {
        return refused("--shared");
    }
    if args.huge_pages {
        return refused("--huge-pages");
    }
    if s.migrate.is_some() {
        return refused("--migrate");
    }
    if args.threads.is_some() && args.topology != "host" {
        return refused("--threads with --topology (the topology gives each rank its workers)");
    }
    if args.control != Control::Seq {
        return refused("--control parallel");
    }
    if args.vicinity.is_some() {
        return refused("--vicinity");
    }
    if s.preset.is_some() || s.blocks.is_some() || !s.params.is_empty() {
        return refused("--preset, --blocks and --param");
    }
    if s.affinity.is_some() || s.matrix.is_some() {
        return refused("--affinity and --matrix");
    }
    let bench = args
        .bench
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let launch = locus_mpi::launch::Launch {
        bench,
        config: args.config,
        topology: (args.topology != "host").then(|| args.topology.clone()),
        threads: args.threads.map_or(2, |t| t as usize),
        sizes: locus_mpi::kernels::Sizes {
            size: s.size,
            block_len: s.block_len,
            iterations: s.iterations,
            panic_on: None,
        },
        json: args.json,
    };
    locus_mpi::launch::launch(&launch).map_err(|f| match f {
        locus_mpi::launch::Failure::Usage(m) => Failure::Usage(m),
        locus_mpi::launch::Failure::Failed(m) => Failure::Failed(m),
    })
}

/// `--distributed` without the `mpi` feature: a usage error saying how to get it.
#[cfg(not(feature = "mpi"))]
fn distributed(_: &Args) -> Result<(), Failure> {
    Err(Failure::Usage(
        "--distributed needs a locus built with MPI: install it (README, \"Distributed \
         runs\"), then `cargo build --release -p locus-cli --features mpi`"
            .into(),
    ))
}
