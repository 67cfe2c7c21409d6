//! Releasing a complete task's bindings: the versions it wrote published, those it
//! read let go, reductions' copies handed back, and the tasks that waited for any of
//! them activated.

use super::exec::{Completion, Executor};
use super::prepare::leaves_gathered_mut;
use super::task::{Activated, Task, Waiting};
use crate::data::version::{self, Waiters};
use crate::data::{shared, Binding, Bindings, Kind};

/// Publishes what a complete task wrote, releases what it read, and activates the
/// tasks that waited for either.
/// `bindings` are left an empty inline list: their versions let go, a spilled list's
/// buffer kept for reuse (`data::spill`).
pub(super) fn release(
    ex: &dyn Executor,
    task: &Task,
    bindings: &mut Bindings,
    completion: Completion,
) {
    let complete = completion == Completion::Done;
    if let [b] = &mut bindings[..] {
        if let Kind::Versioned(_) = b.kind {
            // One binding of versioned data, the most common task: no leaves to walk.
            let published = version::release(b, complete);
            wake_released(ex, b, Vec::new(), published);
            // Its versions are let go (`wake_released`): the binding goes in place.
            bindings.clear();
            return;
        }
    }
    for (b, gathered) in leaves_gathered_mut(bindings) {
        let (readers_done, published) = match &b.kind {
            Kind::Reduction(r) => {
                // The copy goes back to the group; the last reducer releases the
                // combiner.
                if let Some(combiner) = r.group.reducer_done(r, complete) {
                    activate_if_ready(ex, combiner);
                }
                continue;
            }
            Kind::Versioned(_) => (Vec::new(), version::release(b, complete)),
            // Shared data: the writer the last reader released, then those waiting
            // for what was written.
            Kind::Shared(..) => shared::release(b, &task.name, gathered, completion),
            Kind::Gathered(_) => unreachable!("a leaf is not gathered"),
        };
        wake_released(ex, b, readers_done, published);
    }
    // Releases the versions this task held: superseded ones with no other reader go
    // back to their pool now; the list's buffer goes to the thread's free list
    // (`data::spill`).
    if bindings.spilled() {
        crate::data::spill::recycle(std::mem::take(bindings));
    } else {
        bindings.clear();
    }
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
    b.drop_versions();
    let wake = |waiter| activate_if_ready(ex, waiter);
    if !readers_done.is_empty() {
        readers_done.into_iter().for_each(wake);
    }
    // Most versions have one waiter, or none: no iterator over the list for them.
    let mut published = published;
    if published.len() <= 1 {
        if let Some(waiter) = published.pop() {
            wake(waiter);
        }
    } else {
        published.into_iter().for_each(wake);
    }
}

/// Satisfies one dependence of `waiter`, and activates it on `ex` if that was its last.
#[inline(always)]
pub(super) fn activate_if_ready(ex: &dyn Executor, waiter: Waiting) {
    if let Some(ready) = waiter.satisfy() {
        ex.activate(Activated::new(ready));
    }
}
