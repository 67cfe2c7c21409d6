//! `locus-mpi`: runs a distributed kernel, one Locus runtime per MPI rank.
//!
//! ```text
//! mpirun -np 4 locus-mpi run jacobi-2d [--config NAME] [--topology SPEC | --threads N]
//!        [--size N] [--block-len L] [--iterations N] [--panic-at-task RANK] [--json]
//! ```
//!
//! Every rank runs the kernel; rank 0 collects and verifies the result and prints the
//! report: human-readable, or with `--json` one object with a section per rank. A bad
//! argument prints one line on stderr and exits with status 2; a failed run (on any
//! rank) exits with status 1 on every rank.

use std::process::ExitCode;
use std::sync::Arc;

use locus::{Config, Runtime, Topology};
use locus_mpi::kernels::{self, Outcome};
use locus_mpi::{Cluster, Error, Transport};

struct Args {
    bench: String,
    config: Config,
    topology: Option<String>,
    threads: usize,
    size: Option<usize>,
    block_len: Option<usize>,
    iterations: Option<usize>,
    panic_on: Option<usize>,
    json: bool,
}

const USAGE: &str = "usage: locus-mpi run BENCH [--config NAME] [--topology SPEC] \
[--threads N] [--size N] [--block-len L] [--iterations N] [--panic-on RANK] [--json]";

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    match it.next().as_deref() {
        Some("run") => {}
        Some(other) => return Err(format!("unknown command `{other}`; {USAGE}")),
        None => return Err(USAGE.to_string()),
    }
    let bench = it.next().ok_or_else(|| USAGE.to_string())?;
    if !kernels::NAMES.contains(&bench.as_str()) {
        return Err(format!(
            "unknown benchmark `{bench}`; distributed ones: {}",
            kernels::NAMES.join(" ")
        ));
    }
    let mut a = Args {
        bench,
        config: Config::DsaOpt,
        topology: None,
        threads: 2,
        size: None,
        block_len: None,
        iterations: None,
        panic_on: None,
        json: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--json" {
            a.json = true;
            continue;
        }
        let value = it
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value; {USAGE}"))?;
        let number = || -> Result<usize, String> {
            value
                .parse::<usize>()
                .map_err(|_| format!("`{flag}`: `{value}` is not a non-negative integer"))
        };
        match flag.as_str() {
            "--config" => a.config = value.parse().map_err(|e| format!("--config: {e}"))?,
            "--topology" => a.topology = Some(value.clone()),
            "--threads" => a.threads = number()?,
            "--size" => a.size = Some(number()?),
            "--block-len" => a.block_len = Some(number()?),
            "--iterations" => a.iterations = Some(number()?),
            "--panic-on" => a.panic_on = Some(number()?),
            _ => return Err(format!("unknown option `{flag}`; {USAGE}")),
        }
    }
    if a.threads == 0 {
        return Err("--threads: at least 1".into());
    }
    Ok(a)
}

fn run(args: &Args, transport: Arc<dyn Transport>) -> Result<Outcome, Error> {
    // Without a topology, one virtual node of `threads` workers plus the rank's
    // communication worker, laid over whatever CPUs MPI gave the rank; with one, a
    // worker per CPU of the topology, the last being the communication worker.
    let spec = match &args.topology {
        Some(spec) => spec.clone(),
        None => format!("1x{}", args.threads + 1),
    };
    let topology =
        Topology::from_spec(&spec).map_err(|e| Error::Config(format!("--topology: {e}")))?;
    let rt = Runtime::builder()
        .config(args.config)
        .topology(topology)
        .build()?;
    let cluster = Cluster::new(rt, transport)?;
    let sizes = kernels::Sizes {
        size: args.size,
        block_len: args.block_len,
        iterations: args.iterations,
        panic_on: args.panic_on,
    };
    kernels::run(&args.bench, &cluster, &sizes)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("locus-mpi: {e}");
            return ExitCode::from(2);
        }
    };
    let (universe, mpi) = match locus_mpi::mpi::init() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("locus-mpi: {e}");
            return ExitCode::from(1);
        }
    };
    let (rank, ranks) = (mpi.rank(), mpi.ranks());
    let outcome = run(&args, mpi.clone());
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("locus-mpi: rank {rank} of {ranks}: {e}");
            // The peers may be gone or failing: leave without finalising MPI, which
            // could wait for them.
            mpi.shutdown();
            std::process::exit(if matches!(e, Error::Config(_)) { 2 } else { 1 });
        }
    };
    // Gather every rank's section on rank 0, over the same transport.
    let sections = locus_mpi::kernels::gather(&*mpi, &outcome);
    mpi.shutdown();
    drop(universe);
    let Some(sections) = sections else {
        return ExitCode::SUCCESS;
    };
    let verified = outcome.verified == Some(true);
    if args.json {
        println!("{}", kernels::json(&outcome, args.config.name(), &sections));
    } else {
        print!("{}", kernels::text(&outcome, args.config.name(), &sections));
    }
    if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "locus-mpi: the result differs from the sequential reference: {}",
            outcome.mismatch.as_deref().unwrap_or("?")
        );
        ExitCode::from(1)
    }
}
