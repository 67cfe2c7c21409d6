//! Replay: a recorded [`Graph`] run many times with no dependence analysis and no
//! allocation per task (docs/architecture.md, "Recorded graphs").
//!
//! # Buffers
//!
//! Within one iteration every version a task writes has a buffer of its own. A datum
//! written `k` times per iteration has `k + 1` buffers, allocated at the first replay on
//! the node of each version's producer and kept by the graph: versions `1..k` (but the
//! last) each keep theirs, and the iteration's input (version 0) and output (version
//! `k`) alternate between two buffers, so the output of one iteration is the input of
//! the next without a copy. After each replay the datum's current version is the graph's
//! buffer holding the last output, so that [`Runtime::fetch`](crate::Runtime::fetch)
//! and dynamic runs read it. Data the graph only reads, and shared data (updated in
//! place), stay where they are.
//!
//! # Execution
//!
//! The replay is one run: its root and one *driver* task per other worker (strictly
//! bound to it) serve the graph until every iteration is done. (A replay of one
//! iteration under stealable placement, which runs it alone as below, has no drivers.)
//! Each task has a counter of unfinished predecessors and a list of successors; an
//! iteration starts by pushing its roots to the queues of their home workers. A worker
//! finishing a task decrements its successors' counters and runs one ready successor
//! directly (one of its own when placement is strict, one of its node's otherwise),
//! queueing the others on their home workers. An idle driver takes from its own queue, then (stealable placement) from
//! its node's workers', and, once idle for a while, from other nodes' nearest first.
//!
//! An idle driver waits in two phases (Ousterhout, "Scheduling Techniques for
//! Concurrent Systems"; Karlin, Li, Manasse and Owicki, "Empirical Studies of
//! Competitive Spinning for a Shared-Memory Multiprocessor"): it spins, never yielding,
//! for [`SPIN_BEFORE_SLEEP`], about what going to sleep and being woken costs, then
//! sleeps on the replay's own [`Sleep`] (the engine's protocol, which loses no
//! wake-up: `engine/threads/README.md`) until a task is queued for it or the replay
//! ends. A worker queueing tasks on other workers' queues announces them once per
//! finished task and wakes those workers if they sleep; tasks it queues on its own
//! queue wake nobody (it runs them itself, and under stealable placement a sleeping
//! worker is woken only by work of its own). The iteration's shared counters sit apart
//! from what every task reads (a task still restores its own counter of unfinished
//! predecessors when it starts).
//!
//! Under stealable placement an iteration is *spread* over the workers as above only
//! if one worker takes at least [`SPREAD_ABOVE`] (a wake-up) to run it alone; shorter
//! iterations run *alone*, every task queued on and run by the worker that started the
//! iteration, the others not taking from it (they sleep). Spreading saves at most the
//! others' share of that time, and each hand-over between workers costs a cache-line
//! transfer when both run, a wake-up when the receiver sleeps, and a whole time slice
//! of another process when the receiver was descheduled: on a busy host, iterations of
//! a few microseconds spread over two workers wait for both to be on a CPU at once,
//! and ran several times slower than alone, so that a replay's time depended on
//! whether, and when, the engine gave it its second worker. The first iteration runs
//! alone, measured; later ones are spread while the shortest iteration measured alone
//! took at least [`SPREAD_ABOVE`], and every [`PROBE_EVERY`]-th runs alone, measured
//! again. The report's `replay_spread_iterations` counts the spread ones. Strict
//! placement spreads every iteration.
//!
//! A strict replay starts once every driver serves it (or after a grace second, after
//! which a queue whose driver has not started is served by the others, so a replay
//! never waits forever for a worker the engine did not give it). The last task of an
//! iteration starts the next one, after every task of the iteration is done:
//! iterations do not overlap.
//!
//! # Invalidation
//!
//! A replay first checks what the graph depends on, and fails with
//! [`Error::Replay`] (the graph stays invalid: record it again) when a datum was freed
//! (no handle to it is left outside the graph), partitioned, written outside the graph
//! since it was recorded or last replayed (its current version is not the one the graph
//! left), or poisoned, or when an earlier replay failed. A body that panics fails the
//! replay with the task's name; the iteration is drained without running more bodies,
//! each datum is left with the contents of the last complete iteration, shared data the
//! task wrote are poisoned, and the graph releases its buffers.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::{Backoff, CachePadded};
use locus_mem::pool::Pools;

use super::record::{RecordedAccess, RecordedDatum, RecordedTask, ReplayBody};
use super::Affinity;
use crate::data::version::{Version, VersionCounts, VersionRef};
use crate::data::{lock_mutex, DataInner, Mode, RawView};
use crate::engine::threads::sleep::Sleep;
use crate::error::{Error, RunError};
use crate::metrics::{Report, RunCounters};
use crate::observe::{Both, Observer, TaskBytes, TaskSpan};
use crate::sched::AccessInfo;
use crate::Runtime;

/// How long an idle driver spins before it sleeps: about what a sleep and a wake-up
/// cost (a futex wait and wake, and the woken thread's return to its CPU: tens of
/// microseconds), so that waiting never costs more than twice the better of the two
/// (module doc, "Execution").
const SPIN_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// Under stealable placement, an iteration is spread over the workers only if one
/// worker takes at least this long to run it alone: spreading saves at most that time
/// (less what the others' share of it), and it costs each iteration hand-overs between
/// workers, each a wake-up ([`SPIN_BEFORE_SLEEP`]) when the receiver sleeps, or a
/// whole time slice of another process when it was descheduled (module doc,
/// "Execution").
const SPREAD_ABOVE: std::time::Duration = SPIN_BEFORE_SLEEP;

/// How long a driver is idle before it takes tasks of other nodes.
const REMOTE_AFTER: std::time::Duration =
    std::time::Duration::from_nanos(SPIN_BEFORE_SLEEP.as_nanos() as u64 / 2);

/// [`SPREAD_ABOVE`] in nanoseconds.
const SPREAD_ABOVE_NS: u64 = SPREAD_ABOVE.as_nanos() as u64;

/// The start of an iteration that is not timed.
const UNTIMED: u64 = u64::MAX;

/// Under stealable placement, while iterations are spread, one in this many runs on
/// one worker, to measure again what an iteration costs alone.
const PROBE_EVERY: u64 = 64;

/// How long a strict replay waits for its drivers to start before it serves their
/// queues from the drivers that did.
const DRIVER_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// What a replayed body knows of its iteration and of where it runs.
#[derive(Clone, Copy, Debug)]
pub struct Iteration {
    index: u64,
    worker: usize,
    node: usize,
}

impl Iteration {
    /// The iteration's index among every iteration the graph has replayed, from 0.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Index of the worker running the task.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Node of the worker running the task.
    pub fn node(&self) -> usize {
        self.node
    }
}

/// The runtime's observer, for replays: replayed tasks are shown to it as the engine
/// shows its own ([`Observer::task`]), with times on the engine's clock, read from a
/// tap that notes the clock and the instant at each run's start.
#[derive(Clone)]
pub(crate) struct ReplayObserver {
    observer: Arc<dyn Observer>,
    clock: Arc<RunClock>,
}

/// Notes the engine's clock at each run's start ([`Observer::run_started`]).
#[derive(Default)]
struct RunClock(Mutex<Option<(u64, std::time::Instant)>>);

impl Observer for RunClock {
    fn run_started(&self, at_ns: u64) {
        *lock_mutex(&self.0) = Some((at_ns, std::time::Instant::now()));
    }

    fn task(&self, _span: &TaskSpan<'_>) {}
}

impl ReplayObserver {
    /// The observer the engine gets (the runtime's, with the clock's tap) and the one
    /// replays use; none without an observer.
    pub(crate) fn tap(
        observer: Option<Arc<dyn Observer>>,
    ) -> (Option<Arc<dyn Observer>>, Option<ReplayObserver>) {
        match observer {
            None => (None, None),
            Some(observer) => {
                let clock = Arc::new(RunClock::default());
                let engine: Arc<dyn Observer> = Arc::new(Both(observer.clone(), clock.clone()));
                (Some(engine), Some(ReplayObserver { observer, clock }))
            }
        }
    }

    /// Now, on the engine's clock (0 before any run).
    fn now_ns(&self) -> u64 {
        match *lock_mutex(&self.clock.0) {
            Some((at_ns, at)) => at_ns + at.elapsed().as_nanos() as u64,
            None => 0,
        }
    }
}

/// Keys of replayed tasks for the observer: apart from the engine's (addresses, or
/// small numbers in the simulator).
const REPLAY_KEY: u64 = 1 << 63;

/// Whether a replayed task runs only on its home worker or may be taken by another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplayPlacement {
    /// A ready task goes to its home worker's queue, and idle workers may take it
    /// (nearest node first). The default.
    #[default]
    Stealable,
    /// A task runs on its home worker only (while that worker serves the replay).
    Strict,
}

impl ReplayPlacement {
    /// `stealable` or `strict`, as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            ReplayPlacement::Stealable => "stealable",
            ReplayPlacement::Strict => "strict",
        }
    }
}

/// A recorded control program ([`Runtime::record`]), replayed with
/// [`Runtime::replay`]. It holds the data it accesses and, once replayed, the
/// buffers of the versions it writes (module doc of `graph::replay`, "Buffers").
///
/// ```
/// use locus::Runtime;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = Runtime::builder().build()?;
/// let x = rt.data_from("x", &[1u64, 2, 3])?;
/// let step = rt.data_from("step", &[10u64])?;
/// let mut graph = rt.record("add", |r| {
///     r.spawn("add", (step.read(), x.read_write()), |it, (step, x)| {
///         for v in x.iter_mut() {
///             *v += step[0] + it.index();
///         }
///     })
/// })?;
/// rt.replay(&mut graph, 3)?; // adds 10 + 0, 10 + 1, 10 + 2
/// assert_eq!(rt.fetch(&x)?, vec![34, 35, 36]);
/// # Ok(())
/// # }
/// ```
pub struct Graph {
    name: String,
    runtime_id: u64,
    data: Vec<RecordedDatum>,
    accesses: Vec<RecordedAccess>,
    core: Arc<Core>,
    placement: ReplayPlacement,
    /// Iterations replayed so far.
    replayed: u64,
    /// Why the graph cannot be replayed any more.
    invalid: Option<String>,
    /// The buffers of rotated versions, from the first replay on.
    buffers: Option<Vec<Rotation>>,
    /// Which of each rotated datum's two alternating buffers holds its contents.
    parity: usize,
    /// Per datum, the version the graph expects to find current.
    expected: Vec<VersionRef>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("name", &self.name)
            .field("tasks", &self.core.tasks.len())
            .field("replayed", &self.replayed)
            .field("invalid", &self.invalid)
            .finish_non_exhaustive()
    }
}

/// The buffers of one datum the graph writes (none for data it only reads, or shared).
#[derive(Default)]
struct Rotation {
    /// Versions 0 and `k` alternate between these.
    alternating: Vec<VersionRef>,
    /// Versions `1..k`, each its own.
    middle: Vec<VersionRef>,
}

/// One task as replays run it.
struct CoreTask {
    name: Cow<'static, str>,
    body: ReplayBody,
    preds: u32,
    succ: std::ops::Range<u32>,
    accesses: std::ops::Range<u32>,
}

/// Where one access's bytes lie, for the metrics, and the copy a read-write makes.
#[derive(Clone, Copy)]
struct AccessMeta {
    /// Node of the memory read, if the access reads.
    read_node: Option<u32>,
    /// Node of the memory written, if the access writes.
    write_node: Option<u32>,
    /// A read-write of versioned data: its input's memory, copied to its output first.
    copy_from: *const u8,
}

/// The replay-time graph, shared with the drivers of a replay.
struct Core {
    tasks: Box<[CoreTask]>,
    succ: Box<[u32]>,
    roots: Box<[u32]>,
    /// The home workers of the roots, each once.
    root_homes: Box<[u32]>,
    /// Unfinished predecessors of each task in the current iteration.
    pending: Box<[AtomicU32]>,
    /// The worker each task belongs to.
    homes: Box<[u32]>,
    /// Per parity (module doc, "Buffers"), the memory of every access.
    views: [Box<[RawView]>; 2],
    meta: [Box<[AccessMeta]>; 2],
    /// The shared buffer each access writes in place, to poison if its task fails.
    poison: Box<[Option<Arc<DataInner>>]>,
    /// Per worker, the other workers it takes from, nearest node first.
    victims: Box<[Box<[u32]>]>,
    worker_node: Box<[usize]>,
    strict: bool,
    /// Who sees the replayed tasks, if anyone.
    observer: Option<ReplayObserver>,
    // The current replay.
    queues: Box<[ArrayQueue<u32>]>,
    /// Whether each worker's driver serves the replay.
    attached: Box<[AtomicBool]>,
    counters: RunCounters,
    iterations: u64,
    base: u64,
    /// Idle drivers sleep here (module doc, "Execution").
    sleep: Sleep,
    /// The replay's start, for the iterations' times.
    clock: std::time::Instant,
    /// Tasks of the current iteration not finished yet: written by every task, on a
    /// line of its own, apart from the state every task reads.
    remaining: CachePadded<AtomicUsize>,
    /// The current iteration's state, read by every task, written once per iteration.
    now: CachePadded<Now>,
    error: Mutex<Option<Error>>,
}

/// The state of the current iteration that every task reads.
struct Now {
    iteration: AtomicU64,
    parity: AtomicUsize,
    /// Whether the iteration's tasks go to their home workers (else to the worker that
    /// started it, which runs it alone; module doc, "Execution").
    spread: AtomicBool,
    done: AtomicBool,
    failed: AtomicBool,
    /// When the iteration started, in nanoseconds since [`Core::clock`], if it is timed
    /// (else [`UNTIMED`]).
    started_ns: AtomicU64,
    /// The shortest time one worker took to run an iteration alone, in nanoseconds.
    alone_ns: AtomicU64,
    /// Iterations spread over the workers, for the report.
    spread_iterations: AtomicU64,
}

// SAFETY: the raw pointers of `views` and `meta` name buffers the graph holds while a
// replay uses them (its rotated versions, the versions of data it only reads, which it
// keeps current, and shared data's buffers, held by the data it holds); every other
// field is `Send + Sync`. A replay's tasks reach the memory only as the dependences
// between them allow (module doc).
unsafe impl Send for Core {}
// SAFETY: as for `Send`.
unsafe impl Sync for Core {}

impl Graph {
    pub(crate) fn new(
        name: String,
        runtime_id: u64,
        data: Vec<RecordedDatum>,
        tasks: Vec<RecordedTask>,
        accesses: Vec<RecordedAccess>,
    ) -> Self {
        let n = tasks.len();
        let mut succ_lists: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (t, task) in tasks.iter().enumerate() {
            for &p in &task.preds {
                succ_lists[p as usize].push(t as u32);
            }
        }
        let mut succ = Vec::with_capacity(succ_lists.iter().map(Vec::len).sum());
        let mut core_tasks = Vec::with_capacity(n);
        let mut roots = Vec::new();
        for (t, (task, s)) in tasks.into_iter().zip(succ_lists).enumerate() {
            if task.preds.is_empty() {
                roots.push(t as u32);
            }
            let start = succ.len() as u32;
            succ.extend(s);
            core_tasks.push(CoreTask {
                name: task.name,
                body: task.body,
                preds: task.preds.len() as u32,
                succ: start..succ.len() as u32,
                accesses: task.accesses,
            });
        }
        let pending = core_tasks.iter().map(|t| AtomicU32::new(t.preds)).collect();
        let expected = data.iter().map(|d| d.snapshot.clone()).collect();
        let empty_views: Box<[RawView]> = Box::new([]);
        let empty_meta: Box<[AccessMeta]> = Box::new([]);
        Graph {
            name,
            runtime_id,
            data,
            accesses,
            core: Arc::new(Core {
                tasks: core_tasks.into(),
                succ: succ.into(),
                roots: roots.into(),
                root_homes: Box::new([]),
                pending,
                homes: Box::new([]),
                views: [empty_views.clone(), empty_views],
                meta: [empty_meta.clone(), empty_meta],
                poison: Box::new([]),
                victims: Box::new([]),
                worker_node: Box::new([]),
                strict: false,
                observer: None,
                queues: Box::new([]),
                attached: Box::new([]),
                counters: RunCounters::new(0, 0),
                iterations: 0,
                base: 0,
                sleep: Sleep::new(0),
                clock: std::time::Instant::now(),
                remaining: CachePadded::new(AtomicUsize::new(0)),
                now: CachePadded::new(Now {
                    iteration: AtomicU64::new(0),
                    parity: AtomicUsize::new(0),
                    spread: AtomicBool::new(false),
                    done: AtomicBool::new(false),
                    failed: AtomicBool::new(false),
                    started_ns: AtomicU64::new(0),
                    alone_ns: AtomicU64::new(u64::MAX),
                    spread_iterations: AtomicU64::new(0),
                }),
                error: Mutex::new(None),
            }),
            placement: ReplayPlacement::default(),
            replayed: 0,
            invalid: None,
            buffers: None,
            parity: 0,
            expected,
        }
    }

    /// The graph's name, as given to [`Runtime::record`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tasks per iteration.
    pub fn tasks(&self) -> usize {
        self.core.tasks.len()
    }

    /// Iterations replayed so far (complete ones).
    pub fn replayed(&self) -> u64 {
        self.replayed
    }

    /// Whether a replayed task may run elsewhere than on its home worker; default
    /// [`ReplayPlacement::Stealable`].
    pub fn set_placement(&mut self, placement: ReplayPlacement) {
        self.placement = placement;
    }

    /// The placement setting.
    pub fn placement(&self) -> ReplayPlacement {
        self.placement
    }

    /// Why the graph cannot be replayed any more, if it cannot.
    pub fn invalid_reason(&self) -> Option<&str> {
        self.invalid.as_deref()
    }

    /// The home worker of each task, once the graph has been replayed (empty before).
    pub fn homes(&self) -> Vec<usize> {
        self.core.homes.iter().map(|&w| w as usize).collect()
    }

    fn refuse(&self, message: String) -> Error {
        Error::Replay {
            graph: self.name.clone(),
            message,
        }
    }

    /// Makes the graph invalid for good, with the error saying why.
    fn invalidate(&mut self, message: String) -> Error {
        let error = self.refuse(message.clone());
        self.invalid = Some(message);
        self.buffers = None;
        error
    }

    /// Checks what the graph depends on (module doc, "Invalidation").
    fn check_valid(&mut self) -> Result<(), Error> {
        if let Some(reason) = &self.invalid {
            return Err(self.refuse(format!("{reason}; record the graph again")));
        }
        let mut problem = None;
        for (d, expected) in self.data.iter().zip(&self.expected) {
            let name = &d.inner.name;
            problem = if Arc::strong_count(&d.inner) <= d.graph_refs {
                Some(format!("`{name}` was freed"))
            } else if d.inner.is_partitioned() {
                Some(format!("`{name}` was partitioned"))
            } else if !VersionRef::ptr_eq(&d.inner.current(), expected) {
                Some(format!("`{name}` was written outside the graph"))
            } else {
                d.inner
                    .poisoned_by()
                    .map(|task| format!("`{name}` was poisoned by task `{task}`"))
            };
            if problem.is_some() {
                break;
            }
        }
        match problem {
            Some(p) => Err(self.invalidate(format!("{p} since the graph was recorded"))),
            None => Ok(()),
        }
    }

    /// Replays the graph `iterations` times as one run of `rt` (see
    /// [`Runtime::replay`]).
    pub(crate) fn replay(
        &mut self,
        rt: &Runtime,
        versions: &'static VersionCounts,
        observer: Option<ReplayObserver>,
        iterations: u64,
    ) -> Result<Report, RunError> {
        let skeleton = |error: Error| RunError {
            error,
            report: Box::new(rt.report_skeleton()),
        };
        if self.runtime_id != rt.id() {
            return Err(skeleton(Error::Config(format!(
                "graph `{}` was recorded with another runtime",
                self.name
            ))));
        }
        if super::current_executor(|_| ()).is_some() {
            return Err(skeleton(Error::NestedRun));
        }
        if rt.engine_name() != "threads" {
            return self.replay_submitted(rt, iterations);
        }
        {
            // No run may write the data while they are checked and copied.
            let _serialised = rt.no_run_in_progress("replay").map_err(skeleton)?;
            self.check_valid().map_err(skeleton)?;
            if self.buffers.is_none() {
                self.prepare(rt, versions).map_err(skeleton)?;
            }
        }
        if iterations == 0 || self.core.tasks.is_empty() {
            // Nothing to run: an empty run, for its report.
            let mut report = rt.run(|_| ())?.report;
            let complete = if self.core.tasks.is_empty() {
                iterations
            } else {
                0
            };
            self.replayed += complete;
            self.mark_report(&mut report, complete);
            return Ok(report);
        }
        let workers = rt.workers();
        let nodes = rt.topology().num_nodes();
        {
            let Some(core) = Arc::get_mut(&mut self.core) else {
                return Err(skeleton(self.refuse(
                    "the graph is still held by a replay (a runtime bug)".into(),
                )));
            };
            core.strict = self.placement == ReplayPlacement::Strict;
            core.observer = observer;
            let mut root_homes: Vec<u32> =
                core.roots.iter().map(|&r| core.homes[r as usize]).collect();
            root_homes.sort_unstable();
            root_homes.dedup();
            core.root_homes = root_homes.into();
            let mut per_home = vec![0usize; workers];
            for &h in core.homes.iter() {
                per_home[h as usize] += 1;
            }
            // Under stealable placement an iteration run alone queues every task on one
            // worker's queue.
            let strict = core.strict;
            let all = core.tasks.len();
            core.queues = per_home
                .iter()
                .map(|&n| ArrayQueue::new(if strict { n } else { all }.max(1)))
                .collect();
            core.attached = (0..workers).map(|_| AtomicBool::new(false)).collect();
            core.counters = RunCounters::new(workers, nodes);
            core.iterations = iterations;
            core.base = self.replayed;
            core.sleep = Sleep::new(workers);
            core.clock = std::time::Instant::now();
            *core.remaining.get_mut() = core.tasks.len();
            let now = &mut *core.now;
            *now.iteration.get_mut() = 0;
            *now.parity.get_mut() = self.parity;
            // The first iteration runs alone (stealable placement), to be measured.
            *now.spread.get_mut() = strict;
            *now.done.get_mut() = false;
            *now.failed.get_mut() = false;
            *now.started_ns.get_mut() = UNTIMED;
            *now.alone_ns.get_mut() = u64::MAX;
            *now.spread_iterations.get_mut() = 0;
            *lock_mutex(&core.error) = None;
        }
        let (core, data, buffers) = (&self.core, &self.data, &self.buffers);
        let parity = self.parity;
        // Complete iterations, once the root has served the replay.
        let served: Mutex<Option<u64>> = Mutex::new(None);
        // A stealable replay of one iteration runs it alone (module doc, "Execution"):
        // no driver would take a task of it, and each would cost the replay a wake-up of
        // its worker, to start and to end (a program replaying one iteration at a time
        // paid one per replay).
        let drivers = if core.strict || iterations > 1 {
            workers
        } else {
            1
        };
        let finished = rt.run(|s| {
            let mut spawned = Ok(());
            for w in 1..drivers {
                let driver = core.clone();
                spawned = s
                    .task("replay-driver", ())
                    .affinity(Affinity::worker(w).strict())
                    .spawn(move |ctx, ()| driver.drive(w, ctx.node()));
                if spawned.is_err() {
                    break;
                }
            }
            match spawned {
                Err(error) => {
                    // Nothing has started: the replay fails as it is, and the drivers
                    // already spawned return.
                    core.fail_with(error);
                    core.finish();
                }
                Ok(()) => {
                    core.attached[0].store(true, Ordering::Release);
                    if core.strict {
                        core.wait_for_drivers();
                    }
                    core.start_iteration(0);
                    core.drive(0, core.worker_node[0]);
                }
            }
            // Every iteration is over (the last task of the last one set `done`).
            let done = core.now.iteration.load(Ordering::Acquire);
            let complete = if core.now.failed.load(Ordering::Acquire) {
                done.saturating_sub(1)
            } else {
                done
            };
            // Published within the run, so that no other run binds to the data
            // meanwhile. Each complete iteration moved the contents to the other buffer.
            for (d, current) in current_versions(data, buffers, parity ^ (complete & 1) as usize) {
                d.inner.follow(current.clone());
            }
            *lock_mutex(&served) = Some(complete);
        });
        let Some(complete) = *lock_mutex(&served) else {
            // The run refused to start (a run in progress, from inside a task):
            // nothing changed.
            return Err(match finished {
                Err(run_error) => run_error,
                Ok(_) => {
                    skeleton(self.refuse("the replay's root did not run (a runtime bug)".into()))
                }
            });
        };
        self.parity ^= (complete & 1) as usize;
        self.replayed += complete;
        if let Some(buffers) = &self.buffers {
            for (rotation, expected) in buffers.iter().zip(&mut self.expected) {
                if let Some(current) = rotation.alternating.get(self.parity) {
                    *expected = current.clone();
                }
            }
        }
        let error = lock_mutex(&self.core.error).take();
        let mut report = match finished {
            Ok(finished) => finished.report,
            Err(run_error) => {
                if error.is_some() {
                    self.invalidate(format!("the replay's run failed: {}", run_error.error));
                }
                return Err(run_error);
            }
        };
        self.add_metrics(&mut report, rt, complete);
        match error {
            None => Ok(report),
            Some(error) => {
                self.invalidate(format!("iteration {} failed ({error})", self.replayed));
                Err(RunError {
                    error,
                    report: Box::new(report),
                })
            }
        }
    }

    /// A replay on an engine other than `threads` (the simulator): each iteration's
    /// tasks are submitted through the dynamic path, in recorded order, each bound to
    /// its home worker by an affinity hint (strict under strict placement), so that
    /// the engine models where the recorded placement puts tasks and buffers (deferred
    /// allocation puts each version on its producer's node). What the dynamic path
    /// costs per task is still paid: this evaluates the placement, not the replay's
    /// lower cost per task.
    fn replay_submitted(&mut self, rt: &Runtime, iterations: u64) -> Result<Report, RunError> {
        let skeleton = |error: Error| RunError {
            error,
            report: Box::new(rt.report_skeleton()),
        };
        {
            let _serialised = rt.no_run_in_progress("replay").map_err(skeleton)?;
            self.check_valid().map_err(skeleton)?;
        }
        if self.core.homes.is_empty() {
            let homes = self.place(rt.worker_nodes());
            let Some(core) = Arc::get_mut(&mut self.core) else {
                return Err(skeleton(self.refuse(
                    "the graph is still held by a replay (a runtime bug)".into(),
                )));
            };
            core.homes = homes;
        }
        let lists: Vec<crate::data::RecordedList> = self
            .core
            .tasks
            .iter()
            .map(|task| {
                self.accesses[task.accesses.start as usize..task.accesses.end as usize]
                    .iter()
                    .map(|a| {
                        let inner = &self.data[a.datum as usize].inner;
                        let elem = inner.elem_size;
                        (
                            inner.clone(),
                            a.mode,
                            a.offset / elem..(a.offset + a.bytes) / elem,
                        )
                    })
                    .collect()
            })
            .map(crate::data::RecordedList)
            .collect();
        let (core, base, strict) = (
            &self.core,
            self.replayed,
            self.placement == ReplayPlacement::Strict,
        );
        let finished = rt.run(|s| -> Result<(), Error> {
            for i in 0..iterations {
                for (t, task) in core.tasks.iter().enumerate() {
                    let home = core.homes[t] as usize;
                    let c = core.clone();
                    s.task(task.name.clone(), lists[t].clone())
                        .affinity(if strict {
                            Affinity::worker(home).strict()
                        } else {
                            Affinity::home(home)
                        })
                        .spawn(move |ctx, raw| {
                            let it = Iteration {
                                index: base + i,
                                worker: ctx.worker(),
                                node: ctx.node(),
                            };
                            (c.tasks[t].body)(&it, &raw)
                        })?;
                }
            }
            Ok(())
        });
        // The graph wrote its data: their current versions are its own.
        for (d, expected) in self.data.iter().zip(&mut self.expected) {
            *expected = d.inner.current();
        }
        let finished = match finished {
            Ok(finished) => finished,
            Err(run_error) => {
                self.invalidate(format!("a replay failed ({})", run_error.error));
                return Err(run_error);
            }
        };
        match finished.value {
            Ok(()) => {
                self.replayed += iterations;
                let mut report = finished.report;
                self.mark_report(&mut report, iterations);
                report
                    .settings
                    .push("replay_mode", "submitted with the recorded placement");
                Ok(report)
            }
            Err(error) => {
                self.invalidate(format!("a replay failed ({error})"));
                Err(RunError {
                    error,
                    report: Box::new(finished.report),
                })
            }
        }
    }

    /// First replay: decides where each task runs and allocates the rotated versions'
    /// buffers on their producers' nodes.
    fn prepare(&mut self, rt: &Runtime, versions: &'static VersionCounts) -> Result<(), Error> {
        let worker_node = rt.worker_nodes().to_vec();
        let workers = worker_node.len();
        let pools = rt.pools();
        let homes = self.place(&worker_node);
        let node_of_task = |t: u32| worker_node[homes[t as usize] as usize];
        let mut rotations = Vec::with_capacity(self.data.len());
        for d in &self.data {
            let mut rotation = Rotation::default();
            let bytes = d.inner.bytes();
            let oom = |e: locus_mem::pool::AllocError| Error::OutOfMemory {
                task: format!("replay of graph `{}`", self.name),
                bytes,
                message: e.to_string(),
            };
            if d.is_shared() {
                // Updated in place: nothing to allocate.
            } else if let Some(&last) = d.producers.last() {
                let node = node_of_task(last);
                for _ in 0..2 {
                    rotation
                        .alternating
                        .push(new_version(pools, versions, node, bytes).map_err(oom)?);
                }
                for &p in &d.producers[..d.producers.len() - 1] {
                    rotation
                        .middle
                        .push(new_version(pools, versions, node_of_task(p), bytes).map_err(oom)?);
                }
                // The contents so far go to the buffer of version 0 (zeros if never
                // written), once for the graph's lifetime.
                if let (Some(src), Some(dst)) =
                    (d.snapshot.buffer(), rotation.alternating[0].buffer())
                {
                    if bytes > 0 {
                        // SAFETY: no run is in progress (replays are runs, one at a
                        // time), so nothing writes either buffer; both hold `bytes`
                        // bytes of this datum, and they are distinct blocks.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), bytes)
                        };
                    }
                }
            } else {
                // Only read: its current version, made if it was never written.
                d.snapshot
                    .buffer_or_alloc(|| pools.alloc_zeroed(worker_node[0], bytes))
                    .map_err(oom)?;
            }
            rotations.push(rotation);
        }
        let mut views = [Vec::new(), Vec::new()];
        let mut meta = [Vec::new(), Vec::new()];
        for parity in 0..2 {
            for a in &self.accesses {
                let (view, m) = resolve(
                    &self.data[a.datum as usize],
                    &rotations[a.datum as usize],
                    a,
                    parity,
                );
                views[parity].push(view);
                meta[parity].push(m);
            }
        }
        let poison = self
            .accesses
            .iter()
            .map(|a| {
                let d = &self.data[a.datum as usize];
                (d.is_shared() && a.mode.writes()).then(|| d.inner.clone())
            })
            .collect();
        let victims = (0..workers)
            .map(|w| {
                let mut others: Vec<u32> =
                    (0..workers as u32).filter(|&v| v as usize != w).collect();
                others.sort_by_key(|&v| {
                    let v = v as usize;
                    (
                        rt.topology().distance(
                            locus_topo::NodeId(worker_node[w] as u32),
                            locus_topo::NodeId(worker_node[v] as u32),
                        ),
                        (v + workers - w) % workers,
                    )
                });
                others.into_boxed_slice()
            })
            .collect();
        let Some(core) = Arc::get_mut(&mut self.core) else {
            return Err(self.refuse("the graph is still held by a replay (a runtime bug)".into()));
        };
        core.homes = homes;
        core.views = views.map(Vec::into_boxed_slice);
        core.meta = meta.map(Vec::into_boxed_slice);
        core.poison = poison;
        core.victims = victims;
        core.worker_node = worker_node.into_boxed_slice();
        self.buffers = Some(rotations);
        self.parity = 0;
        Ok(())
    }

    /// Placement decided once, from the whole recorded data flow: each task goes to
    /// the node holding most of the bytes it reads (and of the shared data it writes in
    /// place), where the version a task reads lies on its producer's node, and an
    /// iteration's input on the node of the previous iteration's last writer (so the
    /// decision is made twice: the second time from where the first put the outputs,
    /// as after a first iteration). The first time, a node takes at most its share (its
    /// workers over all workers) of each level of the graph (tasks whose longest path
    /// from a root is as long, which may run at once), or as many as it has workers if
    /// that is more, so that the data, placed by their producers, spread; and an input
    /// not placed yet counts on the node of the first task whose largest read is one of
    /// its producer's outputs (where that producer will go), so that neighbouring blocks,
    /// which read each other's faces, share a node. The second time, tasks follow those
    /// data. Both times a node takes at most its share of all the tasks. Past its node's
    /// share, or with no data placed yet, a task goes to the node it reads most of among
    /// those with room, or the least loaded one. Both times, a task whose largest read is a version written
    /// earlier in the iteration goes where that version's producer went, whatever the
    /// shares: a block's successive updates (a stencil's sweeps) stay on one node, and
    /// its first update, spread with its level (a wavefront's diagonal), takes them
    /// all along. Within its node a task goes to the worker with the fewest tasks.
    fn place(&self, worker_node: &[usize]) -> Box<[u32]> {
        let n = self.core.tasks.len();
        let workers = worker_node.len();
        let nodes = worker_node.iter().max().map_or(1, |&m| m + 1);
        let mut node_workers: Vec<Vec<usize>> = vec![Vec::new(); nodes];
        for (w, &node) in worker_node.iter().enumerate() {
            node_workers[node].push(w);
        }
        // Tasks of one level of the graph (the longest path to them) can run at once:
        // each level is spread over the nodes by their workers.
        let mut level = vec![0usize; n];
        for (t, task) in self.core.tasks.iter().enumerate() {
            for &s in &self.core.succ[task.succ.start as usize..task.succ.end as usize] {
                level[s as usize] = level[s as usize].max(level[t] + 1);
            }
        }
        let follows = self.followed_producers();
        let levels = level.iter().max().map_or(0, |&l| l + 1);
        // The shares count the tasks placed by the rule, not those following a producer.
        let mut at_level = vec![0usize; levels];
        for (t, &l) in level.iter().enumerate() {
            at_level[l] += usize::from(follows[t].is_none());
        }
        let free = follows.iter().filter(|f| f.is_none()).count();
        // A node's share of `count` tasks: its workers over all workers.
        let part =
            |count: usize, m: usize| (count * node_workers[m].len()).div_ceil(workers.max(1));
        // Of a level, a node takes its share, or as many tasks as it has workers: those
        // run at once all the same.
        let cap = |l: usize, m: usize| part(at_level[l], m).max(node_workers[m].len());
        // The node of each task, by pass; the first pass sees the data where they are.
        let mut task_node: Vec<Option<usize>> = vec![None; n];
        // Where the first pass expects the outputs of each task writing a datum's last
        // version (the next iteration's input) to lie, before that task is placed: the
        // node of the first task whose largest read is one of them.
        let mut expected: Vec<Option<usize>> = vec![None; n];
        for pass in 0..2 {
            let previous = task_node.clone();
            // The first pass spreads each level; the second follows the data the first
            // spread, each node taking its share of all the tasks.
            let (buckets, bucket) = match pass {
                0 => (levels, &level[..]),
                _ => (1, &[][..]),
            };
            let share = |t: usize, m: usize| match pass {
                0 => cap(level[t], m),
                _ => part(free, m),
            };
            let mut load = vec![vec![0usize; nodes]; buckets];
            // Both times, a node takes at most its share of all the tasks.
            let mut total = vec![0usize; nodes];
            for (t, task) in self.core.tasks.iter().enumerate() {
                let load = &mut load[bucket.get(t).copied().unwrap_or(0)];
                if let Some(node) = follows[t].and_then(|p| task_node[p as usize]) {
                    task_node[t] = Some(node);
                    continue;
                }
                let mut bytes = vec![0u64; nodes];
                let mut near = vec![0u64; nodes];
                let mut claim = None;
                for a in &self.accesses[task.accesses.start as usize..task.accesses.end as usize] {
                    let d = &self.data[a.datum as usize];
                    let reads = a.mode.reads() || (d.is_shared() && a.mode.writes());
                    if !reads {
                        continue;
                    }
                    // The version read: a read-write of versioned data reads the one
                    // before the one it writes.
                    let read = if a.mode == Mode::ReadWrite && !d.is_shared() {
                        a.version - 1
                    } else {
                        a.version
                    };
                    let k = d.producers.len() as u32;
                    let node = if d.is_shared() || k == 0 {
                        d.snapshot.node()
                    } else if read == 0 {
                        // The previous iteration's output, once there is one.
                        let last = d.producers[k as usize - 1] as usize;
                        if pass == 0 && claim.map_or(true, |(_, b)| b < a.bytes) {
                            claim = Some((last, a.bytes));
                        }
                        if let Some(m) = expected[last].filter(|&m| m < nodes) {
                            near[m] += a.bytes as u64;
                        }
                        previous[last].or(d.snapshot.node())
                    } else {
                        task_node[d.producers[read as usize - 1] as usize]
                    };
                    if let Some(node) = node.filter(|&m| m < nodes) {
                        bytes[node] += a.bytes as u64;
                    }
                }
                let chosen = (0..nodes)
                    .filter(|&m| {
                        !node_workers[m].is_empty()
                            && load[m] < share(t, m)
                            && total[m] < part(free, m)
                    })
                    .max_by(|&a, &b| {
                        // Most bytes, then the least loaded relative to its workers,
                        // then the lowest index.
                        bytes[a]
                            .cmp(&bytes[b])
                            .then(near[a].cmp(&near[b]))
                            .then(
                                (load[b] * node_workers[a].len())
                                    .cmp(&(load[a] * node_workers[b].len())),
                            )
                            .then(b.cmp(&a))
                    })
                    .unwrap_or(worker_node[0]);
                load[chosen] += 1;
                total[chosen] += 1;
                task_node[t] = Some(chosen);
                if let Some((last, _)) = claim {
                    expected[last].get_or_insert(chosen);
                }
            }
        }
        // Within its node, a task goes to the worker with the fewest tasks of its level,
        // then the fewest tasks: the tasks that may run at once spread over the workers.
        let mut by_level: Vec<usize> = (0..n).collect();
        by_level.sort_by_key(|&t| level[t]);
        let mut per_worker = vec![0usize; workers];
        let mut per_worker_level = vec![0usize; workers];
        let mut homes = vec![0u32; n];
        let mut current = None;
        for t in by_level {
            if current != Some(level[t]) {
                current = Some(level[t]);
                per_worker_level.fill(0);
            }
            let ws = &node_workers[task_node[t].unwrap_or(worker_node[0])];
            let &w = ws
                .iter()
                .min_by_key(|&&w| (per_worker_level[w], per_worker[w], w))
                .expect("a chosen node has workers");
            per_worker[w] += 1;
            per_worker_level[w] += 1;
            homes[t] = w as u32;
        }
        homes.into_boxed_slice()
    }

    /// For each task, the producer of the version its largest read reads, when that
    /// version is written earlier in the iteration (see [`place`](Self::place)).
    fn followed_producers(&self) -> Vec<Option<u32>> {
        self.core
            .tasks
            .iter()
            .map(|task| {
                let accesses =
                    &self.accesses[task.accesses.start as usize..task.accesses.end as usize];
                let largest = accesses
                    .iter()
                    .filter(|a| a.mode.reads() && !self.data[a.datum as usize].is_shared())
                    .max_by_key(|a| a.bytes)?;
                // A read-write reads the version before the one it writes.
                let read = match largest.mode {
                    Mode::ReadWrite => largest.version - 1,
                    _ => largest.version,
                };
                let producers = &self.data[largest.datum as usize].producers;
                (read >= 1).then(|| producers[read as usize - 1])
            })
            .collect()
    }

    /// The replay's counters in the report, in place of the drivers' (which touch no
    /// data), and the settings that mark it as a replay.
    fn add_metrics(&self, report: &mut Report, rt: &Runtime, complete: u64) {
        report.workers.clear();
        report.add_counters(
            &self.core.counters,
            rt.worker_nodes(),
            rt.topology().num_nodes(),
        );
        report.tasks = self.core.counters.slots().map(|c| c.tasks.get()).sum();
        report.control_tasks = 0;
        self.mark_report(report, complete);
        report.settings.push(
            "replay_spread_iterations",
            self.core.now.spread_iterations.load(Ordering::Relaxed),
        );
    }

    fn mark_report(&self, report: &mut Report, complete: u64) {
        report.settings.push("replay", self.name.clone());
        report.settings.push("replayed_iterations", complete);
        report
            .settings
            .push("replay_tasks_per_iteration", self.core.tasks.len());
        report
            .settings
            .push("replay_placement", self.placement.name());
    }
}

/// Each rotated datum with the graph's version holding its contents when they are in
/// alternating buffer `parity` (module doc, "Buffers").
fn current_versions<'g>(
    data: &'g [RecordedDatum],
    buffers: &'g Option<Vec<Rotation>>,
    parity: usize,
) -> impl Iterator<Item = (&'g RecordedDatum, &'g VersionRef)> {
    buffers
        .iter()
        .flatten()
        .zip(data)
        .filter_map(move |(rotation, d)| rotation.alternating.get(parity).map(|v| (d, v)))
}

/// A version of `bytes` bytes owning a zeroed block on `node`.
fn new_version(
    pools: &Arc<Pools>,
    versions: &'static VersionCounts,
    node: usize,
    bytes: usize,
) -> Result<VersionRef, locus_mem::pool::AllocError> {
    let v = Version::initial(bytes, versions, None);
    v.buffer_or_alloc(|| pools.alloc_zeroed(node, bytes))?;
    Ok(v)
}

/// Where access `a` lies when the datum's contents are in alternating buffer `parity`.
fn resolve(
    d: &RecordedDatum,
    rotation: &Rotation,
    a: &RecordedAccess,
    parity: usize,
) -> (RawView, AccessMeta) {
    let k = d.producers.len() as u32;
    let version = |j: u32| -> &Version {
        if d.is_shared() || k == 0 {
            &d.snapshot
        } else if j == 0 {
            &rotation.alternating[parity]
        } else if j == k {
            &rotation.alternating[1 - parity]
        } else {
            &rotation.middle[j as usize - 1]
        }
    };
    let at = |j: u32| -> (*mut u8, u32) {
        let v = version(j);
        let buffer = v.buffer();
        let node = buffer.map_or(0, |b| b.main_node()) as u32;
        let ptr = match buffer {
            // SAFETY: the access's range was checked against the datum's length at
            // recording, and the buffer holds the whole datum.
            Some(b) if d.inner.bytes() > 0 => unsafe { b.as_mut_ptr().add(a.offset) },
            // No memory to view: an aligned, non-null pointer for empty views.
            _ => aligned_dangling(),
        };
        (ptr, node)
    };
    let (ptr, node) = at(a.version);
    let reads = a.mode.reads();
    let writes = a.mode.writes();
    let versioned_rw = a.mode == Mode::ReadWrite && !d.is_shared();
    let (read_node, copy_from) = if versioned_rw {
        let (input, input_node) = at(a.version - 1);
        (Some(input_node), input.cast_const())
    } else {
        (reads.then_some(node), std::ptr::null())
    };
    (
        RawView {
            ptr,
            bytes: a.bytes,
        },
        AccessMeta {
            read_node,
            write_node: writes.then_some(node),
            copy_from,
        },
    )
}

/// A non-null pointer aligned for any element type (at most 64 bytes), for views of
/// no memory.
fn aligned_dangling() -> *mut u8 {
    std::ptr::NonNull::<[u8; 64]>::dangling().as_ptr().cast()
}

impl Core {
    /// Pushes the current iteration's roots to their home workers, waking those that
    /// sleep, or, for an iteration run alone, to the caller's worker `w`.
    fn start_iteration(&self, w: usize) {
        let now = &*self.now;
        let spread = now.spread.load(Ordering::Relaxed);
        // Timed: an iteration run alone while what one costs alone is still to be
        // decided (once one took less than a wake-up, every later one runs alone).
        let timed = !spread
            && self.queues.len() > 1
            && now.alone_ns.load(Ordering::Relaxed) >= SPREAD_ABOVE_NS;
        now.started_ns.store(
            match timed {
                true => self.clock.elapsed().as_nanos() as u64,
                false => UNTIMED,
            },
            Ordering::Relaxed,
        );
        if spread {
            now.spread_iterations.fetch_add(1, Ordering::Relaxed);
            for &r in self.roots.iter() {
                self.push(r, self.homes[r as usize] as usize);
            }
            self.wake(self.root_homes.iter().map(|&h| h as usize), w);
        } else {
            for &r in self.roots.iter() {
                self.push(r, w);
            }
        }
    }

    /// Whether the next iteration, the `next`-th of the replay, is spread over the
    /// workers, from what the one that just ended took (module doc, "Execution").
    #[inline(never)]
    fn spread_next(&self, next: u64) -> bool {
        if self.strict {
            return true;
        }
        if self.queues.len() == 1 {
            // One worker: spread or alone, it runs every task.
            return false;
        }
        let now = &*self.now;
        let started = now.started_ns.load(Ordering::Relaxed);
        if started != UNTIMED {
            let took = (self.clock.elapsed().as_nanos() as u64).saturating_sub(started);
            now.alone_ns.fetch_min(took, Ordering::Relaxed);
        }
        now.alone_ns.load(Ordering::Relaxed) >= SPREAD_ABOVE_NS && next % PROBE_EVERY != 0
    }

    /// Announces tasks just queued on the queues of `homes` (module doc, "Execution")
    /// and wakes those of them, other than the caller's worker `w`, that sleep.
    #[cold]
    fn wake(&self, homes: impl IntoIterator<Item = usize>, w: usize) {
        // Only the homes are woken, searching drivers or not.
        if self.sleep.announce(false) {
            for h in homes {
                if h != w {
                    self.sleep.wake(h);
                }
            }
        }
    }

    /// Ends the replay: every driver returns, sleeping ones once woken.
    fn finish(&self) {
        self.now.done.store(true, Ordering::Release);
        self.sleep.wake_all();
    }

    /// Strict placement: waits until every worker's driver serves the replay, so that
    /// no task starts elsewhere than home; after [`DRIVER_GRACE`] the replay starts
    /// anyway, and the queues of drivers not started yet are served by the others.
    fn wait_for_drivers(&self) {
        let since = std::time::Instant::now();
        while !self.attached.iter().all(|a| a.load(Ordering::Acquire))
            && since.elapsed() < DRIVER_GRACE
        {
            std::thread::yield_now();
        }
    }

    /// Queues task `t` on worker `to`'s queue.
    #[inline]
    fn push(&self, t: u32, to: usize) {
        // Each task is queued at most once per iteration, and every queue has room for
        // all the tasks of its worker (of the iteration, under stealable placement).
        if let Err(t) = self.queues[to].push(t) {
            debug_assert!(false, "a replay queue overflowed");
            self.queues[0].force_push(t);
        }
    }

    /// Serves the replay as worker `w` (on `node`) until every iteration is done; idle,
    /// it spins for [`SPIN_BEFORE_SLEEP`], then sleeps until woken (module doc,
    /// "Execution").
    fn drive(&self, w: usize, node: usize) {
        self.attached[w].store(true, Ordering::Release);
        let backoff = Backoff::new();
        let mut idle_since: Option<std::time::Instant> = None;
        loop {
            // Tasks of other nodes are taken only by a worker idle for a while: a
            // stolen task reads and writes remote memory.
            let remote = idle_since.is_some_and(|s| s.elapsed() >= REMOTE_AFTER);
            if let Some(t) = self.find(w, remote) {
                self.run_from(t, w, node);
                backoff.reset();
                idle_since = None;
                continue;
            }
            if self.now.done.load(Ordering::Acquire) {
                return;
            }
            let since = *idle_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() < SPIN_BEFORE_SLEEP {
                // Spinning, never yielding: a yield gives the CPU away for as long as
                // the other process's time slice lasts.
                backoff.spin();
                continue;
            }
            // The engine's protocol (engine/threads/README.md, "Going to sleep"):
            // registered as a sleeper, one more look, then sleep until woken. Drivers
            // do not search: a woken one is no searcher, and it wakes nobody.
            self.sleep.prepare(w, false);
            if self.any_for(w) {
                // Taken at the loop's top (idle this long, from any node).
                self.sleep.cancel(w);
                continue;
            }
            self.sleep.wait(w, &self.now.done, false);
            backoff.reset();
            idle_since = None;
        }
    }

    /// Whether a task that worker `w` may take, wherever, is queued (the last look
    /// before sleeping).
    fn any_for(&self, w: usize) -> bool {
        !self.queues[w].is_empty()
            || (self.now.spread.load(Ordering::Relaxed)
                && self.victims[w].iter().any(|&v| {
                    let v = v as usize;
                    (!self.strict || !self.attached[v].load(Ordering::Acquire))
                        && !self.queues[v].is_empty()
                }))
    }

    /// A ready task for worker `w`: its own, then (stealable) those of the workers of
    /// its node, then, with `remote`, of the other nodes nearest first; under strict
    /// placement only those of workers whose driver has not started.
    fn find(&self, w: usize, remote: bool) -> Option<u32> {
        if let Some(t) = self.queues[w].pop() {
            return Some(t);
        }
        if !self.now.spread.load(Ordering::Relaxed) {
            // An iteration run alone is its worker's.
            return None;
        }
        let node = self.worker_node[w];
        self.victims[w].iter().find_map(|&v| {
            let v = v as usize;
            let allowed = if self.strict {
                !self.attached[v].load(Ordering::Acquire)
            } else {
                remote || self.worker_node[v] == node
            };
            if allowed {
                self.queues[v].pop()
            } else {
                None
            }
        })
    }

    /// Runs `t` and then, while one becomes ready, one of its successors directly.
    fn run_from(&self, mut t: u32, w: usize, node: usize) {
        loop {
            self.execute(t, w, node);
            let task = &self.tasks[t as usize];
            let mut next = None;
            let spread = self.now.spread.load(Ordering::Relaxed);
            // Whether another worker's queue got a task.
            let mut others = false;
            for &s in &self.succ[task.succ.start as usize..task.succ.end as usize] {
                let pending = &self.pending[s as usize];
                // AcqRel: the decrement reaching zero acquires every predecessor's
                // writes (each released them with its own decrement).
                if pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                    if !spread {
                        // An iteration run alone: every task is this worker's.
                        if next.is_none() {
                            next = Some(s);
                        } else {
                            self.push(s, w);
                        }
                        continue;
                    }
                    // Run directly: a task of this worker (strict), or of its node.
                    let home = self.homes[s as usize] as usize;
                    let here = match self.strict {
                        true => home == w,
                        false => self.worker_node[home] == self.worker_node[w],
                    };
                    if next.is_none() && here {
                        next = Some(s);
                    } else {
                        self.push(s, home);
                        others |= home != w;
                    }
                }
            }
            if others {
                // The homes of every successor: a superset of those that got a task.
                let succ = &self.succ[task.succ.start as usize..task.succ.end as usize];
                self.wake(succ.iter().map(|&s| self.homes[s as usize] as usize), w);
            }
            // AcqRel: the last task of the iteration acquires every task's work
            // before the next iteration reuses the buffers.
            if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.end_iteration(w);
            }
            match next {
                Some(s) => t = s,
                None => return,
            }
        }
    }

    /// Called by worker `w` finishing an iteration's last task: starts the next one,
    /// or ends the replay.
    #[inline(never)]
    fn end_iteration(&self, w: usize) {
        let now = &*self.now;
        let i = now.iteration.load(Ordering::Relaxed) + 1;
        now.parity
            .store(1 - now.parity.load(Ordering::Relaxed), Ordering::Relaxed);
        self.remaining.store(self.tasks.len(), Ordering::Relaxed);
        // Release: pairs with the Acquire load of `done` and of `iteration` after the
        // run (and the queues publish the rest to the next iteration's tasks).
        now.iteration.store(i, Ordering::Release);
        if i == self.iterations || now.failed.load(Ordering::Acquire) {
            self.finish();
        } else {
            now.spread.store(self.spread_next(i), Ordering::Relaxed);
            self.start_iteration(w);
        }
    }

    /// Runs task `t`'s body for the current iteration on worker `w`.
    fn execute(&self, t: u32, w: usize, node: usize) {
        let task = &self.tasks[t as usize];
        // Its predecessors are done for this iteration; the next decrements come after
        // the iteration ends.
        self.pending[t as usize].store(task.preds, Ordering::Relaxed);
        if self.now.failed.load(Ordering::Relaxed) {
            return;
        }
        let parity = self.now.parity.load(Ordering::Relaxed);
        let range = task.accesses.start as usize..task.accesses.end as usize;
        let views = &self.views[parity][range.clone()];
        let meta = &self.meta[parity][range];
        for (v, m) in views.iter().zip(meta) {
            if !m.copy_from.is_null() {
                // SAFETY: a read-write of versioned data: its input version's buffer
                // (produced by a predecessor, or the iteration's input) and its output's
                // are distinct blocks of the datum's size, which only this task writes.
                unsafe { std::ptr::copy_nonoverlapping(m.copy_from, v.ptr, v.bytes) };
            }
        }
        let it = Iteration {
            index: self.base + self.now.iteration.load(Ordering::Relaxed),
            worker: w,
            node,
        };
        let start_ns = self.observer.as_ref().map(ReplayObserver::now_ns);
        match catch_unwind(AssertUnwindSafe(|| (task.body)(&it, views))) {
            Ok(()) => {
                if let (Some(o), Some(start_ns)) = (&self.observer, start_ns) {
                    self.observe(o, t, w, node, start_ns);
                }
                let c = self.counters.worker(w);
                for (v, m) in views.iter().zip(meta) {
                    if let Some(n) = m.read_node {
                        c.read_bytes[n as usize].add(v.bytes as u64);
                    }
                    if let Some(n) = m.write_node {
                        c.write_bytes[n as usize].add(v.bytes as u64);
                    }
                }
                c.tasks.add(1);
            }
            Err(payload) => {
                let name = task.name.to_string();
                for d in self.poison[task.accesses.start as usize..task.accesses.end as usize]
                    .iter()
                    .flatten()
                {
                    if let Some(shared) = &d.shared {
                        shared.poison(&name);
                    }
                }
                let error = match payload.downcast::<crate::error::TaskFailure>() {
                    Ok(failure) => Error::TaskFailed {
                        task: name,
                        message: failure.0,
                    },
                    Err(payload) => {
                        let message = super::panic_message(&*payload);
                        super::drop_payload(payload);
                        Error::TaskPanicked {
                            task: name,
                            message,
                        }
                    }
                };
                self.fail_with(error);
            }
        }
    }

    /// Shows task `t`, run by worker `w` from `start_ns` to now, to the observer.
    fn observe(&self, o: &ReplayObserver, t: u32, w: usize, node: usize, start_ns: u64) {
        let task = &self.tasks[t as usize];
        let parity = self.now.parity.load(Ordering::Relaxed);
        let range = task.accesses.start as usize..task.accesses.end as usize;
        let accesses = self.views[parity][range.clone()]
            .iter()
            .zip(&self.meta[parity][range])
            .flat_map(|(v, m)| {
                let at = |n: Option<u32>, input| {
                    n.map(|n| AccessInfo {
                        bytes: v.bytes as u64,
                        node: Some(n as usize),
                        input,
                    })
                };
                at(m.read_node, true)
                    .into_iter()
                    .chain(at(m.write_node, false))
            });
        let span = TaskSpan {
            id: REPLAY_KEY | u64::from(t),
            name: &task.name,
            worker: w,
            node,
            start_ns,
            end_ns: o.now_ns(),
            bytes: TaskBytes::of(node, accesses),
        };
        if let Err(error) = crate::observe::guarded("task", || o.observer.task(&span)) {
            self.fail_with(error);
        }
    }

    /// Records the replay's first error; the rest of the iteration drains unrun.
    fn fail_with(&self, error: Error) {
        let mut first = lock_mutex(&self.error);
        if first.is_none() {
            *first = Some(error);
        }
        self.now.failed.store(true, Ordering::Release);
    }
}
