//! [`TraceRecorder`]: the observer that keeps the tasks of the last run, one buffer per
//! worker, and writes them as a Chrome trace.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crossbeam_utils::CachePadded;

use super::chrome::{node_colour, Arg, ChromeTrace};
use super::{EngineView, Observer, TaskBytes, TaskSpan};

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
/// assert!(String::from_utf8(json)?.contains("\"name\":\"hello\""));
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

#[derive(Debug)]
struct Attached {
    engine: String,
    topology: String,
    worker_node: Vec<usize>,
    /// One log per worker; during a run only that worker locks it (the
    /// lock never bounces between threads, it only makes the read at the end safe).
    logs: Box<[CachePadded<Mutex<WorkerLog>>]>,
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
    start_ns: u64,
    end_ns: u64,
    bytes: TaskBytes,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data (pushes only).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

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

    /// Writes the Chrome trace of the last run to `out`: one row per worker, one
    /// complete event per task. Before any run, the trace has rows and no events.
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
        t.process_name(
            0,
            &format!(
                "locus {}: {} ({} workers){duration}",
                a.engine,
                a.topology,
                a.worker_node.len()
            ),
        )?;
        t.worker_rows(0, &a.worker_node)?;
        let mut order = Vec::new();
        for (w, log) in a.logs.iter().enumerate() {
            let log = lock(log);
            // Start order, enclosing tasks first (a task whose body helped run others,
            // with a window, ends after them but started before).
            order.clear();
            order.extend(0..log.records.len());
            order.sort_by_key(|&i| {
                let r = &log.records[i];
                (r.start_ns, std::cmp::Reverse(r.end_ns))
            });
            for &i in &order {
                let r = &log.records[i];
                let b = &r.bytes;
                t.complete(
                    0,
                    w as u32,
                    &log.names[r.name.0..r.name.1],
                    &format!("data on node {}", b.data_node),
                    Some(node_colour(b.data_node)),
                    r.start_ns.saturating_sub(run.start_ns),
                    r.end_ns.saturating_sub(r.start_ns),
                    &[
                        ("data_node", Arg::Int(b.data_node as u64)),
                        ("worker_node", Arg::Int(a.worker_node[w] as u64)),
                        ("read_local_bytes", Arg::Int(b.read_local)),
                        ("read_remote_bytes", Arg::Int(b.read_remote)),
                        ("write_local_bytes", Arg::Int(b.write_local)),
                        ("write_remote_bytes", Arg::Int(b.write_remote)),
                    ],
                )?;
            }
        }
        t.finish()?;
        Ok(())
    }

    /// Writes the trace of the last run to the file at `path` (see [`write`](Self::write)),
    /// whole or not at all: through a temporary file beside it, renamed over it once
    /// complete ([`replace_file`](super::replace_file)); on an error a previous file at
    /// `path` is left as it was.
    pub fn write_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        super::replace_file(path.as_ref(), |out| self.write(out))
    }
}

impl Observer for TraceRecorder {
    fn attach(&self, engine: &EngineView<'_>) -> Result<(), String> {
        let attached = Attached {
            engine: engine.engine.to_string(),
            topology: engine.topology.to_string(),
            worker_node: engine.worker_node.to_vec(),
            logs: engine
                .worker_node
                .iter()
                .map(|_| CachePadded::new(Mutex::new(WorkerLog::default())))
                .collect(),
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
            for log in a.logs.iter() {
                let mut log = lock(log);
                log.names.clear();
                log.records.clear();
            }
        }
    }

    fn task(&self, span: &TaskSpan<'_>) {
        let Some(log) = self.attached.get().and_then(|a| a.logs.get(span.worker)) else {
            return;
        };
        let mut log = lock(log);
        let from = log.names.len();
        log.names.push_str(span.name);
        let to = log.names.len();
        log.records.push(Record {
            name: (from, to),
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            bytes: span.bytes,
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
