//! Observation of runs: the [`Observer`] trait that engines call as
//! tasks run, and the Chrome trace: its writer ([`ChromeTrace`]) and the observer that
//! records a run and writes it ([`TraceRecorder`]).
//!
//! # Tracing a run
//!
//! [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace) writes a Chrome trace of
//! the runtime's runs to a file (each run rewrites it, with that run and every one
//! before it); `locus run BENCH --trace FILE` does the same from the command line. The file is replaced whole or not at all
//! ([`replace_file`]): the trace goes to a temporary file beside it, renamed over it once
//! complete, so a run that is killed or cannot write its trace leaves the previous one. To open it, go to <https://ui.perfetto.dev> and choose
//! "Open trace file" (or drop the file on the page); `chrome://tracing` opens it too.
//!
//! ## What the trace shows
//!
//! Loaded in Perfetto, the trace keeps **every run** of the runtime, placed one after
//! another on the time axis (the time between them, outside the runtime, left out),
//! each start marked by a line across the trace (`run 1`, `run 2`, ...; a global
//! instant event with the run's `duration_ns`). Memory stays bounded: past 1,048,576
//! tasks kept, a new run drops the runs before it, and its mark says so (`run 9 (runs
//! 1 to 8 dropped: ...)`). A process `locus ENGINE on TOPOLOGY, W
//! workers` names what ran. Then come **one process per NUMA node**
//! (`node N (W workers)`, in node order), each holding its workers as threads
//! (`worker W`), and one slice per task, named by the task's **kind**
//! ([`task_kind`]: `potrf`, `gemm`, `triad`; its name before any index), which
//! Perfetto colours slices by. Its category is its **locality**: `local` (every byte
//! it accessed was in its worker's node), `remote` (none was), `mixed`, or `no data`;
//! the `locality` argument says the same, and the `task` argument is the task's whole
//! name. **Arrows**
//! (flow events) lead from each task to the tasks it made ready (its successors whose
//! last input it produced, and the tasks its body submitted that were ready at once).
//! Under each node, four **counter tracks**: `memory in use bytes` (the node's pool,
//! sampled as each of its tasks ends), `ready tasks` (made ready and not started yet,
//! counted on the node that ran them), `local bytes` and `remote bytes` (bytes its
//! tasks read or wrote in their own node's / other nodes' memory, cumulative).
//!
//! Every slice has the same arguments from both engines:
//!
//! | key | meaning |
//! |---|---|
//! | `task` | the task's name (`root` for the control program) |
//! | `run` | the run it belongs to, from 1 |
//! | `locality` | `local`, `remote`, `mixed` or `no data` (its category too) |
//! | `task_id` | the task's number in this trace |
//! | `made_ready_by` | `task_id` of the task that made it ready, or -1 |
//! | `ready_ns` | when it became ready, ns since the run began |
//! | `wait_ns` | from ready to start, ns |
//! | `worker`, `worker_node` | where it ran |
//! | `data_node` | the node holding most of the bytes it accessed |
//! | `read_local_bytes`, `read_remote_bytes` | bytes read in its node's / other nodes' memory |
//! | `write_local_bytes`, `write_remote_bytes` | the same for bytes written |
//!
//! A file name ending in `.gz` gets a gzip-compressed trace (Perfetto opens it as is).
//! The legacy `cname` colour of each slice (the data node's) is kept for
//! `chrome://tracing`, which honours it.
//!
//! ```
//! use locus::{Config, Runtime, Topology};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("locus-doc-trace-{}.json", std::process::id()));
//! let rt = Runtime::builder()
//!     .topology(Topology::from_spec("2x1")?)
//!     .config(Config::Dfa)
//!     .trace(&path)
//!     .build()?;
//! let a = rt.data_from("a", &[1u64; 1024])?;
//! let b = rt.data::<u64>("b", 1024);
//! rt.run(|s| s.spawn("double", (a.read(), b.write()), |_, (x, y)| {
//!     y.iter_mut().zip(x).for_each(|(o, i)| *o = 2 * i);
//! }))?
//! .value?;
//! let trace = std::fs::read_to_string(&path)?;
//! assert!(trace.contains("\"task\":\"double\""));
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Cost
//!
//! With no observer, a worker pays one predictable branch per task: no clock read, no
//! allocation, no lock. With one, it reads the clock twice per task and calls
//! [`Observer::task`]; the [`TraceRecorder`] appends to a buffer of the calling worker
//! (its own lock, which no other thread takes during a run, on its own cache line) and
//! writes the file once the run is over.
//!
//! # Writing an observer
//!
//! Install one with [`RuntimeBuilder::observer`](crate::RuntimeBuilder::observer). The
//! engine calls [`Observer::attach`] once when its workers start, then for every run
//! [`Observer::run_started`], [`Observer::task`] once per task (on the worker that ran
//! it, after its body and before its outputs are published, so before the run can end),
//! and [`Observer::run_finished`]. Both engines call it: `threads` in wall-clock
//! nanoseconds since its workers started, the simulator in simulated nanoseconds since
//! the run began.

mod chrome;
mod file;
mod recorder;

pub use chrome::{node_colour, Arg, ChromeTrace};
pub use file::{check_replaceable, replace_file};
pub use recorder::{locality_class, task_kind, TraceRecorder};

use std::sync::Arc;

/// Calls `f`, one of an observer's methods (`call` names it), for an engine: the
/// observer is the user's code, so a panic in it is caught and returned as
/// [`Error::ObserverPanicked`](crate::Error::ObserverPanicked), for the engine to fail
/// the run with ([`Task::fail_run_with`](crate::engine::Task::fail_run_with)) instead
/// of unwinding through its workers.
pub fn guarded(call: &'static str, f: impl FnOnce()) -> Result<(), crate::Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = crate::graph::panic_message(&*payload);
        crate::graph::drop_payload(payload);
        crate::Error::ObserverPanicked { call, message }
    })
}

use locus_mem::pool::Pools;

use crate::sched::AccessInfo;

/// What an engine tells an observer about itself when its workers start.
#[derive(Clone, Copy, Debug)]
pub struct EngineView<'a> {
    /// `threads` or `sim`.
    pub engine: &'a str,
    /// The topology's name.
    pub topology: &'a str,
    /// Node of each worker; one entry per worker.
    pub worker_node: &'a [usize],
    /// The per-node pools the run's buffers come from (sampled for the memory counters).
    pub pools: Option<&'a Arc<Pools>>,
}

/// A task became ready, as an observer sees it.
///
/// `task` and `by` are the engine's keys for tasks ([`TaskSpan::id`]): a key is unique
/// among the tasks alive at one time (the `threads` engine uses the task's address, so
/// a key comes back once its task has ended; the simulator numbers its tasks).
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    /// The key of the task made ready.
    pub task: u64,
    /// The key of the running task that made it ready (produced its last input, or
    /// submitted it ready), if a task did.
    pub by: Option<u64>,
    /// When, in nanoseconds on the engine's clock.
    pub at_ns: u64,
}

/// One task that ran on a worker, as an observer sees it.
#[derive(Clone, Copy, Debug)]
pub struct TaskSpan<'a> {
    /// The engine's key of the task (see [`Ready`]).
    pub id: u64,
    /// The task's name (`root` for the control program of a run).
    pub name: &'a str,
    /// The worker that ran it.
    pub worker: usize,
    /// That worker's node.
    pub node: usize,
    /// When its worker took it, in nanoseconds on the engine's clock.
    pub start_ns: u64,
    /// When its body ended (its outputs are published right after), same clock.
    pub end_ns: u64,
    /// The bytes it accessed, by locality.
    pub bytes: TaskBytes,
}

/// The bytes a task read and wrote, in memory of its worker's node (local) and of other
/// nodes (remote), and the node holding most of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskBytes {
    /// Bytes read from buffers on the worker's node.
    pub read_local: u64,
    /// Bytes read from buffers on other nodes.
    pub read_remote: u64,
    /// Bytes written to buffers on the worker's node.
    pub write_local: u64,
    /// Bytes written to buffers on other nodes.
    pub write_remote: u64,
    /// The node holding most of the bytes accessed (the lowest such node on a tie; the
    /// worker's node for a task without data).
    pub data_node: usize,
}

impl TaskBytes {
    /// Sums the accesses of a task run on `node` (for example `started.accesses()`).
    /// Accesses whose buffer has no node are left out. Allocates nothing unless the
    /// task touches more than 16 nodes.
    pub fn of(node: usize, accesses: impl IntoIterator<Item = AccessInfo>) -> Self {
        /// Distinct data nodes kept on the stack.
        const INLINE: usize = 16;
        let mut bytes = TaskBytes {
            data_node: node,
            ..TaskBytes::default()
        };
        // Bytes per data node: (node, bytes).
        let mut inline = [(0usize, 0u64); INLINE];
        let mut used = 0;
        let mut spilled: Vec<(usize, u64)> = Vec::new();
        for a in accesses {
            let Some(n) = a.node else { continue };
            match (a.input, n == node) {
                (true, true) => bytes.read_local += a.bytes,
                (true, false) => bytes.read_remote += a.bytes,
                (false, true) => bytes.write_local += a.bytes,
                (false, false) => bytes.write_remote += a.bytes,
            }
            if let Some(e) = inline[..used].iter_mut().find(|e| e.0 == n) {
                e.1 += a.bytes;
            } else if used < INLINE {
                inline[used] = (n, a.bytes);
                used += 1;
            } else if let Some(e) = spilled.iter_mut().find(|e| e.0 == n) {
                e.1 += a.bytes;
            } else {
                spilled.push((n, a.bytes));
            }
        }
        // Most bytes; the lowest node on a tie.
        if let Some(&(n, _)) = inline[..used]
            .iter()
            .chain(&spilled)
            .filter(|e| e.1 > 0)
            .max_by_key(|e| (e.1, std::cmp::Reverse(e.0)))
        {
            bytes.data_node = n;
        }
        bytes
    }

    /// All bytes read and written.
    pub fn total(&self) -> u64 {
        self.read_local + self.read_remote + self.write_local + self.write_remote
    }
}

/// Sees the tasks of the runs of one runtime (in the manner of Taskflow's observer).
///
/// Calls for different workers may come at the same time from their threads; calls for
/// one worker come one at a time. See the [module documentation](self) for the order.
pub trait Observer: Send + Sync {
    /// The engine's workers started; called once, before any run. An error (for
    /// example: this observer already watches another runtime) fails the runtime's
    /// `build`.
    fn attach(&self, _engine: &EngineView<'_>) -> Result<(), String> {
        Ok(())
    }

    /// A run starts, at `at_ns` on the engine's clock; no task of it has started yet.
    fn run_started(&self, _at_ns: u64) {}

    /// A task became ready (before it can start); called on the worker that made it
    /// ready. An engine may report a task that is queued again as ready again before
    /// it starts: the first call counts.
    fn ready(&self, _ready: &Ready) {}

    /// A task ran on `span.worker`; called on that worker, once per task of the run.
    fn task(&self, span: &TaskSpan<'_>);

    /// The run ended at `at_ns` on the engine's clock; every [`task`](Self::task) call
    /// of the run happened before this one.
    fn run_finished(&self, _at_ns: u64) {}
}

/// Two observers as one: every call goes to the first, then to the second (for
/// example a user's observer and the trace recorder of
/// [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace)).
pub struct Both(pub Arc<dyn Observer>, pub Arc<dyn Observer>);

impl Observer for Both {
    fn attach(&self, engine: &EngineView<'_>) -> Result<(), String> {
        self.0.attach(engine)?;
        self.1.attach(engine)
    }

    fn run_started(&self, at_ns: u64) {
        self.0.run_started(at_ns);
        self.1.run_started(at_ns);
    }

    fn ready(&self, ready: &Ready) {
        self.0.ready(ready);
        self.1.ready(ready);
    }

    fn task(&self, span: &TaskSpan<'_>) {
        self.0.task(span);
        self.1.task(span);
    }

    fn run_finished(&self, at_ns: u64) {
        self.0.run_finished(at_ns);
        self.1.run_finished(at_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(bytes: u64, node: Option<usize>, input: bool) -> AccessInfo {
        AccessInfo { bytes, node, input }
    }

    #[test]
    fn task_bytes_split_by_locality_and_pick_the_heaviest_node() {
        let accesses = [
            access(100, Some(1), true),
            access(30, Some(0), true),
            access(80, Some(0), false),
            access(5, None, true),
        ];
        let b = TaskBytes::of(0, accesses);
        assert_eq!(
            b,
            TaskBytes {
                read_local: 30,
                read_remote: 100,
                write_local: 80,
                write_remote: 0,
                data_node: 0,
            }
        );
        assert_eq!(b.total(), 210);
        // A tie goes to the lowest node; no data: the worker's own node.
        let tie = [access(8, Some(3), true), access(8, Some(2), false)];
        assert_eq!(TaskBytes::of(1, tie).data_node, 2);
        assert_eq!(TaskBytes::of(1, []).data_node, 1);
        // More nodes than fit on the stack.
        let many: Vec<_> = (0..40)
            .map(|n| access(n as u64 + 1, Some(n), true))
            .collect();
        let b = TaskBytes::of(0, many);
        assert_eq!(b.data_node, 39);
        assert_eq!(b.read_local, 1);
        assert_eq!(b.total(), (1..=40).sum::<u64>());
    }
}
