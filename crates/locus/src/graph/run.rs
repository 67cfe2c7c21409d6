//! The state of one run: outstanding tasks, the first error, and the metrics.

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;

use super::completion::Completion;
use super::exec::Executor;
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

    /// Counts the root, which only counts as outstanding (other tasks:
    /// [`RunRef::task_submitted_from`]).
    pub(crate) fn root_submitted(&self) {
        self.completion.task_submitted();
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

    /// Tasks submitted and not finished, and the finished ones workers hold back
    /// ([`Finished`]).
    #[inline]
    pub(crate) fn outstanding(&self) -> usize {
        self.completion.outstanding()
    }

    /// Counts `k` finished tasks; the last ones wake the thread waiting in
    /// [`wait_done`](Self::wait_done). `keep_alive` is called by the last call only,
    /// before its decrement, and what it returns is dropped once the waiting thread
    /// is woken (see [`RunRef::task_finished`]).
    fn tasks_finished<K>(&self, k: usize, keep_alive: impl FnOnce() -> K) {
        self.completion.tasks_finished_with(k, keep_alive);
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

    /// Counts a task submitted from `ex`'s worker (`control`: a control task): with a
    /// finished task `ex` holds back for this run spent on it ([`Finished::spend`]), or
    /// added to the run's count.
    #[inline]
    pub(crate) fn task_submitted_from(self, ex: &dyn Executor, control: bool) {
        self.task_submitted_held(ex, ex.finished(), control);
    }

    /// [`task_submitted_from`](Self::task_submitted_from), given what `ex` holds back
    /// ([`Executor::finished`]).
    #[inline(always)]
    pub(crate) fn task_submitted_held(
        self,
        ex: &dyn Executor,
        held: Option<&Finished>,
        control: bool,
    ) {
        let worker = match held {
            Some(f) if f.spend(self) => f.worker,
            Some(f) => {
                self.completion.task_submitted();
                f.worker
            }
            None => {
                self.completion.task_submitted();
                ex.worker()
            }
        };
        let counters = self.counters.worker(worker);
        counters.submitted.add(1);
        if control {
            counters.control_submitted.add(1);
        }
    }

    /// [`RunState::outstanding`] but for what `ex`'s worker holds back: the tasks
    /// submitted and not finished, and those finished that other workers hold back.
    #[inline]
    pub(crate) fn outstanding_seen_from(self, ex: &dyn Executor) -> usize {
        self.outstanding_less(ex.finished())
    }

    /// [`RunState::outstanding`] less what `held` holds back.
    #[inline]
    pub(crate) fn outstanding_less(self, held: Option<&Finished>) -> usize {
        self.outstanding() - held.map_or(0, |f| f.held_for(self))
    }

    /// Counts the task finished: its last use of the run.
    pub(crate) fn task_finished(self) {
        self.tasks_finished(1);
    }

    /// Counts `k` tasks finished (at least one), kept back by one worker
    /// ([`Finished`]); their last use of the run.
    fn tasks_finished(self, k: usize) {
        let ptr = self.0.as_ptr().cast_const();
        self.tasks_finished_keeping(k, || {
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

    fn tasks_finished_keeping<K>(self, k: usize, keep_alive: impl FnOnce() -> K) {
        // SAFETY: these tasks have not finished yet (the type doc).
        unsafe { self.0.as_ref() }.tasks_finished(k, keep_alive);
    }

    /// The address of the run's state, never 0.
    #[inline]
    fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// Finished tasks one worker has not yet subtracted from their run's count of
/// outstanding tasks, and spends on the tasks it submits next: a submission that takes
/// one touches no run-wide atomic, and neither did the finish it takes. A worker that
/// alternates submitting and finishing, as a run's control program does while it
/// helps, so writes the run-wide count only when it runs out of work.
///
/// The run's count is what is unfinished plus what every worker holds back, never
/// less: it reaches zero only once every worker has given back what it holds (before
/// it looks for work elsewhere and finds none: the engine calls
/// [`give_back`](Self::give_back) then), and the run cannot end while a worker holds
/// back one of its tasks, so the reference held here stays valid. Held back for one run
/// at a time; a task of another run gives the first run's back first. At most
/// [`Finished::MAX`], so that a bounded window sees the count at most that many above
/// the truth per other worker (the submitting worker's own are subtracted:
/// [`RunRef::outstanding_less`]).
pub struct Finished {
    /// The run of what is held back: its state's address, 0 when none is held back
    /// (`n` is 0 then, and only then).
    run: Cell<usize>,
    n: Cell<usize>,
    /// The worker holding them back.
    worker: usize,
}

impl Finished {
    /// The most a worker holds back.
    const MAX: usize = 16;

    /// None held back, by worker `worker`.
    pub(crate) const fn new(worker: usize) -> Self {
        Finished {
            run: Cell::new(0),
            n: Cell::new(0),
            worker,
        }
    }

    /// A task of `run` finished on this worker: held back.
    #[inline]
    pub(crate) fn finished(&self, run: RunRef) {
        let n = self.n.get();
        if self.run.get() == run.addr() && n < Self::MAX {
            self.n.set(n + 1);
        } else {
            self.start_holding(run);
        }
    }

    /// [`finished`](Self::finished) when what is held back is for another run, or is
    /// at its most: given back, and the task held back alone.
    #[cold]
    #[inline(never)]
    fn start_holding(&self, run: RunRef) {
        self.give_back();
        self.run.set(run.addr());
        self.n.set(1);
    }

    /// A task of `run` is submitted from this worker: spends one finished task held
    /// back for `run`, in place of adding to the run's count; `false` if none is.
    #[inline]
    pub(crate) fn spend(&self, run: RunRef) -> bool {
        if self.run.get() != run.addr() {
            return false;
        }
        let n = self.n.get() - 1;
        self.n.set(n);
        if n == 0 {
            self.run.set(0);
        }
        true
    }

    /// How many finished tasks of `run` are held back.
    #[inline]
    pub(crate) fn held_for(&self, run: RunRef) -> usize {
        if self.run.get() == run.addr() {
            self.n.get()
        } else {
            0
        }
    }

    /// Subtracts what is held back from its run's count (which may end the run).
    #[inline]
    pub fn give_back(&self) {
        let n = self.n.replace(0);
        if n > 0 {
            let run = self.run.replace(0) as *mut RunState;
            // SAFETY: the address of the state of a run whose count includes the `n`
            // tasks held back, so that has not ended (the type doc).
            RunRef(unsafe { NonNull::new_unchecked(run) }).tasks_finished(n);
        }
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.give_back();
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
