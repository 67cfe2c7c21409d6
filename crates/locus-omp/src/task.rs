//! Explicit tasks (`GOMP_task`), their dependences, taskwait and taskgroups.
//!
//! A task's dependences are storage locations among its siblings (OpenMP 5.0): each
//! parent keeps, per address, the last task that wrote it and the readers since. A
//! new task waits for the last writer of what it reads, and for the last writer and
//! the readers since of what it writes. `mutexinoutset` and `inoutset` are ordered as
//! `inout`: a stricter order than they require, so always a correct one. Nothing is
//! renamed: the program's memory is updated in place.
//!
//! A task whose predecessors are complete becomes a Locus task, spawned by the worker
//! that created it or by the one that completed its last predecessor, with the node
//! of its memory as a hint (`crate::place`). An undeferred task (`if(0)`, or created
//! by a final task, or outside any region) runs at once on its creator, once its
//! predecessors are complete. So does a task without dependences or affinity created
//! while its creator has many deferred tasks queued and not started (`LOCUS_OMP_THROTTLE`,
//! 16 by default, each member counting those it created): a recursive program then
//! spawns deferred tasks only as fast as the team takes them. Such a task runs in a frame on its creator's stack,
//! with the node its creator's frame kept from the last one (`Frame::node_for_child`):
//! it costs a few hundred instructions and allocates nothing.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_long, c_uint, c_void};
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use locus::{Affinity, TaskCtx};

use crate::settings::{die, omp};
use crate::team::{enter, with_frame, with_frame_slot, Frame, Slot, Team, TeamLink};

const FLAG_FINAL: c_uint = 1 << 1;
const FLAG_DEPEND: c_uint = 1 << 3;
const FLAG_DETACH: c_uint = 1 << 13;
/// `GOMP_DEPEND_IN` in a depobj.
const DEPEND_IN: usize = 1;

/// A dependence: a storage location, the bytes named from it (0 when the compiler does
/// not say: gcc's depend arrays hold addresses only, and its extent is then the page
/// holding the address, `crate::place`), and whether the task writes it (out, inout,
/// mutexinoutset, inoutset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dep {
    pub addr: usize,
    pub len: usize,
    pub writes: bool,
}

impl Dep {
    /// A dependence on the address `addr`, of unknown length.
    pub fn at(addr: usize, writes: bool) -> Dep {
        Dep {
            addr,
            len: 0,
            writes,
        }
    }
}

/// A taskgroup: its tasks and their descendants not yet complete.
#[derive(Default)]
pub(crate) struct Group {
    pub pending: AtomicUsize,
}

/// An OpenMP task, as a parent (children, dependences among them) and as a
/// successor of its siblings.
pub(crate) struct TaskNode {
    /// Children not yet complete (taskwait).
    pub children: AtomicUsize,
    /// Dependences among the children, by address (hashed with fixed keys: a node is
    /// made per task, and the keys of a `RandomState` are read from a thread-local).
    deps: Mutex<HashMap<usize, DepEntry, BuildHasherDefault<DefaultHasher>>>,
    /// Whether a child recorded dependences in `deps` since the last taskwait. Read and
    /// written by the thread running the task only (its children are created there).
    recorded: AtomicBool,
    pub final_: bool,
    /// The taskgroup this task belongs to.
    pub group: Option<Arc<Group>>,
    /// Predecessors not complete, plus one while the creator registers them.
    preds: AtomicUsize,
    succ: Mutex<Successors>,
    /// What to spawn once the predecessors are complete (none for undeferred tasks).
    job: JobSlot,
    /// ICV run-sched-var of this task's data environment (`omp_set_schedule`), packed
    /// as `Omp::run_sched`; inherited from the generating task.
    run_sched: AtomicU64,
}

/// The job of a deferred task, kept in its node from its creation until it is spawned
/// (so a task needs no allocation besides its node). One thread at a time has it:
/// the creator puts it there while it still holds the count it keeps in `preds` during
/// registration (so no predecessor can make the task ready yet), and the thread whose
/// `preds` decrement makes the task ready takes it (that decrement reads the creator's
/// and every predecessor's, all `AcqRel`), spawns it and hands it to the Locus task
/// that runs or drops it. A task without dependences is spawned by its creator.
struct JobSlot(UnsafeCell<Option<Job>>);

// SAFETY: the job moves between threads only as described above, one holder at a time;
// a `Job` is `Send`.
unsafe impl Sync for JobSlot {}

impl JobSlot {
    /// Puts the task's job in the slot.
    ///
    /// # Safety
    ///
    /// The caller is the task's creator, still holding its count in `preds` (or about
    /// to spawn the task itself): no other thread takes from the slot yet.
    unsafe fn put(&self, job: Job) {
        // SAFETY: the caller's contract: no other access now.
        unsafe { *self.0.get() = Some(job) }
    }

    /// The task's job, if it is there, to change in place.
    ///
    /// # Safety
    ///
    /// As [`JobSlot::take`]; the borrow ends before the job is handed on.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> Option<&mut Job> {
        // SAFETY: the caller's contract: the one holder.
        unsafe { (*self.0.get()).as_mut() }
    }

    /// Takes the task's job, if it is there.
    ///
    /// # Safety
    ///
    /// The caller made the task ready (its `preds` decrement returned 1) or was handed
    /// the node by the thread that did, and nobody took the job since.
    unsafe fn take(&self) -> Option<Job> {
        // SAFETY: the caller's contract: the one holder.
        unsafe { (*self.0.get()).take() }
    }
}

#[derive(Default)]
struct Successors {
    done: bool,
    list: Vec<Arc<TaskNode>>,
}

#[derive(Default)]
struct DepEntry {
    writer: Option<Arc<TaskNode>>,
    readers: Vec<Arc<TaskNode>>,
}

impl TaskNode {
    /// A task generated with run-sched-var `run_sched` (its generating task's).
    pub fn new(final_: bool, group: Option<Arc<Group>>, run_sched: u64) -> TaskNode {
        TaskNode {
            children: AtomicUsize::new(0),
            deps: Mutex::new(HashMap::default()),
            recorded: AtomicBool::new(false),
            final_,
            group,
            preds: AtomicUsize::new(1),
            succ: Mutex::new(Successors::default()),
            job: JobSlot(UnsafeCell::new(None)),
            run_sched: AtomicU64::new(run_sched),
        }
    }

    /// Makes a node that nothing else holds the node of a new task, as [`TaskNode::new`]
    /// makes one, keeping its records' memory.
    pub fn renew(&mut self, final_: bool, group: Option<Arc<Group>>, run_sched: u64) {
        // Every field named, so that one added to the node is reset here too.
        let TaskNode {
            children,
            deps,
            recorded,
            final_: old_final,
            group: old_group,
            preds,
            succ,
            job,
            run_sched: old_run_sched,
        } = self;
        *children.get_mut() = 0;
        let deps = deps.get_mut().unwrap_or_else(|p| p.into_inner());
        if !deps.is_empty() {
            deps.clear();
        }
        *recorded.get_mut() = false;
        *old_final = final_;
        *old_group = group;
        *preds.get_mut() = 1;
        let succ = succ.get_mut().unwrap_or_else(|p| p.into_inner());
        succ.done = false;
        succ.list.clear();
        *job.0.get_mut() = None;
        *old_run_sched.get_mut() = run_sched;
    }

    /// The task's run-sched-var. Only the thread running the task reads or sets it.
    pub fn run_sched(&self) -> u64 {
        self.run_sched.load(Ordering::Relaxed)
    }

    /// Sets the task's run-sched-var (`omp_set_schedule`: it changes the data
    /// environment of the calling task only).
    pub fn set_run_sched(&self, packed: u64) {
        self.run_sched.store(packed, Ordering::Relaxed);
    }

    /// Drops the dependence records of children that are all complete.
    #[inline]
    pub fn forget_dependences(&self) {
        if self.recorded.load(Ordering::Relaxed) {
            self.forget_recorded();
        }
    }

    fn forget_recorded(&self) {
        self.recorded.store(false, Ordering::Relaxed);
        let mut deps = self.deps.lock().unwrap_or_else(|p| p.into_inner());
        if !deps.is_empty() {
            deps.clear();
        }
    }

    fn is_done(&self) -> bool {
        self.succ.lock().unwrap_or_else(|p| p.into_inner()).done
    }

    /// Makes `self` wait for `pred` unless it is complete (or is `self`).
    fn after(self: &Arc<Self>, pred: &Arc<TaskNode>) {
        if Arc::ptr_eq(self, pred) {
            return;
        }
        let mut s = pred.succ.lock().unwrap_or_else(|p| p.into_inner());
        if !s.done {
            self.preds.fetch_add(1, Ordering::AcqRel);
            s.list.push(self.clone());
        }
    }

    /// Registers `self`'s dependences among its siblings, children of `parent`; with
    /// `record` false only waits (taskwait with depend), leaving the records.
    fn depend_on(self: &Arc<Self>, parent: &TaskNode, deps: &[Dep], record: bool) {
        let mut map = parent.deps.lock().unwrap_or_else(|p| p.into_inner());
        if record {
            parent.recorded.store(true, Ordering::Relaxed);
        }
        for &Dep { addr, writes, .. } in deps {
            let entry = map.entry(addr).or_default();
            if let Some(w) = &entry.writer {
                self.after(w);
            }
            if writes {
                for r in &entry.readers {
                    self.after(r);
                }
                if record {
                    entry.readers.clear();
                    entry.writer = Some(self.clone());
                }
            } else if record {
                if entry.readers.len() >= 32 {
                    entry.readers.retain(|r| !r.is_done());
                }
                entry.readers.push(self.clone());
            }
        }
    }

    /// Marks the task complete and returns the successors it made ready.
    fn complete(&self) -> Vec<Arc<TaskNode>> {
        let list = {
            let mut s = self.succ.lock().unwrap_or_else(|p| p.into_inner());
            s.done = true;
            std::mem::take(&mut s.list)
        };
        if list.is_empty() {
            return list;
        }
        list.into_iter()
            .filter(|n| n.preds.fetch_sub(1, Ordering::AcqRel) == 1)
            .collect()
    }
}

/// What a task runs.
pub(crate) enum Call {
    /// gcc's task: `f(arg)`, then the argument's copy (of `layout`) freed.
    Gomp {
        f: unsafe extern "C" fn(*mut c_void),
        arg: *mut c_void,
        layout: Option<std::alloc::Layout>,
    },
    /// gcc's task whose argument, copied byte for byte (no `cpyfn`), fits in `arg`:
    /// `f(arg)`. The copy moves with the task (a deferred task's one allocation holds
    /// it), as gcc's runtime copies such an argument by `memcpy`.
    GompInline {
        f: unsafe extern "C" fn(*mut c_void),
        arg: InlineArg,
    },
    /// clang's task: a `kmp_task_t` allocated by `__kmpc_omp_task_alloc`, run and freed
    /// by `crate::kmp::run_task`.
    Kmp(crate::kmp::KmpTask),
}

/// Room for a small task argument (most of a recursive program's: a few values and
/// pointers), aligned as strictly as gcc aligns one.
#[repr(C, align(16))]
pub(crate) struct InlineArg([std::mem::MaybeUninit<u8>; InlineArg::BYTES]);

impl InlineArg {
    const BYTES: usize = 48;
    const ALIGN: usize = std::mem::align_of::<InlineArg>();
}

// SAFETY: the task's function and its private copy of the argument (or clang's task
// record), handed to the worker that runs it; OpenMP makes the program responsible for
// what they share.
unsafe impl Send for Call {}

impl Call {
    fn run(self) {
        match self {
            Call::Gomp { f, arg, layout } => {
                // SAFETY: the function and argument the program gave `GOMP_task`.
                unsafe { f(arg) };
                if let Some(layout) = layout {
                    // SAFETY: allocated with this layout by `GOMP_task`, used by nobody
                    // else.
                    unsafe { std::alloc::dealloc(arg.cast(), layout) };
                }
            }
            Call::GompInline { f, mut arg } => {
                // SAFETY: the function gcc gave `GOMP_task`, with the copy of its
                // argument, alive until the call returns.
                unsafe { f(arg.0.as_mut_ptr().cast()) }
            }
            Call::Kmp(t) => crate::kmp::run_task(t),
        }
    }
}

/// A deferred task, ready to spawn (held by its node, `JobSlot`).
struct Job {
    call: Call,
    parent: Arc<TaskNode>,
    /// Not counted: the task is counted in its `pending` instead (`TeamLink`).
    team: TeamLink,
    /// The creator's team index and worker (a small team's tasks stay there).
    thread_num: usize,
    worker: usize,
    /// What places the task, for one with dependences or an affinity clause (most of a
    /// recursive program's tasks have neither, and skip placement altogether).
    place: Option<Box<Place>>,
}

/// The memory a task names and where it should run.
struct Place {
    /// The task's dependences and its affinity clause's `(address, bytes)` ranges: its
    /// home is looked up when it is ready (its predecessors, which may first-touch its
    /// memory, are complete).
    deps: Vec<Dep>,
    affinity: Vec<(usize, usize)>,
    /// Where the task should run, found when it is spawned.
    placed: crate::place::Placement,
}

impl Job {
    /// The task's dependences.
    fn deps(&self) -> &[Dep] {
        self.place.as_ref().map_or(&[], |p| &p.deps)
    }
}

/// Spawns the task of `node`, which the caller made ready (it holds its job,
/// `JobSlot`), as a Locus task from the body whose context is `ctx`; the Locus task then
/// holds the node alone. A node without a job (a `taskwait depend` waiter) is left.
fn spawn(ctx: &TaskCtx, node: Arc<TaskNode>) {
    let omp = omp();
    // SAFETY: the caller holds the job; the borrow ends before the Locus task is made.
    let Some(job) = (unsafe { node.job.get() }) else {
        return;
    };
    let home = match job.place.as_deref_mut() {
        None => None,
        Some(place) => {
            place.placed = crate::place::place(omp, &place.deps, &place.affinity);
            let placed = &place.placed;
            if placed.home.is_some() {
                omp.counters.with_home.fetch_add(1, Ordering::Relaxed);
            }
            if !place.affinity.is_empty() {
                omp.counters.with_affinity.fetch_add(1, Ordering::Relaxed);
                if placed.by_affinity {
                    omp.counters.affinity_placed.fetch_add(1, Ordering::Relaxed);
                }
            }
            placed.home
        }
    };
    let affinity = if job.team.small {
        Some(Affinity::worker(job.worker).strict())
    } else {
        home.map(|n| {
            let a = Affinity::node(n);
            if omp.strict_home {
                a.strict()
            } else {
                a
            }
        })
    };
    let mut builder = ctx.scope().task("omp-task", ());
    if let Some(a) = affinity {
        builder = builder.affinity(a);
    }
    job.team.queue(job.thread_num);
    let pending = Unrun(Some(node));
    let spawned = builder.spawn_control(move |ctx| {
        let mut pending = pending;
        if let Some(node) = pending.0.take() {
            // SAFETY: the task's Locus task holds the node alone (`spawn`).
            if let Some(job) = unsafe { node.job.take() } {
                job.team.unqueue(job.thread_num);
                run_job(ctx, node, job);
            }
        }
    });
    // A refused spawn dropped the closure: `Unrun` completed the task.
    drop(spawned);
}

/// A deferred task handed to Locus. Should Locus drop it unrun (the run has failed:
/// a task ran out of stack, say, and the tasks not started are drained), it is
/// completed unrun, with its successors, so that no wait waits for it; the region then
/// ends with the run's error.
struct Unrun(Option<Arc<TaskNode>>);

impl Drop for Unrun {
    fn drop(&mut self) {
        if let Some(node) = self.0.take() {
            // SAFETY: as in `spawn`'s closure: the Locus task holds the node alone.
            if let Some(job) = unsafe { node.job.take() } {
                job.team.unqueue(job.thread_num);
                abandon(&node, job);
            }
        }
    }
}

/// Completes the task of `node`, whose job is `job`, unrun, with its successors.
fn abandon(node: &TaskNode, job: Job) {
    crate::place::started(omp(), job.deps());
    for ready in node.complete() {
        // SAFETY: `complete` returned the successors this completion made ready.
        if let Some(next) = unsafe { ready.job.take() } {
            abandon(&ready, next);
        }
    }
    // Off its creator's worker, maybe: any worker's count is correct.
    counted_complete(node, &job.parent, &job.team, job.worker);
}

/// The body of a deferred task's Locus task: runs the task of `node`, whose job is `job`.
fn run_job(ctx: &TaskCtx, node: Arc<TaskNode>, job: Job) {
    let omp = omp();
    let Job {
        call,
        parent,
        team,
        thread_num,
        worker: _,
        place,
    } = job;
    if let Some(place) = place {
        let Place {
            deps,
            affinity,
            mut placed,
        } = *place;
        crate::place::started(omp, &deps);
        if crate::place::migrate(omp, &deps, ctx.node()) > 0 {
            // Its memory moved here: count its bytes where they are now.
            placed.dependence_bytes = crate::place::dependence_bytes(omp, &deps);
        }
        crate::place::ran(omp, &placed, ctx.node());
        crate::place::touched(omp, &deps, &affinity, ctx.node());
    }
    let thread_num = if team.small { thread_num } else { ctx.worker() };
    // No count of the team is taken per task (`TeamLink`).
    let frame = Frame::deferred(ctx, team, thread_num, node);
    enter(&frame, || call.run());
    finish(ctx, &frame.task, &parent, &frame.team);
}

/// After a task's body: releases its successors, then counts it complete.
fn finish(ctx: &TaskCtx, node: &TaskNode, parent: &TaskNode, team: &Team) {
    for ready in node.complete() {
        spawn(ctx, ready);
    }
    counted_complete(node, parent, team, ctx.worker());
}

/// Counts a task complete, on `worker`, for taskwait, taskgroups and barriers.
fn counted_complete(node: &TaskNode, parent: &TaskNode, team: &Team, worker: usize) {
    if let Some(g) = &node.group {
        g.pending.fetch_sub(1, Ordering::Release);
    }
    parent.children.fetch_sub(1, Ordering::Release);
    team.pending.completed(worker);
}

/// Reads a `depend` array in either of gcc's layouts: `[n, nout, addr...]` (out and
/// inout first), or `[0, n, nout, nmutexinoutset, nin, addr..., depobj...]` where a
/// depobj points to `{addr, kind}`.
///
/// # Safety
///
/// `depend` is an array in one of those layouts, as gcc emits it.
unsafe fn read_depend(depend: *mut *mut c_void) -> Vec<Dep> {
    // SAFETY: (1) the layouts above, by the caller's contract: every index read is
    // within the array gcc built; (2) a depobj entry points to a two-word object.
    unsafe {
        let word = |i: usize| *depend.add(i) as usize;
        if word(0) != 0 {
            let (n, nout) = (word(0), word(1));
            (0..n).map(|i| Dep::at(word(2 + i), i < nout)).collect()
        } else {
            let n = word(1);
            let (nout, nmtx, nin) = (word(2), word(3), word(4));
            let direct = nout + nmtx + nin;
            (0..n)
                .map(|i| {
                    if i < direct {
                        Dep::at(word(5 + i), i < nout + nmtx)
                    } else {
                        let obj = word(5 + i) as *const usize;
                        Dep::at(*obj, *obj.add(1) != DEPEND_IN)
                    }
                })
                .collect()
        }
    }
}

/// `GOMP_task`.
///
/// # Safety
///
/// The arguments gcc passes: `f` and `data` (`arg_size` bytes aligned to `arg_align`
/// when `cpyfn` is NULL), `depend` in gcc's layout when `flags` has the depend bit.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn task(
    f: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
    cpyfn: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    arg_size: c_long,
    arg_align: c_long,
    if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    _priority: c_int,
) {
    if flags & FLAG_DETACH != 0 {
        die("task detach events (GOMP_task with detach) are not supported by Locus's OpenMP runtime");
    }
    let deps = if flags & FLAG_DEPEND != 0 && !depend.is_null() {
        // SAFETY: gcc's layout, by the caller's contract.
        unsafe { read_depend(depend) }
    } else {
        Vec::new()
    };
    with_frame_slot(|frame, slot| {
        // Decided once, here: a task run now uses the creator's argument block in place.
        let undeferred = is_undeferred(frame, if_clause);
        let throttled = !undeferred && is_throttled(frame, &deps, &[]);
        let now = undeferred || throttled;
        // The argument: a private copy, built now.
        let call = if now && cpyfn.is_none() {
            Call::Gomp {
                f,
                arg: data,
                layout: None,
            }
        } else {
            // SAFETY: the size, alignment, copy function and source gcc gave.
            unsafe { copy_arg(f, data, cpyfn, arg_size, arg_align) }
        };
        let final_ = flags & FLAG_FINAL != 0;
        if now && deps.is_empty() {
            // Most of a recursive program's tasks: straight to the body.
            return run_now(
                frame,
                slot,
                call,
                final_ || frame.task.final_,
                throttled,
                &[],
            );
        }
        let task = NewTask {
            call,
            deps,
            affinity: Vec::new(),
            if_clause,
            throttled,
            final_,
        };
        submit_in(frame, slot, task);
    });
}

/// Whether a task created in `frame` is undeferred: if(0), created by a final task, or
/// outside any region.
fn is_undeferred(frame: &Frame, if_clause: bool) -> bool {
    !if_clause || frame.task.final_ || frame.ctx.is_null()
}

/// Whether a deferrable task created in `frame` runs now because its creator has too
/// many queued tasks (`Team::queued_by`): only a task that no dependence orders and no
/// affinity places.
fn is_throttled(frame: &Frame, deps: &[Dep], affinity: &[(usize, usize)]) -> bool {
    let limit = omp().throttle;
    deps.is_empty()
        && affinity.is_empty()
        && limit > 0
        && frame.team.queued_by(frame.thread_num) >= limit
}

/// A task the program creates, as either ABI describes it.
pub(crate) struct NewTask {
    pub call: Call,
    pub deps: Vec<Dep>,
    /// The affinity clause's `(address, bytes)` ranges.
    pub affinity: Vec<(usize, usize)>,
    /// The if clause (false: undeferred).
    pub if_clause: bool,
    /// Found throttled by its creator, which then kept the argument in place: it must
    /// run now.
    pub throttled: bool,
    /// The final clause.
    pub final_: bool,
}

/// Runs a task at once in `frame`, its creator's, whose thread's current-frame
/// variable is `slot`: an undeferred task, or a `throttled` one, after the sibling tasks
/// `deps` names. `final_` includes the creator's.
fn run_now(frame: &Frame, slot: Slot, call: Call, final_: bool, throttled: bool, deps: &[Dep]) {
    let omp = omp();
    let worker = frame.worker().unwrap_or(0);
    if throttled {
        omp.counters.throttled_tasks.add_one(worker);
    } else {
        omp.counters.undeferred_tasks.add_one(worker);
    }
    let node = frame.node_for_child(final_, frame.group());
    if !deps.is_empty() {
        node.depend_on(&frame.task, deps, true);
        node.preds.fetch_sub(1, Ordering::AcqRel);
        frame.help_while(&|| node.preds.load(Ordering::Acquire) > 0);
    }
    // SAFETY: `inner` is left (`into_task`) before this function returns, inside
    // `frame`.
    let inner = unsafe { Frame::inside(frame, node) };
    slot.enter(&inner, || call.run());
    let node = inner.into_task();
    if !deps.is_empty() {
        // Its successors are later siblings: none exists yet. A task without
        // dependences is in no sibling's records, so none can wait for it.
        let _ = node.complete();
    }
    frame.keep_spare(node);
}

/// Creates a task: deferred (a Locus task once its predecessors are complete), or run
/// at once by its creator when undeferred (if(0), created by a final task, or outside
/// any region) or throttled (its creator has `LOCUS_OMP_THROTTLE` queued tasks, and
/// the task has no dependence and no affinity).
pub(crate) fn submit(t: NewTask) {
    with_frame_slot(|frame, slot| submit_in(frame, slot, t));
}

/// [`submit`] in `frame`, the current frame, whose thread's current-frame variable is
/// `slot`.
fn submit_in(frame: &Frame, slot: Slot, t: NewTask) {
    let NewTask {
        call,
        deps,
        affinity,
        if_clause,
        throttled,
        final_,
    } = t;
    let omp = omp();
    let worker = frame.worker().unwrap_or(0);
    if !deps.is_empty() {
        omp.counters.dependences.add(worker, deps.len() as u64);
        let without_length = deps.iter().filter(|d| d.len == 0).count();
        if without_length > 0 {
            omp.counters
                .dependences_without_length
                .add(worker, without_length as u64);
        }
    }
    let final_ = final_ || frame.task.final_;
    let undeferred = is_undeferred(frame, if_clause);
    let throttled = !undeferred && (throttled || is_throttled(frame, &deps, &affinity));
    if undeferred || throttled {
        run_now(frame, slot, call, final_, throttled, &deps);
        return;
    }
    let group = frame.group();
    let node = frame.node_for_child(final_, group.clone());
    omp.counters.deferred_tasks.add_one(worker);
    frame.task.children.fetch_add(1, Ordering::AcqRel);
    frame.team.pending.created(worker);
    if let Some(g) = &group {
        g.pending.fetch_add(1, Ordering::AcqRel);
    }
    let has_deps = !deps.is_empty();
    crate::place::submitted(omp, &deps);
    if has_deps {
        // Registered before its job is in the node: until the creator's hold leaves
        // `preds` below, no predecessor's completion makes the task ready.
        node.depend_on(&frame.task, &deps, true);
    }
    // Kept in the node: the task's closure holds the node only.
    let job = Job {
        call,
        parent: frame.task.clone(),
        team: TeamLink::of(&frame.team),
        thread_num: frame.thread_num,
        worker,
        place: (has_deps || !affinity.is_empty()).then(|| {
            Box::new(Place {
                deps,
                affinity,
                placed: Default::default(),
            })
        }),
    };
    // SAFETY: this thread created the node (new, or a spare nothing else holds,
    // `Frame::keep_spare`) and still holds `preds`: nobody takes the job before the
    // decrement below or `spawn`.
    unsafe { node.job.put(job) };
    if has_deps && node.preds.fetch_sub(1, Ordering::AcqRel) != 1 {
        // Its last predecessor to complete spawns it.
        return;
    }
    // SAFETY: not null (deferred tasks are created on workers only).
    spawn(unsafe { &*frame.ctx }, node);
}

thread_local! {
    /// Frames of undeferred tasks the program runs itself (clang's `if(0)` tasks,
    /// between `__kmpc_omp_task_begin_if0` and `__kmpc_omp_task_complete_if0`). Boxed:
    /// the current frame is pointed to, so it must not move as the stack grows.
    #[allow(clippy::vec_box)]
    static UNDEFERRED: std::cell::RefCell<Vec<Box<Frame>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Enters an undeferred task the program runs itself: its frame becomes current until
/// [`end_undeferred`].
pub(crate) fn begin_undeferred(final_: bool) {
    let frame = with_frame(|outer| {
        omp()
            .counters
            .undeferred_tasks
            .add_one(outer.worker().unwrap_or(0));
        let node = Arc::new(TaskNode::new(
            final_ || outer.task.final_,
            outer.group(),
            outer.task.run_sched(),
        ));
        Box::new(Frame::new(
            outer.ctx,
            outer.team.counted(),
            outer.thread_num,
            node,
            false,
        ))
    });
    crate::team::push_frame(&frame);
    UNDEFERRED.with(|u| u.borrow_mut().push(frame));
}

/// Leaves the undeferred task entered last; it is complete.
pub(crate) fn end_undeferred() {
    let Some(frame) = UNDEFERRED.with(|u| u.borrow_mut().pop()) else {
        die("__kmpc_omp_task_complete_if0 without __kmpc_omp_task_begin_if0");
    };
    crate::team::pop_frame(&frame);
    // Its children are waited for by whoever waits for its parent's.
    let _ = frame.task.complete();
}

/// The task's private copy of its argument.
///
/// # Safety
///
/// `data` holds `arg_size` bytes (or is what `cpyfn` copies from).
unsafe fn copy_arg(
    f: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
    cpyfn: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    arg_size: c_long,
    arg_align: c_long,
) -> Call {
    if arg_size <= 0 {
        return Call::Gomp {
            f,
            arg: data,
            layout: None,
        };
    }
    let align = (arg_align.max(1) as usize).next_power_of_two();
    if cpyfn.is_none() && arg_size as usize <= InlineArg::BYTES && align <= InlineArg::ALIGN {
        let mut arg = InlineArg([std::mem::MaybeUninit::uninit(); InlineArg::BYTES]);
        // SAFETY: `data` holds `arg_size` bytes (the caller's contract), which fit.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.cast::<u8>(),
                arg.0.as_mut_ptr().cast(),
                arg_size as usize,
            )
        };
        return Call::GompInline { f, arg };
    }
    let Ok(layout) = std::alloc::Layout::from_size_align(arg_size as usize, align) else {
        die(&format!(
            "a task argument of {arg_size} bytes aligned to {arg_align}"
        ));
    };
    // SAFETY: a non-zero size.
    let arg = unsafe { std::alloc::alloc(layout) };
    if arg.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    match cpyfn {
        // SAFETY: gcc's copy constructor of the argument, into a fresh buffer.
        Some(copy) => unsafe { copy(arg.cast(), data) },
        // SAFETY: `data` holds `arg_size` bytes (the caller's contract); `arg` is new.
        None => unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), arg, layout.size()) },
    }
    Call::Gomp {
        f,
        arg: arg.cast(),
        layout: Some(layout),
    }
}

/// `GOMP_taskwait`: waits for the current task's children.
pub(crate) fn taskwait() {
    with_frame(|frame| {
        let task = &frame.task;
        if task.children.load(Ordering::Acquire) > 0 {
            frame.help_while(&|| task.children.load(Ordering::Acquire) > 0);
        }
        task.forget_dependences();
    });
}

/// `GOMP_taskwait_depend`: waits for the sibling tasks `depend` names.
///
/// # Safety
///
/// `depend` is in gcc's layout.
pub(crate) unsafe fn taskwait_depend(depend: *mut *mut c_void) {
    // SAFETY: the caller's contract.
    wait_deps(&unsafe { read_depend(depend) });
}

/// Waits for the sibling tasks that `deps` depend on (`taskwait depend`, and the
/// predecessors of an undeferred task the program runs itself).
pub(crate) fn wait_deps(deps: &[Dep]) {
    if deps.is_empty() {
        return;
    }
    with_frame(|frame| {
        let waiter = Arc::new(TaskNode::new(false, None, frame.task.run_sched()));
        waiter.depend_on(&frame.task, deps, false);
        waiter.preds.fetch_sub(1, Ordering::AcqRel);
        frame.help_while(&|| waiter.preds.load(Ordering::Acquire) > 0);
    });
}

/// `GOMP_taskgroup_start`.
pub(crate) fn taskgroup_start() {
    with_frame(|frame| frame.groups.borrow_mut().push(Arc::new(Group::default())));
}

/// `GOMP_taskgroup_end`: waits for the group's tasks and their descendants.
pub(crate) fn taskgroup_end() {
    with_frame(|frame| {
        let Some(group) = frame.groups.borrow_mut().pop() else {
            die("GOMP_taskgroup_end without GOMP_taskgroup_start");
        };
        frame.help_while(&|| group.pending.load(Ordering::Acquire) > 0);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_depend_layouts_read_the_same_dependences() {
        let (a, b, c) = (0x1000usize, 0x2000usize, 0x3000usize);
        let mut old = [2 as *mut c_void, 1 as *mut c_void, a as _, b as _];
        assert_eq!(
            // SAFETY: a well-formed old layout.
            unsafe { read_depend(old.as_mut_ptr()) },
            vec![Dep::at(a, true), Dep::at(b, false)]
        );
        let obj = [c, DEPEND_IN];
        let mut new = [
            std::ptr::null_mut(),
            4 as *mut c_void,
            1 as _,
            1 as _,
            1 as _,
            a as _,
            b as _,
            c as _,
            obj.as_ptr() as *mut c_void,
        ];
        assert_eq!(
            // SAFETY: a well-formed 5.0 layout with one depobj.
            unsafe { read_depend(new.as_mut_ptr()) },
            vec![
                Dep::at(a, true),
                Dep::at(b, true),
                Dep::at(c, false),
                Dep::at(c, false)
            ]
        );
    }
}
