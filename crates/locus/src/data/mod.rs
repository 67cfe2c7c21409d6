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

/// An empty small vector with room for `n` items: allocated only when they do not fit
/// inline (`SmallVec::with_capacity` is a call even when they do, on every task).
#[inline]
pub(crate) fn small_vec_for<A: smallvec::Array>(n: usize) -> smallvec::SmallVec<A> {
    if n > A::size() {
        smallvec::SmallVec::with_capacity(n)
    } else {
        smallvec::SmallVec::new()
    }
}
