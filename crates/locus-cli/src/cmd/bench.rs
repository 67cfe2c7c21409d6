//! `locus bench ...`: run a benchmark suite (not built yet).

use crate::args::{ConfigName, Engine, Suite};
use crate::cmd::{not_built, Failure};

/// Options of `locus bench` (DESIGN section 5).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which suite.
    #[arg(long, value_enum, default_value = "quick")]
    pub suite: Suite,
    /// Configurations to compare (comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "A,B,...")]
    pub configs: Vec<ConfigName>,
    /// Engine.
    #[arg(long, value_enum, default_value = "threads")]
    pub engine: Engine,
    /// Also run the peer runtimes (OpenMP tasks, StarPU, oneTBB).
    #[arg(long)]
    pub peers: bool,
    /// Directory for the reports.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

/// Checks the options; the suite is not built yet.
pub fn main(_args: &Args) -> Result<(), Failure> {
    Err(not_built("bench"))
}
