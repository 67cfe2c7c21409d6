//! Option values shared by several subcommands (configurations, benchmarks, sizes).

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
    /// BOTS SparseLU: LU of a sparse block matrix (paper 4).
    Sparselu,
    /// Tiled Cholesky factorisation (potrf, trsm, syrk, gemm).
    Cholesky,
    /// Repeated sparse matrix-vector products over row partitions.
    Spmv,
    /// The BiCGStab solver over row partitions.
    Bicgstab,
    /// STREAM: copy, scale, add, triad over three vectors (paper 2).
    Stream,
    /// STREAM with one set of vectors per node, swept by that node's tasks (paper 2).
    NestedStream,
    /// Two triad phases whose teams swap data: migrate it or move the tasks (paper 2).
    TwistedStream,
}

/// What a task does with remote shared data (the runtime's setting: none, now,
/// next-touch, auto), and twisted-stream's policies at its phase change (Broquedis et
/// al., Twisted-STREAM).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MigrateArg {
    /// Nothing: phase 2 accesses the other node's memory.
    None,
    /// Migrate every remote vector to the team's node at the phase change.
    Now,
    /// Migrate each remote block to the node of its first phase-2 task.
    NextTouch,
    /// Migrate only the remote vectors that are read.
    NowRead,
    /// Migrate only the remote vector that is written.
    NowWritten,
    /// Move the tasks to the node of the data instead.
    Tasks,
    /// Move the tasks to the remote vectors' node and migrate the team's own vector there.
    Mixed,
    /// The runtime decides per task, by cost: migrate remote shared data when that costs
    /// less than accessing it remotely over the tasks already submitted that use it.
    Auto,
}

/// Which tasks carry affinity hints (Virouleau et al., the OpenMP task affinity
/// clause).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AffinityArg {
    /// No hints: data land where their first writer ran.
    None,
    /// Initialisation tasks bound to spread the data over the nodes; compute unhinted.
    Init,
    /// Initialisation and compute tasks bound to the data's owner.
    Strict,
    /// Initialisation bound; compute tasks prefer the owner and may be stolen.
    NonStrict,
}

/// Parses a configuration name ([`Config::name`]) into the runtime's [`Config`]; `--help`
/// lists the names, each with what it does ([`config_help`]).
pub fn config_parser() -> impl clap::builder::TypedValueParser<Value = Config> {
    clap::builder::PossibleValuesParser::new(
        Config::ALL.map(|c| clap::builder::PossibleValue::new(c.name()).help(config_help(c))),
    )
    .map(|name| name.parse::<Config>().expect("every listed name parses"))
}

/// One line on what a configuration does (paper 1, section 4.4 and Figure 9; paper 4
/// for `home`), as `--help` shows it.
pub fn config_help(c: Config) -> &'static str {
    match c {
        Config::Ws => "random work-stealing, topology ignored; immediate allocation",
        Config::DsaBase => {
            "hierarchical work-stealing (own node first, then nearest); immediate allocation"
        }
        Config::PushIn => "dsa-base + work-pushing to the node holding most input bytes",
        Config::PushOut => "dsa-base + work-pushing to the node holding most output bytes",
        Config::PushWeighted => "dsa-base + work-pushing weighing input and output bytes",
        Config::Dfa => {
            "hierarchical work-stealing + deferred allocation (outputs on the producer's node)"
        }
        Config::DsaOpt => "input-only work-pushing + deferred allocation (paper 1's best)",
        Config::ShmBase => {
            "shared data updated in place, interleaved over the nodes; hierarchical stealing"
        }
        Config::Home => "home-based scheduling with a steal vicinity (paper 4)",
        Config::Bf => {
            "breadth-first: one global FIFO queue, topology ignored; immediate allocation"
        }
    }
}

/// `--bind`: which CPUs the workers take when `--threads` asks for fewer than the
/// topology has (OpenMP's `proc_bind`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Bind {
    /// One CPU of each node in turn: every node gets workers early.
    #[default]
    Spread,
    /// Node after node: the fewest nodes (one node's CPUs first).
    Close,
}

/// `--shared`: where `shm-base` places the shared data a benchmark creates.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SharedArg {
    /// Page by page over all nodes (paper 1's SHM versions).
    #[default]
    Interleave,
    /// Each page on the node of the first task that touches it, as the OS places an
    /// OpenMP program's arrays (paper 3's Clang and GCC runs).
    FirstTouch,
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
    /// The sizes of the evaluation of Drebes et al. 2016 (Table 3).
    Paper,
}

/// Benchmark suites of `locus bench`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// Small sizes, a few minutes.
    Quick,
    /// The sizes of Drebes et al. 2016 (Table 3).
    Paper,
    /// Paper 4's study: SparseLU under home-based scheduling (vicinities 1, 4, 16,
    /// 50), breadth-first, Cilk-like and weighted pushing; Figures 4-6. In the
    /// simulator on `tilepro64` with 50 workers by default.
    Home,
    /// The ForestGOMP/MaMI paper's Twisted-STREAM study: phase-2 time against STREAM
    /// iterations per migration policy (Figures 2 and 3). In the simulator on
    /// `opteron-16` at paper size by default.
    Twisted,
}

/// Engines that carry out a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Pinned OS threads, real memory, wall-clock time.
    Threads,
    /// Deterministic discrete-event simulation of a modelled machine.
    Sim,
}

/// Problem size: a named size, then explicit options on top of it.
///
/// The kernel checks the result: a block extent that does not divide its extent, a zero,
/// an unknown field or an option that means nothing for the kernel is a usage error
/// naming the option.
#[derive(Clone, Debug, Default, Args)]
pub struct Size {
    /// Start from the sizes of Drebes et al. 2016, Table 3 (default: small sizes, under a
    /// second each).
    ///
    /// The explicit options below then override them: `--preset paper --iterations 2`
    /// is Table 3 with two iterations. `--param size=tiny|small|paper` names a size too
    /// (not together with --preset).
    #[arg(long = "preset", value_enum, help_heading = "Problem size")]
    pub preset: Option<SizePreset>,
    /// Extent of every blocked axis (elements per dimension).
    ///
    /// jacobi-1d: blocks × block_len = N; seidel-1d: len; jacobi-2d, seidel-2d and
    /// blur-roberts: rows = cols = N; jacobi-3d, seidel-3d: depth = rows = cols = N;
    /// kmeans: points; bitonic: len (a power of two); random-dag: tasks; overhead:
    /// length (tasks per chain). Block extents not given stay those of the named size.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Problem size"
    )]
    pub size: Option<usize>,
    /// Blocks along every blocked axis: the block extent becomes extent / N.
    ///
    /// jacobi-1d: blocks; seidel-1d: block_len = len / N; 2-D kernels (jacobi-2d,
    /// seidel-2d, blur-roberts) and 3-D kernels: N blocks along each axis (N² or N³); kmeans: block_points = points / N; bitonic:
    /// block_len = len / N. Refused by random-dag and overhead.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Problem size"
    )]
    pub blocks: Option<usize>,
    /// Block extent along every blocked axis.
    ///
    /// jacobi-1d, seidel-1d and bitonic: block_len; jacobi-2d, seidel-2d and
    /// blur-roberts: block_rows =
    /// block_cols = N; 3-D kernels: block_depth = block_rows = block_cols = N; kmeans:
    /// block_points. Refused by random-dag and overhead.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Problem size"
    )]
    pub block_len: Option<usize>,
    /// Number of iterations.
    ///
    /// The stencils and kmeans: iterations; overhead: rounds. Refused by blur-roberts,
    /// bitonic and random-dag, which have none.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Problem size"
    )]
    pub iterations: Option<usize>,
    /// Set one field of the kernel's parameters by name (repeatable).
    ///
    /// Any numeric field the JSON report lists under `params`, e.g. `--param
    /// block_rows=32`, `--param clusters=8`, `--param seed=7`; random-dag's `hints` takes
    /// true or false. --param wins over the options above for its field (`--size 256
    /// --param rows=128` is 128 × 256). `--param size=tiny|small|paper` names the size the
    /// options apply to.
    #[arg(
        long = "param",
        value_name = "KEY=VALUE",
        value_parser = key_value,
        help_heading = "Problem size"
    )]
    pub params: Vec<(String, String)>,
    /// Affinity hints of spmv, bicgstab and jacobi-2d (for jacobi-2d: the KASTORS
    /// program, whose data are written by initialisation tasks).
    #[arg(long, value_enum, help_heading = "Kernel options")]
    pub affinity: Option<AffinityArg>,
    /// The matrix of spmv and bicgstab: a Matrix Market file (coordinate real, integer
    /// or pattern; general or symmetric).
    #[arg(long, value_name = "FILE.mtx", help_heading = "Kernel options")]
    pub matrix: Option<String>,
    /// What a task does with shared data it finds on another node: none, now,
    /// next-touch or auto (the runtime's setting, any benchmark); for twisted-stream
    /// its policy at the phase change: migrate the data (now, next-touch, now-read,
    /// now-written), move the tasks (tasks, mixed), or leave it to the runtime (auto).
    #[arg(long, value_enum, help_heading = "Kernel options")]
    pub migrate: Option<MigrateArg>,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{}` is not KEY=VALUE", s.escape_debug())),
    }
}

/// `--replay` and `--replay-placement`, as `locus run` and `locus sim` take them.
#[derive(Clone, Debug, Default, Args)]
pub struct Replay {
    /// Run the kernel as a recorded graph: its tasks recorded once, with their
    /// placement, and replayed once per iteration, with no dependence analysis per task
    /// (overhead, jacobi-1d, jacobi-2d, jacobi-3d, seidel-2d, kmeans, spmv, bicgstab,
    /// cholesky; sequential control; no affinity hints; docs/guide.md, "Recorded
    /// graphs"). The report's settings say `replay` and `replayed_iterations`.
    #[arg(long)]
    pub replay: bool,
    /// With `--replay`: where the recorded placement lets tasks run: `stealable` (the
    /// default: idle workers take ready tasks of their node, then of other nodes) or
    /// `strict` (each task on its home worker only); the report's settings say
    /// `replay_placement`.
    #[arg(
        long = "replay-placement",
        requires = "replay",
        value_name = "stealable|strict",
        value_parser = clap::builder::ValueParser::new(replay_placement)
    )]
    pub placement: Option<locus::ReplayPlacement>,
}

/// `--replay-placement`: `stealable` or `strict`.
pub fn replay_placement(s: &str) -> Result<locus::ReplayPlacement, String> {
    match s {
        "stealable" => Ok(locus::ReplayPlacement::Stealable),
        "strict" => Ok(locus::ReplayPlacement::Strict),
        _ => Err(format!(
            "unknown replay placement `{s}` (expected stealable or strict)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 4000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// `--param` text is a trimmed key and value, or one non-empty error line.
        #[test]
        fn any_param_text_is_a_pair_or_one_line(s in "\\PC{0,12}|[\\s\\S]{0,8}|[a-z]{0,4}=[0-9\\n ]{0,4}") {
            match key_value(&s) {
                Ok((k, v)) => {
                    prop_assert!(!k.is_empty() && k == k.trim() && v == v.trim());
                    prop_assert!(s.contains('='));
                }
                Err(m) => prop_assert!(!m.is_empty() && !m.contains('\n') && !m.contains('\r'), "{m:?}"),
            }
        }
    }
}
