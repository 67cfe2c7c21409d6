//! The executor seam of the engines, and a task's lifecycle over it.
//!
//! [`submit`](super::submit) binds a task's declared accesses to versions in submission
//! order and registers it with the versions it must wait for; [`start`] runs a ready
//! task's body on the calling worker once its buffers are prepared
//! (`graph::prepare`); [`finish`] publishes the versions it wrote and activates the
//! tasks that waited for them (`graph::release`).

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;

use locus_mem::pool::Pools;

use super::accesses::{
    access_infos, count_accesses, count_plain_accesses, for_each_keyed_access, MemoryKey,
};
use super::body::{drop_skipped, run_body, skip_body};
use super::migrate::forget_reuse;
use super::prepare::{check_memory, prepare_buffers, Backups};
use super::release::{activate_if_ready, release};
use super::run::Finished;
use super::task::{Activated, Body, Job, Task, TaskRef};
use crate::data::{partition, version};
use crate::sched::AccessInfo;

/// What the dependence tracker needs from the engine running it: one per worker (part
/// of the [engine contract](crate::engine)).
pub trait Executor {
    /// Index of the calling worker.
    fn worker(&self) -> usize;
    /// Node of the calling worker.
    fn node(&self) -> usize;
    /// The per-node pools.
    fn pools(&self) -> &Arc<Pools>;
    /// A task became ready on this worker; the scheduling policy decides where it goes
    /// ([`Activated::describe`] tells it what the task accesses), then the engine
    /// queues [`Activated::into_task`] there.
    fn activate(&self, task: Activated);
    /// Runs other ready tasks while `blocked` holds (submission window, taskwait).
    fn help_while(&self, blocked: &dyn Fn() -> bool);

    /// Runs other ready tasks while `blocked` holds and one can be found, and returns
    /// as soon as none can: never waits for work to appear. Default: as
    /// [`help_while`](Self::help_while), for an engine whose `help_while` already
    /// returns when nothing can make progress (the simulator).
    fn help_while_work(&self, blocked: &dyn Fn() -> bool) {
        self.help_while(blocked)
    }

    /// A task was just submitted from this worker, before its dependences are
    /// registered (it may become ready at once, or much later). The simulator charges
    /// the creation here and remembers when it happened; `threads` needs nothing.
    fn submitted(&self, _task: &Task) {}

    /// The finished tasks this worker holds back from their run's count, if it holds
    /// any back (`graph::run`, `Finished`): it then gives them back before it looks
    /// for work elsewhere and finds none. `None` (the default): each finished task is
    /// subtracted at once.
    #[doc(hidden)]
    fn finished(&self) -> Option<&super::run::Finished> {
        None
    }
}

thread_local! {
    static CURRENT: Cell<Option<NonNull<dyn Executor>>> = const { Cell::new(None) };
}

/// Marks the calling thread as a worker of an engine for the guard's lifetime, so that
/// tasks spawned from bodies it runs reach that worker.
pub struct CurrentExecutor {
    previous: Option<NonNull<dyn Executor>>,
}

impl CurrentExecutor {
    /// Installs `executor` as the calling thread's executor.
    ///
    /// # Safety
    ///
    /// `executor` must stay valid, and stay on this thread, until the guard is dropped.
    pub unsafe fn enter(executor: &(dyn Executor + 'static)) -> Self {
        let ptr = NonNull::from(executor);
        CurrentExecutor {
            previous: CURRENT.with(|c| c.replace(Some(ptr))),
        }
    }
}

impl Drop for CurrentExecutor {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Calls `f` with the calling thread's executor and `value`, if the thread is a
/// worker; gives `value` back if not.
pub(crate) fn with_executor<T, R>(value: T, f: impl FnOnce(&dyn Executor, T) -> R) -> Result<R, T> {
    match CURRENT.with(|c| c.get()) {
        // SAFETY: `CurrentExecutor::enter` requires the executor to outlive the guard
        // that installed it, and the guard resets the pointer when dropped on this same
        // thread.
        Some(ptr) => Ok(f(unsafe { ptr.as_ref() }, value)),
        None => Err(value),
    }
}

/// Calls `f` with the calling thread's executor, if the thread is a worker.
pub(crate) fn current_executor<R>(f: impl FnOnce(&dyn Executor) -> R) -> Option<R> {
    with_executor((), |ex, ()| f(ex)).ok()
}

/// Whether task bodies run (the `threads` engine, and the simulator at small sizes) or
/// are skipped (the simulator at paper sizes, where buffers hold no memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bodies {
    /// Bodies run on real buffers.
    Run,
    /// Bodies are skipped; buffers are only accounted.
    Skip,
}

/// A task whose body has run, or was skipped, and whose outputs are not published yet.
#[cfg_attr(not(feature = "engine-seam"), allow(dead_code))]
pub struct Started {
    /// The task, whose job the worker that started it claimed: its bindings and hints
    /// stay in the task's record (`Task::claimed_job`) until [`finish`].
    task: TaskRef,
    completion: Completion,
    /// Pages of shared data moved as the task started (next touch, or a migration task).
    migrated_pages: u64,
}

/// How far a started task got, which decides what its outputs become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Completion {
    /// The body ran to its end (or was skipped by a simulation, which writes nothing
    /// by design): its versions are committed.
    Done,
    /// The body did not run (the run had failed, or its buffers could not be made):
    /// its versioned outputs are abandoned, shared data untouched.
    NotRun,
    /// The body panicked (or a C body failed), maybe after writing part of its
    /// outputs: its versioned outputs are abandoned (those it updated in place got
    /// their previous contents back), the shared data it writes poisoned.
    Panicked,
}

#[cfg_attr(not(feature = "engine-seam"), allow(dead_code))]
impl Started {
    /// The task's accesses: bytes and the node of each buffer.
    pub fn accesses(&self) -> impl Iterator<Item = AccessInfo> {
        let infos = if self.is_migration() {
            Vec::new()
        } else {
            access_infos(&self.job().bindings)
        };
        infos.into_iter()
    }

    /// Pages of shared data that moved to another node as the task started: pages
    /// armed for migration on next touch that it touched first, or, for a migration
    /// task ([`Scope::migrate`](crate::Scope::migrate)), the pages it moved. An engine
    /// charges their cost (the topology's migration model) to the task.
    pub fn migrated_pages(&self) -> u64 {
        self.migrated_pages
    }

    /// Whether the task is a migration task: its declared data are moved, not
    /// accessed, so it has no accesses of its own.
    pub fn is_migration(&self) -> bool {
        self.job()
            .hints
            .as_ref()
            .is_some_and(|h| h.migrate_to.is_some())
    }

    /// The task's accesses as [`Started::accesses`] gives them, each with the key of
    /// the memory it touches.
    pub fn keyed_accesses(&self) -> impl Iterator<Item = (AccessInfo, MemoryKey)> {
        let bindings = &self.job().bindings;
        let mut out = Vec::with_capacity(bindings.len() + 1);
        if !self.is_migration() {
            for_each_keyed_access(bindings, |a, k| out.push((a, k)));
        }
        out.into_iter()
    }

    /// The task's cost hint, in nanoseconds of computation.
    pub fn cost_hint(&self) -> Option<u64> {
        self.job().hints.as_ref().and_then(|h| h.cost)
    }

    /// The task's name.
    pub fn name(&self) -> &str {
        &self.task.name
    }

    /// The task.
    pub fn task(&self) -> &TaskRef {
        &self.task
    }

    /// The task's job, which the start that made this claimed.
    fn job(&self) -> &Job {
        // SAFETY: the job was claimed by the `start` that made `self`, which owns the
        // claim until `finish` consumes it; the only borrows of the job are through
        // `self`, shared ones here (the exclusive one is `finish`'s, which takes `self`).
        unsafe { self.task.claimed_job_shared() }
    }
}

/// Runs a ready task's body on the calling worker, or skips it (`bodies`, or a failed
/// run), and counts its accesses; [`finish`] completes it.
///
/// When the run has failed, the body is skipped but the task must still be finished, so
/// that the graph drains and every version is released.
#[inline]
pub fn start(ex: &dyn Executor, task: TaskRef, bodies: Bodies) -> Option<Started> {
    if !task.claim_job() {
        return None;
    }
    // SAFETY: claimed just now: this worker alone uses the job, where it is, until
    // `finish` forgets it; the borrow ends before the task moves into `Started`.
    let job = unsafe { task.claimed_job() };
    let (completion, migrated_pages) =
        if job.bindings.is_empty() && !job.hints.as_ref().is_some_and(|h| h.migrate_to.is_some()) {
            (start_free(ex, &task, job), 0)
        } else if matches!(&job.bindings[..], [b] if b.is_plain()) && job.hints.is_none() {
            (start_one_version(ex, &task, job, bodies), 0)
        } else {
            start_general(ex, &task, job, bodies)
        };
    Some(Started {
        task,
        completion,
        migrated_pages,
    })
}

/// The body of a claimed job, which only its start takes.
#[inline(always)]
fn take_body(job: &mut Job) -> Body {
    job.body
        .take()
        .expect("a claimed job has its body until started")
}

/// [`start`] for any task: its buffers prepared, gathered or migrated as its bindings
/// and hints say. Returns how its body ended and the pages it moved.
#[inline(never)]
fn start_general(
    ex: &dyn Executor,
    task: &TaskRef,
    job: &mut Job,
    bodies: Bodies,
) -> (Completion, u64) {
    let body = take_body(job);
    let Job {
        bindings,
        hints,
        control,
        children_to_parent,
        root,
        ..
    } = job;
    let (control, children_to_parent, root) = (*control, *children_to_parent, *root);
    let run = &task.run;
    let counters = run.counters.worker(ex.worker());
    let mut completion = Completion::NotRun;
    let mut migrated_pages = 0;
    let migrate_to = hints.as_ref().and_then(|h| h.migrate_to);
    let migration = migrate_to.is_some();
    if run.migration.0 == crate::config::Migration::Auto {
        forget_reuse(bindings);
    }
    if run.is_failed() {
        skip_body(task, body);
    } else {
        let mut backups = Backups::default();
        let how = (bodies, control, migrate_to);
        let prepared = prepare_buffers(ex, task, bindings, how, &mut backups);
        // The backups stay where they are: the body's failure restores them in place.
        let outcome = prepared.and_then(|pages| {
            migrated_pages = pages;
            // A control task sees no buffer: it runs even when bodies are skipped.
            match (bodies, control) {
                (Bodies::Skip, false) => drop_skipped(task, body),
                _ => {
                    let team = hints.as_ref().and_then(|h| h.team.clone());
                    let flags = (children_to_parent, root);
                    run_body(ex, task, body, bindings, flags, team, || {
                        completion = Completion::Panicked;
                        // SAFETY: the task holds its bindings, which publish nothing
                        // before `finish`, and its body has returned.
                        unsafe { backups.restore() };
                    })
                    .map(|()| {
                        if bodies == Bodies::Run && !control {
                            partition::scatter(bindings);
                        }
                    })
                }
            }
        });
        match outcome {
            Ok(()) if migration => completion = Completion::Done,
            Ok(()) => {
                completion = Completion::Done;
                count_accesses(counters, bindings);
                count_started(ex, task);
            }
            Err(error) => run.fail(error),
        }
    }
    (completion, migrated_pages)
}

/// [`start`] for a task with no binding that moves no data (not a migration task): no
/// buffer to prepare, no access to count, and a body that sees no view (it runs even
/// when bodies are skipped).
#[inline(always)]
fn start_free(ex: &dyn Executor, task: &TaskRef, job: &mut Job) -> Completion {
    let body = take_body(job);
    debug_assert!(job.control, "a task without bindings sees no view");
    let run = task.run;
    let mut completion = Completion::NotRun;
    if run.is_failed() {
        skip_body(task, body);
    } else {
        let flags = (job.children_to_parent, job.root);
        let team = job.hints.as_ref().and_then(|h| h.team.clone());
        match run_body(ex, task, body, &job.bindings, flags, team, || {
            completion = Completion::Panicked
        }) {
            Ok(()) => {
                completion = Completion::Done;
                count_started(ex, task);
            }
            Err(error) => run.fail(error),
        }
    }
    completion
}

/// [`start`] for a task of one plain binding (`Binding::is_plain`) and no hints, the
/// task of most dependence graphs: its buffer prepared and its accesses counted without
/// walking leaves, gathers, reductions or shared data.
#[inline(never)]
fn start_one_version(
    ex: &dyn Executor,
    task: &TaskRef,
    job: &mut Job,
    bodies: Bodies,
) -> Completion {
    let body = take_body(job);
    let (control, flags) = (job.control, (job.children_to_parent, job.root));
    let bindings = &mut job.bindings;
    let run = task.run;
    let mut completion = Completion::NotRun;
    if run.is_failed() {
        skip_body(task, body);
    } else {
        let mut backups = Backups::default();
        let how = (bodies, control, false);
        let prepared = check_memory(ex, task, bodies, control)
            .and_then(|()| version::prepare(ex, task, &mut bindings[0], how, &mut backups));
        // The backups stay where they are: the body's failure restores them in place.
        let outcome = match (prepared, bodies, control) {
            (Err(error), ..) => Err(error),
            (Ok(()), Bodies::Skip, false) => drop_skipped(task, body),
            (Ok(()), ..) => run_body(ex, task, body, bindings, flags, None, || {
                completion = Completion::Panicked;
                // SAFETY: as in `start`.
                unsafe { backups.restore() };
            }),
        };
        match outcome {
            Ok(()) => {
                completion = Completion::Done;
                count_plain_accesses(run.counters.worker(ex.worker()), &bindings[0]);
                count_started(ex, task);
            }
            Err(error) => run.fail(error),
        }
    }
    completion
}

/// Counts a task whose body ran to its end in the calling worker's counters.
#[inline(always)]
fn count_started(ex: &dyn Executor, task: &Task) {
    let counters = task.run.counters.worker(ex.worker());
    counters.tasks.add(1);
    if let Some(node) = task.preferred_node() {
        counters.with_preference.add(1);
        if node == ex.node() {
            counters.started_on_preferred.add(1);
        }
    }
}

/// Completes a started task: publishes the versions it wrote, activates the tasks that
/// waited for them, releases what it held and counts it finished. A task whose body
/// spawned children publishes its outputs only once they are complete too
/// (`graph::domain`).
pub fn finish(ex: &dyn Executor, started: Started) {
    finish_holding(ex, started, ex.finished());
}

/// [`finish`] on a worker that holds finished tasks back in `held` (`run::Finished`),
/// as [`Executor::finished`] says; the engine that knows it saves the call.
#[inline(always)]
pub(crate) fn finish_holding(ex: &dyn Executor, started: Started, held: Option<&Finished>) {
    let Started {
        task, completion, ..
    } = started;
    // SAFETY: the job was claimed by the start that made `started`, consumed here:
    // this worker alone uses it, and no other borrow of it is alive.
    let job = unsafe { task.claimed_job() };
    // Most tasks have no hints: the test is inlined, the drop is not.
    if let Some(hints) = job.hints.take() {
        drop(hints);
    }
    // The parent to notify: a task is complete once its body and its children are,
    // and its completion may complete its parent, and so on up.
    let mut parent = match task.domain.get() {
        None => {
            if !job.bindings.is_empty() {
                release(ex, &task, &mut job.bindings, completion);
            } else if job.bindings.spilled() {
                drop(std::mem::take(&mut job.bindings));
            }
            task.parent.as_ref()
        }
        Some(domain) => {
            // The children may read the task's outputs now.
            for waiter in domain.body_done(std::mem::take(&mut job.bindings), completion) {
                activate_if_ready(ex, waiter);
            }
            if domain.close_one() {
                let (mut bindings, completion) = domain.complete();
                release(ex, &task, &mut bindings, completion);
                task.parent.as_ref()
            } else {
                None
            }
        }
    };
    // The body was taken by the start, the hints above; the bindings were released
    // and left an empty inline list (`release`): the job owns nothing any more.
    debug_assert!(job.bindings.is_empty() && !job.bindings.spilled());
    // SAFETY: as above; the job owns nothing (just said).
    unsafe { task.forget_job() };
    while let Some(done) = parent {
        let domain = done.domain.get().expect("a parent has a domain");
        if !domain.close_one() {
            break;
        }
        let (mut bindings, completion) = domain.complete();
        release(ex, done, &mut bindings, completion);
        parent = done.parent.as_ref();
    }
    match held {
        Some(f) => f.finished(task.run),
        None => task.run.task_finished(),
    }
}
