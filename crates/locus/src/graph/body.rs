//! A task's body: a closure called once with the task's context and bindings, stored
//! without an allocator call when it is small.
//!
//! A body capturing nothing takes no memory. One of at most [`CELL`] bytes (a closure
//! capturing a few values: an OpenMP task's function and argument, a C task's, a Rust
//! closure with its captures) lives in a cell of a per-thread free list
//! (`graph::free_list`), like the task's record: a stream of tasks reuses a handful of
//! cells. A larger one is boxed.

use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::domain::Owner;
use super::exec::Executor;
use super::free_list::{self, Depot, FreeList};
use super::scope::TaskCtx;
use super::submit::Throttle;
use super::task::{Task, TaskRef};
use crate::data::Binding;
use crate::data::Bindings;
use crate::error::Error;

/// The bytes a small body may take.
pub(crate) const CELL: usize = 64;

/// The memory of a small body.
#[repr(C, align(16))]
struct Cell([MaybeUninit<u8>; CELL]);

thread_local! {
    /// The calling thread's free cells.
    static CELLS: FreeList<Cell> = const { FreeList::new() };
}

/// The full lists of cells handed between threads (module `free_list`).
static CELL_DEPOT: Depot<Cell> = Depot::new();

/// Where a body of type `F` is kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// Nowhere: `F` is zero-sized.
    None,
    /// In a cell.
    Cell,
    /// In an allocation of its own.
    Heap,
}

const fn storage<F>() -> Storage {
    if size_of::<F>() == 0 {
        Storage::None
    } else if size_of::<F>() <= CELL && align_of::<F>() <= align_of::<Cell>() {
        Storage::Cell
    } else {
        Storage::Heap
    }
}

/// How to call or drop a body of one type.
struct VTable {
    /// Moves the body out of its memory, frees the memory, and calls it.
    call: unsafe fn(NonNull<u8>, &TaskCtx, &[Binding]),
    /// Drops the body in its memory and frees the memory.
    drop: unsafe fn(NonNull<u8>),
}

struct Table<F>(PhantomData<F>);

impl<F: FnOnce(&TaskCtx, &[Binding])> Table<F> {
    const VTABLE: VTable = VTable {
        call: call::<F>,
        drop: drop_in::<F>,
    };
}

/// The body of a task, with the views of its bindings built inside, borrowing for `'a`
/// (`'static` but for the root of a run).
pub(crate) struct BodyFor<'a> {
    /// The closure's memory (dangling for a zero-sized one).
    data: NonNull<u8>,
    vtable: &'static VTable,
    /// What the closure borrows.
    _borrows: PhantomData<&'a ()>,
}

// SAFETY: a body is made only from a `Send` closure (`BodyFor::new`), which it owns.
unsafe impl Send for BodyFor<'_> {}

/// The body of a task.
pub(crate) type Body = BodyFor<'static>;

impl<'a> BodyFor<'a> {
    /// A body calling `f`.
    #[inline(always)]
    pub(crate) fn new<F>(f: F) -> Self
    where
        F: FnOnce(&TaskCtx, &[Binding]) + Send + 'a,
    {
        let data = match storage::<F>() {
            Storage::None => {
                std::mem::forget(f);
                NonNull::<F>::dangling().cast()
            }
            Storage::Cell => {
                let cell = free_list::take(&CELLS, &CELL_DEPOT);
                // SAFETY: the cell holds no live value and is large and aligned enough
                // for `F` (`storage`).
                unsafe { cell.cast::<F>().write(f) };
                cell.cast()
            }
            Storage::Heap => NonNull::from(Box::leak(Box::new(f))).cast(),
        };
        BodyFor {
            data,
            vtable: &Table::<F>::VTABLE,
            _borrows: PhantomData,
        }
    }

    /// Calls the body.
    #[inline]
    pub(crate) fn call(self, ctx: &TaskCtx, bindings: &[Binding]) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `data` holds the closure the vtable was made for; the body is consumed
        // (its `Drop` does not run), so the closure is moved out once.
        unsafe { (this.vtable.call)(this.data, ctx, bindings) }
    }

    /// The body, for a borrow that the caller keeps alive until the body is called or
    /// dropped (the root of a run).
    ///
    /// # Safety
    ///
    /// What the body borrows outlives every use of the returned body.
    pub(crate) unsafe fn extend(self) -> Body {
        let this = ManuallyDrop::new(self);
        BodyFor {
            data: this.data,
            vtable: this.vtable,
            _borrows: PhantomData,
        }
    }
}

impl Drop for BodyFor<'_> {
    fn drop(&mut self) {
        // SAFETY: `data` holds the closure the vtable was made for, not called.
        unsafe { (self.vtable.drop)(self.data) }
    }
}

/// Frees the memory of a body of type `F`, whose value was moved out or dropped.
///
/// # Safety
///
/// `data` was made by [`BodyFor::new`] for an `F` and holds no live value any more.
#[inline(always)]
unsafe fn free<F>(data: NonNull<u8>) {
    match storage::<F>() {
        Storage::None => {}
        // SAFETY: a cell from `free_list::take`, unused now.
        Storage::Cell => unsafe { free_list::give(&CELLS, &CELL_DEPOT, data.cast::<Cell>()) },
        // SAFETY: the allocation `Box::new` made for an `F`, whose value is gone.
        Storage::Heap => unsafe {
            std::alloc::dealloc(data.as_ptr(), std::alloc::Layout::new::<F>())
        },
    }
}

/// [`VTable::call`] for `F`.
///
/// # Safety
///
/// `data` holds a live `F` made by [`BodyFor::new`], used by nothing else.
unsafe fn call<F: FnOnce(&TaskCtx, &[Binding])>(data: NonNull<u8>, ctx: &TaskCtx, b: &[Binding]) {
    // SAFETY: the caller's contract; the value is moved out once, then its memory freed
    // before the call, so a panicking body leaves nothing behind.
    let f = unsafe { data.cast::<F>().as_ptr().read() };
    // SAFETY: the value was moved out just above.
    unsafe { free::<F>(data) };
    f(ctx, b)
}

/// [`VTable::drop`] for `F`.
///
/// # Safety
///
/// As [`call`].
unsafe fn drop_in<F: FnOnce(&TaskCtx, &[Binding])>(data: NonNull<u8>) {
    // SAFETY: the caller's contract; the value is moved out once, and its memory freed
    // before it is dropped, so a panicking drop leaves nothing behind.
    let f = unsafe { data.cast::<F>().as_ptr().read() };
    // SAFETY: the value was moved out just above.
    unsafe { free::<F>(data) };
    drop(f);
}

/// Drops the body of a task that does not run (a failed run, or skipped bodies): what
/// it captured is user code too, whose `Drop` may panic; that panic fails the run.
pub(super) fn drop_skipped(task: &Task, body: Body) -> Result<(), Error> {
    catch_unwind(AssertUnwindSafe(move || drop(body))).map_err(|payload| {
        let message = panic_message(&*payload);
        drop_payload(payload);
        Error::TaskPanicked {
            task: task.name.to_string(),
            message: format!("dropping the task's closure panicked: {message}"),
        }
    })
}

/// Drops a caught panic's payload, whose own `Drop` may panic too: that second panic
/// is caught, and its payload forgotten (a payload that panics again when dropped
/// would otherwise unwind out of the runtime).
pub(crate) fn drop_payload(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        std::mem::forget(again);
    }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// The body of a task of a failed run, not run: what it captured is released before
/// the task counts as finished.
pub(super) fn skip_body(task: &Task, body: Body) {
    if let Err(error) = drop_skipped(task, body) {
        task.run.fail(error);
    }
}

/// Runs a task's body in its context; `panicked` is called when it panics, before the
/// panic becomes the returned error. `flags` are the job's `children_to_parent` and
/// `root`; `team` is the team its children join.
#[inline(always)]
pub(super) fn run_body(
    ex: &dyn Executor,
    task: &TaskRef,
    body: Body,
    bindings: &Bindings,
    (children_to_parent, root): (bool, bool),
    team: Option<super::Team>,
    panicked: impl FnOnce(),
) -> Result<(), Error> {
    // A task's children go to its domain; a control task's to its parent's (module doc
    // of `graph::domain`).
    let owner = if children_to_parent {
        task.parent.as_ref().map(|parent| {
            // SAFETY: `task`, so its parent, is held by `start` until the body and its
            // context are gone.
            unsafe { Owner::new(parent, None) }
        })
    } else {
        let own = Some(NonNull::from(&bindings[..]));
        // SAFETY: `task` and `bindings` are held, unmoved, by `start` until the body and
        // its context are gone.
        Some(unsafe { Owner::new(task, own) })
    };
    let throttle = match (root, children_to_parent) {
        (true, _) => Throttle::Wait,
        (false, true) => Throttle::Help,
        (false, false) => Throttle::Never,
    };
    // SAFETY: `task`, whose run this is, is held by `start` until the body and the
    // context are gone.
    let ctx = unsafe { TaskCtx::new(task, ex.worker(), ex.node(), throttle, owner, team) };
    catch_unwind(AssertUnwindSafe(|| body.call(&ctx, bindings))).map_err(|payload| {
        panicked();
        let task = task.name.to_string();
        match payload.downcast::<crate::error::TaskFailure>() {
            Ok(failure) => Error::TaskFailed {
                task,
                message: failure.0,
            },
            Err(payload) => {
                let message = panic_message(&*payload);
                drop_payload(payload);
                Error::TaskPanicked { task, message }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A body dropped unrun (a task of a failed run) drops what it captured once, in a
    /// cell or a box. Called bodies are every task the runtime's tests run.
    #[test]
    fn bodies_of_every_size_are_dropped_once_when_not_called() {
        let drops = Arc::new(AtomicUsize::new(0));
        let small = Counted(drops.clone());
        let large = (Counted(drops.clone()), [0u8; 2 * CELL]);
        let bodies = [
            BodyFor::new(move |_: &TaskCtx, _: &[Binding]| drop(small)),
            BodyFor::new(move |_: &TaskCtx, _: &[Binding]| drop(large)),
        ];
        assert!(storage::<Counted>() == Storage::Cell);
        assert!(storage::<(Counted, [u8; 2 * CELL])>() == Storage::Heap);
        drop(bodies);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
        assert!(storage::<()>() == Storage::None);
    }
}
