//! Nested tasks: what a task hands to its children, and when it is complete.
//!
//! A task's body may spawn children into its nested scope. The children do not bind to
//! the run-wide current versions of their data, as the tasks spawned by the run's
//! control program do, but to the task's *domain*: the data the task declared (strongly
//! or weakly, [`Weak`](crate::data::Weak)) and the data created in its scope, each
//! with the version the next child binds to. A child declaring a datum the task did not
//! declare, or writing one the task only reads, is refused at spawn.
//!
//! - On a datum the task reads, the children start from the version the task reads.
//! - On a datum the task writes strongly, the children start from the task's own
//!   output, which they can see once the task's body has returned (the body holds it
//!   mutably until then): a *start* version made for them forwards to the task's
//!   output and is published when the body returns.
//! - On a datum the task declares weakly, the children start from the version the task
//!   would have read: the task neither waits for it nor sees it.
//!
//! The task is *complete* once its body has returned and every child is complete. Only
//! then are its outputs published to its successors and its reads released: the
//! version of each datum it writes then forwards to the last version its children
//! wrote, so its successors see the children's writes. A leaf task is complete when its
//! body returns, as before nesting existed.
//!
//! [`TaskCtx::wait`](crate::TaskCtx::wait) lets a body wait for its children (taskwait);
//! the waiting worker runs other tasks meanwhile, so waits nest on the worker's stack:
//! the stack holds at most one frame per task waiting at once on that worker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::task::TaskRef;
use super::validate::Refusal;
use crate::data::version::{Version, VersionRef};
use crate::data::{lock_mutex, Binding, Bindings, DataInner, Mode};
use crate::error::Error;
use std::ptr::NonNull;

/// One datum of a domain.
pub(crate) struct Entry {
    /// The datum's identifier, kept beside it for [`find`] to compare without a
    /// pointer chase.
    id: u64,
    pub(crate) data: Arc<DataInner>,
    /// The version the next child binds to.
    pub(crate) current: VersionRef,
    /// Whether children may write the datum.
    pub(crate) writable: bool,
    /// The owner's output version of the datum, which its successors bind to.
    pub(crate) output: Option<VersionRef>,
    /// The start version made for the children on the owner's strong output.
    pub(crate) start: Option<VersionRef>,
    /// A datum created in the owner's scope: its run-wide version follows the
    /// children's writes at completion.
    pub(crate) local: bool,
}

/// The entry of datum `id` among `entries` (kept in the order of the data's
/// identifiers, so that a child's declarations find theirs in logarithmic time: a
/// control task may hold hundreds of data and submit thousands of children).
pub(crate) fn find(entries: &[Entry], id: u64) -> Option<&Entry> {
    position(entries, id).map(|k| &entries[k])
}

/// Where [`find`] finds the entry of datum `id` among `entries`.
pub(crate) fn position(entries: &[Entry], id: u64) -> Option<usize> {
    // Data made one after the other have consecutive identifiers, and a parent often
    // declares such a run of them (the partitions of a vector): where the identifier
    // would be if the entries had no gap is tried first.
    let first = entries.first()?.id;
    let guess = id.wrapping_sub(first);
    if let Some(e) = usize::try_from(guess).ok().and_then(|k| entries.get(k)) {
        if e.id == id {
            return Some(guess as usize);
        }
    }
    entries.binary_search_by_key(&id, |e| e.id).ok()
}

/// What a task hands to its children (module doc); not [`crate::sched::Domain`], the
/// worker or node an affinity hint names.
pub(crate) struct ChildDomain {
    /// In the order of the data's identifiers ([`find`]).
    entries: Mutex<Vec<Entry>>,
    /// One while the owner's body runs, plus one per child not complete.
    open: AtomicUsize,
    /// The owner's bindings and how its body ended, from the body's end to completion.
    deferred: Mutex<Option<(Bindings, super::exec::Completion)>>,
}

impl ChildDomain {
    /// The domain of a task whose body is running, from its bindings.
    pub(crate) fn new(bindings: &[Binding]) -> Self {
        // A reduction is the task's own: its children cannot take it up.
        let mut leaves: Vec<&Binding> = bindings
            .iter()
            .flat_map(Binding::leaves)
            .filter(|b| b.mode != Mode::Reduce)
            .collect();
        // A datum declared twice is read twice (a write is declared once): its first
        // binding serves both. The sort is stable, so the first one stays.
        leaves.sort_by_key(|b| b.data.id);
        leaves.dedup_by_key(|b| b.data.id);
        let mut entries: Vec<Entry> = Vec::with_capacity(leaves.len());
        for b in leaves {
            let entry = match (b.mode, b.weak) {
                (Mode::Read, _) => Entry {
                    id: b.data.id,
                    data: b.data.clone(),
                    current: b.input().cloned().expect("a read binds an input"),
                    writable: false,
                    output: None,
                    start: None,
                    local: false,
                },
                (_, true) => Entry {
                    id: b.data.id,
                    data: b.data.clone(),
                    current: b
                        .input()
                        .cloned()
                        .expect("a weak write binds what it supersedes"),
                    writable: true,
                    output: b.output().cloned(),
                    start: None,
                    local: false,
                },
                (_, false) => {
                    let output = b.output().cloned().expect("a write binds an output");
                    let shared = b.data.shared.as_ref();
                    let start = Version::pending(output.bytes, output.counts(), shared);
                    if shared.is_none() {
                        start.forward_to(output.clone());
                    }
                    Entry {
                        id: b.data.id,
                        data: b.data.clone(),
                        current: start.clone(),
                        writable: true,
                        output: Some(output),
                        start: Some(start),
                        local: false,
                    }
                }
            };
            entries.push(entry);
        }
        ChildDomain {
            entries: Mutex::new(entries),
            open: AtomicUsize::new(1),
            deferred: Mutex::new(None),
        }
    }

    /// The entries, for binding a child's accesses.
    pub(crate) fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        lock_mutex(&self.entries)
    }

    /// A child was submitted: the owner is not complete before it is.
    pub(crate) fn child_submitted(&self) {
        self.open.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether children are not complete yet (the owner's body still running).
    pub(crate) fn children_open(&self) -> bool {
        self.open.load(Ordering::Acquire) > 1
    }

    /// Closes one of the owner's parts (its body, or a child); returns whether the
    /// owner is now complete.
    pub(crate) fn close_one(&self) -> bool {
        // AcqRel: what the closing part did happens before the completion.
        self.open.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Whether a child waits for the owner's own output, which is produced only when
    /// the owner's body returns: waiting for the children would never end.
    pub(crate) fn children_wait_for_owner(&self) -> Option<String> {
        self.entries()
            .iter()
            .find(|e| e.start.as_ref().is_some_and(|s| s.has_waiters()))
            .map(|e| e.data.name.clone())
    }

    /// The owner's body returned: the start versions are published (children may read
    /// the owner's outputs now), and its bindings are kept until completion. Returns
    /// the children that waited for the start versions.
    pub(crate) fn body_done(
        &self,
        bindings: Bindings,
        completion: super::exec::Completion,
    ) -> Vec<crate::graph::Waiting> {
        let starts: Vec<VersionRef> = self
            .entries()
            .iter()
            .filter_map(|e| e.start.clone())
            .collect();
        *lock_mutex(&self.deferred) = Some((bindings, completion));
        let complete = completion == super::exec::Completion::Done;
        starts.iter().flat_map(|s| s.publish(complete)).collect()
    }

    /// The owner is complete: forwards each output to the last version the children
    /// wrote, lets local data follow them, and returns the owner's bindings, with
    /// whether every version it leaves is complete.
    pub(crate) fn complete(&self) -> (Bindings, super::exec::Completion) {
        let (bindings, completion) = lock_mutex(&self.deferred)
            .take()
            .expect("the body's end comes before completion");
        let entries = std::mem::take(&mut *self.entries());
        for e in entries {
            // The last complete write of the children (a failed run abandons the
            // writes of the children that panicked or never ran).
            let last = Version::committed(&e.current);
            if let Some(output) = &e.output {
                let is_start = e
                    .start
                    .as_ref()
                    .is_some_and(|s| VersionRef::ptr_eq(s, &last));
                if !is_start && !VersionRef::ptr_eq(output, &last) && e.data.shared.is_none() {
                    output.forward_to(last.clone());
                }
            }
            if e.local {
                e.data.follow(last);
                e.data
                    .local
                    .store(false, std::sync::atomic::Ordering::Release);
            }
        }
        (bindings, completion)
    }

    /// Adds a datum created in the owner's scope.
    pub(crate) fn add_local(&self, data: Arc<DataInner>) {
        let current = data.current();
        let mut entries = self.entries();
        let at = entries
            .binary_search_by_key(&data.id, |e| e.id)
            .unwrap_or_else(|at| at);
        entries.insert(
            at,
            Entry {
                id: data.id,
                data,
                current,
                writable: true,
                output: None,
                start: None,
                local: true,
            },
        );
    }
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
    pub(super) unsafe fn new(task: &TaskRef, bindings: Option<NonNull<[Binding]>>) -> Self {
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
    pub(super) fn domain(&self) -> Result<&ChildDomain, Refusal> {
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
