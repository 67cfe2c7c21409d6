//! The counts of versions that workers race on: live versions of a runtime (and their
//! peak), and the readers of a shared version racing with the writer that waits for
//! them.
//!
//! Every worker creates and drops versions, so the live count and its peak are atomics.
//! A version of shared data counts the tasks bound to read it; the next writer, which
//! updates the datum in place, registers as waiting for them, unless none is left. The
//! last reader finishing and the writer registering race: exactly one of them releases
//! the writer (satisfies the dependence), never both and never neither. Both live here,
//! generic over the waiting task, so that the loom models of `tests/loom.rs` run this
//! very code (module `sync`).

use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};

/// Counts of live versions, shared by all versions of a runtime.
#[derive(Default)]
pub struct VersionCounts {
    live: AtomicUsize,
    peak: AtomicUsize,
    created: AtomicU64,
}

impl VersionCounts {
    /// Counts a version just created; `renamed` says whether it is a new version of
    /// versioned data (a renaming: counted in `created`), or an ordering point of
    /// shared data updated in place (alive, but no new contents).
    ///
    /// The peak is raised only when `live` is above what it holds: in a steady state
    /// (a chain of tasks, each version replacing one) creating a version costs the
    /// increment of `live` alone. A peak read at or above `live` is exact: the peak
    /// only grows between resets, and [`reset_peak`](Self::reset_peak) is ordered with
    /// this read by its read-modify-write of `live` (its doc).
    pub fn version_created(&self, renamed: bool) {
        let live = self.live.fetch_add(1, Ordering::AcqRel) + 1;
        if self.peak.load(Ordering::Acquire) < live {
            self.peak.fetch_max(live, Ordering::AcqRel);
        }
        if renamed {
            self.created.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a version dropped.
    pub fn version_dropped(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Versions currently alive (held by a handle or a task).
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Highest number of live versions since the last [`reset_peak`](Self::reset_peak).
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// Versions created since the runtime started.
    pub fn created(&self) -> u64 {
        self.created.load(Ordering::Acquire)
    }

    /// Starts a new peak from the versions alive now.
    ///
    /// Not a plain store of `live`: a version created on another thread between the
    /// read of `live` and the store would leave the peak below the versions alive (the
    /// loom model `version_counts_reset_racing_with_creation` finds it). The peak is
    /// zeroed first, then raised to `live`, read by a read-modify-write (`fetch_add`
    /// of 0), which reads the latest value of `live`. A creation whose increment of
    /// `live` comes after that read in `live`'s order reads it (`AcqRel` on both), so
    /// its read of the peak comes after the swap: it finds the peak below its count
    /// and raises it. A creation whose increment comes before is in the value read.
    /// A creation that read the peak before the swap and skipped `fetch_max` is thus
    /// counted by the reset itself.
    pub fn reset_peak(&self) {
        self.peak.swap(0, Ordering::AcqRel);
        let live = self.live.fetch_add(0, Ordering::AcqRel);
        self.peak.fetch_max(live, Ordering::AcqRel);
    }
}

/// Shared data: the tasks bound to read one version and not finished, and the writer
/// that supersedes the version, waiting for them (write after read).
pub struct Readers<T> {
    state: Mutex<ReaderState<T>>,
}

struct ReaderState<T> {
    readers: usize,
    release_waiters: Vec<T>,
}

impl<T> Default for Readers<T> {
    fn default() -> Self {
        Readers {
            state: Mutex::new(ReaderState {
                readers: 0,
                release_waiters: Vec::new(),
            }),
        }
    }
}

impl<T> Readers<T> {
    /// Counts one more task bound to read the version. Called under the datum's lock,
    /// so that no writer supersedes the version meanwhile.
    pub fn add_reader(&self) {
        lock(&self.state).readers += 1;
    }

    /// A reader finished; returns the writer that waited for the last one.
    pub fn reader_done(&self) -> Vec<T> {
        let mut state = lock(&self.state);
        state.readers -= 1;
        if state.readers == 0 {
            std::mem::take(&mut state.release_waiters)
        } else {
            Vec::new()
        }
    }

    /// Registers `task`, the writer that supersedes the version, as waiting for its
    /// readers, unless none is left. Returns whether the task must wait (and is then
    /// released by the last [`reader_done`](Self::reader_done)).
    pub fn add_release_waiter(&self, task: &T) -> bool
    where
        T: Clone,
    {
        let mut state = lock(&self.state);
        if state.readers == 0 {
            false
        } else {
            state.release_waiters.push(task.clone());
            true
        }
    }
}
