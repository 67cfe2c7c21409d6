//! One module per subcommand; each has an `Args` (clap) and a `main`.

pub mod bench;
pub mod compare;
pub mod demo;
pub mod execute;
pub mod omp;
pub mod run;
pub mod sim;
pub mod soak;
pub mod topo;

use std::process::ExitCode;

use locus_topo::{TopoError, Topology};

/// Why a subcommand failed.
#[derive(Debug)]
pub enum Failure {
    /// A bad argument, or a subcommand that is not built yet: exit status 2.
    Usage(String),
    /// The command was fine but could not be carried out: exit status 1.
    Failed(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Usage(msg) | Failure::Failed(msg) => f.write_str(msg),
        }
    }
}

impl Failure {
    /// Prints the failure as one line on stderr and gives its exit status. Control
    /// characters in the message (a value with a newline, quoted from the command line
    /// or a file) are escaped, so that the line is whole and one line.
    pub fn report(&self) -> ExitCode {
        let (line, code) = match self {
            Failure::Usage(msg) => (msg, 2),
            Failure::Failed(msg) => (msg, 1),
        };
        eprintln!("locus: {}", locus_bench::size::one_line(line.trim_end()));
        ExitCode::from(code)
    }
}

/// Builds the topology a `--topology SPEC` names. A spec that cannot be parsed is a
/// bad argument; a host that cannot be read is a failure.
pub fn topology(spec: &str) -> Result<Topology, Failure> {
    Topology::from_spec(spec).map_err(|e| match e {
        TopoError::Io { .. }
        | TopoError::Parse { .. }
        | TopoError::Affinity(_)
        | TopoError::Hwloc(_)
            if spec.trim() == "host" =>
        {
            Failure::Failed(format!("cannot read the host topology: {e}"))
        }
        _ => Failure::Usage(format!("--topology {spec}: {e}")),
    })
}
