//! Task records: one allocation per task, holding its reference count and the task,
//! recycled through a free list per thread.
//!
//! A task's record is made by the worker that submits it and freed by whichever thread
//! drops the last reference (usually the worker that ran it). A freed record goes to
//! that thread's free list, where the thread's next submission takes it, instead of
//! back to the allocator: on one worker, a stream of tasks reuses a handful of records.
//! The lists are bounded (module `free_list`).
//!
//! The reference count is that of `std::sync::Arc` without a weak count (no `Weak` of
//! a task is ever made): a clone is one relaxed increment, a drop one release
//! decrement, and the last drop acquires every other holder's work before it drops the
//! task.
//!
//! A task waiting for its dependences is held by none of the lists it waits in: each
//! entry is a [`Waiting`], a pointer without a count. Its submitter, once it has
//! registered the task and released its guard without making it ready, hands its own
//! reference to the dependences ([`TaskRef::into_dependences`]); the entry whose
//! satisfaction makes the task ready takes that reference back ([`Waiting::satisfy`]).
//! A task waiting for one version thus costs no count change at all, where a counted
//! entry cost an increment and the submitter's drop a decrement.

use std::ptr::NonNull;
use std::sync::atomic::{self, AtomicUsize, Ordering};

use super::free_list::{self, Depot, FreeList};
use super::task::Task;

/// Above this many references, a clone aborts (as `Arc` does): the count cannot
/// overflow, however many clones leak.
const MAX_REFS: usize = isize::MAX as usize;

/// A task with its reference count: one allocation.
struct Record {
    refs: AtomicUsize,
    task: Task,
}

/// A shared reference to a task; queues, waiter lists and the executing worker hold it.
/// Freeing a task is one atomic decrement; its record is recycled (module doc).
pub struct TaskRef {
    record: NonNull<Record>,
}

// SAFETY: a `TaskRef` is a shared reference to a `Task` with an atomic count, as
// `Arc<Task>` is; `Task` is `Send + Sync` (checked below), so sharing and sending the
// reference across threads is sound, and the last holder, on whatever thread, drops
// the task.
unsafe impl Send for TaskRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for TaskRef {}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Task>();
};

impl TaskRef {
    /// A reference to the task `make` makes, in a record taken from the calling
    /// thread's free list, or allocated: the task is written there, not moved in.
    #[inline(always)]
    pub(crate) fn new_with(make: impl FnOnce() -> Task) -> TaskRef {
        let record = take_record();
        // SAFETY: `record` is valid for writes of a `Record` and holds no live value
        // (fresh from the allocator, or freed by `Drop` below after its task was
        // dropped); the writes make it the one live record there, with one reference.
        // (Should `make` panic, the record is lost, never used.)
        unsafe {
            std::ptr::addr_of_mut!((*record.as_ptr()).task).write(make());
            std::ptr::addr_of_mut!((*record.as_ptr()).refs).write(AtomicUsize::new(1));
        }
        TaskRef { record }
    }

    /// The task's address, unique among live tasks (a freed task's may be reused).
    pub fn as_ptr(this: &TaskRef) -> *const Task {
        // SAFETY: the record is live while `this` holds a reference (`Drop`).
        unsafe { std::ptr::addr_of!((*this.record.as_ptr()).task) }
    }

    /// Whether two references are to the same task.
    pub fn ptr_eq(a: &TaskRef, b: &TaskRef) -> bool {
        a.record == b.record
    }

    fn record(&self) -> &Record {
        // SAFETY: the record stays live until the last reference is dropped, and
        // `self` is one.
        unsafe { self.record.as_ref() }
    }
}

impl Clone for TaskRef {
    #[inline]
    fn clone(&self) -> TaskRef {
        // Relaxed, as `Arc::clone`: a new reference is made from an existing one,
        // which keeps the record alive meanwhile; nothing is published by it.
        let old = self.record().refs.fetch_add(1, Ordering::Relaxed);
        if old > MAX_REFS {
            std::process::abort();
        }
        TaskRef {
            record: self.record,
        }
    }
}

impl Drop for TaskRef {
    #[inline]
    fn drop(&mut self) {
        let refs = &self.record().refs;
        // Acquire: if this is the only reference, every other holder's uses of the
        // task happened before their release decrements, which this load reads; and
        // no other reference can appear, since a clone needs one. So the task is this
        // holder's alone, with no atomic write (most tasks end so: the worker that ran
        // one holds its last reference).
        if refs.load(Ordering::Acquire) != 1 {
            // Release: this holder's uses of the task happen before the last drop's
            // acquire below, so before the task is dropped.
            if refs.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            atomic::fence(Ordering::Acquire);
        }
        // SAFETY: this was the last reference: no other thread can reach the record,
        // and every other holder's uses of it happened before the fence above. The
        // task is dropped once, here; then the record holds no live value and goes
        // back to a free list or the allocator. (Should the task's drop panic, the
        // record leaks: it is never freed twice.)
        unsafe {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*self.record.as_ptr()).task));
            give_record(self.record);
        }
    }
}

impl TaskRef {
    /// Hands this reference to the task's unsatisfied dependences: the caller released
    /// its guard and the task is not ready, so it waits in lists as [`Waiting`]
    /// entries, which hold no count. The last of them to be satisfied takes this
    /// reference back ([`Waiting::satisfy`]). No atomic operation is made, where
    /// dropping the reference and counting one per list entry would make two per entry.
    #[inline]
    pub(crate) fn into_dependences(self) {
        std::mem::forget(self);
    }
}

/// A task waiting in a list (a version's waiters, a shared version's writer waiting
/// for its readers, a reduction group's combiner) for one of its dependences: its
/// record, without a count of its own. The task cannot be freed meanwhile: until its
/// last dependence is satisfied it is not ready, so nothing runs it, and its
/// submitter's reference is held for it by its dependences
/// ([`TaskRef::into_dependences`]).
pub(crate) struct Waiting {
    record: NonNull<Record>,
}

// SAFETY: a `Waiting` is used only to satisfy the task's dependence (an atomic
// decrement of a `Sync` task's count), from whichever thread releases it.
unsafe impl Send for Waiting {}
// SAFETY: as for `Send`; `&Waiting` gives nothing.
unsafe impl Sync for Waiting {}

impl Waiting {
    /// An entry for one of `task`'s dependences.
    ///
    /// # Safety
    ///
    /// The dependence is counted in `task`'s pending count, and this entry is the only
    /// one that satisfies it (with [`satisfy`](Self::satisfy)). `task`'s submitter
    /// still holds its guard, and once it releases it, hands its reference to the
    /// dependences if the task is not ready then ([`TaskRef::into_dependences`]).
    #[inline]
    pub(crate) unsafe fn new(task: &TaskRef) -> Waiting {
        Waiting {
            record: task.record,
        }
    }

    /// Satisfies the dependence; returns the task, with the reference its submitter
    /// handed to its dependences, if that was its last.
    #[inline]
    pub(crate) fn satisfy(self) -> Option<TaskRef> {
        // SAFETY: the dependence is unsatisfied (`new`'s contract: this entry alone
        // satisfies it), so the task is not ready and its record is alive, held for it
        // by its dependences. After a decrement that is not the last, the record is not
        // touched: the last satisfier may free it at once.
        let ready = unsafe { self.record.as_ref() }.task.satisfy_one();
        // SAFETY: this was the last dependence: the reference handed over by the
        // submitter (`into_dependences`) is this caller's now, and no other entry
        // holds the record.
        ready.then(|| TaskRef {
            record: self.record,
        })
    }
}

impl std::ops::Deref for TaskRef {
    type Target = Task;

    #[inline]
    fn deref(&self) -> &Task {
        &self.record().task
    }
}

thread_local! {
    /// The calling thread's free records (module `free_list`).
    static RECORDS: FreeList<Record> = const { FreeList::new() };
}

/// The full lists of records handed between threads (module `free_list`).
static RECORD_DEPOT: Depot<Record> = Depot::new();

/// A record holding no live value: from the calling thread's free list, or allocated.
#[inline(always)]
fn take_record() -> NonNull<Record> {
    free_list::take(&RECORDS, &RECORD_DEPOT)
}

/// Gives back a record whose task was dropped.
///
/// # Safety
///
/// `record` was made by [`take_record`], holds no live value and is used by nothing
/// else.
#[inline]
unsafe fn give_record(record: NonNull<Record>) {
    // SAFETY: the caller's contract is `give`'s.
    unsafe { free_list::give(&RECORDS, &RECORD_DEPOT, record) }
}
