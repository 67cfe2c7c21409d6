//! Tasks: `locus_spawn`, the context a body gets (`locus_ctx_*`, `locus_wait`), and
//! the run's root.
//!
//! A body is a C function `int body(locus_ctx ctx, const locus_view *views, size_t
//! nviews, void *arg)`. The context is a handle, checked against a stack of the bodies
//! running on the calling thread (a worker runs other tasks while one waits, so bodies
//! nest on its stack): only the innermost body's context is accepted, so a context kept
//! after its body returned, or passed to another thread, is `LOCUS_E_CONTEXT`.
//!
//! # What C code must not do
//!
//! A body is called from Rust through an `extern "C"` function pointer, which cannot
//! unwind: a C++ exception escaping it aborts the process (`locus.hpp` catches them and
//! fails the run instead). `longjmp` out of a body skips the runtime's frames between
//! the body and its target: undefined behaviour (the worker's bookkeeping is left
//! half-done). Writing outside a view, writing a read view, or keeping a view's pointer
//! after the body returns corrupts other tasks' data or freed pool memory: undefined
//! behaviour that no handle check can see (AddressSanitizer does not see it either,
//! since pool memory is mapped by Locus, not by `malloc`).

use std::borrow::Cow;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use locus::{
    AccessList, Affinity, Data, Read, ReadWrite, Report, Runtime, Scope, TaskBuilder, TaskCtx,
    Weak, Write,
};

use crate::data::{
    check_count, checked_size, data_of, locus_data, output, store, wrong_runtime, DataEntry, DATA,
};
pub(crate) use crate::frames::in_body;
use crate::frames::{
    current, in_frame, record_failure, record_refusal, with_thread, Current, Frame, Notes, Returned,
};
use crate::names::task_name_at;
use crate::status::{c_str, guard, guard_status, in_call, locus_status, status_of, CResult, Fail};
use crate::team::{locus_team, team_of};

/// A task body (and the run's root): returns 0 on success; anything else fails the run,
/// naming the task (and the message given to `locus_ctx_fail`, if any). `views`
/// holds one view per declared access, in declaration order; `arg` is the task's
/// argument (its copy when `arg_size` was not 0).
#[allow(non_camel_case_types)]
pub type locus_task_fn = unsafe extern "C" fn(
    ctx: locus_ctx,
    views: *const locus_view,
    nviews: usize,
    arg: *mut c_void,
) -> i32;

/// Frees a task's argument (`locus_task::arg_free`).
#[allow(non_camel_case_types)]
pub type locus_free_fn = unsafe extern "C" fn(arg: *mut c_void);

/// The context of a running body: valid only inside that body, on its thread. The
/// all-zero value is the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_ctx {
    /// Opaque: the token of the body's frame on its worker.
    pub bits: u64,
}

/// What a body sees of one declared access.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct locus_view {
    /// The elements (the declared range of a read); NULL for a weak access, which the
    /// task only hands to its children. Aligned for the element type. Valid until the
    /// body returns; writable only for `LOCUS_WRITE` and `LOCUS_READ_WRITE`.
    pub ptr: *mut c_void,
    /// Number of elements.
    pub count: usize,
    /// Bytes per element.
    pub elem_size: usize,
    /// The access mode declared (a `locus_mode`).
    pub mode: u32,
}

/// Access modes (`locus_access::mode`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum locus_mode {
    /// Reads (a range of) the datum: the task waits for its last writer.
    LOCUS_READ = 1,
    /// Writes the whole datum: a new version whose initial contents are unspecified.
    LOCUS_WRITE = 2,
    /// Reads and writes the whole datum: a new version starting as a copy of the
    /// current one.
    LOCUS_READ_WRITE = 3,
    /// Weak read: the task only hands the datum to its children (view NULL).
    LOCUS_WEAK_READ = 5,
    /// Weak write: as weak read, for children that write it.
    LOCUS_WEAK_WRITE = 6,
    /// Weak read-write.
    LOCUS_WEAK_READ_WRITE = 7,
}

/// One declared access: a datum, a mode and, for reads, a range of elements
/// `[start, end)`; `start == end == 0` means the whole datum (required for the other
/// modes).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct locus_access {
    /// The datum.
    pub data: locus_data,
    /// A `locus_mode`.
    pub mode: u32,
    /// First element of a read's range.
    pub start: usize,
    /// One past the last element of a read's range.
    pub end: usize,
}

/// Affinity kinds (`locus_task::affinity`), paper 3's hints.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum locus_affinity {
    /// No affinity.
    LOCUS_AFFINITY_NONE = 0,
    /// To worker `affinity_index` (wraps modulo the number of workers).
    LOCUS_AFFINITY_WORKER = 1,
    /// To node `affinity_index` (wraps modulo the number of nodes).
    LOCUS_AFFINITY_NODE = 2,
    /// To the node holding `affinity_data` when the task becomes ready.
    LOCUS_AFFINITY_DATA = 3,
}

/// A task to spawn. Zero-initialise it, then set what you need: `body` is required;
/// a NULL `name` is `"task"`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct locus_task {
    /// The task's name in reports, traces and errors (copied).
    pub name: *const c_char,
    /// The body.
    pub body: Option<
        unsafe extern "C" fn(
            ctx: locus_ctx,
            views: *const locus_view,
            nviews: usize,
            arg: *mut c_void,
        ) -> i32,
    >,
    /// The argument passed to the body.
    pub arg: *mut c_void,
    /// 0: `arg` is borrowed (passed as is; it must stay valid until the task is done
    /// and be usable from any thread). Otherwise `arg` points to `arg_size` bytes that
    /// are copied (16-byte aligned) and the body gets the copy.
    pub arg_size: usize,
    /// If set, called exactly once with the body's argument (the copy, when copied)
    /// once the task is done with it, or when `locus_spawn` fails or the task is
    /// dropped unrun after its run failed.
    pub arg_free: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    /// The accesses, in the order of the body's views.
    pub accesses: *const locus_access,
    /// Number of accesses. A task of none is a control task: its children go to its
    /// parent's scope and it cannot wait for them (`locus_wait` and `locus_ctx_fetch`
    /// are `LOCUS_E_DECLARATION`); give it an access, a weak read being enough, to
    /// wait for its children.
    pub naccesses: usize,
    /// Estimated cost of the body in nanoseconds (0: none).
    pub cost_ns: u64,
    /// A `locus_affinity`.
    pub affinity: u32,
    /// Only the affinity's domain may run the task (otherwise others may steal it).
    pub affinity_strict: bool,
    /// Worker or node index for `LOCUS_AFFINITY_WORKER` and `LOCUS_AFFINITY_NODE`.
    pub affinity_index: usize,
    /// The datum for `LOCUS_AFFINITY_DATA`.
    pub affinity_data: locus_data,
    /// A team for the task to join (`locus_team_create`), with every task its body
    /// spawns at any depth unless one names another team. Without an affinity of its
    /// own, a member runs on one of the team's nodes. The null handle (zero): no team
    /// of its own, the task stays in its parent's, if any.
    pub team: locus_team,
}

thread_local! {
    /// A spare buffer for the views of a body of several accesses (bodies nesting on the
    /// thread take a new one).
    static VIEWS: std::cell::Cell<Vec<locus_view>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` on the scope a body spawns into (the run's scope for the root, the task's
/// own for a task) and the handle bits of its runtime, if `ctx` is the running body's.
pub(crate) fn with_scope<R>(
    ctx: locus_ctx,
    f: impl FnOnce(&Scope, u64) -> CResult<R>,
) -> CResult<R> {
    let cur = current(ctx)?;
    // SAFETY: `cur` was just checked by `current`; the scope is used during this call.
    f(unsafe { scope_of(&cur) }?, cur.runtime)
}

/// The scope a body spawns into: the run's for the root, the task's own for a task.
///
/// # Safety
///
/// `cur` comes from [`current`] in the running entry point, so its frame is the
/// innermost on this thread and its scope lives until that body returns; the result
/// must not outlive the entry point's call.
#[inline]
unsafe fn scope_of<'a>(cur: &Current) -> CResult<&'a Scope> {
    match cur.frame {
        // SAFETY: the caller's contract.
        Frame::Root(s) => Ok(unsafe { &*s }),
        // SAFETY: as above, for the task's context.
        Frame::Task(c) => Ok(unsafe { &*c }.scope()),
        Frame::Replay(_) => Err(replayed_body("spawning")),
    }
}

/// What a replayed body cannot do (`what`): it has no scope of its own.
fn replayed_body(what: &str) -> Fail {
    Fail::new(
        locus_status::LOCUS_E_CONTEXT,
        format!("{what}: a replayed body of a recorded graph cannot spawn, wait or fetch"),
    )
}

/// The iteration of the replayed body whose context `ctx` is (module `graph`).
pub(crate) fn replay_iteration(ctx: locus_ctx) -> CResult<u64> {
    match current(ctx)?.frame {
        Frame::Replay(i) => Ok(i),
        _ => Err(Fail::new(
            locus_status::LOCUS_E_CONTEXT,
            "not the context of a replayed body (locus_graph_replay)",
        )),
    }
}

/// A raw pointer that may cross to the worker running the task: the C caller promises
/// that a borrowed argument is usable from any thread (`locus_task::arg_size`).
struct SendPtr(*mut c_void);

// SAFETY: see the type's doc; Locus itself never dereferences it.
unsafe impl Send for SendPtr {}

/// One 16-byte aligned chunk of a copied argument.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; 16]);

/// A task's argument: borrowed or copied, freed by its `arg_free` exactly once. Two
/// words, so that a task's body stays small (it is moved a few times on its way into
/// the task's record): what fewer tasks have, a copy or a destructor, is boxed.
struct Arg {
    ptr: SendPtr,
    extra: Option<Box<ArgExtra>>,
}

/// The copy of a task's argument, and its destructor.
struct ArgExtra {
    /// The copy `Arg::ptr` points into, if the argument was copied.
    _copy: Option<Box<[Chunk]>>,
    free: Option<locus_free_fn>,
}

impl Arg {
    /// The argument `ptr` (borrowed), with its destructor.
    #[inline(always)]
    fn new(ptr: *mut c_void, free: Option<locus_free_fn>) -> Arg {
        Arg {
            ptr: SendPtr(ptr),
            extra: free.map(Arg::destructor),
        }
    }

    /// The extra part of an argument that has a destructor, `free`.
    #[cold]
    fn destructor(free: locus_free_fn) -> Box<ArgExtra> {
        Box::new(ArgExtra {
            _copy: None,
            free: Some(free),
        })
    }

    fn ptr(&self) -> *mut c_void {
        self.ptr.0
    }
}

impl Drop for Arg {
    fn drop(&mut self) {
        if let Some(free) = self.extra.as_mut().and_then(|e| e.free.take()) {
            // SAFETY: the user's destructor, called once with the argument it was
            // given for (the `locus_task::arg_free` contract); the copy it may point
            // into is freed after it.
            unsafe { free(self.ptr.0) };
        }
    }
}

/// Takes the argument of `task`: copies it if asked; from here on `arg_free` runs
/// exactly once, whatever happens.
///
/// # Safety
///
/// `task.arg` is valid for reads of `task.arg_size` bytes when that is not 0.
#[inline]
unsafe fn take_arg(task: &locus_task) -> CResult<Arg> {
    let arg = Arg::new(task.arg, task.arg_free);
    if task.arg_size == 0 {
        return Ok(arg);
    }
    // SAFETY: forwarded from the caller.
    unsafe { copy_arg(task, arg) }
}

/// [`take_arg`] for an argument to copy, `arg` the borrowed one (freed if this fails).
///
/// # Safety
///
/// As for [`take_arg`].
#[inline(never)]
unsafe fn copy_arg(task: &locus_task, mut arg: Arg) -> CResult<Arg> {
    if task.arg.is_null() {
        return Err(Fail::new(
            locus_status::LOCUS_E_NULL,
            format!("arg is NULL with arg_size {}", task.arg_size),
        ));
    }
    let chunks = task.arg_size.div_ceil(16);
    let mut copy = vec![Chunk([0; 16]); chunks].into_boxed_slice();
    // SAFETY: `arg` holds `arg_size` readable bytes (the caller's contract) and the
    // copy at least as many; they do not overlap (the copy is fresh).
    unsafe {
        std::ptr::copy_nonoverlapping(
            task.arg.cast::<u8>(),
            copy.as_mut_ptr().cast::<u8>(),
            task.arg_size,
        )
    };
    arg.ptr = SendPtr(copy.as_mut_ptr().cast());
    let extra = arg.extra.get_or_insert_with(|| {
        Box::new(ArgExtra {
            _copy: None,
            free: None,
        })
    });
    extra._copy = Some(copy);
    Ok(arg)
}

/// One access of a C task, typed as Locus takes it; a weak access as its datum, made
/// weak when submitted (so that every kind moves as a word or a few: a weak access is
/// rare, and costs a count of its datum more).
enum Access {
    Read(Read<u8>),
    Write(Write<u8>),
    ReadWrite(ReadWrite<u8>),
    Weak(Data<u8>),
}

/// The weak access of mode `mode` (5, 6 or 7, as checked by [`resolve`]) to `d`.
fn weak(d: &Data<u8>, mode: u32) -> Weak {
    match mode {
        5 => d.weak_read(),
        6 => d.weak_write(),
        _ => d.weak_read_write(),
    }
}

/// The access lists of a C task of several accesses, grouped by kind (Locus's lists
/// are typed); `order` gives the declaration order back to the body.
type Accesses = (Vec<Read<u8>>, Vec<Write<u8>>, Vec<ReadWrite<u8>>, Vec<Weak>);

/// The views Locus hands the grouped lists.
type Views<'a> = (Vec<&'a [u8]>, Vec<&'a mut [u8]>, Vec<&'a mut [u8]>, Vec<()>);

/// The accesses of a C task of several accesses of distinct kinds (a read and a write,
/// say), each in its own slot: no allocation.
type Few = (
    Option<Read<u8>>,
    Option<Write<u8>>,
    Option<ReadWrite<u8>>,
    Option<Weak>,
);

/// The views Locus hands a [`Few`].
type FewViews<'a> = (
    Option<&'a [u8]>,
    Option<&'a mut [u8]>,
    Option<&'a mut [u8]>,
    Option<()>,
);

/// Accesses grouped by kind, as Locus takes them: [`Accesses`], or [`Few`] when no
/// kind appears twice.
trait Grouped: AccessList + Default {
    /// Adds `access`, of mode `mode`.
    fn push(&mut self, access: Access, mode: u32);
}

impl Grouped for Accesses {
    fn push(&mut self, access: Access, mode: u32) {
        match access {
            Access::Read(r) => self.0.push(r),
            Access::Write(w) => self.1.push(w),
            Access::ReadWrite(rw) => self.2.push(rw),
            Access::Weak(d) => self.3.push(weak(&d, mode)),
        }
    }
}

impl Grouped for Few {
    /// The caller adds at most one access of each kind ([`distinct_kinds`]).
    fn push(&mut self, access: Access, mode: u32) {
        let replaced = match access {
            Access::Read(r) => self.0.replace(r).is_some(),
            Access::Write(w) => self.1.replace(w).is_some(),
            Access::ReadWrite(rw) => self.2.replace(rw).is_some(),
            Access::Weak(d) => self.3.replace(weak(&d, mode)).is_some(),
        };
        assert!(
            !replaced,
            "two accesses of one kind in a `Few` (Locus invariant)"
        );
    }
}

/// Whether no kind of access (read, write, read-write, weak) appears twice in `list`,
/// whose modes are all known: it then fits a [`Few`].
fn distinct_kinds(list: &[locus_access]) -> bool {
    let mut seen = 0u8;
    for a in list {
        let kind = match a.mode {
            1 => 1,
            2 => 2,
            3 => 4,
            5..=7 => 8,
            _ => return false,
        };
        if seen & kind != 0 {
            return false;
        }
        seen |= kind;
    }
    true
}

/// Kind of the `i`-th declared access: which list holds it, and its element size.
#[derive(Clone, Copy)]
struct Slot {
    mode: u32,
    elem_size: usize,
}

impl Slot {
    /// The view a body gets of `bytes` bytes at `ptr` for this access.
    fn view(self, ptr: *mut c_void, bytes: usize) -> locus_view {
        locus_view {
            ptr,
            count: bytes / self.elem_size,
            elem_size: self.elem_size,
            mode: self.mode,
        }
    }
}

/// The kinds of a task's accesses in declaration order: inline for the few accesses
/// most tasks declare, so that a task costs no allocation for them.
enum Order {
    Inline([Slot; 4], usize),
    Heap(Vec<Slot>),
}

impl Order {
    fn with_capacity(n: usize) -> Order {
        if n <= 4 {
            Order::Inline(
                [Slot {
                    mode: 0,
                    elem_size: 1,
                }; 4],
                0,
            )
        } else {
            Order::Heap(Vec::with_capacity(n))
        }
    }

    fn push(&mut self, slot: Slot) {
        match self {
            Order::Inline(slots, len) => {
                slots[*len] = slot;
                *len += 1;
            }
            Order::Heap(v) => v.push(slot),
        }
    }

    /// Runs `f` on the views of a task declaring these accesses, in declaration order,
    /// from the grouped views Locus made: its reads, writes and read-writes (a weak
    /// access has no view), made on the stack for the few accesses most tasks declare.
    fn with_views<'v, R>(
        &self,
        (reads, writes, read_writes): (
            impl IntoIterator<Item = &'v [u8]>,
            impl IntoIterator<Item = &'v mut [u8]>,
            impl IntoIterator<Item = &'v mut [u8]>,
        ),
        f: impl FnOnce(&[locus_view]) -> R,
    ) -> R {
        let (mut r, mut w, mut rw) = (
            reads.into_iter(),
            writes.into_iter(),
            read_writes.into_iter(),
        );
        let mut view = |slot: Slot| {
            let (ptr, bytes): (*mut c_void, usize) = match slot.mode {
                1 => r.next().map(|v| (v.as_ptr().cast_mut().cast(), v.len())),
                2 => w.next().map(|v| (v.as_mut_ptr().cast(), v.len())),
                3 => rw.next().map(|v| (v.as_mut_ptr().cast(), v.len())),
                _ => Some((std::ptr::null_mut(), 0)),
            }
            .expect("one view per declared access (Locus invariant)");
            slot.view(ptr, bytes)
        };
        match self {
            Order::Inline(slots, len) => {
                let mut out = [Slot {
                    mode: 0,
                    elem_size: 1,
                }
                .view(std::ptr::null_mut(), 0); 4];
                for (o, &slot) in out.iter_mut().zip(&slots[..*len]) {
                    *o = view(slot);
                }
                f(&out[..*len])
            }
            Order::Heap(slots) => {
                let mut out = VIEWS.with(|v| v.take());
                out.clear();
                out.extend(slots.iter().map(|&slot| view(slot)));
                let result = f(&out);
                out.clear();
                VIEWS.with(|v| v.set(out));
                result
            }
        }
    }
}

/// The declared accesses of `task`, as C gave them.
///
/// # Safety
///
/// `task.accesses` is valid for reads of `task.naccesses` entries when that is not 0.
unsafe fn access_list(task: &locus_task) -> CResult<&[locus_access]> {
    if task.naccesses == 0 {
        Ok(&[])
    } else if task.accesses.is_null() {
        Err(Fail::new(
            locus_status::LOCUS_E_NULL,
            format!("accesses is NULL with naccesses {}", task.naccesses),
        ))
    } else {
        // SAFETY: non-NULL, `naccesses` entries (the caller's contract).
        Ok(unsafe { std::slice::from_raw_parts(task.accesses, task.naccesses) })
    }
}

/// Checks access `i`, `a`, of a task of `runtime` to the datum `entry` (the live datum
/// of `a.data`), and makes it.
#[inline(always)]
fn resolve(i: usize, a: &locus_access, entry: &DataEntry, runtime: u64) -> CResult<(Access, Slot)> {
    let d: &Data<u8> = &entry.data;
    let whole = a.start == 0 && a.end == 0;
    let access = match a.mode {
        _ if entry.runtime != runtime => return Err(wrong_runtime(d.name())),
        1 if whole => Access::Read(d.read()),
        1 if a.start < a.end && a.end <= entry.count => {
            let e = entry.elem_size;
            Access::Read(d.read_range(a.start * e..a.end * e))
        }
        2 if whole => Access::Write(d.write()),
        3 if whole => Access::ReadWrite(d.read_write()),
        5..=7 if whole => Access::Weak(d.clone()),
        _ => return Err(bad_access(i, a, entry)),
    };
    let slot = Slot {
        mode: a.mode,
        elem_size: entry.elem_size,
    };
    Ok((access, slot))
}

/// Why access `i`, `a`, to the datum `entry` of the task's runtime is refused.
#[cold]
fn bad_access(i: usize, a: &locus_access, entry: &DataEntry) -> Fail {
    let name = entry.data.name();
    let whole = a.start == 0 && a.end == 0;
    if !whole && a.mode != locus_mode::LOCUS_READ as u32 {
        Fail::new(
            locus_status::LOCUS_E_SIZE,
            format!(
                "access {i} to `{name}`: a range [{}, {}) is for LOCUS_READ only, mode is {}",
                a.start, a.end, a.mode
            ),
        )
    } else if a.mode == locus_mode::LOCUS_READ as u32 {
        Fail::new(
            locus_status::LOCUS_E_SIZE,
            format!(
                "access {i} to `{name}`: range [{}, {}) is empty or outside its {} elements",
                a.start, a.end, entry.count
            ),
        )
    } else {
        Fail::new(
            locus_status::LOCUS_E_ARGUMENT,
            format!("access {i} to `{name}`: unknown mode {}", a.mode),
        )
    }
}

/// The failure of access `i` whose handle is not a live datum.
fn bad_handle(i: usize) -> impl FnOnce(Fail) -> Fail {
    move |f| Fail {
        message: format!("access {i}: {}", f.message),
        ..f
    }
}

/// Resolves and checks the only access `a` of a task of `runtime`, under one lookup of
/// its handle.
#[inline]
fn one_access(a: &locus_access, runtime: u64) -> CResult<(Access, Slot)> {
    DATA.with(a.data.bits, |entry| resolve(0, a, entry, runtime))
        .map_err(bad_handle(0))?
}

/// Resolves and checks the accesses `list` of a task of `runtime`, grouped by kind.
fn accesses<G: Grouped>(list: &[locus_access], runtime: u64) -> CResult<(G, Order)> {
    let mut out = G::default();
    let mut order = Order::with_capacity(list.len());
    DATA.with_all(|table| -> CResult {
        for (i, a) in list.iter().enumerate() {
            let entry = table.get(a.data.bits).map_err(bad_handle(i))?;
            let (access, slot) = resolve(i, a, entry, runtime)?;
            out.push(access, slot.mode);
            order.push(slot);
        }
        Ok(())
    })?;
    Ok((out, order))
}

/// The affinity of a task of `runtime`.
fn affinity(task: &locus_task, runtime: u64) -> CResult<Option<Affinity>> {
    let a = match task.affinity {
        0 => return Ok(None),
        1 => Affinity::worker(task.affinity_index),
        2 => Affinity::node(task.affinity_index),
        3 => {
            let (d, _, _) = data_of(task.affinity_data, runtime).map_err(|f| Fail {
                message: format!("affinity_data: {}", f.message),
                ..f
            })?;
            Affinity::data(&d)
        }
        k => {
            return Err(Fail::new(
                locus_status::LOCUS_E_ARGUMENT,
                format!("unknown affinity kind {k}"),
            ))
        }
    };
    Ok(Some(if task.affinity_strict { a.strict() } else { a }))
}

/// The body Locus runs for a C task: the C function, its argument and the handle bits
/// of its runtime.
struct Body {
    f: locus_task_fn,
    arg: Arg,
    runtime: u64,
}

impl Body {
    /// Runs the C body of the task whose context is `ctx` with `views`; a failure fails
    /// the task.
    #[inline(always)]
    fn run(self, ctx: &TaskCtx, views: &[locus_view]) {
        let failed = self.call(ctx.worker(), ctx.node(), Frame::Task(ctx), views);
        drop(self.arg);
        if let Some(message) = failed {
            // Fails the run naming the task: the runtime catches the unwind at the
            // task boundary. `resume_unwind` skips the panic hook, so nothing is
            // printed.
            std::panic::resume_unwind(Box::new(locus::TaskFailure(message)));
        }
    }

    /// Calls the C body in `frame` with `views` (one per declared access, in order);
    /// returns why it failed, if it did.
    #[inline]
    fn call(
        &self,
        worker: usize,
        node: usize,
        frame: Frame,
        views: &[locus_view],
    ) -> Option<String> {
        let current = Current {
            runtime: self.runtime,
            worker,
            node,
            frame,
        };
        let returned = in_frame(current, |ctx| {
            // SAFETY: the user's body, called with the arguments its contract names; the
            // views stay valid until it returns (they borrow the task's buffers).
            unsafe { (self.f)(ctx, views.as_ptr(), views.len(), self.arg.ptr()) }
        });
        body_failure("body", returned)
    }
}

/// A body kept by a recorded graph, called once per replayed iteration, and the order
/// of its accesses.
struct ReplayedBody(Body, Order);

// SAFETY: the body's only field that is not `Sync` is its argument's pointer, which
// Locus never dereferences: it hands it to the C body, which runs on one thread at a
// time (a recorded task runs once per iteration and iterations do not overlap), and
// the C caller promised it usable from any thread (`locus_task::arg_size`).
unsafe impl Sync for ReplayedBody {}

/// Records `task` into the graph `recorder` is recording (module `graph`), for
/// runtime `runtime` (handle bits). The task's argument is kept, and freed when the
/// graph is (or now, if the task is refused); its affinity and team are refused, since
/// a recorded graph places its tasks itself.
///
/// # Safety
///
/// As for [`locus_spawn`].
pub(crate) unsafe fn record_task(
    recorder: &locus::Recorder,
    runtime: u64,
    task: *const locus_task,
) -> CResult {
    if task.is_null() {
        return Err(crate::status::null("task"));
    }
    // SAFETY: non-NULL and valid by the caller's contract.
    let task = unsafe { &*task };
    let name = if task.name.is_null() {
        Cow::Borrowed("task")
    } else {
        // SAFETY: non-NULL, and NUL-terminated by the caller's contract.
        unsafe { task_name_at(task.name) }?
    };
    // SAFETY: forwarded from the caller.
    let arg = unsafe { take_arg(task) }?;
    let f = body_fn(task, &name)?;
    if task.affinity != 0 || task.team.bits != 0 {
        return Err(Fail::new(
            locus_status::LOCUS_E_ARGUMENT,
            format!(
                "task `{name}`: a recorded task takes no affinity or team: the graph \
                 places its tasks itself"
            ),
        ));
    }
    // SAFETY: forwarded from the caller.
    let (list, order) = unsafe { access_list(task) }
        .and_then(|list| accesses::<Accesses>(list, runtime))
        .map_err(in_task(&name))?;
    let body = ReplayedBody(Body { f, arg, runtime }, order);
    recorder.spawn(
        name,
        list,
        move |it: &locus::Iteration, views: Views<'_>| {
            // The whole body is captured (a path into it would capture the field alone).
            let ReplayedBody(body, order) = &body;
            let frame = Frame::Replay(it.index());
            let (r, w, rw, _) = views;
            let failed =
                order.with_views((r, w, rw), |v| body.call(it.worker(), it.node(), frame, v));
            if let Some(message) = failed {
                // Fails the replay naming the task (as `Body::run` fails a run).
                std::panic::resume_unwind(Box::new(locus::TaskFailure(message)));
            }
        },
    )?;
    Ok(())
}

/// The body of `task` (named `name`), which must not be NULL.
fn body_fn(task: &locus_task, name: &str) -> CResult<locus_task_fn> {
    task.body.ok_or_else(|| {
        Fail::new(
            locus_status::LOCUS_E_NULL,
            format!("task `{name}`: body is NULL"),
        )
    })
}

/// Names the task `name` in a failure about it.
fn in_task(name: &str) -> impl FnOnce(Fail) -> Fail + '_ {
    move |f| Fail {
        message: format!("task `{name}`: {}", f.message),
        ..f
    }
}

/// Why a body (`who`: "body" or "the root") that `returned` fails its task, if it does:
/// a non-zero status, with the message given to `locus_ctx_fail`, or a call it made
/// that was refused.
#[inline]
fn body_failure(who: &str, returned: Returned) -> Option<String> {
    if returned.succeeded() {
        return None;
    }
    failure_message(who, returned)
}

/// [`body_failure`] for a body that failed.
#[cold]
fn failure_message(who: &str, returned: Returned) -> Option<String> {
    let Returned { status, notes } = returned;
    let Notes { failure, refused } = notes.map(|n| *n).unwrap_or_default();
    match (status, failure, refused) {
        (0, _, None) => None,
        (0, _, Some(refused)) => Some(refused),
        (s, Some(m), _) => Some(format!("{who} returned {s}: {m}")),
        (s, None, _) => Some(format!("{who} returned {s}")),
    }
}

/// Records a refused call (`what`: a spawn naming its task, or a wait) in the innermost
/// body running on this thread (the one that made it), the first one only: its task
/// fails when it returns.
fn refuse_call(what: &str, fail: &Fail) {
    record_refusal(|| format!("{what} was refused ({:?}): {}", fail.status, fail.message));
}

/// Spawns a task from a body (or the root) into its scope: a child of the running
/// task, bound to what the task declared (strongly or weakly) and to the data of its
/// scope, and a member of `task->team` if set (else of the running task's team, if
/// any). Errors (each also names the bad value in `locus_last_error`): a context not
/// the running body's (`LOCUS_E_CONTEXT`); a null or freed datum, a freed team
/// (`LOCUS_E_HANDLE`), a datum or team of another runtime (`LOCUS_E_WRONG_RUNTIME`);
/// an unknown mode or affinity (`LOCUS_E_ARGUMENT`); a bad range (`LOCUS_E_SIZE`); a
/// declaration Locus refuses (`LOCUS_E_DECLARATION`). Every refused spawn also fails
/// the run: the body (or root) that called it fails when it returns, whatever it
/// returns, and `locus_run` returns `LOCUS_E_RUN_FAILED` naming the refused task.
///
/// # Safety
///
/// `task` is NULL (an error) or points to a valid `locus_task` whose pointers are as
/// its fields' documentation says.
#[no_mangle]
pub unsafe extern "C" fn locus_spawn(ctx: locus_ctx, task: *const locus_task) -> locus_status {
    guard_status(|| {
        // SAFETY: forwarded from the caller.
        if let Some(status) = unsafe { spawn_plain(ctx, task) } {
            return status;
        }
        let mut name = Cow::Borrowed("task");
        // SAFETY: forwarded from the caller.
        let spawned = unsafe { spawn(ctx, task, &mut name) };
        if let Err(fail) = &spawned {
            refuse_spawn(&name, fail);
        }
        status_of(spawned)
    })
}

/// Records the refused spawn of the task `name`: it fails the run too (module
/// `runtime`, `locus_run`).
#[cold]
fn refuse_spawn(name: &str, fail: &Fail) {
    refuse_call(&format!("locus_spawn of task `{name}`"), fail);
}

/// The access of a plain task ([`spawn_plain`]): the whole datum, not weak.
enum Plain {
    Read(Read<u8>),
    Write(Write<u8>),
    ReadWrite(ReadWrite<u8>),
}

/// [`locus_spawn`] of a plain task, the kind a program spawns by the thousand: one
/// access to a whole datum, read, write or read-write, a borrowed argument, a name this
/// thread spawned with lately, no hint. Makes the same checks and the same task as
/// [`spawn`] with less handling, and leaves to [`spawn`] (returning `None` before it
/// has taken anything) every task that is not plain or that one of the checks refuses,
/// so that the error is [`spawn`]'s. The status of submitting it (a refusal recorded
/// as [`locus_spawn`] records it).
///
/// # Safety
///
/// As for [`locus_spawn`].
///
/// Inlined into [`locus_spawn`], while [`spawn`] stays out of line: a plain spawn then
/// pays for one call frame, the entry point's.
#[inline(always)]
unsafe fn spawn_plain(ctx: locus_ctx, task: *const locus_task) -> Option<locus_status> {
    // SAFETY: NULL or valid by the caller's contract.
    let task = unsafe { task.as_ref() }?;
    let plain = task.naccesses == 1
        && !task.accesses.is_null()
        && !task.name.is_null()
        && task.arg_size == 0
        && task.cost_ns == 0
        && task.affinity == 0
        && task.team.bits == 0;
    if !plain {
        return None;
    }
    let f = task.body?;
    // SAFETY: non-NULL, one access (the caller's contract).
    let a = unsafe { &*task.accesses };
    if a.start != 0 || a.end != 0 {
        return None;
    }
    let (name, runtime, scope) = with_thread(|t| {
        let cur = t.current(ctx)?;
        // SAFETY: `cur` is this thread's innermost frame, just checked; the scope is
        // used during this call only.
        let scope: *const Scope = unsafe { scope_of(&cur) }.ok()?;
        // SAFETY: non-NULL, and NUL-terminated by the caller's contract.
        let name = unsafe { t.names().find(task.name) }?;
        Some((name, cur.runtime, scope))
    })?;
    let (access, elem_size) = DATA.get_with(a.data.bits, |e| {
        let d = &e.data;
        let access = match a.mode {
            _ if e.runtime != runtime => return None,
            1 => Plain::Read(d.read()),
            2 => Plain::Write(d.write()),
            3 => Plain::ReadWrite(d.read_write()),
            _ => return None,
        };
        Some((access, e.elem_size))
    })??;
    // SAFETY: as above: the scope of the innermost frame, which outlives this call.
    let scope = unsafe { &*scope };
    let body = Body {
        f,
        arg: Arg::new(task.arg, task.arg_free),
        runtime,
    };
    let view = move |mode: u32, ptr: *const u8, bytes: usize| {
        [Slot { mode, elem_size }.view(ptr.cast_mut().cast(), bytes)]
    };
    let spawned = match access {
        Plain::Read(r) => scope.spawn(name, r, move |ctx: &TaskCtx, v: &[u8]| {
            body.run(ctx, &view(1, v.as_ptr(), v.len()))
        }),
        Plain::Write(w) => scope.spawn(name, w, move |ctx: &TaskCtx, v: &mut [u8]| {
            body.run(ctx, &view(2, v.as_ptr(), v.len()))
        }),
        Plain::ReadWrite(rw) => scope.spawn(name, rw, move |ctx: &TaskCtx, v: &mut [u8]| {
            body.run(ctx, &view(3, v.as_ptr(), v.len()))
        }),
    };
    Some(match spawned {
        Ok(()) => locus_status::LOCUS_OK,
        Err(e) => refused_plain(name, e),
    })
}

/// The status of the plain task `name` that Locus refused with `e`, recorded as
/// [`locus_spawn`] records a refusal.
#[cold]
fn refused_plain(name: &str, e: locus::Error) -> locus_status {
    let fail = Fail::from(e);
    refuse_spawn(name, &fail);
    status_of(Err(fail))
}

/// Submits `task` of one access, `access` of kind `slot`, running `body`.
#[inline(always)]
fn spawn_one(task: Placed<'_>, access: Access, slot: Slot, body: Body) -> CResult {
    let view = move |ptr: *const u8, bytes: usize| [slot.view(ptr.cast_mut().cast(), bytes)];
    match access {
        Access::Read(a) => task
            .of(a)
            .spawn(move |ctx: &TaskCtx, v: &[u8]| body.run(ctx, &view(v.as_ptr(), v.len()))),
        Access::Write(a) => task
            .of(a)
            .spawn(move |ctx: &TaskCtx, v: &mut [u8]| body.run(ctx, &view(v.as_ptr(), v.len()))),
        Access::ReadWrite(a) => task
            .of(a)
            .spawn(move |ctx: &TaskCtx, v: &mut [u8]| body.run(ctx, &view(v.as_ptr(), v.len()))),
        Access::Weak(d) => task
            .of(weak(&d, slot.mode))
            .spawn(move |ctx: &TaskCtx, ()| body.run(ctx, &view(std::ptr::null(), 0))),
    }?;
    Ok(())
}

/// [`locus_spawn`]; `name` is set to the task's name as soon as it is read.
///
/// # Safety
///
/// As for [`locus_spawn`].
#[inline(never)]
unsafe fn spawn(ctx: locus_ctx, task: *const locus_task, name: &mut Cow<'static, str>) -> CResult {
    if task.is_null() {
        return Err(crate::status::null("task"));
    }
    // SAFETY: non-NULL and valid by the caller's contract.
    let task = unsafe { &*task };
    // The name is read first, for the run's error, but a bad one is refused only after
    // the argument is taken (and so freed with the refused task, as its doc says).
    let named = if task.name.is_null() {
        Ok(())
    } else {
        // SAFETY: non-NULL, and NUL-terminated by the caller's contract.
        unsafe { task_name_at(task.name) }.map(|n| *name = n)
    };
    let name = name.clone();
    // SAFETY: forwarded from the caller.
    let arg = unsafe { take_arg(task) }?;
    let cur = current(ctx)?;
    named?;
    let f = body_fn(task, &name)?;
    // SAFETY: forwarded from the caller.
    let list = unsafe { access_list(task) }.map_err(in_task(&name))?;
    // A task of one access, as most are, declares it as Rust code would: its view is
    // made on the stack, and the submission takes Locus's path for one access.
    let resolved = match list {
        [] => Resolved::Control,
        [a] => Resolved::One(one_access(a, cur.runtime).map_err(in_task(&name))?),
        _ if distinct_kinds(list) => {
            Resolved::Few(accesses(list, cur.runtime).map_err(in_task(&name))?)
        }
        _ => Resolved::Many(accesses(list, cur.runtime).map_err(in_task(&name))?),
    };
    let place = Placement {
        cost_ns: task.cost_ns,
        affinity: affinity(task, cur.runtime)?,
        team: match task.team.bits {
            0 => None,
            _ => Some(team_of(task.team, cur.runtime).map_err(|f| Fail {
                message: format!("team: {}", f.message),
                ..f
            })?),
        },
    };
    let body = Body {
        f,
        arg,
        runtime: cur.runtime,
    };
    // SAFETY: `cur` was checked by `current` in this call, which the scope is used in.
    let scope = unsafe { scope_of(&cur) }?;
    let task = place.builder_of(scope, name);
    match resolved {
        Resolved::One((access, slot)) => spawn_one(task, access, slot, body),
        Resolved::Many((list, order)) => task
            .of(list)
            .spawn(move |ctx: &TaskCtx, (r, w, rw, _): Views<'_>| {
                order.with_views((r, w, rw), |v| body.run(ctx, v))
            })
            .map_err(Fail::from),
        Resolved::Few((list, order)) => task
            .of(list)
            .spawn(move |ctx: &TaskCtx, (r, w, rw, _): FewViews<'_>| {
                order.with_views((r, w, rw), |v| body.run(ctx, v))
            })
            .map_err(Fail::from),
        // A task of no access is a control task (the field's doc): Rust's `spawn`
        // gives such a task a domain of its own, `spawn_control` does not.
        Resolved::Control => task
            .of(())
            .spawn_control(move |ctx: &TaskCtx| body.run(ctx, &[]))
            .map_err(Fail::from),
    }
}

/// The accesses of a task, resolved.
enum Resolved {
    /// None: a control task.
    Control,
    /// One, as most tasks have.
    One((Access, Slot)),
    /// Several, of distinct kinds.
    Few((Few, Order)),
    /// Several, grouped by kind.
    Many((Accesses, Order)),
}

/// What a C task asks of its placement: its cost, affinity and team.
#[derive(Default)]
struct Placement {
    cost_ns: u64,
    affinity: Option<Affinity>,
    team: Option<locus::Team>,
}

/// A task named `name` of `scope`, placed as `place` asks, whose list of accesses is
/// still to give.
struct Placed<'s> {
    scope: &'s Scope,
    name: Cow<'static, str>,
    place: Placement,
}

impl Placement {
    /// The task named `name` of `scope`, placed as asked.
    #[inline]
    fn builder_of<'s>(self, scope: &'s Scope, name: Cow<'static, str>) -> Placed<'s> {
        Placed {
            scope,
            name,
            place: self,
        }
    }
}

impl<'s> Placed<'s> {
    /// The task's builder, declaring `accesses`.
    #[inline(always)]
    fn of<L: AccessList>(self, accesses: L) -> TaskBuilder<'s, L> {
        let Placed { scope, name, place } = self;
        let mut builder = scope.task(name, accesses);
        if place.cost_ns > 0 {
            builder = builder.cost(place.cost_ns);
        }
        if let Some(a) = place.affinity {
            builder = builder.affinity(a);
        }
        if let Some(t) = &place.team {
            builder = builder.team(t);
        }
        builder
    }
}

/// Writes the worker running the body, and its node (either pointer may be NULL).
///
/// # Safety
///
/// `worker` and `node` are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_ctx_where(
    ctx: locus_ctx,
    worker: *mut usize,
    node: *mut usize,
) -> locus_status {
    guard(|| {
        let cur = current(ctx)?;
        if !worker.is_null() {
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { worker.write(cur.worker) };
        }
        if !node.is_null() {
            // SAFETY: as above.
            unsafe { node.write(cur.node) };
        }
        Ok(())
    })
}

/// The running task's context, or a failure for the root.
fn task_ctx<'a>(cur: Current, what: &str) -> CResult<&'a TaskCtx> {
    match cur.frame {
        // SAFETY: the innermost frame on this thread (checked by `current`): its
        // context lives until its body returns, after the caller's call.
        Frame::Task(c) => Ok(unsafe { &*c }),
        Frame::Root(_) => Err(Fail::new(
            locus_status::LOCUS_E_CONTEXT,
            format!(
                "{what}: the run's root cannot wait for its tasks (it ends when they all \
                 have); spawn a task that spawns and waits instead"
            ),
        )),
        Frame::Replay(_) => Err(replayed_body(what)),
    }
}

/// Waits until every child the task spawned so far is complete (taskwait); the worker
/// runs other tasks meanwhile. Refused (`LOCUS_E_DECLARATION`) when children need the
/// task's own outputs (declare those accesses weak), and in a task of no access (a
/// control task: its children are its parent's); `LOCUS_E_CONTEXT` in the root. A wait
/// refused with `LOCUS_E_DECLARATION` also fails the run, as a refused spawn does: the
/// body fails when it returns, whatever it returns (a body that went on without its
/// children's results would otherwise compute a wrong value silently).
#[no_mangle]
pub extern "C" fn locus_wait(ctx: locus_ctx) -> locus_status {
    guard(|| {
        let cur = current(ctx)?;
        let waited = task_ctx(cur, "locus_wait")?
            .wait()
            .map_err(in_call("locus_wait"));
        if let Err(fail) = &waited {
            if fail.status == locus_status::LOCUS_E_DECLARATION {
                refuse_call("locus_wait", fail);
            }
        }
        waited
    })
}

/// Makes a datum in the body's scope (zero until written): the task's children may
/// read and write it, and the task reads their result with `locus_ctx_fetch`.
/// Free its handle with `locus_data_free` (the runtime's destruction frees it too).
///
/// # Safety
///
/// `name` is NULL (an error) or NUL-terminated; `out` is NULL (an error) or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn locus_ctx_data(
    ctx: locus_ctx,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    out: *mut locus_data,
) -> locus_status {
    guard(|| {
        if out.is_null() {
            return Err(crate::status::null("out"));
        }
        // SAFETY: forwarded from the caller.
        let name = unsafe { c_str(name, "name") }?.to_string();
        with_scope(ctx, |scope, runtime| {
            let bytes = checked_size(&name, elem_size, count)?;
            let data = scope.data::<u8>(name, bytes);
            // SAFETY: `out` checked non-NULL above.
            unsafe { store(data, elem_size, count, runtime, out) }
        })
    })
}

/// Waits for the task's children (as `locus_wait`), then copies `data` as they left
/// it (a datum of the task's scope, or one it declared and its children wrote) to
/// `buf`, `count` elements (the datum's count).
///
/// # Safety
///
/// `buf` is valid for writes of `elem_size * count` bytes (NULL is an error unless
/// that is 0).
#[no_mangle]
pub unsafe extern "C" fn locus_ctx_fetch(
    ctx: locus_ctx,
    data: locus_data,
    buf: *mut c_void,
    count: usize,
) -> locus_status {
    guard(|| {
        let cur = current(ctx)?;
        let (d, _, want) = data_of(data, cur.runtime)?;
        check_count(d.name(), want, count)?;
        let bytes = task_ctx(cur, "locus_ctx_fetch")?
            .fetch(&d)
            .map_err(in_call("locus_ctx_fetch"))?;
        // SAFETY: forwarded from the caller.
        unsafe { output(&bytes, buf) }
    })
}

/// Records why the body is failing: if it then returns non-zero, the run's error
/// names the task, the status and `message` (copied; NULL clears it).
///
/// # Safety
///
/// `message` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn locus_ctx_fail(ctx: locus_ctx, message: *const c_char) -> locus_status {
    guard(|| {
        current(ctx)?;
        let text = if message.is_null() {
            None
        } else {
            // SAFETY: non-NULL, NUL-terminated by the caller's contract.
            Some(unsafe { c_str(message, "message") }?.to_string())
        };
        record_failure(text);
        Ok(())
    })
}

/// Runs `root` as the control program of a run of `rt`; the outcome and the report.
pub(crate) fn run_root(
    rt: &Arc<Runtime>,
    runtime: u64,
    root: locus_task_fn,
    arg: *mut c_void,
) -> (CResult, Report) {
    let arg = SendPtr(arg);
    let node = rt.worker_nodes().first().copied().unwrap_or(0);
    let result = rt.run(move |s: &Scope| {
        let arg = arg;
        let current = Current {
            runtime,
            worker: 0,
            node,
            frame: Frame::Root(s),
        };
        // SAFETY: the user's root, called as its contract says; it gets no views.
        let returned = in_frame(current, |ctx| unsafe {
            root(ctx, std::ptr::null(), 0, arg.0)
        });
        match body_failure("the root", returned) {
            None => Ok(()),
            Some(m) => Err(m),
        }
    });
    match result {
        Ok(finished) => {
            let outcome = finished
                .value
                .map_err(|m| Fail::new(locus_status::LOCUS_E_RUN_FAILED, m));
            (outcome, finished.report)
        }
        Err(e) => {
            let mut fail = Fail::from(e.error);
            if fail.status != locus_status::LOCUS_E_STATE {
                fail.status = locus_status::LOCUS_E_RUN_FAILED;
            }
            (Err(fail), *e.report)
        }
    }
}
