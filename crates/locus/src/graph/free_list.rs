//! Per-thread free lists of fixed-size allocations: task records (`task_ref`) and the
//! cells of small task bodies (`body`).
//!
//! An allocation freed by a thread goes to that thread's list, where the thread's next
//! request takes it, instead of back to the allocator. A list keeps at most [`CAP`]
//! allocations; beyond that, and on a thread whose list is gone (it is exiting), an
//! allocation goes back to the allocator. So the memory kept is bounded by the threads
//! times the cap, whichever thread frees what. An allocation freed on a thread that
//! makes none stays in that thread's list (at most the cap) until the thread exits.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::thread::LocalKey;

/// The allocations each thread's list keeps for reuse, at most.
pub(crate) const CAP: usize = 512;

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

/// An allocation for a `T`, holding no live value: from the calling thread's `list`, or
/// from the allocator.
#[inline(always)]
pub(crate) fn take<T>(list: &'static LocalKey<FreeList<T>>) -> NonNull<T> {
    if let Ok(Some(slot)) = list.try_with(FreeList::pop) {
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
pub(crate) unsafe fn give<T>(list: &'static LocalKey<FreeList<T>>, slot: NonNull<T>) {
    // SAFETY: the caller's contract is `push`'s.
    let kept = list.try_with(|list| unsafe { list.push(slot) });
    if kept != Ok(true) {
        // SAFETY: allocated by `take` with this layout, and unused.
        unsafe { dealloc(slot.as_ptr().cast(), Layout::new::<T>()) };
    }
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
}
