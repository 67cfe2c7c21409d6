//! Option values shared by several subcommands (DESIGN sections 2 and 5).

use clap::builder::TypedValueParser as _;
use clap::{Args, ValueEnum};
use locus::Config;

/// The benchmarks `run` and `sim` accept.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Bench {
    /// Random task graphs checked against sequential execution.
    RandomDag,
    /// Task-management overhead: chains and fan-out/fan-in rounds.
    Overhead,
    /// 1-D Jacobi stencil.
    #[value(name = "jacobi-1d")]
    Jacobi1d,
    /// 2-D Jacobi stencil.
    #[value(name = "jacobi-2d")]
    Jacobi2d,
    /// 3-D Jacobi stencil.
    #[value(name = "jacobi-3d")]
    Jacobi3d,
    /// 1-D Gauss-Seidel stencil.
    #[value(name = "seidel-1d")]
    Seidel1d,
    /// 2-D Gauss-Seidel stencil.
    #[value(name = "seidel-2d")]
    Seidel2d,
    /// 3-D Gauss-Seidel stencil.
    #[value(name = "seidel-3d")]
    Seidel3d,
    /// K-means clustering.
    Kmeans,
    /// Blur followed by a Roberts edge filter.
    BlurRoberts,
    /// Bitonic sort.
    Bitonic,
}

/// Parses a configuration name of DESIGN section 2 into the runtime's [`Config`]; `--help`
/// lists the names.
pub fn config_parser() -> impl clap::builder::TypedValueParser<Value = Config> {
    clap::builder::PossibleValuesParser::new(Config::ALL.map(Config::name))
        .map(|name| name.parse::<Config>().expect("every listed name parses"))
}

/// How tasks are submitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Control {
    /// One sequential control program submits every task.
    Seq,
    /// Tasks spawn tasks (parallel control program).
    Parallel,
}

/// Named problem sizes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SizePreset {
    /// The sizes of paper 1's evaluation.
    Paper,
}

/// Benchmark suites of `locus bench`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// Small sizes, a few minutes.
    Quick,
    /// Paper 1's sizes.
    Paper,
}

/// Engines that carry out a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Pinned OS threads, real memory, wall-clock time.
    Threads,
    /// Deterministic discrete-event simulation of a modelled machine.
    Sim,
}

/// Problem size: a named preset or explicit sizes.
#[derive(Clone, Debug, Default, Args)]
pub struct Size {
    /// Named problem size.
    #[arg(long = "preset", value_enum, conflicts_with_all = ["size", "blocks", "block_len", "iterations", "params"])]
    pub preset: Option<SizePreset>,
    /// Problem size (elements per dimension).
    #[arg(long, value_name = "N")]
    pub size: Option<usize>,
    /// Number of blocks (tasks per iteration).
    #[arg(long, value_name = "N")]
    pub blocks: Option<usize>,
    /// Elements per block.
    #[arg(long, value_name = "N")]
    pub block_len: Option<usize>,
    /// Number of iterations.
    #[arg(long, value_name = "N")]
    pub iterations: Option<usize>,
    /// A benchmark-specific parameter (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
    pub params: Vec<(String, String)>,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}
