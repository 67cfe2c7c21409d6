//! Decision equivalence: the shared mechanism driven over the simulator's modelled
//! queues and over real crossbeam queues, wrapped exactly as the `threads` engine
//! wraps them (`locus/src/engine/threads/worker.rs`), makes the same decisions from one
//! seeded sequence of events: where each task goes, which task each find-work call
//! returns, whom each wake-up chooses, what is counted, and the loads the policies see.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use crossbeam_deque::{Stealer, Worker};
use crossbeam_queue::{ArrayQueue, SegQueue};
use locus::engine::mechanism::{Decided, Push, Queue, Queues, Steal, Wake};
use locus::engine::{EngineEvent, Mechanism};
use locus::sched::{KeepReason, LoadView, Placement, ReadyPolicy};
use locus::{StealKind, Topology};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use super::{Charges, Idle, Model, Recorded};

/// What an implementation was asked to record.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Note {
    Event(usize, u32, EngineEvent),
    Failed(u32),
}

/// A queued task: its id, and the notes of the implementation it belongs to.
#[derive(Clone)]
struct Item {
    id: u32,
    notes: Rc<RefCell<Vec<Note>>>,
}

impl Recorded for Item {
    fn record(&self, worker: usize, event: EngineEvent) {
        self.notes
            .borrow_mut()
            .push(Note::Event(worker, self.id, event));
    }

    fn fail_run(&self, _message: String) {
        self.notes.borrow_mut().push(Note::Failed(self.id));
    }
}

/// The `threads` engine's queues, without its threads: the owner ends of the deques
/// are all held here, and sleeping and searching are sets (the real protocol needs
/// threads; its choice of whom to wake is the mechanism's either way).
struct Real {
    deques: Vec<Worker<Item>>,
    stealers: Vec<Stealer<Item>>,
    mailboxes: Vec<ArrayQueue<Item>>,
    private: Vec<SegQueue<Item>>,
    node_private: Vec<SegQueue<Item>>,
    global: SegQueue<Item>,
    worker_node: Vec<usize>,
    last_victim: Vec<Option<usize>>,
    idle: Idle,
    rng: SmallRng,
}

struct RealView<'a> {
    real: &'a mut Real,
    me: usize,
    woken: Vec<usize>,
}

fn from_crossbeam(steal: crossbeam_deque::Steal<Item>) -> Steal<Item> {
    match steal {
        crossbeam_deque::Steal::Empty => Steal::Empty,
        crossbeam_deque::Steal::Success(task) => Steal::Success(task),
        crossbeam_deque::Steal::Retry => Steal::Retry,
    }
}

impl LoadView for RealView<'_> {
    fn load(&self, w: usize) -> usize {
        let r = &self.real;
        r.stealers[w].len() + r.mailboxes[w].len() + r.private[w].len()
    }
}

impl Queues for RealView<'_> {
    type Task = Item;

    fn me(&self) -> usize {
        self.me
    }

    fn random(&mut self) -> u64 {
        self.real.rng.next_u64()
    }

    fn push_deque(&mut self, task: Item) {
        self.real.deques[self.me].push(task);
    }

    fn push_mailbox(&mut self, w: usize, task: Item) -> Push<Item> {
        match self.real.mailboxes[w].push(task) {
            Ok(()) => Push::Queued,
            Err(task) => Push::Full(task),
        }
    }

    fn push_private(&mut self, w: usize, task: Item) {
        self.real.private[w].push(task);
    }

    fn push_node_private(&mut self, n: usize, task: Item) {
        self.real.node_private[n].push(task);
    }

    fn push_global(&mut self, task: Item) {
        self.real.global.push(task);
    }

    fn pop_deque(&mut self) -> Option<Item> {
        self.real.deques[self.me].pop()
    }

    fn pop_private(&mut self) -> Option<Item> {
        self.real.private[self.me].pop()
    }

    fn pop_node_private(&mut self) -> Option<Item> {
        self.real.node_private[self.real.worker_node[self.me]].pop()
    }

    fn pop_mailbox(&mut self) -> Option<Item> {
        self.real.mailboxes[self.me].pop()
    }

    fn import_mailbox(&mut self) -> usize {
        let mut moved = 0;
        while let Some(task) = self.real.mailboxes[self.me].pop() {
            self.real.deques[self.me].push(task);
            moved += 1;
        }
        moved
    }

    fn pop_global(&mut self) -> Option<Item> {
        self.real.global.pop()
    }

    fn steal(&mut self, v: usize) -> Steal<Item> {
        from_crossbeam(self.real.stealers[v].steal())
    }

    fn steal_half(&mut self, v: usize) -> Steal<Item> {
        from_crossbeam(self.real.stealers[v].steal_batch_and_pop(&self.real.deques[self.me]))
    }

    fn steal_mailbox(&mut self, v: usize) -> Option<Item> {
        self.real.mailboxes[v].pop()
    }

    fn last_victim(&self) -> Option<usize> {
        self.real.last_victim[self.me]
    }

    fn set_last_victim(&mut self, v: usize) {
        self.real.last_victim[self.me] = Some(v);
    }

    fn record(&mut self, task: &Item, event: EngineEvent) {
        task.record(self.me, event);
    }

    fn fail_run(&mut self, task: &Item, message: String) {
        task.fail_run(message);
    }

    fn announce(&mut self, anyone: bool) -> bool {
        self.should_wake(anyone)
    }

    fn should_wake(&self, anyone: bool) -> bool {
        self.real.idle.should_wake(anyone)
    }

    fn stop_searching(&mut self) -> bool {
        self.real.idle.stop_searching(self.me)
    }

    fn is_asleep(&self, w: usize) -> bool {
        self.real.idle.asleep.contains(&w)
    }

    fn wake(&mut self, w: usize) -> bool {
        let woken = self.real.idle.wake(w);
        if woken {
            self.woken.push(w);
        }
        woken
    }
}

/// One event of a sequence.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// Worker `from` activated a task the policy (or a hint) placed so.
    Route {
        from: usize,
        placement: Placement,
        decided: Decided,
    },
    /// Worker `worker` (awake) looks for work.
    FindWork { worker: usize },
    /// Worker `worker` (awake) goes to sleep.
    Sleep { worker: usize },
    /// New work at `at` wakes someone.
    WakeFor { at: Wake },
}

/// What an implementation decided for one event.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Routed(Queue, Vec<usize>),
    Found(Option<u32>, Vec<usize>),
    Slept,
    Woke(Option<usize>),
}

const WORKER_NODE: [usize; 8] = [0, 0, 1, 1, 2, 2, 3, 3];
const NODES: usize = 4;
const MAILBOX: usize = 3;

fn topology() -> Topology {
    // Distances: 0-1 near (12), 0-2 and 0-3 far (20), 2-3 near.
    Topology::from_spec("4x2:10,12,20,20,12,10,20,20,20,20,10,12,20,20,12,10").unwrap()
}

/// A seeded sequence of events over the workers of [`WORKER_NODE`].
fn events(seed: u64, len: usize) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let workers = WORKER_NODE.len();
    (0..len)
        .map(|_| match rng.random_range(0..10) {
            0..=4 => {
                let placement = match rng.random_range(0..9) {
                    0 => Placement::Local(KeepReason::NoPush),
                    1 => Placement::Local(KeepReason::BelowThreshold),
                    2 => Placement::Node(rng.random_range(0..NODES)),
                    3 => Placement::ToData(rng.random_range(0..NODES)),
                    4 => Placement::Worker(rng.random_range(0..workers)),
                    5 => Placement::StrictWorker(rng.random_range(0..workers)),
                    6 => Placement::Global,
                    7 => Placement::HandOver(rng.random_range(0..workers)),
                    _ => Placement::StrictNode(rng.random_range(0..NODES)),
                };
                let decided = if rng.random_bool(0.7) {
                    Decided::ByPolicy
                } else {
                    Decided::ByHint
                };
                Op::Route {
                    from: rng.random_range(0..workers),
                    placement,
                    decided,
                }
            }
            5..=7 => Op::FindWork {
                worker: rng.random_range(0..workers),
            },
            8 => Op::Sleep {
                worker: rng.random_range(0..workers),
            },
            _ => Op::WakeFor {
                at: match rng.random_range(0..4) {
                    0 => Wake::Near(rng.random_range(0..workers)),
                    1 => Wake::Only(rng.random_range(0..workers)),
                    2 => Wake::NearOnNode(rng.random_range(0..workers)),
                    _ => Wake::Node(rng.random_range(0..NODES)),
                },
            },
        })
        .collect()
}

/// What a run of a sequence decided: per event, the outcome and the loads the
/// policies would see after it; and everything recorded.
struct Decisions {
    outcomes: Vec<Outcome>,
    loads: Vec<Vec<usize>>,
    notes: Vec<Note>,
}

/// Runs `ops` over the real queues; the outcomes, the notes and the final loads.
fn run_real(mechanism: &Mechanism, ops: &[Op], seed: u64) -> Decisions {
    let workers = WORKER_NODE.len();
    let deques: Vec<Worker<Item>> = (0..workers).map(|_| Worker::new_lifo()).collect();
    let mut real = Real {
        stealers: deques.iter().map(Worker::stealer).collect(),
        deques,
        mailboxes: (0..workers).map(|_| ArrayQueue::new(MAILBOX)).collect(),
        private: (0..workers).map(|_| SegQueue::new()).collect(),
        node_private: (0..NODES).map(|_| SegQueue::new()).collect(),
        global: SegQueue::new(),
        worker_node: WORKER_NODE.to_vec(),
        last_victim: vec![None; workers],
        idle: Idle::new(workers),
        rng: SmallRng::seed_from_u64(seed),
    };
    let notes = Rc::new(RefCell::new(Vec::new()));
    let mut outcomes = Vec::new();
    let mut loads = Vec::new();
    for (id, op) in ops.iter().enumerate() {
        let outcome = match *op {
            Op::Route {
                from,
                placement,
                decided,
            } => {
                let mut view = RealView {
                    real: &mut real,
                    me: from,
                    woken: Vec::new(),
                };
                let item = Item {
                    id: id as u32,
                    notes: notes.clone(),
                };
                let queue = mechanism.route(&mut view, placement, decided, item);
                Outcome::Routed(queue, view.woken)
            }
            Op::FindWork { worker } => {
                let mut view = RealView {
                    real: &mut real,
                    me: worker,
                    woken: Vec::new(),
                };
                let found = mechanism.find_work(&mut view).map(|t| t.id);
                Outcome::Found(found, view.woken)
            }
            Op::Sleep { worker } => {
                real.idle.fall_asleep(worker);
                Outcome::Slept
            }
            Op::WakeFor { at } => {
                let mut view = RealView {
                    real: &mut real,
                    me: 0,
                    woken: Vec::new(),
                };
                Outcome::Woke(mechanism.wake_for(&mut view, at))
            }
        };
        let view = RealView {
            real: &mut real,
            me: 0,
            woken: Vec::new(),
        };
        loads.push((0..workers).map(|w| view.load(w)).collect());
        outcomes.push(outcome);
    }
    let notes = notes.borrow().clone();
    Decisions {
        outcomes,
        loads,
        notes,
    }
}

/// Runs `ops` over the simulator's modelled queues, each pushed task arriving before
/// the next event (the model's arrivals, without the event loop's delays).
fn run_model(mechanism: &Mechanism, ops: &[Op], seed: u64) -> Decisions {
    let workers = WORKER_NODE.len();
    let mut model: Model<Item> = Model::new(&WORKER_NODE, NODES);
    let mut rng = SmallRng::seed_from_u64(seed);
    let charges = charges(mechanism);
    let notes = Rc::new(RefCell::new(Vec::new()));
    let mut outcomes = Vec::new();
    let mut loads = Vec::new();
    for (id, op) in ops.iter().enumerate() {
        let outcome = match *op {
            Op::Route {
                from,
                placement,
                decided,
            } => {
                let mut view = model.view(from, &mut rng, &charges);
                let item = Item {
                    id: id as u32,
                    notes: notes.clone(),
                };
                let queue = mechanism.route(&mut view, placement, decided, item);
                let effects = view.done();
                assert!(effects.woken.is_empty(), "pushes wake on arrival");
                let mut woken = Vec::new();
                for (_, arrived, task) in effects.arrivals {
                    assert_eq!(arrived, queue);
                    model.arrive(arrived, task);
                    let mut view = model.view(from, &mut rng, &charges);
                    mechanism.wake_for(&mut view, mechanism.wakes(arrived));
                    woken.extend(view.done().woken.into_iter().map(|(w, _)| w));
                }
                Outcome::Routed(queue, woken)
            }
            Op::FindWork { worker } => {
                let mut view = model.view(worker, &mut rng, &charges);
                let found = mechanism.find_work(&mut view).map(|t| t.id);
                let effects = view.done();
                assert!(effects.arrivals.is_empty());
                Outcome::Found(found, effects.woken.into_iter().map(|(w, _)| w).collect())
            }
            Op::Sleep { worker } => {
                model.fall_asleep(worker);
                Outcome::Slept
            }
            Op::WakeFor { at } => {
                let mut view = model.view(0, &mut rng, &charges);
                Outcome::Woke(mechanism.wake_for(&mut view, at))
            }
        };
        let view = model.view(0, &mut rng, &charges);
        loads.push((0..workers).map(|w| view.load(w)).collect());
        outcomes.push(outcome);
    }
    let notes = notes.borrow().clone();
    Decisions {
        outcomes,
        loads,
        notes,
    }
}

/// The model's charges: one nanosecond for each step.
fn charges(mechanism: &Mechanism) -> Charges {
    let workers = mechanism.worker_node().len();
    let nodes = mechanism.topology().num_nodes();
    Charges {
        attempt_ns: vec![vec![1; nodes]; nodes],
        sweep_ns: vec![1; workers],
        victims: (0..workers).map(|w| mechanism.plan(w).len()).collect(),
        push_ns: 1,
        mailbox_capacity: MAILBOX,
    }
}

fn mechanism(steal: StealKind, last_victim_first: bool, steal_half: bool) -> Mechanism {
    Mechanism::new(
        &topology(),
        &WORKER_NODE,
        ReadyPolicy::keep_local(),
        steal,
        last_victim_first,
        steal_half,
    )
}

#[test]
fn the_model_and_the_real_queues_make_the_same_decisions() {
    for steal in [StealKind::Hierarchical, StealKind::Random] {
        for last_victim_first in [false, true] {
            for steal_half in [false, true] {
                let m = mechanism(steal, last_victim_first, steal_half);
                for seed in 0..20 {
                    let ops = events(seed, 400);
                    let real = run_real(&m, &ops, seed);
                    let model = run_model(&m, &ops, seed);
                    let what = format!(
                        "{steal:?}, last_victim_first {last_victim_first}, \
                         steal_half {steal_half}, seed {seed}"
                    );
                    for (i, op) in ops.iter().enumerate() {
                        assert_eq!(
                            real.outcomes[i],
                            model.outcomes[i],
                            "{what}: event {i} ({op:?}) after {:?}",
                            &ops[i.saturating_sub(8)..i]
                        );
                        assert_eq!(
                            real.loads[i], model.loads[i],
                            "{what}: loads after event {i} ({op:?})"
                        );
                    }
                    assert_eq!(real.notes, model.notes, "{what}: counters differ");
                }
            }
        }
    }
}

/// The sequences exercise what they should: every kind of queue, wake-ups, full
/// mailboxes, failed strict placements, and batch steals that leave work with the
/// thief.
#[test]
fn the_sequences_reach_every_decision() {
    let m = mechanism(StealKind::Hierarchical, false, true);
    let mut queues = BTreeSet::new();
    let (mut found, mut woke, mut rejected, mut batches) = (0, 0, 0, 0);
    for seed in 0..20 {
        let ops = events(seed, 400);
        let d = run_model(&m, &ops, seed);
        for (i, o) in d.outcomes.iter().enumerate() {
            match o {
                Outcome::Routed(q, w) => {
                    queues.insert(match q {
                        Queue::Deque(_) => "deque",
                        Queue::Mailbox(_) => "mailbox",
                        Queue::Private(_) => "private",
                        Queue::NodePrivate(_) => "node-private",
                        Queue::Global(_) => "global",
                        Queue::Next(_) => "next",
                    });
                    woke += w.len();
                }
                Outcome::Found(Some(task), w) => {
                    found += 1;
                    woke += w.len();
                    let Op::FindWork { worker } = ops[i] else {
                        unreachable!()
                    };
                    let stole = d.notes.iter().any(|n| {
                        matches!(n, Note::Event(w, t, EngineEvent::StealSameNode | EngineEvent::StealRemote)
                            if *w == worker && t == task)
                    });
                    // A thief with empty queues that holds work after its steal got a
                    // batch.
                    if stole && d.loads[i][worker] > 0 {
                        batches += 1;
                    }
                }
                Outcome::Woke(Some(_)) => woke += 1,
                _ => {}
            }
        }
        rejected += d
            .notes
            .iter()
            .filter(|n| matches!(n, Note::Event(_, _, EngineEvent::PushRejected)))
            .count();
    }
    assert_eq!(queues.len(), 5, "every kind of queue");
    assert!(found > 100 && woke > 50, "found {found}, woke {woke}");
    assert!(rejected > 0, "a mailbox was full");
    assert!(batches > 0, "a batch steal left work with the thief");
}

/// Under hierarchical stealing a task sent to a mailbox stays on the mailbox's node:
/// a thief of another node does not take it and is not woken for it, a worker of the
/// node does. Under random stealing any thief may take it.
#[test]
fn hierarchical_stealing_keeps_mailboxes_on_their_node() {
    // Worker 4 (node 2) sleeps; worker 2 (node 1) sends a task to worker 0's mailbox
    // (node 0); worker 6 (node 3) and then worker 1 (node 0) look for work.
    let ops = [
        Op::Sleep { worker: 4 },
        Op::Route {
            from: 2,
            placement: Placement::Worker(0),
            decided: Decided::ByHint,
        },
        Op::FindWork { worker: 6 },
        Op::FindWork { worker: 1 },
    ];
    for (steal, remote_takes) in [(StealKind::Hierarchical, false), (StealKind::Random, true)] {
        let m = mechanism(steal, false, false);
        for d in [run_real(&m, &ops, 1), run_model(&m, &ops, 1)] {
            let Outcome::Routed(Queue::Mailbox(0), woke) = &d.outcomes[1] else {
                panic!("{steal:?}: routed {:?}", d.outcomes[1]);
            };
            assert_eq!(woke.is_empty(), !remote_takes, "{steal:?}: woke {woke:?}");
            let Outcome::Found(remote, _) = &d.outcomes[2] else {
                unreachable!()
            };
            assert_eq!(
                remote.is_some(),
                remote_takes,
                "{steal:?}: worker 6 found {remote:?}"
            );
            let Outcome::Found(local, _) = &d.outcomes[3] else {
                unreachable!()
            };
            assert_eq!(
                local.is_some(),
                !remote_takes,
                "{steal:?}: worker 1 found {local:?}"
            );
        }
    }
}

/// A replayed task handed over ([`Placement::HandOver`]) becomes the next task of a
/// worker finishing a task and holding none yet; otherwise it goes to its home's
/// mailbox, never to the activator's deque.
#[test]
fn a_hand_over_is_the_next_task_of_a_finishing_worker_or_goes_home() {
    let m = mechanism(StealKind::Hierarchical, false, false);
    let charges = charges(&m);
    let mut model: Model<Item> = Model::new(&WORKER_NODE, NODES);
    let mut rng = SmallRng::seed_from_u64(1);
    let notes = Rc::new(RefCell::new(Vec::new()));
    let item = |id| Item {
        id,
        notes: notes.clone(),
    };
    let hand_over = Placement::HandOver(1);
    let mut view = model.view(0, &mut rng, &charges);
    let idle = m.route(&mut view, hand_over, Decided::ByHint, item(0));
    assert_eq!(idle, Queue::Mailbox(1), "not finishing");
    let mut view = model.view(0, &mut rng, &charges).finishing();
    let first = m.route(&mut view, hand_over, Decided::ByHint, item(1));
    let second = m.route(&mut view, hand_over, Decided::ByHint, item(2));
    assert_eq!((first, second), (Queue::Next(0), Queue::Mailbox(1)));
}

/// A strict node hint goes to the node's own queue, which only the node's workers
/// take; when the node holds every worker it constrains nothing, and the task is kept
/// on its activator: its next task, then its deque.
#[test]
fn a_strict_hint_to_the_node_of_every_worker_is_kept_on_the_activator() {
    let one_node = Mechanism::new(
        &Topology::from_spec("1x2").unwrap(),
        &[0, 0],
        ReadyPolicy::keep_local(),
        StealKind::Hierarchical,
        false,
        false,
    );
    let m = mechanism(StealKind::Hierarchical, false, false);
    for (m, worker_node, nodes, routed) in [
        (
            &m,
            &WORKER_NODE[..],
            NODES,
            [Queue::NodePrivate(0), Queue::NodePrivate(0)],
        ),
        (&one_node, &[0, 0][..], 1, [Queue::Next(1), Queue::Deque(1)]),
    ] {
        let charges = charges(m);
        let mut model: Model<Item> = Model::new(worker_node, nodes);
        let mut rng = SmallRng::seed_from_u64(1);
        let notes = Rc::new(RefCell::new(Vec::new()));
        let item = |id| Item {
            id,
            notes: notes.clone(),
        };
        let mut view = model.view(1, &mut rng, &charges).finishing();
        let first = m.route(
            &mut view,
            Placement::StrictNode(0),
            Decided::ByHint,
            item(0),
        );
        let second = m.route(
            &mut view,
            Placement::StrictNode(0),
            Decided::ByHint,
            item(1),
        );
        assert_eq!([first, second], routed, "{nodes} nodes");
    }
}
