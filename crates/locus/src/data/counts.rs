//! The counts of versions that workers race on: live versions of a runtime (and their
//! peak), and the readers of a shared version racing with the writer that waits for
//! them.
//!
//! Every worker creates and drops versions. Each thread counts the versions it makes
//! and frees in a slot of its own, with plain loads and stores (no read-modify-write);
//! reading the live count sums the slots ([`VersionCounts`]). Threads beyond the slots,
//! and every thread under loom, count in shared atomics instead.
//! A version of shared data counts the tasks bound to read it; the next writer, which
//! updates the datum in place, registers as waiting for them, unless none is left. The
//! last reader finishing and the writer registering race: exactly one of them releases
//! the writer (satisfies the dependence), never both and never neither. Both live here,
//! generic over the waiting task, so that the loom models of `tests/loom.rs` run this
//! very code (module `sync`).

use crate::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};

/// Counts of live versions, shared by all versions of a runtime.
///
/// Each thread that makes or frees versions counts them in a slot of its own (the
/// first [`SLOTS`] threads to touch the counts; a thread-local names its slot): a
/// plain load and store per version, no read-modify-write, and no line that every
/// worker writes. A version made on one thread may be freed on another, so a slot's
/// live count may be negative; their sum is the live count. Threads beyond the slots
/// (and all threads under loom) count in shared atomics.
///
/// # How exact
///
/// [`live`](Self::live) and [`created`](Self::created) are exact whenever no thread
/// makes or frees a version meanwhile (before and after a run, where they are read).
/// [`peak`](Self::peak) is the highest live count *sampled*: at each
/// [`reset_peak`](Self::reset_peak) (a run's start), at each read of the peak (its
/// end), each time a thread has made [`SAMPLE`] versions in its slot, and at every
/// version made by a thread without a slot. It is never above the true peak, and
/// below it only by a rise and fall of live versions shorter than [`SAMPLE`] versions
/// made on every slot.
pub struct VersionCounts {
    /// Live versions counted by threads without a slot (signed: they may free versions
    /// that a slot counted).
    live: AtomicI64,
    /// Versions created by threads without a slot.
    created: AtomicU64,
    peak: AtomicUsize,
    #[cfg(not(loom))]
    slots: Slots,
}

impl Default for VersionCounts {
    fn default() -> Self {
        VersionCounts {
            live: AtomicI64::new(0),
            created: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            #[cfg(not(loom))]
            slots: Slots::default(),
        }
    }
}

/// Threads that count versions in a slot of their own, per runtime.
#[cfg(not(loom))]
pub const SLOTS: usize = 32;

/// A slot's versions made between two samples of the peak.
#[cfg(not(loom))]
pub const SAMPLE: u64 = 64;

/// One thread's counts: written by that thread alone (a load and a store), read by
/// anyone summing them. A cache line of its own.
#[cfg(not(loom))]
#[derive(Default)]
#[repr(align(64))]
struct Slot {
    live: AtomicI64,
    created: AtomicU64,
}

#[cfg(not(loom))]
impl Slot {
    /// Counts a version made (`renamed`: a new version, counted in `created` too);
    /// returns the versions created on this slot.
    fn made(&self, renamed: bool) -> u64 {
        // Only this slot's thread writes it: a load and a store each.
        self.live
            .store(self.live.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let created = self.created.load(Ordering::Relaxed) + u64::from(renamed);
        self.created.store(created, Ordering::Relaxed);
        created
    }

    /// Counts a version freed.
    fn freed(&self) {
        self.live
            .store(self.live.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
#[derive(Default)]
struct Slots {
    slots: [Slot; SLOTS],
    /// Slots handed out (may pass `SLOTS`: threads then have none).
    next: AtomicUsize,
    /// Changed when the counts are reused by another runtime (`CountsLease`), so
    /// that a thread's slot of the previous one is not taken for a slot of the next.
    generation: AtomicU64,
}

#[cfg(not(loom))]
thread_local! {
    /// The calling thread's slot: the counts' address, their generation, the index.
    static SLOT: std::cell::Cell<(usize, u64, usize)> = const { std::cell::Cell::new((0, 0, 0)) };
}

impl VersionCounts {
    /// The calling thread's slot, taking one on its first use of these counts; `None`
    /// once every slot is taken.
    #[cfg(not(loom))]
    #[inline]
    fn slot(&self) -> Option<&Slot> {
        let me = self as *const Self as usize;
        let generation = self.slots.generation.load(Ordering::Relaxed);
        let (counts, g, i) = SLOT.try_with(std::cell::Cell::get).ok()?;
        if counts == me && g == generation {
            return Some(&self.slots.slots[i]);
        }
        // A thread alternating between runtimes takes a slot each time it comes
        // back; once they are all taken, it counts in the shared atomics.
        if self.slots.next.load(Ordering::Relaxed) >= SLOTS {
            return None;
        }
        let i = self.slots.next.fetch_add(1, Ordering::Relaxed);
        let slot = self.slots.slots.get(i)?;
        SLOT.try_with(|s| s.set((me, generation, i))).ok()?;
        Some(slot)
    }

    /// The sum of the slots' live counts.
    fn slots_live(&self) -> i64 {
        #[cfg(not(loom))]
        {
            let taken = self.slots.next.load(Ordering::Acquire).min(SLOTS);
            self.slots.slots[..taken]
                .iter()
                .map(|s| s.live.load(Ordering::Relaxed))
                .sum()
        }
        #[cfg(loom)]
        0
    }

    /// Raises the peak to `live` if it is below.
    fn raise_peak(&self, live: i64) {
        let live = live.max(0) as usize;
        if self.peak.load(Ordering::Acquire) < live {
            self.peak.fetch_max(live, Ordering::AcqRel);
        }
    }

    /// Counts a version just created; `renamed` says whether it is a new version of
    /// versioned data (a renaming: counted in `created`), or an ordering point of
    /// shared data updated in place (alive, but no new contents).
    ///
    /// On a slot: two plain additions, and every [`SAMPLE`] versions a sample of the
    /// peak. Without: the shared count's read-modify-write reads the live count with
    /// the creation (the slots summed), and the peak is raised only when that is above
    /// what it holds. A peak read at or above it is exact: the peak only grows between
    /// resets, and [`reset_peak`](Self::reset_peak) is ordered with this read by its
    /// read-modify-write of the shared count (its doc).
    #[inline]
    pub fn version_created(&self, renamed: bool) {
        #[cfg(not(loom))]
        if let Some(slot) = self.slot() {
            if slot.made(renamed) % SAMPLE == 0 && renamed {
                self.raise_peak(self.live.load(Ordering::Acquire) + self.slots_live());
            }
            return;
        }
        let before = self.live.fetch_add(1, Ordering::AcqRel);
        if renamed {
            self.created.fetch_add(1, Ordering::Relaxed);
        }
        self.raise_peak(before + 1 + self.slots_live());
    }

    /// Counts a version dropped.
    #[inline]
    pub fn version_dropped(&self) {
        #[cfg(not(loom))]
        if let Some(slot) = self.slot() {
            slot.freed();
            return;
        }
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Versions currently alive (held by a handle or a task).
    pub fn live(&self) -> usize {
        (self.live.load(Ordering::Acquire) + self.slots_live()).max(0) as usize
    }

    /// Highest number of live versions since the last [`reset_peak`](Self::reset_peak),
    /// as sampled (type doc, "How exact"): this read is a sample too.
    pub fn peak(&self) -> usize {
        self.raise_peak(self.live() as i64);
        self.peak.load(Ordering::Acquire)
    }

    /// Versions created since the runtime started.
    pub fn created(&self) -> u64 {
        let shared = self.created.load(Ordering::Acquire);
        #[cfg(not(loom))]
        {
            let taken = self.slots.next.load(Ordering::Acquire).min(SLOTS);
            shared
                + self.slots.slots[..taken]
                    .iter()
                    .map(|s| s.created.load(Ordering::Relaxed))
                    .sum::<u64>()
        }
        #[cfg(loom)]
        shared
    }

    /// Starts a new peak from the versions alive now.
    ///
    /// Not a plain store of `live`: a version created on another thread between the
    /// read of `live` and the store would leave the peak below the versions alive (the
    /// loom model `version_counts_reset_racing_with_creation` finds it). The peak is
    /// zeroed first, then raised to `live`, read by a read-modify-write (`fetch_add`
    /// of 0) of the shared count, which reads its latest value. A creation without a
    /// slot whose increment comes after that read in the count's order reads it
    /// (`AcqRel` on both), so its read of the peak comes after the swap: it finds the
    /// peak below its count and raises it. A creation whose increment comes before is
    /// in the value read. A creation that read the peak before the swap and skipped
    /// `fetch_max` is thus counted by the reset itself. (Creations on slots are
    /// sampled: type doc.)
    pub fn reset_peak(&self) {
        self.peak.swap(0, Ordering::AcqRel);
        let live = self.live.fetch_add(0, Ordering::AcqRel) + self.slots_live();
        self.raise_peak(live);
    }

    /// Back to no version counted, for another runtime (`CountsLease`): called with
    /// none alive and none being made.
    #[cfg(not(loom))]
    fn reset(&self) {
        let taken = self.slots.next.load(Ordering::Acquire).min(SLOTS);
        for s in &self.slots.slots[..taken] {
            s.live.store(0, Ordering::Relaxed);
            s.created.store(0, Ordering::Relaxed);
        }
        self.slots.next.store(0, Ordering::Relaxed);
        self.slots.generation.fetch_add(1, Ordering::Relaxed);
        self.live.store(0, Ordering::Relaxed);
        self.created.store(0, Ordering::Relaxed);
        self.peak.store(0, Ordering::Relaxed);
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
            self.0.reset();
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
    /// released by the last [`reader_done`](Self::reader_done)); if not, `task` is
    /// dropped.
    pub fn add_release_waiter(&self, task: T) -> bool {
        let mut state = lock(&self.state);
        if state.readers == 0 {
            false
        } else {
            state.release_waiters.push(task);
            true
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn versions_made_and_freed_on_other_threads_sum_to_the_live_count() {
        let counts = VersionCounts::default();
        counts.version_created(true);
        counts.version_created(false);
        assert_eq!((counts.live(), counts.created(), counts.peak()), (2, 1, 2));
        std::thread::scope(|s| {
            s.spawn(|| {
                // Frees what another thread made: a negative slot.
                counts.version_dropped();
                counts.version_dropped();
            });
        });
        assert_eq!((counts.live(), counts.created()), (0, 1));
        assert_eq!(counts.peak(), 2, "the peak stays");
        counts.reset_peak();
        assert_eq!(counts.peak(), 0);
    }

    #[test]
    fn the_peak_is_sampled_every_sample_versions_and_never_above_the_truth() {
        let counts = VersionCounts::default();
        counts.reset_peak();
        // A rise to SAMPLE live versions, then back to none.
        for _ in 0..SAMPLE {
            counts.version_created(true);
        }
        for _ in 0..SAMPLE {
            counts.version_dropped();
        }
        assert_eq!(counts.peak(), SAMPLE as usize);
        assert_eq!(counts.created(), SAMPLE);
    }

    #[test]
    fn threads_beyond_the_slots_count_in_the_shared_atomics() {
        let counts = VersionCounts::default();
        std::thread::scope(|s| {
            for _ in 0..SLOTS + 4 {
                s.spawn(|| counts.version_created(true));
            }
        });
        assert_eq!(counts.live(), SLOTS + 4);
        assert_eq!(counts.created(), (SLOTS + 4) as u64);
        assert!(counts.live.load(Ordering::Relaxed) >= 4);
        counts.reset();
        assert_eq!((counts.live(), counts.created(), counts.peak()), (0, 0, 0));
        // A slot from before the reset is not reused by this thread's stale entry.
        counts.version_created(true);
        assert_eq!(counts.slots.next.load(Ordering::Relaxed), 1);
    }
}
