//! Always-on metrics: each worker counts in its own slot, the report
//! sums the slots at the end of a run.
//!
//! Every counter of a slot has a single writer, its worker, which updates it with a
//! relaxed load and store (as cheap as a plain integer). The slots are read once the run
//! is over: the last task's `AcqRel` decrement of the outstanding count, observed by the
//! thread that builds the report, orders every update before the read.

mod report;

pub use report::{
    Locality, MemoryReport, MigrationReport, Pushes, Report, Settings, Steals, TopologySummary,
    VersionsReport, WorkerReport,
};

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// A counter with a single writer.
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`; only the slot's own worker calls this.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What one worker counts during a run.
pub(crate) struct WorkerCounters {
    pub(crate) tasks: Counter,
    /// Tasks submitted from this worker (the run's root excluded).
    pub(crate) submitted: Counter,
    /// Of those, control tasks.
    pub(crate) control_submitted: Counter,
    pub(crate) steals_same_node: Counter,
    pub(crate) steals_remote: Counter,
    pub(crate) pushes_attempted: Counter,
    pub(crate) pushes_transferred: Counter,
    pub(crate) pushes_rejected: Counter,
    pub(crate) pushes_kept_local: Counter,
    /// Tasks the `auto` migration setting sent to their data's node.
    pub(crate) tasks_moved: Counter,
    /// Tasks run that had a preferred node (work-pushing or an affinity hint).
    pub(crate) with_preference: Counter,
    /// Of those, tasks run by a worker of their preferred node.
    pub(crate) started_on_preferred: Counter,
    /// Read-writes whose new version took over its input's buffer (updated in place).
    pub(crate) versions_in_place: Counter,
    /// Read-writes submitted that continued the version of the writer before them
    /// (`data::version`, "Chains of read-writes").
    pub(crate) versions_continued: Counter,
    /// Bytes read by this worker's tasks, by node of the data.
    pub(crate) read_bytes: Box<[Counter]>,
    /// Bytes written by this worker's tasks, by node of the data.
    pub(crate) write_bytes: Box<[Counter]>,
}

impl WorkerCounters {
    fn new(nodes: usize) -> Self {
        WorkerCounters {
            tasks: Counter::default(),
            submitted: Counter::default(),
            control_submitted: Counter::default(),
            steals_same_node: Counter::default(),
            steals_remote: Counter::default(),
            pushes_attempted: Counter::default(),
            pushes_transferred: Counter::default(),
            pushes_rejected: Counter::default(),
            pushes_kept_local: Counter::default(),
            tasks_moved: Counter::default(),
            with_preference: Counter::default(),
            started_on_preferred: Counter::default(),
            versions_in_place: Counter::default(),
            versions_continued: Counter::default(),
            read_bytes: (0..nodes).map(|_| Counter::default()).collect(),
            write_bytes: (0..nodes).map(|_| Counter::default()).collect(),
        }
    }
}

/// The counters of every worker for one run.
pub(crate) struct RunCounters {
    slots: Box<[CachePadded<WorkerCounters>]>,
}

impl RunCounters {
    pub(crate) fn new(workers: usize, nodes: usize) -> Self {
        RunCounters {
            slots: (0..workers)
                .map(|_| CachePadded::new(WorkerCounters::new(nodes)))
                .collect(),
        }
    }

    /// The slot of `worker`.
    #[inline]
    pub(crate) fn worker(&self, worker: usize) -> &WorkerCounters {
        &self.slots[worker]
    }

    pub(crate) fn slots(&self) -> impl Iterator<Item = &WorkerCounters> {
        self.slots.iter().map(|s| &**s)
    }
}
