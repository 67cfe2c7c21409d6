//! Settings, runtimes and runs: `locus_settings_*`, `locus_runtime_*`, `locus_run`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use locus::{
    AllocMode, Config, Migration, ProcBind, RegionPolicy, Runtime, Topology, MIN_WORKER_STACK,
};

use crate::data::{detach_freed, DATA};
use crate::handles::Table;
use crate::report::{locus_report, REPORTS};
use crate::status::{c_str, guard, locus_status, put, CResult, Fail};
use crate::task::run_root;
use crate::team::TEAMS;

/// A runtime: pinned workers over a topology with a scheduling configuration. Made by
/// `locus_runtime_create`, freed by `locus_runtime_destroy`. The all-zero value is
/// the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_runtime {
    /// Opaque: a slot and its generation in Locus's table of runtimes.
    pub bits: u64,
}

/// The builder options of a runtime beyond configuration, topology and threads, set
/// by name with `locus_settings_set`. The all-zero value is the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_settings {
    /// Opaque: a slot and its generation in Locus's table of settings.
    pub bits: u64,
}

/// The options a settings object holds (each `None` until set: the builder's default).
#[derive(Clone, Default)]
pub(crate) struct Settings {
    window: Option<Option<usize>>,
    node_limit: Option<u64>,
    push_threshold: Option<u64>,
    push_weights: Option<(f64, f64)>,
    vicinity: Option<usize>,
    allocation: Option<AllocMode>,
    last_victim_first: Option<bool>,
    steal_half: Option<bool>,
    huge_pages: Option<bool>,
    shared_placement: Option<RegionPolicy>,
    proc_bind: Option<ProcBind>,
    migration: Option<Migration>,
    trace: Option<String>,
    worker_stack: Option<usize>,
}

pub(crate) static SETTINGS: Table<Settings> = Table::new("settings");

/// A runtime in the table.
pub(crate) struct RuntimeEntry {
    pub(crate) runtime: Arc<Runtime>,
}

pub(crate) static RUNTIMES: Table<RuntimeEntry> = Table::new("runtime");

/// The runtime of `handle`, cloned out of the table.
pub(crate) fn runtime_of(handle: locus_runtime) -> CResult<Arc<Runtime>> {
    RUNTIMES.with(handle.bits, |e| e.runtime.clone())
}

fn bad(key: &str, value: &str, expected: &str) -> Fail {
    Fail::new(
        locus_status::LOCUS_E_ARGUMENT,
        format!("setting `{key}`: bad value `{value}` (expected {expected})"),
    )
}

fn parse_bool(key: &str, value: &str) -> CResult<bool> {
    match value {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(bad(key, value, "true or false")),
    }
}

/// Parses a region policy: `interleave`, `bind:N`, `blocked`, `first-touch`.
pub(crate) fn parse_policy(value: &str) -> Option<RegionPolicy> {
    match value {
        "interleave" => Some(RegionPolicy::Interleave),
        "blocked" => Some(RegionPolicy::Blocked),
        "first-touch" => Some(RegionPolicy::FirstTouch),
        _ => value
            .strip_prefix("bind:")
            .and_then(|n| n.parse().ok())
            .map(RegionPolicy::Bind),
    }
}

impl Settings {
    fn set(&mut self, key: &str, value: &str) -> CResult {
        let int = |expected: &str| value.parse::<u64>().map_err(|_| bad(key, value, expected));
        match key {
            "window" => {
                self.window = Some(match value {
                    "none" => None,
                    _ => Some(
                        usize::try_from(int("a number of tasks or `none`")?)
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or_else(|| bad(key, value, "at least 1 task, or `none`"))?,
                    ),
                })
            }
            "node_limit" => self.node_limit = Some(int("a number of bytes")?),
            "push_threshold" => self.push_threshold = Some(int("a number of bytes")?),
            "push_weights" => {
                let weight = |w: &str| {
                    w.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|w| *w >= 0.0 && w.is_finite())
                };
                let parsed = value
                    .split_once(',')
                    .and_then(|(r, w)| Some((weight(r)?, weight(w)?)));
                self.push_weights = Some(parsed.ok_or_else(|| {
                    bad(key, value, "READ,WRITE weights, finite and not negative")
                })?);
            }
            "vicinity" => {
                self.vicinity = Some(
                    usize::try_from(int("a number of workers")?)
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| bad(key, value, "at least 1 worker"))?,
                )
            }
            "allocation" => {
                self.allocation = Some(match value {
                    "immediate" => AllocMode::Immediate,
                    "deferred" => AllocMode::Deferred,
                    _ => return Err(bad(key, value, "immediate or deferred")),
                })
            }
            "last_victim_first" => self.last_victim_first = Some(parse_bool(key, value)?),
            "steal_half" => self.steal_half = Some(parse_bool(key, value)?),
            "huge_pages" => self.huge_pages = Some(parse_bool(key, value)?),
            "shared_placement" => {
                self.shared_placement = Some(parse_policy(value).ok_or_else(|| {
                    bad(key, value, "interleave, bind:NODE, blocked or first-touch")
                })?)
            }
            "proc_bind" => {
                self.proc_bind = Some(match value {
                    "spread" => ProcBind::Spread,
                    "close" => ProcBind::Close,
                    _ => return Err(bad(key, value, "spread or close")),
                })
            }
            "migration" => {
                self.migration = Some(
                    value
                        .parse()
                        .map_err(|_| bad(key, value, "none, now, next-touch or auto"))?,
                )
            }
            "trace" => self.trace = Some(value.to_string()),
            "worker_stack" => {
                let expected = format!("a number of bytes, at least {MIN_WORKER_STACK}");
                let bytes = int(&expected)?;
                self.worker_stack = Some(
                    usize::try_from(bytes)
                        .ok()
                        .filter(|&b| b >= MIN_WORKER_STACK)
                        .ok_or_else(|| bad(key, value, &expected))?,
                )
            }
            _ => {
                return Err(Fail::new(
                    locus_status::LOCUS_E_ARGUMENT,
                    format!(
                        "unknown setting `{key}` (expected one of: window, node_limit, \
                         push_threshold, push_weights, vicinity, allocation, \
                         last_victim_first, steal_half, huge_pages, shared_placement, \
                         proc_bind, migration, trace, worker_stack)"
                    ),
                ))
            }
        }
        Ok(())
    }

    fn apply(&self, mut b: locus::RuntimeBuilder) -> locus::RuntimeBuilder {
        if let Some(w) = self.window {
            b = b.window_bound(w);
        }
        if let Some(n) = self.node_limit {
            b = b.node_limit(n);
        }
        if let Some(t) = self.push_threshold {
            b = b.push_threshold(t);
        }
        if let Some((r, w)) = self.push_weights {
            b = b.push_weights(r, w);
        }
        if let Some(v) = self.vicinity {
            b = b.vicinity(v);
        }
        if let Some(a) = self.allocation {
            b = b.allocation(a);
        }
        if let Some(on) = self.last_victim_first {
            b = b.last_victim_first(on);
        }
        if let Some(on) = self.steal_half {
            b = b.steal_half(on);
        }
        if let Some(on) = self.huge_pages {
            b = b.huge_pages(on);
        }
        if let Some(p) = self.shared_placement {
            b = b.shared_placement(p);
        }
        if let Some(bind) = self.proc_bind {
            b = b.proc_bind(bind);
        }
        if let Some(m) = self.migration {
            b = b.migration(m);
        }
        if let Some(t) = &self.trace {
            b = b.trace(t);
        }
        if let Some(bytes) = self.worker_stack {
            b = b.worker_stack_size(bytes);
        }
        b
    }
}

/// Makes an empty settings object (every option at the builder's default).
///
/// # Safety
///
/// `out` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_settings_create(out: *mut locus_settings) -> locus_status {
    guard(|| {
        if out.is_null() {
            return Err(crate::status::null("out"));
        }
        let bits = SETTINGS.insert(Settings::default());
        // SAFETY: non-NULL, and valid for a write by the caller's contract.
        unsafe { put(out, locus_settings { bits }, "out") }
    })
}

/// Sets one option by name, from its text: `window` (a number of tasks, or `none`),
/// `node_limit` and `push_threshold` (bytes), `push_weights` (`READ,WRITE`),
/// `vicinity` (workers), `allocation` (`immediate` or `deferred`),
/// `last_victim_first`, `steal_half` and `huge_pages` (`true` or `false`; `huge_pages`:
/// the memory pools ask for transparent huge pages, off by default), `shared_placement`
/// (`interleave`, `bind:NODE`, `blocked`, `first-touch`), `proc_bind` (`spread`, the
/// default: one CPU of each node in turn; `close`: fill a node before the next, when
/// there are fewer workers than CPUs), `migration` (`none`, the default: a task
/// accesses shared data where it lies; `now` and `next-touch`: its pages on other nodes
/// move to the task's node before the body runs; `auto`: when that costs less than the
/// remote accesses it saves), `trace` (a file path for a Chrome trace of every
/// run), `worker_stack` (bytes of stack of each worker thread: 8 MiB by default, at
/// least 256 KiB; a task waiting in `locus_wait` or `locus_ctx_fetch` runs others on
/// its worker's stack, so a recursion that waits at every level needs a stack as deep
/// as it is; with less than a quarter of it left (at most 1 MiB) the run fails with
/// `LOCUS_E_RUN_FAILED` instead of overflowing it). An unknown name or a bad value is
/// `LOCUS_E_ARGUMENT`, naming it; the object is then unchanged. Values no runtime
/// accepts are refused here, not at `locus_runtime_create`: a `window` or `vicinity`
/// of 0, negative or infinite `push_weights`, a `worker_stack` under 262144.
///
/// # Safety
///
/// `key` and `value` are NULL (an error) or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn locus_settings_set(
    settings: locus_settings,
    key: *const c_char,
    value: *const c_char,
) -> locus_status {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let key = unsafe { c_str(key, "key") }?;
        // SAFETY: forwarded from the caller.
        let value = unsafe { c_str(value, "value") }?;
        SETTINGS.with(settings.bits, |s| {
            let mut changed = s.clone();
            changed.set(key, value)?;
            *s = changed;
            Ok(())
        })?
    })
}

/// Frees a settings object. A runtime made with it keeps its options.
#[no_mangle]
pub extern "C" fn locus_settings_free(settings: locus_settings) -> locus_status {
    guard(|| SETTINGS.remove(settings.bits).map(drop))
}

/// Makes a runtime and starts its workers.
///
/// - `config`: a configuration name (`ws`, `dsa-base`, `push-in`, `push-out`,
///   `push-weighted`, `dfa`, `dsa-opt`, `shm-base`, `home`, `bf`), or NULL for the
///   default (`dsa-opt`).
/// - `topology`: `host`, `NxC` (virtual nodes laid over the host's CPUs), a spec with
///   distances, or a preset name; NULL for the host.
/// - `threads`: number of workers, 0 for one per CPU of the topology.
/// - `settings`: further options (`locus_settings_set`), or the null handle.
///
/// On success writes the runtime's handle to `out`. A bad name or spec is
/// `LOCUS_E_CONFIG`, and the message names it.
///
/// # Safety
///
/// The strings are NULL or NUL-terminated; `out` is NULL (an error) or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn locus_runtime_create(
    config: *const c_char,
    topology: *const c_char,
    threads: usize,
    settings: locus_settings,
    out: *mut locus_runtime,
) -> locus_status {
    guard(|| {
        if out.is_null() {
            return Err(crate::status::null("out"));
        }
        let mut builder = Runtime::builder();
        if !config.is_null() {
            // SAFETY: forwarded from the caller.
            let name = unsafe { c_str(config, "config") }?;
            builder = builder.config(name.parse::<Config>()?);
        }
        if !topology.is_null() {
            // SAFETY: forwarded from the caller.
            let spec = unsafe { c_str(topology, "topology") }?;
            let topo = Topology::from_spec(spec).map_err(|e| {
                Fail::new(
                    locus_status::LOCUS_E_CONFIG,
                    format!("topology `{spec}`: {e}"),
                )
            })?;
            builder = builder.topology(topo);
        }
        if threads > 0 {
            builder = builder.threads(threads);
        }
        if settings.bits != 0 {
            let s = SETTINGS.with(settings.bits, |s| s.clone())?;
            builder = s.apply(builder);
        }
        let runtime = Arc::new(builder.build()?);
        let bits = RUNTIMES.insert(RuntimeEntry { runtime });
        // SAFETY: checked non-NULL above; valid for a write by the caller's contract.
        unsafe { put(out, locus_runtime { bits }, "out") }
    })
}

/// Stops a runtime's workers and frees it, with every data and team handle it made
/// (their handles become invalid). A run in progress on another thread finishes first.
/// Calling it from inside a task of its own run frees the handle; the workers stop
/// when the run is over.
#[no_mangle]
pub extern "C" fn locus_runtime_destroy(runtime: locus_runtime) -> locus_status {
    guard(|| {
        let entry = RUNTIMES.remove(runtime.bits)?;
        let data = DATA.remove_where(|d| d.runtime == runtime.bits);
        for d in &data {
            detach_freed(&entry.runtime, d);
        }
        let teams = TEAMS.remove_where(|t| t.runtime == runtime.bits);
        drop(teams);
        drop(data);
        drop(entry);
        Ok(())
    })
}

/// The runtime's number of workers and of NUMA nodes (either pointer may be NULL).
///
/// # Safety
///
/// `workers` and `nodes` are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_runtime_size(
    runtime: locus_runtime,
    workers: *mut usize,
    nodes: *mut usize,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        if !workers.is_null() {
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { workers.write(rt.workers()) };
        }
        if !nodes.is_null() {
            // SAFETY: as above.
            unsafe { nodes.write(rt.topology().num_nodes()) };
        }
        Ok(())
    })
}

/// Bytes the runtime holds now: in use from its per-node pools (task buffers) and in
/// shared data. Both are zero once every datum is freed and no run is in progress.
///
/// # Safety
///
/// `pool_bytes` and `shared_bytes` are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_runtime_bytes_in_use(
    runtime: locus_runtime,
    pool_bytes: *mut u64,
    shared_bytes: *mut u64,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        if !pool_bytes.is_null() {
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { pool_bytes.write(rt.pool_bytes_in_use()) };
        }
        if !shared_bytes.is_null() {
            // SAFETY: as above.
            unsafe { shared_bytes.write(rt.shared_bytes_in_use()) };
        }
        Ok(())
    })
}

/// Runs a program: `root`, the control program, runs as the run's root task on
/// worker 0 with `arg`, and spawns tasks with `locus_spawn`
/// on the context it gets (it has no views). Returns once every task has finished.
///
/// If `report` is not NULL, the run's report is written there, also for a failed run
/// (free it with `locus_report_free`). A run fails (`LOCUS_E_RUN_FAILED`, the message
/// naming the task) when a body returns non-zero, a `locus_spawn` is refused (the
/// message names the refused task, its status and the reason), a declaration is
/// refused or a buffer cannot be allocated. A root that returns non-zero, or whose
/// spawn was refused, fails the run too, after its tasks have finished.
///
/// What a failed run leaves, by one rule the program's text decides (never where its
/// tasks ran): a versioned datum keeps its last complete version, the contents written
/// by the last task that wrote it and returned 0 (a task that returned non-zero never
/// publishes what it wrote, even when it updated the buffer in place, and even if it
/// wrote nothing); a shared datum (`locus_data_shared`, written in place) that a failed
/// task declared `LOCUS_WRITE` or `LOCUS_READ_WRITE` is poisoned (unless the task saw
/// it through a gathered copy, covering several segments of partitioned data, which is
/// written back only after the body): `locus_fetch` and tasks reading it get
/// `LOCUS_E_STATE` until a task writes it whole (`LOCUS_WRITE`).
/// Called from inside a task, or from any thread while a run of the runtime is in
/// progress: `LOCUS_E_STATE` (rather than waiting for that run: one of its bodies may be
/// waiting for the calling thread, and the wait would never end).
///
/// # Safety
///
/// `root` is a valid function; `report` is NULL or valid for a write; `arg` is
/// whatever `root` expects.
#[no_mangle]
pub unsafe extern "C" fn locus_run(
    runtime: locus_runtime,
    root: Option<
        unsafe extern "C" fn(
            ctx: crate::task::locus_ctx,
            views: *const crate::task::locus_view,
            nviews: usize,
            arg: *mut c_void,
        ) -> i32,
    >,
    arg: *mut c_void,
    report: *mut locus_report,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        let root = root.ok_or_else(|| crate::status::null("root"))?;
        let (outcome, rep) = run_root(&rt, runtime.bits, root, arg);
        if !report.is_null() {
            let bits = REPORTS.insert(rep);
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { report.write(locus_report { bits }) };
        }
        outcome
    })
}
