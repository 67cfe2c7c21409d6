//! The runtime of the process: one Locus [`Runtime`], built on first use from the
//! environment (`crate::env`, OpenMP's `OMP_*` variables), the OpenMP internal control
//! variables, the counters of the OpenMP front-end and the report written at exit.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use locus::sched::migrate::MigrationCosts;
use locus::{Config, Migration, NodeId, ProcBind, Report, Runtime, Topology};

use crate::env;

/// Loop schedule kinds, as `omp_sched_t` numbers them.
pub(crate) const SCHED_STATIC: u64 = 1;
pub(crate) const SCHED_DYNAMIC: u64 = 2;
pub(crate) const SCHED_GUIDED: u64 = 3;
pub(crate) const SCHED_AUTO: u64 = 4;
/// `omp_sched_monotonic`: the modifier bit of a schedule kind.
pub(crate) const MONOTONIC: u64 = 0x8000_0000;

/// Queued deferred tasks (handed to Locus, not started) a team member created, beyond
/// which a new task it creates without dependences runs at once in it. Each member
/// counts its own, on a cache line the others do not write, as LLVM's libomp bounds each
/// thread's own deque: a team-wide count is a line every member writes for every task,
/// whose transfers between distant cores cost more than the rest of such a task. A recursive program (BOTS
/// uts, fib) then keeps a few tasks per member for idle members to take, and the rest
/// cost a few hundred instructions. Counting queued tasks, not pending ones as GNU
/// libgomp does (its `64 * nthreads`), keeps work to take while a member runs a deep
/// recursion: tasks started and waiting in a taskwait are pending, and would throttle
/// every task while the queues are empty. Among 8, 16, 32 and 64 on two threads, 16 ran
/// BOTS uts fastest and 8 did as well on the others (`docs/performance.md`, "OpenMP
/// tasks on Locus's runtime").
pub(crate) const DEFAULT_THROTTLE: usize = 16;

/// The process's OpenMP runtime.
pub(crate) struct Omp {
    pub rt: Runtime,
    /// Workers of `rt`: the largest team.
    pub workers: usize,
    /// Whether the topology has several nodes (home nodes are looked up only then).
    pub numa: bool,
    /// Whether the topology is virtual (nodes laid over the host's CPUs): home nodes
    /// come from Locus's own page records rather than from the kernel.
    pub virtual_nodes: bool,
    /// `LOCUS_OMP_AFFINITY=strict`: a task's home node binds it.
    pub strict_home: bool,
    /// `LOCUS_OMP_THROTTLE`: queued deferred tasks a member created beyond which a new
    /// task it creates without dependences or affinity runs at once in it (0: never).
    pub throttle: usize,
    /// `LOCUS_OMP_MIGRATION`: what a task does with its out/inout memory on another
    /// node (`crate::place::migrate`).
    pub migration: Migration,
    /// The cost model of `auto` (`Migration::Auto` only).
    pub costs: Option<MigrationCosts>,
    /// The kernel's number of each node, on a topology of real nodes (empty on virtual
    /// ones).
    pub os_nodes: Vec<usize>,
    /// ICV nthreads-var.
    pub nthreads: AtomicUsize,
    /// ICV dyn-var.
    pub dynamic: AtomicBool,
    /// ICV max-active-levels-var (only 1 is honoured: nested regions are serialised).
    pub max_active_levels: AtomicUsize,
    /// ICV run-sched-var: kind in the high half, chunk in the low half.
    pub run_sched: AtomicU64,
    /// ICV max-task-priority-var (`OMP_MAX_TASK_PRIORITY`); priorities are read and
    /// not acted on.
    pub max_task_priority: i32,
    /// One run at a time: parallel regions from several threads take turns.
    pub run_lock: Mutex<()>,
    /// The report of every region so far.
    pub report: Mutex<Option<Report>>,
    pub counters: Counters,
    pub started: Instant,
}

/// A counter kept in one cache line per worker (modulo [`Striped::LINES`]), summed when
/// read: workers that count at once do not contend for one line.
pub(crate) struct Striped([CachePadded<AtomicU64>; Striped::LINES]);

impl Striped {
    const LINES: usize = 64;

    /// Adds one for `worker`.
    pub fn add_one(&self, worker: usize) {
        self.add(worker, 1);
    }

    /// Adds `n` for `worker`.
    pub fn add(&self, worker: usize, n: u64) {
        self.0[worker % Self::LINES].fetch_add(n, Ordering::Relaxed);
    }

    /// The sum over workers.
    pub fn sum(&self) -> u64 {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

impl Default for Striped {
    fn default() -> Self {
        Striped(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))))
    }
}

/// Counters of the OpenMP front-end, added to the report (`"openmp"`).
#[derive(Default)]
pub(crate) struct Counters {
    pub regions: AtomicU64,
    pub implicit_tasks: AtomicU64,
    /// Explicit tasks run as Locus tasks (one count per worker, as `throttled_tasks`).
    pub deferred_tasks: Striped,
    /// Explicit tasks run at once by their creator (if(0), final, outside a region):
    /// one count per worker, as `throttled_tasks` (a final task's descendants are all
    /// undeferred).
    pub undeferred_tasks: Striped,
    /// Explicit tasks run at once by their creator because the team had too many
    /// queued (`LOCUS_OMP_THROTTLE`): one count per worker, since every worker of a
    /// recursive program adds to it for nearly every task it creates.
    pub throttled_tasks: Striped,
    /// Deferred tasks with a home node, and of those, run on it.
    pub with_home: AtomicU64,
    pub on_home: AtomicU64,
    /// Dependences declared (addresses), per worker.
    pub dependences: Striped,
    /// Deferred tasks with an affinity clause; of those, placed by it (a node of its
    /// memory was known), and run on that node.
    pub with_affinity: AtomicU64,
    pub affinity_placed: AtomicU64,
    pub on_affinity_node: AtomicU64,
    /// Bytes named by the affinity clauses of deferred tasks (of pages whose node is
    /// known), and of those, on the node that ran the task.
    pub affinity_bytes: AtomicU64,
    pub affinity_bytes_local: AtomicU64,
    /// The same for dependences: the bytes the compiler gives (clang's), else the page
    /// holding the address (gcc's).
    pub dependence_bytes: AtomicU64,
    pub dependence_bytes_local: AtomicU64,
    /// Dependences declared without a length (gcc's), each counted as the page holding
    /// its address; per worker.
    pub dependences_without_length: Striped,
    /// Pages of dependence memory moved to the node of the task that declared them, by
    /// reason: `now`, `next-touch`, `auto` (`crate::place::migrate`).
    pub migrated_pages: [AtomicU64; 3],
}

static OMP: OnceLock<Omp> = OnceLock::new();

/// Prints one line naming the problem and stops the program with status 2.
pub(crate) fn die(message: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "locus omp: {message}");
    std::process::exit(2)
}

/// The runtime, built on first use; a setting it cannot use stops the program.
pub(crate) fn omp() -> &'static Omp {
    OMP.get_or_init(|| build().unwrap_or_else(|e| die(&e)))
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn build() -> Result<Omp, String> {
    let mut builder = Runtime::builder();
    let threads = match var(env::NUM_THREADS) {
        Some(n) => {
            let first = n.split(',').next().unwrap_or("").trim();
            Some(
                first
                    .parse::<usize>()
                    .ok()
                    .filter(|&t| t > 0)
                    .ok_or_else(|| {
                        format!("{}={n}: expected a positive number", env::NUM_THREADS)
                    })?,
            )
        }
        None => None,
    };
    let mut topology = match var(env::TOPOLOGY) {
        Some(spec) => Topology::from_spec(&spec).map_err(|e| format!("{}: {e}", env::TOPOLOGY))?,
        None => Topology::from_spec("host").map_err(|e| format!("host topology: {e}"))?,
    };
    if let Some(t) = threads {
        // More threads than the host has CPUs, as OpenMP programs may ask: one virtual
        // node of that many CPUs, laid over the host's (workers share CPUs). Other
        // topologies keep Locus's rule of one worker per CPU.
        let host = var(env::TOPOLOGY).map_or(true, |s| s.trim() == "host");
        if host && t > topology.num_cpus() {
            topology = Topology::from_spec(&format!("1x{t}")).map_err(|e| e.to_string())?;
        }
        builder = builder.threads(t);
    }
    let numa = topology.num_nodes() > 1;
    let virtual_nodes = topology.is_virtual();
    let os_nodes = if virtual_nodes {
        Vec::new()
    } else {
        (0..topology.num_nodes())
            .map(|n| topology.os_node(NodeId(n as u32)).unwrap_or(n as u32) as usize)
            .collect()
    };
    builder = builder.topology(topology);
    if let Some(name) = var(env::CONFIG) {
        let config: Config = name
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", env::CONFIG))?;
        builder = builder.config(config);
    }
    let stack = match var("OMP_STACKSIZE") {
        Some(s) => parse_stacksize(&s)
            .ok_or_else(|| format!("OMP_STACKSIZE={s}: expected a size such as 512K, 64M or 1G"))?,
        None => DEFAULT_STACK,
    };
    builder = builder.worker_stack_size(stack.max(locus::MIN_WORKER_STACK));
    if let Some(bind) = var("OMP_PROC_BIND") {
        let first = bind
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        builder = match first.as_str() {
            "close" | "master" | "primary" => builder.proc_bind(ProcBind::Close),
            "spread" | "true" | "false" => builder.proc_bind(ProcBind::Spread),
            other => {
                return Err(format!(
                    "OMP_PROC_BIND={other}: expected true, false, close, spread or primary"
                ))
            }
        };
    }
    let strict_home = match var(env::AFFINITY).as_deref().map(str::trim) {
        None | Some("non-strict") => false,
        Some("strict") => true,
        Some(other) => {
            return Err(format!(
                "{}={other}: expected strict or non-strict",
                env::AFFINITY
            ))
        }
    };
    let throttle = match var(env::THROTTLE) {
        Some(s) => s.trim().parse::<usize>().ok().ok_or_else(|| {
            format!(
                "{}={s}: expected a number of tasks per thread, 0 or more",
                env::THROTTLE
            )
        })?,
        None => DEFAULT_THROTTLE,
    };
    let migration = match var(env::MIGRATION) {
        Some(m) => m
            .trim()
            .parse::<Migration>()
            .map_err(|e| format!("{}: {e}", env::MIGRATION))?,
        None => Migration::None,
    };
    builder = builder.migration(migration);
    if let Some(path) = var(env::TRACE) {
        builder = builder.trace(path);
    }
    let run_sched = match var("OMP_SCHEDULE") {
        Some(s) => parse_schedule(&s).ok_or_else(|| {
            format!("OMP_SCHEDULE={s}: expected static, dynamic, guided or auto, with an optional chunk")
        })?,
        // def-sched-var, which OpenMP leaves to the implementation: that of the runtime
        // the program was built for, so that it reads what it would there.
        None if loaded_as_libomp() => SCHED_STATIC << 32,
        None => (SCHED_DYNAMIC << 32) | 1,
    };
    let max_task_priority = match var("OMP_MAX_TASK_PRIORITY") {
        Some(s) => s
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|&p| p >= 0)
            .ok_or_else(|| format!("OMP_MAX_TASK_PRIORITY={s}: expected a number, 0 or more"))?,
        None => 0,
    };
    let rt = builder.build().map_err(|e| e.to_string())?;
    let workers = rt.workers();
    let costs = (migration == Migration::Auto).then(|| MigrationCosts::of(rt.topology()));
    let omp = Omp {
        rt,
        workers,
        numa,
        virtual_nodes,
        strict_home,
        throttle,
        migration,
        costs,
        os_nodes,
        nthreads: AtomicUsize::new(workers),
        dynamic: AtomicBool::new(false),
        max_active_levels: AtomicUsize::new(1),
        run_sched: AtomicU64::new(run_sched),
        max_task_priority,
        run_lock: Mutex::new(()),
        report: Mutex::new(None),
        counters: Counters::default(),
        started: Instant::now(),
    };
    if var(env::REPORT).is_some() {
        extern "C" fn at_exit() {
            write_report();
        }
        // SAFETY: registers a plain function without arguments; it runs once, at exit.
        unsafe { libc::atexit(at_exit) };
    }
    if let Some(v) = var("OMP_DISPLAY_ENV") {
        match v.trim().to_ascii_lowercase().as_str() {
            "true" => display_env(&omp, false),
            "verbose" => display_env(&omp, true),
            _ => {}
        }
    }
    Ok(omp)
}

/// Stack of each worker unless `OMP_STACKSIZE` says otherwise. A worker waiting in a
/// taskwait or barrier runs other tasks on its own stack, and they may wait in turn, so
/// waits nest deeper than under GNU libgomp (whose taskwait runs only the waiting task's
/// children): 256 MiB, reserved address space that is touched only as deep as the waits
/// go.
const DEFAULT_STACK: usize = 256 << 20;

/// `OMP_STACKSIZE`: a number with an optional unit (B, K, M, G; K by default).
fn parse_stacksize(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_uppercase();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (&s[..], "K"),
    };
    let shift = match unit {
        "B" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// Whether the program loaded this runtime as LLVM's `libomp.so.5` (clang's ABI), not as
/// gcc's `libgomp.so.1`.
fn loaded_as_libomp() -> bool {
    let Ok(name) = std::ffi::CString::new(env::KMP_LIBRARY_FILE) else {
        return false;
    };
    // SAFETY: RTLD_NOLOAD only looks the library up among those loaded; the reference
    // it takes when found is given back at once.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        if handle.is_null() {
            false
        } else {
            libc::dlclose(handle);
            true
        }
    }
}

/// `OMP_SCHEDULE`: `[monotonic:|nonmonotonic:]kind[,chunk]`, packed as `run_sched`.
fn parse_schedule(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    // `omp_sched_monotonic`, kept with the kind so that omp_get_schedule returns it.
    let (monotonic, s) = match s.strip_prefix("monotonic:") {
        Some(rest) => (MONOTONIC, rest),
        None => (0, s.strip_prefix("nonmonotonic:").unwrap_or(&s)),
    };
    let (kind, chunk) = match s.split_once(',') {
        Some((k, c)) => (k.trim(), c.trim().parse::<u32>().ok().filter(|&c| c > 0)?),
        None => (s.trim(), 0),
    };
    let kind = match kind {
        "static" => SCHED_STATIC,
        "dynamic" => SCHED_DYNAMIC,
        "guided" => SCHED_GUIDED,
        "auto" => SCHED_AUTO,
        _ => return None,
    };
    let chunk = if chunk == 0 && kind != SCHED_STATIC {
        1
    } else {
        chunk
    };
    Some(((kind | monotonic) << 32) | u64::from(chunk))
}

/// Prints the settings in the format of GNU libgomp's `OMP_DISPLAY_ENV`, then Locus's.
pub(crate) fn display_env(omp: &Omp, verbose: bool) {
    let sched = omp.run_sched.load(Ordering::Relaxed);
    let kind = match (sched >> 32) & !MONOTONIC {
        SCHED_STATIC => "STATIC",
        SCHED_GUIDED => "GUIDED",
        SCHED_AUTO => "AUTO",
        _ => "DYNAMIC",
    };
    let mut text = String::from("\nOPENMP DISPLAY ENVIRONMENT BEGIN\n  _OPENMP = '201511'\n");
    text += &format!(
        "  OMP_DYNAMIC = 'FALSE'\n  OMP_NESTED = 'FALSE'\n  OMP_NUM_THREADS = '{}'\n  \
         OMP_SCHEDULE = '{kind},{}'\n  OMP_PROC_BIND = '{}'\n  OMP_MAX_ACTIVE_LEVELS = '1'\n  \
         OMP_THREAD_LIMIT = '{}'\n  OMP_CANCELLATION = 'FALSE'\n  OMP_MAX_TASK_PRIORITY = '{}'\n",
        omp.nthreads.load(Ordering::Relaxed),
        sched & 0xffff_ffff,
        var("OMP_PROC_BIND").unwrap_or_else(|| "FALSE".into()),
        omp.workers,
        omp.max_task_priority,
    );
    if verbose {
        text += &format!(
            "  LOCUS_RUNTIME = 'Locus {}'\n  LOCUS_CONFIG = '{}'\n  LOCUS_TOPOLOGY = '{}' ({} nodes)\n  \
             LOCUS_AFFINITY = '{}'\n  LOCUS_MIGRATION = '{}'\n  LOCUS_THROTTLE = '{}'\n",
            env!("CARGO_PKG_VERSION"),
            omp.rt.config(),
            omp.rt.topology().name(),
            omp.rt.topology().num_nodes(),
            if omp.strict_home { "strict" } else { "non-strict" },
            omp.migration.name(),
            omp.throttle,
        );
    }
    text += "OPENMP DISPLAY ENVIRONMENT END\n";
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Adds the report of a finished region.
pub(crate) fn add_report(omp: &Omp, report: Report) {
    let mut all = omp.report.lock().unwrap_or_else(|p| p.into_inner());
    match all.as_mut() {
        Some(r) => r.then(&report),
        None => *all = Some(report),
    }
}

/// Writes the report of the whole program to `LOCUS_OMP_REPORT` (at exit).
fn write_report() {
    let (Some(omp), Some(path)) = (OMP.get(), var(env::REPORT)) else {
        return;
    };
    let report = omp
        .report
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default();
    let mut json = serde_json::to_value(&report).unwrap_or_default();
    let c = &omp.counters;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    // Locus's own counts are of shared data, which an OpenMP program has none of: its
    // migrations are of dependence memory (`crate::place::migrate`).
    if let Some(m) = json.get_mut("migration").and_then(|m| m.as_object_mut()) {
        let pages = c.migrated_pages.each_ref().map(load);
        let mut all = 0;
        for (key, moved) in ["now_pages", "next_touch_pages", "auto_pages"]
            .into_iter()
            .zip(pages)
        {
            let before = m.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
            m.insert(key.into(), (before + moved).into());
            all += moved;
        }
        let bytes = m.get("bytes").and_then(|v| v.as_u64()).unwrap_or(0);
        m.insert(
            "bytes".into(),
            (bytes + all * crate::place::PAGE as u64).into(),
        );
    }
    if let Some(obj) = json.as_object_mut() {
        obj.insert(
            "program".into(),
            std::env::args().next().unwrap_or_default().into(),
        );
        obj.insert(
            "openmp".into(),
            serde_json::json!({
                "regions": load(&c.regions),
                "implicit_tasks": load(&c.implicit_tasks),
                "explicit_tasks": c.deferred_tasks.sum()
                    + c.undeferred_tasks.sum()
                    + c.throttled_tasks.sum(),
                "deferred_tasks": c.deferred_tasks.sum(),
                "undeferred_tasks": c.undeferred_tasks.sum(),
                "throttled_tasks": c.throttled_tasks.sum(),
                "dependences": c.dependences.sum(),
                "tasks_with_home": load(&c.with_home),
                "tasks_on_home": load(&c.on_home),
                "tasks_with_affinity": load(&c.with_affinity),
                "tasks_placed_by_affinity": load(&c.affinity_placed),
                "tasks_on_affinity_node": load(&c.on_affinity_node),
                "affinity_bytes": load(&c.affinity_bytes),
                "affinity_bytes_local": load(&c.affinity_bytes_local),
                "dependence_bytes": load(&c.dependence_bytes),
                "dependence_bytes_local": load(&c.dependence_bytes_local),
                "dependence_bytes_remote":
                    load(&c.dependence_bytes) - load(&c.dependence_bytes_local),
                "dependences_without_length": c.dependences_without_length.sum(),
                "process_s": omp.started.elapsed().as_secs_f64(),
            }),
        );
    }
    let text = serde_json::to_string_pretty(&json).unwrap_or_default();
    if let Err(e) = std::fs::write(&path, text + "\n") {
        let _ = writeln!(
            std::io::stderr(),
            "locus omp: cannot write the report to {path}: {e}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_as_libgomp_reads_them() {
        assert_eq!(parse_schedule("static"), Some(SCHED_STATIC << 32));
        assert_eq!(parse_schedule("dynamic"), Some((SCHED_DYNAMIC << 32) | 1));
        assert_eq!(parse_schedule("GUIDED,7"), Some((SCHED_GUIDED << 32) | 7));
        assert_eq!(
            parse_schedule("nonmonotonic:dynamic,4"),
            Some((SCHED_DYNAMIC << 32) | 4)
        );
        assert_eq!(
            parse_schedule("monotonic:dynamic,4"),
            Some(((SCHED_DYNAMIC | MONOTONIC) << 32) | 4)
        );
        assert_eq!(parse_schedule("fast"), None);
        assert_eq!(parse_schedule("static,0"), None);
    }

    #[test]
    fn stack_sizes_parse_with_kilobytes_by_default() {
        assert_eq!(parse_stacksize("512"), Some(512 << 10));
        assert_eq!(parse_stacksize("64M"), Some(64 << 20));
        assert_eq!(parse_stacksize(" 1g "), Some(1 << 30));
        assert_eq!(parse_stacksize("12Q"), None);
    }
}
