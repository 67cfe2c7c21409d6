//! `locus sim BENCH --topology SPEC ...`: run a benchmark in the simulator, on a
//! modelled machine, in deterministic virtual time.

use locus::Config;

use crate::args::{config_parser, Bench, Bind, Control, SharedArg, Size};
use crate::cmd::execute::{execute_traced, Job};
use crate::cmd::{topology, Failure};

/// Options of `locus sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    pub bench: Bench,
    /// The modelled machine: a preset or a spec.
    #[arg(long, value_name = "PRESET|SPEC", required = true)]
    pub topology: String,
    /// Scheduling configuration (see docs/guide.md, "Choosing a configuration").
    #[arg(long, value_parser = config_parser(), default_value = "dsa-opt")]
    pub config: Config,
    /// Number of simulated workers (default: one per CPU of the topology), placed as
    /// `locus run --threads` places them (see `--bind`).
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
}

/// Simulates the benchmark and prints its report.
pub fn main(args: &Args) -> Result<(), Failure> {
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
            // Simulated pools hold no memory.
            huge_pages: false,
            control: args.control,
            size: &args.size,
            json: args.json,
            replay: args.recorded.replay,
            replay_placement: args.recorded.placement,
        },
        Some(locus_sim::Sim::new()),
        args.trace.as_deref(),
    )
}
