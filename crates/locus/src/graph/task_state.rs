//! The state of a task that workers race on: how many of its dependences are still
//! unsatisfied, and the hand-over of its job to the one worker that runs it.
//!
//! A task starts with one count per dependence plus one held by its submitter until it
//! has registered the task with every version it waits for (the *guard*). Satisfying a
//! dependence, or releasing the guard, is one `AcqRel` decrement; the one that reaches
//! zero makes the task ready, and its caller alone (the *activator*) hands the task to the
//! engine. A worker claims the job with [`TaskState::claim_job`] and uses it where it is
//! ([`TaskState::claimed`]), or takes it out ([`TaskState::take_job`], which claims it
//! the same way); the `taken` flag gives it to exactly one caller, however many hold the
//! task.
//!
//! The job is generic so that the loom models of `tests/loom.rs` run this very code with
//! a job of their own (module `sync`).

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::UnsafeCell;

/// A task's dependence counter and its job.
pub struct TaskState<J> {
    /// Unsatisfied dependences, plus one held by the submitter until binding is done.
    pending: AtomicUsize,
    /// Set by the one claim (`claim_job`, `take_job`) that gets the job.
    taken: AtomicBool,
    job: UnsafeCell<Option<J>>,
}

// SAFETY: `job` is the only field that is not `Sync`. It is written once, before the task
// is shared (in `TaskState::new`); read by the submitter while it still holds the pending
// guard, or by the activator before it queues the ready task (`job_unshared`, whose
// contract excludes a concurrent `take_job`); and taken at most once, by the caller that
// wins the `taken` flag after `pending` reached zero. Those accesses are ordered by the
// `AcqRel` decrements of `pending`, the flag, and the queues' own synchronisation. As
// under a mutex, no two threads touch the job at once, so `J: Send` is enough.
unsafe impl<J: Send> Sync for TaskState<J> {}

impl<J> TaskState<J> {
    /// A task waiting for `inputs` dependences plus the submitter's guard.
    #[inline]
    pub fn new(job: J, inputs: usize) -> Self {
        TaskState {
            pending: AtomicUsize::new(inputs + 1),
            taken: AtomicBool::new(false),
            job: UnsafeCell::new(Some(job)),
        }
    }

    /// A task that waits for nothing: ready already, with no guard to release. Whoever
    /// makes it is its activator.
    #[inline]
    pub fn ready(job: J) -> Self {
        TaskState {
            pending: AtomicUsize::new(0),
            taken: AtomicBool::new(false),
            job: UnsafeCell::new(Some(job)),
        }
    }

    /// Satisfies one dependence, or releases the submitter's guard; returns whether the
    /// task just became ready (exactly one call does).
    #[inline]
    pub fn satisfy_one(&self) -> bool {
        self.satisfy(1)
    }

    /// Satisfies `n` dependences at once (the submitter's guard among them, or `n`
    /// never reaches the count's end); returns whether the task just became ready.
    /// A submitter that finds dependences satisfied as it registers them releases them
    /// with its guard in one read-modify-write.
    #[inline]
    pub fn satisfy(&self, n: usize) -> bool {
        // AcqRel: every decrement reads the previous ones, so the one reaching zero
        // acquires what each earlier satisfier and the submitter did before theirs (their
        // reads of the job among it) and makes it visible to whoever takes the job.
        self.pending.fetch_sub(n, Ordering::AcqRel) == n
    }

    /// Takes the job out of a ready task; `None` if the task is not ready or the job
    /// was taken already. The runtime claims jobs and uses them in place; the loom
    /// models (`tests/loom.rs`) take them, through the same claim.
    #[inline]
    #[cfg_attr(not(loom), allow(dead_code))]
    pub fn take_job(&self) -> Option<J> {
        if !self.claim_job() {
            return None;
        }
        // SAFETY: this call won the `taken` flag of a ready task, so no other call takes
        // the job, and readers through `job_unshared` are done (its contract: they read
        // only before the ready task is queued, and a task is taken from a queue).
        self.job.with_mut(|job| unsafe { (*job).take() })
    }

    /// Claims the job of a ready task for the caller, who then uses it where it is
    /// ([`TaskState::claimed`]) rather than moving it out; `false` if the task is not
    /// ready or its job was claimed (or taken) already. The `taken` flag gives it to
    /// exactly one caller, as [`TaskState::take_job`].
    #[inline]
    pub fn claim_job(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0 && !self.taken.swap(true, Ordering::AcqRel)
    }

    /// The job the caller claimed, in place.
    ///
    /// # Safety
    ///
    /// The caller won [`TaskState::claim_job`], the job was not dropped
    /// ([`TaskState::forget_claimed`]), and no other borrow of it is alive (the claim
    /// makes the caller its only user; readers through `job_unshared` are done, as for
    /// `take_job`).
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn claimed(&self) -> &mut J {
        // SAFETY: the caller's contract: it alone reaches the job now.
        let job = self.job.with_mut(|job| unsafe { &mut *job });
        job.as_mut()
            .expect("a claimed job is present until dropped")
    }

    /// The job the caller claimed, to read in place.
    ///
    /// # Safety
    ///
    /// As for [`TaskState::claimed`], but for shared borrows: no exclusive borrow of the
    /// job is alive while the returned one is.
    #[inline]
    pub unsafe fn claimed_shared(&self) -> &J {
        // SAFETY: the caller's contract: only shared borrows of the job are alive.
        let job = self.job.with(|job| unsafe { &*job });
        job.as_ref()
            .expect("a claimed job is present until dropped")
    }

    /// Ends the claimed job, which the caller emptied: it is not dropped (what it held
    /// was moved out or dropped already), only marked gone.
    ///
    /// # Safety
    ///
    /// As for [`TaskState::claimed`]; and the job holds nothing that needs dropping
    /// any more (whatever it owned was taken out or dropped in place), so that
    /// forgetting it leaks nothing.
    #[inline]
    pub unsafe fn forget_claimed(&self) {
        // SAFETY: the caller's contract: it alone reaches the job, which owns nothing.
        self.job
            .with_mut(|job| unsafe { std::ptr::write(job, None) });
    }

    /// The job, for the submitter to register the task with its input versions, or for
    /// the activator to describe the task to the placement policy.
    ///
    /// # Safety
    ///
    /// No caller may take the job while the returned borrow lives: the caller is the
    /// submitter still holding the pending guard (the `+ 1` of [`TaskState::new`]), or
    /// the activator of the ready task before it hands the task to any queue.
    #[inline]
    pub unsafe fn job_unshared(&self) -> &J {
        // SAFETY: per the contract nobody calls `take_job` meanwhile; the job was
        // written before the task was shared, and only shared reads happen here.
        let job = self.job.with(|job| unsafe { &*job });
        job.as_ref().expect("job present until taken")
    }
}
