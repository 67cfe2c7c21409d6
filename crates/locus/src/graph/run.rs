//! The state of one run: outstanding tasks, the first error, and the metrics.

use std::ptr::NonNull;
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
    pub(crate) versions: &'static VersionCounts,
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
        versions: &'static VersionCounts,
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
    #[inline]
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
    #[inline]
    pub(crate) fn outstanding(&self) -> usize {
        self.completion.outstanding()
    }

    /// Counts a finished task; the last one wakes the thread waiting in
    /// [`wait_done`](Self::wait_done). `keep_alive` is called by the last one only,
    /// before its decrement, and what it returns is dropped once the waiting thread
    /// is woken (see [`RunRef::task_finished`]).
    fn task_finished<K>(&self, keep_alive: impl FnOnce() -> K) {
        self.completion.task_finished_with(keep_alive);
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
    #[inline]
    pub(crate) fn is_failed(&self) -> bool {
        self.completion.is_failed()
    }

    /// Takes the first error, if any.
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.completion.take_error()
    }
}

/// A task's reference to its run: a pointer, not a reference count, so that making and
/// dropping a task touches no run-wide count.
///
/// The run's state is owned by the thread that started the run (`Runtime::run`), which
/// keeps its `Arc` until the engine's `run` has returned, after every task of the run
/// has finished (the engine contract): the engine may use the root's reference until
/// then, and a task reads its run only from its submission to its end
/// ([`RunRef::task_finished`] is the last use), while the run cannot end. The one use that could
/// outlive the owner's `Arc` is the end of the last task itself, which wakes the owner
/// and then unlocks the run's lock: [`RunRef::task_finished`] takes a reference count
/// for it, and only for it.
#[derive(Clone, Copy)]
pub(crate) struct RunRef(NonNull<RunState>);

// SAFETY: a `RunRef` is a shared reference to a `RunState` (`Sync`: atomics, locks and
// per-worker counters with their own single-writer rules), valid as the type doc says.
unsafe impl Send for RunRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for RunRef {}

impl RunRef {
    /// A reference to `run` for its tasks.
    ///
    /// # Safety
    ///
    /// `run` (the `Arc`) is kept until every task made with the reference has finished
    /// ([`RunState::wait_done`] returned), and no task uses its run after its own
    /// [`task_finished`](Self::task_finished).
    pub(crate) unsafe fn new(run: &Arc<RunState>) -> Self {
        RunRef(NonNull::from(&**run))
    }

    /// Counts the task finished: its last use of the run.
    pub(crate) fn task_finished(self) {
        let ptr = self.0.as_ptr().cast_const();
        self.task_finished_keeping(|| {
            // SAFETY: `ptr` is the data of the owner's `Arc` (`RunRef::new`), which is
            // alive: this task has not finished, so the run has not ended. The count
            // taken here keeps the state alive until the owner, woken by this last
            // decrement, is done with it and this call has unlocked the run's lock.
            unsafe {
                Arc::increment_strong_count(ptr);
                Arc::from_raw(ptr)
            }
        });
    }

    fn task_finished_keeping<K>(self, keep_alive: impl FnOnce() -> K) {
        // SAFETY: this task has not finished yet (the type doc).
        unsafe { self.0.as_ref() }.task_finished(keep_alive);
    }
}

impl std::ops::Deref for RunRef {
    type Target = RunState;

    #[inline]
    fn deref(&self) -> &RunState {
        // SAFETY: only a task that has not finished uses its run (the type doc), and
        // the run lives until every task has.
        unsafe { self.0.as_ref() }
    }
}
