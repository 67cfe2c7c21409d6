//! What a simulated run shows beyond the runtime's [`Report`](locus::Report): the
//! simulator's own counters and, on request, the span of every task.

use std::sync::{Arc, Mutex, MutexGuard};

/// The simulator's view of the last run, filled in when the run ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Simulated time from the root's start to the last task's end, in ns.
    pub makespan_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Tasks (the root included) whose bodies ran.
    pub bodies_run: u64,
    /// Tasks whose bodies were skipped.
    pub bodies_skipped: u64,
    /// Steal attempts (successful or not).
    pub steal_attempts: u64,
    /// Sleeping workers woken.
    pub wakeups: u64,
    /// Bytes the tasks declared, as seen when each became ready.
    pub declared_bytes: u64,
    /// Bytes the tasks accessed, counted when each started (what the report counts).
    pub accessed_bytes: u64,
    /// Of the bytes read, those that hit in the reading node's last-level cache and
    /// cost no memory traffic.
    pub cache_hit_bytes: u64,
    /// Pages of shared data moved to another node as tasks started (next touch and
    /// migration tasks), each charged the topology's migration model.
    pub migrated_pages: u64,
}

/// One task of a simulated run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Sequence number of the task, in order of activation (the root is 0).
    pub id: u64,
    /// The task's name.
    pub name: String,
    /// The worker that ran it.
    pub worker: usize,
    /// That worker's node.
    pub node: usize,
    /// The task that activated it (whose end made it ready, or that spawned it).
    pub activated_by: Option<u64>,
    /// Whether that task's body spawned it (so it could start once that task had
    /// started), rather than that task's end making it ready.
    pub spawned: bool,
    /// When it became visible in a queue.
    pub ready_ns: u64,
    /// When its worker took it.
    pub start_ns: u64,
    /// When it ended (its outputs are published then).
    pub end_ns: u64,
    /// Its compute time plus its memory time alone on an idle machine: what it costs
    /// with no runtime overhead and no contention.
    pub isolated_ns: u64,
    /// The node holding most of the bytes it accessed.
    pub data_node: usize,
    /// Bytes it accessed.
    pub bytes: u64,
    /// Whether its body ran.
    pub body_ran: bool,
}

#[derive(Default)]
struct Inner {
    summary: Summary,
    spans: Option<Vec<Span>>,
}

/// A handle to read what the simulator saw; give a clone to [`Sim::probe`](crate::Sim::probe).
#[derive(Clone, Default)]
pub struct Probe {
    inner: Arc<Mutex<Inner>>,
    keep_spans: bool,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("keep_spans", &self.keep_spans)
            .finish_non_exhaustive()
    }
}

impl Probe {
    /// A probe that keeps the summary only.
    pub fn new() -> Self {
        Probe::default()
    }

    /// A probe that also keeps the span of every task (memory grows with the run).
    pub fn with_spans() -> Self {
        Probe {
            keep_spans: true,
            ..Probe::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The summary of the last run.
    pub fn summary(&self) -> Summary {
        self.lock().summary.clone()
    }

    /// The spans of the last run's tasks, in order of end, if kept.
    pub fn spans(&self) -> Option<Vec<Span>> {
        self.lock().spans.clone()
    }

    pub(crate) fn keeps_spans(&self) -> bool {
        self.keep_spans
    }

    pub(crate) fn publish(&self, summary: Summary, spans: Option<Vec<Span>>) {
        let mut inner = self.lock();
        inner.summary = summary;
        inner.spans = spans;
    }
}
