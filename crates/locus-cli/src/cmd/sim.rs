//! `locus sim BENCH --topology SPEC ...`: run a benchmark in the simulator (not built yet).

use crate::args::{Bench, ConfigName, Size};
use crate::cmd::{not_built, topology, Failure};

/// Options of `locus sim` (DESIGN section 5).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    pub bench: Bench,
    /// The modelled machine: a preset or a spec.
    #[arg(long, value_name = "PRESET|SPEC", required = true)]
    pub topology: String,
    /// Scheduling configuration (DESIGN section 2).
    #[arg(long, value_enum, default_value = "dsa-opt")]
    pub config: ConfigName,
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

/// Checks the options; the simulator is not built yet.
pub fn main(args: &Args) -> Result<(), Failure> {
    topology(&args.topology)?;
    Err(not_built("sim"))
}
