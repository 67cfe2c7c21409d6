//! Launching a distributed kernel on this rank (feature `mpi`): what both the
//! `locus-mpi` binary and `locus run BENCH --distributed` (the `mpi` feature of the
//! command line) do under `mpirun`.
//!
//! Every rank builds its runtime (one virtual node of `threads` workers plus the
//! rank's communication worker, laid over whatever CPUs MPI gave the rank; or a worker
//! per CPU of `topology`, the last being the communication worker), initialises MPI,
//! runs the kernel, and sends its report to rank 0, which prints the whole: one line
//! per rank, or with `json` one object with a section per rank
//! ([`kernels::json`]).

use locus::{Config, Runtime, Topology};

use crate::cluster::{Cluster, Error};
use crate::kernels::{self, Outcome, Sizes};
use crate::transport::Transport;

/// What to run.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The kernel: one of [`kernels::NAMES`].
    pub bench: String,
    /// The configuration of every rank's runtime (versioned data only).
    pub config: Config,
    /// A topology spec for every rank (`NxC` or a preset, as virtual nodes); `None`:
    /// one node of `threads` workers plus the communication worker.
    pub topology: Option<String>,
    /// Compute workers per rank without `topology`.
    pub threads: usize,
    /// Sizes and failure injection.
    pub sizes: Sizes,
    /// One JSON object on rank 0's stdout instead of text.
    pub json: bool,
}

/// Why a launch failed.
#[derive(Debug)]
pub enum Failure {
    /// A bad argument: exit status 2.
    Usage(String),
    /// The run failed on this rank or another: exit status 1.
    Failed(String),
}

impl Failure {
    /// The message, and the exit status it calls for.
    pub fn parts(&self) -> (&str, u8) {
        match self {
            Failure::Usage(m) => (m, 2),
            Failure::Failed(m) => (m, 1),
        }
    }
}

fn runtime(l: &Launch) -> Result<Runtime, Error> {
    let spec = match &l.topology {
        Some(spec) => spec.clone(),
        None => format!("1x{}", l.threads + 1),
    };
    let topology =
        Topology::from_spec(&spec).map_err(|e| Error::Config(format!("--topology: {e}")))?;
    Ok(Runtime::builder()
        .config(l.config)
        .topology(topology)
        .build()?)
}

fn run(l: &Launch, transport: std::sync::Arc<dyn Transport>) -> Result<Outcome, Error> {
    let cluster = Cluster::new(runtime(l)?, transport)?;
    kernels::run(&l.bench, &cluster, &l.sizes)
}

/// What `l` runs, as its options say it: `jacobi-2d --size 64`.
fn program(l: &Launch) -> String {
    let s = &l.sizes;
    let mut text = l.bench.clone();
    for (option, value) in [
        ("--size", s.size),
        ("--block-len", s.block_len),
        ("--iterations", s.iterations),
        ("--panic-on", s.panic_on),
    ] {
        if let Some(v) = value {
            text.push_str(&format!(" {option} {v}"));
        }
    }
    format!("`{text}`")
}

/// Runs `l` on this rank under MPI and prints rank 0's report. `Ok` on every rank when
/// the run succeeded everywhere and rank 0 verified the result.
pub fn launch(l: &Launch) -> Result<(), Failure> {
    if !kernels::NAMES.contains(&l.bench.as_str()) {
        return Err(Failure::Usage(format!(
            "`{}` has no distributed version; distributed benchmarks: {}",
            l.bench,
            kernels::NAMES.join(" ")
        )));
    }
    if l.threads == 0 {
        return Err(Failure::Usage("--threads: at least 1".into()));
    }
    let peer_timeout = crate::mpi::peer_timeout_from_env().map_err(Failure::Usage)?;
    let (universe, mpi) = crate::mpi::init_with(peer_timeout).map_err(Failure::Failed)?;
    let (rank, ranks) = (mpi.rank(), mpi.ranks());
    if let Some(r) = l.sizes.panic_on.filter(|&r| r >= ranks) {
        mpi.shutdown();
        drop(universe);
        return Err(Failure::Usage(format!(
            "--panic-on {r}: there are {ranks} ranks (0 to {})",
            ranks - 1
        )));
    }
    // The ranks must run one program: checked before any of its messages.
    let program = program(l);
    match kernels::agree_on_program(&*mpi, &program) {
        Ok(()) => {}
        Err(Error::Config(e)) => {
            mpi.shutdown();
            drop(universe);
            return Err(Failure::Usage(format!("rank {rank} of {ranks}: {e}")));
        }
        Err(e) => {
            mpi.shutdown();
            // A rank failed or went silent: finalising MPI could wait for it.
            std::mem::forget(universe);
            return Err(Failure::Failed(format!("rank {rank} of {ranks}: {e}")));
        }
    }
    let outcome = match run(l, mpi.clone()) {
        Ok(o) => o,
        Err(e) => {
            let message = format!("rank {rank} of {ranks}: {e}");
            // The peers learn it, wherever they wait for this rank (a failure before
            // or after the cluster's run, which reports its own failures already).
            mpi.fail(&message);
            mpi.shutdown();
            // The peers may be gone or failing: finalising MPI could wait for them.
            std::mem::forget(universe);
            return Err(match e {
                Error::Config(_) | Error::Refused { .. } => Failure::Usage(message),
                _ => Failure::Failed(message),
            });
        }
    };
    let sections = kernels::gather(&*mpi, &outcome);
    // Rank 0 verified the result: every rank ends with its verdict.
    let verdict = match (rank, outcome.verified) {
        (0, Some(true)) => String::new(),
        (0, _) => format!(
            "{}: the result differs from the sequential reference: {}",
            l.bench,
            outcome.mismatch.as_deref().unwrap_or("?")
        ),
        _ => String::new(),
    };
    let agreed = kernels::from_rank_0(&*mpi, &verdict);
    mpi.shutdown();
    if agreed.is_ok() {
        drop(universe);
    } else {
        // A rank may have failed or gone silent: finalising MPI could wait for it.
        std::mem::forget(universe);
    }
    if let Some(sections) = sections {
        if l.json {
            println!("{}", kernels::json(&outcome, l.config.name(), &sections));
        } else {
            print!("{}", kernels::text(&outcome, l.config.name(), &sections));
        }
    }
    agreed.map_err(|e| Failure::Failed(format!("rank {rank} of {ranks}: {e}")))
}
