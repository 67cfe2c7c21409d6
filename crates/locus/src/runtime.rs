//! [`Runtime`]: workers on a topology, a configuration, and runs of programs.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use locus_mem::pool::{PoolConfig, Pools};
use locus_mem::region::{RegionConfig, RegionPolicy};
use locus_topo::{CpuId, NodeId, Topology};

use crate::config::{AllocMode, Config, Migration, ProcBind, StealKind};
use crate::data::partition::{self, Partition, Parts};
use crate::data::shared::SharedSetup;
use crate::data::version::CountsLease;
use crate::data::{lock_mutex, Binding, Data, DataInner, Element};
use crate::engine::threads::MAILBOX_CAPACITY;
use crate::engine::{Engine, EngineFactory, EngineSetup, Threads};
use crate::error::{Error, RunError};
use crate::graph::{current_executor, Graph, Recorder, RunState, Scope, Task, TaskCtx};
use crate::metrics::{
    MemoryReport, MigrationReport, Report, RunCounters, Settings, TopologySummary, VersionsReport,
};
use crate::observe::{Observer, TraceRecorder};
use crate::sched::push::{Heuristic, PushSettings, DEFAULT_THRESHOLD_BYTES, DEFAULT_WEIGHTS};
use crate::sched::{HomeRegions, ReadyPolicy};

mod memory;
mod team;
pub use memory::{Migrated, MigrationCounts};

static NEXT_RUNTIME_ID: AtomicU64 = AtomicU64::new(1);

/// The default window is this many tasks per worker...
pub const DEFAULT_WINDOW_PER_WORKER: usize = 64;
/// ... and at least this many tasks.
pub const DEFAULT_WINDOW_MIN: usize = 1024;

/// The window a runtime was asked for.
#[derive(Clone, Copy, Debug)]
enum WindowSetting {
    /// [`DEFAULT_WINDOW_PER_WORKER`] tasks per worker, at least [`DEFAULT_WINDOW_MIN`].
    Default,
    /// At most this many tasks (`Some`), or no bound (`None`).
    Chosen(Option<usize>),
}

/// Builds a [`Runtime`]: topology, configuration, number of workers, window.
pub struct RuntimeBuilder {
    topology: Option<Topology>,
    config: Config,
    alloc: Option<AllocMode>,
    push_threshold: u64,
    push_weights: (f64, f64),
    vicinity: Option<usize>,
    home_regions: HomeRegions,
    last_victim_first: bool,
    steal_half: bool,
    engine: Option<Box<dyn EngineFactory + Send>>,
    threads: Option<usize>,
    proc_bind: ProcBind,
    window: WindowSetting,
    node_limit: Option<u64>,
    huge_pages: bool,
    shared_placement: RegionPolicy,
    observer: Option<Arc<dyn Observer>>,
    trace: Option<std::path::PathBuf>,
    migration: Migration,
    worker_stack: usize,
    replay_placement: crate::graph::ReplayPlacement,
}

/// Bytes of stack of each worker thread unless [`RuntimeBuilder::worker_stack_size`]
/// says otherwise: 8 MiB, a Linux main thread's.
pub const DEFAULT_WORKER_STACK: usize = 8 << 20;

/// The most workers a runtime has: each keeps its steal victims in order, so the
/// runtime holds a number of entries that grows as the square of its workers.
pub const MAX_WORKERS: usize = 4096;

/// The smallest worker stack [`RuntimeBuilder::worker_stack_size`] accepts.
pub const MIN_WORKER_STACK: usize = 256 << 10;

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("config", &self.config)
            .field("topology", &self.topology.as_ref().map(Topology::name))
            .field("threads", &self.threads)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            topology: None,
            config: Config::DsaOpt,
            alloc: None,
            push_threshold: DEFAULT_THRESHOLD_BYTES,
            push_weights: DEFAULT_WEIGHTS,
            vicinity: None,
            home_regions: HomeRegions::Largest,
            last_victim_first: false,
            steal_half: false,
            engine: None,
            threads: None,
            proc_bind: ProcBind::Spread,
            window: WindowSetting::Default,
            node_limit: None,
            huge_pages: false,
            shared_placement: RegionPolicy::Interleave,
            observer: None,
            trace: None,
            migration: Migration::None,
            worker_stack: DEFAULT_WORKER_STACK,
            replay_placement: crate::graph::ReplayPlacement::Stealable,
        }
    }
}

impl RuntimeBuilder {
    /// The topology; default: the host. A synthetic topology or preset that is not laid
    /// over the host yet is laid over its CPUs (virtual nodes).
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// The scheduling configuration; default: `dsa-opt` (input-only work-pushing with
    /// deferred allocation, the best of paper 1's configurations), as on the command
    /// line.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Overrides the configuration's allocation mode. Output-only and weighted
    /// work-pushing cannot combine with deferred allocation (paper 1 section 3.3).
    pub fn allocation(mut self, mode: AllocMode) -> Self {
        self.alloc = Some(mode);
        self
    }

    /// Work-pushing keeps tasks that access fewer bytes than this with their activator.
    /// Default: [`DEFAULT_THRESHOLD_BYTES`] (16 KiB).
    pub fn push_threshold(mut self, bytes: u64) -> Self {
        self.push_threshold = bytes;
        self
    }

    /// Weights of input and output bytes for `push-weighted`. Default: 1 and 1 (the
    /// topology's read and write cost factors already differ).
    pub fn push_weights(mut self, read: f64, write: f64) -> Self {
        self.push_weights = (read, write);
        self
    }

    /// For `home`: the size of the steal vicinities, in workers (1: no stealing; the
    /// number of workers: full stealing). Default: full stealing.
    pub fn vicinity(mut self, workers: usize) -> Self {
        self.vicinity = Some(workers);
        self
    }

    /// For `home`: whether only the largest region of a task decides its home, or all
    /// of them. Default: the largest.
    pub fn home_regions(mut self, regions: HomeRegions) -> Self {
        self.home_regions = regions;
        self
    }

    /// Whether a thief first retries the last worker it stole from, before its steal
    /// plan's order (OpenStream's refinement). Default: off; on a 2-core, one-node machine the
    /// overhead benchmark shows no difference (see the README of the threads engine).
    pub fn last_victim_first(mut self, on: bool) -> Self {
        self.last_victim_first = on;
        self
    }

    /// Whether a thief takes about half of its victim's deque at once (crossbeam's
    /// batch steal) instead of one task. Default: off. Measured on a 2-core, one-node machine
    /// (README of the threads engine): 7-12% less time per task on the overhead graph,
    /// mixed on kernels, locality unchanged; the simulator models the same batches.
    pub fn steal_half(mut self, on: bool) -> Self {
        self.steal_half = on;
        self
    }

    /// Bytes of stack of each worker thread; default [`DEFAULT_WORKER_STACK`] (8 MiB),
    /// at least [`MIN_WORKER_STACK`] (256 KiB). A task waiting for its children
    /// ([`TaskCtx::wait`](crate::TaskCtx::wait), [`TaskCtx::fetch`](crate::TaskCtx::fetch))
    /// runs other tasks on its worker's stack meanwhile, so waits nest: a recursion
    /// that waits at every level needs a stack as deep as it is. Past a quarter of the
    /// stack from its end (at most 1 MiB) the run fails with
    /// [`Error::StackExhausted`] instead of overflowing it. The stack is reserved, not
    /// committed: only the pages a worker touches take memory.
    ///
    /// ```
    /// # use locus::Runtime;
    /// let deep = Runtime::builder().worker_stack_size(64 << 20).build()?;
    /// assert!(Runtime::builder().worker_stack_size(4096).build().is_err());
    /// # Ok::<(), locus::Error>(())
    /// ```
    pub fn worker_stack_size(mut self, bytes: usize) -> Self {
        self.worker_stack = bytes;
        self
    }

    /// The engine; default: [`Threads`], one pinned OS thread per worker. The
    /// simulator of crate `locus-sim` is the other engine.
    pub fn engine(mut self, factory: impl EngineFactory + Send + 'static) -> Self {
        self.engine = Some(Box::new(factory));
        self
    }

    /// Number of workers; default: one per CPU of the topology. Fewer workers take CPUs
    /// as [`proc_bind`](Self::proc_bind) says: by default round-robin over the nodes
    /// (one per node in turn), so with fewer workers than nodes some nodes get none:
    /// their memory still serves the others, and [`Runtime::nodes_without_workers`]
    /// and the report's settings name them.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Which CPUs fewer workers than CPUs take: one per node in turn
    /// ([`ProcBind::Spread`], the default) or node after node ([`ProcBind::Close`]).
    ///
    /// ```
    /// # use locus::{ProcBind, Runtime, Topology};
    /// let rt = Runtime::builder()
    ///     .topology(Topology::from_spec("4x2")?)
    ///     .threads(4)
    ///     .proc_bind(ProcBind::Close)
    ///     .build()?;
    /// assert_eq!(rt.worker_nodes(), &[0, 0, 1, 1]);
    /// # Ok::<(), locus::Error>(())
    /// ```
    pub fn proc_bind(mut self, bind: ProcBind) -> Self {
        self.proc_bind = bind;
        self
    }

    /// Bounds the number of submitted-but-unfinished tasks to `tasks`. Default:
    /// [`DEFAULT_WINDOW_PER_WORKER`] tasks per worker, at least [`DEFAULT_WINDOW_MIN`]:
    /// enough look-ahead for the workers, while a long control program cannot hold
    /// every version it will ever write at once (under immediate allocation each
    /// submitted writer holds a buffer). [`window_bound`](Self::window_bound) takes an
    /// `Option` (`None`: no bound).
    ///
    /// The run's root (the control program given to [`Runtime::run`]) waits for room:
    /// when the run is over the bound, its next submission runs ready tasks until a
    /// few tasks (six, or as many as the bound allows) have room under it, so that
    /// submitting and helping alternate in short runs rather than task by task. A
    /// control task ([`Scope::spawn_control`]) over the bound
    /// runs ready tasks while it finds some, and goes on submitting when it finds none
    /// (the tasks filling the window may be waiting for its own tokens). Other tasks
    /// spawning children never wait, since their children may need their outputs:
    /// waiting would deadlock. Every task counts in the window all the same, so the
    /// window bounds what the control program holds without ever deadlocking. (A
    /// worker may count up to 16 tasks it finished as still outstanding until it next
    /// runs out of work: it holds them back from the run-wide count, and spends them
    /// on the tasks it submits, docs/architecture.md, "finish".)
    ///
    /// The argument is a plain `usize`, so that one whose type comes from the call
    /// (`window(text.parse()?)`) keeps compiling.
    ///
    /// ```
    /// # use locus::Runtime;
    /// let bounded = Runtime::builder().window(16).build()?;
    /// let parsed = Runtime::builder().window("16".parse()?).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window(self, tasks: usize) -> Self {
        self.window_bound(Some(tasks))
    }

    /// Bounds the number of submitted-but-unfinished tasks (`Some(n)`, as
    /// [`window(n)`](Self::window)), or not (`None`).
    ///
    /// ```
    /// # use locus::Runtime;
    /// let unbounded = Runtime::builder().window_bound(None).build()?;
    /// let bounded = Runtime::builder().window_bound(Some(16)).build()?;
    /// # Ok::<(), locus::Error>(())
    /// ```
    pub fn window_bound(mut self, tasks: Option<usize>) -> Self {
        self.window = WindowSetting::Chosen(tasks);
        self
    }

    /// Limits the memory of each node: the bytes of task buffers in use from the node's
    /// pool plus the pages of shared data placed on the node (or, for first touch,
    /// reserved there until touched). A buffer beyond it falls back to the nearest node
    /// that has room, and a task whose buffer fits nowhere fails with
    /// [`Error::OutOfMemory`]. Shared data behaves the same way where its policy names
    /// one node: a datum bound to a node goes to the nearest node with room for all its
    /// pages, and a first touch places pages on the nearest node with room; interleaved
    /// and blocked data need room for their share on every node. Shared data that fits
    /// nowhere is refused with [`Error::OutOfMemory`] naming the datum. Default: no limit.
    pub fn node_limit(mut self, bytes: u64) -> Self {
        self.node_limit = Some(bytes);
        self
    }

    /// Whether the memory pools advise the kernel to back their chunks of 2 MiB or more
    /// with transparent huge pages (`madvise(MADV_HUGEPAGE)`; `locus_mem::pool`,
    /// "Huge pages"): fewer page faults and TLB misses on large versions, where the
    /// kernel's setting allows them. A chunk is bound to one node as a whole, so
    /// placement is unchanged. Shared data never takes huge pages (its placement is by
    /// page). Default: off (the pool's README, "Huge pages", gives the measurements).
    /// The report's settings say `huge_pages=true` when on.
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = on;
        self
    }

    /// What a task does with shared data that lies on another node than the one it
    /// starts on ([`crate::sched::migrate`]): access it there ([`Migration::None`], the
    /// default), migrate it first ([`Migration::Now`], [`Migration::NextTouch`]), or
    /// migrate when that costs less than the remote accesses it saves over the tasks
    /// already submitted that use it ([`Migration::Auto`]). The report counts the pages
    /// moved by reason (`migration`).
    pub fn migration(mut self, migration: Migration) -> Self {
        self.migration = migration;
        self
    }

    /// The placement of the graphs [`Runtime::record`] makes (docs/guide.md,
    /// "Recorded graphs"): [`ReplayPlacement::Stealable`](crate::graph::ReplayPlacement)
    /// by default; [`Graph::set_placement`](crate::graph::Graph::set_placement) changes
    /// one graph's.
    pub fn replay_placement(mut self, placement: crate::graph::ReplayPlacement) -> Self {
        self.replay_placement = placement;
        self
    }

    /// Where data created by [`Runtime::data`] and [`Scope::data`] goes when the
    /// configuration's data model is shared (`shm-base`). Default: interleaved over all
    /// nodes, page by page.
    pub fn shared_placement(mut self, policy: RegionPolicy) -> Self {
        self.shared_placement = policy;
        self
    }

    /// Writes a Chrome trace of every run to `path` (each run rewrites the file with
    /// itself and the runs before it, one after another): one row per worker, one slice
    /// per task, named by its kind; open it in the Perfetto UI
    /// (<https://ui.perfetto.dev>, "Open trace file"). See [`crate::observe`]. Each
    /// run's trace replaces the file whole, once written
    /// ([`observe::replace_file`](crate::observe::replace_file)): a run that is killed
    /// or fails to write it leaves the previous file. `build` checks that the file can be
    /// written without creating or truncating it ([`observe::check_replaceable`](
    /// crate::observe::check_replaceable)), and fails with [`Error::Config`] if it
    /// cannot; an error writing it after a run is printed on stderr (install a
    /// [`TraceRecorder`] with [`observer`](Self::observer) to handle it yourself).
    /// Both engines honour it. Default: no trace. Replaces an observer set before.
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.trace = Some(path.into());
        self.observer = None;
        self
    }

    /// Installs an observer that sees every task of every run ([`crate::observe`]),
    /// for example a [`TraceRecorder`]. Default: none, and then observation costs one
    /// predictable branch per task. Replaces a trace set before.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self.trace = None;
        self
    }

    /// Starts the workers.
    pub fn build(self) -> Result<Runtime, Error> {
        if self.worker_stack < MIN_WORKER_STACK {
            return Err(Error::Config(format!(
                "a worker stack of {} bytes is too small: at least {MIN_WORKER_STACK}",
                self.worker_stack
            )));
        }
        let config = self.config;
        let alloc = self.alloc.unwrap_or(config.alloc_mode());
        let push = config.push_heuristic().map(|h| match h {
            Heuristic::Weighted { .. } => Heuristic::Weighted {
                read: self.push_weights.0,
                write: self.push_weights.1,
            },
            other => other,
        });
        if let Some(h) = push {
            if alloc == AllocMode::Deferred && h.uses_outputs() {
                return Err(Error::Config(format!(
                    "`{config}` cannot use deferred allocation: its heuristic needs the \
                     nodes of output buffers when the task is activated, and deferred \
                     allocation places them only when the task runs (paper 1 section 3.3); \
                     use `dsa-opt` (input-only pushing with deferred allocation)"
                )));
            }
            let (r, w) = self.push_weights;
            if !(r.is_finite() && w.is_finite() && r >= 0.0 && w >= 0.0) {
                return Err(Error::Config(format!(
                    "push weights must be finite and non-negative, got {r} and {w}"
                )));
            }
        }
        let ready_policy = match push {
            Some(heuristic) => ReadyPolicy::pushing(PushSettings {
                heuristic,
                threshold_bytes: self.push_threshold,
            }),
            None if config == Config::Home => ReadyPolicy::home(self.home_regions),
            None if config == Config::Bf => ReadyPolicy::breadth_first(),
            None => ReadyPolicy::keep_local(),
        };
        if self.vicinity == Some(0) {
            return Err(Error::Config(
                "a steal vicinity holds at least one worker".into(),
            ));
        }
        let observer = match (self.observer, &self.trace) {
            (Some(observer), _) => Some(observer),
            (None, Some(path)) => {
                // Fails early, and clearly, on a path that cannot be written; a trace
                // already there stays until a run replaces it.
                crate::observe::check_replaceable(path).map_err(|e| {
                    Error::Config(format!("cannot write the trace to {}: {e}", path.display()))
                })?;
                Some(Arc::new(TraceRecorder::to_file(path.clone())) as Arc<dyn Observer>)
            }
            (None, None) => None,
        };
        // Replayed tasks reach the observer too, on the engine's clock.
        let (observer, replay_observer) = crate::graph::ReplayObserver::tap(observer);
        let factory: Box<dyn EngineFactory + Send> = match self.engine {
            Some(factory) => factory,
            None => Box::new(Threads),
        };
        let topology = factory.prepare_topology(match self.topology {
            Some(t) => t,
            None => Topology::host()?,
        })?;
        let cpus = worker_cpus(&topology, self.threads, self.proc_bind)?;
        let window = match self.window {
            WindowSetting::Chosen(Some(0)) => {
                return Err(Error::Config(
                    "the window must allow at least one task".into(),
                ))
            }
            WindowSetting::Chosen(window) => window,
            WindowSetting::Default => {
                Some((DEFAULT_WINDOW_PER_WORKER * cpus.len()).max(DEFAULT_WINDOW_MIN))
            }
        };
        let worker_node: Vec<usize> = cpus
            .iter()
            .map(|&c| topology.node_of_cpu(c).index())
            .collect();

        let nodes = topology.num_nodes();
        let fallback = (0..nodes)
            .map(|n| {
                topology
                    .nodes_by_distance(NodeId(n as u32))
                    .into_iter()
                    .flatten()
                    .map(NodeId::index)
                    .collect()
            })
            .collect();
        let pools = PoolConfig {
            nodes,
            fallback,
            bind: !topology.is_virtual() && locus_mem::placement::numa_available(),
            node_limit: self.node_limit,
            accounting_only: false,
            first_touch: false,
            huge_pages: self.huge_pages,
        };

        let migration = (
            self.migration,
            (self.migration == Migration::Auto)
                .then(|| Arc::new(crate::sched::migrate::MigrationCosts::of(&topology))),
        );
        // Under `auto`, a task's non-strict hint is weighed against its data's node.
        let ready_policy = match &migration.1 {
            Some(costs) => ready_policy.moving_to_data(costs.clone()),
            None => ready_policy,
        };
        let steal = match (config, self.vicinity) {
            (Config::Home, Some(size)) => StealKind::Vicinity(size.min(cpus.len())),
            (Config::Home, None) => StealKind::Vicinity(cpus.len()),
            _ => config.steal_kind(),
        };
        let engine = factory.start(EngineSetup {
            topology: topology.clone(),
            worker_cpu: cpus,
            worker_node,
            ready_policy: ready_policy.clone(),
            steal,
            last_victim_first: self.last_victim_first,
            steal_half: self.steal_half,
            pools,
            observer,
            worker_stack_bytes: self.worker_stack,
        })?;
        let pool_config = engine.pools().config();
        let shared = Arc::new(SharedSetup::new(
            RegionConfig {
                os_nodes: pool_config.bind.then(|| {
                    (0..nodes)
                        .map(|n| topology.os_node(NodeId(n as u32)).map_or(n, |o| o as usize))
                        .collect()
                }),
                nodes,
                accounting_only: pool_config.accounting_only,
            },
            config.shared_data().then_some(self.shared_placement),
            engine.pools().clone(),
        ));
        if let RegionPolicy::Bind(node) = self.shared_placement {
            if node >= nodes {
                return Err(Error::Config(format!(
                    "shared placement: node {node} does not exist (topology `{}` has {nodes})",
                    topology.name()
                )));
            }
        }
        Ok(Runtime {
            id: NEXT_RUNTIME_ID.fetch_add(1, Ordering::Relaxed),
            config,
            alloc,
            steal,
            last_victim_first: self.last_victim_first,
            steal_half: self.steal_half,
            proc_bind: self.proc_bind,
            ready_policy,
            topology,
            window,
            engine,
            versions: CountsLease::new(),
            shared,
            run_lock: Mutex::new(()),
            running: std::sync::atomic::AtomicBool::new(false),
            migration,
            replay_observer,
            replay_placement: self.replay_placement,
        })
    }
}

/// The CPUs the workers run on: all of them, or `threads` taken round-robin over nodes
/// ([`ProcBind::Spread`]) or node after node ([`ProcBind::Close`]).
fn worker_cpus(
    topology: &Topology,
    threads: Option<usize>,
    bind: ProcBind,
) -> Result<Vec<CpuId>, Error> {
    let total = topology.num_cpus();
    let wanted = threads.unwrap_or(total);
    if wanted == 0 {
        return Err(Error::Config("at least one worker thread is needed".into()));
    }
    if wanted > total {
        return Err(Error::Config(format!(
            "{wanted} threads asked, but topology `{}` has {total} CPUs (one worker per CPU)",
            topology.name()
        )));
    }
    if wanted > MAX_WORKERS {
        return Err(Error::Config(format!(
            "{wanted} workers asked (topology `{}`): a runtime has at most {MAX_WORKERS} \
             (every worker keeps a list of its victims); ask fewer with `threads`",
            topology.name()
        )));
    }
    if bind == ProcBind::Close {
        return Ok(topology
            .nodes()
            .iter()
            .flat_map(|node| node.cpus.iter().copied())
            .take(wanted)
            .collect());
    }
    let mut cpus = Vec::with_capacity(wanted);
    let mut round = 0;
    while cpus.len() < wanted {
        for node in topology.nodes() {
            if cpus.len() < wanted {
                if let Some(&cpu) = node.cpus.get(round) {
                    cpus.push(cpu);
                }
            }
        }
        round += 1;
    }
    Ok(cpus)
}

/// A finished run: the root closure's value and the run's report.
#[derive(Debug)]
pub struct Finished<R> {
    /// What the root closure returned.
    pub value: R,
    /// The metrics of the run.
    pub report: Report,
}

/// A NUMA-aware task runtime: pinned workers over a topology, per-node memory pools and
/// a scheduling configuration. See the [crate documentation](crate) for an example.
pub struct Runtime {
    id: u64,
    config: Config,
    alloc: AllocMode,
    steal: StealKind,
    last_victim_first: bool,
    steal_half: bool,
    proc_bind: ProcBind,
    ready_policy: ReadyPolicy,
    topology: Topology,
    window: Option<usize>,
    engine: Box<dyn Engine>,
    versions: CountsLease,
    shared: Arc<SharedSetup>,
    run_lock: Mutex<()>,
    /// Whether a run holds `run_lock` (calls that must not overlap a run are then
    /// refused rather than waiting: `no_run_in_progress`).
    running: std::sync::atomic::AtomicBool,
    migration: (
        Migration,
        Option<Arc<crate::sched::migrate::MigrationCosts>>,
    ),
    /// The observer, for replays to show their tasks to (module `graph::replay`).
    replay_observer: Option<crate::graph::ReplayObserver>,
    /// The placement of recorded graphs ([`RuntimeBuilder::replay_placement`]).
    replay_placement: crate::graph::ReplayPlacement,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .field("topology", &self.topology.name())
            .field("engine", &self.engine.name())
            .field("workers", &self.workers())
            .finish()
    }
}

impl Runtime {
    /// A builder with the defaults: host topology, `dsa-opt`, one worker per CPU, the
    /// default window ([`RuntimeBuilder::window`]).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The allocation mode of versioned data.
    pub fn allocation(&self) -> AllocMode {
        self.alloc
    }

    /// The topology (laid over the host when virtual).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Whether the engine skips task bodies (a simulation at sizes larger than the
    /// host, whose buffers hold no memory): create data with [`Runtime::data`] then,
    /// and expect no results to fetch.
    pub fn skips_bodies(&self) -> bool {
        self.engine.skips_bodies()
    }

    /// The engine's name: `threads`, or `sim` for the simulator.
    pub fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.engine.worker_node().len()
    }

    /// Node of each worker.
    pub fn worker_nodes(&self) -> &[usize] {
        self.engine.worker_node()
    }

    /// The nodes of the topology that got no worker (fewer workers than nodes, or
    /// nodes with memory and no CPUs).
    pub fn nodes_without_workers(&self) -> Vec<usize> {
        (0..self.topology.num_nodes())
            .filter(|n| !self.worker_nodes().contains(n))
            .collect()
    }

    /// The node holding the datum's current contents: the node of its buffer, or for
    /// shared data the node holding most of its pages; `None` while it has no memory
    /// (a versioned datum never written, or written by a run still to come). Like
    /// [`fetch`](Self::fetch), it is refused with [`Error::RunInProgress`] while a run
    /// is in progress on another thread.
    ///
    /// Errors: a handle of another runtime, or a call from inside a task (the run it
    /// would wait for is its own).
    pub fn node_of<T: Element>(&self, data: &Data<T>) -> Result<Option<usize>, Error> {
        if data.inner.is_partitioned() {
            // The node holding most of its segments' bytes.
            let bytes = self.bytes_per_node(data)?;
            let most = (0..bytes.len()).max_by_key(|&n| (bytes[n], std::cmp::Reverse(n)));
            return Ok(most.filter(|&n| bytes[n] > 0));
        }
        let _no_run = self.between_runs("node_of", &data.inner)?;
        Ok(data.inner.current().node())
    }

    /// Bytes of the datum's current contents on each node (for shared data, page by
    /// page; for versioned data, its whole buffer on the buffer's node); all zeros
    /// while it has no memory. Waits and fails as [`node_of`](Self::node_of).
    pub fn bytes_per_node<T: Element>(&self, data: &Data<T>) -> Result<Vec<u64>, Error> {
        let _no_run = self.between_runs("bytes_per_node", &data.inner)?;
        let nodes = self.topology.num_nodes();
        if let Some(bytes) = partition::bytes_per_node(&data.inner, nodes) {
            return Ok(bytes);
        }
        let version = data.inner.current();
        Ok(match version.buffer() {
            Some(crate::data::version::Buffer::Shared(s)) => s.region.bytes_per_node(nodes),
            Some(buffer) => {
                let mut out = vec![0; nodes];
                out[buffer.main_node()] = data.inner.bytes() as u64;
                out
            }
            None => vec![0; nodes],
        })
    }

    /// The run lock, for a query `op` of this runtime's datum `inner`; refused from
    /// inside a task, whose run would never end while it waits, and while a run is in
    /// progress on another thread ([`no_run_in_progress`](Self::no_run_in_progress)).
    fn between_runs(
        &self,
        op: &str,
        inner: &DataInner,
    ) -> Result<std::sync::MutexGuard<'_, ()>, Error> {
        if inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: op.into(),
                data: inner.name.clone(),
            });
        }
        if current_executor(|_| ()).is_some() {
            return Err(Error::Declaration {
                task: op.into(),
                message: format!(
                    "`{}`: not from inside a task, which would wait for its own run to \
                     end; a task learns where its data lie from its accesses",
                    inner.name
                ),
            });
        }
        self.no_run_in_progress(op)
    }

    /// The run lock, for `op`, a call that must not overlap a run; refused with
    /// [`Error::RunInProgress`] while a run is in progress rather than waiting for it,
    /// since a body of that run may be waiting for the calling thread (a helper it
    /// joins), and the wait would then never end.
    pub(crate) fn no_run_in_progress(&self, op: &str) -> Result<MutexGuard<'_, ()>, Error> {
        loop {
            match self.run_lock.try_lock() {
                Ok(guard) => return Ok(guard),
                // A panic while the lock was held left nothing half-done that it guards.
                Err(TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                // Set by `run` while it holds the lock.
                Err(TryLockError::WouldBlock) if self.running.load(Ordering::Acquire) => {
                    return Err(Error::RunInProgress { op: op.into() })
                }
                // Held by a fetch or a query, which ends without waiting for a task.
                Err(TryLockError::WouldBlock) => std::thread::yield_now(),
            }
        }
    }

    /// Versions alive now: the current versions of live handles, plus any held by tasks.
    pub fn live_versions(&self) -> usize {
        self.versions.live()
    }

    /// Bytes in use in the pools of all nodes.
    pub fn pool_bytes_in_use(&self) -> u64 {
        self.pools().bytes_in_use()
    }

    /// Bytes of shared data alive now (in whole pages), all nodes.
    pub fn shared_bytes_in_use(&self) -> u64 {
        self.shared.live_bytes()
    }

    /// The per-node pools.
    pub fn pools(&self) -> &Arc<Pools> {
        self.engine.pools()
    }

    /// Creates a datum of `len` elements, zero until a task writes it. Versioned data
    /// gets no memory until a task reads or writes it. Under a configuration whose data
    /// model is shared (`shm-base`) the datum is shared: one buffer, placed now by the
    /// runtime's [`shared_placement`](RuntimeBuilder::shared_placement) and updated in
    /// place (see [`Runtime::shared`]). If that buffer cannot be mapped, every task
    /// declaring the datum is refused with the reason.
    pub fn data<T: Element>(&self, name: impl Into<String>, len: usize) -> Data<T> {
        let shared = self.shared.default_policy.map(|p| (&self.shared, p));
        Data::from_inner(Arc::new(DataInner::create_or_unavailable(
            self.id,
            name.into(),
            len,
            std::mem::size_of::<T>(),
            self.versions.counts(),
            shared,
        )))
    }

    /// Creates a datum holding a copy of `values`: versioned, in a buffer on the node
    /// of worker 0 (where the control program runs), or shared under a shared data
    /// model, as [`Runtime::data`].
    pub fn data_from<T: Element>(
        &self,
        name: impl Into<String>,
        values: &[T],
    ) -> Result<Data<T>, Error> {
        let shared = self.shared.default_policy.map(|p| (&self.shared, p));
        self.datum_from(name.into(), values, shared)
    }

    /// Creates a *shared* datum of `len` elements under any configuration: one
    /// zero-filled buffer placed now by `policy` (interleaved, bound to a node, in one
    /// block per node, or by first touch) and updated in place by the tasks that write
    /// it. Its accesses keep their views (`&[T]`, `&mut [T]`); a write then sees the
    /// current contents, and waits for the previous writer and for the readers of the
    /// previous contents (no renaming). A node outside the topology is an error.
    ///
    /// ```
    /// use locus::{RegionPolicy, Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("2x1")?).build()?;
    /// let grid = rt.shared::<u64>("grid", 1024, RegionPolicy::Interleave)?;
    /// rt.run(|s| {
    ///     s.spawn("fill", grid.write(), |_, g| g.fill(7)).unwrap();
    ///     s.spawn("bump", grid.read_write(), |_, g| g[0] += 1).unwrap();
    /// })?;
    /// assert_eq!(&rt.fetch(&grid)?[..2], &[8, 7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared<T: Element>(
        &self,
        name: impl Into<String>,
        len: usize,
        policy: RegionPolicy,
    ) -> Result<Data<T>, Error> {
        Ok(Data::from_inner(Arc::new(DataInner::create(
            self.id,
            name.into(),
            len,
            std::mem::size_of::<T>(),
            self.versions.counts(),
            Some((&self.shared, policy)),
        )?)))
    }

    /// A shared datum holding a copy of `values`, placed by `policy` (see
    /// [`Runtime::shared`]). The copy is made by the calling thread after placement, so
    /// a first-touch datum lands on the caller's node.
    pub fn shared_from<T: Element>(
        &self,
        name: impl Into<String>,
        values: &[T],
        policy: RegionPolicy,
    ) -> Result<Data<T>, Error> {
        self.datum_from(name.into(), values, Some((&self.shared, policy)))
    }

    /// A datum holding a copy of `values`, versioned or shared.
    fn datum_from<T: Element>(
        &self,
        name: String,
        values: &[T],
        shared: Option<(&Arc<SharedSetup>, RegionPolicy)>,
    ) -> Result<Data<T>, Error> {
        let bytes = std::mem::size_of_val(values);
        if self.pools().config().accounting_only {
            return Err(Error::Config(format!(
                "data_from({name}): this runtime's buffers hold no memory (a simulation \
                 with skipped bodies); create data with `data` instead"
            )));
        }
        let inner = DataInner::create(
            self.id,
            name.clone(),
            values.len(),
            std::mem::size_of::<T>(),
            self.versions.counts(),
            shared,
        )?;
        let initial = inner.current();
        let node = self.engine.worker_node()[0];
        let buffer = initial
            .buffer_or_alloc(|| self.pools().alloc(node, bytes))
            .map_err(|e| Error::OutOfMemory {
                task: format!("data_from({name})"),
                bytes,
                message: e.to_string(),
            })?;
        if let Some(shared) = buffer.shared() {
            shared.touch(0, bytes, node);
        }
        // SAFETY: the buffer was just made for this datum and holds `bytes` bytes; no
        // task can reach it before the handle is returned.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), buffer.as_mut_ptr(), bytes)
        };
        Ok(Data::from_inner(Arc::new(inner)))
    }

    /// A copy of the datum's current contents.
    ///
    /// Called while a run of this runtime is in progress, `fetch` is refused: from
    /// inside a task of the run with [`Error::Declaration`] (the run could not end
    /// before it returns), from any other thread with [`Error::RunInProgress`] rather
    /// than waiting for the run to end, since a body of that run may be waiting for
    /// the calling thread (a helper thread it joins), and the wait would never end
    /// (docs/guide.md, "Runs and threads"). So it never sees a partial write. A datum whose size cannot be held in memory
    /// is an error ([`Error::OutOfMemory`]), never an abort.
    pub fn fetch<T: Element>(&self, data: &Data<T>) -> Result<Vec<T>, Error> {
        let inner = &data.inner;
        if inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: "fetch".into(),
                data: inner.name.clone(),
            });
        }
        if current_executor(|_| ()).is_some() {
            return Err(Error::Declaration {
                task: "fetch".into(),
                message: format!(
                    "`{}` cannot be fetched from inside a task: the run cannot end before \
                     fetch returns; declare a read of it instead",
                    inner.name
                ),
            });
        }
        if let Some(reason) = &inner.extras.unavailable {
            return Err(Error::Declaration {
                task: "fetch".into(),
                message: format!("`{}` has no memory: {reason}", inner.name),
            });
        }
        // Refused during a run in progress on another thread (the doc above).
        let _no_run = self.no_run_in_progress("fetch")?;
        if let Some(task) = inner.poisoned_by() {
            return Err(Error::Poisoned {
                data: inner.name.clone(),
                task,
            });
        }
        let node = self.engine.worker_node()[0];
        if inner.is_partitioned() {
            // SAFETY: no run is in progress (the lock above).
            return unsafe { partition::gather_out(inner, self.pools(), node) };
        }
        // SAFETY: no run is in progress (the lock above).
        unsafe { inner.combine_now(self.pools(), node) }
            .map_err(|e| e.into_error("fetch", inner))?;
        let version = inner.current();
        if !version.is_produced() {
            return Err(Error::Declaration {
                task: "fetch".into(),
                message: format!("`{}` is being written by a run in progress", inner.name),
            });
        }
        // SAFETY: no run is in progress (the lock above), so nothing writes the
        // version's buffer.
        unsafe { inner.copy_out(&version) }
    }

    /// Partitions `data` into parts ([`Partition`]: consecutive blocks, a list of
    /// ranges, or the tiles of a row-major matrix), each a [`Data`] handle that tasks
    /// declare like any other datum (`read`, `read_range`, `write`, `read_write`). The
    /// whole stays usable: an access to it covers every part. Two accesses depend on
    /// each other when they overlap and one writes (a part and the whole, two parts of
    /// overlapping partitions), in submission order, with renaming as for any datum.
    /// A part of a disjoint partition is stored on its own (its versions placed like
    /// any datum's), so writing it copies nothing else; an access covering several
    /// stored pieces sees a gathered copy. `docs/guide.md`, "Partitioned data", states
    /// the semantics.
    ///
    /// A datum may be partitioned several times (the partitions may overlap); a datum
    /// cut into tiles only into unions of its tiles. Bad partitions (out of bounds,
    /// empty parts, tiles that do not divide the matrix, a part given as the datum) are
    /// errors, and so is a partition past [`Partition::MAX_PARTS`] parts. Like
    /// [`fetch`](Self::fetch), it is refused with [`Error::RunInProgress`] while a run
    /// is in progress.
    ///
    /// ```
    /// use locus::{Partition, Runtime};
    /// let rt = Runtime::builder().build()?;
    /// let m = rt.data_from("m", &[1.0f64; 16])?; // a 4 x 4 matrix
    /// let tiles = rt.partition(&m, Partition::tiles(4, 4, 2, 2))?;
    /// rt.run(|s| {
    ///     let t = tiles.tile(1, 1).unwrap();
    ///     s.spawn("scale", t.read_write(), |_, t| t.iter_mut().for_each(|x| *x *= 2.0))
    ///         .unwrap();
    /// })?;
    /// let m = rt.fetch(&m)?;
    /// assert_eq!((m[0], m[10], m[15]), (1.0, 2.0, 2.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partition<T: Element>(
        &self,
        data: &Data<T>,
        partition: Partition,
    ) -> Result<Parts<T>, Error> {
        let inner = &data.inner;
        if inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: "partition".into(),
                data: inner.name.clone(),
            });
        }
        if current_executor(|_| ()).is_some() {
            return Err(Error::Config(format!(
                "partition of `{}`: not from inside a task (partition before the run)",
                inner.name
            )));
        }
        let _no_run = self.no_run_in_progress("partition")?;
        let maker = partition::SegmentMaker {
            runtime: self.id,
            versions: self.versions.counts(),
            shared: &self.shared,
            pools: self.pools(),
            node: self.engine.worker_node()[0],
        };
        partition::partition(data, &partition, &maker)
    }

    /// The runtime's identifier: data handles and recorded graphs carry it.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Records a control program into a [`Graph`] to replay many times
    /// ([`replay`](Self::replay)): `program` spawns tasks into the [`Recorder`] as it
    /// would into a run's scope, but nothing runs. Dependences are resolved now, once:
    /// a replay runs the tasks in the same order constraints, with no analysis and no
    /// allocation per task. Fails with the first refused task (docs/guide.md, "Recorded
    /// graphs", says what can be recorded) or `program`'s own error.
    ///
    /// ```
    /// # use locus::Runtime;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let rt = Runtime::builder().build()?;
    /// let (a, b) = (rt.data_from("a", &[1.0f64; 8])?, rt.data::<f64>("b", 8));
    /// let mut sweep = rt.record("sweep", |r| {
    ///     r.spawn("half", (a.read(), b.write()), |_, (a, b)| {
    ///         b.iter_mut().zip(a).for_each(|(b, a)| *b = a / 2.0)
    ///     })?;
    ///     r.spawn("back", (b.read(), a.write()), |_, (b, a)| a.copy_from_slice(b))
    /// })?;
    /// rt.replay(&mut sweep, 3)?;
    /// assert_eq!(rt.fetch(&a)?, vec![0.125; 8]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn record<F>(&self, name: impl Into<String>, program: F) -> Result<Graph, Error>
    where
        F: FnOnce(&Recorder) -> Result<(), Error>,
    {
        let recorder = Recorder::new(self.id);
        program(&recorder)?;
        let mut graph = recorder.finish(name.into())?;
        graph.set_placement(self.replay_placement);
        Ok(graph)
    }

    /// Replays a recorded graph `iterations` times, as one run (module doc of
    /// `graph::replay`): each iteration runs every recorded task once, after the
    /// previous iteration; bodies get the iteration's index. The data the graph writes
    /// end with the last iteration's contents. Fails with [`Error::Replay`] when what
    /// the graph depends on changed since it was recorded or last replayed (a datum
    /// freed, partitioned, written outside the graph, poisoned) or an earlier replay
    /// failed; a body that panics fails the replay with the task's name and leaves each
    /// datum with the contents of the last complete iteration. The report counts the
    /// replayed tasks and their bytes, and its settings name the graph
    /// (`replay`, `replayed_iterations`).
    pub fn replay(&self, graph: &mut Graph, iterations: u64) -> Result<Report, RunError> {
        graph.replay(
            self,
            self.versions.counts(),
            self.replay_observer.clone(),
            iterations,
        )
    }

    /// [`run`](Self::run) for a control program that can fail: its error and the run's
    /// come back as one `Result`, so that `rt.try_run(|s| ...)?` is all a program
    /// needs (the report is in [`RunError::report`] on failure).
    ///
    /// ```
    /// # use locus::Runtime;
    /// # fn main() -> Result<(), locus::RunError> {
    /// let rt = Runtime::builder().build().map_err(locus::RunError::from)?;
    /// let x = rt.data::<u64>("x", 4);
    /// let finished = rt.try_run(|s| s.spawn("fill", x.write(), |_, v| v.fill(1)))?;
    /// assert_eq!(finished.report.tasks, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn try_run<R, F>(&self, root: F) -> Result<Finished<R>, RunError>
    where
        F: FnOnce(&Scope) -> Result<R, Error> + Send,
        R: Send,
    {
        let Finished { value, report } = self.run(root)?;
        match value {
            Ok(value) => Ok(Finished { value, report }),
            Err(error) => Err(RunError {
                error,
                report: Box::new(report),
            }),
        }
    }

    /// Runs a program: `root` is the control program, run as the root task on worker 0;
    /// it spawns tasks into the scope it gets. Returns when every task has finished,
    /// with `root`'s value and the report, or the run's first error (a task's panic, a
    /// refused declaration) with the report.
    ///
    /// One run of a runtime at a time: called from inside a task it is refused with
    /// [`Error::NestedRun`], and from any thread while a run of the runtime is in
    /// progress with [`Error::RunInProgress`] rather than waiting for that run, since
    /// a body of it may be waiting for the calling thread (a helper thread it joins)
    /// and the wait would never end. A program that runs from several threads orders
    /// its runs itself (docs/guide.md, "Runs and threads").
    ///
    /// # What a failed run leaves behind
    ///
    /// Once a task fails (its body panics, its declaration is refused, a buffer cannot
    /// be allocated), the tasks not started yet are drained without running, and every
    /// buffer they held is freed. Then:
    ///
    /// - a versioned datum keeps its last complete version: the contents written by
    ///   the last of its writers whose body ran to its end (or its initial contents).
    ///   A writer that panicked, part-way through or before writing anything, or
    ///   never ran, leaves no trace; the next run and [`fetch`](Self::fetch) see the
    ///   complete version. (To allow this a superseded version lives until its
    ///   successor's writer finishes, and a read-write updated in place, the only
    ///   holder of the version it read taking over its buffer, copies the previous
    ///   contents aside first, to put them back if its body panics.) Where a task ran,
    ///   in place or not, never changes what is left.
    /// - a shared datum is updated in place with no copy, so a writer that never ran
    ///   leaves the previous contents, but one that panicked while declaring a write
    ///   or read-write of it may have written part of it: the datum is then
    ///   *poisoned* (not by a task that saw it through a gathered copy, covering several
    ///   segments of partitioned data, which is written back only after the body). `fetch` returns
    ///   [`Error::Poisoned`] naming the task, and tasks reading it are refused, until a
    ///   task writes it whole ([`Data::write`](crate::Data::write)).
    pub fn run<R, F>(&self, root: F) -> Result<Finished<R>, RunError>
    where
        F: FnOnce(&Scope) -> R + Send,
        R: Send,
    {
        if current_executor(|_| ()).is_some() {
            return Err(RunError {
                error: Error::NestedRun,
                report: Box::new(self.report_skeleton()),
            });
        }
        let _serialised = self.no_run_in_progress("run").map_err(|error| RunError {
            error,
            report: Box::new(self.report_skeleton()),
        })?;
        let _running = Running::set(&self.running);
        let nodes = self.topology.num_nodes();
        let mut run = RunState::new(
            self.id,
            self.alloc,
            RunCounters::new(self.workers(), nodes),
            self.versions.counts(),
            self.shared.clone(),
            self.window,
        );
        run.migration = self.migration.clone();
        let run = Arc::new(run);
        self.pools().reset_peaks();
        self.shared.reset_peaks();
        self.versions.reset_peak();
        let stats_before = self.pools().stats();
        let versions_before = self.versions.created();
        let migrated_before = self.shared.migrated_pages();

        let value: Mutex<Option<R>> = Mutex::new(None);
        let slot = &value;
        let body = crate::graph::BodyFor::new(move |ctx: &TaskCtx, _: &[Binding]| {
            let r = root(ctx.scope());
            *lock_mutex(slot) = Some(r);
        });
        // SAFETY: the body borrows `root` and `value`, which live until this function
        // returns. It does not return before `wait_done` below, i.e. before every task
        // of the run, the root included, has finished; a task's job (and so this
        // closure) is taken and dropped by `execute` before the task counts as
        // finished, whether the body ran or was skipped. So nothing borrowed is used
        // after the borrow ends.
        let body = unsafe { body.extend() };
        // SAFETY: `run` is kept until this function returns, after `wait_done`: every
        // task of the run has finished by then (the `Engine` contract, checked below).
        let run_ref = unsafe { crate::graph::RunRef::new(&run) };
        let task = Task::new(
            Cow::Borrowed("root"),
            run_ref,
            crate::graph::Job {
                bindings: Default::default(),
                body: Some(body),
                hints: Default::default(),
                control: true,
                children_to_parent: true,
                root: true,
            },
            0,
            None,
        );
        run.root_submitted();
        let ready = task.satisfy_one();
        debug_assert!(ready);
        let wall_s = self.engine.run(task);
        let unfinished = run.outstanding();
        if unfinished != 0 {
            // The root's body borrows this stack frame: going on could let it run
            // against a dead frame (the `Engine` safety contract).
            eprintln!(
                "locus: engine `{}` broke its contract: `run` returned with {unfinished} \
                 task(s) of the run unfinished; aborting",
                self.engine.name()
            );
            std::process::abort();
        }

        let mut report = self.report_skeleton();
        report.wall_s = wall_s;
        report.tasks = run.submitted();
        report.control_tasks = run.control_submitted();
        report.add_counters(&run.counters, self.engine.worker_node(), nodes);
        let stats = self.pools().stats();
        // Cached chunks beyond what this run needed at its peak go back to the OS.
        self.pools().trim();
        let shared_peaks = self.shared.peaks();
        report.memory = MemoryReport {
            peak_bytes: stats.iter().map(|s| s.peak).sum::<u64>()
                + shared_peaks.iter().sum::<u64>(),
            peak_bytes_per_node: stats
                .iter()
                .zip(&shared_peaks)
                .map(|(s, shared)| s.peak + shared)
                .collect(),
            shared_peak_bytes: shared_peaks.iter().sum(),
            in_use_bytes: stats.iter().map(|s| s.in_use).sum(),
            fallbacks: delta(&stats, &stats_before, |s| s.fallbacks),
            allocations: delta(&stats, &stats_before, |s| s.allocs),
            reused: delta(&stats, &stats_before, |s| s.reused),
            first_touched: delta(&stats, &stats_before, |s| s.first_touched),
        };
        let migrated = self.shared.migrated_pages();
        let [now_pages, next_touch_pages, auto_pages] =
            [0, 1, 2].map(|k| migrated[k] - migrated_before[k]);
        report.migration = MigrationReport {
            now_pages,
            next_touch_pages,
            auto_pages,
            bytes: (now_pages + next_touch_pages + auto_pages) * locus_mem::region::PAGE as u64,
            // Counted by the workers (`add_counters` above).
            tasks_moved: report.migration.tasks_moved,
        };
        report.versions = VersionsReport {
            created: self.versions.created() - versions_before,
            peak_live: self.versions.peak(),
            live_at_end: self.versions.live(),
            in_place: report.versions.in_place,
            continued: report.versions.continued,
        };
        match run.take_error() {
            Some(error) => {
                // The root's value (if it returned one) is the user's, and its drop may
                // panic: that must not replace the run's error with a panic.
                let value = lock_mutex(&value).take();
                if let Err(payload) =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(value)))
                {
                    crate::graph::drop_payload(payload);
                }
                Err(RunError {
                    error,
                    report: Box::new(report),
                })
            }
            None => {
                let value = lock_mutex(&value)
                    .take()
                    .expect("the root task ran to completion");
                Ok(Finished { value, report })
            }
        }
    }

    /// A report with the run-independent fields filled in.
    pub(crate) fn report_skeleton(&self) -> Report {
        let mut settings = Settings::default();
        settings.push("allocation", format!("{:?}", self.alloc).to_lowercase());
        settings.push(
            "data",
            match self.shared.default_policy {
                None => "versioned".to_string(),
                Some(policy) => format!("shared, {}", policy.name()),
            },
        );
        settings.push(
            "steal",
            match self.steal {
                StealKind::Random => "random".to_string(),
                StealKind::Hierarchical => "hierarchical".to_string(),
                StealKind::Vicinity(k) => format!("vicinity of {k} workers"),
            },
        );
        settings.push("last_victim_first", self.last_victim_first);
        settings.push("steal_half", self.steal_half);
        if self.engine.pools().config().huge_pages {
            settings.push("huge_pages", true);
        }
        if self.proc_bind != ProcBind::Spread {
            settings.push("proc_bind", self.proc_bind.name());
        }
        if let Some(regions) = self.ready_policy.home_regions() {
            settings.push("home_regions", format!("{regions:?}").to_lowercase());
        }
        if self.ready_policy.is_global() {
            settings.push("ready_queue", "global fifo");
        }
        match self.ready_policy.push_settings() {
            None => settings.push("push", "off"),
            Some(p) => {
                let heuristic = match p.heuristic {
                    Heuristic::InputOnly => "input-only".to_string(),
                    Heuristic::OutputOnly => "output-only".to_string(),
                    Heuristic::Weighted { read, write } => {
                        format!("weighted (read {read}, write {write})")
                    }
                };
                settings.push("push", heuristic);
                settings.push("push_threshold_bytes", p.threshold_bytes);
            }
        }
        settings.push(
            "window",
            self.window
                .map_or("unbounded".to_string(), |w| w.to_string()),
        );
        settings.push("mailbox_capacity", MAILBOX_CAPACITY);
        if self.migration.0 != Migration::None {
            settings.push("migration", self.migration.0.name());
        }
        let idle = self.nodes_without_workers();
        if !idle.is_empty() {
            settings.push(
                "nodes_without_workers",
                idle.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        Report {
            config: self.config.name().to_string(),
            engine: self.engine.name().to_string(),
            topology: TopologySummary {
                name: self.topology.name().to_string(),
                nodes: self.topology.num_nodes(),
                cpus: self.topology.num_cpus(),
            },
            threads: self.workers(),
            settings,
            wall_s: 0.0,
            tasks: 0,
            control_tasks: 0,
            locality: Default::default(),
            traffic: Vec::new(),
            steals: Default::default(),
            pushes: Default::default(),
            memory: Default::default(),
            versions: Default::default(),
            workers: Vec::new(),
            migration: Default::default(),
        }
    }
}

fn delta<S>(after: &[S], before: &[S], field: impl Fn(&S) -> u64) -> u64 {
    after.iter().map(&field).sum::<u64>() - before.iter().map(&field).sum::<u64>()
}

/// Marks a run in progress while it lives (cleared on unwind too).
struct Running<'a>(&'a std::sync::atomic::AtomicBool);

impl<'a> Running<'a> {
    fn set(flag: &'a std::sync::atomic::AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Running(flag)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
