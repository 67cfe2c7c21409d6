//! The task record shared by the dependence tracker and the engine.

use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::hints::Hints;
use super::run::RunState;
use super::scope::TaskCtx;
use crate::data::Binding;

/// No placement preference recorded.
const NO_PREFERENCE: usize = usize::MAX;

/// A shared reference to a task; queues, waiter lists and the executing worker hold it.
pub(crate) type TaskRef = Arc<Task>;

/// The body of a task, with the views of its bindings built inside.
pub(crate) type Body = Box<dyn FnOnce(&TaskCtx, &[Binding]) + Send>;

/// What the executing worker takes out of a ready task.
pub(crate) struct Job {
    pub(crate) bindings: Vec<Binding>,
    pub(crate) body: Body,
    /// Read by the placement policy at activation; like the bindings it may hold data
    /// handles, so it is released with the job, before the task counts as finished.
    pub(crate) hints: Hints,
}

/// A submitted task.
pub(crate) struct Task {
    pub(crate) name: Cow<'static, str>,
    pub(crate) run: Arc<RunState>,
    /// Unsatisfied dependences, plus one held by the submitter until binding is done.
    pending: AtomicUsize,
    /// The node the placement policy chose at activation ([`NO_PREFERENCE`] if none).
    preferred: AtomicUsize,
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
        run: Arc<RunState>,
        job: Job,
        inputs: usize,
    ) -> TaskRef {
        Arc::new(Task {
            name,
            run,
            pending: AtomicUsize::new(inputs + 1),
            preferred: AtomicUsize::new(NO_PREFERENCE),
            job: UnsafeCell::new(Some(job)),
        })
    }

    /// The job, for the submitter to register the task with its input versions, or for
    /// the activator to describe the task to the placement policy.
    ///
    /// # Safety
    ///
    /// No worker may take the job while the returned borrow lives: the caller is the
    /// submitter still holding the pending guard (the `+ 1` of [`Task::new`]), or the
    /// activator of the ready task before it hands the task to any queue.
    pub(crate) unsafe fn job_unshared(&self) -> &Job {
        // SAFETY: per the contract nobody calls `take_job` meanwhile; the job was
        // written before the task was shared, and only shared reads happen here.
        let job = unsafe { &*self.job.get() };
        job.as_ref().expect("job present until taken")
    }

    /// Records the node the placement policy chose; called by the activator before it
    /// hands the task to a queue (the queue's synchronisation publishes it).
    pub(crate) fn set_preferred_node(&self, node: usize) {
        self.preferred.store(node, Ordering::Relaxed);
    }

    /// The node the placement policy chose, if any.
    pub(crate) fn preferred_node(&self) -> Option<usize> {
        let n = self.preferred.load(Ordering::Relaxed);
        (n != NO_PREFERENCE).then_some(n)
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
