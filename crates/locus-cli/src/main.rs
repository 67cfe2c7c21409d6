//! The `locus` command line (`README.md`, "Command line"; `docs/guide.md`).
//!
//! `main` parses the arguments and hands each subcommand to its own module under
//! [`cmd`]. Errors come back as [`cmd::Failure`]: a bad argument prints one line on
//! stderr and exits with status 2, any other failure exits with status 1.
//!
//! "Paper 1" and the other papers cited here are listed in `docs/papers.md`.

mod args;
mod bench;
mod cmd;
mod progress;
mod render;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

/// Locus: a NUMA-aware task-parallel dataflow runtime.
#[derive(Debug, Parser)]
#[command(name = "locus", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show a topology: nodes, CPUs, memory and the cost matrix.
    Topo(cmd::topo::Args),
    /// Run a benchmark on this machine with the threads engine.
    Run(cmd::run::Args),
    /// Run a benchmark on a modelled machine with the simulator.
    Sim(cmd::sim::Args),
    /// Run a benchmark suite over several configurations.
    Bench(cmd::bench::Args),
    /// Put two `locus bench` outputs side by side, with ratio columns.
    Compare(cmd::compare::Args),
    /// Run a long seeded mix of verified runs, checking for leaks, growth and hangs.
    Soak(cmd::soak::Args),
    /// Show what Locus can do so far, on this machine.
    Demo(cmd::demo::Args),
    /// Run a gcc-compiled OpenMP program on Locus's OpenMP runtime.
    Omp(cmd::omp::Args),
}

// The binary's allocator (feature `mimalloc`, default) is declared by crate locus-omp,
// which this binary links: a library built both as an rlib and as a cdylib (the OpenMP
// runtime) cannot declare one for the cdylib alone, and a program may have only one.
// Task records are allocated by the worker that submits them and freed by the one that
// runs them; mimalloc's thread-free lists make that cheap, where the system allocator
// serialises both threads on one arena lock.

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of stdout goes away
    // (`locus run ... --json | head -c 100`) instead of failing on a broken pipe.
    // SAFETY: restoring the default disposition of SIGPIPE, before any other thread
    // exists, has no effect on memory.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    let result = match cli.command {
        Command::Topo(args) => cmd::topo::main(&args),
        Command::Run(args) => cmd::run::main(&args),
        Command::Sim(args) => cmd::sim::main(&args),
        Command::Bench(args) => cmd::bench::main(&args),
        Command::Compare(args) => cmd::compare::main(&args),
        Command::Soak(args) => cmd::soak::main(&args),
        Command::Demo(args) => cmd::demo::main(&args),
        Command::Omp(args) => cmd::omp::main(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// `--help` and `--version` print and succeed; every other parse error becomes one line
/// on stderr and exit status 2.
fn parse_failure(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Printing help can only fail if stdout is closed; nothing left to say then.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            cmd::Failure::Usage(
                "missing subcommand (topo, run, sim, bench, compare, soak, demo); try `locus --help`".into(),
            )
            .report()
        }
        _ => cmd::Failure::Usage(format!("{}; try `locus --help`", first_line(e))).report(),
    }
}

/// The first line of a clap error without its `error: ` prefix; a line ending in `:`
/// ("the following required arguments were not provided:") gets the next one appended.
/// A value on the command line holding a newline or another control character is
/// shown escaped (`'ws\nX'`), not cut at the newline.
fn first_line(e: &clap::Error) -> String {
    let mut text = e.render().to_string();
    // The values as clap quotes them: whole arguments, and the part after `=` of
    // `--name=value`; the longest first, so that a value inside another is not
    // escaped twice.
    let mut values: Vec<String> = std::env::args_os()
        .skip(1)
        // As clap shows them: invalid UTF-8 replaced.
        .map(|a| a.to_string_lossy().into_owned())
        .flat_map(|a| {
            let after = a.split_once('=').map(|(_, v)| v.to_string());
            [Some(a), after]
        })
        .flatten()
        .filter(|v| locus_bench::size::one_line(v) != *v)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    for value in values {
        text = text.replace(&value, &locus_bench::size::one_line(&value));
    }
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    match (first.strip_suffix(':'), lines.next()) {
        (Some(head), Some(next)) if !next.starts_with("Usage:") => format!("{head}: {next}"),
        _ => first.to_string(),
    }
}
