//! A worker of the `threads` engine: its owner-only state, its main loop and its
//! find-work chain.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_deque::{Steal, Worker};
use locus_mem::pool::Pools;

use super::Registry;
use crate::graph::{execute, Executor, TaskRef};
use crate::sched::Placement;

/// Rounds of looking for work, yielding in between, before going to sleep.
const SPIN_ROUNDS: u32 = 64;

/// The state only the worker's own thread touches (STYLE rule 4); what other workers
/// see is in [`WorkerShared`](super::WorkerShared), what the pool shares is in the
/// [`Registry`].
pub(crate) struct WorkerThread {
    pub(crate) index: usize,
    pub(crate) node: usize,
    deque: Worker<TaskRef>,
    /// xorshift64* state for victim selection.
    rng: Cell<u64>,
    registry: Arc<Registry>,
}

impl WorkerThread {
    pub(crate) fn new(index: usize, deque: Worker<TaskRef>, registry: Arc<Registry>) -> Self {
        WorkerThread {
            index,
            node: registry.worker_node[index],
            deque,
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
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

    /// Runs tasks until the runtime terminates.
    pub(crate) fn main_loop(&self) {
        loop {
            if let Some(task) = self.find_work() {
                execute(self, task);
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
    /// 2. its mailbox: tasks other workers pushed to it (work-pushing, affinity, the
    ///    root of a run);
    /// 3. other workers' deques, oldest first, in the policy's victim order: same node,
    ///    then nodes by increasing cost ([`StealPlan`](crate::sched::StealPlan)).
    fn find_work(&self) -> Option<TaskRef> {
        self.deque
            .pop()
            .or_else(|| self.registry.shared[self.index].mailbox.pop())
            .or_else(|| self.steal())
    }

    /// Step 3 of the chain: tries each victim of the plan once, and again while some
    /// victim reported a lost race.
    fn steal(&self) -> Option<TaskRef> {
        let plan = &self.registry.steal_plans[self.index];
        if plan.is_empty() {
            return None;
        }
        loop {
            let mut retry = false;
            for (class, victim) in plan.victims(self.next_random()) {
                match self.registry.shared[victim].stealer.steal() {
                    Steal::Success(task) => {
                        let counters = task.run.counters.worker(self.index);
                        if plan.is_same_node(class) {
                            counters.steals_same_node.add(1);
                        } else {
                            counters.steals_remote.add(1);
                        }
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
                execute(self, task);
                return;
            }
        }
        let sleep = &self.registry.sleep;
        let ticket = sleep.ticket();
        if let Some(task) = self.find_work() {
            execute(self, task);
            return;
        }
        sleep.sleep(self.index, ticket, &self.registry.terminate);
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

    fn activate(&self, task: TaskRef) {
        match self.registry.ready_policy.place(self.index) {
            Placement::Local => {
                self.deque.push(task);
                self.registry.sleep.new_work(None);
            }
            Placement::Worker(w) => {
                let run = task.run.clone();
                let counters = run.counters.worker(self.index);
                match self.registry.shared[w].mailbox.push(task) {
                    Ok(()) => {
                        counters.pushes_transferred.add(1);
                        self.registry.sleep.new_work(Some(w));
                    }
                    Err(task) => {
                        counters.pushes_rejected.add(1);
                        self.deque.push(task);
                        self.registry.sleep.new_work(None);
                    }
                }
            }
        }
    }

    fn help_while(&self, blocked: &dyn Fn() -> bool) {
        while blocked() {
            match self.find_work() {
                Some(task) => execute(self, task),
                None => std::thread::yield_now(),
            }
        }
    }
}
