//! The end of a run that workers race on: the count of outstanding tasks, whose last
//! decrement wakes the thread waiting for the run, and the run's failure, which a task
//! records (a panic, a refused declaration) while others are still finishing.
//!
//! A failed run is not stopped: the tasks still queued or waiting are drained without
//! running their bodies, so every version is released and `outstanding` still reaches
//! zero, exactly once. The error type is generic so that the loom models of
//! `tests/loom.rs` run this very code (module `sync`).

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{lock, Condvar, Mutex};

/// Outstanding tasks, the first error, and the wake-up of the waiting thread.
pub struct Completion<E> {
    /// Tasks submitted and not finished. Every task's submission and end update it,
    /// from whichever workers: on a cache line of its own, so that the run's settings
    /// beside it, which every task reads, are not invalidated each time.
    outstanding: CachePadded<AtomicUsize>,
    failed: AtomicBool,
    error: Mutex<Option<E>>,
    done: Mutex<bool>,
    done_cv: Condvar,
}

impl<E> Default for Completion<E> {
    fn default() -> Self {
        Completion {
            outstanding: CachePadded::new(AtomicUsize::new(0)),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        }
    }
}

impl<E> Completion<E> {
    /// Counts a new task; called by a task of the run (or for the root, before the run
    /// starts), so the count cannot be zero meanwhile.
    #[inline]
    pub fn task_submitted(&self) {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// Tasks submitted and not finished.
    #[inline]
    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Acquire)
    }

    /// Counts a finished task; the last one wakes the thread waiting in
    /// [`wait_done`](Self::wait_done) and returns `true`. (Tasks finish through
    /// [`task_finished_with`](Self::task_finished_with); the loom models use both.)
    #[cfg_attr(not(loom), allow(dead_code))]
    pub fn task_finished(&self) -> bool {
        self.task_finished_with(|| ())
    }

    /// As [`task_finished`](Self::task_finished), calling `keep_alive` before the last
    /// decrement only, and dropping what it returns after the waiting thread is woken:
    /// the caller that holds no reference count on `self` takes one there, since the
    /// woken thread may free `self` while that call still unlocks its lock.
    ///
    /// A decrement that leaves the count above zero is a compare-and-swap from a count
    /// above one: it cannot be the last, and touches nothing after. A count read at one
    /// is this task's alone (every other task has finished, and only an unfinished
    /// task submits): that caller is the last.
    #[inline]
    pub fn task_finished_with<K>(&self, keep_alive: impl FnOnce() -> K) -> bool {
        self.tasks_finished_with(1, keep_alive)
    }

    /// As [`task_finished_with`](Self::task_finished_with) for `k` tasks at once (at
    /// least one), counted by one worker that had kept them back (`graph::run`,
    /// `Finished`): the count never went below what is unfinished meanwhile, so a count
    /// read at `k` is these tasks' alone, and this call is the last.
    pub fn tasks_finished_with<K>(&self, k: usize, keep_alive: impl FnOnce() -> K) -> bool {
        debug_assert!(k > 0, "at least one task finished");
        let mut n = self.outstanding.load(Ordering::Acquire);
        loop {
            if n == k {
                let alive = keep_alive();
                // AcqRel: everything the finishing worker did for this task (its
                // counters, the release of its versions, a failure it recorded) happens
                // before the waiter sees zero; every decrement reads the previous ones,
                // so the last acquires them all.
                let before = self.outstanding.fetch_sub(k, Ordering::AcqRel);
                debug_assert_eq!(before, k, "a count at k is the last tasks'");
                let mut done = lock(&self.done);
                *done = true;
                self.done_cv.notify_all();
                drop(done);
                drop(alive);
                return true;
            }
            // AcqRel as above; a failed exchange reads the current count.
            debug_assert!(n > k, "more tasks finished than were outstanding");
            match self.outstanding.compare_exchange_weak(
                n,
                n - k,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return false,
                Err(now) => n = now,
            }
        }
    }

    /// Blocks until every task of the run has finished.
    pub fn wait_done(&self) {
        let mut done = lock(&self.done);
        while !*done {
            done = self
                .done_cv
                .wait(done)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Records the run's first error; later tasks are drained without running.
    pub fn fail(&self, error: E) {
        let mut slot = lock(&self.error);
        if slot.is_none() {
            *slot = Some(error);
        }
        // Release: pairs with the Acquire of `is_failed`, so a task that sees the run
        // failed also finds its error.
        self.failed.store(true, Ordering::Release);
    }

    /// Whether the run has failed.
    #[inline]
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Takes the first error, if any.
    pub fn take_error(&self) -> Option<E> {
        lock(&self.error).take()
    }
}
