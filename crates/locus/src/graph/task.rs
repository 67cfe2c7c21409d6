//! The task record shared by the dependence tracker and the engine.

use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::hints::BoxedHints;
use super::run::RunRef;
use super::task_state::TaskState;
use crate::error::Error;
use crate::graph::hints::{Affinity, AffinityTarget};
use crate::sched::{AccessInfos, Domain};

/// No placement preference recorded.
const NO_PREFERENCE: usize = usize::MAX;

pub use super::task_ref::TaskRef;
pub(crate) use super::task_ref::Waiting;

pub(crate) use super::body::{Body, BodyFor};

/// What the executing worker takes out of a ready task.
pub(crate) struct Job {
    pub(crate) bindings: crate::data::Bindings,
    /// Taken by the worker that runs the task (`exec::start`), which claims the job
    /// and uses the rest of it in place.
    pub(crate) body: Option<Body>,
    /// Read by the placement policy at activation; like the bindings it may hold data
    /// handles, so it is released with the job, before the task counts as finished.
    /// `None` when the task has none, as most have ([`Hints::boxed`]): the record stays
    /// small.
    pub(crate) hints: Option<BoxedHints>,
    /// Whether the body sees no view (a control task, or a task declaring nothing): it
    /// then runs even when bodies are skipped, since it cannot touch a buffer.
    pub(crate) control: bool,
    /// Whether the body's children go to its parent's scope (a control task spawned
    /// with `spawn_control`, and the root) rather than to its own domain. A task
    /// spawned with `spawn` that declares nothing has a domain of its own, empty but
    /// for the data created in its scope: its children cannot silently bind outside it
    /// (docs/guide.md, "Control tasks").
    pub(crate) children_to_parent: bool,
    /// Whether this is the run's root (its scope waits for room in the window).
    pub(crate) root: bool,
}

impl Job {
    /// The task's affinity hint, if any.
    #[inline]
    fn affinity(&self) -> Option<&Affinity> {
        self.hints.as_ref().and_then(|h| h.affinity.as_ref())
    }
}

/// A submitted task, as engines see it: opaque but for its name, the counters an engine
/// records on it, and the placement decision it carries.
pub struct Task {
    pub(crate) name: Cow<'static, str>,
    /// The run, borrowed for the task's life ([`RunRef`]).
    pub(crate) run: RunRef,
    /// The node the placement policy chose at activation ([`NO_PREFERENCE`] if none).
    preferred: AtomicUsize,
    /// Unsatisfied dependences and the job, handed to one worker (module `task_state`).
    state: TaskState<Job>,
    /// The task whose domain the task was bound in (`graph::domain`): it is not
    /// complete before this one is. `None` for the tasks of the run's control program.
    pub(crate) parent: Option<TaskRef>,
    /// What the task hands to its children, once its body spawns one. Boxed: most
    /// tasks spawn none, and the record of every task stays small.
    /// Dropped by hand ([`Task`]'s `Drop`): the test whether it was set is inlined
    /// where a task's record is freed.
    pub(crate) domain: ManuallyDrop<std::sync::OnceLock<Box<super::domain::ChildDomain>>>,
}

impl Drop for Task {
    #[inline(always)]
    fn drop(&mut self) {
        if self.domain.get().is_some() {
            // SAFETY: `domain` is dropped here only, once, as the task is.
            unsafe { ManuallyDrop::drop(&mut self.domain) }
        }
    }
}

impl Task {
    /// A task waiting for `inputs` dependences plus the submitter's guard.
    // A task lives only in its record, which the reference owns.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new(
        name: Cow<'static, str>,
        run: RunRef,
        job: Job,
        inputs: usize,
        parent: Option<TaskRef>,
    ) -> TaskRef {
        Self::with_state(name, run, || TaskState::new(job, inputs), parent)
    }

    /// A task that waits for nothing (it declares nothing): ready as soon as made, with
    /// no submitter's guard to release. `job` makes its job, in the task's record.
    #[inline(always)]
    pub(crate) fn new_ready(
        name: Cow<'static, str>,
        run: RunRef,
        job: impl FnOnce() -> Job,
        parent: Option<TaskRef>,
    ) -> TaskRef {
        Self::with_state(name, run, || TaskState::ready(job()), parent)
    }

    #[inline(always)]
    fn with_state(
        name: Cow<'static, str>,
        run: RunRef,
        state: impl FnOnce() -> TaskState<Job>,
        parent: Option<TaskRef>,
    ) -> TaskRef {
        TaskRef::new_with(|| Task {
            name,
            run,
            preferred: AtomicUsize::new(NO_PREFERENCE),
            state: state(),
            parent,
            domain: ManuallyDrop::new(std::sync::OnceLock::new()),
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
        // SAFETY: the same contract as `TaskState::job_unshared`.
        unsafe { self.state.job_unshared() }
    }

    /// The node the placement policy chose, if any.
    #[inline]
    pub(crate) fn preferred_node(&self) -> Option<usize> {
        let n = self.preferred.load(Ordering::Relaxed);
        (n != NO_PREFERENCE).then_some(n)
    }

    /// Satisfies one dependence; returns whether the task just became ready.
    pub(crate) fn satisfy_one(&self) -> bool {
        self.state.satisfy_one()
    }

    /// Satisfies `n` dependences at once; returns whether the task just became ready.
    pub(crate) fn satisfy(&self, n: usize) -> bool {
        self.state.satisfy(n)
    }

    /// Claims the job of a ready task for the calling worker, which then uses it in
    /// place ([`Task::claimed_job`]) until it finishes the task; `false` if the task is
    /// not ready or its job was claimed already.
    #[inline]
    pub(crate) fn claim_job(&self) -> bool {
        self.state.claim_job()
    }

    /// The job the caller claimed ([`Task::claim_job`]), in place.
    ///
    /// # Safety
    ///
    /// As for `TaskState::claimed`: the caller won the claim, the job is not forgotten,
    /// and no other borrow of it is alive.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn claimed_job(&self) -> &mut Job {
        // SAFETY: the caller's contract.
        unsafe { self.state.claimed() }
    }

    /// The job the caller claimed ([`Task::claim_job`]), to read in place.
    ///
    /// # Safety
    ///
    /// As for `TaskState::claimed_shared`: the claim is the caller's (or its
    /// `Started`'s), the job is not forgotten, and no exclusive borrow of it is alive.
    #[inline]
    pub(crate) unsafe fn claimed_job_shared(&self) -> &Job {
        // SAFETY: the caller's contract.
        unsafe { self.state.claimed_shared() }
    }

    /// Ends the claimed job, emptied by its finish (`exec::finish_holding`).
    ///
    /// # Safety
    ///
    /// As for `TaskState::forget_claimed`: its body was taken, its hints taken, and its
    /// bindings are an empty inline list.
    #[inline]
    pub(crate) unsafe fn forget_job(&self) {
        // SAFETY: the caller's contract.
        unsafe { self.state.forget_claimed() }
    }

    /// The task's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records an engine's decision about this task in worker `worker`'s counters of
    /// the task's run. Only worker `worker`'s own thread calls this (the counters have
    /// a single writer).
    pub fn record(&self, worker: usize, event: EngineEvent) {
        let c = self.run.counters.worker(worker);
        match event {
            EngineEvent::StealSameNode => c.steals_same_node.add(1),
            EngineEvent::StealRemote => c.steals_remote.add(1),
            EngineEvent::PushAttempted => c.pushes_attempted.add(1),
            EngineEvent::PushTransferred => c.pushes_transferred.add(1),
            EngineEvent::PushRejected => c.pushes_rejected.add(1),
            EngineEvent::PushKeptLocal => c.pushes_kept_local.add(1),
            EngineEvent::MovedToData => c.tasks_moved.add(1),
        }
    }

    /// Fails the task's run with a placement the engine cannot carry out; the run then
    /// drains without running bodies.
    pub fn fail_run(&self, message: String) {
        self.run.fail(Error::Declaration {
            task: self.name.to_string(),
            message,
        });
    }

    /// Fails the task's run with `error` (the first error of a run is the one it
    /// returns); the run then drains without running bodies.
    pub fn fail_run_with(&self, error: Error) {
        self.run.fail(error);
    }
}

/// What an engine counts about tasks (see [`Task::record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// The worker stole the task from a worker of its own node.
    StealSameNode,
    /// The worker stole the task from a worker of another node.
    StealRemote,
    /// Work-pushing chose another node for the task the worker activated.
    PushAttempted,
    /// The task was transferred to a worker of that node.
    PushTransferred,
    /// The transfer was refused (mailbox full); the task stayed.
    PushRejected,
    /// The task was below the pushing threshold and stayed.
    PushKeptLocal,
    /// The `auto` migration setting sent the task to its data's node instead of its
    /// non-strict hint's.
    MovedToData,
}

/// A ready task described for the placement policy.
#[derive(Clone, Debug)]
pub struct ReadyDescription {
    /// Its accesses, with the nodes of the buffers allocated so far.
    pub accesses: AccessInfos,
    /// Its affinity hint resolved now (affinity to a datum means the node of the
    /// datum's current buffer, or the first node if it has none yet: paper 3 section
    /// 3), and whether it is strict.
    pub affinity: Option<(Domain, bool)>,
}

/// A task that has just become ready on the calling worker and is not in any queue
/// yet: the placement policy may read its declarations now. Holding it is the proof
/// that no worker can take the task's job meanwhile; [`into_task`](Self::into_task)
/// gives the task up to be queued, and ends that right.
pub struct Activated {
    task: TaskRef,
}

impl Activated {
    /// Wraps a task whose last dependence the calling thread has just satisfied (or
    /// that was ready at submission), before anything else can reach it as ready.
    #[inline]
    pub(crate) fn new(task: TaskRef) -> Self {
        Activated { task }
    }

    /// Describes the task for the placement policy; `with_accesses` says whether the
    /// policy needs the accesses.
    pub fn describe(&self, with_accesses: bool) -> ReadyDescription {
        let job = self.job();
        ReadyDescription {
            accesses: if with_accesses {
                crate::graph::policy_access_infos(&job.bindings)
            } else {
                AccessInfos::new()
            },
            affinity: job.affinity().map(resolve_affinity),
        }
    }

    /// The bytes the task reads and writes, as its description's accesses count them
    /// ([`describe`](Self::describe)), without looking at where they lie.
    #[inline]
    pub fn declared_bytes(&self) -> (u64, u64) {
        let bindings = &self.job().bindings;
        if bindings.is_empty() {
            // A task declaring nothing, as every OpenMP task without dependences.
            return (0, 0);
        }
        crate::graph::accesses::declared_bytes(bindings)
    }

    /// Whether the task carries an affinity hint.
    #[inline]
    pub fn has_affinity(&self) -> bool {
        self.job().affinity().is_some()
    }

    /// Records the node the placement policy chose for the task (the queue the task
    /// then goes through publishes it to the worker that runs it).
    #[inline]
    pub fn set_preferred_node(&self, node: usize) {
        self.task.preferred.store(node, Ordering::Relaxed);
    }

    /// The task, to be queued: nothing reads its declarations through `self` any more.
    #[inline]
    pub fn into_task(self) -> TaskRef {
        self.task
    }

    #[inline]
    fn job(&self) -> &Job {
        // SAFETY: an `Activated` is made only by the thread that made the task ready,
        // before the task is handed to any queue, and it does not give the task out
        // but by value (`into_task`). So no worker can take the job while `self`, and
        // this borrow of it, live.
        unsafe { self.task.job_unshared() }
    }
}

impl std::ops::Deref for Activated {
    type Target = Task;

    fn deref(&self) -> &Task {
        &self.task
    }
}

/// Resolves an affinity hint when its task becomes ready.
fn resolve_affinity(affinity: &Affinity) -> (Domain, bool) {
    let domain = match &affinity.target {
        AffinityTarget::Worker(w) if affinity.hand_over && !affinity.strict => Domain::Home(*w),
        AffinityTarget::Worker(w) => Domain::Worker(*w),
        AffinityTarget::Node(n) => Domain::Node(*n),
        AffinityTarget::Data(d) => match super::team::owner_of(d) {
            // An attached datum is its owner's (`graph::team`).
            Some(super::Owned::Worker(w)) => Domain::Worker(w),
            Some(super::Owned::Node(n)) => Domain::Node(n),
            None => Domain::Node(d.0.current().node().unwrap_or(0)),
        },
    };
    (domain, affinity.strict)
}
