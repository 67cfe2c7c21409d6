//! The synchronisation primitives of Locus's own concurrent protocols: the standard
//! library's, or loom's under `--cfg loom`.
//!
//! The protocols that workers run against one another take their atomics, locks and
//! cells from here, never from `std` directly:
//!
//! - a task's dependence counter and the hand-over of its job to one worker
//!   (`graph/task_state.rs`);
//! - a run's count of outstanding tasks, its failure, and the wake-up of the thread
//!   waiting for it (`graph/completion.rs`);
//! - sleeping and waking workers (`engine/threads/sleep.rs`, protocol in the `README.md`
//!   beside it);
//! - the counts of live versions, and the readers of a shared version racing with the
//!   writer that waits for them (`data/counts.rs`).
//!
//! A normal build re-exports `std`; `UnsafeCell` is a `#[inline]` wrapper whose
//! closures compile to a plain pointer access, so the shim costs nothing. Built with
//! `RUSTFLAGS="--cfg loom"`, the crate is only these protocol modules (see `lib.rs`),
//! made of loom's instrumented types, and the models of `tests/loom.rs` run the real
//! protocol code under every interleaving loom explores (`tests/README.md`).

#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Condvar, Mutex, MutexGuard};

/// Locks a mutex that no code path poisons while holding it (user code never runs under
/// the runtime's locks).
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A cell whose contents the caller synchronises by a protocol of its own: the standard
/// library's [`UnsafeCell`](std::cell::UnsafeCell) behind loom's closure-based interface,
/// so that loom can check every access of the protocol against the others.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// A cell holding `value`.
    #[inline]
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer for reading the contents.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer for writing the contents.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
