//! The simulated workers' queues, modelled, and their implementation of the shared
//! mechanism's [`Queues`]: the decisions (where a ready task goes, the find-work chain,
//! whom to wake) are those of [`locus::engine::Mechanism`], the same code the `threads`
//! engine runs; this module only holds the queues and charges simulated time for the
//! operations.
//!
//! A worker's queues are the `threads` engine's: a deque (the owner takes the newest,
//! thieves the oldest, a batch steal takes about half exactly as crossbeam's
//! `steal_batch_and_pop` does), a mailbox bounded by `mailbox_capacity`, a private
//! queue, one private queue per node, and the global queue of breadth-first
//! scheduling.
//!
//! What the operations of one call of the mechanism leave for the event loop is
//! returned as [`Effects`]: the tasks pushed, which become visible (arrive) once their
//! pusher has paid for them; the workers woken, which look for work after the wake-up
//! latency; the time spent, and the steal attempts made.

use std::collections::{BTreeSet, VecDeque};

use locus::engine::mechanism::{Push, Queue, Queues, Steal};
use locus::engine::EngineEvent;
use locus::sched::LoadView;
use rand::rngs::SmallRng;
use rand::RngCore;

/// Most tasks one batch steal takes, the one returned included (crossbeam-deque's
/// `MAX_BATCH`).
const MAX_BATCH: usize = 32;

/// What the model needs of a queued task.
pub(crate) trait Recorded: Clone {
    /// Records a decision in worker `worker`'s counters of the task's run.
    fn record(&self, worker: usize, event: EngineEvent);
    /// Fails the task's run.
    fn fail_run(&self, message: String);
}

/// One worker's queues.
pub(crate) struct WorkerQueues<T> {
    deque: VecDeque<T>,
    mailbox: VecDeque<T>,
    /// Pushes on their way to the mailbox (count against its capacity).
    mailbox_incoming: usize,
    /// Tasks on their way to the deque or the private queue.
    arriving: usize,
    private: VecDeque<T>,
    /// The worker's next task: a successor it made ready while finishing a task
    /// (mechanism module doc, "Hand-over"), or one on its way there.
    next: Option<T>,
    next_sent: bool,
    last_victim: Option<usize>,
}

/// Who sleeps and who searches, counted as the `threads` engine counts them
/// (`engine/threads/README.md`): sets instead of counts, the decisions the same.
#[derive(Debug, Default)]
pub(crate) struct Idle {
    /// Sleeping workers not yet woken.
    pub(crate) asleep: BTreeSet<usize>,
    /// Searching workers: idle workers looking for work before they sleep (at most
    /// `most_searching`), and woken ones until they find work or sleep again.
    pub(crate) searching: BTreeSet<usize>,
    /// Half the workers, at least one.
    most_searching: usize,
}

impl Idle {
    /// `workers` workers, all busy.
    pub(crate) fn new(workers: usize) -> Self {
        Idle {
            most_searching: (workers / 2).max(1),
            ..Idle::default()
        }
    }

    /// Worker `w` goes to sleep, and stops searching if it searched.
    pub(crate) fn fall_asleep(&mut self, w: usize) {
        self.searching.remove(&w);
        self.asleep.insert(w);
    }

    /// Idle worker `w` starts searching, unless half the workers (at least one) search
    /// already; returns whether it searches.
    pub(crate) fn start_searching(&mut self, w: usize) -> bool {
        if self.searching.len() >= self.most_searching {
            return false;
        }
        self.searching.insert(w);
        true
    }

    /// [`Queues::should_wake`]: a worker sleeps and, for work `anyone` may take, none
    /// searches.
    pub(crate) fn should_wake(&self, anyone: bool) -> bool {
        !self.asleep.is_empty() && (!anyone || self.searching.is_empty())
    }

    /// [`Queues::stop_searching`] for worker `w`: the last searcher to find work, while
    /// a worker sleeps, wakes one.
    pub(crate) fn stop_searching(&mut self, w: usize) -> bool {
        self.searching.remove(&w) && self.searching.is_empty() && !self.asleep.is_empty()
    }

    /// Wakes worker `w` if it sleeps; it counts as a searcher from here on.
    pub(crate) fn wake(&mut self, w: usize) -> bool {
        let woken = self.asleep.remove(&w);
        if woken {
            self.searching.insert(w);
        }
        woken
    }
}

/// Every worker's queues, and who sleeps.
pub(crate) struct Model<T> {
    workers: Vec<WorkerQueues<T>>,
    worker_node: Vec<usize>,
    node_private: Vec<VecDeque<T>>,
    global: VecDeque<T>,
    /// Who sleeps and who searches.
    idle: Idle,
    /// Tasks in deques, which thieves may take.
    in_deques: usize,
    /// Tasks in the mailboxes of each node's workers, which thieves of the node (or,
    /// with random or vicinity stealing, any thief) may take.
    in_mailboxes: Vec<usize>,
}

/// What the operations cost, in simulated nanoseconds.
pub(crate) struct Charges {
    /// `attempt_ns[i][j]`: one steal attempt by a worker of node `i` on one of node `j`.
    pub(crate) attempt_ns: Vec<Vec<u64>>,
    /// A full sweep over each worker's victims.
    pub(crate) sweep_ns: Vec<u64>,
    /// The number of victims of each worker.
    pub(crate) victims: Vec<usize>,
    /// A transfer to a mailbox.
    pub(crate) push_ns: u64,
    /// Capacity of a mailbox.
    pub(crate) mailbox_capacity: usize,
}

impl<T> Model<T> {
    pub(crate) fn new(worker_node: &[usize], nodes: usize) -> Self {
        Model {
            workers: worker_node
                .iter()
                .map(|_| WorkerQueues {
                    deque: VecDeque::new(),
                    mailbox: VecDeque::new(),
                    mailbox_incoming: 0,
                    arriving: 0,
                    private: VecDeque::new(),
                    next: None,
                    next_sent: false,
                    last_victim: None,
                })
                .collect(),
            worker_node: worker_node.to_vec(),
            node_private: (0..nodes).map(|_| VecDeque::new()).collect(),
            global: VecDeque::new(),
            idle: Idle::new(worker_node.len()),
            in_deques: 0,
            in_mailboxes: vec![0; nodes],
        }
    }

    /// A task is on its way to `queue` (the run's root, injected by the engine).
    pub(crate) fn sent(&mut self, queue: Queue) {
        match queue {
            Queue::Deque(w) | Queue::Private(w) => self.workers[w].arriving += 1,
            Queue::Mailbox(w) => self.workers[w].mailbox_incoming += 1,
            Queue::Next(w) => self.workers[w].next_sent = true,
            Queue::NodePrivate(_) | Queue::Global(_) => {}
        }
    }

    /// A task sent to `queue` becomes visible there. The caller then wakes whom
    /// [`Queue::wakes`] says, through the mechanism.
    pub(crate) fn arrive(&mut self, queue: Queue, task: T) {
        match queue {
            Queue::Deque(w) => {
                self.workers[w].arriving -= 1;
                self.workers[w].deque.push_back(task);
                self.in_deques += 1;
            }
            Queue::Mailbox(w) => {
                self.workers[w].mailbox_incoming -= 1;
                self.workers[w].mailbox.push_back(task);
                self.in_mailboxes[self.worker_node[w]] += 1;
            }
            Queue::Private(w) => {
                self.workers[w].arriving -= 1;
                self.workers[w].private.push_back(task);
            }
            Queue::NodePrivate(n) => self.node_private[n].push_back(task),
            Queue::Global(_) => self.global.push_back(task),
            Queue::Next(w) => {
                let worker = &mut self.workers[w];
                worker.next_sent = false;
                debug_assert!(worker.next.is_none(), "one next task at a time");
                worker.next = Some(task);
            }
        }
    }

    /// Worker `w` goes to sleep, and stops searching if it searched.
    pub(crate) fn fall_asleep(&mut self, w: usize) {
        self.idle.fall_asleep(w);
    }

    /// Idle worker `w` starts searching, unless half the workers (at least one) search
    /// already; returns whether it searches.
    pub(crate) fn start_searching(&mut self, w: usize) -> bool {
        self.idle.start_searching(w)
    }

    /// Whether worker `w` searches.
    pub(crate) fn is_searching(&self, w: usize) -> bool {
        self.idle.searching.contains(&w)
    }

    /// Worker `w`'s view, for one call of the mechanism.
    pub(crate) fn view<'a>(
        &'a mut self,
        w: usize,
        rng: &'a mut SmallRng,
        charges: &'a Charges,
    ) -> View<'a, T> {
        View {
            model: self,
            me: w,
            finishing: false,
            rng,
            charges,
            effects: Effects {
                spent: 0,
                arrivals: Vec::new(),
                woken: Vec::new(),
                steal_attempts: 0,
            },
        }
    }
}

/// What one call of the mechanism did, for the event loop to carry on.
pub(crate) struct Effects<T> {
    /// Simulated time the worker spent in the call.
    pub(crate) spent: u64,
    /// Tasks pushed, each with the time (since the call started) at which it becomes
    /// visible in its queue.
    pub(crate) arrivals: Vec<(u64, Queue, T)>,
    /// Workers woken, each with the time (since the call started) of its wake-up.
    pub(crate) woken: Vec<(usize, u64)>,
    /// Steal attempts made (a skipped futile sweep counts all of its attempts).
    pub(crate) steal_attempts: u64,
}

/// Worker `me`'s view of the modelled queues.
pub(crate) struct View<'a, T> {
    model: &'a mut Model<T>,
    me: usize,
    /// Whether `me` is finishing a task, so that a successor it keeps may become its
    /// next task.
    finishing: bool,
    rng: &'a mut SmallRng,
    charges: &'a Charges,
    effects: Effects<T>,
}

impl<T> View<'_, T> {
    /// The view of a worker finishing a task ([`Queues::hold_next`]).
    pub(crate) fn finishing(mut self) -> Self {
        self.finishing = true;
        self
    }

    /// Ends the call: what it left for the event loop.
    pub(crate) fn done(self) -> Effects<T> {
        self.effects
    }

    fn send(&mut self, queue: Queue, task: T) {
        self.model.sent(queue);
        self.effects
            .arrivals
            .push((self.effects.spent, queue, task));
    }

    /// Pays one steal attempt on `v`.
    fn attempt(&mut self, v: usize) {
        let node = self.model.worker_node[self.me];
        self.effects.steal_attempts += 1;
        self.effects.spent += self.charges.attempt_ns[node][self.model.worker_node[v]];
    }
}

impl<T> LoadView for View<'_, T> {
    fn load(&self, w: usize) -> usize {
        // Tasks already sent count: a burst of activations placed at one instant must
        // see the load the earlier ones add, as the `threads` engine's queues do.
        let s = &self.model.workers[w];
        s.deque.len()
            + s.mailbox.len()
            + s.private.len()
            + s.mailbox_incoming
            + s.arriving
            + usize::from(s.next.is_some() || s.next_sent)
    }
}

impl<T: Recorded> Queues for View<'_, T> {
    type Task = T;

    fn me(&self) -> usize {
        self.me
    }

    fn random(&mut self) -> u64 {
        self.rng.next_u64()
    }

    fn push_deque(&mut self, task: T) {
        self.send(Queue::Deque(self.me), task);
    }

    fn push_mailbox(&mut self, w: usize, task: T) -> Push<T> {
        let target = &self.model.workers[w];
        if target.mailbox.len() + target.mailbox_incoming >= self.charges.mailbox_capacity {
            return Push::Full(task);
        }
        self.effects.spent += self.charges.push_ns;
        self.send(Queue::Mailbox(w), task);
        Push::Queued
    }

    fn push_private(&mut self, w: usize, task: T) {
        self.send(Queue::Private(w), task);
    }

    fn push_node_private(&mut self, n: usize, task: T) {
        self.send(Queue::NodePrivate(n), task);
    }

    /// A push onto the one queue every worker shares costs what a transfer to a
    /// mailbox does.
    fn push_global(&mut self, task: T) {
        self.effects.spent += self.charges.push_ns;
        self.send(Queue::Global(self.me), task);
    }

    fn pop_deque(&mut self) -> Option<T> {
        let task = self.model.workers[self.me].deque.pop_back()?;
        self.model.in_deques -= 1;
        Some(task)
    }

    fn hold_next(&mut self, task: T) -> Option<T> {
        let me = &self.model.workers[self.me];
        if !self.finishing || me.next.is_some() || me.next_sent {
            return Some(task);
        }
        self.send(Queue::Next(self.me), task);
        None
    }

    fn take_next(&mut self) -> Option<T> {
        self.model.workers[self.me].next.take()
    }

    fn pop_private(&mut self) -> Option<T> {
        self.model.workers[self.me].private.pop_front()
    }

    fn pop_node_private(&mut self) -> Option<T> {
        let node = self.model.worker_node[self.me];
        self.model.node_private[node].pop_front()
    }

    fn pop_mailbox(&mut self) -> Option<T> {
        let task = self.model.workers[self.me].mailbox.pop_front()?;
        self.model.in_mailboxes[self.model.worker_node[self.me]] -= 1;
        Some(task)
    }

    /// Free, as the owner's own pops are: the tasks move from one of its queues to
    /// another.
    fn import_mailbox(&mut self) -> usize {
        let node = self.model.worker_node[self.me];
        let w = &mut self.model.workers[self.me];
        let moved = w.mailbox.len();
        w.deque.extend(w.mailbox.drain(..));
        self.model.in_mailboxes[node] -= moved;
        self.model.in_deques += moved;
        moved
    }

    fn pop_global(&mut self) -> Option<T> {
        self.model.global.pop_front()
    }

    /// With no task in any deque or in any mailbox the thief may take from, every
    /// attempt would fail: pay the whole sweep without walking it.
    fn sweep_is_futile(&mut self, other_nodes_mailboxes: bool) -> bool {
        let m = &self.model;
        let mailboxes = if other_nodes_mailboxes {
            m.in_mailboxes.iter().sum()
        } else {
            m.in_mailboxes[m.worker_node[self.me]]
        };
        if m.in_deques > 0 || mailboxes > 0 {
            return false;
        }
        self.effects.steal_attempts += self.charges.victims[self.me] as u64;
        self.effects.spent += self.charges.sweep_ns[self.me];
        true
    }

    fn steal(&mut self, v: usize) -> Steal<T> {
        self.attempt(v);
        match self.model.workers[v].deque.pop_front() {
            Some(task) => {
                self.model.in_deques -= 1;
                Steal::Success(task)
            }
            None => Steal::Empty,
        }
    }

    fn steal_half(&mut self, v: usize) -> Steal<T> {
        self.attempt(v);
        let victim = &mut self.model.workers[v].deque;
        let Some(len) = std::num::NonZeroUsize::new(victim.len()) else {
            return Steal::Empty;
        };
        let batch = ((len.get() - 1) / 2).min(MAX_BATCH - 1);
        // The batch stays stealable: it moves from one deque to another.
        let moved: Vec<T> = victim.drain(..batch).collect();
        let task = victim.pop_front().expect("the batch left one task");
        self.model.workers[self.me].deque.extend(moved);
        self.model.in_deques -= 1;
        Steal::Success(task)
    }

    fn steal_mailbox(&mut self, v: usize) -> Option<T> {
        let task = self.model.workers[v].mailbox.pop_front()?;
        self.model.in_mailboxes[self.model.worker_node[v]] -= 1;
        Some(task)
    }

    fn last_victim(&self) -> Option<usize> {
        self.model.workers[self.me].last_victim
    }

    fn set_last_victim(&mut self, v: usize) {
        self.model.workers[self.me].last_victim = Some(v);
    }

    fn record(&mut self, task: &T, event: EngineEvent) {
        task.record(self.me, event);
    }

    fn fail_run(&mut self, task: &T, message: String) {
        task.fail_run(message);
    }

    /// A pushed task is not visible yet: it arrives when its pusher has paid for it,
    /// and its arrival wakes whom it should (the engine calls the mechanism then).
    fn announce(&mut self, _anyone: bool) -> bool {
        false
    }

    fn should_wake(&self, anyone: bool) -> bool {
        self.model.idle.should_wake(anyone)
    }

    fn stop_searching(&mut self) -> bool {
        self.model.idle.stop_searching(self.me)
    }

    fn is_asleep(&self, w: usize) -> bool {
        self.model.idle.asleep.contains(&w)
    }

    fn wake(&mut self, w: usize) -> bool {
        let woken = self.model.idle.wake(w);
        if woken {
            self.effects.woken.push((w, self.effects.spent));
        }
        woken
    }
}

#[cfg(test)]
mod tests;
