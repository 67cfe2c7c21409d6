//! [`TopoError`]: everything that can go wrong while reading or building a topology.

use std::path::PathBuf;

/// Why a topology could not be read, parsed or validated.
///
/// Every message names what is wrong, so that a command line can print it as is.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopoError {
    /// A topology needs at least one node.
    #[error("a topology needs at least one node")]
    NoNodes,
    /// A topology needs at least one CPU.
    #[error("a topology needs at least one CPU")]
    NoCpus,
    /// The spec or the machine is larger than Locus models.
    #[error("{what} is {value}, more than the limit of {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The value given.
        value: usize,
        /// The largest value accepted.
        limit: usize,
    },
    /// The distance matrix does not have one row of `nodes` entries per node.
    #[error("distance matrix is not square: {nodes} nodes need {expected} entries, got {got}")]
    NotSquare {
        /// Number of nodes.
        nodes: usize,
        /// Entries expected (`nodes * nodes`, or `nodes` in one row).
        expected: usize,
        /// Entries found.
        got: usize,
    },
    /// `distance(i, j) != distance(j, i)`.
    #[error("distance matrix is asymmetric: n{from}->n{to} is {forward} but n{to}->n{from} is {backward}")]
    Asymmetric {
        /// First node.
        from: usize,
        /// Second node.
        to: usize,
        /// `distance(from, to)`.
        forward: u32,
        /// `distance(to, from)`.
        backward: u32,
    },
    /// A node is closer to another node than to itself.
    #[error("local distance of n{node} ({local}) is not the smallest in its row: n{other} is at {distance}")]
    LocalNotSmallest {
        /// The node whose row is wrong.
        node: usize,
        /// Its local distance.
        local: u32,
        /// The nearer node.
        other: usize,
        /// The distance to the nearer node.
        distance: u32,
    },
    /// A distance of zero (distances are relative costs, local is usually 10).
    #[error("distance n{from}->n{to} is 0; distances must be positive")]
    ZeroDistance {
        /// Row.
        from: usize,
        /// Column.
        to: usize,
    },
    /// A cost factor is not a positive finite number.
    #[error("{kind} cost factor n{from}->n{to} is {value}; factors must be positive and finite")]
    BadFactor {
        /// `read` or `write`.
        kind: &'static str,
        /// Row.
        from: usize,
        /// Column.
        to: usize,
        /// The value found.
        value: f64,
    },
    /// A CPU belongs to two nodes, or a cache group names an unknown CPU.
    #[error("inconsistent CPU sets: {0}")]
    InconsistentCpus(String),
    /// No preset of that name.
    #[error("unknown topology preset `{name}` (known: {known})")]
    UnknownPreset {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A topology spec that cannot be parsed.
    #[error("malformed topology spec `{spec}`: {reason}")]
    MalformedSpec {
        /// The spec given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (shared, so that the error can be cloned).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// A file was read but its content is not what the kernel writes there.
    #[error("cannot parse {}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `sched_getaffinity` failed.
    #[error("cannot read the allowed CPUs of this process: {0}")]
    Affinity(#[source] std::sync::Arc<std::io::Error>),
    /// The process may run on no CPU of the machine.
    #[error("none of the machine's CPUs is in this process's allowed set")]
    NoAllowedCpus,
    /// The hwloc backend failed.
    #[error("hwloc: {0}")]
    Hwloc(String),
}
