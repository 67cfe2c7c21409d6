//! `locus-mpi`: runs a distributed kernel, one Locus runtime per MPI rank.
//!
//! ```text
//! mpirun -np 4 locus-mpi run BENCH [--config NAME] [--topology SPEC | --threads N]
//!        [--size N] [--block-len L] [--iterations N] [--panic-on RANK] [--json]
//! ```
//!
//! `BENCH` is `jacobi-2d`, `cholesky` or `random-dag`. Every rank runs the kernel; rank
//! 0 collects and verifies the result and prints the report: one line per rank, or
//! with `--json` one object with a section per rank. A bad argument prints one line on
//! stderr and exits with status 2; a failed run (on any rank) exits with status 1 on
//! every rank, and so does a rank's death or silence for longer than
//! `LOCUS_MPI_PEER_TIMEOUT` seconds (default 30; `none`: no bound) on the others.
//! `locus run BENCH --distributed` does the same when the command line is built with
//! its `mpi` feature.

use std::process::ExitCode;

use locus::Config;
use locus_mpi::kernels::Sizes;
use locus_mpi::launch::{launch, Failure, Launch};

const USAGE: &str = "usage: locus-mpi run BENCH [--config NAME] [--topology SPEC] \
[--threads N] [--size N] [--block-len L] [--iterations N] [--panic-on RANK] [--json]";

fn parse() -> Result<Launch, String> {
    let mut it = std::env::args().skip(1);
    match it.next().as_deref() {
        Some("run") => {}
        Some(other) => return Err(format!("unknown command `{other}`; {USAGE}")),
        None => return Err(USAGE.to_string()),
    }
    let bench = it.next().ok_or_else(|| USAGE.to_string())?;
    let mut l = Launch {
        bench,
        config: Config::DsaOpt,
        topology: None,
        threads: 2,
        sizes: Sizes::default(),
        json: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--json" {
            l.json = true;
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
            "--config" => l.config = value.parse().map_err(|e| format!("--config: {e}"))?,
            "--topology" => l.topology = Some(value.clone()),
            "--threads" => l.threads = number()?,
            "--size" => l.sizes.size = Some(number()?),
            "--block-len" => l.sizes.block_len = Some(number()?),
            "--iterations" => l.sizes.iterations = Some(number()?),
            "--panic-on" => l.sizes.panic_on = Some(number()?),
            _ => return Err(format!("unknown option `{flag}`; {USAGE}")),
        }
    }
    Ok(l)
}

fn main() -> ExitCode {
    let result = parse().map_err(Failure::Usage).and_then(|l| launch(&l));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let (message, code) = f.parts();
            // One write: the ranks of a job share one stderr, and a line written in
            // pieces interleaves with another rank's.
            let line = format!("locus-mpi: {message}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            ExitCode::from(code)
        }
    }
}
