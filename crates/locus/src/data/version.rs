//! Versions: the single-assignment instances of a datum, and the readiness of their
//! readers.
//!
//! A version is created by the submission of a task that writes its datum (its
//! *producer*) and is *produced* when that task finishes. Tasks that read it before then
//! wait in its list of waiters; the producer's completion hands them back to the engine.
//! Its buffer is allocated either at submission (immediate allocation) or by the
//! producer's worker right before the body runs (deferred allocation), and returns to its
//! node's pool when the last [`VersionRef`] to it is dropped.
//!
//! Every version of a shared datum names the datum's one buffer instead; readers are
//! then counted, so that the next writer can wait for them (write after read).
//!
//! # Failed producers
//!
//! A pending version of versioned data keeps the version it superseded (its
//! *fallback*) until its producer completes: a write's version holds it from its
//! submission; a read-write's binding holds it as its input, and the producer hands it
//! to the version as it publishes it ([`Version::hand_input`]), so that one count
//! serves both. If the producer's body ran to its end, the
//! version is *committed* and lets the fallback go; if it panicked, or never ran because
//! its run had failed, the version is *abandoned*: it is still published (so that the
//! failed run drains), but the datum resolves to its last committed version the next
//! time it is bound or fetched ([`Version::committed`]). A failed run thus leaves every
//! versioned datum with its last complete contents; the cost is that a superseded
//! version lives until its successor's producer finishes.
//!
//! # Update in place
//!
//! A read-write whose input version nobody else holds any more (no reader pending, no
//! later task bound to it: the input is superseded by the task's own output, so no task
//! can bind to it again) takes over the input's buffer instead of copying it into a new
//! one ([`Version::take_over`]): the datum's memory is updated in place, as in the
//! classic shared-memory model. Under deferred allocation the buffer must already be on
//! the executing worker's node, so that the new version is where its producer runs (the
//! purpose of deferred allocation); otherwise the task renames, copying the contents to
//! its own node. Under immediate allocation buffers are placed on the submitting
//! worker's node, whoever runs the task: a read-write's buffer is not made at
//! submission but at execution, where it takes over its input's wherever that lies,
//! or else is made on the submitting worker's node as immediate allocation places it.
//!
//! The superseded version then holds nothing, so a producer updating in place has no
//! fallback version. Its worker copies the buffer's contents before the body runs
//! (`graph::exec`, `Backups`): if the body completes, the copy goes back to its pool;
//! if it fails (panics, or a C body returns non-zero), the copy is put back before
//! the version is published. If the body never ran, the buffer holds the previous
//! contents untouched. Either way the abandoned version then stands for the previous
//! contents, as a renamed producer's fallback does: whether a read-write ran in place
//! or renamed (which depends on scheduling) never changes what a failure leaves. The
//! cost is the copy a renaming read-write makes anyway: a copy of the datum per
//! in-place update, inline for 64 bytes or less, else into a block of the pool (an
//! allocation); what in place still saves is where the buffer lies. A gathered view (`data::partition`) is a copy of its own, scattered into the
//! segments only once the body has returned, so a segment it updates in place needs
//! no copy.
//!
//! # Chains of read-writes
//!
//! A read-write bound to a datum whose current version is still pending, held by
//! nobody but the datum and the tasks bound to write it (no reader, no fetch, no
//! children's version standing for it), has no reader to rename for: it *continues*
//! that version ([`Version::continue_chain`]) instead of making one. It takes the next
//! turn among the version's writers (its producer's is the first), waits for the
//! writer before it (`Version::add_next_writer`), updates the buffer that writer left
//! in place (with the copy of "Update in place" kept for a failure), and hands the
//! version to the next writer when it finishes, or publishes it if none continued it
//! ([`Version::publish`]). So a chain of read-writes on one datum, the task of
//! accumulations and of OpenMP's `inout` dependences, makes, publishes and frees one
//! version, not one per task. Under deferred allocation a writer running on another
//! node than the buffer moves it to its own node first, as a renaming read-write
//! would: the version is where its last writer ran. Only a strong write or
//! read-write's version can be continued (a weak write's stands for its children's),
//! and a writer whose body spawned children that wrote the datum copies their last
//! version into the buffer rather than forwarding to it, when a writer continues
//! after it ([`Version::forward_to`]).
//!
//! What a failure leaves is the same: a writer that did not complete marks the chain
//! failed; the version, once its last writer finishes, is abandoned, and stands for
//! what the failed writer found (its buffer put back in place, or its fallback), the
//! run having failed so that no later writer of the chain ran its body.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use locus_mem::pool::Block;

use super::access::{Binding, Declared, Kind, Mode, Versions};
use super::counts::Readers;
pub(crate) use super::counts::{CountsLease, VersionCounts};
use super::shared::SharedBuffer;
use crate::config::AllocMode;
use crate::error::Error;
use crate::graph::{oom, Backups, Bodies, Executor, RunState, Task, Waiting};

/// A shared reference to a version: a reference count without a weak count, so that
/// [`Version::take_over`]'s check that nobody else holds one is a load (no `Weak` of a
/// version is ever made).
///
/// The last reference, dropped where a load sees it alone, drops the version and keeps
/// its allocation as a spare of the dropping thread (module `spare`), for the next
/// version that thread makes, without an atomic read-modify-write: a version made by
/// one worker and let go by another (its readers ran there) is not freed across
/// threads through the allocator. A reference dropped while another is held is one
/// atomic decrement; should that make it the last (the other was dropped meanwhile),
/// the allocation is freed as any `Arc`'s.
pub(crate) struct VersionRef(std::mem::ManuallyDrop<triomphe::Arc<Version>>);

impl VersionRef {
    fn new(version: Version) -> Self {
        VersionRef(std::mem::ManuallyDrop::new(triomphe::Arc::new(version)))
    }

    /// The reference `raw` (from [`VersionRef::into_raw`], or a spare written anew).
    ///
    /// # Safety
    ///
    /// As `triomphe::Arc::from_raw`.
    unsafe fn from_raw(raw: *const Version) -> Self {
        // SAFETY: the caller's contract.
        VersionRef(std::mem::ManuallyDrop::new(unsafe {
            triomphe::Arc::from_raw(raw)
        }))
    }

    /// Gives up the reference, as `triomphe::Arc::into_raw`.
    pub(crate) fn into_raw(this: Self) -> *const Version {
        let mut this = std::mem::ManuallyDrop::new(this);
        // SAFETY: taken once; `this` is not dropped.
        triomphe::Arc::into_raw(unsafe { std::mem::ManuallyDrop::take(&mut this.0) })
    }

    /// The version's address.
    pub(crate) fn as_ptr(this: &Self) -> *const Version {
        triomphe::Arc::as_ptr(&this.0)
    }

    /// Whether both refer to one version.
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        triomphe::Arc::ptr_eq(&a.0, &b.0)
    }

    /// The version, if this is its only reference.
    pub(crate) fn get_mut(this: &mut Self) -> Option<&mut Version> {
        triomphe::Arc::get_mut(&mut this.0)
    }
}

impl Clone for VersionRef {
    #[inline]
    fn clone(&self) -> Self {
        VersionRef(self.0.clone())
    }
}

impl std::ops::Deref for VersionRef {
    type Target = Version;

    #[inline]
    fn deref(&self) -> &Version {
        &self.0
    }
}

impl Drop for VersionRef {
    #[inline]
    fn drop(&mut self) {
        if self.0.is_unique() {
            self.recycle();
        } else {
            // SAFETY: dropped once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) };
        }
    }
}

impl VersionRef {
    /// Drops the version of this reference, its only one, and keeps its allocation as
    /// a spare (module `spare`).
    #[inline(never)]
    fn recycle(&mut self) {
        // SAFETY: taken once, by the drop calling this.
        let arc = unsafe { std::mem::ManuallyDrop::take(&mut self.0) };
        let raw = triomphe::Arc::into_raw(arc).cast_mut();
        // SAFETY: the only reference (the count loaded as 1 with `Acquire`, after every
        // other holder's release), given up: nobody else reaches the version; the
        // pointer came from `into_raw`.
        unsafe { spare::recycle(std::ptr::NonNull::new_unchecked(raw)) };
    }
}

/// The lock of a version's [`State`].
type StateLock = spin::mutex::SpinMutex<State, spin::relax::Yield>;

/// The tasks waiting for a version: inline for the one or two most versions have.
pub(crate) type Waiters = smallvec::SmallVec<[Waiting; 2]>;

struct State {
    produced: bool,
    /// Whether a writer of the chain did not complete (its successors then did not run
    /// their bodies): the version is abandoned when published.
    failed: bool,
    /// Turns taken among the version's writers (module doc, "Chains of read-writes"):
    /// its producer's (0), then one per read-write that continued it
    /// ([`Version::continue_chain`]). 0 for a version no read-write may continue: an
    /// initial one, or one a weak write, a domain or a reduction made.
    bound: u32,
    /// The turn of the writer now producing the version; `bound - serving` writers
    /// have yet to finish with it.
    serving: u32,
    waiters: Waiters,
    /// Versions that forward to this one and wait for it to be produced, with whether
    /// their own producer completed: published with it.
    chained: Vec<(VersionRef, bool)>,
    /// The writers that continued the version and wait for their turn, in the order of
    /// their turns (registered in submission order, as a rule, so at the back); made
    /// when the first registers, so that a version no read-write continues stays small.
    // Boxed: a pointer in the version, where the queue's own header would take 32 bytes
    // of every version.
    #[allow(clippy::box_collection)]
    turns: Option<Box<VecDeque<(u32, Waiting)>>>,
}

impl State {
    /// The writer whose turn has come (`serving`), if it registered: the first entry,
    /// since the entries are in the order of their turns and earlier turns are taken.
    fn take_turn(&mut self) -> Option<Waiting> {
        let serving = self.serving;
        let turns = self.turns.as_mut()?;
        match turns.front() {
            Some((turn, _)) if *turn == serving => turns.pop_front().map(|(_, w)| w),
            _ => None,
        }
    }
}

/// The version a pending version superseded (module doc, "Failed producers"), in a
/// cell that takes no lock: only the version's producer writes it, before it publishes
/// the version (at creation, [`Version::take_over`], [`Version::publish`]), and others
/// read it only once the version is abandoned, which its publication says last (the
/// `Release` store of `Version::abandoned`, read with `Acquire`). So no two threads
/// touch it at once, and a reader sees the producer's last write.
struct Fallback(std::cell::UnsafeCell<Option<VersionRef>>);

// SAFETY: the protocol of the type doc gives the cell one user at a time, each after the
// previous one's accesses (program order for the producer; the `abandoned` flag for the
// readers after it), as a lock would; the contents are `Send`.
unsafe impl Sync for Fallback {}

/// A version's buffer, set at most once: a `OnceLock` of one read-modify-write per set
/// (the `OnceLock` takes two, to start and to end its initialisation), which every
/// version written pays once.
///
/// `state` goes from `EMPTY` to `WRITING` (one compare-and-swap: the one setter) to
/// `READY` (a `Release` store, after the buffer is written); readers read the buffer
/// only after reading `READY` (`Acquire`). A setter that loses the race waits for the
/// winner's `READY`, as `OnceLock::set` does, and gets its buffer back. `take` needs
/// `&mut`, so no reader is left.
struct BufferCell {
    state: AtomicU8,
    value: std::cell::UnsafeCell<std::mem::MaybeUninit<Buffer>>,
}

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

// SAFETY: the buffer is written once, by the one setter that won `state`, before its
// `Release` store of `READY`, and read only after an `Acquire` load of `READY` (or
// through `&mut`): no access races with the write, and readers only share it. A
// `Buffer` is `Send` and `Sync`.
unsafe impl Sync for BufferCell {}

impl Default for BufferCell {
    fn default() -> Self {
        BufferCell {
            state: AtomicU8::new(EMPTY),
            value: std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()),
        }
    }
}

impl BufferCell {
    fn get(&self) -> Option<&Buffer> {
        (self.state.load(Ordering::Acquire) == READY)
            // SAFETY: `READY` is stored after the buffer is written (type doc).
            .then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// Sets the buffer unless one is set (or being set): then `buffer` comes back.
    fn set(&self, buffer: Buffer) -> Result<(), Buffer> {
        match self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: this call won `state`: nobody else writes or reads the value
                // until `READY` is stored below.
                unsafe { (*self.value.get()).write(buffer) };
                self.state.store(READY, Ordering::Release);
                Ok(())
            }
            Err(_) => {
                // The winner's buffer is being written: wait for it, as `OnceLock`.
                while self.state.load(Ordering::Acquire) != READY {
                    std::hint::spin_loop();
                }
                Err(buffer)
            }
        }
    }

    /// Sets the buffer, which nobody else sets or reads meanwhile: a store, where
    /// [`set`](Self::set) takes a compare-and-swap.
    ///
    /// # Safety
    ///
    /// No buffer is set, and no other thread calls a method of the cell until this
    /// returns.
    unsafe fn set_unraced(&self, buffer: Buffer) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), EMPTY);
        // SAFETY: the caller's contract: the value is unset and nobody else touches it.
        unsafe { (*self.value.get()).write(buffer) };
        self.state.store(READY, Ordering::Release);
    }

    /// Puts `buffer` in place of the one set, and returns that one.
    ///
    /// # Safety
    ///
    /// A buffer is set, and no other thread reads or writes the cell until the
    /// version is next published to it (a pending version's writer, in its turn).
    unsafe fn replace_unraced(&self, buffer: Buffer) -> Buffer {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), READY);
        // SAFETY: set (the caller's contract), and nobody else touches the value.
        unsafe { std::mem::replace((*self.value.get()).assume_init_mut(), buffer) }
    }

    fn take(&mut self) -> Option<Buffer> {
        let state = self.state.get_mut();
        if *state != READY {
            return None;
        }
        *state = EMPTY;
        // SAFETY: the value was written (`READY`) and, `state` now `EMPTY`, is read
        // out once; `&mut self` excludes every other access.
        Some(unsafe { (*self.value.get()).assume_init_read() })
    }
}

impl Drop for BufferCell {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// The memory of a version: a block of its own, or the buffer of a shared datum, which
/// all its versions name.
pub(crate) enum Buffer {
    /// A task-private block from a node's pool.
    Private(Block),
    /// The one buffer of a shared datum, updated in place.
    Shared(Arc<SharedBuffer>),
}

impl Buffer {
    /// Start of the memory (dangling when it holds none).
    pub(crate) fn as_ptr(&self) -> *const u8 {
        match self {
            Buffer::Private(b) => b.as_ptr(),
            Buffer::Shared(s) => s.region.as_ptr(),
        }
    }

    /// Start of the memory, for writing (dangling when it holds none).
    pub(crate) fn as_mut_ptr(&self) -> *mut u8 {
        match self {
            Buffer::Private(b) => b.as_mut_ptr(),
            Buffer::Shared(s) => s.region.as_ptr(),
        }
    }

    /// Whether the buffer is only accounted and holds no memory (a simulation with
    /// skipped bodies).
    pub(crate) fn is_accounted_only(&self) -> bool {
        match self {
            Buffer::Private(b) => b.is_accounted_only(),
            Buffer::Shared(s) => s.region.is_accounted_only(),
        }
    }

    /// The shared buffer, for shared data.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedBuffer>> {
        match self {
            Buffer::Private(_) => None,
            Buffer::Shared(s) => Some(s),
        }
    }

    /// The node of a private block; for shared data, the node holding most of it.
    pub(crate) fn main_node(&self) -> usize {
        match self {
            Buffer::Private(b) => b.node(),
            Buffer::Shared(s) => s.main_node(),
        }
    }
}

/// One version of a datum.
pub(crate) struct Version {
    /// Size of the version's buffer in bytes.
    pub(crate) bytes: usize,
    buffer: BufferCell,
    /// The version whose contents this one stands for, when it holds none of its own:
    /// a task's version of a datum its children wrote after it, or the starting point
    /// of a task's children on the task's own output (nested tasks, `graph::domain`).
    forward: OnceLock<VersionRef>,
    /// Its producer's state and waiters, under a spin lock: every section under it is
    /// a few instructions that never block, and its release is a store, where a
    /// `Mutex`'s release is a read-modify-write (it must learn whether a thread sleeps
    /// on it). A thread finding it held yields its processor until it is free, so a
    /// holder preempted mid-section is not spun against.
    state: StateLock,
    /// The version this one superseded, until this one is committed.
    fallback: Fallback,
    /// Shared data: tasks bound to read this version and not finished, and the next
    /// writer, waiting for them (module `counts`).
    readers: Readers<Waiting>,
    /// The runtime's counts, never freed (`data::counts::CountsLease`).
    counts: &'static VersionCounts,
    /// Published by a producer that did not complete (see the module doc): set once,
    /// after the last write of `fallback`, never cleared.
    abandoned: AtomicBool,
    /// Immediate allocation: the node the buffer goes to when made at execution.
    placement: AtomicUsize,
}

/// [`Version::placement`] when [`Version::place_on`] was not called.
const NO_PLACEMENT: usize = usize::MAX;

impl Version {
    fn made(
        bytes: usize,
        produced: bool,
        continuable: bool,
        counts: &'static VersionCounts,
        shared: Option<&Arc<SharedBuffer>>,
    ) -> VersionRef {
        counts.version_created(shared.is_none());
        let buffer = BufferCell::default();
        if let Some(s) = shared {
            let _ = buffer.set(Buffer::Shared(s.clone()));
        }
        let version = Version {
            bytes,
            buffer,
            forward: OnceLock::new(),
            state: StateLock::new(State {
                produced,
                failed: false,
                bound: u32::from(continuable),
                serving: 0,
                waiters: Waiters::new(),
                chained: Vec::new(),
                turns: None,
            }),
            fallback: Fallback(std::cell::UnsafeCell::new(None)),
            readers: Readers::default(),
            counts,
            abandoned: AtomicBool::new(false),
            placement: AtomicUsize::new(NO_PLACEMENT),
        };
        match spare::take() {
            // SAFETY: a spare is an allocation of a version, counted once, its version
            // dropped and nothing else pointing to it (module `spare`): writing a
            // version into it makes it a version's only reference again.
            Some(raw) => unsafe {
                raw.as_ptr().write(version);
                VersionRef::from_raw(raw.as_ptr())
            },
            None => VersionRef::new(version),
        }
    }

    /// A version that no task produces: the initial contents of a datum; `shared` names
    /// the buffer of a shared datum.
    pub(crate) fn initial(
        bytes: usize,
        counts: &'static VersionCounts,
        shared: Option<&Arc<SharedBuffer>>,
    ) -> VersionRef {
        Version::made(bytes, true, false, counts, shared)
    }

    /// A version that its producer, just submitted, will write; `shared` names the
    /// buffer of a shared datum.
    pub(crate) fn pending(
        bytes: usize,
        counts: &'static VersionCounts,
        shared: Option<&Arc<SharedBuffer>>,
    ) -> VersionRef {
        Version::made(bytes, false, false, counts, shared)
    }

    /// A version that a strong write or read-write, just submitted, will write: as
    /// [`pending`](Self::pending), and a read-write may continue it (module doc,
    /// "Chains of read-writes").
    fn written(bytes: usize, counts: &'static VersionCounts) -> VersionRef {
        Version::made(bytes, false, true, counts, None)
    }

    /// The runtime's counts of live versions.
    pub(crate) fn counts(&self) -> &'static VersionCounts {
        self.counts
    }

    /// Whether tasks wait for this version to be produced.
    pub(crate) fn has_waiters(&self) -> bool {
        !self.state.lock().waiters.is_empty()
    }

    /// The fallback, for its producer to change before it publishes the version.
    ///
    /// # Safety
    ///
    /// The caller is the version's producer, before its publication (`Fallback`), and
    /// holds no other borrow of the fallback.
    #[allow(clippy::mut_from_ref)]
    unsafe fn fallback_mut(&self) -> &mut Option<VersionRef> {
        // SAFETY: the caller's contract: nobody else touches the cell meanwhile.
        unsafe { &mut *self.fallback.0.get() }
    }

    /// The fallback of an abandoned version (which no one changes any more); `None`
    /// if the version is not abandoned.
    fn abandoned_fallback(&self) -> Option<&VersionRef> {
        if !self.is_abandoned() {
            return None;
        }
        // SAFETY: the version is abandoned: its producer's last write of the fallback
        // happened before the `Release` store of `abandoned` read above (`Acquire`),
        // and nobody writes it after (`Fallback`).
        unsafe { (*self.fallback.0.get()).as_ref() }
    }

    /// Update in place (module doc): makes `input`, the version this pending one
    /// supersedes, give its buffer to this one, if nobody else holds `input`, this
    /// version has no buffer yet, stands for no other and keeps no fallback of its own,
    /// and `input`'s buffer is a private block (on `node`, when given). On success
    /// `input` is emptied (a read-write then reads what it writes: `Binding::read`) and
    /// the superseded version, now empty, is released. Returns whether the buffer was
    /// taken over.
    ///
    /// Called by the producer's worker before its body runs, once `input` is produced.
    pub(crate) fn take_over(
        this: &VersionRef,
        input: &mut Option<VersionRef>,
        node: Option<usize>,
    ) -> bool {
        if this.buffer.get().is_some() || this.forward.get().is_some() {
            return false;
        }
        // SAFETY: the caller is the producer of this pending version (the doc above),
        // and the borrow ends here.
        if unsafe { this.fallback_mut() }.is_some() {
            return false;
        }
        // `get_mut` succeeds only if no other `Arc` exists (a load): no task can bind
        // to `input` any more (it is superseded), so none can appear either. A
        // read-write keeps what it supersedes in its binding, not as a fallback, until
        // it publishes (`hand_input`): the binding's is the one count.
        let movable = match input.as_mut().and_then(VersionRef::get_mut) {
            Some(old) => {
                old.forward.get().is_none()
                    && matches!(old.buffer.get(), Some(Buffer::Private(b))
                        if node.map_or(true, |n| b.node() == n))
            }
            None => false,
        };
        if !movable {
            return false;
        }
        // Unique (checked above): its buffer is taken, and the version freed here, its
        // allocation kept for the next version this thread makes (module `spare`).
        let Some(old) = input.take() else {
            unreachable!("the input is held by this binding alone");
        };
        let raw = VersionRef::into_raw(old).cast_mut();
        // SAFETY: the reference was the version's only one (checked above: `get_mut`
        // loads the count with `Acquire`, after every other holder's release): nobody
        // else reaches it, and the mutable borrow ends before it is dropped.
        let buffer = unsafe { (*raw).buffer.take() }.expect("matched a private buffer above");
        // SAFETY: as above, and the pointer came from `into_raw`.
        unsafe { spare::recycle(std::ptr::NonNull::new_unchecked(raw)) };
        // SAFETY: this version is its producer's alone before it publishes it, and
        // before its body runs nobody else reaches its buffer (readers wait for its
        // publication; versions standing for it are made by its body's children).
        unsafe { this.buffer.set_unraced(buffer) };
        true
    }

    /// Makes `input`, the version a read-write (or a weak write) bound as its input and
    /// this version supersedes, this version's fallback (module doc, "Failed
    /// producers"), unless it has one: its producer hands it over right before it
    /// publishes the version, so that the count its binding held moves over and no
    /// count is taken at submission.
    ///
    /// # Safety
    ///
    /// The caller is the version's producer (or its submission), before it publishes
    /// the version.
    pub(crate) unsafe fn hand_input(&self, input: VersionRef) {
        // SAFETY: the caller's contract (`Fallback`).
        let fallback = unsafe { self.fallback_mut() };
        if fallback.is_none() && !std::ptr::eq(&*input, self) {
            *fallback = Some(input);
        }
    }

    /// Immediate allocation of a read-write: the node its buffer goes to if it cannot
    /// take over its input's (the submitting worker's), made at execution.
    pub(crate) fn place_on(&self, node: usize) {
        // Set once, by the submission making the version, before its producer (which
        // reads it) is registered.
        self.placement.store(node, Ordering::Release);
    }

    /// The node set by [`place_on`](Self::place_on), if any.
    pub(crate) fn placement(&self) -> Option<usize> {
        Some(self.placement.load(Ordering::Acquire)).filter(|&n| n != NO_PLACEMENT)
    }

    /// The last committed version: this one, or, for a version whose producer did not
    /// complete, its fallback's last committed version. A version still pending is its
    /// own answer (its producer may yet complete).
    pub(crate) fn committed(this: &VersionRef) -> VersionRef {
        let mut v = this.clone();
        if !this.is_abandoned() {
            return v;
        }
        while let Some(previous) = v.abandoned_fallback() {
            v = previous.clone();
        }
        v
    }

    /// Whether the version's producer did not complete (module doc, "Failed
    /// producers"): only then may [`committed`](Self::committed) name another version.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Shared data: counts one more task bound to read this version. Called under the
    /// datum's lock, so that no writer supersedes the version meanwhile.
    pub(crate) fn add_reader(&self) {
        self.readers.add_reader();
    }

    /// Shared data: a reader finished; returns the writer that waited for the last one.
    pub(crate) fn reader_done(&self) -> Vec<Waiting> {
        self.readers.reader_done()
    }

    /// Shared data: registers the writer that supersedes this version as waiting for its
    /// readers, unless none is left. Returns whether the task must wait.
    pub(crate) fn add_release_waiter(&self, task: Waiting) -> bool {
        self.readers.add_release_waiter(task)
    }

    /// Registers `task` as waiting for this version unless it is already produced (the
    /// entry is then dropped). Returns whether the task must wait.
    #[inline]
    pub(crate) fn add_waiter(&self, task: Waiting) -> bool {
        let mut state = self.state.lock();
        if state.produced {
            false
        } else {
            state.waiters.push(task);
            true
        }
    }

    /// Marks the version produced and returns the tasks that waited for it.
    /// `complete` says whether its producer's body ran to its end: the version is then
    /// committed and lets its fallback go, or else abandoned (module doc).
    /// A writer that continued the version (module doc, "Chains of read-writes") has the
    /// next turn: the version stays pending, and that writer, if registered, is the one
    /// waiter returned.
    pub(crate) fn publish(&self, complete: bool) -> Waiters {
        let mut state = self.state.lock();
        if state.bound - state.serving > 1 {
            // What the version superseded is superseded by complete contents now.
            let superseded = if complete {
                // SAFETY: the caller is the writer whose turn ends: the next one waits
                // for `serving` to move on, below, under the lock held here.
                unsafe { self.fallback_mut() }.take()
            } else {
                None
            };
            state.serving += 1;
            state.failed |= !complete;
            let next = state.take_turn();
            drop(state);
            drop(superseded);
            let mut waiters = Waiters::new();
            if let Some(next) = next {
                waiters.push(next);
            }
            return waiters;
        }
        let complete = complete && !state.failed;
        // SAFETY: the caller is the producer, publishing (or the publisher of the
        // version this one is chained to, which its producer has finished with).
        let fallback = unsafe { self.fallback_mut() };
        let fallback = if complete {
            fallback.take()
        } else {
            // After the last write of the fallback: readers may look at it now.
            self.abandoned.store(true, Ordering::Release);
            None
        };
        state.produced = true;
        let mut waiters = std::mem::take(&mut state.waiters);
        let chained = std::mem::take(&mut state.chained);
        drop(state);
        // The superseded version may go back to its pool now, outside the lock.
        drop(fallback);
        for (version, own) in chained {
            waiters.extend(version.publish(own && complete));
        }
        waiters
    }

    /// Publishes this version, which its producer has finished with (`complete`: its
    /// body ran to its end), once the version it forwards to is produced too: at
    /// once, or when that one is.
    pub(crate) fn publish_after_forward(this: &VersionRef, complete: bool) -> Waiters {
        if let Some(target) = this.forward.get() {
            let mut state = target.state.lock();
            if !state.produced {
                state.chained.push((this.clone(), complete));
                return Waiters::new();
            }
        }
        this.publish(complete)
    }

    /// Takes the next turn among the version's writers for a read-write bound to it,
    /// if it may continue it (module doc, "Chains of read-writes"): the version is
    /// pending, continuable, forwards to none, has no waiter, and nobody but the
    /// datum's slot (`this`, which the caller holds locked) and its writers holds it.
    /// Returns the turn, for [`add_next_writer`](Self::add_next_writer).
    #[inline]
    pub(crate) fn continue_chain(this: &VersionRef) -> Option<u32> {
        let mut state = this.state.lock();
        if state.bound == 0
            || state.produced
            || !state.waiters.is_empty()
            || !state.chained.is_empty()
            || this.forward.get().is_some()
        {
            return None;
        }
        // Every holder is counted: a reader bound to the version, a task's domain
        // starting from it, a fetch, hold one each. The count may fall meanwhile (a
        // writer that handed its turn over drops its binding), never rise: a new holder
        // binds under the datum's lock, which the caller holds.
        let writers = (state.bound - state.serving) as usize;
        if triomphe::Arc::count(&this.0) != 1 + writers {
            return None;
        }
        let turn = state.bound;
        state.bound += 1;
        Some(turn)
    }

    /// Registers the writer of turn `turn` (from [`continue_chain`](Self::continue_chain))
    /// to wait for the writers before it, unless its turn has come (the entry is then
    /// dropped). Returns whether it must wait.
    #[inline(never)]
    pub(crate) fn add_next_writer(&self, turn: u32, task: Waiting) -> bool {
        let mut state = self.state.lock();
        if state.serving == turn {
            return false;
        }
        // Writers register in the order of their turns but for submissions racing
        // from several threads.
        let turns = state.turns.get_or_insert_with(Box::default);
        if turns.back().map_or(true, |(last, _)| *last < turn) {
            turns.push_back((turn, task));
        } else {
            let at = turns.partition_point(|(t, _)| *t < turn);
            turns.insert(at, (turn, task));
        }
        true
    }

    /// Whether the producer has finished.
    pub(crate) fn is_produced(&self) -> bool {
        self.state.lock().produced
    }

    /// The version holding this one's contents: itself, or where its forwards lead.
    fn holder(&self) -> &Version {
        let mut v = self;
        while let Some(next) = v.forward.get() {
            v = next;
        }
        v
    }

    /// Makes this version stand for `target`'s contents (see `forward`). A version
    /// forwards at most once; a target that already stands for this version's own
    /// contents (its forwards lead back here) leaves it as it is. A version a writer
    /// continues (module doc, "Chains of read-writes") takes a copy of `target`'s
    /// contents into its own buffer instead, which that writer updates in place.
    pub(crate) fn forward_to(&self, target: VersionRef) {
        let state = self.state.lock();
        if state.bound - state.serving > 1 {
            drop(state);
            self.absorb(&target);
        } else if self.forward.get().is_none() && !std::ptr::eq(target.holder(), self) {
            let _ = self.forward.set(target);
        }
    }

    /// Copies `target`'s contents into this version's own buffer (its producer's
    /// children wrote them, and a writer continues it). Nothing is copied when either
    /// holds no memory (a simulation with skipped bodies; a failed run, whose bodies
    /// no longer run).
    fn absorb(&self, target: &Version) {
        let (Some(to), Some(from)) = (self.buffer.get(), target.buffer()) else {
            return;
        };
        if to.is_accounted_only() || from.is_accounted_only() || std::ptr::eq(to, from) {
            return;
        }
        // SAFETY: (1) both hold `bytes` bytes (versions of one datum); (2) distinct
        // buffers (checked); (3) `target` is produced and no task writes it any more,
        // and this version is its producer's, finishing, before the next writer's turn.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_mut_ptr(), self.bytes) };
    }

    /// The buffer, once allocated (the buffer of the version it forwards to, if any).
    pub(crate) fn buffer(&self) -> Option<&Buffer> {
        self.holder().buffer.get()
    }

    /// The node of the buffer once allocated (for shared data, the node holding most
    /// of it).
    pub(crate) fn node(&self) -> Option<usize> {
        self.buffer().map(Buffer::main_node)
    }

    /// Installs the buffer, allocating it with `alloc` if no other thread has; returns
    /// the installed buffer. Two racing readers of an unwritten initial version may both
    /// allocate; the loser's block goes straight back to its pool.
    pub(crate) fn buffer_or_alloc<E>(
        &self,
        alloc: impl FnOnce() -> Result<Block, E>,
    ) -> Result<&Buffer, E> {
        // A forwarding version's memory is its holder's (an initial version its
        // forwarder stands for may have none yet).
        let holder = self.holder();
        if let Some(buffer) = holder.buffer.get() {
            return Ok(buffer);
        }
        let block = alloc()?;
        // A lost race drops `block` here, which frees it.
        let _ = holder.buffer.set(Buffer::Private(block));
        Ok(holder.buffer.get().expect("buffer was just installed"))
    }
}

/// Binds an access `d` of versioned data that reads or writes (not a reduction) to
/// `slot`, the version the next task binds to (run-wide, or in its parent's domain):
/// a read to it, a write or read-write to a new version that supersedes it. Under
/// immediate allocation a write's buffer is made here, on the submitting worker's
/// node; a failure is kept in `alloc_failed` (task `name`), and fails the run once the
/// task is submitted.
#[inline]
pub(crate) fn bind(
    ex: &dyn Executor,
    run: &RunState,
    name: &str,
    d: &Declared,
    slot: &mut VersionRef,
    alloc_failed: &mut Option<Error>,
) -> Kind {
    let (input, output) = match d.mode {
        Mode::Read => (Some(slot.clone()), None),
        Mode::Write | Mode::ReadWrite => {
            let next = if d.weak {
                Version::pending(d.data.bytes(), run.versions, None)
            } else {
                Version::written(d.data.bytes(), run.versions)
            };
            // A weak write's version stands for its children's: no buffer of its own.
            if !d.weak && d.mode == Mode::ReadWrite && run.alloc == AllocMode::Immediate {
                // A read-write may take over its input's buffer at execution
                // ("Update in place"); if it cannot, its buffer is made then, on this
                // node.
                next.place_on(ex.node());
            } else if !d.weak && run.alloc == AllocMode::Immediate && alloc_failed.is_none() {
                alloc_at_submission(ex, name, &next, alloc_failed);
            }
            let previous = std::mem::replace(slot, next.clone());
            // A read-write reads what it supersedes; a weak write keeps it, for its
            // children to start from. What `next` supersedes is kept until `next` is
            // committed, so that a failed run leaves the datum with its last complete
            // version: as the binding's input, handed over as the task publishes
            // (`Version::hand_input`), or at once.
            if d.mode == Mode::ReadWrite || d.weak {
                (Some(previous), Some(next))
            } else {
                // SAFETY: this submission makes `next`; its producer is not
                // submitted yet, so nothing publishes it meanwhile.
                unsafe { next.hand_input(previous) };
                (None, Some(next))
            }
        }
        Mode::Reduce => unreachable!("a reduction binds to its group"),
    };
    Kind::Versioned(Versions { input, output })
}

/// [`bind`] for an access bound run-wide as a task's one access: a read-write continues
/// the current version when it may (module doc, "Chains of read-writes"), with no
/// version made. Returns the binding's kind and its turn (`Binding::turn`).
#[inline(always)]
pub(crate) fn bind_only(
    ex: &dyn Executor,
    run: &RunState,
    name: &str,
    d: &Declared,
    slot: &mut VersionRef,
    alloc_failed: &mut Option<Error>,
) -> (Kind, u32) {
    if d.mode == Mode::ReadWrite && !d.weak {
        if let Some(turn) = Version::continue_chain(slot) {
            run.counters.worker(ex.worker()).versions_continued.add(1);
            let versions = Versions {
                input: None,
                output: Some(slot.clone()),
            };
            return (Kind::Versioned(versions), turn);
        }
    }
    (bind(ex, run, name, d, slot, alloc_failed), 0)
}

/// Immediate allocation: makes `next`'s buffer on the submitting worker's node, or
/// keeps why it could not in `alloc_failed` (task `name`).
pub(crate) fn alloc_at_submission(
    ex: &dyn Executor,
    name: &str,
    next: &Version,
    alloc_failed: &mut Option<Error>,
) {
    let node = ex.node();
    if let Err(e) = next.buffer_or_alloc(|| ex.pools().alloc(node, next.bytes)) {
        *alloc_failed = Some(Error::OutOfMemory {
            task: name.to_string(),
            bytes: next.bytes,
            message: e.to_string(),
        });
    }
}

/// Prepares a leaf binding `b` of versioned data (neither shared nor a reduction, not
/// weak) for its task's body (`graph::prepare`), on the executing worker's node: zeroes an initial version
/// never written, updates in place or allocates the output (copying a read-write's
/// input into it), and keeps in `backups` what an update in place overwrites. `how`:
/// whether bodies run, whether the task is a control task, whether the body sees the
/// access through a gathered copy.
#[inline]
pub(crate) fn prepare(
    ex: &dyn Executor,
    task: &Task,
    b: &mut Binding,
    (bodies, control, gathered): (Bodies, bool, bool),
    backups: &mut Backups,
) -> Result<(), Error> {
    let (mode, turn) = (b.mode, b.turn);
    let Kind::Versioned(b) = &mut b.kind else {
        unreachable!("a binding of versioned data")
    };
    let node = ex.node();
    let oom = |bytes: usize, e: locus_mem::pool::AllocError| oom(task, bytes, e);
    let zeroed = |v: &Version| -> Result<(), Error> {
        v.buffer_or_alloc(|| match bodies {
            Bodies::Run => ex.pools().alloc_zeroed(node, v.bytes),
            Bodies::Skip => ex.pools().alloc(node, v.bytes),
        })
        .map(|_| ())
        .map_err(|e| oom(v.bytes, e))
    };
    // Deferred allocation updates in place only on the executing node; immediate
    // allocation wherever the buffer lies ("Update in place").
    let in_place_node = match task.run.alloc {
        AllocMode::Deferred => Some(node),
        AllocMode::Immediate => None,
    };
    if turn > 0 {
        let output = b.output.as_ref().expect("a continuing read-write writes");
        let how = (bodies, control, gathered);
        return prepare_turn(ex, task, output, (node, in_place_node), how, backups);
    }
    if let Some(input) = &b.input {
        // An initial version that was never written reads as zeros.
        zeroed(input)?;
    }

    if let (Mode::ReadWrite, Some(output)) = (mode, &b.output) {
        if Version::take_over(output, &mut b.input, in_place_node) {
            task.run
                .counters
                .worker(ex.worker())
                .versions_in_place
                .add(1);
            // The body writes the buffer itself (a gathered view writes its own
            // copy, scattered only once the body has returned): keep its contents
            // until the body has run to its end.
            if bodies == Bodies::Run && !control && !gathered {
                backups
                    .keep(ex, node, output)
                    .map_err(|e| oom(output.bytes, e))?;
            }
            return Ok(());
        }
    }
    if let Some(output) = &b.output {
        let home = output.placement().unwrap_or(node);
        let out = output
            .buffer_or_alloc(|| ex.pools().alloc(home, output.bytes))
            .map_err(|e| oom(output.bytes, e))?;
        if let Buffer::Private(block) = out {
            // A fresh block of a first-touch pool is placed by this first writer.
            let _ = ex.pools().first_touch(block, node);
        }
        if mode == Mode::ReadWrite && bodies == Bodies::Run {
            let src = b
                .input
                .as_ref()
                .and_then(|v| v.buffer())
                .expect("read-write input was allocated above");
            // SAFETY: (1) both blocks hold at least `output.bytes` bytes (versions of
            // one datum); (2) they are distinct allocations (private blocks); (3) the
            // input is produced and no task writes it any more, and the output is
            // written only by this task, whose body has not started.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr(), output.bytes) };
        }
    }
    Ok(())
}

/// [`prepare`] for a read-write that continued its version (module doc, "Chains of
/// read-writes"): the body updates in place the buffer the previous writer left, moved
/// first to `in_place_node` if it lies on another (deferred allocation), the block it
/// leaves then kept as the copy of what the body overwrites; else `backups` copies it.
#[inline]
fn prepare_turn(
    ex: &dyn Executor,
    task: &Task,
    output: &Version,
    (node, in_place_node): (usize, Option<usize>),
    (bodies, control, gathered): (Bodies, bool, bool),
    backups: &mut Backups,
) -> Result<(), Error> {
    // The previous writer's body ran (else the run has failed, and this task's does
    // not run either) and prepared the buffer; a continued version is never shared.
    let Some(Buffer::Private(block)) = output.buffer.get() else {
        unreachable!("a continued version holds its previous writer's block")
    };
    let keep = bodies == Bodies::Run && !control && !gathered;
    match in_place_node {
        Some(here) if block.node() != here => {
            let fresh = ex
                .pools()
                .alloc(here, output.bytes)
                .map_err(|e| oom(task, output.bytes, e))?;
            let _ = ex.pools().first_touch(&fresh, here);
            if bodies == Bodies::Run {
                // SAFETY: (1) both blocks hold at least `output.bytes` bytes (versions
                // of one datum); (2) distinct allocations; (3) the previous writer has
                // finished, and nobody else touches a pending version's buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(block.as_ptr(), fresh.as_mut_ptr(), output.bytes)
                };
            }
            let dst = std::ptr::NonNull::new(fresh.as_mut_ptr()).expect("a block is not null");
            // SAFETY: this writer's turn: nobody else reads or writes the version's
            // buffer until it publishes or hands the version over.
            let Buffer::Private(old) =
                (unsafe { output.buffer.replace_unraced(Buffer::Private(fresh)) })
            else {
                unreachable!("matched a private block above")
            };
            if keep {
                backups.keep_block(dst, old);
            }
        }
        _ => {
            if keep {
                backups
                    .keep(ex, node, output)
                    .map_err(|e| oom(task, output.bytes, e))?;
            }
        }
    }
    Ok(())
}

/// Releases a complete task's binding `b` of versioned data (`complete`: its body ran
/// to its end): publishes the version it wrote, if any, and returns the tasks that
/// waited for it. A write that did not complete is abandoned, and the datum goes back
/// to its last committed version now, so that the abandoned one is freed with the
/// task (module doc, "Failed producers"). The caller lets the binding's versions go.
pub(crate) fn release(b: &mut Binding, complete: bool) -> Waiters {
    let Kind::Versioned(v) = &mut b.kind else {
        unreachable!("a binding of versioned data")
    };
    let Some(output) = &v.output else {
        return Waiters::new();
    };
    if let (true, Some(previous)) = (b.weak, &v.input) {
        // A weak write no child took up leaves the contents as they were (a forward
        // set at completion, if a child wrote, comes first).
        output.forward_to(previous.clone());
    }
    if let Some(input) = v.input.take() {
        // SAFETY: the binding's task is the output's producer, and publishes it below.
        unsafe { output.hand_input(input) };
    }
    let waiters = Version::publish_after_forward(output, complete);
    if !complete {
        b.data.settle();
    }
    waiters
}

/// Allocations of versions freed by an update in place (`Version::take_over`) or by
/// their last reference ([`VersionRef`]'s drop), kept by the thread that freed them for
/// the next versions it makes: in a chain of read-writes on one worker, the version a
/// task frees is the allocation of the one the next submission makes, with no call to
/// the allocator. A spare is a version's allocation whose count is one (as
/// `Arc::into_raw` leaves it) and whose version is dropped; nothing else points to it.
/// A thread keeps at most [`spare::KEPT`]; a full set goes whole to a process-wide depot
/// (at most [`spare::DEPOT`] sets), where a thread with none takes a set whole: when
/// one thread makes the versions (a control program) and others let them go (the
/// workers running their readers), the allocations go back to their maker by the set,
/// one lock per [`spare::KEPT`], not one by one through the allocator's cross-thread
/// frees (as the task records' free lists, `graph::free_list`). Beyond the depot's
/// bound, and a thread's spares when it exits, they are freed.
mod spare {
    use std::cell::RefCell;
    use std::mem::ManuallyDrop;
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::Version;

    /// Spares kept per thread.
    pub(super) const KEPT: usize = 32;

    /// Full sets of spares the depot keeps, at most.
    pub(super) const DEPOT: usize = 8;

    pub(super) struct Spares(Vec<NonNull<Version>>);

    #[cfg(test)]
    impl Spares {
        /// A set of the spares `raws`.
        pub(super) fn of(raws: Vec<NonNull<Version>>) -> Spares {
            Spares(raws)
        }

        /// Its first spare.
        pub(super) fn first(&self) -> NonNull<Version> {
            self.0[0]
        }
    }

    impl Drop for Spares {
        fn drop(&mut self) {
            for raw in self.0.drain(..) {
                free(raw);
            }
        }
    }

    // SAFETY: spares hold no live value and nothing else points to them; they move
    // between threads under the depot's lock, as the allocator's memory may.
    unsafe impl Send for Spares {}

    thread_local! {
        static SPARES: RefCell<Spares> = const { RefCell::new(Spares(Vec::new())) };
    }

    /// Full sets of spares handed between threads (module doc), at most [`DEPOT`], and
    /// how many it keeps, read without the lock: a thread with no spare, which makes
    /// its versions by the allocator while the depot is empty, takes no lock for them.
    pub(super) struct Depot {
        sets: Mutex<Vec<Spares>>,
        kept: AtomicUsize,
    }

    impl Depot {
        pub(super) const fn new() -> Self {
            Depot {
                sets: Mutex::new(Vec::new()),
                kept: AtomicUsize::new(0),
            }
        }

        fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Spares>> {
            self.sets.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// Keeps `set`, unless the depot is full; gives it back if not kept.
        pub(super) fn put(&self, set: Spares) -> Option<Spares> {
            let mut sets = self.lock();
            if sets.len() >= DEPOT {
                return Some(set);
            }
            sets.push(set);
            self.kept.store(sets.len(), Ordering::Relaxed);
            None
        }

        /// A full set, if the depot keeps one.
        pub(super) fn get(&self) -> Option<Spares> {
            // A set put meanwhile is found by a later call: the load only spares the
            // lock when there was none.
            if self.kept.load(Ordering::Relaxed) == 0 {
                return None;
            }
            let mut sets = self.lock();
            let set = sets.pop();
            self.kept.store(sets.len(), Ordering::Relaxed);
            set
        }

        /// The sets kept.
        #[cfg(test)]
        pub(super) fn len(&self) -> usize {
            self.lock().len()
        }
    }

    static SETS: Depot = Depot::new();

    /// The spares the calling thread keeps.
    #[cfg(test)]
    pub(super) fn kept() -> usize {
        SPARES.with(|s| s.borrow().0.len())
    }

    /// A spare of the calling thread, or of a set from the depot, if any.
    pub(super) fn take() -> Option<NonNull<Version>> {
        SPARES
            .try_with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                if let Some(raw) = s.0.pop() {
                    if let Some(next) = s.0.last() {
                        crate::graph::free_list::prefetch_recycled(next.as_ptr());
                    }
                    return Some(raw);
                }
                let set = SETS.get()?;
                // The empty list is dropped, the set's kept.
                *s = set;
                s.0.pop()
            })
            .ok()
            .flatten()
    }

    /// Drops the version `raw` points to and keeps its allocation as a spare.
    ///
    /// # Safety
    ///
    /// `raw` comes from `Arc::into_raw` of the version's only reference, given up by
    /// the caller.
    pub(super) unsafe fn recycle(raw: NonNull<Version>) {
        // SAFETY: the caller's contract: nobody else reaches the version.
        unsafe {
            std::ptr::drop_in_place(raw.as_ptr());
            keep(raw);
        }
    }

    /// Keeps `raw` for the calling thread (its full set going to the depot first), or
    /// frees it.
    ///
    /// # Safety
    ///
    /// `raw` is a spare (module doc), given up by the caller.
    unsafe fn keep(raw: NonNull<Version>) {
        let kept = SPARES.try_with(|s| match s.try_borrow_mut() {
            Ok(mut s) => {
                if s.0.len() >= KEPT {
                    let full = std::mem::replace(&mut *s, Spares(Vec::with_capacity(KEPT)));
                    // A set the depot refuses is dropped, which frees its spares.
                    drop(SETS.put(full));
                }
                s.0.push(raw);
                true
            }
            Err(_) => false,
        });
        if kept != Ok(true) {
            free(raw);
        }
    }

    /// Frees a spare's allocation without dropping a version in it again: as an `Arc`
    /// of a `ManuallyDrop<Version>`, whose allocation is laid out as a version's
    /// (`ManuallyDrop` is `repr(transparent)`, triomphe's `ArcInner` `repr(C)`).
    fn free(raw: NonNull<Version>) {
        // SAFETY: the pointer came from `Arc::into_raw` of a version's only reference,
        // and the layout of the allocation is the same for `ManuallyDrop<Version>`
        // (above); the version in it is dropped already, which `ManuallyDrop` skips.
        drop(unsafe {
            triomphe::Arc::<ManuallyDrop<Version>>::from_raw(
                raw.as_ptr().cast::<ManuallyDrop<Version>>(),
            )
        });
    }
}

impl Drop for Version {
    fn drop(&mut self) {
        self.counts.version_dropped();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_let_go_by_its_last_reference_lends_its_allocation_to_the_next_one_made() {
        let lease = CountsLease::new();
        let counts = lease.counts();
        let first = Version::initial(8, counts, None);
        let second = first.clone();
        let at = VersionRef::as_ptr(&first);
        drop(first);
        assert_eq!(counts.live(), 1, "another reference holds it");
        let kept = spare::kept();
        drop(second);
        assert_eq!(counts.live(), 0, "the last reference dropped the version");
        assert_eq!(spare::kept(), kept + 1, "kept as a spare, not freed");
        let next = Version::pending(16, counts, None);
        assert_eq!(VersionRef::as_ptr(&next), at, "its allocation");
        assert_eq!(spare::kept(), kept);
        assert_eq!((next.bytes, next.is_produced()), (16, false));
    }

    #[test]
    fn a_depot_keeps_full_sets_up_to_its_bound_and_gives_them_back_last_first() {
        let lease = CountsLease::new();
        let counts = lease.counts();
        let depot = spare::Depot::new();
        let set = |n: usize| {
            let raws = (0..n)
                .map(|_| {
                    let raw = VersionRef::into_raw(Version::initial(8, counts, None)).cast_mut();
                    let raw = std::ptr::NonNull::new(raw).unwrap();
                    // SAFETY: the only reference, given up; dropped in place, as a spare.
                    unsafe { std::ptr::drop_in_place(raw.as_ptr()) };
                    raw
                })
                .collect::<Vec<_>>();
            spare::Spares::of(raws)
        };
        let firsts: Vec<_> = (0..spare::DEPOT)
            .map(|_| {
                let s = set(2);
                let first = s.first();
                assert!(depot.put(s).is_none(), "kept");
                first
            })
            .collect();
        assert_eq!(depot.len(), spare::DEPOT);
        assert!(depot.put(set(2)).is_some(), "a full depot refuses a set");
        assert_eq!(
            depot.get().map(|s| s.first()),
            Some(firsts[spare::DEPOT - 1])
        );
        assert_eq!(depot.len(), spare::DEPOT - 1);
        assert_eq!(counts.live(), 0, "spares hold no version");
    }

    #[test]
    fn a_version_freed_in_place_lends_its_allocation_to_the_next_one_made() {
        let lease = CountsLease::new();
        let counts = lease.counts();
        let freed = Version::initial(8, counts, None);
        let raw = VersionRef::into_raw(freed).cast_mut();
        // SAFETY: the only reference, given up.
        unsafe { spare::recycle(std::ptr::NonNull::new(raw).unwrap()) };
        assert_eq!(counts.live(), 0, "the freed version is counted freed");
        let next = Version::pending(16, counts, None);
        assert_eq!(
            VersionRef::as_ptr(&next),
            raw.cast_const(),
            "its allocation"
        );
        assert_eq!((next.bytes, next.is_produced()), (16, false));
        assert_eq!(counts.live(), 1);
        drop(next);
        assert_eq!(counts.live(), 0);
        // More spares than a thread keeps: the rest are freed.
        let many: Vec<_> = (0..spare::KEPT + 2)
            .map(|_| Version::initial(8, counts, None))
            .collect();
        for v in many {
            let raw = VersionRef::into_raw(v).cast_mut();
            // SAFETY: as above.
            unsafe { spare::recycle(std::ptr::NonNull::new(raw).unwrap()) };
        }
        assert_eq!(counts.live(), 0);
    }
}
