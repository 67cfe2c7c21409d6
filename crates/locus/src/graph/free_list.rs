//! Per-thread free lists of fixed-size allocations: task records (`task_ref`) and the
//! cells of small task bodies (`body`).
//!
//! An allocation freed by a thread goes to that thread's list, where the thread's next
//! request takes it, instead of back to the allocator. A list keeps at most [`CAP`]
//! allocations. A full list goes whole to a process-wide [`Depot`] (at most
//! [`DEPOT_LISTS`] lists), where a thread whose list is empty takes one whole: when one
//! worker makes the tasks another runs (a control program and a worker taking its
//! tasks), the records go back to their maker by the list, with one lock per [`CAP`]
//! of them, not one by one through the allocator's cross-thread frees. Beyond the
//! depot's bound, and on a thread whose list is gone (it is exiting), an allocation goes
//! back to the allocator. So the memory kept is bounded by the threads and the depot
//! times the cap, whichever thread frees what. An allocation freed on a thread that
//! makes none stays in that thread's list (at most the cap) until the list is full or
//! the thread exits.
//!
//! # Prefetching
//!
//! An allocation taken from a list was most often written last by another core: the
//! worker that ran the task and freed its record. The first writes of the taking thread
//! then wait for each line to come over, and a locked instruction after them waits for
//! all of them. So taking an allocation asks the processor to fetch the next one's
//! lines for writing ([`prefetch_recycled`]), which hides that wait behind the work
//! done before the next take; the versions' spares (`data::version`) do the same.
//! Until a runtime of the process has started several workers, allocations rarely
//! change cores (a run's root, made by the thread calling `run`), and nothing is
//! prefetched. On a two-core host the prefetch took the overhead graph on two workers
//! from 1.05-1.12 times its time on one to 0.95-0.98 (`docs/performance.md`).

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::LocalKey;

/// The allocations each thread's list keeps for reuse, at most.
pub(crate) const CAP: usize = 512;

/// The full lists a [`Depot`] keeps, at most.
pub(crate) const DEPOT_LISTS: usize = 8;

/// A list detached from a thread: its first allocation and its length.
struct Chain {
    head: NonNull<u8>,
    len: usize,
}

/// Full free lists handed between threads (module doc), for allocations of a `T`.
pub(crate) struct Depot<T> {
    lists: Mutex<Vec<Chain>>,
    _kind: PhantomData<T>,
}

// SAFETY: the chains hold allocations that hold no live value and that nothing else
// uses; they move between threads under the lock, as the allocator's memory may.
unsafe impl<T> Sync for Depot<T> {}

impl<T> Depot<T> {
    /// An empty depot.
    pub(crate) const fn new() -> Self {
        Depot {
            lists: Mutex::new(Vec::new()),
            _kind: PhantomData,
        }
    }

    /// Keeps `chain`, unless the depot is full; gives it back if not kept.
    fn put(&self, chain: Chain) -> Option<Chain> {
        let mut lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        if lists.len() >= DEPOT_LISTS {
            return Some(chain);
        }
        lists.push(chain);
        None
    }

    /// A full list, if the depot keeps one.
    fn get(&self) -> Option<Chain> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }
}

/// The free list of one thread: allocations of a `T` that hold no live value, each
/// storing the next one's address in its first bytes (so a `T` is at least as large
/// and as aligned as a pointer, checked when a list is made).
pub(crate) struct FreeList<T> {
    head: Cell<Option<NonNull<u8>>>,
    len: Cell<usize>,
    _kind: PhantomData<T>,
}

impl<T> FreeList<T> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        assert!(
            std::mem::size_of::<T>() >= std::mem::size_of::<usize>()
                && std::mem::align_of::<T>() >= std::mem::align_of::<usize>(),
            "a free allocation holds the next one's address"
        );
        FreeList {
            head: Cell::new(None),
            len: Cell::new(0),
            _kind: PhantomData,
        }
    }

    fn pop(&self) -> Option<NonNull<T>> {
        let slot = self.head.get()?;
        // SAFETY: an allocation in the list holds the next one's address, written by
        // `push`, at its start (aligned for a pointer and larger than one: `new`).
        let next = unsafe { slot.cast::<Option<NonNull<u8>>>().read() };
        if let Some(next) = next {
            prefetch_recycled(next.cast::<T>().as_ptr());
        }
        self.head.set(next);
        self.len.set(self.len.get() - 1);
        Some(slot.cast())
    }

    /// Keeps `slot`, unless the list is full; returns whether it was kept.
    ///
    /// # Safety
    ///
    /// `slot` was allocated with the layout of a `T` and holds no live value; nothing
    /// else uses it.
    unsafe fn push(&self, slot: NonNull<T>) -> bool {
        if self.len.get() >= CAP {
            return false;
        }
        // SAFETY: the caller's contract: the memory is ours and unused.
        unsafe { slot.cast::<Option<NonNull<u8>>>().write(self.head.get()) };
        self.head.set(Some(slot.cast()));
        self.len.set(self.len.get() + 1);
        true
    }

    /// Detaches every allocation of the list, which is then empty.
    fn take_all(&self) -> Option<Chain> {
        let head = self.head.take()?;
        Some(Chain {
            head,
            len: self.len.replace(0),
        })
    }

    /// Makes `chain` the list, which is empty.
    fn install(&self, chain: Chain) {
        debug_assert!(
            self.head.get().is_none(),
            "a list is installed only when empty"
        );
        self.head.set(Some(chain.head));
        self.len.set(chain.len);
    }

    /// How many allocations the list keeps.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }
}

impl<T> Drop for FreeList<T> {
    fn drop(&mut self) {
        while let Some(slot) = self.pop() {
            // SAFETY: every allocation in the list was made by `take` with this layout
            // and holds no live value.
            unsafe { dealloc(slot.as_ptr().cast(), Layout::new::<T>()) };
        }
    }
}

/// An allocation for a `T`, holding no live value: from the calling thread's `list`,
/// from a list in `depot`, or from the allocator.
#[inline(always)]
pub(crate) fn take<T>(
    list: &'static LocalKey<FreeList<T>>,
    depot: &'static Depot<T>,
) -> NonNull<T> {
    if let Ok(Some(slot)) = list.try_with(FreeList::pop) {
        return slot;
    }
    take_slow(list, depot)
}

/// [`take`] when the thread's list is empty.
#[inline(never)]
fn take_slow<T>(list: &'static LocalKey<FreeList<T>>, depot: &'static Depot<T>) -> NonNull<T> {
    let from_depot = list.try_with(|list| {
        let chain = depot.get()?;
        list.install(chain);
        list.pop()
    });
    if let Ok(Some(slot)) = from_depot {
        return slot;
    }
    let layout = Layout::new::<T>();
    // SAFETY: `T` is not zero-sized (`FreeList::new`).
    let memory = unsafe { alloc(layout) };
    NonNull::new(memory.cast()).unwrap_or_else(|| handle_alloc_error(layout))
}

/// Gives back an allocation made by [`take`], to the calling thread's `list` or the
/// allocator.
///
/// # Safety
///
/// `slot` was made by [`take`] (for any thread's list of `T`), holds no live value and
/// is used by nothing else.
#[inline]
pub(crate) unsafe fn give<T>(
    list: &'static LocalKey<FreeList<T>>,
    depot: &'static Depot<T>,
    slot: NonNull<T>,
) {
    // SAFETY: the caller's contract is `push`'s.
    let kept = list.try_with(|list| unsafe { list.push(slot) });
    if kept != Ok(true) {
        // SAFETY: the caller's contract.
        unsafe { give_slow(list, depot, slot) };
    }
}

/// [`give`] when the thread's list is full (or gone): the full list goes to `depot`, or
/// back to the allocator if the depot is full, and `slot` starts a new list.
///
/// # Safety
///
/// As [`give`].
#[inline(never)]
unsafe fn give_slow<T>(
    list: &'static LocalKey<FreeList<T>>,
    depot: &'static Depot<T>,
    slot: NonNull<T>,
) {
    let kept = list.try_with(|list| {
        if let Some(refused) = list.take_all().and_then(|chain| depot.put(chain)) {
            // SAFETY: the allocations of a list, made by `take` with this layout and
            // holding no live value.
            unsafe { free_chain::<T>(refused) };
        }
        // SAFETY: the caller's contract is `push`'s; the list is empty now.
        unsafe { list.push(slot) }
    });
    if kept != Ok(true) {
        // SAFETY: allocated by `take` with this layout, and unused.
        unsafe { dealloc(slot.as_ptr().cast(), Layout::new::<T>()) };
    }
}

/// Gives the allocations of `chain` back to the allocator.
///
/// # Safety
///
/// `chain` was detached from a list of `T` ([`FreeList::take_all`]).
unsafe fn free_chain<T>(chain: Chain) {
    let list = FreeList::<T>::new();
    list.install(chain);
    // Dropping the list frees them.
    drop(list);
}

/// Whether some runtime of the process has started several workers: until one has,
/// [`prefetch_recycled`] does nothing (module doc, "Prefetching").
static SEVERAL_WORKERS: AtomicBool = AtomicBool::new(false);

/// Notes that a runtime started `workers` workers ([`prefetch_recycled`]).
pub(crate) fn workers_started(workers: usize) {
    if workers > 1 {
        SEVERAL_WORKERS.store(true, Ordering::Relaxed);
    }
}

/// [`prefetch_write`] of a recycled allocation `at`, the next one a thread will take,
/// if it may have been freed on another core (module doc, "Prefetching").
#[inline(always)]
pub(crate) fn prefetch_recycled<T>(at: *const T) {
    if SEVERAL_WORKERS.load(Ordering::Relaxed) {
        prefetch_write(at);
    }
}

/// Asks the processor to bring every cache line of the `T` at `at` to the calling core,
/// ready to be written, without waiting for them: a hint, which never faults, whatever
/// `at` is. A thread taking a recycled allocation calls it for the next one it will
/// take (module doc, "Prefetching"), through [`prefetch_recycled`].
///
/// On x86-64 it is `prefetchw` where the processor has it (a line fetched for writing,
/// the other cores' copies dropped at once), else `prefetcht0`; elsewhere nothing.
#[inline(always)]
pub(crate) fn prefetch_write<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = at.cast::<u8>();
        let lines = std::mem::size_of::<T>().div_ceil(64);
        // SAFETY: a prefetch reads nothing the program sees and never faults, so any
        // address will do (hence `wrapping_add`); `prefetchw` only runs where the
        // processor says it has it, and `prefetcht0` is SSE, part of x86-64.
        unsafe {
            if has_prefetchw() {
                for line in 0..lines {
                    std::arch::asm!("prefetchw [{}]", in(reg) start.wrapping_add(line * 64),
                        options(nostack, preserves_flags, readonly));
                }
            } else {
                for line in 0..lines {
                    std::arch::asm!("prefetcht0 [{}]", in(reg) start.wrapping_add(line * 64),
                        options(nostack, preserves_flags, readonly));
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Whether the processor has `prefetchw` (CPUID leaf `0x8000_0001`, ECX bit 8), asked
/// once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_prefetchw() -> bool {
    static HAS: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID is part of x86-64 (the intrinsic is safe in later Rust
        // versions); leaf 0x8000_0001 is asked only when leaf 0x8000_0000 says it
        // exists.
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
        }
    });
    *HAS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_at_most_its_cap_and_gives_allocations_back_in_reverse() {
        let list = FreeList::<[u64; 4]>::new();
        let layout = Layout::new::<[u64; 4]>();
        let slots: Vec<NonNull<[u64; 4]>> = (0..CAP + 3)
            // SAFETY: not zero-sized.
            .map(|_| NonNull::new(unsafe { alloc(layout) }.cast()).expect("memory"))
            .collect();
        let mut kept = 0;
        for &s in &slots {
            // SAFETY: fresh allocations, each given once.
            if unsafe { list.push(s) } {
                kept += 1;
            } else {
                // SAFETY: allocated above with this layout.
                unsafe { dealloc(s.as_ptr().cast(), layout) };
            }
        }
        assert_eq!(kept, CAP);
        assert_eq!(list.pop(), Some(slots[CAP - 1]));
        assert_eq!(list.len(), CAP - 1);
        drop(list);
    }

    thread_local! {
        static LIST: FreeList<[u64; 4]> = const { FreeList::new() };
    }
    static DEPOT: Depot<[u64; 4]> = Depot::new();

    #[test]
    fn a_prefetch_of_any_address_does_not_fault() {
        // Null, unmapped, non-canonical and wrapping addresses, and a live allocation.
        for at in [0usize, 4096, 0x8000_0000_0000, usize::MAX - 64, usize::MAX] {
            prefetch_write(at as *const [u8; 256]);
        }
        let live = Box::new([7u8; 256]);
        prefetch_write(&*live);
        assert_eq!(live[255], 7);
    }

    #[test]
    fn a_full_list_goes_to_the_depot_and_an_empty_one_takes_it_back() {
        // One thread frees CAP + 1 allocations it did not make: its full list goes to
        // the depot, and the last one starts a new list.
        let freed: Vec<usize> = std::thread::spawn(|| {
            let layout = Layout::new::<[u64; 4]>();
            (0..CAP + 1)
                .map(|_| {
                    // SAFETY: not zero-sized.
                    let slot = NonNull::new(unsafe { alloc(layout) }.cast()).expect("memory");
                    // SAFETY: allocated with a `[u64; 4]`'s layout, given once, unused.
                    unsafe { give(&LIST, &DEPOT, slot) };
                    slot.as_ptr() as usize
                })
                .collect()
        })
        .join()
        .unwrap();
        assert_eq!(DEPOT.lists.lock().unwrap().len(), 1);
        // Another thread, with an empty list, takes the depot's list whole: its CAP
        // allocations, the last freed first.
        let taken: Vec<usize> = std::thread::spawn(|| {
            let taken: Vec<usize> = (0..CAP)
                .map(|_| take(&LIST, &DEPOT).as_ptr() as usize)
                .collect();
            for &a in &taken {
                // SAFETY: taken above, unused.
                unsafe { give(&LIST, &DEPOT, NonNull::new(a as *mut [u64; 4]).unwrap()) };
            }
            taken
        })
        .join()
        .unwrap();
        assert_eq!(taken[0], freed[CAP - 1]);
        let (mut a, mut b) = (taken.clone(), freed[..CAP].to_vec());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "the depot's list is the one the first thread filled");
        assert!(DEPOT.lists.lock().unwrap().is_empty());
    }
}
