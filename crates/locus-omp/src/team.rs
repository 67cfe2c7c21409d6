//! Teams, the stack of OpenMP tasks on each thread, parallel regions and barriers.
//!
//! Every thread has a current *frame*: the OpenMP task it runs (an implicit task of a
//! team, or an explicit task), with its team and team index. Frames nest on a worker's
//! stack as Locus runs other tasks inside a wait; a thread outside any region has its
//! initial frame (a team of one, level 0).
//!
//! A parallel region from a thread outside Locus's workers is one Locus run: the team's
//! implicit tasks, one per worker, each strictly bound to its worker, so that member
//! `i` is worker `i` and the members run concurrently (a barrier needs them all). A
//! region met inside another one (on a worker) is serialised: a team of one, run by
//! the encountering thread, as OpenMP allows when nested parallelism is off.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_uint, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;
use locus::{Affinity, TaskCtx};

use crate::settings::{add_report, die, omp};
use crate::task::{Group, TaskNode};
use crate::work::{WorkShare, WsState};

/// A function of the program with its argument (a region's outlined body).
#[derive(Clone, Copy)]
pub(crate) struct Body {
    pub f: unsafe extern "C" fn(*mut c_void),
    pub data: *mut c_void,
}

// SAFETY: the program hands the body to the team's threads; OpenMP makes it responsible
// for what the body shares between them.
unsafe impl Send for Body {}
// SAFETY: as for `Send`: the runtime only copies the pointers.
unsafe impl Sync for Body {}

impl Body {
    pub fn call(self) {
        // SAFETY: a function and argument the program passed to the runtime to call.
        unsafe { (self.f)(self.data) }
    }
}

/// The explicit tasks of a team not yet complete, counted on one cache line per worker:
/// each worker counts the tasks it creates and those it completes on its own line, so
/// that a task created on one worker and completed on another moves no line between
/// them. (A team-wide count was a line both wrote for every task: on two cores, a
/// fifth of a recursive program's time.)
///
/// The counts only grow. [`Pending::any`] reads every worker's completed count, then
/// every worker's created count, all sequentially consistent, like every increment:
/// in the single order of those operations, a point lies between the two sweeps, where
/// the completed tasks are at least those read and the created ones at most those read.
/// Every completion follows its task's creation in that order, so when the two sums
/// are equal no task was pending at that point; and once none is and every member waits
/// at a barrier, none can be created.
pub(crate) struct Pending {
    lines: Box<[CachePadded<PendingLine>]>,
}

#[derive(Default)]
struct PendingLine {
    created: AtomicU64,
    completed: AtomicU64,
}

impl Pending {
    /// Counts for `workers` workers.
    fn new(workers: usize) -> Pending {
        Pending {
            lines: (0..workers.max(1))
                .map(|_| CachePadded::default())
                .collect(),
        }
    }

    fn line(&self, worker: usize) -> &PendingLine {
        &self.lines[worker % self.lines.len()]
    }

    /// A task is created on `worker` (any worker is correct; its own is cheapest).
    pub fn created(&self, worker: usize) {
        self.line(worker).created.fetch_add(1, Ordering::SeqCst);
    }

    /// A task is complete, on `worker`: the task's last use of its team.
    pub fn completed(&self, worker: usize) {
        self.line(worker).completed.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether some task is not complete (see the type's doc).
    pub fn any(&self) -> bool {
        let completed: u64 = self
            .lines
            .iter()
            .map(|l| l.completed.load(Ordering::SeqCst))
            .sum();
        let created: u64 = self
            .lines
            .iter()
            .map(|l| l.created.load(Ordering::SeqCst))
            .sum();
        created != completed
    }
}

/// A team of threads.
pub(crate) struct Team {
    pub n: usize,
    /// Nesting level of the region (0: the initial team).
    pub level: usize,
    /// Active (more than one thread) regions enclosing and including this one.
    pub active_level: usize,
    /// The enclosing team and this team's encountering thread's index in it.
    pub parent: Option<(Arc<Team>, usize)>,
    /// Explicit tasks of the team not yet complete (a barrier waits for them), counted
    /// per worker (`Pending`).
    pub pending: Pending,
    /// Deferred tasks handed to Locus and not started yet, by the member that created
    /// them: what idle members can take (the throttle, `crate::task`). One cache line
    /// per member: a member counting the tasks it creates, most of which it runs
    /// itself, touches no line another member writes. (A team-wide count was a line
    /// every member wrote for every task; between distant cores its transfers cost
    /// more than the rest of such a task.)
    queued: Box<[CachePadded<AtomicUsize>]>,
    /// Members whose implicit task has started (the region's start gate).
    started: AtomicUsize,
    /// Threads arrived at the current barrier, and its generation.
    arrived: AtomicUsize,
    generation: AtomicUsize,
    /// Work-sharing constructs in progress, by ordinal.
    pub ws: Mutex<HashMap<u64, Arc<WorkShare>>>,
    /// Fewer members than workers: the team's explicit tasks stay on the worker of
    /// their creator, so that `omp_get_thread_num` stays a member's index.
    pub small: bool,
    /// The construct the region starts with (a combined parallel loop or sections).
    first: Option<Arc<WorkShare>>,
    /// `__kmpc_copyprivate`: the data of the member that ran the single region, between
    /// the two barriers of the copy.
    pub copy: AtomicPtr<c_void>,
}

impl Team {
    /// Counts a deferred task created by member `member` as queued.
    pub fn queue(&self, member: usize) {
        if let Some(q) = self.queued.get(member) {
            q.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a task [`queue`](Self::queue) counted for member `member` as started
    /// (or dropped unrun).
    pub fn unqueue(&self, member: usize) {
        if let Some(q) = self.queued.get(member) {
            q.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Deferred tasks member `member` created that have not started.
    pub fn queued_by(&self, member: usize) -> usize {
        self.queued
            .get(member)
            .map_or(0, |q| q.load(Ordering::Relaxed))
    }

    pub fn new(n: usize, parent: Option<(Arc<Team>, usize)>, ws0: Option<Arc<WorkShare>>) -> Team {
        let (level, active) = match &parent {
            Some((p, _)) => (p.level + 1, p.active_level + usize::from(n > 1)),
            None => (0, 0),
        };
        let workers = omp().workers;
        Team {
            n,
            level,
            active_level: active,
            parent,
            // A team of one (a serialised region, made at every encounter, often in a
            // task) gets one line, not one per worker: cheaper to make, and shared by
            // whichever workers run its tasks.
            pending: Pending::new(if n == 1 { 1 } else { workers }),
            queued: (0..n)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            started: AtomicUsize::new(0),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            ws: Mutex::new(ws0.clone().map(|w| (0, w)).into_iter().collect()),
            small: n < workers,
            first: ws0,
            copy: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl Team {
    /// Waits until every member's implicit task has started, without running other
    /// tasks meanwhile.
    ///
    /// A worker waiting inside an explicit task's body (taskwait, an undeferred task's
    /// dependences) runs other ready tasks, and its own member's implicit task is one of
    /// them until it starts. Started there, the implicit task would sit above the
    /// explicit one on the worker's stack: at a barrier it would wait for members that
    /// wait for the explicit task, which cannot finish below it, and the region would
    /// hang. No member creates an explicit task before every implicit task has started,
    /// so each starts at the bottom of its worker's stack.
    fn start_gate(&self) {
        self.started.fetch_add(1, Ordering::AcqRel);
        while self.started.load(Ordering::Acquire) < self.n {
            std::thread::yield_now();
        }
    }
}

/// A frame's team: a counted reference, or, in the frame of a task its creator runs at
/// once (undeferred or throttled), the creator's frame's team, borrowed. Such tasks
/// are most of a recursive program's; counting each of them would make every worker
/// write the team's count.
pub(crate) enum TeamRef {
    Counted(Arc<Team>),
    /// A team alive as long as the frame: held counted by the frame below it, or, in a
    /// deferred task's frame, alive as long as the task is counted in it (`TeamLink`).
    Borrowed(NonNull<Team>),
}

impl TeamRef {
    /// A counted reference to the team, for what may outlive the frame.
    pub fn counted(&self) -> Arc<Team> {
        match self {
            TeamRef::Counted(t) => t.clone(),
            TeamRef::Borrowed(p) => {
                // SAFETY: `p` points into an `Arc<Team>` allocation (it was borrowed
                // from a counted reference or from another borrow of one) that is
                // alive: the frame it came from outlives this one.
                unsafe {
                    Arc::increment_strong_count(p.as_ptr());
                    Arc::from_raw(p.as_ptr())
                }
            }
        }
    }
}

/// A deferred task's team, not counted: every deferred task is counted in its team's
/// `pending` from its creation to its last use of the team (`task::counted_complete`),
/// and the team outlives that count. An active region's team is held by the region until
/// its Locus run has ended, every task of it with it; a serialised region's, until its
/// end found `pending` at zero (`end_serialised`). Counting the team per task would make
/// every member write the team's reference count twice per deferred task.
pub(crate) struct TeamLink(NonNull<Team>);

// SAFETY: a shared reference to a `Team` (`Sync`: atomics and locks), valid as the type
// doc says, from whichever thread runs the task.
unsafe impl Send for TeamLink {}
// SAFETY: as for `Send`.
unsafe impl Sync for TeamLink {}

impl TeamLink {
    /// The team of a deferred task created in a frame of `team`; the task is counted in
    /// `team.pending` already.
    pub fn of(team: &Team) -> TeamLink {
        TeamLink(NonNull::from(team))
    }
}

impl std::ops::Deref for TeamLink {
    type Target = Team;

    fn deref(&self) -> &Team {
        // SAFETY: the team outlives the task's count in it (the type doc), and the task
        // uses its team only until it is counted complete.
        unsafe { self.0.as_ref() }
    }
}

impl std::ops::Deref for TeamRef {
    type Target = Team;

    fn deref(&self) -> &Team {
        match self {
            TeamRef::Counted(t) => t,
            // SAFETY: alive as long as this frame, as above.
            TeamRef::Borrowed(p) => unsafe { p.as_ref() },
        }
    }
}

/// The OpenMP task a thread runs.
pub(crate) struct Frame {
    /// The Locus context of the body running on this worker (null off workers).
    pub ctx: *const TaskCtx,
    pub team: TeamRef,
    pub thread_num: usize,
    pub task: Arc<TaskNode>,
    pub implicit: bool,
    /// Work-sharing state of an implicit task.
    pub ws: RefCell<WsState>,
    /// Taskgroups open in this task, innermost last.
    pub groups: RefCell<Vec<Arc<Group>>>,
    /// A node of a task this frame's task ran at once and that nothing else held when
    /// it ended, kept for the next such task ([`Frame::node_for_child`]): a recursive
    /// program's tasks are mostly run at once, and most make no deferred child.
    spare: Cell<Option<Arc<TaskNode>>>,
}

impl Frame {
    pub fn new(
        ctx: *const TaskCtx,
        team: Arc<Team>,
        thread_num: usize,
        task: Arc<TaskNode>,
        implicit: bool,
    ) -> Frame {
        let ws0 = if implicit { team.first.clone() } else { None };
        Frame {
            ctx,
            team: TeamRef::Counted(team),
            thread_num,
            task,
            implicit,
            ws: RefCell::new(WsState::new(ws0)),
            groups: RefCell::new(Vec::new()),
            spare: Cell::new(None),
        }
    }

    /// The frame of deferred task `task` of `team`, run on the worker of `ctx` as
    /// member `thread_num`. The frame does not count the team: it is dropped once the
    /// task has been counted complete, and never used after (`TeamLink`).
    pub fn deferred(
        ctx: *const TaskCtx,
        team: TeamLink,
        thread_num: usize,
        task: Arc<TaskNode>,
    ) -> Frame {
        Frame::explicit(ctx, team.0, thread_num, task)
    }

    /// The frame of explicit task `task`, run at once by its creator in frame `outer`.
    ///
    /// # Safety
    ///
    /// The frame is dropped before `outer`.
    pub unsafe fn inside(outer: &Frame, task: Arc<TaskNode>) -> Frame {
        Frame::explicit(
            outer.ctx,
            NonNull::from(&*outer.team),
            outer.thread_num,
            task,
        )
    }

    /// The frame of an explicit task of the team `team` points to, which the frame
    /// borrows (its callers say why the team outlives it).
    fn explicit(
        ctx: *const TaskCtx,
        team: NonNull<Team>,
        thread_num: usize,
        task: Arc<TaskNode>,
    ) -> Frame {
        Frame {
            ctx,
            team: TeamRef::Borrowed(team),
            thread_num,
            task,
            implicit: false,
            ws: RefCell::new(WsState::new(None)),
            groups: RefCell::new(Vec::new()),
            spare: Cell::new(None),
        }
    }

    /// The frame's task, the frame left.
    pub fn into_task(self) -> Arc<TaskNode> {
        self.task
    }

    /// The node of a task created in this frame: the spare one renewed, or a new one.
    pub fn node_for_child(&self, final_: bool, group: Option<Arc<Group>>) -> Arc<TaskNode> {
        let run_sched = self.task.run_sched();
        if let Some(mut spare) = self.spare.take() {
            if let Some(node) = Arc::get_mut(&mut spare) {
                node.renew(final_, group, run_sched);
                return spare;
            }
        }
        Arc::new(TaskNode::new(final_, group, run_sched))
    }

    /// Keeps `node`, of a task this frame's task ran at once and that has ended, as the
    /// spare for the next one, when nothing else holds it (a deferred child of it may).
    pub fn keep_spare(&self, mut node: Arc<TaskNode>) {
        if Arc::get_mut(&mut node).is_some() {
            self.spare.set(Some(node));
        }
    }

    /// The taskgroup a task created now belongs to: the innermost one open here, or
    /// the one this task belongs to.
    pub fn group(&self) -> Option<Arc<Group>> {
        self.groups
            .borrow()
            .last()
            .cloned()
            .or_else(|| self.task.group.clone())
    }

    /// Runs other tasks on this worker while `blocked` holds (yields off workers).
    pub fn help_while(&self, blocked: &dyn Fn() -> bool) {
        if self.ctx.is_null() {
            while blocked() {
                std::thread::yield_now();
            }
        } else {
            // SAFETY: a frame's context is that of the body running it on this thread,
            // alive until the frame is left (`enter`).
            let ctx = unsafe { &*self.ctx };
            // Once the run has failed, tasks are drained unrun and members may never
            // arrive: the wait ends, and the region with the run's error.
            ctx.help_while(&|| blocked() && !ctx.scope().has_failed());
        }
    }

    /// The worker running this frame, if it is on one.
    pub fn worker(&self) -> Option<usize> {
        // SAFETY: as in `help_while`.
        (!self.ctx.is_null()).then(|| unsafe { &*self.ctx }.worker())
    }
}

thread_local! {
    static CURRENT: Cell<*const Frame> = const { Cell::new(std::ptr::null()) };
    static INITIAL: Frame = {
        let team = Arc::new(Team::new(1, None, None));
        let sched = omp().run_sched.load(Ordering::Relaxed);
        Frame::new(std::ptr::null(), team, 0, Arc::new(TaskNode::new(false, None, sched)), true)
    };
}

/// Calls `f` with the calling thread's current frame.
pub(crate) fn with_frame<R>(f: impl FnOnce(&Frame) -> R) -> R {
    with_frame_slot(|frame, _| f(frame))
}

/// The calling thread's current-frame variable, found once: a task run at once enters
/// its frame and leaves it without looking the thread-local variable up again.
#[derive(Clone, Copy)]
pub(crate) struct Slot(*const Cell<*const Frame>);

impl Slot {
    /// Runs `f` with `frame` as the thread's current frame.
    pub fn enter<R>(self, frame: &Frame, f: impl FnOnce() -> R) -> R {
        struct Restore<'a>(&'a Cell<*const Frame>, *const Frame);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.0.set(self.1);
            }
        }
        // SAFETY: the thread's own variable (a `Slot` is not `Send`), alive as long as
        // the thread.
        let current = unsafe { &*self.0 };
        let _restore = Restore(current, current.replace(frame));
        f()
    }
}

/// Calls `f` with the calling thread's current frame and its current-frame variable.
pub(crate) fn with_frame_slot<R>(f: impl FnOnce(&Frame, Slot) -> R) -> R {
    CURRENT.with(|c| {
        let (current, slot) = (c.get(), Slot(c));
        if current.is_null() {
            INITIAL.with(|initial| f(initial, slot))
        } else {
            // SAFETY: `current` is a frame on this thread's stack, set by `enter` and
            // reset before that frame is dropped.
            f(unsafe { &*current }, slot)
        }
    })
}

/// Runs `f` with `frame` as the thread's current frame.
pub(crate) fn enter<R>(frame: &Frame, f: impl FnOnce() -> R) -> R {
    CURRENT.with(|c| Slot(c).enter(frame, f))
}

thread_local! {
    /// Frames pushed by `GOMP_parallel_start` until `GOMP_parallel_end` (boxed: the
    /// current frame is pointed to, so it must not move as the stack grows).
    #[allow(clippy::vec_box)]
    static STARTED: RefCell<Vec<Box<Frame>>> = const { RefCell::new(Vec::new()) };
    /// The frames current before each frame made current by `push_frame`.
    static PUSHED: RefCell<Vec<*const Frame>> = const { RefCell::new(Vec::new()) };
}

/// Makes `frame` the thread's current frame until [`pop_frame`], for constructs whose
/// start and end are separate calls of the program (the caller keeps `frame` alive and
/// in place until then).
pub(crate) fn push_frame(frame: &Frame) {
    let previous = CURRENT.with(|c| c.replace(frame));
    PUSHED.with(|p| p.borrow_mut().push(previous));
}

/// Restores the frame current before `frame` was pushed.
pub(crate) fn pop_frame(frame: &Frame) {
    let previous = PUSHED.with(|p| p.borrow_mut().pop());
    let current = CURRENT.with(Cell::get);
    match previous {
        Some(p) if std::ptr::eq(current, frame) => CURRENT.with(|c| c.set(p)),
        _ => die("a construct ended on a thread where it did not start, or out of order"),
    }
}

/// A parallel region: `body` run by a team of `requested` threads (0: the default).
pub(crate) fn parallel(body: Body, requested: c_uint, ws0: Option<Arc<WorkShare>>) {
    let omp = omp();
    with_frame(|outer| {
        if !outer.ctx.is_null() || outer.team.level > 0 {
            serialised(outer, body, ws0);
            return;
        }
        let wanted = if requested == 0 {
            omp.nthreads.load(Ordering::Relaxed)
        } else {
            requested as usize
        };
        let n = wanted.clamp(1, omp.workers);
        if wanted > n {
            warn_team_capped(wanted, n);
        }
        let team = Arc::new(Team::new(
            n,
            Some((outer.team.counted(), outer.thread_num)),
            ws0,
        ));
        let _one_at_a_time = omp.run_lock.lock().unwrap_or_else(|p| p.into_inner());
        omp.counters.regions.fetch_add(1, Ordering::Relaxed);
        omp.counters
            .implicit_tasks
            .fetch_add(n as u64, Ordering::Relaxed);
        // Each implicit task inherits the encountering task's data environment.
        let sched = outer.task.run_sched();
        let finished = omp.rt.run(|s| {
            for i in 0..n {
                let team = team.clone();
                let spawned = s
                    .task("omp-implicit-task", ())
                    .affinity(Affinity::worker(i).strict())
                    .spawn_control(move |ctx| {
                        team.start_gate();
                        let task = Arc::new(TaskNode::new(false, None, sched));
                        let frame = Frame::new(ctx, team, i, task, true);
                        enter(&frame, || body.call());
                    });
                if let Err(e) = spawned {
                    die(&format!("cannot start a parallel region: {e}"));
                }
            }
        });
        match finished {
            Ok(f) => add_report(omp, f.report),
            Err(e) => die(&format!("parallel region failed: {}", e.error)),
        }
    });
}

/// Says once per process that a region got fewer threads than it asked for (OpenMP
/// leaves the number delivered to the implementation; a program that counts on it
/// should know).
fn warn_team_capped(wanted: usize, workers: usize) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "locus omp: a team of {wanted} threads was asked for; Locus's OpenMP runtime runs \
             teams of at most {workers} threads, one per worker (set the workers with \
             OMP_NUM_THREADS or locus omp --threads)"
        );
    }
}

/// A region run by a team of one: the encountering thread.
fn serialised(outer: &Frame, body: Body, ws0: Option<Arc<WorkShare>>) {
    let team = Arc::new(Team::new(
        1,
        Some((outer.team.counted(), outer.thread_num)),
        ws0,
    ));
    let frame = Frame::new(
        outer.ctx,
        team,
        0,
        Arc::new(TaskNode::new(false, None, outer.task.run_sched())),
        true,
    );
    enter(&frame, || body.call());
    end_serialised(&frame);
}

fn end_serialised(frame: &Frame) {
    let team = &frame.team;
    frame.help_while(&|| team.pending.any());
}

/// `GOMP_parallel_start`: the old entry point, after which the caller runs the body
/// itself and calls `GOMP_parallel_end`. The region is serialised (a team of one).
pub(crate) fn parallel_start(ws0: Option<Arc<WorkShare>>) {
    let frame = with_frame(|outer| {
        let team = Arc::new(Team::new(
            1,
            Some((outer.team.counted(), outer.thread_num)),
            ws0,
        ));
        Box::new(Frame::new(
            outer.ctx,
            team,
            0,
            Arc::new(TaskNode::new(false, None, outer.task.run_sched())),
            true,
        ))
    });
    push_frame(&frame);
    STARTED.with(|s| s.borrow_mut().push(frame));
}

/// `GOMP_parallel_end`.
pub(crate) fn parallel_end() {
    let Some(frame) = STARTED.with(|s| s.borrow_mut().pop()) else {
        die("the end of a serialised parallel region that was not started");
    };
    end_serialised(&frame);
    pop_frame(&frame);
}

/// A barrier of the current team: every member arrives, and every explicit task of
/// the team completes; waiting members run other tasks meanwhile.
pub(crate) fn barrier(frame: &Frame) {
    if !frame.implicit {
        die("a barrier inside an explicit task (OpenMP forbids it)");
    }
    let team = &frame.team;
    let all_done = || team.pending.any();
    if team.n == 1 {
        frame.help_while(&all_done);
        return;
    }
    let generation = team.generation.load(Ordering::Acquire);
    if team.arrived.fetch_add(1, Ordering::AcqRel) + 1 == team.n {
        frame.help_while(&all_done);
        // Reset before the release: no member passes the barrier (and arrives at the
        // next one) before the generation moves.
        team.arrived.store(0, Ordering::Relaxed);
        team.generation.fetch_add(1, Ordering::Release);
    } else {
        frame.help_while(&|| team.generation.load(Ordering::Acquire) == generation);
    }
    if frame.task.children.load(Ordering::Acquire) == 0 {
        frame.task.forget_dependences();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counts_tasks_created_and_completed_on_different_workers() {
        let p = Pending::new(3);
        assert!(!p.any());
        p.created(0);
        p.created(0);
        p.completed(1);
        assert!(p.any());
        p.completed(2);
        assert!(!p.any());
        // A worker index past the lines shares one.
        p.created(7);
        assert!(p.any());
        p.completed(0);
        assert!(!p.any());
    }

    /// One task is always pending: each holder creates the next task on its own line,
    /// then completes its own there (created on the previous holder's line), and passes
    /// the next one on. A reader summing the created counts before the completed ones
    /// would see a turn's completion without its creation and find nothing pending.
    #[test]
    fn a_task_passed_between_workers_is_always_seen_pending() {
        const WORKERS: usize = 3;
        const DONE: usize = usize::MAX;
        let p = Pending::new(WORKERS);
        let holder = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        p.created(0);
        std::thread::scope(|s| {
            for w in 0..WORKERS {
                let (p, holder, stop) = (&p, &holder, &stop);
                s.spawn(move || loop {
                    match holder.load(Ordering::Acquire) {
                        DONE => return,
                        h if h == w => {
                            if stop.load(Ordering::Relaxed) {
                                p.completed(w);
                                holder.store(DONE, Ordering::Release);
                                return;
                            }
                            p.created(w);
                            p.completed(w);
                            holder.store((w + 1) % WORKERS, Ordering::Release);
                        }
                        _ => std::hint::spin_loop(),
                    }
                });
            }
            let missed = (0..200_000).filter(|_| !p.any()).count();
            stop.store(true, Ordering::Relaxed);
            assert_eq!(missed, 0, "a pending task was missed");
        });
        assert!(!p.any());
    }
}
