//! The task record shared by the dependence tracker and the engine.

use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::hints::Hints;
use super::run::RunState;
use super::scope::TaskCtx;
use crate::data::Binding;

/// A shared reference to a task; queues, waiter lists and the executing worker hold it.
pub(crate) type TaskRef = Arc<Task>;

/// The body of a task, with the views of its bindings built inside.
pub(crate) type Body = Box<dyn FnOnce(&TaskCtx, &[Binding]) + Send>;

/// What the executing worker takes out of a ready task.
pub(crate) struct Job {
    pub(crate) bindings: Vec<Binding>,
    pub(crate) body: Body,
}

/// A submitted task.
pub(crate) struct Task {
    pub(crate) name: Cow<'static, str>,
    pub(crate) hints: Hints,
    pub(crate) run: Arc<RunState>,
    /// Unsatisfied dependences, plus one held by the submitter until binding is done.
    pending: AtomicUsize,
    job: UnsafeCell<Option<Job>>,
}

// SAFETY: `job` is the only field that is not `Sync`. It is written once, before the task
// is shared (in `Task::new`), read by the submitter while it still holds the pending
// guard (no other thread can take it then, see `take_job`), and taken exactly once by
// the single worker that dequeued the task after `pending` reached zero. Those accesses
// are ordered by the `AcqRel` decrements of `pending` and by the queues' own
// synchronisation.
unsafe impl Sync for Task {}

impl Task {
    /// A task waiting for `inputs` dependences plus the submitter's guard.
    pub(crate) fn new(
        name: Cow<'static, str>,
        hints: Hints,
        run: Arc<RunState>,
        job: Job,
        inputs: usize,
    ) -> TaskRef {
        Arc::new(Task {
            name,
            hints,
            run,
            pending: AtomicUsize::new(inputs + 1),
            job: UnsafeCell::new(Some(job)),
        })
    }

    /// The bindings, for the submitter to register the task with its input versions.
    ///
    /// # Safety
    ///
    /// The caller must hold the pending guard (the `+ 1` of [`Task::new`]) and not have
    /// released it yet, so that the task cannot be taken by a worker meanwhile.
    pub(crate) unsafe fn bindings_while_guarded(&self) -> &[Binding] {
        // SAFETY: while the guard is held `pending > 0`, so no worker has dequeued the
        // task and no `take_job` runs; only shared reads happen.
        let job = unsafe { &*self.job.get() };
        &job.as_ref().expect("job present until taken").bindings
    }

    /// Satisfies one dependence; returns whether the task just became ready.
    pub(crate) fn satisfy_one(&self) -> bool {
        self.pending.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Takes the job out of a ready task.
    ///
    /// # Safety
    ///
    /// Only the worker that dequeued the task after it became ready may call this, once.
    pub(crate) unsafe fn take_job(&self) -> Option<Job> {
        debug_assert_eq!(self.pending.load(Ordering::Acquire), 0);
        // SAFETY: the caller is the unique owner of the ready task (see the type's Sync
        // comment), so nothing else reads or writes `job` concurrently.
        unsafe { (*self.job.get()).take() }
    }
}
