//! `locus omp [--config C] [--topology SPEC] [--threads N] [--affinity strict|non-strict]
//! [--report FILE] [--trace FILE] -- PROGRAM ARGS...`: runs a gcc-compiled OpenMP
//! program on Locus's OpenMP runtime (crate `locus-omp`, its README).
//!
//! The command finds the directory holding Locus's `libgomp.so.1` (and the
//! `liblocus_omp.so` it forwards to), puts it first on `LD_LIBRARY_PATH`, passes the
//! settings as environment variables (`locus_omp::env`; a program run without the
//! command reads them too), runs the program and exits with its status (128 + the
//! signal's number when a signal ended it).
//!
//! The library is looked for in `$LOCUS_OMP_LIB_DIR`, then in `omp/` beside the `locus`
//! binary (`target/<profile>/omp/`, where `cargo build` puts it; the runtime it loads
//! is then `target/<profile>/deps/liblocus_omp.so`), then in `../lib/locus/` from the
//! binary (an installation under a prefix, both files side by side).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::ValueEnum;
use locus_omp::env;

use super::Failure;

/// Whether a task's home node binds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OmpAffinity {
    /// Only the home node's workers run the task.
    Strict,
    /// The home node is a preference; other workers may steal the task (default).
    NonStrict,
}

/// `locus omp` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scheduling configuration (ws, dsa-base, dsa-opt, home, bf, ...).
    #[arg(long)]
    config: Option<String>,
    /// Topology: host, NxC (virtual nodes over the host's CPUs) or a preset.
    #[arg(long)]
    topology: Option<String>,
    /// Number of workers, and the default team size (OMP_NUM_THREADS).
    #[arg(long)]
    threads: Option<usize>,
    /// Whether a task's home node (of its out/inout memory) binds it.
    #[arg(long, value_enum)]
    affinity: Option<OmpAffinity>,
    /// Writes Locus's JSON report of the whole program there at exit.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Writes a Perfetto trace (of the program's last parallel region) there.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

/// Runs `locus omp`.
pub fn main(args: &Args) -> Result<(), Failure> {
    if let Some(c) = &args.config {
        c.parse::<locus::Config>()
            .map_err(|e| Failure::Usage(format!("--config {c}: {e}")))?;
    }
    if let Some(t) = &args.topology {
        super::topology(t)?;
    }
    if args.threads == Some(0) {
        return Err(Failure::Usage("--threads 0: at least one thread".into()));
    }
    let (program, rest) = args
        .program
        .split_first()
        .ok_or_else(|| Failure::Usage("no program to run (give it after --)".into()))?;
    refuse_other_runtimes(Path::new(program))?;
    let dir = library_dir()?;
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let mut path = dir.into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    cmd.env("LD_LIBRARY_PATH", path);
    if let Some(c) = &args.config {
        cmd.env(env::CONFIG, c);
    }
    if let Some(t) = &args.topology {
        cmd.env(env::TOPOLOGY, t);
    }
    if let Some(n) = args.threads {
        cmd.env(env::NUM_THREADS, n.to_string());
    }
    if let Some(a) = args.affinity {
        let name = match a {
            OmpAffinity::Strict => "strict",
            OmpAffinity::NonStrict => "non-strict",
        };
        cmd.env(env::AFFINITY, name);
    }
    if let Some(r) = &args.report {
        // A report left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(r);
        cmd.env(env::REPORT, r);
    }
    if let Some(t) = &args.trace {
        cmd.env(env::TRACE, t);
    }
    let status = cmd
        .status()
        .map_err(|e| Failure::Usage(format!("cannot run {}: {e}", Path::new(program).display())))?;
    if let Some(r) = &args.report {
        if !r.exists() {
            eprintln!(
                "locus: no report written to {}: the program ended before Locus's OpenMP \
                 runtime started (no OpenMP region ran, or it was not loaded)",
                r.display()
            );
        }
    }
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    std::process::exit(code)
}

/// The directory holding Locus's `libgomp.so.1` and `liblocus_omp.so`.
pub(crate) fn library_dir() -> Result<PathBuf, Failure> {
    let mut candidates = Vec::new();
    if let Some(d) = std::env::var_os("LOCUS_OMP_LIB_DIR") {
        candidates.push(PathBuf::from(d));
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(bin.join("omp"));
        candidates.push(bin.join("../lib/locus"));
        // A test binary of this crate, in `target/<profile>/deps/`.
        candidates.push(bin.join("../omp"));
    }
    candidates
        .iter()
        .find(|d| {
            d.join(env::LIBRARY_FILE).is_file()
                && (d.join(env::RUNTIME_FILE).is_file()
                    || d.join("../deps").join(env::RUNTIME_FILE).is_file())
        })
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
        .ok_or_else(|| {
            let looked: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
            Failure::Failed(format!(
                "Locus's OpenMP runtime ({} and {}) is not in {}; build it with `cargo build` \
                 or name its directory in LOCUS_OMP_LIB_DIR",
                env::LIBRARY_FILE,
                env::RUNTIME_FILE,
                looked.join(", ")
            ))
        })
}

/// Refuses programs built for another OpenMP runtime (clang's `libomp.so.5`, Intel's
/// `libiomp5.so`): Locus's runtime for them is not built yet.
fn refuse_other_runtimes(program: &Path) -> Result<(), Failure> {
    let resolved = if program.components().count() > 1 {
        Some(program.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(program))
                .find(|p| p.is_file())
        })
    };
    let Some(path) = resolved else {
        return Ok(());
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    if !bytes.starts_with(b"\x7fELF") {
        return Ok(());
    }
    for other in [&b"\0libomp.so"[..], b"\0libiomp5.so"] {
        if bytes.windows(other.len()).any(|w| w == other) {
            return Err(Failure::Usage(format!(
                "{} is linked with {}, an OpenMP runtime whose ABI Locus does not provide \
                 yet (clang's `__kmpc_*`); build it with gcc -fopenmp to run it on Locus",
                path.display(),
                String::from_utf8_lossy(&other[1..])
            )));
        }
    }
    Ok(())
}
