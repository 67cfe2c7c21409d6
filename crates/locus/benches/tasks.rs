//! Per-task cost of the runtime, in nanoseconds per task: criterion's "time" of one
//! iteration is the cost of one task, since each measurement runs a graph of as many
//! tasks as criterion asks iterations (`iter_custom`) and returns the run's wall time.
//! The runtime is built once per benchmark, outside the measurement.
//!
//! ```sh
//! cargo bench -p locus --bench tasks            # all of them
//! cargo bench -p locus --bench tasks -- chain   # one group
//! ```
//!
//! Every run checks its result (a wrong value panics the benchmark):
//! - `empty`: independent tasks with no access and an empty body;
//! - `chain`: a dependence chain, each task incrementing one datum (`read_write`);
//! - `fan`: rounds of fan-out and fan-in: one writer, 62 readers each writing its own
//!   datum, one task reading all 62 (a `Vec` of reads);
//! - `churn`: version churn, write-after-read on one datum: a writer, then four
//!   readers, again and again (each writer renames the datum);
//! - `nested`: nested spawn with join, fib(12) in tasks that each spawn two children
//!   and fetch their results;
//! - `replay-empty`, `replay-chain`, `replay-fan`: the graphs of `empty`, `chain` and
//!   `fan`, 64 tasks each, recorded once (`Runtime::record`, outside the measurement)
//!   and replayed as many iterations as make the tasks asked for (`Runtime::replay`).

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use locus::{Config, Error, Recorder, Runtime, TaskCtx};

const CONFIGS: [Config; 2] = [Config::DsaOpt, Config::ShmBase];

fn runtime(config: Config, threads: usize) -> Runtime {
    Runtime::builder()
        .config(config)
        .threads(threads)
        .build()
        .expect("runtime")
}

/// The worker counts measured: one, and two when the host has two CPUs.
fn thread_counts() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        vec![1, 2]
    } else {
        vec![1]
    }
}

/// Runs `body` for each configuration and worker count as one benchmark of `group`.
fn each_setting(c: &mut Criterion, group: &str, mut body: impl FnMut(&Runtime, u64) -> Duration) {
    let mut g = c.benchmark_group(group);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for config in CONFIGS {
        for threads in thread_counts() {
            let rt = runtime(config, threads);
            let id = BenchmarkId::new(config.name(), format!("{threads} workers"));
            g.bench_function(id, |b| b.iter_custom(|iters| body(&rt, iters)));
        }
    }
    g.finish();
}

fn empty(rt: &Runtime, tasks: u64) -> Duration {
    let start = Instant::now();
    let finished = rt
        .run(|s| {
            for _ in 0..tasks {
                s.spawn("empty", (), |_, ()| {}).expect("spawn");
            }
        })
        .expect("run");
    let elapsed = start.elapsed();
    assert_eq!(finished.report.tasks, tasks, "every task ran");
    elapsed
}

fn chain(rt: &Runtime, tasks: u64) -> Duration {
    let d = rt.data::<u64>("counter", 1);
    let start = Instant::now();
    rt.run(|s| {
        for _ in 0..tasks {
            s.spawn("inc", d.read_write(), |_, x| x[0] += 1)
                .expect("spawn");
        }
    })
    .expect("run");
    let elapsed = start.elapsed();
    assert_eq!(rt.fetch(&d).expect("fetch")[0], tasks);
    elapsed
}

/// Readers per round of `fan`: a round is 64 tasks.
const FAN: u64 = 62;

fn fan(rt: &Runtime, tasks: u64) -> Duration {
    let rounds = tasks.div_ceil(FAN + 2);
    let src = rt.data::<u64>("src", 1);
    let outs: Vec<_> = (0..FAN).map(|_| rt.data::<u64>("out", 1)).collect();
    let sum = rt.data::<u64>("sum", 1);
    let start = Instant::now();
    rt.run(|s| {
        for r in 0..rounds {
            s.spawn("source", src.write(), move |_, x| x[0] = r)
                .expect("spawn");
            for (i, out) in outs.iter().enumerate() {
                let i = i as u64;
                s.spawn("spread", (src.read(), out.write()), move |_, (x, o)| {
                    o[0] = x[0] + i
                })
                .expect("spawn");
            }
            let reads: Vec<_> = outs.iter().map(|o| o.read()).collect();
            s.spawn("gather", (reads, sum.read_write()), |_, (ins, acc)| {
                acc[0] += ins.iter().map(|x| x[0]).sum::<u64>();
            })
            .expect("spawn");
        }
    })
    .expect("run");
    let elapsed = start.elapsed();
    // Round r adds FAN * r + (0 + 1 + ... + FAN - 1).
    let want: u64 = (0..rounds).map(|r| FAN * r + FAN * (FAN - 1) / 2).sum();
    assert_eq!(rt.fetch(&sum).expect("fetch")[0], want);
    elapsed
}

/// Readers after each writer in `churn`.
const READERS: u64 = 4;

fn churn(rt: &Runtime, tasks: u64) -> Duration {
    let rounds = tasks.div_ceil(READERS + 1);
    let d = rt.data::<u64>("churned", 1);
    let start = Instant::now();
    rt.run(|s| {
        for r in 0..rounds {
            s.spawn("write", d.write(), move |_, x| x[0] = r)
                .expect("spawn");
            for _ in 0..READERS {
                s.spawn("read", d.read(), move |_, x| {
                    assert_eq!(x[0], r, "a reader sees its round's version")
                })
                .expect("spawn");
            }
        }
    })
    .expect("run");
    elapsed_checked(start, rt.fetch(&d).expect("fetch")[0], rounds - 1)
}

fn elapsed_checked(start: Instant, got: u64, want: u64) -> Duration {
    let elapsed = start.elapsed();
    assert_eq!(got, want);
    elapsed
}

fn fib_task(ctx: &TaskCtx, n: u64, out: &mut [u64]) {
    if n < 2 {
        out[0] = n;
        return;
    }
    let a = ctx.scope().data::<u64>("fib(n-1)", 1);
    let b = ctx.scope().data::<u64>("fib(n-2)", 1);
    ctx.scope()
        .spawn("fib", a.write(), move |ctx, a| fib_task(ctx, n - 1, a))
        .expect("spawn");
    ctx.scope()
        .spawn("fib", b.write(), move |ctx, b| fib_task(ctx, n - 2, b))
        .expect("spawn");
    out[0] = ctx.fetch(&a).expect("fib(n-1)")[0] + ctx.fetch(&b).expect("fib(n-2)")[0];
}

/// fib(12) = 144, in 465 tasks.
const FIB_N: u64 = 12;
const FIB: u64 = 144;

/// Runs fib(12) until at least `tasks` tasks ran, and returns the time of `tasks` of
/// them (the total time scaled by `tasks` over the tasks that ran).
fn nested(rt: &Runtime, tasks: u64) -> Duration {
    let out = rt.data::<u64>("fib", 1);
    let (mut ran, mut time) = (0u64, Duration::ZERO);
    while ran < tasks {
        let start = Instant::now();
        let finished = rt
            .run(|s| {
                s.spawn("fib", out.write(), |ctx, o| fib_task(ctx, FIB_N, o))
                    .expect("spawn")
            })
            .expect("run");
        time += start.elapsed();
        ran += finished.report.tasks;
        assert_eq!(rt.fetch(&out).expect("fetch")[0], FIB);
    }
    time.mul_f64(tasks as f64 / ran as f64)
}

/// Tasks of each recorded graph: one iteration of a replay.
const GRAPH: u64 = 64;

/// Records `graph` once, then times the replay of `tasks` tasks of it (whole
/// iterations of [`GRAPH`] tasks), and checks the report counted every one.
fn replayed(
    rt: &Runtime,
    tasks: u64,
    record: impl FnOnce(&Recorder) -> Result<(), Error>,
) -> (Duration, u64) {
    let mut graph = rt.record("bench", record).expect("record");
    assert_eq!(graph.tasks() as u64, GRAPH);
    let iterations = tasks.div_ceil(GRAPH);
    let start = Instant::now();
    let report = rt.replay(&mut graph, iterations).expect("replay");
    let elapsed = start.elapsed();
    assert_eq!(report.tasks, iterations * GRAPH, "every task ran");
    (elapsed, iterations)
}

fn replay_empty(rt: &Runtime, tasks: u64) -> Duration {
    replayed(rt, tasks, |r| {
        (0..GRAPH).try_for_each(|_| r.spawn("empty", (), |_, ()| {}))
    })
    .0
}

fn replay_chain(rt: &Runtime, tasks: u64) -> Duration {
    let d = rt.data::<u64>("counter", 1);
    let (elapsed, iterations) = replayed(rt, tasks, |r| {
        (0..GRAPH).try_for_each(|_| r.spawn("inc", d.read_write(), |_, x| x[0] += 1))
    });
    assert_eq!(rt.fetch(&d).expect("fetch")[0], iterations * GRAPH);
    elapsed
}

fn replay_fan(rt: &Runtime, tasks: u64) -> Duration {
    let src = rt.data::<u64>("src", 1);
    let outs: Vec<_> = (0..FAN).map(|_| rt.data::<u64>("out", 1)).collect();
    let sum = rt.data::<u64>("sum", 1);
    let (elapsed, rounds) = replayed(rt, tasks, |r| {
        r.spawn("source", src.write(), |it, x| x[0] = it.index())?;
        for (i, out) in outs.iter().enumerate() {
            let i = i as u64;
            r.spawn("spread", (src.read(), out.write()), move |_, (x, o)| {
                o[0] = x[0] + i
            })?;
        }
        let reads: Vec<_> = outs.iter().map(|o| o.read()).collect();
        r.spawn("gather", (reads, sum.read_write()), |_, (ins, acc)| {
            acc[0] += ins.iter().map(|x| x[0]).sum::<u64>();
        })
    });
    let want: u64 = (0..rounds).map(|r| FAN * r + FAN * (FAN - 1) / 2).sum();
    assert_eq!(rt.fetch(&sum).expect("fetch")[0], want);
    elapsed
}

fn benches(c: &mut Criterion) {
    each_setting(c, "empty", empty);
    each_setting(c, "chain", chain);
    each_setting(c, "fan", fan);
    each_setting(c, "churn", churn);
    each_setting(c, "nested", nested);
    each_setting(c, "replay-empty", replay_empty);
    each_setting(c, "replay-chain", replay_chain);
    each_setting(c, "replay-fan", replay_fan);
}

// The macro's function has no documentation of its own.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(tasks, super::benches);
}

/// One run of one benchmark, for instruction counts under `valgrind --tool=callgrind`
/// (reliable where wall times are not): `LOCUS_TASKS_ONCE=BENCH:TASKS[:CONFIG]` runs
/// BENCH once with TASKS tasks on one worker (default configuration `dsa-opt`) instead
/// of the criterion benchmarks. The instructions of one task are the difference of two
/// such runs over the difference of their tasks, which cancels the runtime's start.
/// `LOCUS_TASKS_WORKERS=N` runs it on N workers instead (wake-ups per task, counted with
/// `perf stat -e syscalls:sys_enter_futex`):
///
/// ```sh
/// LOCUS_TASKS_ONCE=chain:2000 valgrind --tool=callgrind target/release/deps/tasks-HASH
/// LOCUS_TASKS_ONCE=chain:4000 valgrind --tool=callgrind target/release/deps/tasks-HASH
/// ```
fn once(spec: &str) {
    let mut fields = spec.split(':');
    let bench = fields.next().unwrap_or_default();
    let tasks: u64 = fields
        .next()
        .and_then(|t| t.parse().ok())
        .expect("LOCUS_TASKS_ONCE=BENCH:TASKS[:CONFIG]");
    let config = fields.next().map_or(Config::DsaOpt, |c| {
        CONFIGS
            .into_iter()
            .find(|k| k.name() == c)
            .expect("a configuration of the benchmarks")
    });
    let body: fn(&Runtime, u64) -> Duration = match bench {
        "empty" => empty,
        "chain" => chain,
        "fan" => fan,
        "churn" => churn,
        "nested" => nested,
        "replay-empty" => replay_empty,
        "replay-chain" => replay_chain,
        "replay-fan" => replay_fan,
        other => panic!("no benchmark `{other}`"),
    };
    let workers = std::env::var("LOCUS_TASKS_WORKERS")
        .ok()
        .map_or(1, |w| w.parse().expect("LOCUS_TASKS_WORKERS=N"));
    let rt = runtime(config, workers);
    let t = body(&rt, tasks);
    println!("{bench} {config} {tasks} tasks: {:?}", t);
}

fn main() {
    if let Ok(spec) = std::env::var("LOCUS_TASKS_ONCE") {
        once(&spec);
        return;
    }
    group::tasks();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
