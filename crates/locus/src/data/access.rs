//! Access declarations and the views a task body receives for them.
//!
//! A task declares its accesses as an [`AccessList`]: one access ([`Read`], [`Write`],
//! [`ReadWrite`]), a tuple of them, or a dynamic list of one kind (`Option`, `Vec`,
//! array). The body then receives
//! exactly one view per declared access, with the same shape: `&[T]` for a read,
//! `&mut [T]` for a write or read-write. It has no other way to reach data contents, and
//! the runtime binds every write to a fresh version, so safe code cannot race on data.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use locus_mem::pool::Block;

use super::handle::{DataInner, Element};
use super::partition::Piece;
use super::reduce::{Reduce, ReduceBinding, Reducer};
use super::shared::SharedBuffer;
use super::version::VersionRef;

/// How a task accesses one datum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Read,
    Write,
    ReadWrite,
    /// A contribution to a reduction (module `reduce`): neither reads nor writes the
    /// datum's versions.
    Reduce,
}

impl Mode {
    pub(crate) fn reads(self) -> bool {
        matches!(self, Mode::Read | Mode::ReadWrite)
    }

    pub(crate) fn writes(self) -> bool {
        matches!(self, Mode::Write | Mode::ReadWrite)
    }

    /// Whether no other access of the same task may name the datum.
    pub(crate) fn exclusive(self) -> bool {
        matches!(self, Mode::Write | Mode::ReadWrite | Mode::Reduce)
    }
}

/// One declared access, as the submission sees it (opaque outside the crate).
#[doc(hidden)]
pub struct Declared {
    pub(crate) data: Arc<DataInner>,
    pub(crate) mode: Mode,
    /// A weak access: handed to the task's children only (see [`Weak`]).
    pub(crate) weak: bool,
    /// Element range; the whole array for writes.
    pub(crate) range: Range<usize>,
    /// A reduction's identity and combine function.
    pub(crate) reducer: Option<Arc<Reducer>>,
}

/// A task's declared accesses, inline for a task of one access (opaque outside the
/// crate).
#[doc(hidden)]
pub type Declarations = smallvec::SmallVec<[Declared; 1]>;

/// A task's bindings, inline for a task of one access. One, not more: the bindings
/// move with the task record (into it, out to the worker, to completion), and a
/// larger inline array costs every task, those of no access too, more copying than
/// the allocation it saves (instructions per task under callgrind, `benches/tasks.rs`).
pub(crate) type Bindings = smallvec::SmallVec<[Binding; 1]>;

/// One access bound to versions at submission (opaque outside the crate): what every
/// access has, and what its kind holds ([`Kind`]).
#[doc(hidden)]
pub struct Binding {
    /// The datum (moved from the declaration).
    pub(crate) data: Arc<DataInner>,
    pub(crate) mode: Mode,
    /// A weak access: the task neither waits for it nor sees it; its children do.
    pub(crate) weak: bool,
    /// For a read-write of versioned data that continued its output, the version its
    /// datum had (`data::version`, "Chains of read-writes"): its turn among the
    /// version's writers, from 1; it then has no input, and waits for the writer
    /// before it. 0 for every other access.
    pub(crate) turn: u32,
    /// First byte of the accessed part.
    pub(crate) offset: usize,
    /// Bytes accessed.
    pub(crate) bytes: usize,
    /// What the access holds, by kind.
    pub(crate) kind: Kind,
}

/// What a binding holds, by the kind of its access: each step of a task's life
/// (register, prepare, release) is one `match` on it. A kind is bound, and released,
/// beside its data (modules `version`, `shared`, `reduce`; a gathered view is filled
/// and scattered by module `partition`).
pub(crate) enum Kind {
    /// Versioned data (module `version`): a version read and/or a version written.
    Versioned(Versions),
    /// Shared data, updated in place (module `shared`): its versions, and for a write
    /// the version it supersedes, whose writer and readers the task waits for.
    Shared(Versions, Option<VersionRef>),
    /// A reduction (module `reduce`): its group, and the private copy the body
    /// accumulates into.
    Reduction(Box<ReduceBinding>),
    /// An access to partitioned data covering several segments (module `partition`):
    /// the segments' own bindings, and the buffer the view is gathered in.
    Gathered(Box<Gather>),
}

/// The versions an access to versioned or shared data is bound to.
pub(crate) struct Versions {
    /// The version read (reads and read-writes; for a weak write, the version it
    /// supersedes, which its children start from).
    pub(crate) input: Option<VersionRef>,
    /// The version written (writes and read-writes).
    pub(crate) output: Option<VersionRef>,
}

/// The bindings of an access gathered from several segments, and its view's buffer.
pub(crate) struct Gather {
    /// One binding per segment covered.
    pub(crate) leaves: Vec<Binding>,
    /// Per leaf, the pieces of the view it holds.
    pub(crate) pieces: Vec<Vec<Piece>>,
    /// The view's buffer, on the executing node, made right before the body runs.
    pub(crate) block: OnceLock<Block>,
}

/// The memory of one view of a replayed task (`graph::replay`): its first byte and its
/// length in bytes. A recorded graph resolves its accesses to buffers once, so a
/// replayed body's views are built from these, with no binding (opaque outside the
/// crate).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct RawView {
    pub(crate) ptr: *mut u8,
    pub(crate) bytes: usize,
}

fn next_raw(raw: &mut std::slice::Iter<'_, RawView>) -> RawView {
    *raw.next()
        .expect("one raw view per declared access (runtime invariant)")
}

/// A read view over `raw`'s next memory.
///
/// # Safety
///
/// As [`AccessList::raw_views`].
unsafe fn raw_read<'a, T: Element>(raw: &mut std::slice::Iter<'a, RawView>) -> &'a [T] {
    let v = next_raw(raw);
    // SAFETY: the caller guarantees the memory holds `bytes` initialised bytes aligned
    // for `T` (pool blocks are 64-byte aligned, shared buffers page-aligned, offsets are
    // multiples of the element size) that nobody writes during `'a`; `T: Pod`, not
    // zero-sized (checked when its handle was made).
    unsafe { std::slice::from_raw_parts(v.ptr.cast::<T>(), v.bytes / std::mem::size_of::<T>()) }
}

/// A mutable view over `raw`'s next memory.
///
/// # Safety
///
/// As [`AccessList::raw_views`]: nobody else touches the memory during `'a`.
unsafe fn raw_write<'a, T: Element>(raw: &mut std::slice::Iter<'a, RawView>) -> &'a mut [T] {
    let v = next_raw(raw);
    // SAFETY: as `raw_read`, and the caller guarantees exclusive use for `'a`.
    unsafe { std::slice::from_raw_parts_mut(v.ptr.cast::<T>(), v.bytes / std::mem::size_of::<T>()) }
}

impl Binding {
    /// The bindings to versions this access stands for: itself, or for a gathered
    /// access the bindings of the segments it covers.
    pub(crate) fn leaves(&self) -> std::slice::Iter<'_, Binding> {
        match &self.kind {
            Kind::Gathered(g) => g.leaves.iter(),
            _ => std::slice::from_ref(self).iter(),
        }
    }

    /// As [`leaves`](Self::leaves), mutably.
    pub(crate) fn leaves_mut(&mut self) -> std::slice::IterMut<'_, Binding> {
        if !matches!(self.kind, Kind::Gathered(_)) {
            return std::slice::from_mut(self).iter_mut();
        }
        match &mut self.kind {
            Kind::Gathered(g) => g.leaves.iter_mut(),
            _ => unreachable!("checked above"),
        }
    }

    /// The versions of an access to versioned or shared data.
    #[inline]
    pub(crate) fn versions(&self) -> Option<&Versions> {
        match &self.kind {
            Kind::Versioned(v) | Kind::Shared(v, _) => Some(v),
            Kind::Reduction(_) | Kind::Gathered(_) => None,
        }
    }

    /// The version the access reads, as bound (see [`read`](Self::read)).
    #[inline]
    pub(crate) fn input(&self) -> Option<&VersionRef> {
        self.versions().and_then(|v| v.input.as_ref())
    }

    /// The version the access writes.
    #[inline]
    pub(crate) fn output(&self) -> Option<&VersionRef> {
        self.versions().and_then(|v| v.output.as_ref())
    }

    /// Lets the binding's versions go (output first), keeping what a shared write
    /// follows.
    #[inline]
    pub(crate) fn drop_versions(&mut self) {
        if let Kind::Versioned(v) | Kind::Shared(v, _) = &mut self.kind {
            drop(v.output.take());
            drop(v.input.take());
        }
    }

    /// Start of the view's memory: the gathered buffer, or the input's (`output`:
    /// the output's) buffer at the access's offset. Dangling (aligned for `T`) for an
    /// empty gathered view.
    fn view_ptr<T>(&self, output: bool) -> *mut u8 {
        let versions = match &self.kind {
            Kind::Reduction(r) => return r.view_ptr::<T>(),
            Kind::Gathered(g) => {
                return match g.block.get() {
                    Some(block) if self.bytes > 0 => block.as_mut_ptr(),
                    _ => std::ptr::NonNull::<T>::dangling().as_ptr().cast(),
                }
            }
            Kind::Versioned(v) | Kind::Shared(v, _) => v,
        };
        let version = if output {
            &versions.output
        } else {
            &versions.input
        };
        let block = version
            .as_ref()
            .and_then(|v| v.buffer())
            .expect("a bound version has a buffer when the body runs (runtime invariant)");
        // SAFETY: the buffer holds at least `offset + bytes` bytes (a version of the
        // datum the range was validated against).
        unsafe { block.as_mut_ptr().add(self.offset) }
    }
    /// The dependences the task registers for this access: the version it reads, and
    /// for an in-place write the previous writer (unless read already) and its readers.
    pub(crate) fn dependences(&self) -> usize {
        if self.waits_for_nothing() {
            return 0;
        }
        match &self.kind {
            Kind::Versioned(v) => usize::from(v.input.is_some() || self.turn > 0),
            Kind::Shared(v, after) => {
                usize::from(v.input.is_some())
                    + after
                        .as_ref()
                        .map_or(0, |_| 1 + usize::from(self.mode == Mode::Write))
            }
            Kind::Reduction(_) | Kind::Gathered(_) => 0,
        }
    }

    /// Whether the binding is a strong access of versioned data, neither gathered nor a
    /// reduction: one leaf, reading its input and/or writing its output.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        matches!((&self.kind, self.weak), (Kind::Versioned(_), false))
    }

    /// Whether the task registers no dependence for this access: a weak access to
    /// versioned data. (A weak access to shared data, updated in place, still orders
    /// the task after the previous writer and its readers, as a strong one does: its
    /// successors may write in place once it is complete.)
    pub(crate) fn waits_for_nothing(&self) -> bool {
        self.weak && self.data.shared.is_none()
    }

    /// The version the access reads: its input, or, for a read-write that took over
    /// its input's buffer (`Version::take_over`), its output.
    pub(crate) fn read(&self) -> Option<&VersionRef> {
        let v = self.versions()?;
        match (&v.input, self.mode) {
            (None, Mode::ReadWrite) => v.output.as_ref(),
            (input, _) => input.as_ref(),
        }
    }

    /// The shared buffer the access names, for shared data.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedBuffer>> {
        let Kind::Shared(v, _) = &self.kind else {
            return None;
        };
        v.input
            .as_ref()
            .or(v.output.as_ref())
            .and_then(|v| v.buffer())
            .and_then(|b| b.shared())
    }
}

/// A declared read of (part of) a datum; the body's view is `&[T]`.
pub struct Read<T> {
    /// Until declared: the declaration takes it (`AccessList::declare`).
    data: Option<Arc<DataInner>>,
    range: Range<usize>,
    _elem: PhantomData<fn() -> T>,
}

/// A declared write of a whole datum; the body's view is `&mut [T]` over a new version
/// whose initial contents are unspecified.
pub struct Write<T> {
    /// Until declared: the declaration takes it (`AccessList::declare`).
    data: Option<Arc<DataInner>>,
    _elem: PhantomData<fn() -> T>,
}

/// A declared read-write of a whole datum; the body's view is `&mut [T]` over a new
/// version that starts as a copy of the current one.
pub struct ReadWrite<T> {
    /// Until declared: the declaration takes it (`AccessList::declare`).
    data: Option<Arc<DataInner>>,
    _elem: PhantomData<fn() -> T>,
}

impl<T> Read<T> {
    pub(crate) fn new(data: Arc<DataInner>, range: Range<usize>) -> Self {
        Read {
            data: Some(data),
            range,
            _elem: PhantomData,
        }
    }
}

impl<T> Write<T> {
    pub(crate) fn new(data: Arc<DataInner>) -> Self {
        Write {
            data: Some(data),
            _elem: PhantomData,
        }
    }
}

impl<T> ReadWrite<T> {
    pub(crate) fn new(data: Arc<DataInner>) -> Self {
        ReadWrite {
            data: Some(data),
            _elem: PhantomData,
        }
    }
}

/// A *weak* access to a datum ([`Data::weak_read`](crate::Data::weak_read),
/// [`weak_write`](crate::Data::weak_write),
/// [`weak_read_write`](crate::Data::weak_read_write)): the task only hands it to the
/// children it spawns. The task neither waits for the datum's writers nor sees the
/// datum (its view is `()`); its children may access the datum as the weak access
/// allows, and wait for what they need; the task's successors wait for the
/// children's accesses. This is how a task that only spawns children declares what
/// they touch (OmpSs-2's weak accesses).
pub struct Weak {
    /// Until declared: the declaration takes it (`AccessList::declare`).
    data: Option<Arc<DataInner>>,
    mode: Mode,
}

impl Weak {
    pub(crate) fn new(data: Arc<DataInner>, mode: Mode) -> Self {
        Weak {
            data: Some(data),
            mode,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The accesses a task declares, and the shape of the views its body receives.
///
/// Implemented for [`Read`], [`Write`], [`ReadWrite`], [`Weak`], `()` (no data), tuples
/// of up to eight access lists, and, for lists whose length is known only at run time,
/// `Option<A>` (views `Option<A::Views>`: `None` declares nothing), `Vec<A>` (views
/// `Vec<A::Views>`, one per element, in order) and arrays `[A; N]` of one access list
/// type `A`. A datum may appear twice only if no access writes it, whatever the shape
/// of the list. The trait is sealed: the
/// runtime relies on its implementations to hand out views that match what was
/// declared.
pub trait AccessList: sealed::Sealed + Send + 'static {
    /// The views the body receives, borrowed for the duration of the body.
    type Views<'a>;

    /// Appends this list's accesses, in order.
    #[doc(hidden)]
    fn declare(&mut self, out: &mut Declarations);

    /// How many accesses [`declare`](Self::declare) appends, so that the list is made
    /// with room for them all at once.
    #[doc(hidden)]
    fn count(&self) -> usize;

    /// What [`views`](Self::views) needs of the list once it is declared: nothing for
    /// one access or a tuple of them (so a body capturing nothing stays zero-sized and
    /// is not allocated), the lengths of the lists of a length known at run time, and a
    /// recorded task's list itself (it names each access's mode).
    #[doc(hidden)]
    type Shape: Send + 'static;

    /// The list's [`Shape`](Self::Shape), the list itself given up once it is declared.
    #[doc(hidden)]
    fn into_shape(self) -> Self::Shape;

    /// Builds the views from the bindings, consuming one binding per access in the
    /// order of [`declare`](Self::declare); `shape` is the declared list's.
    ///
    /// # Safety
    ///
    /// The bindings must be the ones the runtime made from this list's declarations, in
    /// order, with every buffer they name allocated and at least as large as the
    /// binding's range; for the lifetime `'a` no other thread may access the buffers
    /// of written versions, and nobody may write the buffers of read versions.
    #[doc(hidden)]
    unsafe fn views<'a>(
        shape: &Self::Shape,
        bindings: &mut std::slice::Iter<'a, Binding>,
    ) -> Self::Views<'a>;

    /// Builds the views of a replayed task (`graph::replay`) from the memory of each
    /// access, consuming one raw view per access in the order of
    /// [`declare`](Self::declare) (a weak access, which a recording refuses, consumes
    /// none).
    ///
    /// # Safety
    ///
    /// The raw views must be made by the recorded graph from this list's declarations,
    /// in order: each covers initialised memory of at least its length, aligned for the
    /// element type; for the lifetime `'a` no other thread may access the memory of
    /// written views, and nobody may write the memory of read views.
    #[doc(hidden)]
    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> Self::Views<'a>;
}

/// The declarations of `accesses`, made with room for all of them at once.
#[inline]
pub(crate) fn declarations<L: AccessList>(accesses: &mut L) -> Declarations {
    let mut out: Declarations = super::spill::list_for(accesses.count());
    accesses.declare(&mut out);
    debug_assert_eq!(out.len(), accesses.count(), "AccessList::count");
    out
}

impl<T: Element> sealed::Sealed for Read<T> {}
impl<T: Element> sealed::Sealed for Write<T> {}
impl<T: Element> sealed::Sealed for ReadWrite<T> {}

/// The datum of an access being declared: its count moves to the declaration, and on
/// to the task's binding, so that a task costs one count of its datum (taken when the
/// access is made) and not one more per step.
fn take_data(data: &mut Option<Arc<DataInner>>) -> Arc<DataInner> {
    data.take()
        .expect("an access is declared once, by the submission it is given to")
}

fn next_binding<'a>(bindings: &mut std::slice::Iter<'a, Binding>) -> &'a Binding {
    bindings
        .next()
        .expect("one binding per declared access (runtime invariant)")
}

impl<T: Element> AccessList for Read<T> {
    type Views<'a> = &'a [T];

    fn declare(&mut self, out: &mut Declarations) {
        out.push(Declared {
            data: take_data(&mut self.data),
            mode: Mode::Read,
            weak: false,
            range: self.range.clone(),
            reducer: None,
        });
    }

    fn count(&self) -> usize {
        1
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), bindings: &mut std::slice::Iter<'a, Binding>) -> &'a [T] {
        let b = next_binding(bindings);
        // SAFETY: (1) the caller guarantees the buffer is allocated, holds at least
        // `offset + bytes` bytes, and is not written while `'a` lasts (for shared data,
        // the writer superseding this version waits for this task; a gathered view's
        // buffer is the task's own); (2) pool blocks are 64-byte aligned, shared
        // buffers page-aligned, and `offset` is a multiple of `size_of::<T>()`, so the
        // pointer is aligned for `T`, which is no wider than 64 bytes and not zero-sized
        // (checked when its handle was made, `Data::from_inner`); (3) the memory is always initialised (fresh
        // mappings are zero-filled, recycled blocks hold earlier bytes) and `T: Pod`
        // accepts any bytes.
        unsafe {
            std::slice::from_raw_parts(
                b.view_ptr::<T>(false).cast::<T>(),
                b.bytes / std::mem::size_of::<T>().max(1),
            )
        }
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> &'a [T] {
        // SAFETY: forwarded from the caller.
        unsafe { raw_read(raw) }
    }
}

/// Builds the mutable view of a binding's output version. The view is mutable though
/// the binding is shared: the buffer is not the binding's memory, and its exclusive use
/// is what the caller guarantees.
///
/// # Safety
///
/// As [`AccessList::views`]: the output buffer is allocated, large enough, and no other
/// thread touches it during `'a`.
#[allow(clippy::mut_from_ref)]
unsafe fn output_view<T: Element>(b: &Binding) -> &mut [T] {
    // SAFETY: (1) the caller guarantees exclusive access to the output buffer for `'a`:
    // the version is not produced yet, so no reader has been released, and its producer
    // is the only task bound to write it; for shared data, whose versions share one
    // buffer, the producer also waited for the previous writer and for every reader of
    // the previous version, and a task declares a datum only once when it writes it
    // (a segment of partitioned data too); a gathered view's buffer is the task's own;
    // (2) alignment and initialisation as for reads.
    unsafe {
        std::slice::from_raw_parts_mut(
            b.view_ptr::<T>(true).cast::<T>(),
            b.bytes / std::mem::size_of::<T>().max(1),
        )
    }
}

impl<T: Element> AccessList for Write<T> {
    type Views<'a> = &'a mut [T];

    fn declare(&mut self, out: &mut Declarations) {
        let data = take_data(&mut self.data);
        out.push(Declared {
            range: 0..data.len,
            data,
            mode: Mode::Write,
            weak: false,
            reducer: None,
        });
    }

    fn count(&self) -> usize {
        1
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), bindings: &mut std::slice::Iter<'a, Binding>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller.
        unsafe { output_view(next_binding(bindings)) }
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller.
        unsafe { raw_write(raw) }
    }
}

impl<T: Element> AccessList for ReadWrite<T> {
    type Views<'a> = &'a mut [T];

    fn declare(&mut self, out: &mut Declarations) {
        let data = take_data(&mut self.data);
        out.push(Declared {
            range: 0..data.len,
            data,
            mode: Mode::ReadWrite,
            weak: false,
            reducer: None,
        });
    }

    fn count(&self) -> usize {
        1
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), bindings: &mut std::slice::Iter<'a, Binding>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller.
        unsafe { output_view(next_binding(bindings)) }
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller.
        unsafe { raw_write(raw) }
    }
}

impl<T: Element> sealed::Sealed for Reduce<T> {}

impl<T: Element> AccessList for Reduce<T> {
    type Views<'a> = &'a mut [T];

    fn declare(&mut self, out: &mut Declarations) {
        out.push(Declared {
            data: self.data.clone(),
            mode: Mode::Reduce,
            weak: false,
            range: 0..self.data.len,
            reducer: Some(self.reducer.clone()),
        });
    }

    fn count(&self) -> usize {
        1
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), bindings: &mut std::slice::Iter<'a, Binding>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller; the view is the task's private copy,
        // which no other task holds while the body runs (module `reduce`).
        unsafe { output_view(next_binding(bindings)) }
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> &'a mut [T] {
        // SAFETY: forwarded from the caller.
        unsafe { raw_write(raw) }
    }
}

impl sealed::Sealed for Weak {}

impl AccessList for Weak {
    type Views<'a> = ();

    fn declare(&mut self, out: &mut Declarations) {
        let data = take_data(&mut self.data);
        out.push(Declared {
            range: 0..data.len,
            data,
            mode: self.mode,
            weak: true,
            reducer: None,
        });
    }

    fn count(&self) -> usize {
        1
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), bindings: &mut std::slice::Iter<'a, Binding>) {
        // The task sees nothing of a weak access: its binding is skipped.
        next_binding(bindings);
    }

    unsafe fn raw_views<'a>(&self, _raw: &mut std::slice::Iter<'a, RawView>) {}
}

/// A recorded task's accesses submitted again through the dynamic path, whose body
/// gets raw views (a replay on an engine other than `threads`, module `graph::replay`).
#[derive(Clone)]
pub(crate) struct RecordedList(pub(crate) Vec<(Arc<DataInner>, Mode, Range<usize>)>);

impl sealed::Sealed for RecordedList {}

impl AccessList for RecordedList {
    type Views<'a> = Vec<RawView>;

    fn declare(&mut self, out: &mut Declarations) {
        for (data, mode, range) in &self.0 {
            out.push(Declared {
                data: data.clone(),
                mode: *mode,
                weak: false,
                range: range.clone(),
                reducer: None,
            });
        }
    }

    fn count(&self) -> usize {
        self.0.len()
    }

    type Shape = Self;

    fn into_shape(self) -> Self {
        self
    }

    unsafe fn views<'a>(list: &Self, bindings: &mut std::slice::Iter<'a, Binding>) -> Vec<RawView> {
        list.0
            .iter()
            .map(|(_, mode, _)| {
                let b = next_binding(bindings);
                RawView {
                    // A recorded datum is neither partitioned nor reduced: the view is
                    // the version's buffer at the access's offset.
                    ptr: b.view_ptr::<u8>(mode.writes()),
                    bytes: b.bytes,
                }
            })
            .collect()
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> Vec<RawView> {
        self.0.iter().map(|_| next_raw(raw)).collect()
    }
}

impl sealed::Sealed for () {}

impl AccessList for () {
    type Views<'a> = ();

    fn declare(&mut self, _out: &mut Declarations) {}

    fn count(&self) -> usize {
        0
    }

    type Shape = ();

    fn into_shape(self) {}

    unsafe fn views<'a>(_: &(), _bindings: &mut std::slice::Iter<'a, Binding>) {}

    unsafe fn raw_views<'a>(&self, _raw: &mut std::slice::Iter<'a, RawView>) {}
}

impl<A: AccessList> sealed::Sealed for Vec<A> {}

impl<A: AccessList> AccessList for Vec<A> {
    type Views<'a> = Vec<A::Views<'a>>;

    fn declare(&mut self, out: &mut Declarations) {
        for a in self {
            a.declare(out);
        }
    }

    fn count(&self) -> usize {
        self.iter().map(AccessList::count).sum()
    }

    type Shape = Vec<A::Shape>;

    fn into_shape(self) -> Self::Shape {
        self.into_iter().map(AccessList::into_shape).collect()
    }

    unsafe fn views<'a>(
        shape: &Self::Shape,
        bindings: &mut std::slice::Iter<'a, Binding>,
    ) -> Self::Views<'a> {
        shape
            .iter()
            // SAFETY: forwarded from the caller, element by element in declaration order.
            .map(|a| unsafe { A::views(a, bindings) })
            .collect()
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> Self::Views<'a> {
        self.iter()
            // SAFETY: forwarded from the caller, element by element in declaration order.
            .map(|a| unsafe { a.raw_views(raw) })
            .collect()
    }
}

impl<A: AccessList> sealed::Sealed for Option<A> {}

/// An access that may be absent: `None` declares nothing (no dependence, no bytes) and
/// its view is `None`; `Some(a)` declares `a` and its view is `Some(view of a)`. This is
/// how a stencil's edge block declares the neighbour it does not have.
impl<A: AccessList> AccessList for Option<A> {
    type Views<'a> = Option<A::Views<'a>>;

    fn declare(&mut self, out: &mut Declarations) {
        if let Some(a) = self {
            a.declare(out);
        }
    }

    fn count(&self) -> usize {
        self.as_ref().map_or(0, AccessList::count)
    }

    type Shape = Option<A::Shape>;

    fn into_shape(self) -> Self::Shape {
        self.map(AccessList::into_shape)
    }

    unsafe fn views<'a>(
        shape: &Self::Shape,
        bindings: &mut std::slice::Iter<'a, Binding>,
    ) -> Self::Views<'a> {
        // SAFETY: forwarded from the caller; `None` declared nothing and consumes nothing.
        shape.as_ref().map(|a| unsafe { A::views(a, bindings) })
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> Self::Views<'a> {
        // SAFETY: forwarded from the caller; `None` declared nothing and consumes nothing.
        self.as_ref().map(|a| unsafe { a.raw_views(raw) })
    }
}

impl<A: AccessList, const N: usize> sealed::Sealed for [A; N] {}

/// A fixed number of accesses of one type; the views arrive as an array of as many.
impl<A: AccessList, const N: usize> AccessList for [A; N] {
    type Views<'a> = [A::Views<'a>; N];

    fn declare(&mut self, out: &mut Declarations) {
        for a in self {
            a.declare(out);
        }
    }

    fn count(&self) -> usize {
        self.iter().map(AccessList::count).sum()
    }

    type Shape = [A::Shape; N];

    fn into_shape(self) -> Self::Shape {
        self.map(AccessList::into_shape)
    }

    unsafe fn views<'a>(
        shape: &Self::Shape,
        bindings: &mut std::slice::Iter<'a, Binding>,
    ) -> Self::Views<'a> {
        let views: Vec<A::Views<'a>> = shape
            .iter()
            // SAFETY: forwarded from the caller, element by element in declaration order.
            .map(|a| unsafe { A::views(a, bindings) })
            .collect();
        match views.try_into() {
            Ok(array) => array,
            Err(_) => unreachable!("one view per element of the array"),
        }
    }

    unsafe fn raw_views<'a>(&self, raw: &mut std::slice::Iter<'a, RawView>) -> Self::Views<'a> {
        let views: Vec<A::Views<'a>> = self
            .iter()
            // SAFETY: forwarded from the caller, element by element in declaration order.
            .map(|a| unsafe { a.raw_views(raw) })
            .collect();
        match views.try_into() {
            Ok(array) => array,
            Err(_) => unreachable!("one view per element of the array"),
        }
    }
}

macro_rules! tuple_access_list {
    ($($name:ident),+) => {
        impl<$($name: AccessList),+> sealed::Sealed for ($($name,)+) {}

        impl<$($name: AccessList),+> AccessList for ($($name,)+) {
            type Views<'a> = ($($name::Views<'a>,)+);

            #[allow(non_snake_case)]
            fn declare(&mut self, out: &mut Declarations) {
                let ($($name,)+) = self;
                $($name.declare(out);)+
            }

            #[allow(non_snake_case)]
            fn count(&self) -> usize {
                let ($($name,)+) = self;
                0 $(+ $name.count())+
            }

            type Shape = ($($name::Shape,)+);

            #[allow(non_snake_case)]
            fn into_shape(self) -> Self::Shape {
                let ($($name,)+) = self;
                ($($name.into_shape(),)+)
            }

            #[allow(non_snake_case)]
            unsafe fn views<'a>(
                shape: &Self::Shape,
                bindings: &mut std::slice::Iter<'a, Binding>,
            ) -> Self::Views<'a> {
                let ($($name,)+) = shape;
                // SAFETY: forwarded from the caller, element by element in declaration
                // order (tuple fields are evaluated left to right).
                unsafe { ($($name::views($name, bindings),)+) }
            }

            #[allow(non_snake_case)]
            unsafe fn raw_views<'a>(
                &self,
                raw: &mut std::slice::Iter<'a, RawView>,
            ) -> Self::Views<'a> {
                let ($($name,)+) = self;
                // SAFETY: forwarded from the caller, element by element in declaration
                // order (tuple fields are evaluated left to right).
                unsafe { ($($name.raw_views(raw),)+) }
            }
        }
    };
}

tuple_access_list!(A);
tuple_access_list!(A, B);
tuple_access_list!(A, B, C);
tuple_access_list!(A, B, C, D);
tuple_access_list!(A, B, C, D, E);
tuple_access_list!(A, B, C, D, E, F);
tuple_access_list!(A, B, C, D, E, F, G);
tuple_access_list!(A, B, C, D, E, F, G, H);
