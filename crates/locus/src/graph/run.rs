//! The state of one run: outstanding tasks, the first error, and the metrics.

use std::sync::Arc;

use super::completion::Completion;
use crate::config::AllocMode;
use crate::data::shared::SharedSetup;
use crate::data::version::VersionCounts;
use crate::error::Error;
use crate::metrics::RunCounters;

/// Shared by every task of a run and by the thread waiting for it.
pub(crate) struct RunState {
    /// The runtime the run belongs to; data handles of other runtimes are refused.
    pub(crate) runtime_id: u64,
    /// When buffers of new versions are allocated.
    pub(crate) alloc: AllocMode,
    /// Per-worker counters, published to the report at the end.
    pub(crate) counters: RunCounters,
    /// Live versions of the runtime.
    pub(crate) versions: Arc<VersionCounts>,
    /// Where shared data goes, and whether new data is shared.
    pub(crate) shared: Arc<SharedSetup>,
    /// Bound on submitted-but-unfinished tasks, if any.
    pub(crate) window: Option<usize>,
    /// What a task does with remote shared data, and the costs `auto` weighs.
    pub(crate) migration: (
        crate::config::Migration,
        Option<Arc<crate::sched::migrate::MigrationCosts>>,
    ),
    /// Tasks submitted and not finished, the root included, and the run's failure
    /// (module `completion`). Tasks submitted are counted by the submitting worker
    /// (`metrics`), so that a submission updates one run-wide atomic only.
    completion: Completion<Error>,
}

impl RunState {
    pub(crate) fn new(
        runtime_id: u64,
        alloc: AllocMode,
        counters: RunCounters,
        versions: Arc<VersionCounts>,
        shared: Arc<SharedSetup>,
        window: Option<usize>,
    ) -> Self {
        RunState {
            runtime_id,
            alloc,
            counters,
            versions,
            shared,
            window,
            migration: (crate::config::Migration::None, None),
            completion: Completion::default(),
        }
    }

    /// Counts a new task: `Some((worker, control))` for a task submitted from
    /// `worker`, whether it is a control task; `None` for the root, which only counts
    /// as outstanding.
    pub(crate) fn task_submitted(&self, counted: Option<(usize, bool)>) {
        self.completion.task_submitted();
        if let Some((worker, control)) = counted {
            let counters = self.counters.worker(worker);
            counters.submitted.add(1);
            if control {
                counters.control_submitted.add(1);
            }
        }
    }

    /// Control tasks submitted; read once the run is over (`metrics`).
    pub(crate) fn control_submitted(&self) -> u64 {
        self.counters
            .slots()
            .map(|c| c.control_submitted.get())
            .sum()
    }

    /// Tasks submitted, the root excluded; read once the run is over (`metrics`).
    pub(crate) fn submitted(&self) -> u64 {
        self.counters.slots().map(|c| c.submitted.get()).sum()
    }

    /// Tasks submitted and not finished.
    pub(crate) fn outstanding(&self) -> usize {
        self.completion.outstanding()
    }

    /// Counts a finished task; the last one wakes the thread waiting in
    /// [`wait_done`](Self::wait_done).
    pub(crate) fn task_finished(&self) {
        self.completion.task_finished();
    }

    /// Blocks until every task of the run has finished.
    pub(crate) fn wait_done(&self) {
        self.completion.wait_done();
    }

    /// Records the run's first error; later tasks are drained without running.
    pub(crate) fn fail(&self, error: Error) {
        self.completion.fail(error);
    }

    /// Whether the run has failed.
    pub(crate) fn is_failed(&self) -> bool {
        self.completion.is_failed()
    }

    /// Takes the first error, if any.
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.completion.take_error()
    }
}
