//! Submission and execution of tasks, over the [`Executor`] seam of the engines.
//!
//! [`submit`] binds a task's declared accesses to versions in submission order
//! and registers it with the versions it must wait for; [`execute`] runs a
//! ready task's body on the calling worker, then publishes the versions it wrote and
//! activates the tasks that waited for them.

use std::borrow::Cow;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Arc;

use locus_mem::pool::Pools;

use super::domain::{ChildDomain, Entry};
use super::hints::Hints;
use super::run::{RunRef, RunState};
use super::scope::TaskCtx;
use super::task::{Activated, Body, Job, Task, TaskRef, Waiting};
use crate::config::AllocMode;
use crate::data::partition::{self, Piece, Resolved};
use crate::data::reduce::{combine_order, Group, ReduceBinding};
use crate::data::version::{Buffer, Version, VersionRef, Waiters};
use crate::data::{AccessList, Binding, Bindings, DataInner, Declarations, Declared, Gather, Mode};
use crate::error::Error;
use crate::sched::{AccessInfo, AccessInfos};
use smallvec::SmallVec;

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

/// Why a declaration was refused: kept apart from [`Error`] so that one refusal can
/// both fail the run and be returned to the submitter.
#[derive(Clone)]
enum Refusal {
    Foreign { data: String },
    Invalid(String),
}

impl Refusal {
    fn into_error(self, task: &str) -> Error {
        match self {
            Refusal::Foreign { data } => Error::ForeignData {
                task: task.to_string(),
                data,
            },
            Refusal::Invalid(message) => Error::Declaration {
                task: task.to_string(),
                message,
            },
        }
    }
}

/// Checks a task's declarations against the run: same runtime, ranges in bounds, no
/// datum declared twice when one of the accesses writes it, and for a task bound
/// run-wide (`run_wide`) no datum of a scope whose task is not complete.
fn validate(run: &RunState, declared: &[Declared], run_wide: bool) -> Result<(), Refusal> {
    for (i, d) in declared.iter().enumerate() {
        check(run, d, run_wide)?;
        for other in &declared[..i] {
            if other.data.id == d.data.id && (other.mode.exclusive() || d.mode.exclusive()) {
                return Err(Refusal::Invalid(format!(
                    "`{}` is declared twice and one access writes it; declare one \
                     read-write access instead",
                    d.data.name
                )));
            }
        }
    }
    Ok(())
}

/// The checks of [`validate`] on one declaration alone: all a task of one access
/// needs.
#[inline(always)]
fn check(run: &RunState, d: &Declared, run_wide: bool) -> Result<(), Refusal> {
    if d.data.runtime != run.runtime_id {
        return Err(Refusal::Foreign {
            data: d.data.name.clone(),
        });
    }
    // A datum made in the scope of a task that is not complete yet is reached only
    // through that task's domain (`graph::domain`).
    if run_wide && d.data.local.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Refusal::Invalid(format!(
            "`{}` was created in the scope of a task that is not complete yet: until \
             then only that task's children can access it",
            d.data.name
        )));
    }
    if let Some(reason) = &d.data.unavailable {
        return Err(Refusal::Invalid(format!(
            "`{}` has no memory: {reason}",
            d.data.name
        )));
    }
    // Only shared data is poisoned (by a writer in place that failed).
    if d.mode.reads() && d.data.shared.is_some() {
        if let Some(task) = d.data.poisoned_by() {
            return Err(Refusal::Invalid(
                Error::Poisoned {
                    data: d.data.name.clone(),
                    task,
                }
                .to_string(),
            ));
        }
    }
    if d.range.start > d.range.end || d.range.end > d.data.len {
        return Err(Refusal::Invalid(format!(
            "range {}..{} is out of bounds of `{}` (length {})",
            d.range.start, d.range.end, d.data.name, d.data.len
        )));
    }
    Ok(())
}

/// How a scope's submissions respond to a full window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Throttle {
    /// Wait for room, running ready tasks meanwhile (the run's root).
    Wait,
    /// Run ready tasks while the window is full and some can be found (control tasks).
    Help,
    /// Never wait (a task's children may need its outputs).
    Never,
}

/// What a task's body is given.
pub(crate) enum TaskBody<L: AccessList, F> {
    /// The views of its declared accesses.
    Views(L, F),
    /// Nothing but its context: a control task, whose accesses only order it.
    Control(Box<dyn FnOnce(&TaskCtx) + Send + 'static>),
}

/// The task in whose domain a scope binds its tasks (`graph::domain`).
pub(crate) struct Owner {
    /// Borrowed from `start`, which holds the task (or, for a control task, the task
    /// whose parent this is) until the body and its context are gone: no reference
    /// count is taken per task run.
    task: NonNull<TaskRef>,
    /// The owner's bindings while its body runs, to make its domain on the first
    /// spawn; `None` when the domain exists already (the children of a control task
    /// go to the domain of the control task's parent).
    pub(crate) bindings: Option<NonNull<[Binding]>>,
}

impl Owner {
    /// The owner of a body's scope: `task`, with its `bindings` if the body is its own.
    ///
    /// # Safety
    ///
    /// `task` (and the bindings) outlive the owner, which lives only in the context of
    /// the body `start` runs.
    unsafe fn new(task: &TaskRef, bindings: Option<NonNull<[Binding]>>) -> Self {
        Owner {
            task: NonNull::from(task),
            bindings,
        }
    }

    /// The owning task.
    pub(crate) fn task(&self) -> &TaskRef {
        // SAFETY: `Owner::new`'s contract: the task outlives the owner.
        unsafe { self.task.as_ref() }
    }

    /// The owner's domain if it has one already.
    pub(crate) fn existing_domain(&self) -> Option<&ChildDomain> {
        self.task().domain.get().map(|d| &**d)
    }

    /// Whether the scope is the owner's own (its body runs), not a control task's.
    pub(crate) fn is_own(&self) -> bool {
        self.bindings.is_some()
    }

    /// The owner's domain, made on first use.
    pub(crate) fn domain_or_refusal(&self) -> Result<&ChildDomain, Error> {
        self.domain().map_err(|r| r.into_error(&self.task().name))
    }

    /// The owner's domain, made on first use.
    fn domain(&self) -> Result<&ChildDomain, Refusal> {
        match self.bindings {
            // SAFETY: the pointer is set by `start` to the bindings of the task whose
            // body is running, and only that body's context reaches it; they live in
            // `start`'s frame until the body returns.
            Some(bindings) => Ok(self
                .task()
                .domain
                .get_or_init(|| Box::new(ChildDomain::new(unsafe { bindings.as_ref() })))),
            None => self.task().domain.get().map(|d| &**d).ok_or_else(|| {
                Refusal::Invalid(format!(
                    "the scope of `{}` has no domain (a runtime bug)",
                    self.task().name
                ))
            }),
        }
    }
}

/// Checks a child's declarations against its parent's domain: every datum declared by
/// the parent (or created in its scope), written only if the parent writes it. Appends
/// where each declaration's entry is to `positions`, in order, for the binding to use.
fn validate_nested(
    owner: &TaskRef,
    entries: &[Entry],
    declared: &[&Declared],
    positions: &mut SmallVec<[u32; 8]>,
) -> Result<(), Refusal> {
    for d in declared {
        if d.mode == Mode::Reduce {
            return Err(Refusal::Invalid(format!(
                "`{}`: a child task cannot reduce into data of its parent `{}`; reduce \
                 from the run's control program",
                d.data.name, owner.name
            )));
        }
        match super::domain::position(entries, d.data.id) {
            None => {
                // A task declaring nothing is not a control task (docs/guide.md,
                // "Control tasks"): say how to get one.
                let hint = if entries.iter().all(|e| e.local) {
                    "; it declares no access, and only `spawn_control` makes a control \
                     task, whose children join its parent's scope"
                } else {
                    ""
                };
                return Err(Refusal::Invalid(format!(
                    "`{}` is not declared by the parent task `{}`: a child may only access \
                     data its parent declared (weakly or not) or created in its scope{hint}",
                    d.data.name, owner.name
                )));
            }
            Some(k) if d.mode.writes() && !entries[k].writable => {
                return Err(Refusal::Invalid(format!(
                    "`{}` is only read by the parent task `{}`: a child cannot write it",
                    d.data.name, owner.name
                )))
            }
            // A domain holds fewer than 2^32 data: each is a datum of the run.
            Some(k) => positions.push(k as u32),
        }
    }
    Ok(())
}

/// Submits a task from the calling worker `ex`, into the domain of `owner` if any.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit<L, F>(
    ex: &dyn Executor,
    run: RunRef,
    throttle: Throttle,
    owner: Option<&Owner>,
    name: Cow<'static, str>,
    hints: Option<Box<Hints>>,
    declared: Declarations,
    body: TaskBody<L, F>,
) -> Result<(), Error>
where
    L: AccessList,
    F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
{
    // A task declaring nothing takes `submit_lean` (`Scope::submit` chooses).
    debug_assert!(
        !declared.is_empty(),
        "a task declaring nothing is submitted lean"
    );
    let domain = admit(run, owner, &name)?;
    if domain.is_none() {
        if let [d] = &declared[..] {
            if is_plain_versioned(d) {
                let d = declared.into_iter().next().expect("one declaration");
                return submit_one_versioned(ex, (run, throttle, owner), d, (name, hints, body));
            }
        }
    }
    let mut entries = domain.map(ChildDomain::entries);
    // Each binding takes its declaration's datum, without a count: the declarations
    // are kept from dropping theirs (`forget_data` below), and are dropped whole only
    // if the task is refused. (Should a panic leave `submit` before the bindings are
    // made, they leak rather than release a count a binding may hold.)
    let mut resolved: std::mem::ManuallyDrop<SmallVec<[Resolved; 1]>> =
        std::mem::ManuallyDrop::new(crate::data::small_vec_for(declared.len()));
    let checked = validate(&run, &declared, entries.is_none()).and_then(|()| {
        // Accesses to partitioned data bind to the segments they cover; only then can
        // two declarations meet on one segment (`partition::check_leaves`).
        let names: SmallVec<[String; 4]> = if declared.iter().any(|d| d.data.is_partitioned()) {
            declared.iter().map(|d| d.data.name.clone()).collect()
        } else {
            SmallVec::new()
        };
        for d in declared {
            resolved.push(partition::resolve(d));
        }
        if names.is_empty() {
            return Ok(());
        }
        partition::check_leaves(&resolved, &names).map_err(Refusal::Invalid)
    });
    // The declarations the task binds to versions, in order (after a refusal, whatever
    // was resolved: nothing is bound then).
    let declared = partition::leaves_of(&resolved);
    // Where each leaf's entry is in the parent's domain, in the order of the leaves.
    let mut positions: SmallVec<[u32; 8]> = SmallVec::new();
    let checked = checked.and_then(|()| match (owner, &entries) {
        (Some(owner), Some(entries)) => {
            validate_nested(owner.task(), entries, &declared, &mut positions)
        }
        _ => Ok(()),
    });
    if let Err(refusal) = checked {
        drop(declared);
        // Nothing was bound: the declarations keep their data's counts.
        drop(std::mem::ManuallyDrop::into_inner(resolved));
        // The run fails too, so that a misuse cannot go unnoticed.
        run.fail(refusal.clone().into_error(&name));
        return Err(refusal.into_error(&name));
    }
    enter_window(ex, run, throttle, matches!(body, TaskBody::Control(_)));
    if let Some(domain) = domain {
        domain.child_submitted();
    }
    // The run-wide current versions of the task's data are locked all at once, in the
    // order of the data's identifiers, so that tasks submitted at the same moment from
    // several workers bind as if one came entirely before the other (binding datum by
    // datum, two tasks writing each other's inputs could each wait for the other). A
    // domain's versions are under the domain's one lock already.
    let mut locked: SmallVec<[(u64, crate::data::CurrentGuard<'_>); 4]> = SmallVec::new();
    match (&entries, &declared[..]) {
        (Some(_), _) | (None, []) => {}
        // One datum: one lock, no order to keep.
        (None, [d]) => locked.push((d.data.id, d.data.lock_current())),
        (None, _) => {
            let mut order: SmallVec<[&Declared; 4]> = declared.clone();
            order.sort_by_key(|d| d.data.id);
            order.dedup_by_key(|d| d.data.id);
            locked = order
                .into_iter()
                .map(|d| (d.data.id, d.data.lock_current()))
                .collect();
        }
    }
    let mut leaves: Bindings = crate::data::small_vec_for(declared.len());
    let mut inputs = 0;
    let mut alloc_failed = None;
    // The combining tasks of the reductions this submission closes (`data::reduce`).
    let mut combiners: Vec<(TaskRef, Arc<Group>)> = Vec::new();
    let run_wide = entries.is_none();
    let auto = run.migration.0 == crate::config::Migration::Auto;
    for (leaf, &d) in declared.iter().enumerate() {
        let shared = d.data.shared.as_ref();
        if let Some(s) = shared.filter(|_| auto) {
            // The datum's expected reuse, for the `auto` migration setting.
            s.pending.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // The version the task binds to: the run-wide current one, or its parent's
        // domain's.
        let slot: &mut VersionRef = match entries.as_mut() {
            Some(e) => &mut e[positions[leaf] as usize].current,
            None => {
                let k = locked
                    .binary_search_by_key(&d.data.id, |(id, _)| *id)
                    .expect("locked above");
                &mut locked[k].1
            }
        };
        if run_wide {
            // Any other access closes an open reduction group first; a reduction with
            // other functions too.
            let open = d.data.reduction.get();
            let same = |g: &Group| d.reducer.as_ref().is_some_and(|r| g.reducer.same(r));
            if open.is_some_and(|g| !same(&g)) {
                combiners.extend(close_reduction(ex, run, &d.data, slot, &mut alloc_failed));
            }
        }
        let mut reduce = None;
        let part = match d.mode {
            Mode::Reduce => {
                let group = d
                    .data
                    .reduction
                    .lock()
                    .get_or_insert_with(|| {
                        let reducer = d.reducer.clone().expect("a reduction has its reducer");
                        Arc::new(Group::new(reducer, d.data.bytes()))
                    })
                    .clone();
                group.add_reducer();
                reduce = Some(Box::new(ReduceBinding {
                    group,
                    copy: std::sync::Mutex::new(None),
                }));
                (None, None, None)
            }
            _ => bind_leaf(ex, &run, &name, d, slot, &mut alloc_failed),
        };
        let (input, output, after) = part;
        let es = d.data.elem_size;
        let (offset, bytes) = (d.range.start * es, (d.range.end - d.range.start) * es);
        let binding = Binding {
            // SAFETY: the declaration's count moves to the binding: `resolved`, which
            // holds the declaration, never drops this `Arc` (it is `ManuallyDrop`, and
            // `forget_data` forgets it), and reads through it (`declared`) end below,
            // while the binding, kept in `leaves`, holds the datum alive.
            data: unsafe { std::ptr::read(&d.data) },
            mode: d.mode,
            weak: d.weak,
            input,
            output,
            after,
            offset,
            bytes,
            gather: None,
            reduce,
        };
        inputs += binding.dependences();
        leaves.push(binding);
    }
    drop(locked);
    drop(declared);
    // One binding per declared access: a gathered one holds its segments' bindings.
    // Without partitioned data, the leaves are those bindings already.
    let resolved = std::mem::ManuallyDrop::into_inner(resolved);
    let gathered = resolved
        .iter()
        .any(|r| matches!(r, Resolved::Gathered { .. }));
    let bindings: Bindings = if !gathered {
        for r in resolved {
            if let Resolved::Plain(d) = r {
                forget_data(d);
            }
        }
        leaves
    } else {
        let mut leaves = leaves.into_iter();
        resolved
            .into_iter()
            .map(|r| match r {
                Resolved::Plain(d) => {
                    forget_data(d);
                    leaves.next().expect("one binding per leaf")
                }
                Resolved::Gathered { outer, leaves: l } => {
                    let bytes = outer.range.len() * outer.data.elem_size;
                    let pieces: Vec<Vec<Piece>> = l
                        .into_iter()
                        .map(|(d, p)| {
                            forget_data(d);
                            p
                        })
                        .collect();
                    Binding {
                        data: outer.data,
                        mode: outer.mode,
                        weak: outer.weak,
                        input: None,
                        output: None,
                        after: None,
                        offset: 0,
                        bytes,
                        reduce: None,
                        gather: Some(Box::new(Gather {
                            leaves: leaves.by_ref().take(pieces.len()).collect(),
                            pieces,
                            block: std::sync::OnceLock::new(),
                        })),
                    }
                }
            })
            .collect()
    };
    let task = new_task(
        run,
        owner,
        (name, hints, body),
        (bindings, inputs, alloc_failed),
    );
    drop(entries);
    enter(ex, task);
    for (combiner, group) in combiners {
        ex.submitted(&combiner);
        let satisfied = register(&combiner);
        // The group's count is satisfied at once if every reducer has finished.
        // SAFETY: the group's count is one of the combiner's dependences, satisfied by
        // this entry alone; its guard is released below, by `release_guard`.
        let closed = usize::from(!group.close(unsafe { Waiting::new(&combiner) }));
        release_guard(ex, combiner, 1 + satisfied + closed);
    }
    Ok(())
}

/// Whether a declaration binds like most: a strong read, write or read-write of a
/// whole versioned datum that is neither partitioned nor a part, with no reduction
/// open. A task of one such access, bound run-wide, takes [`submit_one_versioned`].
fn is_plain_versioned(d: &Declared) -> bool {
    d.data.shared.is_none()
        && !d.weak
        && d.mode != Mode::Reduce
        && !d.data.is_partitioned()
        && !d.data.reduction.is_set()
}

/// What [`submit_one_versioned`] gets of its scope.
type Scoped<'o> = (RunRef, Throttle, Option<&'o Owner>);

/// [`submit`] for a task of one plain versioned access `d` ([`is_plain_versioned`])
/// bound run-wide: the same checks and binding, without the general path's partition,
/// domain, lock ordering and reduction steps, none of which applies. `scope`: the run,
/// how the scope throttles, the owner; `task`: its name, hints and body.
fn submit_one_versioned<L, F>(
    ex: &dyn Executor,
    (run, throttle, owner): Scoped<'_>,
    d: Declared,
    (name, hints, body): (Cow<'static, str>, Option<Box<Hints>>, TaskBody<L, F>),
) -> Result<(), Error>
where
    L: AccessList,
    F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
{
    if let Err(refusal) = check(&run, &d, true) {
        // Nothing was bound: the declaration keeps its datum's count.
        run.fail(refusal.clone().into_error(&name));
        return Err(refusal.into_error(&name));
    }
    enter_window(ex, run, throttle, matches!(body, TaskBody::Control(_)));
    let mut alloc_failed = None;
    let (input, output, after) = {
        let mut slot = d.data.lock_current();
        bind_leaf(ex, &run, &name, &d, &mut slot, &mut alloc_failed)
    };
    let Declared {
        data, mode, range, ..
    } = d;
    let es = data.elem_size;
    let binding = Binding {
        offset: range.start * es,
        bytes: range.len() * es,
        data,
        mode,
        weak: false,
        input,
        output,
        after,
        gather: None,
        reduce: None,
    };
    let bound = (binding.dependences(), alloc_failed);
    let task = (name, hints, body);
    enter(
        ex,
        new_task(
            run,
            owner,
            task,
            (smallvec::smallvec![binding], bound.0, bound.1),
        ),
    );
    Ok(())
}

/// Counts a task in its run, once its submitter has waited for room in the window if
/// its scope waits (`throttle`), helping meanwhile; `control`: a control task.
#[inline(always)]
fn enter_window(ex: &dyn Executor, run: RunRef, throttle: Throttle, control: bool) {
    if let Some(window) = run.window {
        // `outstanding` counts the root too: more than `window` means `window` tasks.
        let over = || run.outstanding() > window && !run.is_failed();
        match throttle {
            // The root waits for room (`RuntimeBuilder::window`): no task waits for the
            // root's outputs, so whatever fills the window can finish without it.
            Throttle::Wait if over() => ex.help_while(&over),
            // A control task helps while there is work to help with, and goes on when
            // there is none: tasks waiting for its tokens could fill the window.
            Throttle::Help if over() => ex.help_while_work(&over),
            // A task spawning children never waits: they may need its outputs.
            _ => {}
        }
    }
    run.task_submitted(Some((ex.worker(), control)));
}

/// Makes the task of a submission (its name, hints and body) from its bindings
/// (`inputs`: the dependences they register); a buffer that could not be made
/// (`alloc_failed`) fails the run.
#[inline(always)]
fn new_task<L, F>(
    run: RunRef,
    owner: Option<&Owner>,
    (name, hints, body): (Cow<'static, str>, Option<Box<Hints>>, TaskBody<L, F>),
    (bindings, inputs, alloc_failed): (Bindings, usize, Option<Error>),
) -> TaskRef
where
    L: AccessList,
    F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
{
    if let Some(error) = alloc_failed {
        // The task stays in the graph so that its readers are released when it is
        // drained; the failed run skips its body.
        run.fail(error);
    }

    let (body, control, children_to_parent) = box_body(body, bindings.is_empty());
    Task::new(
        name,
        run,
        Job {
            bindings,
            body,
            hints,
            control,
            children_to_parent,
            root: false,
        },
        inputs,
        owner.map(|o| o.task().clone()),
    )
}

/// Enters a task just made into the graph: registers it with the versions it waits
/// for, and activates it if it waits for none.
#[inline(always)]
fn enter(ex: &dyn Executor, task: TaskRef) {
    ex.submitted(&task);
    // The dependences found satisfied go with the guard, in one count.
    let satisfied = register(&task);
    release_guard(ex, task, 1 + satisfied);
}

/// Releases the guard of a task just registered with what it waits for, with `n - 1`
/// dependences found satisfied meanwhile: activates it if it is ready, or else hands
/// the submitter's reference to the dependences it waits for, the last of which
/// activates it ([`Waiting`]).
#[inline(always)]
fn release_guard(ex: &dyn Executor, task: TaskRef, n: usize) {
    if task.satisfy(n) {
        ex.activate(Activated::new(task));
    } else {
        task.into_dependences();
    }
}

/// Binds one access that reads or writes versions (not a reduction) to `slot`, the
/// version the next task binds to (run-wide, or in its parent's domain): returns its
/// input, output, and, for shared data written in place, the version it follows.
/// Under immediate allocation a write's buffer is made here; a failure is kept in
/// `alloc_failed`, and fails the run once the task is submitted.
fn bind_leaf(
    ex: &dyn Executor,
    run: &RunState,
    name: &str,
    d: &Declared,
    slot: &mut VersionRef,
    alloc_failed: &mut Option<Error>,
) -> (Option<VersionRef>, Option<VersionRef>, Option<VersionRef>) {
    let shared = d.data.shared.as_ref();
    match d.mode {
        Mode::Read => {
            if shared.is_some() {
                slot.add_reader();
            }
            (Some(slot.clone()), None, None)
        }
        Mode::Write | Mode::ReadWrite => {
            let next = Version::pending(d.data.bytes(), run.versions, shared);
            // A weak write's version stands for its children's: no buffer of its own.
            if shared.is_none()
                && !d.weak
                && d.mode == Mode::ReadWrite
                && run.alloc == AllocMode::Immediate
            {
                // A read-write may take over its input's buffer at execution
                // (`data::version`, "Update in place"); if it cannot, its buffer is
                // made then, on this node.
                next.place_on(ex.node());
            } else if shared.is_none()
                && !d.weak
                && run.alloc == AllocMode::Immediate
                && alloc_failed.is_none()
            {
                alloc_at_submission(ex, name, &next, alloc_failed);
            }
            let previous = std::mem::replace(slot, next.clone());
            // A read-write reads what it supersedes; a weak write keeps it, for its
            // children to start from.
            let keeps = d.mode == Mode::ReadWrite || d.weak;
            match (shared.is_some(), keeps) {
                // In place, a writer follows the previous writer and its readers.
                (true, true) => (Some(previous.clone()), Some(next), Some(previous)),
                (true, false) => (None, Some(next), Some(previous)),
                // What `next` supersedes is kept until `next` is committed, so that a
                // failed run leaves the datum with its last complete version
                // (`data::version`): as the binding's input, handed over as the task
                // publishes (`Version::hand_input`), or at once.
                (false, true) => (Some(previous), Some(next), None),
                (false, false) => {
                    // SAFETY: this submission makes `next`; its producer is not
                    // submitted yet, so nothing publishes it meanwhile.
                    unsafe { next.hand_input(previous) };
                    (None, Some(next), None)
                }
            }
        }
        Mode::Reduce => unreachable!("a reduction binds to its group"),
    }
}

/// Immediate allocation: makes `next`'s buffer on the submitting worker's node, or
/// keeps why it could not in `alloc_failed` (task `name`).
fn alloc_at_submission(
    ex: &dyn Executor,
    name: &str,
    next: &Version,
    alloc_failed: &mut Option<Error>,
) {
    let node = ex.node();
    if let Err(e) = next.buffer_or_alloc(|| ex.pools().alloc(node, next.bytes)) {
        *alloc_failed = Some(Error::OutOfMemory {
            task: name.to_string(),
            bytes: next.bytes,
            message: e.to_string(),
        });
    }
}

/// Refuses a task once its run has failed; else returns the domain its owner's
/// children bind in (made on the first spawn), or refuses the task, and fails the run,
/// if the owner has none.
#[inline(always)]
fn admit<'o>(
    run: RunRef,
    owner: Option<&'o Owner>,
    name: &str,
) -> Result<Option<&'o ChildDomain>, Error> {
    if run.is_failed() {
        return Err(Error::RunFailed {
            task: name.to_string(),
        });
    }
    owner.map(Owner::domain).transpose().map_err(|refusal| {
        run.fail(refusal.clone().into_error(name));
        refusal.into_error(name)
    })
}

/// Drops a small vector that is most often empty: an empty one whose elements are
/// inline owns nothing, and is forgotten without a call.
#[inline(always)]
pub(crate) fn forget_empty<A: smallvec::Array>(v: SmallVec<A>) {
    if v.is_empty() && !v.spilled() {
        std::mem::forget(v);
    } else {
        drop(v);
    }
}

/// Submits a task that declares nothing (every OpenMP task without dependences, for
/// one): it binds nothing and waits for nothing, so it is ready at once. No
/// validation, resolution, locking or binding; the run's rules hold as on the full
/// path: it is refused once the run has failed, waits for the window, is counted,
/// joins its owner's domain as a child (a task spawned with `spawn` that declares
/// nothing has a domain of its own: docs/guide.md, "Control tasks"), and is activated.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn submit_lean<L, F>(
    ex: &dyn Executor,
    run: RunRef,
    throttle: Throttle,
    owner: Option<&Owner>,
    name: Cow<'static, str>,
    hints: Option<Box<Hints>>,
    body: TaskBody<L, F>,
) -> Result<(), Error>
where
    L: AccessList,
    F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
{
    let domain = admit(run, owner, &name)?;
    let (body, control, children_to_parent) = box_body(body, true);
    submit_free(
        ex,
        run,
        throttle,
        owner,
        domain,
        name,
        hints,
        body,
        control,
        children_to_parent,
    );
    Ok(())
}

/// A task's body as the record keeps it, with whether it is a control task (it sees
/// no view: `no_views`, or made with `spawn_control`) and whether its children go to
/// its parent's scope (only `spawn_control` says so).
#[inline]
fn box_body<L, F>(body: TaskBody<L, F>, no_views: bool) -> (Body, bool, bool)
where
    L: AccessList,
    F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
{
    match body {
        TaskBody::Views(accesses, body) => {
            // The declared list is done with but for its shape, which is zero-sized for
            // one access or a tuple of them: a body capturing nothing is not allocated.
            let shape = accesses.into_shape();
            (
                Body::new(move |ctx: &TaskCtx, bindings: &[Binding]| {
                    let mut iter = bindings.iter();
                    // SAFETY: `bindings` were made by `submit` from `accesses.declare`, in
                    // order (none for a task declaring nothing); `start` allocates every
                    // buffer before calling the body and runs it only once all input
                    // versions are produced and before the output versions are published,
                    // so no other task writes what the body reads or touches what it
                    // writes.
                    let views = unsafe { L::views(&shape, &mut iter) };
                    body(ctx, views);
                }),
                no_views,
                false,
            )
        }
        TaskBody::Control(body) => (
            Body::new(move |ctx: &TaskCtx, _: &[Binding]| body(ctx)),
            true,
            true,
        ),
    }
}

/// The part of [`submit_lean`] that does not depend on the body's type.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn submit_free(
    ex: &dyn Executor,
    run: RunRef,
    throttle: Throttle,
    owner: Option<&Owner>,
    domain: Option<&ChildDomain>,
    name: Cow<'static, str>,
    hints: Option<Box<Hints>>,
    body: Body,
    control: bool,
    children_to_parent: bool,
) {
    enter_window(ex, run, throttle, children_to_parent);
    if let Some(domain) = domain {
        domain.child_submitted();
    }
    let task = Task::new_ready(
        name,
        run,
        || Job {
            bindings: Bindings::new(),
            body,
            hints,
            control,
            children_to_parent,
            root: false,
        },
        owner.map(|o| o.task().clone()),
    );
    ex.submitted(&task);
    ex.activate(Activated::new(task));
}

/// Drops a declaration whose binding took its datum's count (`submit`), but for that
/// count.
fn forget_data(declared: Declared) {
    let Declared { data, reducer, .. } = declared;
    std::mem::forget(data);
    drop(reducer);
}

/// Registers a task just made with the versions it waits for; returns how many of
/// its dependences were satisfied already, for the caller to release with its guard.
fn register(task: &TaskRef) -> usize {
    // SAFETY: the pending guard taken by `Task::new` is released only by the caller,
    // after this.
    let bindings = &unsafe { task.job_unshared() }.bindings;
    if let [b] = &bindings[..] {
        if b.gather.is_none() {
            return register_leaf(task, b);
        }
    }
    bindings
        .iter()
        .flat_map(Binding::leaves)
        .map(|b| register_leaf(task, b))
        .sum()
}

/// [`register`] for one leaf binding `b`: one registration per dependence counted by
/// `Binding::dependences`; returns how many found their dependence satisfied already.
/// A weak access to versioned data registers nothing.
#[inline(always)]
fn register_leaf(task: &TaskRef, b: &Binding) -> usize {
    if b.waits_for_nothing() {
        return 0;
    }
    // Each entry made below is one of the dependences `Binding::dependences` counted for
    // the task, satisfied by that entry alone; the caller holds the guard and releases
    // it with `release_guard`.
    let waiting = || {
        // SAFETY: as just said.
        unsafe { Waiting::new(task) }
    };
    let mut satisfied = 0;
    if let Some(input) = &b.input {
        satisfied += usize::from(!input.add_waiter(waiting()));
    }
    if let Some(previous) = &b.after {
        if b.mode == Mode::Write {
            satisfied += usize::from(!previous.add_waiter(waiting()));
        }
        satisfied += usize::from(!previous.add_release_waiter(waiting()));
    }
    satisfied
}

/// Closes `data`'s open reduction group (`data::reduce`): makes the combining task,
/// bound to read `slot` (the contents from before the group) and to write a new
/// version, which becomes `slot`. Returns it with the group, to register and release
/// once the submission's bindings are made; it is counted in the run already.
fn close_reduction(
    ex: &dyn Executor,
    run: RunRef,
    data: &Arc<DataInner>,
    slot: &mut VersionRef,
    alloc_failed: &mut Option<Error>,
) -> Option<(TaskRef, Arc<Group>)> {
    let group = data.reduction.lock().take()?;
    let name: Cow<'static, str> = format!("reduce({})", data.name).into();
    let shared = data.shared.as_ref();
    // A read-write: its input is what `next` supersedes (`Version::hand_input`).
    let next = Version::pending(data.bytes(), run.versions, shared);
    if shared.is_none() && run.alloc == AllocMode::Immediate && alloc_failed.is_none() {
        alloc_at_submission(ex, &name, &next, alloc_failed);
    }
    let previous = std::mem::replace(slot, next.clone());
    let binding = Binding {
        data: data.clone(),
        mode: Mode::ReadWrite,
        weak: false,
        input: Some(previous.clone()),
        output: Some(next),
        after: shared.is_some().then_some(previous),
        offset: 0,
        bytes: data.bytes(),
        gather: None,
        reduce: None,
    };
    // Its bindings' dependences, plus the last reducer of the group.
    let inputs = binding.dependences() + 1;
    let combined = group.clone();
    let body = Body::new(move |_: &TaskCtx, bindings: &[Binding]| {
        let out = bindings[0]
            .output
            .as_ref()
            .and_then(|v| v.buffer())
            .expect("the combination's buffer was made before its body");
        let order = current_executor(|ex| combine_order(ex.pools(), ex.node()))
            .expect("a body runs on a worker");
        // SAFETY: the output version is this task's and not published (for shared
        // data, it waited for the previous writer and readers), it holds the datum's
        // bytes, and every reducer of the group has finished (the task waited for the
        // last one).
        unsafe { combined.combine_into(out.as_mut_ptr(), &order) };
    });
    let task = Task::new(
        name,
        run,
        Job {
            bindings: smallvec::smallvec![binding],
            body,
            hints: None,
            control: false,
            children_to_parent: false,
            root: false,
        },
        inputs,
        None,
    );
    run.task_submitted(Some((ex.worker(), false)));
    Some((task, group))
}

/// Allocates what the body needs on the executing node: zeroed buffers for initial
/// versions that were never written, deferred output buffers, and the copy of a
/// read-write's previous version.
///
/// With skipped bodies the buffers are only accounted (the simulator's pools hold no
/// memory), so nothing is zeroed or copied.
///
/// Returns the pages of shared data that moved as the task starts: armed for next touch
/// and taken to this node, or, for a migration task (`migrate_to`), moved to its node.
/// Keeps in `backups` the copies of the versions the body updates in place, which
/// [`Backups::restore`] puts back if it fails (`data::version`, "Failed producers").
/// `how`: whether bodies run, whether the task is a control task, where a migration
/// task moves its data.
fn prepare_buffers(
    ex: &dyn Executor,
    task: &Task,
    bindings: &mut [Binding],
    (bodies, control, migrate_to): (Bodies, bool, Option<usize>),
    backups: &mut Backups,
) -> Result<u64, Error> {
    let mut migrated = 0u64;
    if let Some(target) = migrate_to {
        // A migration task (`Scope::migrate`): its declared data move now, nothing else.
        for b in bindings.iter().flat_map(Binding::leaves) {
            if let Some(shared) = b.shared() {
                migrated += shared
                    .migrate(b.offset, b.bytes, target)
                    .map_err(|message| Error::OutOfMemory {
                        task: task.name.to_string(),
                        bytes: b.bytes,
                        message,
                    })?;
            }
        }
        return Ok(migrated);
    }
    check_memory(ex, task, bodies, control)?;
    let node = ex.node();
    let oom = |bytes: usize, e: locus_mem::pool::AllocError| oom(task, bytes, e);
    for (b, gathered) in leaves_gathered_mut(bindings) {
        if b.weak {
            // The task does not see what it declares weakly.
            continue;
        }
        if let Some(r) = &b.reduce {
            // A private copy on this node (`data::reduce`).
            if !control {
                r.group
                    .take_copy(r, node, ex.pools(), bodies == Bodies::Run)
                    .map_err(|e| oom(r.group.bytes(), e))?;
            }
            continue;
        }
        if let Some(shared) = b.shared() {
            // Shared data is placed at creation (or by this first touch) and updated in
            // place: nothing to allocate or copy.
            if !control {
                migrated += migrate_remote(&task.run, shared, b, node);
            }
            migrated += shared.touch(b.offset, b.bytes, node);
            continue;
        }
        prepare_version(ex, task, b, (bodies, control, gathered), backups)?;
    }
    // Gathered views: a buffer on this node, filled from the segments for reads.
    for b in bindings.iter().filter(|b| !b.weak && !control) {
        let Some(gather) = &b.gather else { continue };
        if b.bytes == 0 {
            continue;
        }
        let block = ex
            .pools()
            .alloc(node, b.bytes)
            .map_err(|e| oom(b.bytes, e))?;
        let block = gather.block.get_or_init(|| block);
        if !b.mode.reads() || bodies == Bodies::Skip {
            continue;
        }
        let es = b.data.elem_size;
        for (leaf, pieces) in gather.leaves.iter().zip(&gather.pieces) {
            let src = leaf
                .read()
                .and_then(|v| v.buffer())
                .expect("a gathered read's segment was allocated above");
            for p in pieces {
                // SAFETY: (1) the segment's input version is produced and nobody
                // writes it while this task holds it (as for any read); (2) the piece
                // lies inside the segment's buffer (resolved against its elements) and
                // inside the view's buffer of `b.bytes` bytes; (3) distinct buffers.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        src.as_ptr().add(p.segment * es),
                        block.as_mut_ptr().add(p.view * es),
                        p.len * es,
                    )
                };
            }
        }
    }
    Ok(migrated)
}

/// Refuses to run a body that would see buffers holding no memory (a simulation with
/// skipped bodies); control tasks see no buffer, so they run whatever the pools hold.
#[inline]
fn check_memory(
    ex: &dyn Executor,
    task: &Task,
    bodies: Bodies,
    control: bool,
) -> Result<(), Error> {
    if bodies == Bodies::Run && !control && ex.pools().config().accounting_only {
        return Err(Error::Config(format!(
            "task `{}`: buffers hold no memory (a simulation with skipped bodies), so its \
             body cannot run",
            task.name
        )));
    }
    Ok(())
}

/// Task `task` could not get `bytes` bytes.
fn oom(task: &Task, bytes: usize, e: locus_mem::pool::AllocError) -> Error {
    Error::OutOfMemory {
        task: task.name.to_string(),
        bytes,
        message: e.to_string(),
    }
}

/// [`prepare_buffers`] for one leaf binding `b` of versioned data (neither shared nor a
/// reduction, not weak), on the executing worker's node: zeroes an initial version
/// never written, updates in place or allocates the output (copying a read-write's
/// input into it), and keeps in `backups` what an update in place overwrites. `how`:
/// whether bodies run, whether the task is a control task, whether the body sees the
/// access through a gathered copy.
#[inline]
fn prepare_version(
    ex: &dyn Executor,
    task: &Task,
    b: &mut Binding,
    (bodies, control, gathered): (Bodies, bool, bool),
    backups: &mut Backups,
) -> Result<(), Error> {
    let node = ex.node();
    let oom = |bytes: usize, e: locus_mem::pool::AllocError| oom(task, bytes, e);
    let zeroed = |v: &Version| -> Result<(), Error> {
        v.buffer_or_alloc(|| match bodies {
            Bodies::Run => ex.pools().alloc_zeroed(node, v.bytes),
            Bodies::Skip => ex.pools().alloc(node, v.bytes),
        })
        .map(|_| ())
        .map_err(|e| oom(v.bytes, e))
    };
    // Deferred allocation updates in place only on the executing node; immediate
    // allocation wherever the buffer lies (`data::version`, "Update in place").
    let in_place_node = match task.run.alloc {
        AllocMode::Deferred => Some(node),
        AllocMode::Immediate => None,
    };
    if let Some(input) = &b.input {
        // An initial version that was never written reads as zeros.
        zeroed(input)?;
    }

    if let (Mode::ReadWrite, Some(output)) = (b.mode, &b.output) {
        if Version::take_over(output, &mut b.input, in_place_node) {
            task.run
                .counters
                .worker(ex.worker())
                .versions_in_place
                .add(1);
            // The body writes the buffer itself (a gathered view writes its own
            // copy, scattered only once the body has returned): keep its contents
            // until the body has run to its end.
            if bodies == Bodies::Run && !control && !gathered {
                backups
                    .keep(ex, node, output)
                    .map_err(|e| oom(output.bytes, e))?;
            }
            return Ok(());
        }
    }
    if let Some(output) = &b.output {
        let home = output.placement().unwrap_or(node);
        let out = output
            .buffer_or_alloc(|| ex.pools().alloc(home, output.bytes))
            .map_err(|e| oom(output.bytes, e))?;
        if let Buffer::Private(block) = out {
            // A fresh block of a first-touch pool is placed by this first writer.
            let _ = ex.pools().first_touch(block, node);
        }
        if b.mode == Mode::ReadWrite && bodies == Bodies::Run {
            let src = b
                .input
                .as_ref()
                .and_then(|v| v.buffer())
                .expect("read-write input was allocated above");
            // SAFETY: (1) both blocks hold at least `output.bytes` bytes (versions of
            // one datum); (2) they are distinct allocations (private blocks); (3) the
            // input is produced and no task writes it any more, and the output is
            // written only by this task, whose body has not started.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr(), output.bytes) };
        }
    }
    Ok(())
}

/// The leaves of `bindings` (`Binding::leaves_mut`), each with whether the body sees
/// it through a gathered copy (`data::partition`) rather than its own buffer.
fn leaves_gathered_mut(bindings: &mut [Binding]) -> impl Iterator<Item = (&mut Binding, bool)> {
    bindings.iter_mut().flat_map(|b| {
        let gathered = b.gather.is_some();
        b.leaves_mut().map(move |leaf| (leaf, gathered))
    })
}

/// The previous contents of the versions a task updates in place, copied before its
/// body runs: a body that fails (panics, or a C body that returns non-zero) gets them
/// put back, so that the datum keeps its last complete version wherever the task ran
/// (`data::version`, "Failed producers"). Dropping it returns the copies to their pool.
#[derive(Default)]
struct Backups(SmallVec<[(NonNull<u8>, Saved); 1]>);

/// Bytes of a version copied inline rather than into a block of a pool (most of the
/// cost of a small copy is the allocation).
const INLINE_BACKUP: usize = 64;

/// One copy kept by [`Backups`].
enum Saved {
    /// A small version's bytes.
    Inline([u8; INLINE_BACKUP], usize),
    /// A block of a pool.
    Block(locus_mem::pool::Block),
}

impl Backups {
    /// Copies `output`'s buffer, just taken over from its input, aside (into a block
    /// on `node` unless it is small).
    fn keep(
        &mut self,
        ex: &dyn Executor,
        node: usize,
        output: &Version,
    ) -> Result<(), locus_mem::pool::AllocError> {
        let buffer = output
            .buffer()
            .expect("a version updated in place holds its input's buffer");
        let bytes = output.bytes;
        let dst = NonNull::new(buffer.as_mut_ptr()).expect("a block is not null");
        if bytes <= INLINE_BACKUP {
            // Copied where it is kept, not moved there.
            self.0
                .push((dst, Saved::Inline([0u8; INLINE_BACKUP], bytes)));
            let Some((_, Saved::Inline(inline, _))) = self.0.last_mut() else {
                unreachable!("just pushed")
            };
            // SAFETY: the buffer holds `bytes` bytes, produced by the input's producer;
            // nobody but this task, whose body has not started, touches it.
            inline[..bytes]
                .copy_from_slice(unsafe { std::slice::from_raw_parts(buffer.as_ptr(), bytes) });
            return Ok(());
        }
        let copy = ex.pools().alloc(node, bytes)?;
        // SAFETY: (1) both blocks hold at least `bytes` bytes (versions of one datum);
        // (2) distinct allocations; (3) as above.
        unsafe { std::ptr::copy_nonoverlapping(buffer.as_ptr(), copy.as_mut_ptr(), bytes) };
        self.0.push((dst, Saved::Block(copy)));
        Ok(())
    }

    /// Puts the copies back, once the body has failed.
    ///
    /// # Safety
    ///
    /// The versions the copies were made of are still held by the task (its bindings),
    /// not published, and their buffers not touched by anyone else.
    unsafe fn restore(&self) {
        for (dst, saved) in &self.0 {
            let (src, bytes) = match saved {
                Saved::Inline(inline, bytes) => (inline.as_ptr(), *bytes),
                Saved::Block(block) => (block.as_ptr(), block.len()),
            };
            // SAFETY: (1) `dst` is the buffer of a version of `bytes` bytes, alive and
            // unpublished by the caller's contract, so written by nobody else; (2) the
            // copy is a distinct allocation of `bytes` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
        }
    }
}

/// The runtime's migration setting ([`crate::sched::migrate`]) applied to a shared
/// access `b` of a task starting on `node`: its pages on other nodes move to `node`
/// (`now`, `next-touch`), or do when the cost model finds it cheaper than accessing
/// them remotely over this task and the tasks already submitted that declare the datum
/// (`auto`). Returns the pages moved; a move the node limit refuses leaves the pages.
fn migrate_remote(
    run: &RunState,
    shared: &crate::data::shared::SharedBuffer,
    b: &Binding,
    node: usize,
) -> u64 {
    use crate::config::Migration;
    use crate::data::shared::{MIGRATED_AUTO, MIGRATED_NEXT_TOUCH, MIGRATED_NOW};
    let (setting, costs) = &run.migration;
    if *setting == Migration::None || b.bytes == 0 {
        return 0;
    }
    // The access's bytes on other nodes, and the node holding most of them.
    let mut remote: SmallVec<[(usize, u64); 4]> = SmallVec::new();
    shared.region.bytes_by_node(b.offset, b.bytes, |n, bytes| {
        if let Some(n) = n.filter(|&n| n != node) {
            match remote.iter_mut().find(|(m, _)| *m == n) {
                Some((_, total)) => *total += bytes as u64,
                None => remote.push((n, bytes as u64)),
            }
        }
    });
    let Some(&(main, _)) = remote
        .iter()
        .max_by_key(|(n, bytes)| (*bytes, std::cmp::Reverse(*n)))
    else {
        return 0;
    };
    let bytes: u64 = remote.iter().map(|(_, b)| b).sum();
    let reason = match (setting, costs) {
        (Migration::Now, _) => MIGRATED_NOW,
        (Migration::NextTouch, _) => MIGRATED_NEXT_TOUCH,
        (Migration::Auto, Some(costs)) => {
            let reuse = shared.pending.load(std::sync::atomic::Ordering::Relaxed);
            let pages = bytes.div_ceil(locus_mem::region::PAGE as u64);
            let mode = (b.mode.reads(), b.mode.writes());
            match costs.choose(bytes, pages, main, node, mode, reuse) {
                crate::sched::migrate::Choice::Remote => return 0,
                crate::sched::migrate::Choice::Migrate => {
                    // On real nodes, only where the kernel says the pages fit (on
                    // virtual ones the node limit refuses a move that does not).
                    let free = costs
                        .os_node(node)
                        .and_then(|os| locus_topo::SysfsReader::new("/").free_memory(os).ok());
                    if free.is_some_and(|free| free < pages * locus_mem::region::PAGE as u64) {
                        return 0;
                    }
                    MIGRATED_AUTO
                }
            }
        }
        _ => return 0,
    };
    shared
        .migrate_for(b.offset, b.bytes, node, reason)
        .unwrap_or(0)
}

/// Scatters what a body wrote in its gathered views into the segments' new versions,
/// once the body has returned.
fn scatter(bindings: &[Binding]) {
    for b in bindings.iter().filter(|b| !b.weak && b.mode.writes()) {
        let Some(gather) = &b.gather else { continue };
        let Some(block) = gather.block.get() else {
            continue;
        };
        let es = b.data.elem_size;
        for (leaf, pieces) in gather.leaves.iter().zip(&gather.pieces) {
            let dst = leaf
                .output
                .as_ref()
                .and_then(|v| v.buffer())
                .expect("a gathered write's segment was allocated before the body");
            for p in pieces {
                // SAFETY: (1) the segment's output version is this task's, not
                // published yet, so nobody else reads or writes it (for shared data,
                // the task waited for the previous writer and readers); (2) the piece
                // lies inside both buffers (as for the gathering); (3) distinct buffers.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        block.as_ptr().add(p.view * es),
                        dst.as_mut_ptr().add(p.segment * es),
                        p.len * es,
                    )
                };
            }
        }
    }
}

/// Drops the body of a task that does not run (a failed run, or skipped bodies): what
/// it captured is user code too, whose `Drop` may panic; that panic fails the run.
fn drop_skipped(task: &Task, body: Body) -> Result<(), Error> {
    catch_unwind(AssertUnwindSafe(move || drop(body))).map_err(|payload| {
        let message = panic_message(&*payload);
        drop_payload(payload);
        Error::TaskPanicked {
            task: task.name.to_string(),
            message: format!("dropping the task's closure panicked: {message}"),
        }
    })
}

/// The message of a panic payload.
/// Drops a caught panic's payload, whose own `Drop` may panic too: that second panic
/// is caught, and its payload forgotten (a payload that panics again when dropped
/// would otherwise unwind out of the runtime).
pub(crate) fn drop_payload(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        std::mem::forget(again);
    }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// What the placement policies and the cost model know of a task's accesses: bytes, and
/// the node of each buffer once it is allocated. An access to shared data spanning
/// several nodes is one entry per run of pages on one node.
pub(crate) fn access_infos(bindings: &[Binding]) -> Vec<AccessInfo> {
    let mut out = Vec::with_capacity(bindings.len() + 1);
    for_each_access(bindings, |a| out.push(a));
    out
}

/// [`access_infos`] as the placement policies see them: an attached datum's bytes
/// count on its owner's node (`graph::team`), wherever its pages lie.
pub(crate) fn policy_access_infos(bindings: &[Binding]) -> AccessInfos {
    let mut out = AccessInfos::new();
    for b in bindings {
        let owner = b.data.owner_node();
        for_each_access(std::slice::from_ref(b), |mut a| {
            if owner.is_some() {
                a.node = owner;
            }
            out.push(a)
        });
    }
    out
}

/// The bytes read and written by the accesses [`for_each_keyed_access`] lists, summed
/// without looking at the buffers.
pub(crate) fn declared_bytes(bindings: &[Binding]) -> (u64, u64) {
    let (mut input, mut output) = (0u64, 0u64);
    for_each_leaf_access(bindings, |b, _, is_input| {
        let side = if is_input { &mut input } else { &mut output };
        *side += b.bytes as u64;
    });
    (input, output)
}

/// Calls `f` with each entry of [`access_infos`], without collecting them.
fn for_each_access(bindings: &[Binding], mut f: impl FnMut(AccessInfo)) {
    for_each_keyed_access(bindings, |a, _| f(a));
}

/// What one access of a binding's leaf touches.
enum Touched<'a> {
    /// The version it reads or writes (none yet for some outputs).
    Version(Option<&'a VersionRef>),
    /// The private copy of a reduction, read and written.
    Reduction(&'a crate::data::reduce::ReduceBinding),
}

/// The accesses a task makes, one call of `f` per (leaf binding, what it touches,
/// whether it reads): a read of its input version, a write of its output version, and
/// a read and a write of a reduction's private copy. Weak bindings make none. The one
/// rule of what a task accesses, for the placement policies and the engines.
fn for_each_leaf_access<'a>(
    bindings: &'a [Binding],
    mut f: impl FnMut(&'a Binding, Touched<'a>, bool),
) {
    for b in bindings
        .iter()
        .filter(|b| !b.weak)
        .flat_map(Binding::leaves)
    {
        if b.mode.reads() {
            f(b, Touched::Version(b.read()), true);
        }
        if b.mode.writes() {
            f(b, Touched::Version(b.output.as_ref()), false);
        }
        if let Some(r) = &b.reduce {
            for input in [true, false] {
                f(b, Touched::Reduction(r), input);
            }
        }
    }
}

/// Like [`for_each_access`], with the [`MemoryKey`] of each access.
fn for_each_keyed_access(bindings: &[Binding], mut f: impl FnMut(AccessInfo, MemoryKey)) {
    for_each_leaf_access(bindings, |b, touched, input| match touched {
        Touched::Version(version) => {
            let key = version.map_or(0, |v| VersionRef::as_ptr(v) as usize);
            match version.and_then(|v| v.buffer()) {
                Some(Buffer::Shared(s)) => {
                    let mut offset = b.offset;
                    s.region.bytes_by_node(b.offset, b.bytes, |node, bytes| {
                        f(
                            AccessInfo {
                                bytes: bytes as u64,
                                node,
                                input,
                            },
                            MemoryKey {
                                buffer: Arc::as_ptr(s) as usize,
                                offset,
                            },
                        );
                        offset += bytes;
                    })
                }
                buffer => f(
                    AccessInfo {
                        bytes: b.bytes as u64,
                        node: buffer.map(Buffer::main_node),
                        input,
                    },
                    MemoryKey {
                        buffer: key,
                        offset: 0,
                    },
                ),
            }
        }
        // Its key is the binding's: the copy lives as long as the task's hold on it.
        Touched::Reduction(r) => f(
            AccessInfo {
                bytes: b.bytes as u64,
                node: r.node(),
                input,
            },
            MemoryKey {
                buffer: r as *const _ as usize,
                offset: 0,
            },
        ),
    });
}

/// Which memory an access touches, for an engine that models caches: accesses of one
/// run with equal keys touch the same bytes (from the key's first byte). A version's
/// buffer is named by its version; a shared datum's by its buffer and the access's
/// first byte. Keys of freed memory may be reused by later versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryKey {
    /// The address of the version, or of the shared datum's buffer.
    pub buffer: usize,
    /// First byte of the access in a shared datum; 0 for a version.
    pub offset: usize,
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
    task: TaskRef,
    bindings: Bindings,
    hints: Option<Box<Hints>>,
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
            access_infos(&self.bindings)
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
        self.hints.as_ref().is_some_and(|h| h.migrate_to.is_some())
    }

    /// The task's accesses as [`Started::accesses`] gives them, each with the key of
    /// the memory it touches.
    pub fn keyed_accesses(&self) -> impl Iterator<Item = (AccessInfo, MemoryKey)> {
        let mut out = Vec::with_capacity(self.bindings.len() + 1);
        if !self.is_migration() {
            for_each_keyed_access(&self.bindings, |a, k| out.push((a, k)));
        }
        out.into_iter()
    }

    /// The task's cost hint, in nanoseconds of computation.
    pub fn cost_hint(&self) -> Option<u64> {
        self.hints.as_ref().and_then(|h| h.cost)
    }

    /// The task's name.
    pub fn name(&self) -> &str {
        &self.task.name
    }

    /// The task.
    pub fn task(&self) -> &TaskRef {
        &self.task
    }
}

/// Runs a ready task's body on the calling worker, or skips it (`bodies`, or a failed
/// run), and counts its accesses; [`finish`] completes it.
///
/// When the run has failed, the body is skipped but the task must still be finished, so
/// that the graph drains and every version is released.
pub fn start(ex: &dyn Executor, task: TaskRef, bodies: Bodies) -> Option<Started> {
    let job = task.take_job()?;
    if job.bindings.is_empty() && !job.hints.as_ref().is_some_and(|h| h.migrate_to.is_some()) {
        return Some(start_free(ex, task, job));
    }
    if let [b] = &job.bindings[..] {
        if b.is_plain() && job.hints.is_none() {
            return Some(start_one_version(ex, task, job, bodies));
        }
    }
    let Job {
        mut bindings,
        body,
        hints,
        control,
        children_to_parent,
        root,
    } = job;
    let run = &task.run;
    let counters = run.counters.worker(ex.worker());
    let mut completion = Completion::NotRun;
    let mut migrated_pages = 0;
    let migrate_to = hints.as_ref().and_then(|h| h.migrate_to);
    let migration = migrate_to.is_some();
    if run.migration.0 == crate::config::Migration::Auto {
        // This task no longer counts in the expected reuse of its shared data.
        for b in bindings.iter().flat_map(Binding::leaves) {
            if let Some(shared) = b.shared() {
                let _ = shared.pending.fetch_update(
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                    |p| p.checked_sub(1),
                );
            }
        }
    }
    if run.is_failed() {
        skip_body(&task, body);
    } else {
        let mut backups = Backups::default();
        let how = (bodies, control, migrate_to);
        let prepared = prepare_buffers(ex, &task, &mut bindings, how, &mut backups);
        // The backups stay where they are: the body's failure restores them in place.
        let outcome = prepared.and_then(|pages| {
            migrated_pages = pages;
            // A control task sees no buffer: it runs even when bodies are skipped.
            match (bodies, control) {
                (Bodies::Skip, false) => drop_skipped(&task, body),
                _ => {
                    let team = hints.as_ref().and_then(|h| h.team.clone());
                    let flags = (children_to_parent, root);
                    run_body(ex, &task, body, &bindings, flags, team, || {
                        completion = Completion::Panicked;
                        // SAFETY: the task holds its bindings, which publish nothing
                        // before `finish`, and its body has returned.
                        unsafe { backups.restore() };
                    })
                    .map(|()| {
                        if bodies == Bodies::Run && !control {
                            scatter(&bindings);
                        }
                    })
                }
            }
        });
        match outcome {
            Ok(()) if migration => completion = Completion::Done,
            Ok(()) => {
                completion = Completion::Done;
                count_accesses(counters, &bindings);
                count_started(ex, &task);
            }
            Err(error) => run.fail(error),
        }
    }
    Some(Started {
        task,
        bindings,
        hints,
        completion,
        migrated_pages,
    })
}

/// [`start`] for a task with no binding that moves no data (not a migration task): no
/// buffer to prepare, no access to count, and a body that sees no view (it runs even
/// when bodies are skipped).
#[inline(always)]
fn start_free(ex: &dyn Executor, task: TaskRef, job: Job) -> Started {
    let Job {
        bindings,
        body,
        hints,
        control,
        children_to_parent,
        root,
    } = job;
    debug_assert!(control, "a task without bindings sees no view");
    let run = task.run;
    let mut completion = Completion::NotRun;
    if run.is_failed() {
        skip_body(&task, body);
    } else {
        let flags = (children_to_parent, root);
        let team = hints.as_ref().and_then(|h| h.team.clone());
        match run_body(ex, &task, body, &bindings, flags, team, || {
            completion = Completion::Panicked
        }) {
            Ok(()) => {
                completion = Completion::Done;
                count_started(ex, &task);
            }
            Err(error) => run.fail(error),
        }
    }
    Started::new(task, bindings, hints, completion)
}

/// [`start`] for a task of one plain binding (`Binding::is_plain`) and no hints, the
/// task of most dependence graphs: its buffer prepared and its accesses counted without
/// walking leaves, gathers, reductions or shared data.
#[inline(never)]
fn start_one_version(ex: &dyn Executor, task: TaskRef, job: Job, bodies: Bodies) -> Started {
    let Job {
        mut bindings,
        body,
        hints,
        control,
        children_to_parent,
        root,
    } = job;
    let run = task.run;
    let mut completion = Completion::NotRun;
    if run.is_failed() {
        skip_body(&task, body);
    } else {
        let mut backups = Backups::default();
        let how = (bodies, control, false);
        let prepared = check_memory(ex, &task, bodies, control)
            .and_then(|()| prepare_version(ex, &task, &mut bindings[0], how, &mut backups));
        // The backups stay where they are: the body's failure restores them in place.
        let outcome = match (prepared, bodies, control) {
            (Err(error), ..) => Err(error),
            (Ok(()), Bodies::Skip, false) => drop_skipped(&task, body),
            (Ok(()), ..) => {
                let flags = (children_to_parent, root);
                run_body(ex, &task, body, &bindings, flags, None, || {
                    completion = Completion::Panicked;
                    // SAFETY: as in `start`.
                    unsafe { backups.restore() };
                })
            }
        };
        match outcome {
            Ok(()) => {
                completion = Completion::Done;
                count_accesses(run.counters.worker(ex.worker()), &bindings);
                count_started(ex, &task);
            }
            Err(error) => run.fail(error),
        }
    }
    Started::new(task, bindings, hints, completion)
}

/// Counts the bytes a task whose body ran to its end read and wrote ([`access_infos`]),
/// by node, in a worker's counters.
#[inline]
fn count_accesses(counters: &crate::metrics::WorkerCounters, bindings: &[Binding]) {
    let count = |a: AccessInfo| {
        if let Some(n) = a.node {
            let bytes = if a.input {
                &counters.read_bytes[n]
            } else {
                &counters.write_bytes[n]
            };
            bytes.add(a.bytes);
        }
    };
    for_each_access(bindings, count);
}

/// The body of a task of a failed run, not run: what it captured is released before
/// the task counts as finished.
fn skip_body(task: &Task, body: Body) {
    if let Err(error) = drop_skipped(task, body) {
        task.run.fail(error);
    }
}

impl Started {
    /// A task started with `bindings` and `hints`, whose body ended so (`completion`),
    /// that moved no pages.
    #[inline(always)]
    fn new(
        task: TaskRef,
        bindings: Bindings,
        hints: Option<Box<Hints>>,
        completion: Completion,
    ) -> Self {
        Started {
            task,
            bindings,
            hints,
            completion,
            migrated_pages: 0,
        }
    }
}

/// Counts a task whose body ran to its end in the calling worker's counters.
#[inline]
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

/// Runs a task's body in its context; `panicked` is called when it panics, before the
/// panic becomes the returned error. `flags` are the job's `children_to_parent` and
/// `root`; `team` is the team its children join.
#[inline]
fn run_body(
    ex: &dyn Executor,
    task: &TaskRef,
    body: Body,
    bindings: &Bindings,
    (children_to_parent, root): (bool, bool),
    team: Option<super::Team>,
    panicked: impl FnOnce(),
) -> Result<(), Error> {
    // A task's children go to its domain; a control task's to its parent's (module doc
    // of `graph::domain`).
    let owner = if children_to_parent {
        task.parent.as_ref().map(|parent| {
            // SAFETY: `task`, so its parent, is held by `start` until the body and its
            // context are gone.
            unsafe { Owner::new(parent, None) }
        })
    } else {
        let own = Some(NonNull::from(&bindings[..]));
        // SAFETY: `task` and `bindings` are held, unmoved, by `start` until the body and
        // its context are gone.
        Some(unsafe { Owner::new(task, own) })
    };
    let throttle = match (root, children_to_parent) {
        (true, _) => Throttle::Wait,
        (false, true) => Throttle::Help,
        (false, false) => Throttle::Never,
    };
    // SAFETY: `task`, whose run this is, is held by `start` until the body and the
    // context are gone.
    let ctx = unsafe { TaskCtx::new(task, ex.worker(), ex.node(), throttle, owner, team) };
    catch_unwind(AssertUnwindSafe(|| body.call(&ctx, bindings))).map_err(|payload| {
        panicked();
        let task = task.name.to_string();
        match payload.downcast::<crate::error::TaskFailure>() {
            Ok(failure) => Error::TaskFailed {
                task,
                message: failure.0,
            },
            Err(payload) => {
                let message = panic_message(&*payload);
                drop_payload(payload);
                Error::TaskPanicked { task, message }
            }
        }
    })
}

/// Completes a started task: publishes the versions it wrote, activates the tasks that
/// waited for them, releases what it held and counts it finished. A task whose body
/// spawned children publishes its outputs only once they are complete too
/// (`graph::domain`).
pub fn finish(ex: &dyn Executor, started: Started) {
    let Started {
        task,
        bindings,
        hints,
        completion,
        ..
    } = started;
    drop(hints);
    // The parent to notify: a task is complete once its body and its children are,
    // and its completion may complete its parent, and so on up.
    let mut parent = match task.domain.get() {
        None => {
            if bindings.is_empty() {
                forget_empty(bindings);
            } else {
                release(ex, &task, bindings, completion);
            }
            task.parent.as_ref()
        }
        Some(domain) => {
            // The children may read the task's outputs now.
            for waiter in domain.body_done(bindings, completion) {
                activate_if_ready(ex, waiter);
            }
            if domain.close_one() {
                let (bindings, completion) = domain.complete();
                release(ex, &task, bindings, completion);
                task.parent.as_ref()
            } else {
                None
            }
        }
    };
    while let Some(done) = parent {
        let domain = done.domain.get().expect("a parent has a domain");
        if !domain.close_one() {
            break;
        }
        let (bindings, completion) = domain.complete();
        release(ex, done, bindings, completion);
        parent = done.parent.as_ref();
    }
    task.run.task_finished();
}

/// Publishes what a complete task wrote, releases what it read, and activates the
/// tasks that waited for either.
fn release(ex: &dyn Executor, task: &Task, mut bindings: Bindings, completion: Completion) {
    let complete = completion == Completion::Done;
    if let [b] = &mut bindings[..] {
        if b.gather.is_none() && b.reduce.is_none() && b.data.shared.is_none() {
            // One binding of versioned data, the most common task: no leaves to walk.
            let published = crate::data::version::release(b, complete);
            wake_released(ex, b, Vec::new(), published);
            return;
        }
    }
    for (b, gathered) in leaves_gathered_mut(&mut bindings) {
        if let Some(r) = &b.reduce {
            // The copy goes back to the group; the last reducer releases the combiner.
            if let Some(combiner) = r.group.reducer_done(r, complete) {
                activate_if_ready(ex, combiner);
            }
            continue;
        }
        // Shared data: the writer the last reader released, then those waiting for
        // what was written.
        let (readers_done, published) = match b.data.shared {
            None => (Vec::new(), crate::data::version::release(b, complete)),
            Some(_) => crate::data::shared::release(b, &task.name, gathered, completion),
        };
        wake_released(ex, b, readers_done, published);
    }
    // Releases the versions this task held: superseded ones with no other reader go
    // back to their pool now (on return, in the one-binding case above).
    drop(bindings);
}

/// After [`release`] published binding `b`: lets its versions go, then activates the
/// tasks that waited for its readers (`readers_done`) or for what it wrote
/// (`published`) and have nothing else to wait for.
#[inline(always)]
fn wake_released(
    ex: &dyn Executor,
    b: &mut Binding,
    readers_done: Vec<Waiting>,
    published: Waiters,
) {
    // This task lets its versions go before its successors start, so that a
    // read-write among them finds itself the only holder of its input.
    drop(b.output.take());
    drop(b.input.take());
    let wake = |waiter| activate_if_ready(ex, waiter);
    if !readers_done.is_empty() {
        readers_done.into_iter().for_each(wake);
    }
    published.into_iter().for_each(wake);
}

/// Satisfies one dependence of `waiter`, and activates it on `ex` if that was its last.
#[inline(always)]
fn activate_if_ready(ex: &dyn Executor, waiter: Waiting) {
    if let Some(ready) = waiter.satisfy() {
        ex.activate(Activated::new(ready));
    }
}
