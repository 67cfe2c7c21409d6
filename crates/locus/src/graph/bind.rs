//! Binding one declared access to versions at submission (the version it reads, the
//! one it writes, and for shared data written in place the one it follows), and
//! registering a task just made with the versions it waits for.

use super::exec::Executor;
use super::run::RunState;
use super::task::{TaskRef, Waiting};
use crate::config::AllocMode;
use crate::data::version::{Version, VersionRef};
use crate::data::{Binding, Declared, Mode};
use crate::error::Error;

/// Binds one access that reads or writes versions (not a reduction) to `slot`, the
/// version the next task binds to (run-wide, or in its parent's domain): returns its
/// input, output, and, for shared data written in place, the version it follows.
/// Under immediate allocation a write's buffer is made here; a failure is kept in
/// `alloc_failed`, and fails the run once the task is submitted.
pub(super) fn bind_leaf(
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
pub(super) fn alloc_at_submission(
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

/// Registers a task just made with the versions it waits for; returns how many of
/// its dependences were satisfied already, for the caller to release with its guard.
pub(super) fn register(task: &TaskRef) -> usize {
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
