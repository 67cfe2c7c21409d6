//! Binding one declared access at submission, by its datum's kind (each kind's binding
//! lives beside its data: `data::version`, `data::shared`, `data::reduce`), and
//! registering a task just made with the versions it waits for.

use super::exec::Executor;
use super::run::RunState;
use super::task::{TaskRef, Waiting};
use crate::data::version::{self, VersionRef};
use crate::data::{shared, Binding, Declared, Kind, Mode};
use crate::error::Error;

/// Binds one access that reads or writes versions (not a reduction) to `slot`, the
/// version the next task binds to (run-wide, or in its parent's domain), by its
/// datum's kind: shared data (`data::shared::bind`) or versioned
/// (`data::version::bind`, which makes a write's buffer under immediate allocation; a
/// failure is kept in `alloc_failed`, and fails the run once the task is submitted).
#[inline]
pub(super) fn bind_leaf(
    ex: &dyn Executor,
    run: &RunState,
    name: &str,
    d: &Declared,
    slot: &mut VersionRef,
    alloc_failed: &mut Option<Error>,
) -> Kind {
    match d.data.shared {
        Some(_) => shared::bind(d, run.versions, slot),
        None => version::bind(ex, run, name, d, slot, alloc_failed),
    }
}

/// Registers a task just made with the versions it waits for; returns how many of
/// its dependences were satisfied already, for the caller to release with its guard.
pub(super) fn register(task: &TaskRef) -> usize {
    // SAFETY: the pending guard taken by `Task::new` is released only by the caller,
    // after this.
    let bindings = &unsafe { task.job_unshared() }.bindings;
    if let [b] = &bindings[..] {
        if !matches!(b.kind, Kind::Gathered(_)) {
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
    let input = |input: &Option<VersionRef>| {
        input
            .as_ref()
            .map_or(0, |input| usize::from(!input.add_waiter(waiting())))
    };
    match &b.kind {
        Kind::Versioned(v) if b.turn > 0 => {
            let output = v.output.as_ref().expect("a continuing read-write writes");
            usize::from(!output.add_next_writer(b.turn, waiting()))
        }
        Kind::Versioned(v) => input(&v.input),
        Kind::Shared(v, after) => {
            let mut satisfied = input(&v.input);
            if let Some(previous) = after {
                if b.mode == Mode::Write {
                    satisfied += usize::from(!previous.add_waiter(waiting()));
                }
                satisfied += usize::from(!previous.add_release_waiter(waiting()));
            }
            satisfied
        }
        // A reduction waits for its group's combination only (`data::reduce`); a
        // gathered access registers through its leaves.
        Kind::Reduction(_) | Kind::Gathered(_) => 0,
    }
}
