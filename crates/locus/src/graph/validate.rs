//! The checks a task's declarations pass at submission: against the run (same runtime,
//! ranges in bounds, no datum declared twice when one access writes it, no datum of an
//! incomplete scope bound run-wide) and, for a child, against its parent's domain.
//! A refusal fails the run and is returned to the submitter.

use super::domain::Entry;
use super::run::RunState;
use super::task::TaskRef;
use crate::data::{Declared, Mode};
use crate::error::Error;
use smallvec::SmallVec;

/// Why a declaration was refused: kept apart from [`Error`] so that one refusal can
/// both fail the run and be returned to the submitter.
#[derive(Clone)]
pub(super) enum Refusal {
    Foreign { data: String },
    Invalid(String),
}

impl Refusal {
    pub(super) fn into_error(self, task: &str) -> Error {
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
pub(super) fn validate(
    run: &RunState,
    declared: &[Declared],
    run_wide: bool,
) -> Result<(), Refusal> {
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
pub(super) fn check(run: &RunState, d: &Declared, run_wide: bool) -> Result<(), Refusal> {
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
    if let Some(reason) = &d.data.extras.unavailable {
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

/// Checks a child's declarations against its parent's domain: every datum declared by
/// the parent (or created in its scope), written only if the parent writes it. Appends
/// where each declaration's entry is to `positions`, in order, for the binding to use.
pub(super) fn validate_nested(
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
