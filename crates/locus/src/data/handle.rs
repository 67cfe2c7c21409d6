//! [`Data`]: the user's handle to a versioned logical array.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use locus_mem::region::RegionPolicy;

use super::access::{Mode, Read, ReadWrite, Weak, Write};
use super::partition::{PartOf, Table};
use super::reduce::{Group, Reduce};
use super::shared::{SharedBuffer, SharedSetup};
use super::version::{Version, VersionCounts, VersionRef};
use crate::error::Error;

/// The element type of versioned data: plain old data, so that any bytes are a valid
/// value and buffers can be copied, zeroed and recycled freely.
///
/// Its size must not be zero and its alignment must be at most 64 bytes, the alignment
/// of the runtime's buffers ([`locus_mem::pool::BLOCK_ALIGN`]): a view of a wider type
/// would be misaligned. Every constructor of a [`Data`] handle checks both when it is
/// compiled, so a program that makes a handle of any other type does not build:
///
/// ```compile_fail
/// #[derive(Clone, Copy)]
/// #[repr(C, align(128))]
/// struct Wide([u8; 128]);
/// // SAFETY: any bytes are a valid `Wide`, which has no padding.
/// unsafe impl bytemuck::Zeroable for Wide {}
/// unsafe impl bytemuck::Pod for Wide {}
///
/// let rt = locus::Runtime::builder().build().unwrap();
/// let wide = rt.data::<Wide>("wide", 4);
/// ```
///
/// The same type aligned to 64 bytes builds:
///
/// ```
/// #[derive(Clone, Copy)]
/// #[repr(C, align(64))]
/// struct Line([u8; 128]);
/// // SAFETY: any bytes are a valid `Line`, which has no padding.
/// unsafe impl bytemuck::Zeroable for Line {}
/// unsafe impl bytemuck::Pod for Line {}
///
/// let rt = locus::Runtime::builder().build().unwrap();
/// let lines = rt.data::<Line>("lines", 4);
/// assert_eq!(lines.len(), 4);
/// ```
pub trait Element: bytemuck::Pod + Send + Sync {}

impl<T: bytemuck::Pod + Send + Sync> Element for T {}

/// The lock of a datum's current version ([`DataInner::current`]): a thread finding it
/// held yields its processor until it is free, so a holder preempted mid-section is
/// not spun against.
pub(crate) type CurrentLock = spin::mutex::SpinMutex<VersionRef, spin::relax::Yield>;

/// A datum's current version, locked.
pub(crate) type CurrentGuard<'a> = spin::mutex::SpinMutexGuard<'a, VersionRef>;

/// Identifiers of data handles, unique in the process.
static NEXT_DATA_ID: AtomicU64 = AtomicU64::new(1);

/// The shared part of a data handle.
pub(crate) struct DataInner {
    /// Unique in the process.
    pub(crate) id: u64,
    /// The runtime that created the handle.
    pub(crate) runtime: u64,
    /// For reports and error messages.
    pub(crate) name: String,
    /// Number of elements.
    pub(crate) len: usize,
    /// Size of one element in bytes.
    pub(crate) elem_size: usize,
    /// `len * elem_size`, checked at creation (saturated for a datum too large to
    /// exist, which is `unavailable`).
    bytes: usize,
    /// The version the next submitted task binds to, under a spin lock: every
    /// section under it is short and never blocks, and its release is a store where a
    /// `Mutex`'s is a read-modify-write (one fewer per task that binds the datum).
    pub(crate) current: CurrentLock,
    /// The buffer every version names, for shared data (updated in place).
    pub(crate) shared: Option<Arc<SharedBuffer>>,
    /// What most data never use, behind one pointer ([`Extras`]).
    pub(crate) extras: Box<Extras>,
    /// Whether the datum was made in the scope of a task that is not complete yet
    /// (`graph::domain`): meanwhile only that task's children bind to it, through its
    /// domain, and a task bound run-wide is refused. Two chains of versions, one in the
    /// domain and one run-wide, would otherwise share one buffer of shared data.
    pub(crate) local: AtomicBool,
}

/// What most data never use: the reason a datum has no memory, partitions, an open
/// reduction, an owner. Apart from [`DataInner`]'s hot state (its identity, sizes,
/// current version and shared buffer), behind one pointer, so that the state every task
/// binding the datum touches takes fewer cache lines.
pub(crate) struct Extras {
    /// Why the datum's memory could not be made, if it could not: tasks declaring it
    /// are refused.
    pub(crate) unavailable: Option<String>,
    /// A partitioned whole: the segments that hold its contents (module `partition`).
    pub(crate) segments: Flagged<Arc<Table>>,
    /// A part of a partitioned whole: the whole and the elements it covers.
    pub(crate) part_of: Option<PartOf>,
    /// The open reduction group, if reductions were declared since the last other
    /// access (module `reduce`).
    pub(crate) reduction: Flagged<Arc<Group>>,
    /// Who the datum is attached to, if anyone ([`Runtime::attach`](crate::Runtime::attach)):
    /// the placement policies treat it as that owner's data.
    /// With the node of an attached worker.
    pub(crate) owner: Flagged<(crate::graph::Attach, usize)>,
}

impl Extras {
    /// None of them: a datum with memory, not partitioned, not a part, not reduced, not
    /// attached.
    fn new(unavailable: Option<String>, part_of: Option<PartOf>) -> Box<Self> {
        Box::new(Extras {
            unavailable,
            segments: Flagged::new(),
            part_of,
            reduction: Flagged::new(),
            owner: Flagged::new(),
        })
    }
}

impl DataInner {
    /// A new datum of `len` elements, zero until written: versioned, or shared and
    /// placed by `shared`'s policy.
    pub(crate) fn create(
        runtime: u64,
        name: String,
        len: usize,
        elem_size: usize,
        versions: &'static VersionCounts,
        shared: Option<(&Arc<SharedSetup>, RegionPolicy)>,
    ) -> Result<Self, Error> {
        let bytes = checked_bytes(&name, len, elem_size)?;
        let buffer = match shared {
            Some((setup, policy)) => Some(setup.buffer(&name, bytes, policy)?),
            None => None,
        };
        let initial = Version::initial(bytes, versions, buffer.as_ref());
        Ok(DataInner {
            id: NEXT_DATA_ID.fetch_add(1, Ordering::Relaxed),
            runtime,
            name,
            len,
            elem_size,
            bytes,
            current: CurrentLock::new(initial),
            shared: buffer,
            extras: Extras::new(None, None),
            local: AtomicBool::new(false),
        })
    }

    /// A shared datum over an existing buffer (memory the user registered).
    pub(crate) fn with_shared_buffer(
        runtime: u64,
        name: String,
        len: usize,
        elem_size: usize,
        versions: &'static VersionCounts,
        buffer: Arc<SharedBuffer>,
    ) -> Self {
        let bytes = len * elem_size;
        let initial = Version::initial(bytes, versions, Some(&buffer));
        DataInner {
            id: NEXT_DATA_ID.fetch_add(1, Ordering::Relaxed),
            runtime,
            name,
            len,
            elem_size,
            bytes,
            current: CurrentLock::new(initial),
            shared: Some(buffer),
            extras: Extras::new(None, None),
            local: AtomicBool::new(false),
        }
    }

    /// As [`create`](Self::create), for the infallible constructors: a datum whose
    /// memory could not be made is still returned, and refused to every task that
    /// declares it, with the reason.
    pub(crate) fn create_or_unavailable(
        runtime: u64,
        name: String,
        len: usize,
        elem_size: usize,
        versions: &'static VersionCounts,
        shared: Option<(&Arc<SharedSetup>, RegionPolicy)>,
    ) -> Self {
        match Self::create(runtime, name.clone(), len, elem_size, versions, shared) {
            Ok(inner) => inner,
            Err(error) => DataInner {
                id: NEXT_DATA_ID.fetch_add(1, Ordering::Relaxed),
                runtime,
                name,
                len,
                elem_size,
                bytes: len.saturating_mul(elem_size),
                // Never given a buffer: every task declaring the datum is refused.
                current: CurrentLock::new(Version::initial(0, versions, None)),
                shared: None,
                extras: Extras::new(Some(error.to_string()), None),
                local: AtomicBool::new(false),
            },
        }
    }

    /// A part of `root` over `runs` of its elements (module `partition`): it has no
    /// contents of its own, its accesses resolve to the segments of `root`.
    pub(crate) fn part(
        root: Arc<DataInner>,
        name: String,
        runs: Vec<Range<usize>>,
        versions: &'static VersionCounts,
    ) -> Self {
        let len = runs.iter().map(Range::len).sum();
        DataInner {
            id: NEXT_DATA_ID.fetch_add(1, Ordering::Relaxed),
            runtime: root.runtime,
            name,
            len,
            elem_size: root.elem_size,
            bytes: len * root.elem_size,
            current: CurrentLock::new(Version::initial(0, versions, None)),
            shared: None,
            extras: Extras::new(root.extras.unavailable.clone(), Some(PartOf { root, runs })),
            local: AtomicBool::new(false),
        }
    }

    /// Size of the whole array in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The current version, locked, resolved to the last committed one when its
    /// producer did not complete (a failed run: `data::version`, "Failed producers").
    pub(crate) fn lock_current(&self) -> CurrentGuard<'_> {
        let mut current = self.current.lock();
        if current.is_abandoned() {
            let committed = Version::committed(&current);
            *current = committed;
        }
        current
    }

    /// A copy of `version`'s contents (zeros for an initial version never written).
    ///
    /// # Safety
    ///
    /// `version` is a produced version of this datum, and nothing writes its buffer
    /// until the copy returns (no run in progress, or no task of the run that could).
    pub(crate) unsafe fn copy_out<T: Element>(&self, version: &Version) -> Result<Vec<T>, Error> {
        let mut out = Vec::new();
        out.try_reserve_exact(self.len)
            .map_err(|e| Error::OutOfMemory {
                task: format!("fetch({})", self.name),
                bytes: self.bytes(),
                message: e.to_string(),
            })?;
        out.resize(self.len, T::zeroed());
        if let Some(buffer) = version.buffer() {
            if buffer.is_accounted_only() {
                return Err(Error::Config(format!(
                    "fetch({}): the buffer holds no memory (a simulation with skipped \
                     bodies)",
                    self.name
                )));
            }
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
            // SAFETY: the caller guarantees nothing writes the buffer meanwhile; the
            // buffer holds the datum's `bytes` bytes and `out` as many.
            unsafe {
                std::ptr::copy_nonoverlapping(buffer.as_ptr(), bytes.as_mut_ptr(), bytes.len())
            };
        }
        Ok(out)
    }

    /// Makes `version` the current one: a datum created in a task's scope follows
    /// what the task's children wrote, once the task is complete.
    pub(crate) fn follow(&self, version: VersionRef) {
        *self.current.lock() = version;
    }

    /// Resolves the current version to the last committed one now, after a writer
    /// did not complete.
    pub(crate) fn settle(&self) {
        drop(self.lock_current());
    }

    /// The task that left the datum's contents partly written, if any: only shared
    /// data, written in place, can be (a versioned datum keeps its last complete
    /// version, `data::version`, "Failed producers"). Reads are refused until a task
    /// writes it whole.
    pub(crate) fn poisoned_by(&self) -> Option<String> {
        self.shared.as_ref().and_then(|shared| shared.poisoned_by())
    }

    /// The version the next task binds to.
    pub(crate) fn current(&self) -> VersionRef {
        self.lock_current().clone()
    }
}

/// `len` elements of `elem_size` bytes, in bytes, or the error naming the datum.
fn checked_bytes(name: &str, len: usize, elem_size: usize) -> Result<usize, Error> {
    len.checked_mul(elem_size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::Size {
            data: name.to_string(),
            len,
            elem_size,
        })
}

/// Locks a mutex that no code path poisons while holding it.
pub(crate) use crate::sync::lock;

/// An optional value behind a mutex, with a flag saying whether it is set that readers
/// check first, without locking. Most data are never partitioned, attached or reduced,
/// and every task declaring them asks: for them the question costs one load instead of
/// a lock and an unlock. The flag is exact whenever the mutex is free: every change goes
/// through [`Flagged::lock`], whose guard updates the flag before it unlocks.
pub(crate) struct Flagged<T> {
    set: std::sync::atomic::AtomicBool,
    value: Mutex<Option<T>>,
}

impl<T> Flagged<T> {
    /// Unset.
    pub(crate) fn new() -> Self {
        Flagged {
            set: std::sync::atomic::AtomicBool::new(false),
            value: Mutex::new(None),
        }
    }

    /// Whether the value is set, without locking.
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// The value, to read or change.
    pub(crate) fn lock(&self) -> FlaggedGuard<'_, T> {
        FlaggedGuard {
            value: lock(&self.value),
            set: &self.set,
        }
    }

    /// A copy of the value, locking only when it is set.
    pub(crate) fn get(&self) -> Option<T>
    where
        T: Clone,
    {
        if self.is_set() {
            self.lock().clone()
        } else {
            None
        }
    }
}

impl<T> Default for Flagged<T> {
    fn default() -> Self {
        Flagged::new()
    }
}

/// The locked value of a [`Flagged`]; updates the flag when dropped.
pub(crate) struct FlaggedGuard<'a, T> {
    value: std::sync::MutexGuard<'a, Option<T>>,
    set: &'a std::sync::atomic::AtomicBool,
}

impl<T> std::ops::Deref for FlaggedGuard<'_, T> {
    type Target = Option<T>;

    fn deref(&self) -> &Option<T> {
        &self.value
    }
}

impl<T> std::ops::DerefMut for FlaggedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut Option<T> {
        &mut self.value
    }
}

impl<T> Drop for FlaggedGuard<'_, T> {
    fn drop(&mut self) {
        self.set.store(self.value.is_some(), Ordering::Release);
    }
}

/// A handle to a versioned logical array of `T`, managed by a [`Runtime`](crate::Runtime).
///
/// Handles are cheap to clone and can be moved into task bodies' surroundings freely:
/// they give no access to the contents. Contents are reached only through the views a
/// task body receives for the accesses it declared ([`Data::read`], [`Data::write`],
/// [`Data::read_write`]), and after a run through
/// [`Runtime::fetch`](crate::Runtime::fetch).
pub struct Data<T> {
    pub(crate) inner: Arc<DataInner>,
    _elem: PhantomData<fn() -> T>,
}

impl<T> Clone for Data<T> {
    fn clone(&self) -> Self {
        Data {
            inner: self.inner.clone(),
            _elem: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Data<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Data")
            .field("name", &self.inner.name)
            .field("len", &self.inner.len)
            .finish()
    }
}

impl<T: Element> Data<T> {
    pub(crate) fn from_inner(inner: Arc<DataInner>) -> Self {
        // Views are slices of `T` at multiples of its size from the start of a buffer
        // (`access.rs`): aligned only if `T` is no wider than a buffer's alignment, and
        // as long as the datum only if `T` has a size.
        const {
            assert!(
                std::mem::size_of::<T>() > 0
                    && std::mem::align_of::<T>() <= locus_mem::pool::BLOCK_ALIGN,
                "a Locus element type must have a non-zero size and an alignment of at \
                 most 64 bytes (`locus::Element`)"
            )
        };
        Data {
            inner,
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The handle's name, as shown in reports and errors.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Size of the whole array in bytes (saturated at `usize::MAX` for a datum too
    /// large to exist, which every task declaring it is refused).
    pub fn bytes(&self) -> usize {
        self.inner.bytes()
    }

    /// Declares a read of the whole array: the body gets `&[T]` of the version current
    /// at submission.
    pub fn read(&self) -> Read<T> {
        Read::new(self.inner.clone(), 0..self.inner.len)
    }

    /// Declares a read of the elements in `range` only: the body gets `&[T]` of that
    /// part, and only its bytes count as accessed. An out-of-bounds range is an error
    /// at submission.
    pub fn read_range(&self, range: Range<usize>) -> Read<T> {
        Read::new(self.inner.clone(), range)
    }

    /// Declares a write of the whole array: a new version whose contents the body must
    /// write entirely (the view's initial contents are unspecified).
    pub fn write(&self) -> Write<T> {
        Write::new(self.inner.clone())
    }

    /// Declares a read-write of the whole array: a new version that starts as a copy of
    /// the current one. If the task's body panics, the new version is never published:
    /// the datum keeps the contents it had before the task, whether the task updated
    /// the buffer in place or renamed it (for a versioned datum; a shared one is
    /// poisoned instead, [`Runtime::run`](crate::Runtime::run)).
    pub fn read_write(&self) -> ReadWrite<T> {
        ReadWrite::new(self.inner.clone())
    }

    /// Declares a contribution to a reduction ([`Reduce`]): the body gets `&mut [T]`, a
    /// private copy of the datum on its worker's node, set to `identity` (element by
    /// element) when made, into which it accumulates with `combine`, which must be
    /// commutative and associative. Reducing tasks never wait for each other, nor for
    /// the datum's previous writer; the next other access to the datum (or a fetch)
    /// sees the previous contents combined with every contribution, node-local copies
    /// first, then nodes in order of distance. `docs/guide.md`, "Reductions", states
    /// the semantics.
    ///
    /// ```
    /// use locus::Runtime;
    /// let rt = Runtime::builder().build()?;
    /// let total = rt.data_from("total", &[100u64])?;
    /// rt.run(|s| {
    ///     for k in 1..=10u64 {
    ///         s.spawn("add", total.reduce(0, |a, b| *a += b), move |_, t| t[0] += k)
    ///             .unwrap();
    ///     }
    /// })?;
    /// assert_eq!(rt.fetch(&total)?, vec![155]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reduce(&self, identity: T, combine: fn(&mut T, &T)) -> Reduce<T> {
        Reduce::new(self.inner.clone(), identity, combine)
    }

    /// Declares a weak read ([`Weak`]): the task's children may read the datum.
    pub fn weak_read(&self) -> Weak {
        Weak::new(self.inner.clone(), Mode::Read)
    }

    /// Declares a weak write ([`Weak`]): the task's children may write the datum (and
    /// read what earlier children wrote); its successors see the last child's write.
    pub fn weak_write(&self) -> Weak {
        Weak::new(self.inner.clone(), Mode::Write)
    }

    /// Declares a weak read-write ([`Weak`]): the task's children may read and write
    /// the datum, starting from its current contents.
    pub fn weak_read_write(&self) -> Weak {
        Weak::new(self.inner.clone(), Mode::ReadWrite)
    }
}

#[cfg(test)]
mod tests {
    use super::{DataInner, Flagged};

    #[test]
    fn a_datums_hot_state_fits_in_two_cache_lines() {
        // Its identity, sizes, current version and shared buffer; the extras are
        // behind one pointer.
        let size = std::mem::size_of::<DataInner>();
        assert!(size <= 128, "DataInner takes {size} bytes");
    }

    #[test]
    fn a_flagged_value_is_seen_set_exactly_while_it_is() {
        let f: Flagged<u32> = Flagged::new();
        assert!(!f.is_set());
        assert_eq!(f.get(), None);
        *f.lock() = Some(7);
        assert!(f.is_set());
        assert_eq!(f.get(), Some(7));
        // Taken under the lock: unset once the guard is gone.
        assert_eq!(f.lock().take(), Some(7));
        assert!(!f.is_set());
        assert_eq!(f.get(), None);
        // A guard that changes nothing leaves the flag as it was.
        *f.lock() = Some(1);
        drop(f.lock());
        assert!(f.is_set());
        f.lock().get_or_insert(2);
        assert_eq!(f.get(), Some(1));
    }
}
