//! [`TraceRecorder`]: the observer that keeps the tasks of the last run, one buffer per
//! worker, and writes them as a Chrome trace.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crossbeam_utils::CachePadded;
use flate2::write::GzEncoder;
use flate2::Compression;
use locus_mem::pool::Pools;

use super::chrome::{node_colour, Arg, ChromeTrace};
use super::{EngineView, Observer, Ready, TaskBytes, TaskSpan};

/// Records the tasks of a runtime's last run and writes them as a Chrome trace (see the
/// [module documentation](super) for what the trace shows and how to open it).
///
/// [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace) installs one that writes a
/// file at the end of every run. Installed with
/// [`RuntimeBuilder::observer`](crate::RuntimeBuilder::observer) instead, it keeps the
/// last run until [`write`](Self::write) or [`write_file`](Self::write_file) is called,
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
    /// The last run's start and end on the engine's clock.
    run: Mutex<RunClock>,
}

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

/// A task of the trace: an engine key and which task at that key it was (keys of the
/// `threads` engine are addresses, reused once a task has ended).
type Uid = (u64, u32);

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

/// Counter tracks of every node, as (name, series): Perfetto shows them as `memory in
/// use bytes`, `ready tasks` and `remote bytes`.
const MEMORY: (&str, &str) = ("memory in use", "bytes");
const READY: (&str, &str) = ("ready", "tasks");
const REMOTE: (&str, &str) = ("remote", "bytes");

impl TraceRecorder {
    /// A recorder that keeps the last run until [`write`](Self::write) is called.
    pub fn new() -> Self {
        TraceRecorder::default()
    }

    /// A recorder that writes the trace of every run to `path` when the run ends
    /// (replacing the file whole, see [`write_file`](Self::write_file)); an error then is
    /// printed on stderr in one line. Nothing is checked here:
    /// [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace) checks that the file can
    /// be written before the workers start.
    pub fn to_file(path: impl Into<PathBuf>) -> Self {
        TraceRecorder {
            path: Some(path.into()),
            ..TraceRecorder::default()
        }
    }

    /// The file the trace of every run goes to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Tasks recorded in the last (or current) run.
    pub fn tasks(&self) -> usize {
        self.attached
            .get()
            .map_or(0, |a| a.logs.iter().map(|l| lock(l).records.len()).sum())
    }

    /// Writes the Chrome trace of the last run to `out` (see the [module
    /// documentation](super) for its layout): one process per node, one row per
    /// worker, one slice per task named by its locality, flow events from each task to
    /// the tasks it made ready, counter tracks per node. Before any run, the trace has
    /// processes and rows and no events.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        let run = *lock(&self.run);
        let mut t = ChromeTrace::new(out)?;
        let Some(a) = self.attached.get() else {
            t.process_name(0, "locus: no runtime attached")?;
            t.finish()?;
            return Ok(());
        };
        let duration = run
            .end_ns
            .map_or(String::new(), |end| format!(", {} ns", end - run.start_ns));
        let nodes = a.worker_node.iter().max().map_or(1, |&n| n + 1);
        let pid = |node: usize| node as u32 + 1;
        for node in 0..nodes {
            let workers = a.worker_node.iter().filter(|&&n| n == node).count();
            t.sorted_process_name(
                pid(node),
                node as u32,
                &format!(
                    "node {node} ({workers} workers) - locus {}: {} ({} workers){duration}",
                    a.engine,
                    a.topology,
                    a.worker_node.len()
                ),
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
        let at = |ns: u64| ns.saturating_sub(run.start_ns);
        for (i, &(w, r)) in all.iter().enumerate() {
            let b = &r.bytes;
            let by = r.made_ready_by.and_then(|u| number.get(&u).copied());
            let ready = r.ready_ns.map(at);
            t.complete(
                pid(a.worker_node[w]),
                w as u32,
                locality_class(b),
                &logs[w].names[r.name.0..r.name.1],
                Some(node_colour(b.data_node)),
                at(r.start_ns),
                r.end_ns.saturating_sub(r.start_ns),
                &[
                    ("task", Arg::Str(&logs[w].names[r.name.0..r.name.1])),
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
                .filter_map(|(_, r)| r.memory_in_use.map(|m| (at(r.end_ns), m)))
                .collect();
            memory.sort_by_key(|e| e.0);
            let mut ready: Vec<(u64, i64)> = Vec::new();
            let mut remote: Vec<(u64, u64)> = Vec::new();
            for (_, r) in mine {
                if let Some(rn) = r.ready_ns {
                    ready.push((at(rn), 1));
                    ready.push((at(r.start_ns), -1));
                }
                remote.push((at(r.end_ns), r.bytes.read_remote + r.bytes.write_remote));
            }
            // Starts before arrivals at the same moment: the count never goes below 0.
            ready.sort();
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
            t.counter(pid(node), REMOTE, 0, 0)?;
            let mut sum = 0;
            for (k, &(ts, bytes)) in remote.iter().enumerate() {
                sum += bytes;
                if remote.get(k + 1).map_or(true, |n| n.0 != ts) {
                    t.counter(pid(node), REMOTE, ts, sum)?;
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
        };
        self.attached
            .set(attached)
            .map_err(|_| "a trace recorder records one runtime; this one already has one".into())
    }

    fn run_started(&self, at_ns: u64) {
        *lock(&self.run) = RunClock {
            start_ns: at_ns,
            end_ns: None,
        };
        if let Some(a) = self.attached.get() {
            lock(&a.keys).clear();
            for log in a.logs.iter() {
                let mut log = lock(log);
                log.names.clear();
                log.records.clear();
            }
        }
    }

    fn ready(&self, ready: &Ready) {
        let Some(a) = self.attached.get() else {
            return;
        };
        let mut keys = lock(&a.keys);
        // The activating task is running: its incarnation is the current one.
        let by = ready
            .by
            .map(|b| (b, keys.get(&b).map_or(0, |s| s.incarnation)));
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
        let (uid, pending) = {
            let mut keys = lock(&a.keys);
            let state = keys.entry(span.id).or_default();
            let pending = state.pending.take();
            if pending.is_none() && state.recorded {
                state.incarnation += 1;
            }
            state.recorded = true;
            ((span.id, state.incarnation), pending)
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
        lock(&self.run).end_ns = Some(at_ns);
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
}
