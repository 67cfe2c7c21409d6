//! A worker of the `threads` engine: its owner-only state, its main loop and its
//! find-work chain.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_deque::{Steal, Worker};
use locus_mem::pool::Pools;

use super::Registry;
use crate::graph::{execute, finish, start, Activated, Bodies, EngineEvent, Executor, TaskRef};
use crate::observe::{Observer, TaskBytes, TaskSpan};
use crate::sched::{KeepReason, Placement, ReadyTask};

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
    registry: Arc<Registry>,
}

impl WorkerThread {
    pub(crate) fn new(index: usize, deque: Worker<TaskRef>, registry: Arc<Registry>) -> Self {
        WorkerThread {
            index,
            node: registry.worker_node[index],
            deque,
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            last_victim: Cell::new(None),
            registry,
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

    /// Runs a ready task here: [`execute`], observed when an observer is installed
    /// (module doc of the engine, "Observation").
    #[inline]
    fn run_task(&self, task: TaskRef) {
        match &self.registry.observer {
            None => execute(self, task),
            Some(observer) => self.run_observed(&**observer, task),
        }
    }

    /// [`execute`], with the task's span given to `observer` between the body and the
    /// publication of its outputs (so before the run can end).
    #[inline(never)]
    fn run_observed(&self, observer: &dyn Observer, task: TaskRef) {
        let start_ns = self.registry.now_ns();
        let Some(started) = start(self, task, Bodies::Run) else {
            return;
        };
        let end_ns = self.registry.now_ns();
        observer.task(&TaskSpan {
            name: started.name(),
            worker: self.index,
            node: self.node,
            start_ns,
            end_ns,
            bytes: TaskBytes::of(self.node, started.accesses()),
        });
        finish(self, started);
    }

    /// Runs tasks until the runtime terminates.
    pub(crate) fn main_loop(&self) {
        loop {
            if let Some(task) = self.find_work() {
                self.run_task(task);
                continue;
            }
            if self.registry.terminate.load(Ordering::SeqCst) {
                return;
            }
            self.idle();
        }
    }

    /// The find-work chain, nearest work first:
    ///
    /// 1. the worker's own deque (newest first: the task it just activated is hot in its
    ///    cache);
    /// 2. the tasks only this worker may run (strict worker hints, the run's root);
    /// 3. the tasks only this node's workers may run (strict node hints);
    /// 4. its mailbox: tasks other workers pushed to it (work-pushing, hints);
    /// 5. other workers' deques (oldest first) and mailboxes, in the policy's victim
    ///    order: same node, then nodes by increasing cost
    ///    ([`StealPlan`](crate::sched::StealPlan)).
    fn find_work(&self) -> Option<TaskRef> {
        let me = &self.registry.shared[self.index];
        self.deque
            .pop()
            .or_else(|| me.private.pop())
            .or_else(|| self.registry.node_private[self.node].pop())
            .or_else(|| me.mailbox.pop())
            .or_else(|| self.steal())
    }

    /// Step 5 of the chain: tries each victim of the plan once (the last one that had
    /// work first, when that refinement is on), and again while some victim reported a
    /// lost race.
    fn steal(&self) -> Option<TaskRef> {
        let plan = &self.registry.steal_plans[self.index];
        if plan.is_empty() {
            return None;
        }
        let first = if self.registry.last_victim_first {
            self.last_victim.get()
        } else {
            None
        };
        loop {
            let mut retry = false;
            for (class, index) in plan.victims_from(first, self.next_random()) {
                let victim = &self.registry.shared[index];
                let attempt = if self.registry.steal_half {
                    // About half the victim's deque moves to ours; we run the first.
                    victim.stealer.steal_batch_and_pop(&self.deque)
                } else {
                    victim.stealer.steal()
                };
                let stolen = match attempt {
                    Steal::Empty => victim.mailbox.pop().map_or(Steal::Empty, Steal::Success),
                    other => other,
                };
                match stolen {
                    Steal::Success(task) => {
                        task.record(
                            self.index,
                            if plan.is_same_node(class) {
                                EngineEvent::StealSameNode
                            } else {
                                EngineEvent::StealRemote
                            },
                        );
                        self.last_victim.set(Some(index));
                        // More work may be left for a sleeping worker (README).
                        if self.registry.sleep.has_sleepers() {
                            self.registry.sleep.wake_any();
                        }
                        return Some(task);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// No work was found: spin a little, then sleep (README, "Going to sleep").
    fn idle(&self) {
        for _ in 0..SPIN_ROUNDS {
            std::thread::yield_now();
            if let Some(task) = self.find_work() {
                self.run_task(task);
                return;
            }
        }
        let sleep = &self.registry.sleep;
        let ticket = sleep.ticket();
        if let Some(task) = self.find_work() {
            self.run_task(task);
            return;
        }
        sleep.sleep(self.index, ticket, &self.registry.terminate);
    }
}

impl WorkerThread {
    /// Keeps an activated task on this worker's own deque.
    fn keep(&self, task: TaskRef) {
        self.deque.push(task);
        self.registry.sleep.new_work(None);
    }

    /// Sends a task to worker `w`'s mailbox, or keeps it if the mailbox is full
    /// (paper 1 Algorithm 1, lines 30-32). `pushed` says whether work-pushing decided it.
    fn transfer(&self, task: TaskRef, w: usize, pushed: bool) {
        if w == self.index {
            self.keep(task);
            return;
        }
        // The counters are the task's run's; keep a handle, as the push moves the task.
        // Recording after the push is safe: the activator is inside a task of the same
        // run (the one that satisfied the dependence, or the submitter) that has not
        // finished, so the run cannot end and read the counters before this.
        let record = pushed.then(|| task.clone());
        match self.registry.shared[w].mailbox.push(task) {
            Ok(()) => {
                if let Some(t) = record {
                    t.record(self.index, EngineEvent::PushTransferred);
                }
                self.registry.sleep.new_work(Some(w));
            }
            Err(task) => {
                if pushed {
                    task.record(self.index, EngineEvent::PushRejected);
                }
                self.keep(task);
            }
        }
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
        let registry = &self.registry;
        let policy = &registry.ready_policy;
        let hinted = task.has_affinity();
        if !hinted && !policy.needs_accesses() {
            self.keep(task.into_task());
            return;
        }
        let ready = task.describe(policy.needs_accesses());
        let placement = policy.place(
            self.node,
            &ReadyTask {
                accesses: &ready.accesses,
                affinity: ready.affinity,
            },
            &registry.topology,
            &registry.worker_node,
            &**registry,
        );
        task.set_preferred_node(placement.preferred_node(&registry.worker_node, self.node));
        let task = task.into_task();
        match placement {
            Placement::Local(reason) => {
                if reason == KeepReason::BelowThreshold {
                    task.record(self.index, EngineEvent::PushKeptLocal);
                }
                self.keep(task);
            }
            Placement::Node(node) => {
                if !hinted {
                    task.record(self.index, EngineEvent::PushAttempted);
                }
                let candidates = &registry.workers_of_node[node];
                if candidates.is_empty() {
                    // A node with memory and no workers: run where we are.
                    self.keep(task);
                } else {
                    let w = candidates[(self.next_random() % candidates.len() as u64) as usize];
                    self.transfer(task, w, !hinted);
                }
            }
            Placement::Worker(w) => self.transfer(task, w, false),
            Placement::StrictWorker(w) => {
                registry.shared[w].private.push(task);
                registry.sleep.new_work_for(&[w]);
            }
            Placement::StrictNode(node) => {
                let candidates = &registry.workers_of_node[node];
                if candidates.is_empty() {
                    task.fail_run(format!(
                        "strict affinity to node {node}, which has no workers"
                    ));
                    // The failed run drains the task without running its body.
                    self.keep(task);
                } else {
                    registry.node_private[node].push(task);
                    registry.sleep.new_work_for(candidates);
                }
            }
        }
    }

    fn help_while(&self, blocked: &dyn Fn() -> bool) {
        while blocked() {
            match self.find_work() {
                Some(task) => self.run_task(task),
                None => std::thread::yield_now(),
            }
        }
    }
}
