//! [`TraceRecorder`]: the observer that keeps the tasks of every run of a runtime, one
//! buffer per worker, and writes them as a Chrome trace, the runs one after another.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crossbeam_utils::CachePadded;
use flate2::write::GzEncoder;
use flate2::Compression;
use locus_mem::pool::Pools;

use super::chrome::{node_colour, Arg, ChromeTrace};
use super::{EngineView, Observer, Ready, TaskBytes, TaskSpan};

/// Records the tasks of every run of a runtime and writes them as a Chrome trace (see
/// the [module documentation](super) for what the trace shows and how to open it).
///
/// [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace) installs one that writes a
/// file at the end of every run (holding that run and every one before it). Installed
/// with [`RuntimeBuilder::observer`](crate::RuntimeBuilder::observer) instead, it keeps
/// the runs until [`write`](Self::write) or [`write_file`](Self::write_file) is called,
/// which returns any I/O error to the caller. A recorder watches one runtime.
///
/// ```
/// use std::sync::Arc;
/// use locus::observe::TraceRecorder;
/// use locus::{Runtime, Topology};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let recorder = Arc::new(TraceRecorder::new());
/// let rt = Runtime::builder()
///     .topology(Topology::from_spec("1x2")?)
///     .observer(recorder.clone())
///     .build()?;
/// rt.run(|s| s.spawn("hello", (), |_, ()| {}))?.value?;
/// let mut json = Vec::new();
/// recorder.write(&mut json)?;
/// assert!(String::from_utf8(json)?.contains("\"task\":\"hello\""));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct TraceRecorder {
    /// Where `run_finished` writes the trace, if anywhere.
    path: Option<PathBuf>,
    attached: OnceLock<Attached>,
    /// Every kept run's start and end on the engine's clock, in order.
    runs: Mutex<Runs>,
    /// Most tasks kept: past them, a new run drops the runs before it.
    max_tasks: usize,
}

/// The runs kept, after the `dropped` ones that the limit on kept tasks let go.
#[derive(Clone, Debug, Default)]
struct Runs {
    dropped: u32,
    clocks: Vec<RunClock>,
}

/// Most tasks a recorder keeps, over its runs (some 100 bytes each): past them, the
/// next run starts a fresh trace, which says how many runs went before it.
const MAX_KEPT_TASKS: usize = 1 << 20;

struct Attached {
    engine: String,
    topology: String,
    worker_node: Vec<usize>,
    pools: Option<Arc<Pools>>,
    /// One log per worker; during a run only that worker locks it (the
    /// lock never bounces between threads, it only makes the read at the end safe).
    logs: Box<[CachePadded<Mutex<WorkerLog>>]>,
    /// What is known of each engine key: its incarnation and whether it is ready and
    /// not started. Taken by `ready` and `task` (tracing only); looked up, never
    /// iterated, so the trace does not depend on its order.
    keys: Mutex<HashMap<u64, KeyState>>,
    /// The number of the run in progress (or the last), from 0.
    run: AtomicU32,
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("engine", &self.engine)
            .field("topology", &self.topology)
            .field("worker_node", &self.worker_node)
            .finish_non_exhaustive()
    }
}

/// A task of the trace: its run, an engine key and which task at that key it was (keys
/// of the `threads` engine are addresses, reused once a task has ended).
type Uid = (u32, u64, u32);

#[derive(Clone, Copy, Debug, Default)]
struct KeyState {
    incarnation: u32,
    /// A task at this incarnation has been recorded: a task at the same key that is
    /// recorded without being made ready first is a new incarnation.
    recorded: bool,
    /// Made ready (by whom, when) and not started yet.
    pending: Option<(Option<Uid>, u64)>,
}

#[derive(Clone, Copy, Debug, Default)]
struct RunClock {
    start_ns: u64,
    end_ns: Option<u64>,
}

/// The tasks one worker ran, names packed in one string (no allocation per task once
/// the buffers have grown).
#[derive(Debug, Default)]
struct WorkerLog {
    names: String,
    records: Vec<Record>,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    /// `names[name.0..name.1]`.
    name: (usize, usize),
    uid: Uid,
    made_ready_by: Option<Uid>,
    ready_ns: Option<u64>,
    start_ns: u64,
    end_ns: u64,
    bytes: TaskBytes,
    /// Bytes in use in the pool of the worker's node when the task ended.
    memory_in_use: Option<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data (pushes only).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The name of a task's slice: its locality, which Perfetto colours it by. `local`:
/// every byte it accessed was in its worker's node; `remote`: none was; `mixed`; `no
/// data`: it accessed no runtime-managed byte.
pub fn locality_class(b: &TaskBytes) -> &'static str {
    let local = b.read_local + b.write_local;
    let remote = b.read_remote + b.write_remote;
    match (local, remote) {
        (0, 0) => "no data",
        (_, 0) => "local",
        (0, _) => "remote",
        _ => "mixed",
    }
}

/// A task's kind, the name of its slice: its name before any index or suffix (a space,
/// `(`, `[`, `{`, `#`, `:`, `,` or `=`, then trailing digits and `.`, `_` or `-`):
/// `gemm 3 2` and `gemm(3,2)` are `gemm`, `t17` is `t`; a name of digits only is kept.
pub fn task_kind(name: &str) -> &str {
    let head = name
        .find([' ', '(', '[', '{', '#', ':', ',', '='])
        .map_or(name, |at| &name[..at]);
    let kind = head.trim_end_matches(|c: char| c.is_ascii_digit() || ".-_".contains(c));
    if kind.is_empty() {
        if head.is_empty() {
            name
        } else {
            head
        }
    } else {
        kind
    }
}

/// Counter tracks of every node, as (name, series): Perfetto shows them as `memory in
/// use bytes`, `ready tasks`, `local bytes` and `remote bytes`.
const MEMORY: (&str, &str) = ("memory in use", "bytes");
const READY: (&str, &str) = ("ready", "tasks");
const LOCAL: (&str, &str) = ("local", "bytes");
const REMOTE: (&str, &str) = ("remote", "bytes");

impl TraceRecorder {
    /// A recorder that keeps every run until [`write`](Self::write) is called.
    pub fn new() -> Self {
        TraceRecorder {
            max_tasks: MAX_KEPT_TASKS,
            ..TraceRecorder::default()
        }
    }

    /// A recorder that writes the trace to `path` when each run ends, that run and the
    /// ones before it (replacing the file whole, see [`write_file`](Self::write_file)); an error then is
    /// printed on stderr in one line. Nothing is checked here:
    /// [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace) checks that the file can
    /// be written before the workers start.
    pub fn to_file(path: impl Into<PathBuf>) -> Self {
        TraceRecorder {
            path: Some(path.into()),
            ..TraceRecorder::new()
        }
    }

    /// The file the trace of every run goes to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Tasks recorded, in every run so far.
    pub fn tasks(&self) -> usize {
        self.attached
            .get()
            .map_or(0, |a| a.logs.iter().map(|l| lock(l).records.len()).sum())
    }

    /// Writes the Chrome trace of every run so far to `out` (see the [module
    /// documentation](super) for its layout): the runs one after another on the time
    /// axis, each start marked by a line across the trace (`run K`); one process per node, one row per worker,
    /// one slice per task named by its kind ([`task_kind`]) with its locality as
    /// category, flow events from each task to the tasks it made ready, counter tracks
    /// per node. Before any run, the trace has processes and rows and no events.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        let Runs {
            dropped,
            clocks: runs,
        } = lock(&self.runs).clone();
        let mut t = ChromeTrace::new(out)?;
        let Some(a) = self.attached.get() else {
            t.process_name(0, "locus: no runtime attached")?;
            t.finish()?;
            return Ok(());
        };
        let nodes = a.worker_node.iter().max().map_or(1, |&n| n + 1);
        let pid = |node: usize| node as u32 + 1;
        t.sorted_process_name(
            0,
            0,
            &format!(
                "locus {} on {}, {} worker{}",
                a.engine,
                a.topology,
                a.worker_node.len(),
                if a.worker_node.len() == 1 { "" } else { "s" }
            ),
        )?;
        for node in 0..nodes {
            let workers = a.worker_node.iter().filter(|&&n| n == node).count();
            let s = if workers == 1 { "" } else { "s" };
            t.sorted_process_name(
                pid(node),
                node as u32 + 1,
                &format!("node {node} ({workers} worker{s})"),
            )?;
        }
        for (w, &node) in a.worker_node.iter().enumerate() {
            t.sorted_thread_name(pid(node), w as u32, w as u32, &format!("worker {w}"))?;
        }

        // Every record, numbered in start order (enclosing tasks first: a task whose
        // body helped run others starts before them and ends after).
        let logs: Vec<MutexGuard<'_, WorkerLog>> = a.logs.iter().map(|l| lock(l)).collect();
        let mut all: Vec<(usize, &Record)> = logs
            .iter()
            .enumerate()
            .flat_map(|(w, log)| log.records.iter().map(move |r| (w, r)))
            .collect();
        all.sort_by_key(|&(w, r)| (r.start_ns, std::cmp::Reverse(r.end_ns), w));
        let number: HashMap<Uid, usize> = all
            .iter()
            .enumerate()
            .map(|(i, (_, r))| (r.uid, i))
            .collect();
        // The runs one after another: run k starts where run k - 1 ended (the time
        // between runs, spent outside the runtime, is left out), on every engine's clock
        // (the simulator's starts each run at 0).
        let mut last = vec![None; runs.len()];
        for (_, r) in &all {
            if let Some(l) = last.get_mut(r.uid.0 as usize) {
                *l = Some(r.end_ns.max(l.unwrap_or(0)));
            }
        }
        let mut offsets = Vec::with_capacity(runs.len());
        let mut next = 0u64;
        for (k, run) in runs.iter().enumerate() {
            offsets.push(next);
            let end = run.end_ns.or(last[k]).unwrap_or(run.start_ns);
            let length = end.saturating_sub(run.start_ns);
            let number = u64::from(dropped) + k as u64 + 1;
            let name = if k == 0 && dropped > 0 {
                format!(
                    "run {number} (runs 1 to {dropped} dropped: more than {} tasks)",
                    self.max_tasks
                )
            } else {
                format!("run {number}")
            };
            t.global_instant(
                &name,
                next,
                &[
                    ("run", Arg::Int(number)),
                    (
                        "duration_ns",
                        Arg::Signed(run.end_ns.map_or(-1, |_| length as i64)),
                    ),
                ],
            )?;
            next += length;
        }
        let at_in = |run: u32, ns: u64| {
            let k = run as usize;
            let start = runs.get(k).map_or(0, |r| r.start_ns);
            offsets.get(k).copied().unwrap_or(0) + ns.saturating_sub(start)
        };
        for (i, &(w, r)) in all.iter().enumerate() {
            let b = &r.bytes;
            let by = r.made_ready_by.and_then(|u| number.get(&u).copied());
            let at = |ns: u64| at_in(r.uid.0, ns);
            let ready = r.ready_ns.map(at);
            let name = &logs[w].names[r.name.0..r.name.1];
            t.complete(
                pid(a.worker_node[w]),
                w as u32,
                task_kind(name),
                locality_class(b),
                Some(node_colour(b.data_node)),
                at(r.start_ns),
                r.end_ns.saturating_sub(r.start_ns),
                &[
                    ("task", Arg::Str(name)),
                    ("run", Arg::Int(u64::from(dropped) + r.uid.0 as u64 + 1)),
                    ("locality", Arg::Str(locality_class(b))),
                    ("task_id", Arg::Int(i as u64)),
                    ("made_ready_by", Arg::Signed(by.map_or(-1, |b| b as i64))),
                    ("ready_ns", Arg::Signed(ready.map_or(-1, |r| r as i64))),
                    (
                        "wait_ns",
                        Arg::Signed(ready.map_or(-1, |q| at(r.start_ns).saturating_sub(q) as i64)),
                    ),
                    ("worker", Arg::Int(w as u64)),
                    ("worker_node", Arg::Int(a.worker_node[w] as u64)),
                    ("data_node", Arg::Int(b.data_node as u64)),
                    ("read_local_bytes", Arg::Int(b.read_local)),
                    ("read_remote_bytes", Arg::Int(b.read_remote)),
                    ("write_local_bytes", Arg::Int(b.write_local)),
                    ("write_remote_bytes", Arg::Int(b.write_remote)),
                ],
            )?;
        }
        // Arrows: from the moment of the activation inside the producer's slice (its
        // last nanosecond when the activation came as it finished) to the start of the
        // task made ready.
        for (i, &(w, r)) in all.iter().enumerate() {
            let Some(&p) = r.made_ready_by.and_then(|u| number.get(&u)) else {
                continue;
            };
            let (pw, producer) = all[p];
            let at = |ns: u64| at_in(r.uid.0, ns);
            let last = producer.end_ns.saturating_sub(1).max(producer.start_ns);
            let from = r.ready_ns.unwrap_or(last).clamp(producer.start_ns, last);
            t.flow_start(pid(a.worker_node[pw]), pw as u32, i as u64, at(from))?;
            t.flow_end(pid(a.worker_node[w]), w as u32, i as u64, at(r.start_ns))?;
        }
        // Counter tracks, per node, in time order.
        for node in 0..nodes {
            let mine = all.iter().filter(|(w, _)| a.worker_node[*w] == node);
            let mut memory: Vec<(u64, u64)> = mine
                .clone()
                .filter_map(|(_, r)| r.memory_in_use.map(|m| (at_in(r.uid.0, r.end_ns), m)))
                .collect();
            memory.sort_by_key(|e| e.0);
            let mut ready: Vec<(u64, i64)> = Vec::new();
            let mut local: Vec<(u64, u64)> = Vec::new();
            let mut remote: Vec<(u64, u64)> = Vec::new();
            for (_, r) in mine {
                let at = |ns: u64| at_in(r.uid.0, ns);
                if let Some(rn) = r.ready_ns {
                    ready.push((at(rn), 1));
                    ready.push((at(r.start_ns), -1));
                }
                local.push((at(r.end_ns), r.bytes.read_local + r.bytes.write_local));
                remote.push((at(r.end_ns), r.bytes.read_remote + r.bytes.write_remote));
            }
            // Starts before arrivals at the same moment: the count never goes below 0.
            ready.sort();
            local.sort();
            remote.sort();
            t.counter(pid(node), MEMORY, 0, memory.first().map_or(0, |m| m.1))?;
            for (ts, m) in memory {
                t.counter(pid(node), MEMORY, ts, m)?;
            }
            t.counter(pid(node), READY, 0, 0)?;
            let mut count = 0i64;
            for (k, &(ts, d)) in ready.iter().enumerate() {
                count += d;
                if ready.get(k + 1).map_or(true, |n| n.0 != ts) {
                    t.counter(pid(node), READY, ts, count.max(0) as u64)?;
                }
            }
            for (track, events) in [(LOCAL, &local), (REMOTE, &remote)] {
                t.counter(pid(node), track, 0, 0)?;
                let mut sum = 0;
                for (k, &(ts, bytes)) in events.iter().enumerate() {
                    sum += bytes;
                    if events.get(k + 1).map_or(true, |n| n.0 != ts) {
                        t.counter(pid(node), track, ts, sum)?;
                    }
                }
            }
        }
        t.finish()?;
        Ok(())
    }

    /// Writes the trace of the last run to the file at `path` (see [`write`](Self::write)),
    /// whole or not at all: through a temporary file beside it, renamed over it once
    /// complete ([`replace_file`](super::replace_file)); on an error a previous file at
    /// `path` is left as it was. A name ending in `.gz` gets a gzip-compressed trace.
    pub fn write_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        if path.extension().is_some_and(|e| e == "gz") {
            super::replace_file(path, |out| {
                let mut gz = GzEncoder::new(out, Compression::default());
                self.write(&mut gz)?;
                gz.finish()?;
                Ok(())
            })
        } else {
            super::replace_file(path, |out| self.write(out))
        }
    }
}

impl Observer for TraceRecorder {
    fn attach(&self, engine: &EngineView<'_>) -> Result<(), String> {
        let attached = Attached {
            engine: engine.engine.to_string(),
            topology: engine.topology.to_string(),
            worker_node: engine.worker_node.to_vec(),
            pools: engine.pools.cloned(),
            logs: engine
                .worker_node
                .iter()
                .map(|_| CachePadded::new(Mutex::new(WorkerLog::default())))
                .collect(),
            keys: Mutex::new(HashMap::new()),
            run: AtomicU32::new(0),
        };
        self.attached
            .set(attached)
            .map_err(|_| "a trace recorder records one runtime; this one already has one".into())
    }

    fn run_started(&self, at_ns: u64) {
        let mut runs = lock(&self.runs);
        if let Some(a) = self.attached.get() {
            // Past the limit, the runs before this one go: memory stays bounded.
            if self.tasks() > self.max_tasks {
                runs.dropped += runs.clocks.len() as u32;
                runs.clocks.clear();
                for log in a.logs.iter() {
                    let mut log = lock(log);
                    log.names.clear();
                    log.records.clear();
                }
            }
        }
        runs.clocks.push(RunClock {
            start_ns: at_ns,
            end_ns: None,
        });
        if let Some(a) = self.attached.get() {
            // Keys are the engine's per run: a new run numbers its tasks afresh.
            lock(&a.keys).clear();
            a.run.store(runs.clocks.len() as u32 - 1, Ordering::Relaxed);
        }
    }

    fn ready(&self, ready: &Ready) {
        let Some(a) = self.attached.get() else {
            return;
        };
        let run = a.run.load(Ordering::Relaxed);
        let mut keys = lock(&a.keys);
        // The activating task is running: its incarnation is the current one.
        let by = ready
            .by
            .map(|b| (run, b, keys.get(&b).map_or(0, |s| s.incarnation)));
        let state = keys.entry(ready.task).or_default();
        if state.pending.is_none() {
            if state.recorded {
                state.incarnation += 1;
                state.recorded = false;
            }
            state.pending = Some((by, ready.at_ns));
        }
    }

    fn task(&self, span: &TaskSpan<'_>) {
        let Some(a) = self.attached.get() else {
            return;
        };
        let Some(log) = a.logs.get(span.worker) else {
            return;
        };
        let run = a.run.load(Ordering::Relaxed);
        let (uid, pending) = {
            let mut keys = lock(&a.keys);
            let state = keys.entry(span.id).or_default();
            let pending = state.pending.take();
            if pending.is_none() && state.recorded {
                state.incarnation += 1;
            }
            state.recorded = true;
            ((run, span.id, state.incarnation), pending)
        };
        let memory_in_use = a.pools.as_ref().map(|p| p.bytes_in_use_on(span.node));
        let mut log = lock(log);
        let from = log.names.len();
        log.names.push_str(span.name);
        let to = log.names.len();
        log.records.push(Record {
            name: (from, to),
            uid,
            made_ready_by: pending.and_then(|p| p.0),
            ready_ns: pending.map(|p| p.1),
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            bytes: span.bytes,
            memory_in_use,
        });
    }

    fn run_finished(&self, at_ns: u64) {
        if let Some(run) = lock(&self.runs).clocks.last_mut() {
            run.end_ns = Some(at_ns);
        }
        if let Some(path) = &self.path {
            if let Err(e) = self.write_file(path) {
                eprintln!("locus: cannot write the trace to {}: {e}", path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: u64, name: &str, start_ns: u64, end_ns: u64) -> TaskSpan<'_> {
        TaskSpan {
            id,
            name,
            worker: 0,
            node: 0,
            start_ns,
            end_ns,
            bytes: TaskBytes::default(),
        }
    }

    /// A key reused by a later task (the `threads` engine's keys are addresses) names a
    /// new task; a task queued again is made ready once.
    #[test]
    fn reused_keys_are_new_tasks_and_arrows_join_the_right_ones() {
        let r = TraceRecorder::new();
        r.attach(&EngineView {
            engine: "test",
            topology: "1x1",
            worker_node: &[0],
            pools: None,
        })
        .unwrap();
        r.run_started(0);
        let ready = |task, by, at_ns| r.ready(&Ready { task, by, at_ns });
        // The root (key 9) makes `a` (key 1) ready; `a` makes `b` (key 2) ready, twice
        // (queued again); `a` ends and key 1 comes back as `c`, made ready by `b`.
        ready(1, Some(9), 10);
        r.task(&span(1, "a", 20, 30));
        ready(2, Some(1), 30);
        ready(2, Some(1), 35);
        r.task(&span(9, "root", 0, 100));
        ready(1, Some(2), 45);
        r.task(&span(2, "b", 40, 50));
        r.task(&span(1, "c", 60, 70));
        r.run_finished(100);
        let mut out = Vec::new();
        r.write(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let slices: Vec<&serde_json::Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        let id = |task: &str| {
            slices.iter().find(|e| e["args"]["task"] == task).unwrap()["args"]["task_id"]
                .as_i64()
                .unwrap()
        };
        let by = |task: &str| {
            slices.iter().find(|e| e["args"]["task"] == task).unwrap()["args"]["made_ready_by"]
                .as_i64()
                .unwrap()
        };
        let ready_ns = |task: &str| {
            slices.iter().find(|e| e["args"]["task"] == task).unwrap()["args"]["ready_ns"]
                .as_i64()
                .unwrap()
        };
        assert_eq!([id("root"), id("a"), id("b"), id("c")], [0, 1, 2, 3]);
        assert_eq!(by("root"), -1);
        assert_eq!(by("a"), id("root"));
        assert_eq!(by("b"), id("a"));
        assert_eq!(by("c"), id("b"), "key 1 again: a new task");
        assert_eq!(ready_ns("b"), 30, "the first time counts");
        let flows = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "f")
            .count();
        assert_eq!(flows, 3);
        assert_eq!(locality_class(&TaskBytes::default()), "no data");
    }

    /// The trace `r` writes, parsed.
    fn written(r: &TraceRecorder) -> serde_json::Value {
        let mut out = Vec::new();
        r.write(&mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    /// Past the limit on kept tasks, a new run drops the runs before it, and the trace
    /// says so.
    #[test]
    fn the_runs_kept_are_bounded() {
        let r = TraceRecorder {
            max_tasks: 3,
            ..TraceRecorder::new()
        };
        r.attach(&EngineView {
            engine: "sim",
            topology: "1x1",
            worker_node: &[0],
            pools: None,
        })
        .unwrap();
        for _ in 0..5 {
            r.run_started(0);
            r.task(&span(9, "root", 0, 100));
            r.task(&span(1, "triad 1", 10, 60));
            r.run_finished(100);
        }
        // Runs 1 and 2 (4 tasks) went when run 3 began; runs 3 and 4 when run 5 did.
        assert_eq!(r.tasks(), 2);
        let v = written(&r);
        let events = v["traceEvents"].as_array().unwrap();
        let marks: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "i").collect();
        assert_eq!(marks.len(), 1);
        assert_eq!(
            marks[0]["name"],
            "run 5 (runs 1 to 4 dropped: more than 3 tasks)"
        );
        assert!(events
            .iter()
            .filter(|e| e["ph"] == "X")
            .all(|e| e["args"]["run"] == 5));
    }

    #[test]
    fn kinds_are_names_before_any_index() {
        for (name, kind) in [
            ("gemm 3 2", "gemm"),
            ("gemm(3,2)", "gemm"),
            ("potrf", "potrf"),
            ("t17", "t"),
            ("block.3.2", "block"),
            ("kmeans-reduce", "kmeans-reduce"),
            ("fill_12", "fill"),
            ("42", "42"),
            ("", ""),
            (" x", " x"),
        ] {
            assert_eq!(task_kind(name), kind, "{name:?}");
        }
    }

    /// Every run is kept, each after the one before on the time axis (the simulator's
    /// clock starts every run at 0), each start marked by a line across the trace.
    #[test]
    fn every_run_is_kept_one_after_another() {
        let r = TraceRecorder::new();
        r.attach(&EngineView {
            engine: "sim",
            topology: "1x1",
            worker_node: &[0],
            pools: None,
        })
        .unwrap();
        for run in 0..3u64 {
            r.run_started(0);
            r.ready(&Ready {
                task: 1,
                by: Some(9),
                at_ns: 5,
            });
            r.task(&span(9, "root", 0, 100));
            r.task(&span(1, &format!("triad {run}"), 10, 60));
            r.run_finished(100);
        }
        assert_eq!(r.tasks(), 6);
        let v = written(&r);
        let events = v["traceEvents"].as_array().unwrap();
        let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 6);
        let triads: Vec<&&serde_json::Value> =
            slices.iter().filter(|e| e["name"] == "triad").collect();
        assert_eq!(triads.len(), 3, "named by kind");
        for (k, e) in triads.iter().enumerate() {
            assert_eq!(e["args"]["run"], k as u64 + 1);
            assert_eq!(e["args"]["task"], format!("triad {k}"));
            assert_eq!(e["cat"], "no data");
            assert_eq!(e["args"]["locality"], "no data");
            let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
            assert_eq!(ns, 10 + 100 * k as u64);
        }
        let runs: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "i").collect();
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[2]["name"], "run 3");
        assert_eq!(runs[2]["ts"].as_f64().unwrap(), 0.2);
        assert_eq!(runs[2]["args"]["duration_ns"], 100);
        // Each run's arrow stays within it.
        let flows: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "f").collect();
        assert_eq!(flows.len(), 3);
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["locus sim on 1x1, 1 worker", "node 0 (1 worker)"]);
    }
}
