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
///
/// Live versions and versions created share one word, so that creating a version is
/// one read-modify-write: the low 32 bits count live versions (fewer than 2^32: each
/// holds a heap record), the high 32 bits versions created, modulo 2^32; the rare
/// creation that wraps them counts the wrap in `created_wraps`.
#[derive(Default)]
pub struct VersionCounts {
    word: AtomicU64,
    peak: AtomicUsize,
    created_wraps: AtomicU64,
}

/// One live version in [`VersionCounts::word`].
const LIVE: u64 = 1;
/// One version created in [`VersionCounts::word`].
const CREATED: u64 = 1 << 32;

impl VersionCounts {
    /// Counts a version just created; `renamed` says whether it is a new version of
    /// versioned data (a renaming: counted in `created`), or an ordering point of
    /// shared data updated in place (alive, but no new contents).
    ///
    /// The peak is raised only when `live` is above what it holds: in a steady state
    /// (a chain of tasks, each version replacing one) creating a version costs the
    /// increment of the counts alone. A peak read at or above `live` is exact: the peak
    /// only grows between resets, and [`reset_peak`](Self::reset_peak) is ordered with
    /// this read by its read-modify-write of the counts (its doc).
    pub fn version_created(&self, renamed: bool) {
        let add = if renamed { LIVE + CREATED } else { LIVE };
        let before = self.word.fetch_add(add, Ordering::AcqRel);
        debug_assert!(before as u32 != u32::MAX, "fewer than 2^32 live versions");
        if renamed && before >> 32 == u64::from(u32::MAX) {
            // The created half wrapped (the carry left the word).
            self.created_wraps.fetch_add(1, Ordering::Relaxed);
        }
        let live = (before as u32) as usize + 1;
        if self.peak.load(Ordering::Acquire) < live {
            self.peak.fetch_max(live, Ordering::AcqRel);
        }
    }

    /// Counts a version dropped.
    pub fn version_dropped(&self) {
        // A live version is counted: the low half does not borrow from the high one.
        self.word.fetch_sub(LIVE, Ordering::AcqRel);
    }

    /// Versions currently alive (held by a handle or a task).
    pub fn live(&self) -> usize {
        (self.word.load(Ordering::Acquire) as u32) as usize
    }

    /// Highest number of live versions since the last [`reset_peak`](Self::reset_peak).
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// Versions created since the runtime started (read while a creation wraps the
    /// word's half, the count may lack 2^32 for that moment; runs read it before and
    /// after, when their own creations are done).
    pub fn created(&self) -> u64 {
        let low = self.word.load(Ordering::Acquire) >> 32;
        (self.created_wraps.load(Ordering::Acquire) << 32) | low
    }

    /// Starts a new peak from the versions alive now.
    ///
    /// Not a plain store of `live`: a version created on another thread between the
    /// read of `live` and the store would leave the peak below the versions alive (the
    /// loom model `version_counts_reset_racing_with_creation` finds it). The peak is
    /// zeroed first, then raised to `live`, read by a read-modify-write (`fetch_add`
    /// of 0) of the counts, which reads their latest value. A creation whose increment
    /// comes after that read in the counts' order reads it (`AcqRel` on both), so
    /// its read of the peak comes after the swap: it finds the peak below its count
    /// and raises it. A creation whose increment comes before is in the value read.
    /// A creation that read the peak before the swap and skipped `fetch_max` is thus
    /// counted by the reset itself.
    pub fn reset_peak(&self) {
        self.peak.swap(0, Ordering::AcqRel);
        let live = (self.word.fetch_add(0, Ordering::AcqRel) as u32) as usize;
        self.peak.fetch_max(live, Ordering::AcqRel);
    }
}

/// A runtime's [`VersionCounts`], in memory that is never freed, so that a version
/// names its counts by a plain reference (`&'static`): making or freeing a version
/// changes no reference count of them. A runtime takes a lease when it is built; when
/// it is dropped with no version of it alive (the usual case: its data were dropped
/// first), the counts go back to a process-wide free list for the next runtime, reset.
/// Versions outliving their runtime (a handle kept after it) keep theirs: those counts
/// are never reused, one small allocation per such runtime.
#[cfg(not(loom))]
pub(crate) struct CountsLease(&'static VersionCounts);

/// Counts of runtimes dropped with no version alive, for the next runtimes.
#[cfg(not(loom))]
static FREE_COUNTS: std::sync::Mutex<Vec<&'static VersionCounts>> =
    std::sync::Mutex::new(Vec::new());

#[cfg(not(loom))]
impl CountsLease {
    /// Counts for a new runtime: a free one, or a new one.
    pub(crate) fn new() -> Self {
        let free = lock(&FREE_COUNTS).pop();
        CountsLease(free.unwrap_or_else(|| Box::leak(Box::default())))
    }

    /// The counts, for the runtime's versions to name.
    pub(crate) fn counts(&self) -> &'static VersionCounts {
        self.0
    }
}

#[cfg(not(loom))]
impl std::ops::Deref for CountsLease {
    type Target = VersionCounts;

    fn deref(&self) -> &VersionCounts {
        self.0
    }
}

#[cfg(not(loom))]
impl Drop for CountsLease {
    fn drop(&mut self) {
        // No version names the counts (none alive), and none can be made any more:
        // versions are made through the runtime, or from a live version's counts.
        if self.0.live() == 0 {
            self.0.word.store(0, Ordering::Relaxed);
            self.0.peak.store(0, Ordering::Relaxed);
            self.0.created_wraps.store(0, Ordering::Relaxed);
            lock(&FREE_COUNTS).push(self.0);
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn created_counts_past_the_wrap_of_its_half_word() {
        let counts = VersionCounts::default();
        counts.version_created(true);
        counts.version_created(false);
        assert_eq!((counts.live(), counts.created(), counts.peak()), (2, 1, 2));
        // The created half at its last value before wrapping, one version alive.
        counts
            .word
            .store((u64::from(u32::MAX) << 32) | 1, Ordering::Relaxed);
        counts.version_created(true);
        assert_eq!(counts.live(), 2);
        assert_eq!(counts.created(), 1 << 32);
        counts.version_created(true);
        counts.version_dropped();
        counts.version_dropped();
        assert_eq!((counts.live(), counts.created()), (1, (1 << 32) + 1));
    }
}
