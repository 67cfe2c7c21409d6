//! The mechanism that carries the [`sched`](crate::sched) policies' decisions out,
//! written once for every engine.
//!
//! The policies decide *where* a ready task should go ([`ReadyPolicy::place`]) and *in
//! which order* an idle worker tries its victims ([`StealPlan`]). Carrying those
//! decisions out is the same work in every engine: route a placed task to a queue (and
//! fall back to the activator's deque when a mailbox is full), look for work in a fixed
//! order, and wake the sleeping worker nearest to new work. [`Mechanism`] does it,
//! generic over [`Queues`]: the few queue operations an engine provides, the way
//! tokio's `Overflow` trait lets a queue be tested without a runtime.
//!
//! - The `threads` engine implements [`Queues`] with its real queues: a crossbeam
//!   Chase-Lev deque per worker, a bounded mailbox of pushed tasks, unbounded private
//!   queues, and its sleep protocol.
//! - The simulator (crate `locus-sim`) implements it with modelled queues, charging
//!   simulated time in its implementation of the operations (a push, a steal attempt)
//!   and making pushed tasks arrive once their activator has paid for them.
//!
//! So both engines make the same decisions from the same state, and a test drives
//! both implementations with one sequence of events and compares every decision
//! (`locus-sim`'s `queues` tests).
//!
//! # The queues of a worker
//!
//! - its **deque**: tasks it activated and kept; it takes the newest, thieves the
//!   oldest;
//! - its **mailbox**: a bounded queue of tasks other workers pushed to it (work-pushing,
//!   non-strict hints, home-based scheduling). Under hierarchical stealing only the
//!   workers of its node may steal from it: a task was sent there for its data, and a
//!   thief of another node would carry it away again (paper 1's workers receive pushed
//!   tasks in "a dedicated multi-producer single-consumer queue"). Each time the
//!   worker looks for work it first moves its whole mailbox onto its deque, within
//!   every thief's reach, so that pushed work waits only while its worker is busy
//!   (OpenStream, the runtime of paper 1, imports its push buffer into its
//!   work-stealing deque at every turn of its scheduling loop likewise). Under random
//!   and vicinity stealing every thief of the plan may steal from a mailbox;
//! - its **private queue**: tasks only it may run (strict worker hints, a run's root);
//! - its node's **node-private queue**: tasks only that node's workers may run (strict
//!   node hints). A strict hint to a node that holds every worker constrains nothing:
//!   such a task is kept on its activator (hand-over, deque), not queued where every
//!   worker would contend for one queue;
//! - the **global queue**, one for the whole engine: under breadth-first scheduling
//!   every task without a hint goes there, and any worker takes the oldest.
//!
//! # Hand-over
//!
//! A successor a worker makes ready while it finishes a task, and that the policy
//! keeps on that worker, becomes the worker's *next task*: the worker runs it as soon
//! as the finished task is complete, no other worker sees it, and nothing is announced
//! for it (Taskflow's executor runs the ready successor directly likewise). So a chain
//! stays on the worker that holds its data, however many workers are idle: an idle
//! worker that could take the successor would only carry the chain's datum to its own
//! cache and leave the first worker idle in turn. The slot holds one task; the other
//! successors of the same task go to the worker's deque, where thieves take the oldest,
//! and are announced once, after the last of them ([`Mechanism::announce_batch`]). A
//! worker that has other work thus keeps its next task and lets idle workers take the
//! rest from its deque. Successors pushed to other queues (a mailbox, a strict queue,
//! the global queue) are announced as they are pushed, since only their owners may be
//! the ones to take them. A replayed task submitted through the dynamic path
//! ([`Placement::HandOver`]) becomes its activator's next task if the slot is free, and
//! goes to its home worker otherwise, never to the activator's deque.
//!
//! # Waking
//!
//! New work wakes at most one sleeping worker, the nearest to the work
//! ([`Mechanism::wake_order`]): the worker whose queue it is, then the other workers of
//! its node, then the workers of the other nodes, nearest node first in the topology's
//! cost order ([`Topology::nodes_by_distance`](locus_topo::Topology::nodes_by_distance)). Work only some workers may run wakes
//! only one of them. So a task that lands on node 5 wakes a sleeper of node 5, which
//! finds it among its own node's queues, rather than a worker of node 0 that would
//! steal it remotely.
//!
//! Work any worker may take wakes nobody while a worker *searches* (looks for work
//! before it sleeps; at most half the workers do): the searcher will find it. That
//! holds when every worker's steal plan holds every other worker; under vicinity
//! stealing, and for work only some workers may take, new work wakes a sleeper that
//! may take it whoever searches. The searcher that finds work and was the last one
//! wakes the sleeper nearest to where it found it, if a worker sleeps
//! ([`Mechanism::found_work`]), so a burst spreads one wake-up at a time, and work
//! announced while it searched is not left to one worker (tokio's idle state: the last
//! searcher wakes the next). The engine counts the
//! searchers and the sleepers ([`Queues::announce`], [`Queues::stop_searching`]); the
//! `threads` engine's protocol, and why it loses no wake-up, is in its `README.md`.

use locus_topo::{NodeId, Topology};

use crate::config::StealKind;
use crate::graph::{Activated, EngineEvent, ReadyDescription, TaskRef};
use crate::sched::{KeepReason, LoadView, Placement, ReadyPolicy, ReadyTask, StealPlan};

/// The outcome of a push onto a bounded queue.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub enum Push<T> {
    /// The task is in the queue.
    Queued,
    /// The queue is full; the task comes back.
    Full(T),
}

/// The outcome of a steal attempt (crossbeam-deque's `Steal`).
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub enum Steal<T> {
    /// The victim's queue was empty.
    Empty,
    /// A task was stolen.
    Success(T),
    /// The attempt lost a race with another thread; the queue may hold work.
    Retry,
}

/// A queue a routed task went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    /// Worker `w`'s deque (the activator's own).
    Deque(usize),
    /// Worker `w`'s mailbox of pushed tasks.
    Mailbox(usize),
    /// Worker `w`'s private queue: only `w` may run the task.
    Private(usize),
    /// Node `n`'s private queue: only workers of `n` may run the task.
    NodePrivate(usize),
    /// The global queue, fed by worker `w`: any worker may run the task, and the
    /// sleeper nearest to `w` is woken for it.
    Global(usize),
    /// Worker `w`'s next task: a successor `w` made ready while finishing a task, which
    /// `w` runs next and no other worker sees (module doc, "Hand-over").
    Next(usize),
}

impl Queue {
    /// Whom work in this queue may wake: anyone for a deque or a mailbox (the nearest
    /// first), only the owner for a private queue, only the node's workers for a
    /// node-private queue.
    pub fn wakes(self) -> Wake {
        match self {
            Queue::Deque(w) | Queue::Mailbox(w) | Queue::Global(w) => Wake::Near(w),
            Queue::Private(w) | Queue::Next(w) => Wake::Only(w),
            Queue::NodePrivate(n) => Wake::Node(n),
        }
    }
}

/// Where new work is, and who may take it, for choosing whom to wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Work any worker may take, in worker `w`'s queues: the nearest sleeper to `w`.
    Near(usize),
    /// Work only worker `w` may take.
    Only(usize),
    /// Work only the workers of node `n` may take.
    Node(usize),
    /// Work in worker `w`'s queues that only the workers of `w`'s node may take: the
    /// nearest sleeper to `w` on that node.
    NearOnNode(usize),
}

/// Who made a placement: the policy (work-pushing, home-based scheduling) or the
/// task's affinity hint. Only the policy's pushes are counted as pushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    /// The configuration's policy.
    ByPolicy,
    /// An affinity hint (paper 3), which wins over the policy.
    ByHint,
}

/// The queue operations the mechanism needs, as one worker sees them.
///
/// An implementation is a view of an engine's queues from worker [`me`](Self::me):
/// "own deque" and "own mailbox" are that worker's. Every operation may be charged
/// for (the simulator adds simulated time); none decides anything: the decisions are
/// the [`Mechanism`]'s.
pub trait Queues: LoadView {
    /// What the queues hold.
    type Task: Clone;

    /// The worker this view belongs to.
    fn me(&self) -> usize;

    /// A random number for the mechanism's random choices (the worker of a node a
    /// task is pushed to, the start of a victim sweep): the engine's seeded RNG.
    fn random(&mut self) -> u64;

    /// Pushes onto the own deque.
    fn push_deque(&mut self, task: Self::Task);

    /// Pushes onto worker `w`'s mailbox, which may be full.
    fn push_mailbox(&mut self, w: usize, task: Self::Task) -> Push<Self::Task>;

    /// Pushes onto worker `w`'s private queue.
    fn push_private(&mut self, w: usize, task: Self::Task);

    /// Pushes onto node `n`'s private queue.
    fn push_node_private(&mut self, n: usize, task: Self::Task);

    /// Pushes onto the global queue.
    fn push_global(&mut self, task: Self::Task);

    /// Takes the newest task of the own deque.
    fn pop_deque(&mut self) -> Option<Self::Task>;

    /// Holds `task`, which the own worker made ready while finishing a task, as the
    /// task it runs next, unseen by other workers (module doc, "Hand-over"); gives it
    /// back when the worker is not finishing a task or holds one already. An engine
    /// without the slot keeps this default, which always gives it back.
    fn hold_next(&mut self, task: Self::Task) -> Option<Self::Task> {
        Some(task)
    }

    /// Takes the task held by [`hold_next`](Self::hold_next), if any.
    fn take_next(&mut self) -> Option<Self::Task> {
        None
    }

    /// Whether the announcement of a task just pushed onto the own deque may wait for
    /// the end of the finishing task's activations, which are then announced once
    /// ([`Mechanism::announce_batch`]); the engine remembers that one is due. An engine
    /// that announces on arrival keeps this default.
    fn defer_announce(&mut self) -> bool {
        false
    }

    /// Takes the oldest task of the own private queue.
    fn pop_private(&mut self) -> Option<Self::Task>;

    /// Takes the oldest task of the own node's private queue.
    fn pop_node_private(&mut self) -> Option<Self::Task>;

    /// Takes the oldest task of the own mailbox.
    fn pop_mailbox(&mut self) -> Option<Self::Task>;

    /// Moves every task of the own mailbox onto the own deque, oldest first, at once;
    /// returns how many moved.
    fn import_mailbox(&mut self) -> usize;

    /// Takes the oldest task of the global queue.
    fn pop_global(&mut self) -> Option<Self::Task>;

    /// Whether every steal attempt of a sweep would fail, known without trying, when
    /// the thief may (`other_nodes_mailboxes`) or may not take from the mailboxes of
    /// other nodes' workers. A model of the queues knows (and accounts for the sweep
    /// it skips); real concurrent queues do not, and keep this default.
    fn sweep_is_futile(&mut self, other_nodes_mailboxes: bool) -> bool {
        let _ = other_nodes_mailboxes;
        false
    }

    /// Takes the oldest task of worker `v`'s deque.
    fn steal(&mut self, v: usize) -> Steal<Self::Task>;

    /// Takes about half of worker `v`'s deque, oldest first, exactly as crossbeam's
    /// `steal_batch_and_pop` onto a LIFO deque does: with `len` tasks there, the
    /// oldest `k = min((len - 1) / 2, 31)` move to the back of the own deque, oldest
    /// first, and the next one is returned.
    fn steal_half(&mut self, v: usize) -> Steal<Self::Task>;

    /// Takes the oldest task of worker `v`'s mailbox.
    fn steal_mailbox(&mut self, v: usize) -> Option<Self::Task>;

    /// The last worker this one stole from.
    fn last_victim(&self) -> Option<usize>;

    /// Remembers the last worker this one stole from.
    fn set_last_victim(&mut self, v: usize);

    /// Records a decision about `task` in this worker's counters ([`Task::record`]).
    ///
    /// [`Task::record`]: crate::engine::Task::record
    fn record(&mut self, task: &Self::Task, event: EngineEvent);

    /// Fails `task`'s run with a placement no worker can carry out
    /// ([`Task::fail_run`]).
    ///
    /// [`Task::fail_run`]: crate::engine::Task::fail_run
    fn fail_run(&mut self, task: &Self::Task, message: String);

    /// Makes the work just pushed known to workers going to sleep, and says whether a
    /// sleeping worker should be woken for it: one sleeps and, when `anyone` may take
    /// the work, no worker searches (a searcher will find it; module doc, "Waking").
    /// An engine whose pushed tasks become visible later (the simulator's arrivals)
    /// returns `false` and calls [`Mechanism::wake_for`] when the task lands.
    fn announce(&mut self, anyone: bool) -> bool;

    /// Whether a sleeping worker should be woken for work already visible: as
    /// [`announce`](Self::announce) decides, without announcing.
    fn should_wake(&self, anyone: bool) -> bool;

    /// The own worker found work: if it was searching, it stops, and the answer is
    /// whether it was the last searcher while a worker sleeps, so that the mechanism
    /// wakes one (module doc, "Waking"). An engine that counts no searchers keeps this
    /// default.
    fn stop_searching(&mut self) -> bool {
        false
    }

    /// Whether worker `w` is asleep.
    fn is_asleep(&self, w: usize) -> bool;

    /// Wakes worker `w` if it is asleep; returns whether this call woke it.
    fn wake(&mut self, w: usize) -> bool;
}

/// Carries the policies' decisions out over an engine's [`Queues`]: routing of ready
/// tasks, the find-work chain, and the choice of whom to wake.
#[derive(Clone, Debug)]
pub struct Mechanism {
    topology: Topology,
    worker_node: Vec<usize>,
    workers_of_node: Vec<Vec<usize>>,
    plans: Vec<StealPlan>,
    policy: ReadyPolicy,
    last_victim_first: bool,
    steal_half: bool,
    /// `near[w]`: every worker, nearest to `w` first (module doc, "Waking").
    near: Vec<Vec<usize>>,
    /// Whether only the workers of a mailbox's node may steal from it (hierarchical
    /// stealing; module doc, "The queues of a worker").
    mailboxes_stay_on_node: bool,
    /// Whether every worker's steal plan holds every other worker, so that any
    /// searching worker finds work any worker may take (module doc, "Waking"); not so
    /// under vicinity stealing.
    searchers_reach_all: bool,
}

impl Mechanism {
    /// The mechanism of workers on `worker_node` (the node of each worker) of
    /// `topology`, placing ready tasks with `policy` and stealing with `steal`;
    /// `last_victim_first` and `steal_half` are the stealing refinements of
    /// [`EngineSetup`](crate::engine::EngineSetup).
    pub fn new(
        topology: &Topology,
        worker_node: &[usize],
        policy: ReadyPolicy,
        steal: StealKind,
        last_victim_first: bool,
        steal_half: bool,
    ) -> Self {
        let workers = worker_node.len();
        let nodes = topology.num_nodes();
        let workers_of_node: Vec<Vec<usize>> = (0..nodes)
            .map(|n| (0..workers).filter(|&w| worker_node[w] == n).collect())
            .collect();
        let plans: Vec<StealPlan> = (0..workers)
            .map(|w| StealPlan::build(steal, w, worker_node, topology))
            .collect();
        let near = (0..workers)
            .map(|w| {
                let node = worker_node[w];
                let mut order = vec![w];
                order.extend(workers_of_node[node].iter().filter(|&&x| x != w));
                for class in topology.nodes_by_distance(NodeId(node as u32)) {
                    for n in class {
                        order.extend(&workers_of_node[n.index()]);
                    }
                }
                order
            })
            .collect();
        let searchers_reach_all = plans.iter().all(|p| p.len() + 1 >= workers);
        Mechanism {
            searchers_reach_all,
            topology: topology.clone(),
            worker_node: worker_node.to_vec(),
            workers_of_node,
            plans,
            policy,
            last_victim_first,
            steal_half,
            near,
            mailboxes_stay_on_node: steal == StealKind::Hierarchical,
        }
    }

    /// The mechanism an engine is started with.
    pub fn for_setup(setup: &crate::engine::EngineSetup) -> Self {
        Mechanism::new(
            &setup.topology,
            &setup.worker_node,
            setup.ready_policy.clone(),
            setup.steal,
            setup.last_victim_first,
            setup.steal_half,
        )
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The node of each worker.
    pub fn worker_node(&self) -> &[usize] {
        &self.worker_node
    }

    /// The workers of node `n`.
    pub fn workers_of_node(&self, n: usize) -> &[usize] {
        &self.workers_of_node[n]
    }

    /// Worker `w`'s steal plan.
    pub fn plan(&self, w: usize) -> &StealPlan {
        &self.plans[w]
    }

    /// Every worker, in the order new work at `w` wakes them: `w`, its node's other
    /// workers, then the other nodes' workers, nearest node first.
    pub fn wake_order(&self, w: usize) -> &[usize] {
        &self.near[w]
    }

    /// Paper 1 Algorithm 1 (activate): worker `q.me()` made `task` ready; the policy
    /// places it and [`route`](Self::route) queues it, wrapped by `into` as the
    /// engine's queued task. Returns where it went.
    pub fn activate<Q: Queues>(
        &self,
        q: &mut Q,
        task: Activated,
        into: impl FnOnce(TaskRef) -> Q::Task,
    ) -> Queue {
        if !task.has_affinity() && !self.policy.needs_accesses() {
            // Nothing to decide: the fast path of `ws`, `dsa-base`, `dfa` and `bf`.
            return self.place_by_default(q, into(task.into_task()));
        }
        if let (false, Some(push)) = (task.has_affinity(), self.policy.threshold_push()) {
            let (input, output) = task.declared_bytes();
            debug_assert_eq!(
                task.describe(true)
                    .accesses
                    .iter()
                    .fold((0, 0), |(i, o), a| if a.input {
                        (i + a.bytes, o)
                    } else {
                        (i, o + a.bytes)
                    }),
                (input, output),
                "the declared bytes are those the description lists"
            );
            if push.below_threshold(input, output) {
                // What `place` decides for it, without describing where its bytes lie.
                let node = self.worker_node[q.me()];
                task.set_preferred_node(node);
                let task = into(task.into_task());
                return self.keep_local(q, KeepReason::BelowThreshold, task);
            }
        }
        let ready = task.describe(self.needs_accesses(task.has_affinity()));
        self.activate_described(q, task, &ready, into)
    }

    /// As [`activate`](Self::activate), for an engine that described the task already
    /// (`ready`, from [`Activated::describe`]).
    pub fn activate_described<Q: Queues>(
        &self,
        q: &mut Q,
        task: Activated,
        ready: &ReadyDescription,
        into: impl FnOnce(TaskRef) -> Q::Task,
    ) -> Queue {
        let decided = if ready.affinity.is_some() {
            Decided::ByHint
        } else {
            Decided::ByPolicy
        };
        if decided == Decided::ByPolicy && !self.policy.needs_accesses() {
            return self.place_by_default(q, into(task.into_task()));
        }
        let accesses = if self.needs_accesses(ready.affinity.is_some()) {
            &ready.accesses[..]
        } else {
            &[]
        };
        let node = self.worker_node[q.me()];
        let placement = self.policy.place(
            node,
            &ReadyTask {
                accesses,
                affinity: ready.affinity,
            },
            &self.topology,
            &self.worker_node,
            &*q,
        );
        task.set_preferred_node(placement.preferred_node(&self.worker_node, node));
        self.route(q, placement, decided, into(task.into_task()))
    }

    /// Whether the policy places a task with (`hinted`) or without a hint by its
    /// accesses.
    fn needs_accesses(&self, hinted: bool) -> bool {
        if hinted {
            self.policy.needs_accesses_of_hinted()
        } else {
            self.policy.needs_accesses()
        }
    }

    /// Queues a task the policy has nothing to decide about: on the global queue under
    /// breadth-first scheduling, else kept on the activator.
    #[inline]
    fn place_by_default<Q: Queues>(&self, q: &mut Q, task: Q::Task) -> Queue {
        if self.policy.is_global() {
            self.route(q, Placement::Global, Decided::ByPolicy, task)
        } else {
            self.keep(q, task)
        }
    }

    /// Carries `placement` out for `task`, activated by worker `q.me()`, recording the
    /// pushing counters, and wakes whom the new work should wake. Returns where the
    /// task went.
    pub fn route<Q: Queues>(
        &self,
        q: &mut Q,
        placement: Placement,
        decided: Decided,
        task: Q::Task,
    ) -> Queue {
        let pushed = decided == Decided::ByPolicy;
        match placement {
            Placement::Local(reason) => self.keep_local(q, reason, task),
            Placement::Node(node) => {
                if pushed {
                    q.record(&task, EngineEvent::PushAttempted);
                }
                let candidates = &self.workers_of_node[node];
                if candidates.is_empty() {
                    // A node with memory and no workers: run where we are.
                    self.keep(q, task)
                } else {
                    let w = candidates[(q.random() % candidates.len() as u64) as usize];
                    self.transfer(q, task, w, pushed)
                }
            }
            Placement::Worker(w) => self.transfer(q, task, w, false),
            Placement::HandOver(w) => match q.hold_next(task) {
                None => Queue::Next(q.me()),
                Some(task) => self.transfer(q, task, w, false),
            },
            Placement::StrictWorker(w) => {
                q.push_private(w, task);
                self.announce(q, Queue::Private(w))
            }
            Placement::ToData(node) => {
                // Onto the node's own queue, as a strict node hint: a mailbox may be
                // full, and a thief of another node would take the task away from its
                // data again.
                q.record(&task, EngineEvent::MovedToData);
                self.route(q, Placement::StrictNode(node), decided, task)
            }
            Placement::StrictNode(node) => {
                if self.workers_of_node[node].len() == self.worker_node.len() {
                    // Every worker is on the node: the hint constrains nothing
                    // (module doc, "The queues of a worker").
                    self.keep(q, task)
                } else if self.workers_of_node[node].is_empty() {
                    q.fail_run(
                        &task,
                        format!("strict affinity to node {node}, which has no workers"),
                    );
                    // The failed run drains the task without running its body.
                    self.keep(q, task)
                } else {
                    q.push_node_private(node, task);
                    self.announce(q, Queue::NodePrivate(node))
                }
            }
            Placement::Global => {
                q.push_global(task);
                self.announce(q, Queue::Global(q.me()))
            }
        }
    }

    /// Carries [`Placement::Local`] out: keeps the task, counting one kept below the
    /// push threshold.
    #[inline(always)]
    fn keep_local<Q: Queues>(&self, q: &mut Q, reason: KeepReason, task: Q::Task) -> Queue {
        if reason == KeepReason::BelowThreshold {
            q.record(&task, EngineEvent::PushKeptLocal);
        }
        self.keep(q, task)
    }

    /// Keeps a task on the activator: as its next task when it is finishing a task and
    /// holds none yet (module doc, "Hand-over"), else on its own deque.
    #[inline(always)]
    fn keep<Q: Queues>(&self, q: &mut Q, task: Q::Task) -> Queue {
        let Some(task) = q.hold_next(task) else {
            // Nobody else may take it: nothing to announce.
            return Queue::Next(q.me());
        };
        q.push_deque(task);
        self.announce(q, Queue::Deque(q.me()))
    }

    /// Announces, once, the tasks a finishing worker pushed onto its own deque while it
    /// deferred their announcements ([`Queues::defer_announce`]), waking the sleeper
    /// nearest to it if one may be asleep.
    pub fn announce_batch<Q: Queues>(&self, q: &mut Q) {
        let at = Wake::Near(q.me());
        if q.announce(self.anyone(at)) {
            self.wake_nearest(q, at);
        }
    }

    /// Sends a task to worker `w`'s mailbox, or keeps it when the mailbox is full
    /// (paper 1 Algorithm 1, lines 30-32). `pushed` says whether work-pushing decided
    /// it, and so whether the transfer is counted.
    fn transfer<Q: Queues>(&self, q: &mut Q, task: Q::Task, w: usize, pushed: bool) -> Queue {
        if w == q.me() {
            return self.keep(q, task);
        }
        // The counters are the task's run's; keep a handle, as the push moves the task.
        // Recording after the push is safe: the activator is inside a task of the same
        // run (the one that satisfied the dependence, or the submitter) that has not
        // finished, so the run cannot end and read the counters before this.
        let record = pushed.then(|| task.clone());
        match q.push_mailbox(w, task) {
            Push::Queued => {
                if let Some(t) = record {
                    q.record(&t, EngineEvent::PushTransferred);
                }
                self.announce(q, Queue::Mailbox(w))
            }
            Push::Full(task) => {
                if pushed {
                    q.record(&task, EngineEvent::PushRejected);
                }
                self.keep(q, task)
            }
        }
    }

    /// Announces work just pushed onto `queue`, waking the nearest sleeper that may
    /// take it if the engine says one may be asleep.
    #[inline]
    fn announce<Q: Queues>(&self, q: &mut Q, queue: Queue) -> Queue {
        if matches!(queue, Queue::Deque(_)) && q.defer_announce() {
            return queue;
        }
        let at = self.wakes(queue);
        if q.announce(self.anyone(at)) {
            self.wake_nearest(q, at);
        }
        queue
    }

    /// Whom work in `queue` may wake: [`Queue::wakes`], but only the node's workers
    /// for a mailbox when hierarchical stealing keeps mailboxes on their node. An
    /// engine that wakes later than the push asks this.
    pub fn wakes(&self, queue: Queue) -> Wake {
        match queue {
            Queue::Mailbox(w) if self.mailboxes_stay_on_node => Wake::NearOnNode(w),
            other => other.wakes(),
        }
    }

    /// Wakes the sleeping worker nearest to new work `at`, if a worker sleeps (module
    /// doc, "Waking"); returns whom it woke.
    pub fn wake_for<Q: Queues>(&self, q: &mut Q, at: Wake) -> Option<usize> {
        if !q.should_wake(self.anyone(at)) {
            return None;
        }
        self.wake_nearest(q, at)
    }

    /// Whether every searching worker may take work that wakes `at`, so that it wakes
    /// nobody while one searches: work any worker may take, and every steal plan
    /// holding every worker (module doc, "Waking").
    fn anyone(&self, at: Wake) -> bool {
        matches!(at, Wake::Near(_)) && self.searchers_reach_all
    }

    /// Worker `q.me()` found work at worker `at`'s queues: if it was the last searcher
    /// and a worker sleeps, wakes the sleeper nearest to `at` (module doc, "Waking").
    pub fn found_work<Q: Queues>(&self, q: &mut Q, at: usize) {
        if q.stop_searching() {
            self.wake_nearest(q, Wake::Near(at));
        }
    }

    fn wake_nearest<Q: Queues>(&self, q: &mut Q, at: Wake) -> Option<usize> {
        let candidates: &[usize] = match at {
            Wake::Near(w) => &self.near[w],
            // `near[w]` starts with `w` itself.
            Wake::Only(w) => std::slice::from_ref(&self.near[w][0]),
            Wake::Node(n) => &self.workers_of_node[n],
            // `near[w]` starts with `w`'s node.
            Wake::NearOnNode(w) => &self.near[w][..self.workers_of_node[self.worker_node[w]].len()],
        };
        candidates
            .iter()
            .copied()
            .find(|&w| q.is_asleep(w) && q.wake(w))
    }

    /// The find-work chain of worker `q.me()`, nearest work first:
    ///
    /// 0. the task it holds as its next ([`Queues::hold_next`]); the `threads` engine
    ///    runs it before it looks for work, so only the simulator finds it here;
    /// 1. its own deque, newest first (the task it just activated is hot in its cache),
    ///    after moving its mailbox onto it when hierarchical stealing keeps mailboxes
    ///    on their node;
    /// 2. its private queue (strict worker hints, the run's root);
    /// 3. its node's private queue (strict node hints);
    /// 4. its mailbox: tasks other workers pushed to it (work-pushing, hints);
    /// 5. the global queue, oldest first (breadth-first scheduling);
    /// 6. the victims of its [`StealPlan`], same node first, then nodes by increasing
    ///    cost: each victim's deque (oldest first; about half of it with `steal_half`),
    ///    then its mailbox, unless hierarchical stealing keeps mailboxes on their node
    ///    and the victim is on another ([`steal`](Self::steal)).
    ///
    /// A searching worker that finds work stops searching ([`found_work`](Self::found_work)).
    pub fn find_work<Q: Queues>(&self, q: &mut Q) -> Option<Q::Task> {
        if let Some(task) = self.find_own_work(q) {
            self.found_work(q, q.me());
            return Some(task);
        }
        self.steal(q)
    }

    /// Steps 1 to 5 of the [find-work chain](Self::find_work): the worker's own queues,
    /// its node's and the global one, without stealing. An engine whose worker waits inside a body
    /// (the simulator's model of a throttled control program) takes its own queues'
    /// work this way while the rest of the machine runs.
    pub fn find_own_work<Q: Queues>(&self, q: &mut Q) -> Option<Q::Task> {
        if let Some(task) = q.take_next() {
            return Some(task);
        }
        if self.mailboxes_stay_on_node && q.import_mailbox() > 0 {
            // Within every thief's reach now.
            self.wake_for(q, Wake::Near(q.me()));
        }
        if let Some(task) = q.pop_deque() {
            return Some(task);
        }
        if let Some(task) = q.pop_private() {
            return Some(task);
        }
        if let Some(task) = q.pop_node_private() {
            return Some(task);
        }
        if let Some(task) = q.pop_mailbox() {
            return Some(task);
        }
        q.pop_global()
    }

    /// Step 6 of the find-work chain: tries each victim of the plan once (the last one
    /// that had work first, with `last_victim_first`), and again while some victim
    /// reported a lost race. A successful thief that was the last searcher wakes the
    /// sleeper nearest to its victim, if one sleeps ([`found_work`](Self::found_work)).
    pub fn steal<Q: Queues>(&self, q: &mut Q) -> Option<Q::Task> {
        let plan = &self.plans[q.me()];
        if plan.is_empty() {
            return None;
        }
        // Drawn before the futility check, so that every engine draws the same numbers.
        let mut random = q.random();
        if q.sweep_is_futile(!self.mailboxes_stay_on_node) {
            return None;
        }
        let first = if self.last_victim_first {
            q.last_victim()
        } else {
            None
        };
        loop {
            let mut retry = false;
            for (class, v) in plan.victims_from(first, random) {
                let attempt = if self.steal_half {
                    q.steal_half(v)
                } else {
                    q.steal(v)
                };
                let stolen = match attempt {
                    Steal::Empty if plan.is_same_node(class) || !self.mailboxes_stay_on_node => {
                        q.steal_mailbox(v).map_or(Steal::Empty, Steal::Success)
                    }
                    other => other,
                };
                match stolen {
                    Steal::Success(task) => {
                        let event = if plan.is_same_node(class) {
                            EngineEvent::StealSameNode
                        } else {
                            EngineEvent::StealRemote
                        };
                        q.record(&task, event);
                        q.set_last_victim(v);
                        self.found_work(q, v);
                        return Some(task);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
            random = q.random();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four_nodes() -> Topology {
        // Distances: 0-1 near (12), 0-2 and 0-3 far (20), 2-3 near.
        Topology::from_spec("4x2:10,12,20,20,12,10,20,20,20,20,10,12,20,20,12,10").unwrap()
    }

    fn mechanism() -> Mechanism {
        Mechanism::new(
            &four_nodes(),
            &[0, 0, 1, 1, 2, 2, 3, 3],
            ReadyPolicy::keep_local(),
            StealKind::Hierarchical,
            false,
            false,
        )
    }

    #[test]
    fn new_work_wakes_the_nearest_sleeper_not_the_lowest_index() {
        let m = mechanism();
        // Work at worker 5 (node 2): itself, its node, the near node 3, then 0 and 1.
        assert_eq!(m.wake_order(5), &[5, 4, 6, 7, 0, 1, 2, 3]);
        assert_eq!(m.wake_order(0), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(m.wake_order(3), &[3, 2, 0, 1, 4, 5, 6, 7]);
    }

    #[test]
    fn strict_work_wakes_only_its_candidates() {
        assert_eq!(Queue::Private(3).wakes(), Wake::Only(3));
        assert_eq!(Queue::NodePrivate(2).wakes(), Wake::Node(2));
        assert_eq!(Queue::Mailbox(6).wakes(), Wake::Near(6));
        assert_eq!(Queue::Deque(1).wakes(), Wake::Near(1));
        assert_eq!(mechanism().workers_of_node(2), &[4, 5]);
    }
}
