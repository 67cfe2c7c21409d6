//! `locus run BENCH ...`: run a benchmark with the threads engine (not wired yet).

use crate::args::{Bench, ConfigName, Control, Size};
use crate::cmd::{not_built, topology, Failure};

/// Options of `locus run` (DESIGN section 5).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    pub bench: Bench,
    /// Scheduling configuration (DESIGN section 2).
    #[arg(long, value_enum, default_value = "dsa-opt")]
    pub config: ConfigName,
    /// `host`, `NxC`, `NxC:d,...`, `NxC:@FILE` or a preset; models run on virtual nodes.
    #[arg(long, value_name = "SPEC", default_value = "host")]
    pub topology: String,
    /// Number of worker threads (default: one per CPU of the topology).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Sequential or parallel control program.
    #[arg(long, value_enum, default_value = "seq")]
    pub control: Control,
    /// Problem size.
    #[command(flatten)]
    pub size: Size,
    /// Print one JSON report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a Chrome trace to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// Checks the options; the run itself is not built yet.
pub fn main(args: &Args) -> Result<(), Failure> {
    topology(&args.topology)?;
    Err(not_built("run"))
}
