//! `locus soak --minutes N [--seed S]`: a long, seeded mix of runs that checks the
//! runtime stays correct, frees everything and keeps its memory flat.
//!
//! Every run is drawn from one seeded generator: a kernel of [`locus_bench::KERNELS`]
//! (tiny or small, either control program) or a random task graph
//! ([`locus_bench::random_dag`]), verified against its sequential reference; or a
//! random graph of our own in which one task panics (the run must fail naming that
//! task), or whose control program has a declaration refused midway (a range out of
//! bounds; the run must fail naming it). Each run goes either to one long-lived
//! runtime, reused for the whole soak, or to a runtime built for it and dropped after
//! it, under any configuration, virtual topology, window and number of workers.
//!
//! After every run, once its data handles are dropped, the runtime must hold nothing:
//! no live version, no pool byte in use, no shared byte (the accounting the runtime
//! keeps; see the pools' README, "Accounting"). The process's resident set is sampled
//! between runs, after the long-lived runtime's pools have released their cache (they
//! keep their last run's peak otherwise: the pools' README, "Giving memory back") and
//! the allocator has given back what the calling thread holds free (see
//! [`return_freed_memory`]). After the warm-up, the samples are taken in windows of
//! `RSS_WINDOW`; each window's lowest sample (its floor) must stay within 10 % of the
//! first window's floor (at least 32 MiB: the allocators' per-thread heaps, `RSS_SLACK_BYTES`).
//! A transient peak (a large run's buffers, a worker's heap not collected yet) does not
//! move a floor; a leak raises every sample, and so the floors. The summary reports the
//! first, highest and last samples and the pools' mapped bytes on their own. A watchdog
//! ends the soak with status 1 when one run takes longer than its limit, instead of
//! hanging.
//!
//! The first failure ends the soak: one line naming the run (its number, the seed, the
//! work, the configuration, the topology), exit status 1.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use locus::{Config, Data, Read, ReadWrite, Runtime, Topology, Write};
use locus_bench::random_dag::{self, Program};
use locus_bench::{Control, Size};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::cmd::Failure;

/// Options of `locus soak` (see docs/guide.md).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How long to run, in minutes (fractions allowed: 0.2 is 12 seconds).
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        value_parser = minutes,
        allow_negative_numbers = true
    )]
    pub minutes: f64,
    /// Seed of the generator that draws every run.
    #[arg(
        long,
        value_name = "S",
        default_value_t = DEFAULT_SEED,
        allow_negative_numbers = true
    )]
    pub seed: u64,
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Longest a single run may take before the soak fails, in seconds.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..),
        allow_negative_numbers = true,
        hide = true
    )]
    pub watchdog_secs: u64,
    /// Keeps a datum of the first run alive across runs: the leak check must fail.
    #[arg(long, hide = true)]
    pub inject_leak: bool,
    /// Makes one task of the first run block forever: the watchdog must fire.
    #[arg(long, hide = true)]
    pub inject_hang: bool,
}

/// The seed when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;

/// The longest soak `--minutes` accepts: a week.
const MAX_MINUTES: f64 = 7.0 * 24.0 * 60.0;

/// The shortest soak `--minutes` accepts: 0.6 seconds, time for a few runs.
const MIN_MINUTES: f64 = 0.01;

/// Parses `--minutes`: a finite number of minutes from [`MIN_MINUTES`] to a week.
fn minutes(s: &str) -> Result<f64, String> {
    let m: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{}` is not a number of minutes", s.escape_debug()))?;
    if !m.is_finite() || m <= 0.0 {
        return Err(format!(
            "{} minutes: the duration must be a positive number",
            s.escape_debug()
        ));
    }
    if m < MIN_MINUTES {
        return Err(format!(
            "{} minutes: a soak lasts at least {MIN_MINUTES} minutes (0.6 s)",
            s.trim().escape_debug()
        ));
    }
    if m > MAX_MINUTES {
        return Err(format!("{m} minutes: at most {MAX_MINUTES} (a week)"));
    }
    Ok(m)
}

/// A number of minutes as the messages show it: at most three decimals (`0.1`,
/// `1.333`), not the dozens of digits a fraction typed in full may carry.
fn shown_minutes(m: f64) -> String {
    let text = format!("{m:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Topologies the runs are drawn over; each is laid over the host's CPUs.
const TOPOLOGIES: &[&str] = &[
    "host",
    "1x1",
    "2x1",
    "1x2",
    "4x1",
    "2x2",
    "3x1",
    "1x4",
    "4x2",
    "3x1:10,20,30,20,10,20,30,20,10",
];

/// Resident set sizes after the warm-up may exceed the first one by this fraction...
const RSS_TOLERANCE: f64 = 0.10;

/// ... or by this many bytes, when that is more. The soak starts and ends hundreds of
/// worker threads a minute (runtimes created for one run), and the allocator keeps
/// memory those threads freed in per-thread heaps and arenas that it hands back lazily
/// (mimalloc and glibc alike: a build without mimalloc shows the same creep), so the
/// floor of a resident set of a few tens of MiB rises by some MiB over minutes while
/// the runtime's own accounting (versions, pool and shared bytes, checked after every
/// run) is back to zero. A leak of a kilobyte a run crosses this over a long soak.
const RSS_SLACK_BYTES: f64 = 32.0 * 1024.0 * 1024.0;

/// The warm-up lasts at least this fraction of the soak...
const WARM_UP_FRACTION: f64 = 0.10;
/// ... and at least this many runs.
const WARM_UP_RUNS: u64 = 50;

/// Progress lines on stderr are this far apart.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The panic message of injected panics (a `&'static str` payload, which the panic
/// hook recognises and keeps quiet about).
const INJECTED_PANIC: &str = "locus soak: injected panic";

/// A topology of [`TOPOLOGIES`] with its numbers of nodes and CPUs.
#[derive(Clone, Copy, Debug)]
struct TopologyShape {
    spec: &'static str,
    nodes: usize,
    cpus: usize,
}

/// How the runtime of a run is built.
#[derive(Clone, Debug)]
struct Shape {
    config: Config,
    topology: &'static str,
    /// `None`: the default window.
    window: Option<usize>,
    /// `None`: one worker per CPU of the topology.
    threads: Option<usize>,
}

impl Shape {
    fn draw(rng: &mut SmallRng, shapes: &[TopologyShape]) -> Self {
        let t = shapes[rng.random_range(0..shapes.len())];
        Shape {
            config: Config::ALL[rng.random_range(0..Config::ALL.len())],
            topology: t.spec,
            window: rng.random_bool(0.6).then(|| rng.random_range(1..=64)),
            // At least one worker per node: random graphs give tasks strict affinities
            // to any node, which a node without workers refuses.
            threads: rng
                .random_bool(0.25)
                .then(|| rng.random_range(t.nodes..=t.cpus)),
        }
    }

    fn build(&self) -> Result<Runtime, String> {
        let topology = Topology::from_spec(self.topology).map_err(|e| e.to_string())?;
        let mut builder = Runtime::builder().topology(topology).config(self.config);
        if let Some(w) = self.window {
            builder = builder.window(w);
        }
        if let Some(t) = self.threads {
            builder = builder.threads(t);
        }
        builder.build().map_err(|e| e.to_string())
    }

    fn describe(&self) -> String {
        let window = self.window.map_or("default".to_string(), |w| w.to_string());
        let threads = self
            .threads
            .map_or(String::new(), |t| format!(", {t} threads"));
        format!(
            "config {}, topology {}, window {window}{threads}",
            self.config, self.topology
        )
    }
}

/// What a run does.
#[derive(Clone, Debug)]
enum Work {
    /// A kernel at a named size, verified.
    Kernel {
        name: &'static str,
        size: Size,
        control: Control,
    },
    /// A random task graph, verified.
    Graph(random_dag::Params),
    /// A random graph in which task `at` panics.
    Panic {
        params: random_dag::Params,
        at: usize,
        control: Control,
    },
    /// A random graph whose control program, at task `at`, declares a range out of
    /// bounds.
    Refused {
        params: random_dag::Params,
        at: usize,
        control: Control,
    },
    /// A random graph in which task `at` blocks forever (`--inject-hang`).
    Hang {
        params: random_dag::Params,
        at: usize,
    },
}

impl Work {
    fn describe(&self) -> String {
        let graph = |p: &random_dag::Params| {
            format!(
                "random graph seed {} ({} tasks, {} data, max_len {}, max_inputs {}{})",
                p.seed,
                p.tasks,
                p.data,
                p.max_len,
                p.max_inputs,
                if p.hints { ", hints" } else { "" }
            )
        };
        let size = |s: Size| match s {
            Size::Tiny => "tiny",
            Size::Small => "small",
            Size::Paper => "paper",
            Size::PaperSgi => "paper (sgi-uv2000)",
        };
        match self {
            Work::Kernel {
                name,
                size: s,
                control,
            } => format!("kernel {name} {} control {control}", size(*s)),
            Work::Graph(p) => graph(p),
            Work::Panic {
                params,
                at,
                control,
            } => format!("{}, task t{at} panics, control {control}", graph(params)),
            Work::Refused {
                params,
                at,
                control,
            } => format!(
                "{}, declaration refused at task {at}, control {control}",
                graph(params)
            ),
            Work::Hang { params, at } => format!("{}, task t{at} hangs", graph(params)),
        }
    }
}

/// Which runtime a run goes to.
#[derive(Clone, Debug)]
enum Target {
    /// The soak's long-lived runtime.
    LongLived,
    /// A runtime built for the run and dropped after it.
    Fresh(Shape),
}

/// One run, drawn from the soak's generator.
#[derive(Clone, Debug)]
struct RunSpec {
    index: u64,
    work: Work,
    target: Target,
}

/// Counters of the soak, for progress lines and the summary.
#[derive(Debug, Default)]
struct Counts {
    runs: u64,
    tasks: u64,
    kernel_runs: u64,
    graph_runs: u64,
    injected_panics: u64,
    refused_declarations: u64,
    runtimes_created: u64,
    long_lived_runs: u64,
    /// Completed runs by the number of workers of their runtime.
    by_workers: std::collections::BTreeMap<usize, u64>,
}

/// Resident set samples after the warm-up.
#[derive(Debug, Default)]
struct RssWatch {
    /// Runs and seconds the warm-up took, once it is over.
    warm_up: Option<(u64, f64)>,
    first: Option<u64>,
    max: u64,
    last: u64,
    samples: u64,
    /// Bytes the long-lived runtime's pools had mapped at the first sample, at most,
    /// and at the last.
    pool_first: u64,
    pool_max: u64,
    pool_last: u64,
    /// The lowest sample of the window of samples in progress, and how many it holds.
    window_floor: u64,
    window_len: u64,
    /// The floor of the first full window after the warm-up.
    first_floor: Option<u64>,
}

/// Samples per window: the check compares each window's lowest sample (its *floor*)
/// with the first window's, so that a transient peak (a large run's buffers, a
/// worker's allocator heap not collected yet) does not count as growth, while a leak,
/// which raises every sample, raises the floor.
const RSS_WINDOW: u64 = 50;

/// The run in progress, for the watchdog: when it started and what it is.
type Current = Arc<Mutex<Option<(Instant, String)>>>;

/// Runs the soak and prints its summary.
pub fn main(args: &Args) -> Result<(), Failure> {
    let duration = Duration::from_secs_f64(args.minutes * 60.0);
    let limit = Duration::from_secs(args.watchdog_secs);
    eprintln!(
        "locus: soak for {} minutes, seed {} (watchdog: {} s per run)",
        shown_minutes(args.minutes),
        args.seed,
        args.watchdog_secs
    );
    quiet_injected_panics();
    let current: Current = Arc::new(Mutex::new(None));
    start_watchdog(current.clone(), limit);

    let shapes: Vec<TopologyShape> = TOPOLOGIES
        .iter()
        .map(|&spec| {
            Topology::from_spec(spec)
                .map(|t| TopologyShape {
                    spec,
                    nodes: t.num_nodes(),
                    cpus: t.num_cpus(),
                })
                .map_err(|e| Failure::Failed(format!("topology {spec}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let long_shape = Shape::draw(&mut rng, &shapes);
    let mut soak = Soak {
        seed: args.seed,
        long_shape: long_shape.clone(),
        long: None,
        counts: Counts::default(),
        rss: RssWatch::default(),
        leaked: Vec::new(),
        current,
        inject_leak: args.inject_leak,
    };
    let started = Instant::now();
    let outcome = soak.run_all(&mut rng, &shapes, args, started, duration);
    let elapsed = started.elapsed().as_secs_f64();
    // The long-lived runtime goes last, under the watchdog like everything else.
    soak.watch("dropping the long-lived runtime".into());
    let long = soak.long.take();
    drop(long);
    soak.unwatch();
    let failure = outcome.err();
    print_summary(&soak, args, elapsed, failure.as_deref());
    match failure {
        None => Ok(()),
        Some(reason) => Err(Failure::Failed(format!("soak failed: {reason}"))),
    }
}

/// Keeps the default panic message for every panic but the injected ones.
fn quiet_injected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() == Some(&INJECTED_PANIC) {
            return;
        }
        default(info);
    }));
}

/// Ends the process with status 1 when the watched run takes longer than `limit`.
fn start_watchdog(current: Current, limit: Duration) {
    let tick = (limit / 4).min(Duration::from_secs(1));
    std::thread::Builder::new()
        .name("locus-soak-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(tick);
            let overdue = current
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .filter(|(since, _)| since.elapsed() > limit)
                .map(|(_, what)| what.clone());
            if let Some(what) = overdue {
                eprintln!(
                    "locus: soak failed: {what} did not finish within {} s",
                    limit.as_secs()
                );
                std::process::exit(1);
            }
        })
        .expect("the watchdog thread starts");
}

/// The state of a soak.
struct Soak {
    seed: u64,
    long_shape: Shape,
    long: Option<Runtime>,
    counts: Counts,
    rss: RssWatch,
    /// Data kept alive on purpose (`--inject-leak`).
    leaked: Vec<Data<u64>>,
    current: Current,
    inject_leak: bool,
}

impl Soak {
    fn watch(&self, what: String) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), what));
    }

    fn unwatch(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Runs until `duration` has passed or a run fails; the reason names the run.
    fn run_all(
        &mut self,
        rng: &mut SmallRng,
        shapes: &[TopologyShape],
        args: &Args,
        started: Instant,
        duration: Duration,
    ) -> Result<(), String> {
        self.watch(format!(
            "building the long-lived runtime ({})",
            self.long_shape.describe()
        ));
        let long = self.long_shape.build().map_err(|e| {
            format!(
                "seed {}: the long-lived runtime ({}) cannot be built: {e}",
                self.seed,
                self.long_shape.describe()
            )
        })?;
        self.long = Some(long);
        self.counts.runtimes_created += 1;
        self.unwatch();

        let mut index = 0;
        // The high-water sweep on the long-lived runtime, first (see the module docs).
        let mut plan: std::collections::VecDeque<RunSpec> = high_water_sweep(rng).collect();
        if args.inject_hang {
            plan.push_front(RunSpec {
                index: 0,
                work: Work::Hang {
                    params: random_dag::Params::tiny(),
                    at: 10,
                },
                target: Target::LongLived,
            });
        }
        let mut next_progress = PROGRESS_EVERY;
        // At least one run, however short the soak.
        while index == 0 || started.elapsed() < duration {
            let mut spec = match plan.pop_front() {
                Some(spec) => spec,
                None => draw(rng, shapes),
            };
            spec.index = index;
            index += 1;
            self.one(&spec)?;
            self.sample(&spec, started, duration)?;
            if started.elapsed() >= next_progress {
                next_progress += PROGRESS_EVERY;
                self.progress(started, duration);
            }
        }
        Ok(())
    }

    /// Names a run in failures and for the watchdog.
    fn describe(&self, spec: &RunSpec) -> String {
        let (shape, which) = match &spec.target {
            Target::LongLived => (&self.long_shape, "long-lived runtime"),
            Target::Fresh(shape) => (shape, "fresh runtime"),
        };
        format!(
            "run {} (seed {}, {}, {}, {which})",
            spec.index,
            self.seed,
            spec.work.describe(),
            shape.describe()
        )
    }

    /// Carries out one run, under the watchdog, and checks everything was freed.
    fn one(&mut self, spec: &RunSpec) -> Result<(), String> {
        let what = self.describe(spec);
        self.watch(what.clone());
        let fresh = match &spec.target {
            Target::LongLived => None,
            Target::Fresh(shape) => {
                let rt = shape
                    .build()
                    .map_err(|e| format!("{what}: the runtime cannot be built: {e}"))?;
                self.counts.runtimes_created += 1;
                Some(rt)
            }
        };
        let rt = match &fresh {
            Some(rt) => rt,
            None => {
                self.counts.long_lived_runs += 1;
                self.long.as_ref().expect("the long-lived runtime is built")
            }
        };
        let tasks =
            work(rt, &spec.work, &mut self.counts).map_err(|reason| format!("{what}: {reason}"))?;
        if self.inject_leak && spec.index == 0 {
            let kept = rt
                .data_from("kept-on-purpose", &[7u64; 64])
                .map_err(|e| format!("{what}: {e}"))?;
            self.leaked.push(kept);
        }
        self.counts.runs += 1;
        self.counts.tasks += tasks;
        *self.counts.by_workers.entry(rt.workers()).or_default() += 1;
        // Every handle of the run is dropped: the runtime must hold nothing.
        let (versions, pool, shared) = (
            rt.live_versions(),
            rt.pool_bytes_in_use(),
            rt.shared_bytes_in_use(),
        );
        if versions != 0 || pool != 0 || shared != 0 {
            return Err(format!(
                "{what}: leak: once the run's data were dropped the runtime still holds \
                 {versions} live versions, {pool} pool bytes and {shared} shared bytes"
            ));
        }
        drop(fresh);
        self.unwatch();
        Ok(())
    }

    /// Samples the resident set between runs and checks it after the warm-up: each
    /// window's floor at most 10 % (at least 32 MiB) over the first window's (the module
    /// docs).
    fn sample(
        &mut self,
        spec: &RunSpec,
        started: Instant,
        duration: Duration,
    ) -> Result<(), String> {
        let elapsed = started.elapsed();
        if self.rss.warm_up.is_none() {
            if self.counts.runs < WARM_UP_RUNS || elapsed < duration.mul_f64(WARM_UP_FRACTION) {
                return Ok(());
            }
            self.rss.warm_up = Some((self.counts.runs, elapsed.as_secs_f64()));
        }
        // The long-lived runtime's pools keep their last run's peak cached (their
        // README, "Giving memory back"): released here, so that samples compare.
        if let Some(rt) = &self.long {
            rt.pools().release_cached();
        }
        return_freed_memory();
        let rss = resident_bytes().map_err(|e| format!("cannot read the resident set: {e}"))?;
        let pool = self.long_pool_bytes();
        self.rss.samples += 1;
        self.rss.last = rss;
        self.rss.max = self.rss.max.max(rss);
        self.rss.pool_last = pool;
        self.rss.pool_max = self.rss.pool_max.max(pool);
        self.rss.first.get_or_insert(rss);
        if self.rss.samples == 1 {
            self.rss.pool_first = pool;
        }
        self.rss.window_floor = if self.rss.window_len == 0 {
            rss
        } else {
            self.rss.window_floor.min(rss)
        };
        self.rss.window_len += 1;
        if self.rss.window_len < RSS_WINDOW {
            return Ok(());
        }
        let floor = self.rss.window_floor;
        self.rss.window_len = 0;
        let first = *self.rss.first_floor.get_or_insert(floor);
        let slack = (first as f64 * RSS_TOLERANCE).max(RSS_SLACK_BYTES);
        if floor as f64 > first as f64 + slack {
            return Err(format!(
                "{}: the resident set's floor over the last {RSS_WINDOW} samples grew to \
                 {:.1} MiB, more than {:.1} MiB (10 %, at least 32 MiB) over the first \
                 window's after the warm-up ({:.1} MiB)",
                self.describe(spec),
                mib(floor),
                mib(slack as u64),
                mib(first),
            ));
        }
        Ok(())
    }

    /// Bytes the long-lived runtime's pools have mapped from the OS.
    fn long_pool_bytes(&self) -> u64 {
        self.long
            .as_ref()
            .map_or(0, |rt| rt.pools().stats().iter().map(|s| s.os_bytes).sum())
    }

    fn progress(&self, started: Instant, duration: Duration) {
        let c = &self.counts;
        let rss = resident_bytes().map_or("?".to_string(), |b| format!("{:.1} MiB", mib(b)));
        eprintln!(
            "locus: soak {} / {}: {} runs, {} tasks, {} injected panics, {} refused declarations, {} runtimes, RSS {rss}",
            crate::render::clock(started.elapsed()),
            crate::render::clock(duration),
            c.runs,
            c.tasks,
            c.injected_panics,
            c.refused_declarations,
            c.runtimes_created
        );
    }
}

/// The sweep that opens the warm-up: the largest runs of the mix, on the long-lived
/// runtime, so that its pools reach the size they keep (see the module docs).
fn high_water_sweep(rng: &mut SmallRng) -> impl Iterator<Item = RunSpec> {
    let mut sweep = Vec::new();
    for &name in locus_bench::KERNELS {
        for control in Control::ALL {
            sweep.push(Work::Kernel {
                name,
                size: Size::Small,
                control,
            });
        }
    }
    sweep.push(Work::Graph(random_dag::Params {
        tasks: MAX_GRAPH_TASKS,
        data: MAX_GRAPH_DATA,
        max_len: MAX_GRAPH_LEN,
        max_inputs: 4,
        seed: rng.random(),
        hints: false,
    }));
    sweep.into_iter().map(|work| RunSpec {
        index: 0,
        work,
        target: Target::LongLived,
    })
}

const MAX_GRAPH_TASKS: usize = 3000;
const MAX_GRAPH_DATA: usize = 64;
const MAX_GRAPH_LEN: usize = 4096;

/// Draws a random graph's shape.
fn graph_params(rng: &mut SmallRng) -> random_dag::Params {
    random_dag::Params {
        tasks: rng.random_range(1..=MAX_GRAPH_TASKS),
        data: rng.random_range(2..=MAX_GRAPH_DATA),
        // Log-uniform, so short and long data are both common.
        max_len: 1 << rng.random_range(0..=MAX_GRAPH_LEN.trailing_zeros()),
        max_inputs: rng.random_range(0..=4),
        seed: rng.random(),
        hints: rng.random_bool(0.3),
    }
}

/// Draws one run of the mix.
fn draw(rng: &mut SmallRng, shapes: &[TopologyShape]) -> RunSpec {
    let control = Control::ALL[rng.random_range(0..Control::ALL.len())];
    let work = match rng.random_range(0..20) {
        0..=8 => Work::Kernel {
            name: locus_bench::KERNELS[rng.random_range(0..locus_bench::KERNELS.len())],
            size: if rng.random_bool(0.2) {
                Size::Small
            } else {
                Size::Tiny
            },
            control,
        },
        9..=15 => Work::Graph(graph_params(rng)),
        16..=17 => {
            let params = graph_params(rng);
            Work::Panic {
                at: rng.random_range(0..params.tasks),
                params,
                control,
            }
        }
        _ => {
            let params = graph_params(rng);
            Work::Refused {
                at: rng.random_range(0..params.tasks),
                params,
                control,
            }
        }
    };
    let target = if rng.random_bool(0.5) {
        Target::LongLived
    } else {
        Target::Fresh(Shape::draw(rng, shapes))
    };
    RunSpec {
        index: 0,
        work,
        target,
    }
}

/// Carries out `work` on `rt`; gives the tasks it ran, or why it is a failure.
fn work(rt: &Runtime, work: &Work, counts: &mut Counts) -> Result<u64, String> {
    match work {
        Work::Kernel {
            name,
            size,
            control,
        } => {
            let out = locus_bench::run_kernel(name, rt, *size, *control)
                .map_err(|e| format!("the run failed: {e}"))?;
            if !out.verified {
                return Err(mismatch(out.mismatch.as_ref()));
            }
            counts.kernel_runs += 1;
            Ok(out.report.tasks)
        }
        Work::Graph(params) => {
            let out = random_dag::run(rt, params).map_err(|e| format!("the run failed: {e}"))?;
            if !out.verified {
                return Err(mismatch(out.mismatch.as_ref()));
            }
            counts.graph_runs += 1;
            Ok(out.report.tasks)
        }
        Work::Panic {
            params,
            at,
            control,
        } => {
            let program = random_dag::generate(params);
            let err = faulty(rt, &program, Fault::Panic(*at), *control)?;
            match &err.error {
                locus::Error::TaskPanicked { task, message }
                    if *task == format!("t{at}") && message == INJECTED_PANIC => {}
                other => {
                    return Err(format!(
                        "task t{at} panicked, but the run failed with: {other}"
                    ))
                }
            }
            counts.injected_panics += 1;
            Ok(err.report.tasks)
        }
        Work::Refused {
            params,
            at,
            control,
        } => {
            let program = random_dag::generate(params);
            let err = faulty(rt, &program, Fault::Refused(*at), *control)?;
            match &err.error {
                locus::Error::Declaration { task, message }
                    if *task == refused_name(*at) && message.contains("bounds") => {}
                other => {
                    return Err(format!(
                        "a declaration out of bounds was submitted as `{}`, but the run \
                         failed with: {other}",
                        refused_name(*at)
                    ))
                }
            }
            counts.refused_declarations += 1;
            Ok(err.report.tasks)
        }
        Work::Hang { params, at } => {
            let program = random_dag::generate(params);
            faulty(rt, &program, Fault::Hang(*at), Control::Sequential)?;
            Err("a run with a task blocked forever returned".into())
        }
    }
}

fn mismatch(m: Option<&locus_bench::Mismatch>) -> String {
    format!(
        "the result does not match the sequential reference{}",
        m.map_or(String::new(), |m| format!(" ({m})"))
    )
}

/// What goes wrong in a [`faulty`] run.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Task `t{n}` panics.
    Panic(usize),
    /// Before task `n`, the control program declares a range out of bounds.
    Refused(usize),
    /// Task `t{n}` blocks forever.
    Hang(usize),
}

/// The name of the task whose declaration is refused.
fn refused_name(at: usize) -> String {
    format!("t{at}-out-of-bounds")
}

/// Most creators of a faulty run under parallel control.
const CREATORS: usize = 8;

/// Runs `program` with its fault, under sequential control (the root submits every
/// task) or parallel control (creators submit consecutive bands of tasks from their
/// nested scopes). The creators read-write one token, so each starts once the one
/// before it has submitted its band: submissions keep the program's order, as the
/// runtime asks of creators that share data ([`locus::Scope`]). The run must fail:
/// gives its error, or why it is a failure.
fn faulty(
    rt: &Runtime,
    program: &Program,
    fault: Fault,
    control: Control,
) -> Result<locus::RunError, String> {
    let handles = random_dag::Handles::new(rt, program);
    let token = rt.data::<u64>("token", 1);
    let outcome = rt.run(|s| -> Result<(), locus::Error> {
        match control {
            Control::Sequential => {
                submit_band(s, program, &handles.0, 0..program.tasks.len(), fault)
            }
            Control::Parallel => {
                for band in split(program.tasks.len(), CREATORS) {
                    let program = program.clone();
                    let data = handles.0.clone();
                    s.spawn_control("creator", token.read_write(), move |ctx| {
                        // A refused declaration has already failed the run.
                        let _ = submit_band(ctx.scope(), &program, &data, band, fault);
                    })?;
                }
                Ok(())
            }
        }
    });
    match outcome {
        Ok(_) => Err("the run succeeded where it had to fail".into()),
        Err(e) => Ok(e),
    }
}

/// Splits `0..n` into at most `parts` consecutive non-empty ranges.
fn split(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, n.max(1));
    (0..parts)
        .map(|p| p * n / parts..(p + 1) * n / parts)
        .filter(|r| !r.is_empty())
        .collect()
}

/// Submits the tasks `band` of `program` (bodies as [`random_dag::apply`]), with the
/// fault if it falls in the band.
fn submit_band(
    scope: &locus::Scope,
    program: &Program,
    data: &[Data<u64>],
    band: std::ops::Range<usize>,
    fault: Fault,
) -> Result<(), locus::Error> {
    for t in band {
        if let Fault::Refused(at) = fault {
            if at == t {
                let d = &data[t % data.len()];
                let len = d.len();
                scope.spawn(refused_name(t), d.read_range(len..len + 1), |_, _| {})?;
            }
        }
        let spec = &program.tasks[t];
        let reads: Vec<Read<u64>> = spec
            .reads
            .iter()
            .map(|(d, r)| data[*d].read_range(r.clone()))
            .collect();
        let writes: Vec<Write<u64>> = spec.writes.iter().map(|&d| data[d].write()).collect();
        let rw: Vec<ReadWrite<u64>> = spec
            .read_write
            .iter()
            .map(|&d| data[d].read_write())
            .collect();
        let salt = spec.salt;
        let (panics, hangs) = match fault {
            Fault::Panic(at) => (at == t, false),
            Fault::Hang(at) => (false, at == t),
            Fault::Refused(_) => (false, false),
        };
        scope.spawn(
            format!("t{t}"),
            (reads, writes, rw),
            move |_, (ins, mut outs, mut rw)| {
                if panics {
                    panic!("locus soak: injected panic");
                }
                if hangs {
                    loop {
                        std::thread::park();
                    }
                }
                random_dag::apply(salt, &ins, &mut outs, rw.pop());
            },
        )?;
    }
    Ok(())
}

/// Makes the allocator give the memory it holds free back to the system, so that a
/// sample counts what is alive. mimalloc (the binary's allocator) keeps freed large
/// blocks until a later allocation purges them: without this, the resident set stays
/// about 100 MiB higher for tens of runs after each small blur-roberts run (whose
/// reference image is freed by then), which says nothing about leaks.
fn return_freed_memory() {
    #[cfg(feature = "mimalloc")]
    {
        extern "C" {
            /// mimalloc's `mi_collect`: frees what the calling thread's heap and the
            /// abandoned segments hold unused; with `force`, returns it to the system.
            fn mi_collect(force: bool);
        }
        // SAFETY: mimalloc is the global allocator when this feature is on, so the
        // symbol is linked in; `mi_collect` takes no pointer and may be called from any
        // thread at any time.
        unsafe { mi_collect(true) }
    }
}

/// The process's resident set, in bytes (`/proc/self/statm`).
fn resident_bytes() -> Result<u64, String> {
    let statm = std::fs::read_to_string("/proc/self/statm").map_err(|e| e.to_string())?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| format!("unexpected /proc/self/statm: {statm:?}"))?;
    // SAFETY: `sysconf` only reads a system constant; no memory of ours is involved.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * u64::try_from(page).unwrap_or(4096))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// `1m05s`.
/// `N workers: R runs` for each number of workers, in order.
fn by_workers(counts: &std::collections::BTreeMap<usize, u64>) -> String {
    if counts.is_empty() {
        return "none".to_string();
    }
    counts
        .iter()
        .map(|(w, n)| format!("{w} {}: {n}", if *w == 1 { "worker" } else { "workers" }))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_summary(soak: &Soak, args: &Args, elapsed: f64, failure: Option<&str>) {
    let c = &soak.counts;
    let r = &soak.rss;
    let rss = |b: u64| r.first.map(|_| (mib(b) * 10.0).round() / 10.0);
    if args.json {
        let object = json!({
            "seed": args.seed,
            "minutes": args.minutes,
            "elapsed_s": elapsed,
            "runs": c.runs,
            "tasks": c.tasks,
            "failures": u64::from(failure.is_some()),
            "failure": failure,
            "kernel_runs": c.kernel_runs,
            "random_graph_runs": c.graph_runs,
            "injected_panics": c.injected_panics,
            "refused_declarations": c.refused_declarations,
            "runtimes_created": c.runtimes_created,
            "long_lived_runs": c.long_lived_runs,
            "runs_by_workers": c
                .by_workers
                .iter()
                .map(|(w, n)| (w.to_string(), json!(n)))
                .collect::<serde_json::Map<_, _>>(),
            "long_lived_runtime": soak.long_shape.describe(),
            "warm_up_runs": r.warm_up.map(|w| w.0),
            "warm_up_s": r.warm_up.map(|w| w.1),
            "rss_samples": r.samples,
            "rss_first_mib": r.first.and_then(rss),
            "rss_max_mib": rss(r.max),
            "rss_last_mib": rss(r.last),
            "long_lived_pool_first_mib": rss(r.pool_first),
            "long_lived_pool_max_mib": rss(r.pool_max),
            "long_lived_pool_last_mib": rss(r.pool_last),
        });
        println!("{object}");
        return;
    }
    println!(
        "soak: seed {}, {} of {} minutes",
        args.seed,
        shown_minutes(elapsed / 60.0),
        shown_minutes(args.minutes)
    );
    println!(
        "  runs {} ({} kernels, {} random graphs, {} injected panics, {} refused declarations), tasks {}",
        c.runs, c.kernel_runs, c.graph_runs, c.injected_panics, c.refused_declarations, c.tasks
    );
    println!("  failures {}", u64::from(failure.is_some()));
    println!("  runs by workers: {}", by_workers(&c.by_workers));
    println!(
        "  runtimes created {} (the long-lived one: {}, {} runs)",
        c.runtimes_created,
        soak.long_shape.describe(),
        c.long_lived_runs
    );
    match (r.first, r.warm_up) {
        (Some(first), Some((runs, secs))) => {
            println!(
                "  RSS after the warm-up ({runs} runs, {secs:.1} s; {} samples): first {:.1} MiB, max {:.1} MiB, last {:.1} MiB",
                r.samples,
                mib(first),
                mib(r.max),
                mib(r.last)
            );
            println!(
                "  long-lived runtime's pools, mapped: first {:.1} MiB, max {:.1} MiB, last {:.1} MiB",
                mib(r.pool_first),
                mib(r.pool_max),
                mib(r.pool_last)
            );
        }
        _ => println!("  RSS: the soak ended during the warm-up; no sample checked"),
    }
}
