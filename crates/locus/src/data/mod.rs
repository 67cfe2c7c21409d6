//! Versioned data: handles, versions and the access declarations of tasks.
//!
//! A [`Data`] handle names a logical array. Every task that writes it creates a new
//! *version* (renaming); readers bind to the
//! version that is current when they are submitted. A version's buffer is freed to its
//! node's pool as soon as it is superseded and its last reader has finished: the handle
//! holds the current version, each task holds the versions it reads and writes, and the
//! last of them to let go frees the buffer.
//!
//! A *shared* datum (config `shm-base`, or [`Runtime::shared`](crate::Runtime::shared))
//! has one buffer, placed by a policy when it is created and updated in place; its
//! writers also wait for the previous writer and for the readers of the previous
//! contents (module `shared`).
//!
//! A datum may be partitioned (module `partition`): its parts are data handles whose
//! accesses bind to the segments they cover. A reduction (module `reduce`) accumulates
//! into private copies per node, combined when the datum is next accessed.

mod access;
mod counts;
mod handle;
pub(crate) mod partition;
pub(crate) mod reduce;
pub(crate) mod shared;
pub(crate) mod version;

pub use access::{AccessList, Read, ReadWrite, Weak, Write};
pub use handle::{Data, Element};
pub use partition::{Partition, Parts};
pub use reduce::Reduce;

pub(crate) use access::{declarations, Bindings};
#[doc(hidden)]
pub use access::{Binding, Declarations, Declared, RawView};
pub(crate) use access::{Gather, Kind, Mode, RecordedList, Versions};
pub(crate) use handle::{lock as lock_mutex, CurrentGuard, DataInner};

/// The lists of a task of several accesses, its declarations and its bindings, in
/// buffers of [`spill::FEW`] or [`spill::MORE`] items kept in the threads' free lists
/// (`graph::free_list`), as the task records are: a task of a few accesses made by one
/// thread and finished by another costs no allocator call for them, and the buffers
/// go back to their maker by the list. A list of more items, or one that grew, is the
/// allocator's, as any vector's.
pub(crate) mod spill {
    use std::ptr::NonNull;

    use smallvec::SmallVec;

    use super::access::{Binding, Declared};
    use crate::graph::free_list::{self, Depot, FreeList};

    /// Items of the smaller buffers.
    pub(crate) const FEW: usize = 4;
    /// Items of the larger buffers.
    pub(crate) const MORE: usize = 8;

    /// An item kept in a task's spilled lists, with the free lists of its buffers.
    pub(crate) trait Item: Sized + 'static {
        fn few() -> (
            &'static std::thread::LocalKey<FreeList<[Self; FEW]>>,
            &'static Depot<[Self; FEW]>,
        );
        fn more() -> (
            &'static std::thread::LocalKey<FreeList<[Self; MORE]>>,
            &'static Depot<[Self; MORE]>,
        );
    }

    macro_rules! item {
        ($t:ty, $few:ident, $few_depot:ident, $more:ident, $more_depot:ident) => {
            thread_local! {
                static $few: FreeList<[$t; FEW]> = const { FreeList::new() };
                static $more: FreeList<[$t; MORE]> = const { FreeList::new() };
            }
            static $few_depot: Depot<[$t; FEW]> = Depot::new();
            static $more_depot: Depot<[$t; MORE]> = Depot::new();

            impl Item for $t {
                fn few() -> (
                    &'static std::thread::LocalKey<FreeList<[Self; FEW]>>,
                    &'static Depot<[Self; FEW]>,
                ) {
                    (&$few, &$few_depot)
                }
                fn more() -> (
                    &'static std::thread::LocalKey<FreeList<[Self; MORE]>>,
                    &'static Depot<[Self; MORE]>,
                ) {
                    (&$more, &$more_depot)
                }
            }
        };
    }

    item!(
        Declared,
        DECLARED_FEW,
        DECLARED_FEW_DEPOT,
        DECLARED_MORE,
        DECLARED_MORE_DEPOT
    );
    item!(
        Binding,
        BINDING_FEW,
        BINDING_FEW_DEPOT,
        BINDING_MORE,
        BINDING_MORE_DEPOT
    );

    /// An empty list with room for `n` items: inline when they fit, else in a buffer
    /// of the free lists when one holds them, else allocated.
    #[inline]
    pub(crate) fn list_for<T: Item>(n: usize) -> SmallVec<[T; 1]> {
        if n <= 1 {
            SmallVec::new()
        } else {
            list_of_several(n)
        }
    }

    /// [`list_for`] of more than one item.
    #[inline(never)]
    fn list_of_several<T: Item>(n: usize) -> SmallVec<[T; 1]> {
        let (ptr, capacity) = if n <= FEW {
            let (list, depot) = T::few();
            (free_list::take(list, depot).cast::<T>(), FEW)
        } else if n <= MORE {
            let (list, depot) = T::more();
            (free_list::take(list, depot).cast::<T>(), MORE)
        } else {
            return SmallVec::with_capacity(n);
        };
        // SAFETY: an allocation of the global allocator laid out as `[T; capacity]`
        // (`free_list::take`), which is `Layout::array::<T>(capacity)`, holding no live
        // value; the capacity is above the inline one.
        unsafe { SmallVec::from_raw_parts(ptr.as_ptr(), 0, capacity) }
    }

    /// Drops the items of `list` and keeps its buffer in the calling thread's free list
    /// when it is one of theirs in size (else the allocator frees it).
    #[inline]
    pub(crate) fn recycle<T: Item>(list: SmallVec<[T; 1]>) {
        if list.spilled() {
            recycle_spilled(list);
        }
    }

    /// [`recycle`] of a spilled list.
    #[inline(never)]
    fn recycle_spilled<T: Item>(mut list: SmallVec<[T; 1]>) {
        let capacity = list.capacity();
        if capacity != FEW && capacity != MORE {
            return;
        }
        list.clear();
        let ptr = NonNull::new(list.as_mut_ptr()).expect("a spilled list's buffer");
        std::mem::forget(list);
        // SAFETY: the buffer of a spilled list of `capacity` items, allocated by the
        // global allocator as `Layout::array::<T>(capacity)` (by `list_for`, or by the
        // list when it grew), which is the layout of `[T; capacity]`; its items are
        // dropped and the list forgotten, so nothing uses it.
        unsafe {
            if capacity == FEW {
                let (l, d) = T::few();
                free_list::give(l, d, ptr.cast::<[T; FEW]>());
            } else {
                let (l, d) = T::more();
                free_list::give(l, d, ptr.cast::<[T; MORE]>());
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The buffers of `[Declared; FEW]` and `[Declared; MORE]` this thread keeps.
        fn kept() -> (usize, usize) {
            let few = Declared::few().0.with(|l| l.len());
            let more = Declared::more().0.with(|l| l.len());
            (few, more)
        }

        #[test]
        fn a_spilled_list_of_a_kept_size_goes_back_to_the_thread_and_the_next_one_takes_it() {
            let (few, more) = kept();
            let one = list_for::<Declared>(1);
            assert!(!one.spilled(), "one item stays inline");
            let a = list_for::<Declared>(3);
            assert_eq!((a.spilled(), a.capacity()), (true, FEW));
            let at = a.as_ptr();
            recycle(a);
            assert_eq!(kept(), (few + 1, more), "kept, not freed");
            let b = list_for::<Declared>(2);
            assert_eq!((b.as_ptr(), b.capacity()), (at, FEW), "the kept buffer");
            assert_eq!(kept(), (few, more));
            let c = list_for::<Declared>(6);
            assert_eq!(c.capacity(), MORE);
            recycle(c);
            assert_eq!(kept(), (few, more + 1));
            // Larger lists are the allocator's, and so is a buffer of another size.
            let d = list_for::<Declared>(MORE + 1);
            assert_eq!(d.capacity(), MORE + 1);
            recycle(d);
            recycle(b);
            assert_eq!(kept(), (few + 1, more + 1));
        }
    }
}
