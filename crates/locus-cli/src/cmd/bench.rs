//! `locus bench ...`: run the paper-1 kernels under several configurations, a few
//! repetitions each, and summarise: a table on stdout (min / median / max time, the
//! speedup over a baseline with its range), one JSON report per run, `summary.json` and
//! pictures (SVG and PNG) in the output directory. With the threads engine the
//! host's STREAM triad bandwidth is measured first, as the yardstick of the
//! memory-bound kernels.
//!
//! In the simulator at paper sizes the task bodies are skipped (their buffers would not
//! fit this machine): such runs compute no result, and the table, the reports,
//! `summary.json` and the progress lines call them `skipped`, never verified. They do not
//! fail the command.

use std::path::{Path, PathBuf};

use locus::{Config, Runtime};
use locus_bench::replay::REPLAYABLE;
use locus_bench::{
    Control as BenchControl, KernelOutcome, Size as BenchSize, SizeSpec, Workload, BENCHES, KERNELS,
};
use locus_mem::probe;
use serde_json::{json, Map, Value};

use crate::args::{config_parser, Engine, Suite};
use crate::bench::peers;
use crate::bench::summary::{self, Run, Verdict};
use crate::bench::{figures, report, summary::Row, timeline};

use crate::cmd::{topology, Failure};
use crate::progress::Progress;
use crate::render::plural;

/// Timed sweeps of the STREAM triad; the fastest counts.
const STREAM_REPEATS: usize = 5;

/// Options of `locus bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which suite.
    #[arg(long, value_enum, default_value = "quick")]
    pub suite: Suite,
    /// Configurations to compare (comma-separated; default: all).
    #[arg(long, value_parser = config_parser(), value_delimiter = ',', value_name = "A,B,...")]
    pub configs: Vec<Config>,
    /// Engine (default: threads; the simulator for `--suite home`).
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
    /// The machine: `host`, `NxC` (virtual nodes over the host on threads) or a preset
    /// (default: host on threads, opteron-64 in the simulator, tilepro64 for `--suite
    /// home` in the simulator).
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Worker threads (default: one per CPU of the topology; for `--suite home`, 50 or
    /// as many as the topology has CPUs).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        allow_negative_numbers = true
    )]
    pub threads: Option<u32>,
    /// Repetitions of every kernel and configuration (default: 5 on threads; 1 in the
    /// simulator, which is deterministic), at most 1000 (each writes a report of its
    /// own). Tables show min / median / max, charts error bars.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=1000),
        allow_negative_numbers = true
    )]
    pub repeat: Option<u32>,
    /// The configuration speedups are measured against.
    #[arg(long, value_parser = config_parser(), default_value = summary::BASELINE, value_name = "CONFIG")]
    pub baseline: Config,
    /// Also run the peer runtimes (OpenMP tasks with gcc and clang, the gcc-built
    /// programs on Locus's OpenMP runtime too, oneTBB, StarPU, rayon, and Locus's own
    /// kernels in C through its C API).
    #[arg(long)]
    pub peers: bool,
    /// Run Locus's kernels as recorded graphs, as `locus run --replay` does: every
    /// Locus run of the bench, the configurations' table and the Locus column of
    /// `--peers` (docs/guide.md, "Recorded graphs"). Only kernels that replay (default:
    /// those of the nine kernels that do; `overhead` may be named); the tables, the
    /// headings, summary.json and peers.json say so.
    #[arg(long)]
    pub replay: bool,
    /// Directory for the reports (default: bench-out).
    ///
    /// Before writing, the files a previous `locus bench` left there are removed: run
    /// reports (KERNEL.CONFIG.N.json), summary.json, peers.json, report.html and the
    /// pictures (speedup, locality and traffic, .svg and .png); other files are left
    /// alone.
    /// Each file is written to a temporary file and renamed into place when complete.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Only these benchmarks (comma-separated; default: the nine kernels; `overhead` and
    /// `random-dag` may be named too).
    #[arg(long, value_delimiter = ',', value_name = "K,...")]
    pub kernels: Vec<String>,
    /// Simulator only: run or skip the task bodies whatever the size (default: run them
    /// at quick sizes, skip them at paper sizes). `skip` gives cheap runs that are
    /// reported as `skipped`, for tests of the reporting.
    #[arg(long, hide = true, value_enum, value_name = "run|skip")]
    pub bodies: Option<BodiesArg>,
}

/// `--bodies`: whether the simulator runs the task bodies.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BodiesArg {
    /// Run them: results are verified.
    Run,
    /// Skip them: nothing to verify, runs are reported as skipped.
    Skip,
}

/// What the options resolve to.
struct Plan {
    kernels: Vec<&'static str>,
    configs: Vec<Config>,
    engine: Engine,
    size: BenchSize,
    /// `--bodies`: whether the simulator runs the task bodies, if not by size.
    bodies: Option<BodiesArg>,
    repetitions: usize,
    topology: locus::Topology,
    threads: Option<usize>,
    baseline: String,
    out: PathBuf,
    /// `--replay`: Locus's kernels run as recorded graphs.
    replay: bool,
}

impl Args {
    /// The engine asked for, or the suite's default.
    fn engine(&self) -> Engine {
        self.engine.unwrap_or(match self.suite {
            Suite::Home | Suite::Twisted => Engine::Sim,
            Suite::Quick | Suite::Paper => Engine::Threads,
        })
    }
}

fn plan(args: &Args) -> Result<Plan, Failure> {
    let engine = args.engine();
    if args.bodies.is_some() && engine != Engine::Sim {
        return Err(Failure::Usage(
            "--bodies is for the simulator (`--engine sim`): on threads every body runs".into(),
        ));
    }
    if args.peers && engine == Engine::Sim {
        return Err(Failure::Usage(
            "`locus bench --peers --engine sim` is not built yet: the peers run on real threads only".into(),
        ));
    }
    let asked: Vec<Config> = if args.configs.is_empty() {
        Config::ALL.to_vec()
    } else {
        args.configs.clone()
    };
    let mut configs = Vec::new();
    for c in asked {
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    let mut kernels = Vec::new();
    for name in &args.kernels {
        let Some(&k) = BENCHES.iter().find(|&&k| k == name.trim()) else {
            return Err(Failure::Usage(format!(
                "--kernels: unknown benchmark `{name}`{} (expected some of: {})",
                nearest(name.trim(), BENCHES)
                    .map_or(String::new(), |n| format!("; did you mean `{n}`?")),
                BENCHES.join(" ")
            )));
        };
        if !kernels.contains(&k) {
            kernels.push(k);
        }
    }
    if kernels.is_empty() {
        kernels = KERNELS
            .iter()
            .copied()
            .filter(|k| !args.replay || REPLAYABLE.contains(k))
            .collect();
    }
    if args.replay {
        if let Some(k) = kernels.iter().find(|k| !REPLAYABLE.contains(k)) {
            return Err(Failure::Usage(format!(
                "--replay: {k} does not run as a recorded graph; these do: {}",
                REPLAYABLE.join(", ")
            )));
        }
    }
    let size = match args.suite {
        Suite::Quick | Suite::Home | Suite::Twisted => BenchSize::Small,
        Suite::Paper => BenchSize::Paper,
    };
    let (spec, repetitions) = match engine {
        Engine::Threads => ("host", 5),
        // The simulator is deterministic: a second repetition would repeat the first.
        Engine::Sim => ("opteron-64", 1),
    };
    let spec = args.topology.as_deref().unwrap_or(spec);
    let repetitions = args.repeat.map_or(repetitions, |r| r as usize);
    let topology = topology(spec)?;
    let threads = args.threads.map(|t| t as usize);
    check_threads(&topology, threads)?;
    if engine == Engine::Threads {
        if let Some(warning) = crate::render::oversubscribed(&topology, threads) {
            eprintln!("locus: warning: {warning}");
        }
    }
    if engine == Engine::Threads && args.suite == Suite::Paper {
        eprintln!(
            "locus: warning: paper sizes need gigabytes per kernel and minutes per run on real threads; `--engine sim` models them without the memory"
        );
    }
    Ok(Plan {
        kernels,
        configs,
        engine,
        size,
        bodies: args.bodies,
        repetitions,
        topology,
        threads,
        baseline: args.baseline.to_string(),
        out: args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("bench-out")),
        replay: args.replay,
    })
}

/// Refuses `--threads` the topology cannot hold before any run, with the message
/// `locus run` gives: the runtime itself judges the worker count, on a simulated
/// runtime, which starts no thread and holds no memory.
fn check_threads(topology: &locus::Topology, threads: Option<usize>) -> Result<(), Failure> {
    let Some(threads) = threads else {
        return Ok(());
    };
    Runtime::builder()
        .topology(topology.clone())
        .threads(threads)
        .engine(locus_sim::Sim::new())
        .build()
        .map(drop)
        .map_err(|e| Failure::Usage(e.to_string()))
}

/// Runs the matrix, prints the table and writes the reports. Runs whose result differs
/// from the reference, or that could not run, make the command fail (exit status 1)
/// after everything is written; runs that skipped their bodies do not.
pub fn main(args: &Args) -> Result<(), Failure> {
    if args.suite == Suite::Home {
        return home_study(args);
    }
    if args.suite == Suite::Twisted {
        return twisted_study(args);
    }
    let plan = plan(args)?;
    let io = |what: &Path, e: std::io::Error| Failure::Failed(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(&plan.out).map_err(|e| io(&plan.out, e))?;
    clear_previous(&plan.out).map_err(|e| io(&plan.out, e))?;
    let engine = match plan.engine {
        Engine::Threads => "threads",
        Engine::Sim => "sim",
    };
    let size_name = serde_json::to_value(plan.size).expect("sizes serialise to JSON");
    let size_name = size_name.as_str().unwrap_or("?");
    let suite = match args.suite {
        Suite::Quick => "quick",
        Suite::Paper => "paper",
        Suite::Home | Suite::Twisted => unreachable!("the studies have their own commands"),
    };
    let simulated = plan.engine == Engine::Sim;
    let on = crate::render::machine(&plan.topology, simulated);
    eprintln!(
        "locus: bench {suite}: {} x {} x {}, {size_name} sizes, on {on}, {engine} engine{}; reports in {}",
        plural(plan.kernels.len(), "kernel"),
        plural(plan.configs.len(), "configuration"),
        plural(plan.repetitions, "repetition"),
        replayed(&plan),
        plan.out.display()
    );

    let stream = (plan.engine == Engine::Threads).then(|| {
        // The same measurement as `locus topo --probe`: one pinned thread per allowed
        // CPU, vectors four times the largest cache.
        let len = probe::stream_len();
        let cpus = locus_topo::allowed_cpus().unwrap_or_else(|_| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        });
        eprintln!(
            "locus: measuring the STREAM triad (3 x {} MiB of f64, best of {STREAM_REPEATS})",
            (len * 8) >> 20
        );
        probe::triad(len, &cpus, STREAM_REPEATS)
    });

    let total = plan.kernels.len() * plan.configs.len() * plan.repetitions;
    let bar = Progress::new(total);
    let mut runs = Vec::with_capacity(total);
    let mut told_skipped = false;
    for &kernel in &plan.kernels {
        for &c in &plan.configs {
            let config_name = c.to_string();
            for repetition in 1..=plan.repetitions {
                bar.set_message(format!("{kernel} {config_name} #{repetition}"));
                // Page faults count on real threads only: the simulator's buffers are
                // the host's whatever it models.
                let faults_before = (plan.engine == Engine::Threads)
                    .then(summary::minor_faults)
                    .flatten();
                let outcome = run_one(&plan, kernel, c);
                let minor_faults = faults_before
                    .zip(summary::minor_faults())
                    .map(|(before, after)| after.saturating_sub(before));
                let object = match &outcome {
                    Ok(o) => run_object(kernel, o),
                    Err(e) => {
                        json!({"bench": kernel, "config": config_name, "verified": false, "error": e})
                    }
                };
                let path = plan
                    .out
                    .join(format!("{kernel}.{config_name}.{repetition}.json"));
                write_whole(&path, &format!("{object}\n")).map_err(|e| io(&path, e))?;
                let run = Run {
                    kernel,
                    config: config_name.clone(),
                    outcome,
                    minor_faults,
                };
                let at = format!("{kernel} under {config_name} (#{repetition})");
                // Through `suspend`: `println` drops the line when stderr is no terminal.
                let note = |line: String| bar.suspend(|| eprintln!("{line}"));
                match (&run.outcome, run.verdict()) {
                    (Ok(o), Verdict::Mismatch) => note(format!(
                        "locus: {at}: the result does not match the sequential reference{}",
                        o.mismatch
                            .as_ref()
                            .map_or(String::new(), |m| format!(" ({m})"))
                    )),
                    (Err(e), _) => note(format!("locus: {at}: {e}")),
                    // Said once: at paper sizes every run of the simulator skips.
                    (_, Verdict::Skipped) if !told_skipped => {
                        note(format!(
                            "locus: {at}: task bodies skipped (buffers hold no memory): no result to verify; such runs are reported as skipped"
                        ));
                        told_skipped = true;
                    }
                    _ => {}
                }
                runs.push(run);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();

    let configs: Vec<String> = plan.configs.iter().map(|&c| c.to_string()).collect();
    let rows = summary::rows(
        &runs,
        &plan.kernels,
        &configs,
        &plan.baseline,
        stream.map(|s| s.gb_per_s * 1e9),
    );
    let failed = runs.iter().filter(|r| r.verdict().failed()).count();
    let skipped = runs
        .iter()
        .filter(|r| r.verdict() == Verdict::Skipped)
        .count();

    let heading = format!(
        "locus bench {suite}: {size_name} sizes on {on}, {engine} engine{}, {} per kernel and configuration; time (s) is {}",
        replayed(&plan),
        if plan.repetitions == 1 {
            "1 run".to_string()
        } else {
            format!("min / median / max of {} runs", plan.repetitions)
        },
        if plan.engine == Engine::Sim {
            "simulated time"
        } else {
            "wall time"
        }
    );
    let stream_line = stream.as_ref().map(|s| {
        format!(
            "STREAM triad: {:.2} GB/s ({} threads, 3 x {} MiB, best of {})",
            s.gb_per_s,
            s.threads,
            (s.len * 8) >> 20,
            s.repeats
        )
    });
    println!("{heading}");
    if let Some(s) = &stream_line {
        println!("{s}");
    }
    println!();
    print!("{}", summary::table(&rows, &plan.baseline));
    let mut notes = notes(&plan, &rows);
    for note in &notes {
        println!("note: {note}");
    }
    if plan.engine == Engine::Threads {
        let short = summary::short_rows(&rows);
        if let Some(first) = short.first() {
            let warning = format!(
                "{} ran under {:.0} ms (e.g. {} under {}: {:.2} ms): start-up and timer noise dominate such times; use a larger size (--suite paper) before drawing conclusions",
                plural(short.len(), "kernel and configuration"),
                summary::SHORT_RUN_S * 1e3,
                first.kernel,
                first.config,
                first.median_s.unwrap_or(0.0) * 1e3
            );
            eprintln!("locus: warning: {warning}");
            notes.push(format!("warning: {warning}"));
        }
        if let Some(w) = crate::render::oversubscribed(&plan.topology, plan.threads) {
            notes.push(format!("warning: {w}"));
        }
    }
    if skipped > 0 {
        let line = format!(
            "{skipped} of {} runs skipped their task bodies: their results are not verified",
            runs.len()
        );
        println!("{line}");
        notes.push(line);
    }

    let summary_path = plan.out.join("summary.json");
    let summary_json = summary_object(&plan, suite, engine, size_name, &rows, &runs, stream);
    write_whole(&summary_path, &format!("{summary_json:#}\n")).map_err(|e| io(&summary_path, e))?;
    let kernels: Vec<String> = plan.kernels.iter().map(|k| k.to_string()).collect();
    let machine = format!("{on}, {engine} engine");
    let pictures = figures::write_all(
        &plan.out,
        &figures::Matrix {
            rows: &rows,
            kernels: &kernels,
            configs: &configs,
            baseline: &plan.baseline,
            machine: &machine,
            nodes: plan.topology.num_nodes(),
            locality: crate::render::times_show_locality(&plan.topology, simulated),
            repetitions: plan.repetitions,
        },
    )
    .map_err(|e| io(&plan.out, e))?;
    let mut pictures = pictures;
    match write_timeline(&plan, &machine) {
        Ok(written) => pictures.written.extend(written),
        Err(why) => pictures.not_drawn.push((timeline::NAME, why)),
    }
    for (name, why) in &pictures.not_drawn {
        println!("{name}.svg not drawn: {why}");
    }
    let (cells, rule) = summary::table_cells(&rows, &plan.baseline);
    let mut tables = vec![report::Table::Cells(cells, rule)];
    let peers_failed = if args.peers {
        let (failed, table) = run_peers(&plan, args)?;
        tables.push(table);
        failed
    } else {
        0
    };
    write_report(&report::Report {
        title: "locus bench report",
        heading: &heading,
        stream: stream_line.as_deref(),
        tables,
        notes: &notes,
        not_drawn: &pictures.not_drawn,
        dir: &plan.out,
        pictures: &[figures::NAMES.as_slice(), &[timeline::NAME]].concat(),
    })?;
    println!();
    println!(
        "{} run reports, summary.json, report.html and {} (each as SVG and PNG) in {}",
        runs.len(),
        plural(pictures.written.len() / 2, "picture"),
        plan.out.display()
    );

    if peers_failed > 0 {
        return Err(Failure::Failed(format!(
            "{peers_failed} peer comparisons failed (see peers.json)"
        )));
    }
    if failed > 0 {
        Err(Failure::Failed(format!(
            "{failed} of {} runs failed (not verified against the sequential reference)",
            runs.len()
        )))
    } else {
        Ok(())
    }
}

/// `--suite home`: paper 4's study of SparseLU ([`home`](crate::bench::home)): one run
/// per policy, a table, `home.json` and Figures 4-6 in the output directory. A run
/// that fails or does not verify makes the command fail after everything is written.
fn home_study(args: &Args) -> Result<(), Failure> {
    use crate::bench::home;
    let engine = args.engine();
    let sim = engine == Engine::Sim;
    let refuse = |what: &str| {
        Failure::Usage(format!(
            "{what} is not an option of `--suite home` (it runs SparseLU under paper 4's policies)"
        ))
    };
    if args.peers {
        return Err(refuse("--peers"));
    }
    if args.replay {
        return Err(refuse("--replay"));
    }
    if !args.configs.is_empty() {
        return Err(refuse("--configs"));
    }
    if !args.kernels.is_empty() {
        return Err(refuse("--kernels"));
    }
    if args.repeat.is_some() {
        return Err(refuse("--repeat"));
    }
    if args.bodies.is_some() && !sim {
        return Err(Failure::Usage(
            "--bodies is for the simulator (`--engine sim`): on threads every body runs".into(),
        ));
    }
    let spec = args
        .topology
        .as_deref()
        .unwrap_or(if sim { "tilepro64" } else { "host" });
    let topology = topology(spec)?;
    let threads = match args.threads {
        Some(t) => t as usize,
        None => topology.num_cpus().min(home::VICINITIES[3]),
    };
    check_threads(&topology, Some(threads))?;
    if !sim {
        if let Some(warning) = crate::render::oversubscribed(&topology, Some(threads)) {
            eprintln!("locus: warning: {warning}");
        }
    }
    let setup = home::Setup {
        topology,
        threads,
        sim,
        skip_bodies: args.bodies == Some(BodiesArg::Skip),
        // Paper 4's 30 x 30 blocks of 125 x 125 where they are simulated; a small
        // matrix on real threads.
        size: if sim {
            BenchSize::Paper
        } else {
            BenchSize::Small
        },
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-out"));
    let io = |what: &Path, e: std::io::Error| Failure::Failed(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(&out).map_err(|e| io(&out, e))?;
    clear_previous(&out).map_err(|e| io(&out, e))?;
    let engine_name = if sim { "sim" } else { "threads" };
    let policies = home::policies(threads);
    eprintln!(
        "locus: bench home: sparselu under {} policies on {} ({threads} workers, {engine_name} engine); reports in {}",
        policies.len(),
        crate::render::machine(&setup.topology, sim),
        out.display()
    );
    let bar = Progress::new(policies.len());
    let mut runs = Vec::new();
    for policy in policies {
        bar.set_message(policy.label.clone());
        let outcome = home::run(&setup, &policy);
        if let Err(e) = &outcome {
            bar.suspend(|| eprintln!("locus: sparselu under {}: {e}", policy.label));
        }
        runs.push(home::Measured { policy, outcome });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let machine = format!(
        "{}, {threads} workers, {engine_name} engine",
        crate::render::machine(&setup.topology, sim)
    );
    let heading = format!("locus bench home: paper 4's SparseLU study on {machine}");
    let table = home::table(&runs, sim);
    println!("{heading}");
    println!();
    print!("{table}");
    write_study_json(&out, "home.json", &home::report(&runs, &setup))?;
    let written = home::write_figures(&out, &runs, &machine).map_err(|e| io(&out, e))?;
    write_study_report(&out, &heading, table, &[], &home::NAMES)?;
    let failed = runs.iter().filter(|m| m.failed()).count();
    end_study(&out, "home.json", written.len(), failed, runs.len())
}

/// Writes `report.html` into the report's directory.
pub fn write_report(r: &report::Report<'_>) -> Result<(), Failure> {
    let path = r.dir.join("report.html");
    write_whole(&path, &report::html(r))
        .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))
}

/// Writes a study suite's `report.html` into `out`: its `heading`, its `table` as
/// printed, its `notes` and its `pictures`.
fn write_study_report(
    out: &Path,
    heading: &str,
    table: String,
    notes: &[String],
    pictures: &[&'static str],
) -> Result<(), Failure> {
    write_report(&report::Report {
        title: "locus bench report",
        heading,
        stream: None,
        tables: vec![report::Table::Text {
            heading: String::new(),
            text: table,
        }],
        notes,
        not_drawn: &[],
        dir: out,
        pictures,
    })
}

/// Writes a study suite's JSON report `name` into `out`.
fn write_study_json(out: &Path, name: &str, report: &serde_json::Value) -> Result<(), Failure> {
    let path = out.join(name);
    write_whole(&path, &format!("{report:#}\n"))
        .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))
}

/// The end of a study suite (`home`, `twisted`): says where its JSON report `name` and
/// its `files` picture files (SVG and PNG each) are, and fails when `failed` of its
/// `runs` runs failed, after everything is written.
fn end_study(
    out: &Path,
    name: &str,
    files: usize,
    failed: usize,
    runs: usize,
) -> Result<(), Failure> {
    println!();
    println!(
        "{name}, report.html and {} (each as SVG and PNG) in {}",
        plural(files / 2, "picture"),
        out.display()
    );
    if failed > 0 {
        return Err(Failure::Failed(format!(
            "{failed} of {runs} runs failed (see {name})"
        )));
    }
    Ok(())
}

/// `--suite twisted`: Figures 2 and 3 of the ForestGOMP/MaMI paper
/// ([`twisted`](crate::bench::twisted)): twisted-stream's phase-2 time against the
/// STREAM iterations under each policy, a table, `twisted.json` and two pictures. A run
/// that fails or does not verify makes the command fail after everything is written.
fn twisted_study(args: &Args) -> Result<(), Failure> {
    use crate::bench::twisted;
    let engine = args.engine();
    let sim = engine == Engine::Sim;
    let refuse = |what: &str| {
        Failure::Usage(format!(
            "{what} is not an option of `--suite twisted` (it runs twisted-stream under \
             each migration policy)"
        ))
    };
    if args.peers {
        return Err(refuse("--peers"));
    }
    if args.replay {
        return Err(refuse("--replay"));
    }
    if !args.configs.is_empty() {
        return Err(refuse("--configs"));
    }
    if !args.kernels.is_empty() {
        return Err(refuse("--kernels"));
    }
    if args.repeat.is_some() {
        return Err(refuse("--repeat"));
    }
    if args.bodies.is_some() {
        return Err(refuse("--bodies"));
    }
    let spec = args
        .topology
        .as_deref()
        .unwrap_or(if sim { "opteron-16" } else { "host" });
    let topology = topology(spec)?;
    let threads = args.threads.map_or(topology.num_cpus(), |t| t as usize);
    check_threads(&topology, Some(threads))?;
    if !sim {
        if let Some(warning) = crate::render::oversubscribed(&topology, Some(threads)) {
            eprintln!("locus: warning: {warning}");
        }
    }
    let setup = twisted::Setup {
        topology,
        threads,
        sim,
        size: if sim {
            BenchSize::Paper
        } else {
            BenchSize::Small
        },
        iterations: if sim {
            vec![1, 2, 4, 8, 16, 32, 64, 128]
        } else {
            vec![1, 2, 4, 8, 16]
        },
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-out"));
    let io = |what: &Path, e: std::io::Error| Failure::Failed(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(&out).map_err(|e| io(&out, e))?;
    clear_previous(&out).map_err(|e| io(&out, e))?;
    let engine_name = if sim { "sim" } else { "threads" };
    let plan = twisted::plan(&setup);
    eprintln!(
        "locus: bench twisted: {} runs of twisted-stream on {} ({threads} workers, {engine_name} engine); reports in {}",
        plan.len(),
        crate::render::machine(&setup.topology, sim),
        out.display()
    );
    let bar = Progress::new(plan.len());
    let mut points = Vec::new();
    for (remote, policy, iterations) in plan {
        bar.set_message(format!(
            "{remote} remote, {policy}, {iterations} iterations"
        ));
        let outcome = twisted::run(&setup, remote, policy, iterations);
        if let Err(e) = &outcome {
            bar.suspend(|| eprintln!("locus: twisted-stream under {policy}: {e}"));
        }
        points.push(twisted::Point {
            remote,
            policy,
            iterations,
            outcome,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let machine = format!(
        "{}, {threads} workers, {engine_name} engine",
        crate::render::machine(&setup.topology, sim)
    );
    let heading = format!("locus bench twisted: Twisted-STREAM's phase 2 on {machine}");
    println!("{heading}");
    let mut notes = Vec::new();
    if !crate::render::times_show_locality(&setup.topology, sim) {
        notes.push(format!(
            "remote and local vectors lie in the same memory on {}: the phases differ by allocation, caching and noise, not by distance",
            crate::render::machine(&setup.topology, sim)
        ));
    }
    for note in &notes {
        println!("note: {note}");
    }
    println!();
    let table = twisted::table(&points, &setup);
    print!("{table}");
    write_study_json(&out, "twisted.json", &twisted::report(&points, &setup))?;
    let written =
        twisted::write_figures(&out, &points, &setup, &machine).map_err(|e| io(&out, e))?;
    write_study_report(&out, &heading, table, &notes, &twisted::NAMES)?;
    let failed = points.iter().filter(|p| p.failed()).count();
    end_study(&out, "twisted.json", written.len(), failed, points.len())
}

/// `--peers`: builds the peers (installing their Debian packages when root; a peer that
/// cannot be built is skipped with a note), runs them alternately with Locus under
/// `dsa-opt` and the configurations named by `--configs`, prints the peer table and
/// writes `peers.json`; gives the number of rows that failed and the table, for the
/// report.
fn run_peers(plan: &Plan, args: &Args) -> Result<(usize, report::Table), Failure> {
    let selected: Vec<&str> = if plan.replay {
        plan.kernels.clone()
    } else {
        args.kernels.iter().map(|k| k.trim()).collect()
    };
    let kernels = peers::kernels(&selected);
    let mut configs = vec![Config::DsaOpt.to_string()];
    for &c in &args.configs {
        let name = c.to_string();
        if !configs.contains(&name) {
            configs.push(name);
        }
    }
    eprintln!(
        "locus: building the peers ({}) into {}",
        peers::Peer::ALL.map(peers::Peer::name).join(", "),
        plan.out.join("peers").display()
    );
    let built = peers::build_all(&plan.out, &kernels, true, |note| eprintln!("locus: {note}"));
    for b in &built {
        match &b.state {
            peers::Prepared::Skipped(why) => eprintln!("locus: peer {} skipped: {why}", b.peer),
            peers::Prepared::Failed(why) => eprintln!("locus: peer {} not built: {why}", b.peer),
            peers::Prepared::Ready { .. } => {}
        }
    }
    let threads = plan.topology.num_cpus();
    let bar = Progress::new(kernels.len() * configs.len() * plan.repetitions);
    let mut rows = peers::compare(
        &built,
        &plan.out,
        &kernels,
        &configs,
        plan.repetitions,
        threads,
        plan.replay,
        |kernel, name| {
            let c = name.parse().unwrap_or(Config::DsaOpt);
            let o = run_one(plan, kernel, c)?;
            Ok(peers::Timed {
                wall_s: o.report.wall_s,
                verified: o.verified,
            })
        },
        |what| {
            bar.inc(u64::from(!bar.message().is_empty()));
            bar.set_message(what.to_string());
        },
    );
    bar.finish_and_clear();
    if plan.replay {
        // The rows name Locus's runs: `dsa-opt replayed` (the peers ran as always).
        for row in &mut rows {
            row.config.push_str(" replayed");
        }
    }
    for row in &rows {
        for e in &row.locus_errors {
            eprintln!("locus: {} under {}: {e}", row.kernel, row.config);
        }
        for (peer, runs) in &row.peers {
            if let peers::compare::PeerRuns::Ran { errors, .. } = runs {
                for e in errors {
                    eprintln!("locus: peer {peer} on {}: {e}", row.kernel);
                }
            }
        }
    }
    let heading = format!(
        "Peers against Locus on {} ({threads} threads each){}, peer median / Locus median over {} alternating runs (above 1: Locus is faster)",
        crate::render::machine(&plan.topology, false),
        replayed(plan),
        plan.repetitions
    );
    let table = peers::table(&rows, &built);
    println!();
    println!("{heading}");
    print!("{table}");
    let path = plan.out.join("peers.json");
    let mut report = peers::report(&rows, &built, &plan.out, plan.repetitions, threads);
    if let Some(object) = report.as_object_mut() {
        object.insert("locus_replay".into(), json!(plan.replay));
    }
    write_whole(&path, &format!("{report:#}\n"))
        .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?;
    let failed = rows.iter().filter(|r| !r.ok()).count();
    Ok((
        failed,
        report::Table::Text {
            heading,
            text: table,
        },
    ))
}

/// Writes `text` to `path` whole or not at all (a temporary file renamed into place).
pub fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    locus::observe::replace_file(path, |out| std::io::Write::write_all(out, text.as_bytes()))
}

/// Whether `name` is a file `locus bench` writes into its output directory: a run
/// report `KERNEL.CONFIG.N.json`, `summary.json`, `peers.json`, `report.html`, a
/// picture (`speedup`, `locality` or `traffic`, `.svg` or `.png`; `traffic-CONFIG.svg`
/// of earlier versions), or the temporary file of one of them
/// (`.NAME.tmp-...`) that an interrupted run left.
fn owned_by_bench(name: &str) -> bool {
    let name = match name.strip_prefix('.').and_then(|n| n.split_once(".tmp-")) {
        Some((base, _)) => base,
        None => name,
    };
    let config = |c: &str| Config::ALL.iter().any(|k| k.name() == c);
    if [
        "summary.json",
        "peers.json",
        "report.html",
        "home.json",
        "twisted.json",
    ]
    .contains(&name)
    {
        return true;
    }
    if let Some((stem, ext)) = name.rsplit_once('.') {
        let picture = figures::NAMES.contains(&stem)
            || stem == timeline::NAME
            || crate::bench::home::NAMES.contains(&stem)
            || crate::bench::twisted::NAMES.contains(&stem);
        if (ext == "svg" || ext == "png") && picture {
            return true;
        }
    }
    if let Some(c) = name
        .strip_prefix("traffic-")
        .and_then(|n| n.strip_suffix(".svg"))
    {
        return config(c);
    }
    let Some(stem) = name.strip_suffix(".json") else {
        return false;
    };
    let mut parts = stem.splitn(3, '.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(kernel), Some(c), Some(n)) => {
            BENCHES.contains(&kernel)
                && config(c)
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// Removes from `dir` the files a previous `locus bench` wrote there (see
/// [`owned_by_bench`]), so that the directory shows this run only; every other file
/// (and the peers' build directory) is left alone.
fn clear_previous(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let owned = entry.file_name().to_str().is_some_and(owned_by_bench);
        if owned && entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Notes under the table: what a figure above 100 % of STREAM means.
fn notes(plan: &Plan, rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let simulated = plan.engine == Engine::Sim;
    if !crate::render::times_show_locality(&plan.topology, simulated) {
        notes.push(format!(
            "on {} every configuration's data lives in the same memory: the speedups over {} measure allocation (page faults, peak memory) and scheduling cost, not locality (the minor faults and peak columns show allocation); run on two or more real nodes, or in the simulator (--engine sim), for locality",
            crate::render::machine(&plan.topology, simulated),
            plan.baseline
        ));
    }
    if let Some(r) = rows
        .iter()
        .filter(|r| r.stream_fraction.is_some_and(|f| f > 1.0))
        .max_by(|a, b| {
            a.stream_fraction
                .partial_cmp(&b.stream_fraction)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    {
        notes.push(format!(
            "{} under {} reaches {:.0}% of the STREAM triad: at {} sizes its blocks stay in the caches, so \"of STREAM\" measures cache, not memory, bandwidth",
            r.kernel,
            r.config,
            r.stream_fraction.unwrap_or(0.0) * 100.0,
            match plan.size {
                BenchSize::Paper | BenchSize::PaperSgi => "these",
                _ => "quick",
            }
        ));
    }
    if !plan.configs.iter().any(|c| c.name() == plan.baseline) {
        notes.push(format!(
            "no speedup: the baseline {} is not among the configurations",
            plan.baseline
        ));
    }
    notes
}

/// The name of `names` nearest to `name` in edit distance, if within a third of its
/// length (at least 2): what the user probably meant.
fn nearest<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    let distance = |a: &str, b: &str| {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut last = row[0];
            row[0] = i + 1;
            for (j, &cb) in b.iter().enumerate() {
                let next = (last + usize::from(ca != cb))
                    .min(row[j] + 1)
                    .min(row[j + 1] + 1);
                last = row[j + 1];
                row[j + 1] = next;
            }
        }
        row[b.len()]
    };
    let limit = (name.chars().count() / 3).max(2);
    names
        .iter()
        .map(|&n| (distance(name, n), n))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

/// `timeline.svg` (and `.png`): one more run, traced and not timed, of the first kernel
/// under the first configuration other than the baseline (the baseline when it ran
/// alone), its nodes' local and remote bytes and ready tasks over every run of the
/// kernel ([`timeline`]); gives the files written, or why it was not drawn.
fn write_timeline(plan: &Plan, machine: &str) -> Result<Vec<PathBuf>, String> {
    let kernel = plan.kernels.first().ok_or("no kernel ran")?;
    let config = plan
        .configs
        .iter()
        .find(|c| c.name() != plan.baseline)
        .or(plan.configs.first())
        .ok_or("no configuration ran")?;
    let recorder = std::sync::Arc::new(locus::observe::TraceRecorder::new());
    let outcome = run_observed(plan, kernel, *config, Some(recorder.clone()))
        .map_err(|e| format!("the traced run of {kernel} under {config} failed: {e}"))?;
    if outcome.checked && !outcome.verified {
        return Err(format!(
            "the traced run of {kernel} under {config} does not match the sequential reference"
        ));
    }
    let mut json = Vec::new();
    recorder
        .write(&mut json)
        .map_err(|e| format!("the trace of {kernel}: {e}"))?;
    let trace: Value = serde_json::from_slice(&json).map_err(|e| format!("the trace: {e}"))?;
    let (nodes, end) = timeline::from_trace(&trace)?;
    let simulated = plan.engine == Engine::Sim;
    let note = if plan.topology.num_nodes() == 1 {
        Some("one node: every byte is local, the remote line stays at 0".to_string())
    } else if !crate::render::times_show_locality(&plan.topology, simulated) {
        Some(
            "virtual nodes: bytes counted by where Locus placed them; all lie in the host's memory"
                .to_string(),
        )
    } else {
        None
    };
    let svg = timeline::svg(
        &format!(
            "Bytes and ready tasks per node over the runs of {kernel} under {config} ({machine})"
        ),
        &nodes,
        end,
        note.as_deref(),
    );
    let mut written = Vec::new();
    figures::write_picture(&plan.out, timeline::NAME, &svg, &mut written)
        .map_err(|e| format!("{}: {e}", plan.out.display()))?;
    Ok(written)
}

/// One run on a fresh runtime.
fn run_one(plan: &Plan, kernel: &str, c: Config) -> Result<KernelOutcome, String> {
    run_observed(plan, kernel, c, None)
}

/// One run on a fresh runtime, watched by `observer` if any.
fn run_observed(
    plan: &Plan,
    kernel: &str,
    c: Config,
    observer: Option<std::sync::Arc<dyn locus::observe::Observer>>,
) -> Result<KernelOutcome, String> {
    let mut builder = Runtime::builder().topology(plan.topology.clone()).config(c);
    if let Some(o) = observer {
        builder = builder.observer(o);
    }
    if let Some(t) = plan.threads {
        builder = builder.threads(t);
    }
    if plan.engine == Engine::Sim {
        let sim = crate::cmd::execute::sim_for(plan.size);
        builder = builder.engine(match plan.bodies {
            None => sim,
            Some(BodiesArg::Run) => sim.bodies(locus::engine::Bodies::Run),
            Some(BodiesArg::Skip) => sim.bodies(locus::engine::Bodies::Skip),
        });
    }
    let rt = builder.build().map_err(|e| e.to_string())?;
    let mut spec = SizeSpec::from(plan.size);
    if plan.replay {
        locus_bench::replay::without_default_hints(kernel, &mut spec);
    }
    let workload =
        Workload::new(kernel, &spec, BenchControl::Sequential).map_err(|e| e.to_string())?;
    if plan.replay {
        workload.run_replay(&rt)
    } else {
        workload.run(&rt)
    }
    .map_err(|e| e.to_string())
}

/// What the headings add under `--replay`.
fn replayed(plan: &Plan) -> &'static str {
    if plan.replay {
        ", Locus's kernels replaying recorded graphs (--replay)"
    } else {
        ""
    }
}

/// The run object as `locus run --json` prints it (`docs/guide.md`, "Reading the report").
fn run_object(kernel: &str, outcome: &KernelOutcome) -> Value {
    let mut object = Map::new();
    object.insert("bench".into(), json!(kernel));
    object.insert("params".into(), outcome.params.clone());
    crate::cmd::execute::insert_verified(&mut object, outcome);
    let report = serde_json::to_value(&outcome.report).expect("reports serialise to JSON");
    if let Value::Object(fields) = report {
        object.extend(fields);
    }
    Value::Object(object)
}

/// The machine the command ran on, for `locus compare` to tell runs of different
/// machines apart: its host name, its CPU model, its real NUMA nodes and the CPUs
/// this process may use (whatever `--topology` laid over it). `null` where unknown.
pub fn host_identity() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let name = read("/proc/sys/kernel/hostname").map(|h| h.trim().to_string());
    // x86 says `model name`; other architectures say `Processor` or `cpu model`.
    let cpu = read("/proc/cpuinfo").and_then(|info| {
        info.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            ["model name", "Processor", "cpu model"]
                .contains(&key.trim())
                .then(|| value.trim().to_string())
        })
    });
    let nodes = std::fs::read_dir("/sys/devices/system/node").ok().map(|d| {
        d.filter(|e| {
            e.as_ref().is_ok_and(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("node")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .count()
        .max(1)
    });
    let cpus = locus_topo::allowed_cpus()
        .map(|c| c.len())
        .ok()
        .or_else(|| std::thread::available_parallelism().map(usize::from).ok());
    json!({"name": name, "cpu_model": cpu, "nodes": nodes, "cpus": cpus})
}

/// `summary.json`: what ran, the STREAM figure and one object per row.
fn summary_object(
    plan: &Plan,
    suite: &str,
    engine: &str,
    size: &str,
    rows: &[Row],
    runs: &[Run],
    stream: Option<probe::Triad>,
) -> Value {
    json!({
        "suite": suite,
        "engine": engine,
        "size": size,
        "topology": {
            "name": plan.topology.name(),
            "nodes": plan.topology.num_nodes(),
            "cpus": plan.topology.num_cpus(),
        },
        "host": host_identity(),
        "repetitions": plan.repetitions,
        "control": "sequential",
        "replay": plan.replay,
        "kernels": plan.kernels,
        "configs": plan.configs.iter().map(|&c| c.to_string()).collect::<Vec<_>>(),
        "baseline": plan.baseline,
        "threads": plan.threads.unwrap_or(plan.topology.num_cpus()),
        "short_runs": summary::short_rows(rows).iter().map(|r| json!({"bench": r.kernel, "config": r.config, "median_s": r.median_s})).collect::<Vec<_>>(),
        "stream_triad": stream.map(|s| json!({
            "gb_per_s": s.gb_per_s,
            "bytes_per_s": s.gb_per_s * 1e9,
            "best_s": s.best_s,
            "array_bytes": s.len * 8,
            "threads": s.threads,
            "repetitions": s.repeats,
        })),
        "runs": runs.len(),
        "failed_runs": runs.iter().filter(|r| r.verdict().failed()).count(),
        "verified_runs": runs.iter().filter(|r| r.verdict() == Verdict::Verified).count(),
        "skipped_runs": runs.iter().filter(|r| r.verdict() == Verdict::Skipped).count(),
        "rows": rows.iter().map(summary::row_json).collect::<Vec<_>>(),
    })
}
