//! Submission: a task's declarations checked (`graph::validate`), resolved to the
//! segments of partitioned data, bound to versions in submission order
//! (`graph::bind`), and the task registered with the versions it must wait for, then
//! activated if it waits for none. Also the lean path of a task declaring nothing, and
//! the combining task that closes a reduction group.

use std::borrow::Cow;
use std::sync::Arc;

use super::bind::{bind_leaf, register};
use super::body::Body;
use super::domain::{ChildDomain, Owner};
use super::exec::{current_executor, Executor};
use super::hints::BoxedHints;
use super::run::RunRef;
use super::scope::TaskCtx;
use super::task::{Activated, Job, Task, TaskRef, Waiting};
use super::validate::{check, validate, validate_nested, Refusal};
use crate::config::AllocMode;
use crate::data::partition::{self, Piece, Resolved};
use crate::data::reduce::{self, combine_order, Group};
use crate::data::version::{self, alloc_at_submission, Version, VersionRef};
use crate::data::{
    AccessList, Binding, Bindings, DataInner, Declarations, Declared, Gather, Kind, Mode, Versions,
};
use crate::error::Error;
use smallvec::SmallVec;

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
    /// Nothing but its context: a control task, whose accesses only order it. Its
    /// closure is stored as a [`Body`] (in a cell when small, not boxed) by the caller.
    Control(Body),
}

/// Submits a task from the calling worker `ex`, into the domain of `owner` if any.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit<L, F>(
    ex: &dyn Executor,
    run: RunRef,
    throttle: Throttle,
    owner: Option<&Owner>,
    name: Cow<'static, str>,
    hints: Option<BoxedHints>,
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
    // made, they leak rather than release a count a binding may hold.) Without
    // partitioned data, they are bound as declared: nothing to resolve.
    let partitioned = declared.iter().any(|d| d.data.is_partitioned());
    let checked = validate(&run, &declared, entries.is_none());
    let mut resolved: std::mem::ManuallyDrop<SmallVec<[Resolved; 1]>> =
        std::mem::ManuallyDrop::new(SmallVec::new());
    let mut plain = std::mem::ManuallyDrop::new(Declarations::new());
    let checked = if partitioned {
        checked.and_then(|()| {
            // Accesses to partitioned data bind to the segments they cover; only then
            // can two declarations meet on one segment (`partition::check_leaves`).
            let names: SmallVec<[String; 4]> =
                declared.iter().map(|d| d.data.name.clone()).collect();
            resolved.reserve_exact(declared.len());
            for d in declared {
                resolved.push(partition::resolve(d));
            }
            partition::check_leaves(&resolved, &names).map_err(Refusal::Invalid)
        })
    } else {
        *plain = declared;
        checked
    };
    // The declarations the task binds to versions, in order (after a refusal, whatever
    // was resolved: nothing is bound then).
    let declared: SmallVec<[&Declared; 4]> = if partitioned {
        partition::leaves_of(&resolved)
    } else {
        plain.iter().collect()
    };
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
        drop(std::mem::ManuallyDrop::into_inner(plain));
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
    let mut locked = match entries {
        Some(_) => SmallVec::new(),
        None => lock_run_wide(&declared),
    };
    let mut leaves: Bindings = crate::data::spill::list_for(declared.len());
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
            let open = d.data.extras.reduction.get();
            let same = |g: &Group| d.reducer.as_ref().is_some_and(|r| g.reducer.same(r));
            if open.is_some_and(|g| !same(&g)) {
                combiners.extend(close_reduction(ex, run, &d.data, slot, &mut alloc_failed));
            }
        }
        let kind = match d.mode {
            Mode::Reduce => reduce::bind(d),
            _ => bind_leaf(ex, &run, &name, d, slot, &mut alloc_failed),
        };
        let es = d.data.elem_size;
        let (offset, bytes) = (d.range.start * es, (d.range.end - d.range.start) * es);
        let binding = Binding {
            // SAFETY: the declaration's count moves to the binding: `resolved` or
            // `plain`, which holds the declaration, never drops this `Arc` (both are
            // `ManuallyDrop`, and
            // `forget_data` forgets it), and reads through it (`declared`) end below,
            // while the binding, kept in `leaves`, holds the datum alive.
            data: unsafe { std::ptr::read(&d.data) },
            mode: d.mode,
            weak: d.weak,
            turn: 0,
            offset,
            bytes,
            kind,
        };
        inputs += binding.dependences();
        leaves.push(binding);
    }
    drop(locked);
    drop(declared);
    let bindings = if partitioned {
        bindings_of(std::mem::ManuallyDrop::into_inner(resolved), leaves)
    } else {
        // The declarations' data counts went to the bindings.
        let plain = std::mem::ManuallyDrop::into_inner(plain);
        if plain.spilled() {
            forget_spilled(plain);
        } else {
            plain.into_iter().for_each(forget_data);
        }
        leaves
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

/// The run-wide current versions of `declared`'s data, locked in the order of the
/// data's identifiers (one lock for one datum), each with its datum's identifier.
fn lock_run_wide<'d>(
    declared: &[&'d Declared],
) -> SmallVec<[(u64, crate::data::CurrentGuard<'d>); 4]> {
    match declared {
        [] => SmallVec::new(),
        // One datum: one lock, no order to keep.
        [d] => smallvec::smallvec![(d.data.id, d.data.lock_current())],
        _ => {
            let mut order: SmallVec<[&Declared; 4]> = declared.iter().copied().collect();
            order.sort_by_key(|d| d.data.id);
            order.dedup_by_key(|d| d.data.id);
            order
                .into_iter()
                .map(|d| (d.data.id, d.data.lock_current()))
                .collect()
        }
    }
}

/// One binding per declared access (`resolved`), from the bindings of its leaves, in
/// order: a gathered one holds its segments' bindings. Without partitioned data, the
/// leaves are those bindings already. The declarations' data counts went to the
/// bindings ([`forget_data`]).
fn bindings_of(resolved: SmallVec<[Resolved; 1]>, leaves: Bindings) -> Bindings {
    let gathered = resolved
        .iter()
        .any(|r| matches!(r, Resolved::Gathered { .. }));
    if !gathered {
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
                        turn: 0,
                        offset: 0,
                        bytes,
                        kind: Kind::Gathered(Box::new(Gather {
                            leaves: leaves.by_ref().take(pieces.len()).collect(),
                            pieces,
                            block: std::sync::OnceLock::new(),
                        })),
                    }
                }
            })
            .collect()
    }
}

/// Whether a declaration binds like most: a strong read, write or read-write of a
/// whole versioned datum that is neither partitioned nor a part, with no reduction
/// open. A task of one such access, bound run-wide, takes [`submit_one_versioned`].
fn is_plain_versioned(d: &Declared) -> bool {
    d.data.shared.is_none()
        && !d.weak
        && d.mode != Mode::Reduce
        && !d.data.is_partitioned()
        && !d.data.extras.reduction.is_set()
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
    (name, hints, body): (Cow<'static, str>, Option<BoxedHints>, TaskBody<L, F>),
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
    let (kind, turn) = {
        let mut slot = d.data.lock_current();
        version::bind_only(ex, &run, &name, &d, &mut slot, &mut alloc_failed)
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
        turn,
        kind,
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

/// How many tasks a root that found the window full lets finish before it submits
/// again. Small, so that the versions and task records the tasks it runs free are
/// still on its thread's free lists (`version::spare::KEPT`) when it submits the next.
const WINDOW_REFILL: usize = 6;

/// Counts a task in its run, once its submitter has waited for room in the window if
/// its scope waits (`throttle`), helping meanwhile; `control`: a control task.
#[inline(always)]
fn enter_window(ex: &dyn Executor, run: RunRef, throttle: Throttle, control: bool) {
    // `outstanding` counts the root too: more than `window` means `window` tasks.
    // Tested here first, so that a submission with room calls nothing. The count is
    // less what this worker holds back (`run::Finished`), and above the truth by what
    // the others hold back.
    let held = ex.finished();
    let outstanding = || run.outstanding_less(held);
    if let Some(window) = run.window.filter(|&w| outstanding() > w) {
        let over = || outstanding() > window && !run.is_failed();
        match throttle {
            // The root waits for room (`RuntimeBuilder::window`): no task waits for the
            // root's outputs, so whatever fills the window can finish without it. It
            // helps until [`WINDOW_REFILL`] tasks have room, not one: its submissions
            // and its helping alternate in runs, not task by task.
            Throttle::Wait if over() => {
                let low = window.saturating_sub(WINDOW_REFILL - 1).max(1);
                ex.help_while(&|| outstanding() > low && !run.is_failed())
            }
            // A control task helps while there is work to help with, and goes on when
            // there is none: tasks waiting for its tokens could fill the window.
            Throttle::Help if over() => ex.help_while_work(&over),
            // A task spawning children never waits: they may need its outputs.
            _ => {}
        }
    }
    run.task_submitted_held(ex, held, control);
}

/// Makes the task of a submission (its name, hints and body) from its bindings
/// (`inputs`: the dependences they register); a buffer that could not be made
/// (`alloc_failed`) fails the run.
#[inline(always)]
fn new_task<L, F>(
    run: RunRef,
    owner: Option<&Owner>,
    (name, hints, body): (Cow<'static, str>, Option<BoxedHints>, TaskBody<L, F>),
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
            body: Some(body),
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
    hints: Option<BoxedHints>,
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
        TaskBody::Control(body) => (body, true, true),
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
    hints: Option<BoxedHints>,
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
            body: Some(body),
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

/// [`forget_data`] of each declaration of a task of several, whose list's buffer goes
/// to the thread's free list (`data::spill`).
#[inline(never)]
fn forget_spilled(mut declared: Declarations) {
    declared.drain(..).for_each(forget_data);
    crate::data::spill::recycle(declared);
}

/// Drops a declaration whose binding took its datum's count (`submit`), but for that
/// count.
fn forget_data(declared: Declared) {
    let Declared { data, reducer, .. } = declared;
    std::mem::forget(data);
    drop(reducer);
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
    let group = data.extras.reduction.lock().take()?;
    let name: Cow<'static, str> = format!("reduce({})", data.name).into();
    let shared = data.shared.as_ref();
    // A read-write: its input is what `next` supersedes (`Version::hand_input`).
    let next = Version::pending(data.bytes(), run.versions, shared);
    if shared.is_none() && run.alloc == AllocMode::Immediate && alloc_failed.is_none() {
        alloc_at_submission(ex, &name, &next, alloc_failed);
    }
    let previous = std::mem::replace(slot, next.clone());
    let kind = match shared {
        Some(_) => Kind::Shared(
            Versions {
                input: Some(previous.clone()),
                output: Some(next),
            },
            Some(previous),
        ),
        None => Kind::Versioned(Versions {
            input: Some(previous),
            output: Some(next),
        }),
    };
    let binding = Binding {
        data: data.clone(),
        mode: Mode::ReadWrite,
        weak: false,
        turn: 0,
        offset: 0,
        bytes: data.bytes(),
        kind,
    };
    // Its bindings' dependences, plus the last reducer of the group.
    let inputs = binding.dependences() + 1;
    let combined = group.clone();
    let body = Body::new(move |_: &TaskCtx, bindings: &[Binding]| {
        let out = bindings[0]
            .output()
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
            body: Some(body),
            hints: None,
            control: false,
            children_to_parent: false,
            root: false,
        },
        inputs,
        None,
    );
    run.task_submitted_from(ex, false);
    Some((task, group))
}
