//! A worker of the `threads` engine: its owner-only state, its main loop and its
//! find-work chain.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_deque::{self as deque, Worker};
use locus_mem::pool::Pools;

use super::Registry;
use crate::engine::mechanism::{Push, Queues, Steal, Wake};
use crate::engine::StackGuard;
use crate::graph::{
    finish_holding, start, Activated, Bodies, EngineEvent, Executor, Finished, TaskRef,
};
use crate::observe::{Observer, Ready, TaskBytes, TaskSpan};
use crate::sched::LoadView;

/// Rounds of looking for work, yielding in between, before going to sleep.
const SPIN_ROUNDS: u32 = 64;

/// The state only the worker's own thread touches; what other workers
/// see is in [`WorkerShared`](super::WorkerShared), what the pool shares is in the
/// [`Registry`].
pub(crate) struct WorkerThread {
    pub(crate) index: usize,
    pub(crate) node: usize,
    deque: Worker<TaskRef>,
    /// xorshift64* state for victim selection.
    rng: Cell<u64>,
    /// The last worker this one stole from.
    last_victim: Cell<Option<usize>>,
    /// With an observer: the key of the task this worker runs (the task's address), so
    /// that the tasks it makes ready name it ([`Ready::by`]).
    running: Cell<Option<u64>>,
    /// How deep tasks started while the worker waits inside another's body
    /// (`help_while`) may nest on its stack.
    stack: StackGuard,
    /// Whether the worker is finishing a task: the successors it makes ready then may
    /// become its next task, and their announcements wait for the end of the finish
    /// (mechanism module doc, "Hand-over").
    finishing: Cell<bool>,
    /// The task to run as soon as the one finishing is complete ([`Queues::hold_next`]).
    /// The loop that ran the finished task (`run_task`, or a helping loop) takes it
    /// before it runs anything else, and a helping loop that stops helping gives it up
    /// to the deque (the only worker of a runtime keeps it); so with other workers it
    /// is empty whenever a body runs.
    next: Cell<Option<TaskRef>>,
    /// Whether a finishing task pushed successors onto the deque whose announcement is
    /// still due.
    announce_due: Cell<bool>,
    /// Whether the worker counts as a searcher in the sleep protocol (README, "Going to
    /// sleep"): from its start of searching, or its wake-up, to the work it finds or its
    /// going to sleep.
    searching: Cell<bool>,
    /// Finished tasks held back from their run's count (`graph::run`, `Finished`):
    /// given back whenever the worker finds no work.
    finished: Finished,
    /// Whether this is the runtime's only worker.
    alone: bool,
    registry: Arc<Registry>,
}

/// A task's key for observers: its address, unique among live tasks.
fn key(task: &TaskRef) -> u64 {
    TaskRef::as_ptr(task) as usize as u64
}

impl WorkerThread {
    /// Worker `index`, whose thread's stack `stack` guards.
    pub(crate) fn new(
        index: usize,
        deque: Worker<TaskRef>,
        registry: Arc<Registry>,
        stack: StackGuard,
    ) -> Self {
        WorkerThread {
            index,
            node: registry.mechanism.worker_node()[index],
            deque,
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            last_victim: Cell::new(None),
            running: Cell::new(None),
            stack,
            finishing: Cell::new(false),
            next: Cell::new(None),
            announce_due: Cell::new(false),
            searching: Cell::new(false),
            finished: Finished::new(index),
            alone: registry.shared.len() == 1,
            registry,
        }
    }

    /// Runs `task`, found while waiting inside another task's body: it nests on the
    /// stack, so the stack's guard admits it first ([`StackGuard::admit`]).
    /// Runs only `task`: a successor it leaves as the next task stays in the slot, for
    /// the helping loop to take after checking whether it still has to help.
    #[inline]
    fn run_nested(&self, task: TaskRef) {
        self.stack.admit(&task, self.index);
        self.run_one(task);
    }

    /// The task a helping worker runs next: its next task, else what the find-work chain
    /// finds.
    #[inline]
    fn next_or_find(&self) -> Option<TaskRef> {
        self.next.take().or_else(|| self.find_work())
    }

    /// A helping worker stops helping: the next task it holds, which it will not run
    /// now, goes to its deque, where any worker may take it, and is announced. The only
    /// worker of a runtime keeps it: no other could take it, and the slot is the first
    /// place it looks when it next helps or when the body returns (`run_task`).
    #[inline]
    fn give_up_next(&self) {
        if self.alone {
            return;
        }
        if let Some(task) = self.next.take() {
            self.deque.push(task);
            self.registry.mechanism.announce_batch(&mut &*self);
        }
    }

    fn next_random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Runs a ready task here (`start`, then `finish`), observed when an observer is
    /// installed (module doc of the engine, "Observation"), then the successor it left
    /// as this worker's next task, and so on (mechanism module doc, "Hand-over"). The
    /// next-task slot is empty again when this returns. A helping worker runs one task
    /// at a time instead ([`run_nested`](Self::run_nested)).
    #[inline]
    fn run_task(&self, mut task: TaskRef) {
        loop {
            self.run_one(task);
            match self.next.take() {
                Some(next) => task = next,
                None => return,
            }
        }
    }

    /// Runs `task` alone, observed when an observer is installed; a successor it makes
    /// ready may be left in the next-task slot.
    #[inline]
    fn run_one(&self, task: TaskRef) {
        match &self.registry.observer {
            None => {
                if let Some(started) = start(self, task, Bodies::Run) {
                    self.finish(started);
                }
            }
            Some(observer) => self.run_observed(&**observer, task),
        }
    }

    /// Completes a started task ([`finish`]): the first successor this worker keeps
    /// becomes its next task, the others go to its deque and are announced once, at the
    /// end.
    #[inline]
    fn finish(&self, started: crate::graph::Started) {
        self.finishing.set(true);
        finish_holding(self, started, Some(&self.finished));
        self.finishing.set(false);
        if self.announce_due.replace(false) {
            self.registry.mechanism.announce_batch(&mut &*self);
        }
    }

    /// Runs a task as [`run_task`](Self::run_task) does, with the task's span given to `observer` between the body and the
    /// publication of its outputs (so before the run can end).
    #[inline(never)]
    fn run_observed(&self, observer: &dyn Observer, task: TaskRef) {
        let id = key(&task);
        // A task run while helping inside another's body nests: restored below.
        let outer = self.running.replace(Some(id));
        let start_ns = self.registry.now_ns();
        let Some(started) = start(self, task, Bodies::Run) else {
            self.running.set(outer);
            return;
        };
        let end_ns = self.registry.now_ns();
        let observed = crate::observe::guarded("task", || {
            observer.task(&TaskSpan {
                id,
                name: started.name(),
                worker: self.index,
                node: self.node,
                start_ns,
                end_ns,
                bytes: TaskBytes::of(self.node, started.accesses()),
            })
        });
        if let Err(e) = observed {
            started.task().fail_run_with(e);
        }
        self.finish(started);
        self.running.set(outer);
    }

    /// Runs tasks until the runtime terminates.
    pub(crate) fn main_loop(&self) {
        loop {
            if let Some(task) = self.find_work() {
                self.run_task(task);
                continue;
            }
            // Out of work: the finished tasks held back go to their run's count,
            // which may end the run.
            self.finished.give_back();
            if self.registry.terminate.load(Ordering::SeqCst) {
                return;
            }
            self.idle();
        }
    }

    /// The find-work chain ([`Mechanism::find_work`]) over this worker's queues.
    ///
    /// [`Mechanism::find_work`]: crate::engine::mechanism::Mechanism::find_work
    fn find_work(&self) -> Option<TaskRef> {
        self.registry.mechanism.find_work(&mut &*self)
    }

    /// No work was found: search a while if few enough workers search already, then
    /// sleep until woken, and search again (README, "Going to sleep").
    fn idle(&self) {
        let sleep = &self.registry.sleep;
        self.searching.set(sleep.start_searching());
        loop {
            if self.searching.get() {
                for _ in 0..SPIN_ROUNDS {
                    // Finding work ends the search (`Queues::stop_searching`).
                    if let Some(task) = self.find_work() {
                        self.run_task(task);
                        return;
                    }
                    std::thread::yield_now();
                }
            }
            sleep.prepare(self.index, self.searching.replace(false));
            if let Some(task) = self.find_work() {
                if sleep.cancel(self.index) {
                    // Woken meanwhile, and the last searcher: pass the wake-up on.
                    self.registry
                        .mechanism
                        .wake_for(&mut &*self, Wake::Near(self.index));
                }
                self.run_task(task);
                return;
            }
            let woken = sleep.wait(self.index, &self.registry.terminate, true);
            self.searching.set(woken);
            if self.registry.terminate.load(Ordering::Acquire) {
                return;
            }
        }
    }
}

/// The worker's view of the engine's queues, which the shared mechanism drives.
impl Queues for &WorkerThread {
    type Task = TaskRef;

    #[inline]
    fn me(&self) -> usize {
        self.index
    }

    #[inline]
    fn random(&mut self) -> u64 {
        self.next_random()
    }

    #[inline]
    fn push_deque(&mut self, task: TaskRef) {
        self.deque.push(task);
    }

    #[inline]
    fn push_mailbox(&mut self, w: usize, task: TaskRef) -> Push<TaskRef> {
        match self.registry.shared[w].mailbox.push(task) {
            Ok(()) => Push::Queued,
            Err(task) => Push::Full(task),
        }
    }

    fn push_private(&mut self, w: usize, task: TaskRef) {
        self.registry.shared[w].private.push(task);
    }

    fn push_node_private(&mut self, n: usize, task: TaskRef) {
        self.registry.node_private[n].push(task);
    }

    fn push_global(&mut self, task: TaskRef) {
        self.registry.global.push(task);
    }

    #[inline]
    fn pop_deque(&mut self) -> Option<TaskRef> {
        self.deque.pop()
    }

    #[inline]
    fn hold_next(&mut self, task: TaskRef) -> Option<TaskRef> {
        if !self.finishing.get() {
            return Some(task);
        }
        match self.next.take() {
            None => {
                self.next.set(Some(task));
                None
            }
            held => {
                self.next.set(held);
                Some(task)
            }
        }
    }

    #[inline]
    fn take_next(&mut self) -> Option<TaskRef> {
        self.next.take()
    }

    #[inline]
    fn defer_announce(&mut self) -> bool {
        if self.finishing.get() {
            self.announce_due.set(true);
        }
        self.finishing.get()
    }

    #[inline]
    fn pop_private(&mut self) -> Option<TaskRef> {
        self.registry.shared[self.index].private.pop()
    }

    #[inline]
    fn pop_node_private(&mut self) -> Option<TaskRef> {
        self.registry.node_private[self.node].pop()
    }

    #[inline]
    fn pop_mailbox(&mut self) -> Option<TaskRef> {
        self.registry.shared[self.index].mailbox.pop()
    }

    #[inline]
    fn import_mailbox(&mut self) -> usize {
        let mailbox = &self.registry.shared[self.index].mailbox;
        // Popping an empty `ArrayQueue` costs a SeqCst fence; looking costs two loads.
        // A task pushed just after the look is found at the next turn, and its push
        // announced it (the sleep protocol does not rely on this look).
        if mailbox.is_empty() {
            return 0;
        }
        let mut moved = 0;
        while let Some(task) = mailbox.pop() {
            self.deque.push(task);
            moved += 1;
        }
        moved
    }

    #[inline]
    fn pop_global(&mut self) -> Option<TaskRef> {
        self.registry.global.pop()
    }

    fn steal(&mut self, v: usize) -> Steal<TaskRef> {
        from_crossbeam(self.registry.shared[v].stealer.steal())
    }

    fn steal_half(&mut self, v: usize) -> Steal<TaskRef> {
        // About half the victim's deque moves to ours; we run the first.
        from_crossbeam(
            self.registry.shared[v]
                .stealer
                .steal_batch_and_pop(&self.deque),
        )
    }

    fn steal_mailbox(&mut self, v: usize) -> Option<TaskRef> {
        self.registry.shared[v].mailbox.pop()
    }

    fn last_victim(&self) -> Option<usize> {
        self.last_victim.get()
    }

    fn set_last_victim(&mut self, v: usize) {
        self.last_victim.set(Some(v));
    }

    #[inline]
    fn record(&mut self, task: &TaskRef, event: EngineEvent) {
        task.record(self.index, event);
    }

    fn fail_run(&mut self, task: &TaskRef, message: String) {
        task.fail_run(message);
    }

    /// The runtime's only worker announces nothing: the one worker that could sleep
    /// is itself, awake as it pushes (the root, pushed by the thread starting the
    /// run, is announced there).
    #[inline]
    fn announce(&mut self, anyone: bool) -> bool {
        if self.alone {
            return false;
        }
        self.registry.sleep.announce(anyone)
    }

    #[inline]
    fn should_wake(&self, anyone: bool) -> bool {
        self.registry.sleep.should_wake(anyone)
    }

    #[inline]
    fn stop_searching(&mut self) -> bool {
        self.searching.replace(false) && self.registry.sleep.stop_searching()
    }

    fn is_asleep(&self, w: usize) -> bool {
        self.registry.sleep.is_asleep(w)
    }

    fn wake(&mut self, w: usize) -> bool {
        self.registry.sleep.wake(w)
    }
}

impl LoadView for &WorkerThread {
    fn load(&self, w: usize) -> usize {
        self.registry.load(w)
    }
}

fn from_crossbeam(steal: deque::Steal<TaskRef>) -> Steal<TaskRef> {
    match steal {
        deque::Steal::Empty => Steal::Empty,
        deque::Steal::Success(task) => Steal::Success(task),
        deque::Steal::Retry => Steal::Retry,
    }
}

impl Executor for WorkerThread {
    fn worker(&self) -> usize {
        self.index
    }

    fn node(&self) -> usize {
        self.node
    }

    fn pools(&self) -> &Arc<Pools> {
        &self.registry.pools
    }

    fn activate(&self, task: Activated) {
        match &self.registry.observer {
            None => {
                self.registry
                    .mechanism
                    .activate(&mut &*self, task, |task| task);
            }
            // Told before the task is queued, so before it can start anywhere.
            Some(observer) => {
                let at_ns = self.registry.now_ns();
                self.registry.mechanism.activate(&mut &*self, task, |task| {
                    let observed = crate::observe::guarded("ready", || {
                        observer.ready(&Ready {
                            task: key(&task),
                            by: self.running.get(),
                            at_ns,
                        })
                    });
                    if let Err(e) = observed {
                        task.fail_run_with(e);
                    }
                    task
                });
            }
        }
    }

    fn help_while(&self, blocked: &dyn Fn() -> bool) {
        while blocked() {
            match self.next_or_find() {
                Some(task) => self.run_nested(task),
                None => {
                    // Out of work: as in `main_loop`.
                    self.finished.give_back();
                    std::thread::yield_now()
                }
            }
        }
        self.give_up_next();
    }

    fn help_while_work(&self, blocked: &dyn Fn() -> bool) {
        while blocked() {
            match self.next_or_find() {
                Some(task) => self.run_nested(task),
                None => {
                    self.finished.give_back();
                    break;
                }
            }
        }
        self.give_up_next();
    }

    #[inline]
    fn finished(&self) -> Option<&Finished> {
        Some(&self.finished)
    }
}
